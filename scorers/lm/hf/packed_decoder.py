"""Packed scoring forwards for Llama-family decoders: no padding in any matrix product.

A padded forward runs every row to the batch's longest: on the 8B scoring workload
(``benchmarks/speed/scoring_gpu.py``) 11.7% of the tokens the matrix products ran were padding,
and the least-padding batches that kept it there needed 67 small forwards. Here the rows' new
tokens are concatenated into one ``[tokens, hidden]`` sequence for the embeddings, every
projection, the MLPs and the norms, so a forward can be filled up to the token budget. Only
attention sees the rows apart, each row's new tokens after its own cached prefix
(:mod:`scorers.lm.hf.packed_attention`: FlashAttention's variable-length kernel on a GPU in
bfloat16 or float16, else PyTorch's attention under a mask).

The layer is written out from transformers' Llama modules (RMSNorm in float32, rotary position
embedding from the model's own rotary module, SiLU-gated MLP; biases where the checkpoint has
them). Its two halves around attention take each layer's weights (:class:`LayerWeights`) as
arguments, so with
``compile`` one compiled function of each serves every layer (transformers' attention module
reads its cache by layer index, which compiled code specialises on); attention stays eager.
Results equal the transformers forward up to floating-point summation order
(``tests/lm/test_packed.py`` checks float32 scores against it). Models it does not cover (other
norms or activations, sliding windows, query/key norms, tensor-parallel checkpoints) are refused
by :func:`packed_support`.

A row's cached prefix is, per layer, ``(keys, values)`` of shape ``[prefix length, key/value
heads, head dim]`` (token-major, so the flash layout is built by one concatenation).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

from scorers.lm.hf.packed_attention import PackedBatch, flash_attention, masked_attention
from scorers.lm.hf.rotary_kernel import half_tables, rotate_queries_keys_, triton_rotary_support

__all__ = [
    "ATTENTION_KINDS",
    "LayerWeights",
    "PackedDecoder",
    "ROTARY_KINDS",
    "flash_available",
    "packed_support",
]

PACKED_MODEL_TYPES = ("llama", "mistral", "qwen2")
"""Decoders whose layers :class:`PackedDecoder` computes exactly (same norms, rotary, MLP)."""

ATTENTION_KINDS = ("auto", "flash", "masked")
"""How a packed forward attends: ``auto`` is ``flash`` where :func:`flash_available`, else
``masked``."""

ROTARY_KINDS = ("torch", "triton")
"""How a packed forward applies rotary position embedding to queries and keys: ``torch`` as
transformers' Llama writes it (compiled with the projections where ``compile``), ``triton`` by
one Triton kernel for both, in place (:mod:`scorers.lm.hf.rotary_kernel`)."""

RowCache = tuple[tuple[torch.Tensor, torch.Tensor], ...]
"""A row's cached prefix: per layer, keys and values ``[length, key/value heads, head dim]``."""


def packed_support(model: Any) -> str | None:
    """None when :class:`PackedDecoder` computes ``model``'s decoder exactly; otherwise why
    not (for the caller's error or its fallback)."""
    config = model.config
    model_type = getattr(config, "model_type", None)
    if model_type not in PACKED_MODEL_TYPES:
        return f"model type {model_type!r} is not one of {PACKED_MODEL_TYPES}"
    if getattr(config, "hidden_act", None) != "silu":
        return f"activation {getattr(config, 'hidden_act', None)!r} is not silu"
    if getattr(config, "sliding_window", None) and getattr(config, "use_sliding_window", True):
        return "sliding-window attention"
    if (getattr(config, "pretraining_tp", 1) or 1) > 1:
        return "tensor-parallel (pretraining_tp > 1) checkpoint"
    decoder = model.get_decoder()
    for name in ("embed_tokens", "layers", "norm", "rotary_emb"):
        if getattr(decoder, name, None) is None:
            return f"the decoder has no {name}"
    for layer in decoder.layers:
        attention = getattr(layer, "self_attn", None)
        if attention is None or any(
            getattr(attention, name, None) is not None for name in ("q_norm", "k_norm")
        ):
            return "layers without plain self-attention (query/key norms or none)"
        projections = ("gate_proj", "up_proj", "down_proj")
        if not all(hasattr(layer.mlp, name) for name in projections):
            return "layers without a gated MLP"
        if any(getattr(getattr(layer.mlp, name), "bias", None) is not None for name in projections):
            # the packed MLP multiplies by the weights alone: a checkpoint with MLP biases
            # (Llama's mlp_bias=True) would be scored wrong without a word
            return "MLP projections with biases (mlp_bias)"
    return None


def flash_available(model: Any) -> bool:
    """Whether PyTorch's variable-length FlashAttention kernel can run ``model``'s attention:
    on a CUDA device, in bfloat16 or float16, with a head dimension of at most 256."""
    parameter = next(model.parameters())
    config = model.config
    head_dim = getattr(config, "head_dim", None) or (
        config.hidden_size // config.num_attention_heads
    )
    return (
        parameter.device.type == "cuda"
        and parameter.dtype in (torch.bfloat16, torch.float16)
        and head_dim <= 256
        and head_dim % 8 == 0
    )


class LayerWeights(NamedTuple):
    """One decoder layer's weights, as the packed layer reads them (biases None where the
    checkpoint has none; :func:`packed_support` refuses MLP biases)."""

    input_norm: torch.Tensor
    q: torch.Tensor
    q_bias: torch.Tensor | None
    k: torch.Tensor
    k_bias: torch.Tensor | None
    v: torch.Tensor
    v_bias: torch.Tensor | None
    o: torch.Tensor
    o_bias: torch.Tensor | None
    post_norm: torch.Tensor
    gate: torch.Tensor
    up: torch.Tensor
    down: torch.Tensor
    qkv: torch.Tensor | None = None
    """The query, key and value weights as one matrix (``q``, ``k`` and ``v`` are views of it),
    for one product in place of three; None: three products."""
    qkv_bias: torch.Tensor | None = None
    gate_up: torch.Tensor | None = None
    """The gate and up weights as one matrix (``gate`` and ``up`` are views of it)."""

    @classmethod
    def of(cls, layer: Any, *, fused: bool = False) -> LayerWeights:
        """The weights of a transformers Llama-family decoder layer; ``fused``: with the
        projections that read the same input as one matrix each (:func:`fuse_projections`)."""
        qkv, qkv_bias, gate_up = fuse_projections(layer) if fused else (None, None, None)
        attention, mlp = layer.self_attn, layer.mlp
        return cls(
            input_norm=layer.input_layernorm.weight,
            q=attention.q_proj.weight,
            q_bias=attention.q_proj.bias,
            k=attention.k_proj.weight,
            k_bias=attention.k_proj.bias,
            v=attention.v_proj.weight,
            v_bias=attention.v_proj.bias,
            o=attention.o_proj.weight,
            o_bias=attention.o_proj.bias,
            post_norm=layer.post_attention_layernorm.weight,
            gate=mlp.gate_proj.weight,
            up=mlp.up_proj.weight,
            down=mlp.down_proj.weight,
            qkv=qkv,
            qkv_bias=qkv_bias,
            gate_up=gate_up,
        )


def fuse_projections(layer: Any) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The query, key and value weights of ``layer`` concatenated into one matrix (and their
    biases, where all three have one), and the gate and up weights into another: one matrix
    product each in place of three and two, on the same input. The layer's own projections are
    pointed at views of the fused matrices, so no weight is held twice and the model's own
    forward computes what it did; done once per layer (a second call returns the same tensors,
    unless the model was moved or cast since, which gives its projections new tensors).

    Raises:
        ValueError: some of the query, key and value projections have a bias and some not.
    """
    attention, mlp = layer.self_attn, layer.mlp
    done = getattr(layer, "_packed_fused", None)
    if done is not None and all(
        module.weight.untyped_storage().data_ptr() == whole.untyped_storage().data_ptr()
        for module, whole in ((attention.q_proj, done[0]), (mlp.gate_proj, done[2]))
    ):
        return done  # still what the layer's projections read (not moved or cast since)
    projections = (attention.q_proj, attention.k_proj, attention.v_proj)
    biases = [module.bias for module in projections]
    if any(b is None for b in biases) and not all(b is None for b in biases):
        raise ValueError("fused projections need a bias on all of q, k and v or on none")

    def fused(modules: Sequence[Any], name: str) -> torch.Tensor:
        with torch.no_grad():
            whole = torch.cat([getattr(module, name) for module in modules])
        rows = [getattr(module, name).shape[0] for module in modules]
        for module, part in zip(modules, whole.split(rows), strict=True):
            setattr(module, name, torch.nn.Parameter(part, requires_grad=False))
        return whole

    qkv = fused(projections, "weight")
    qkv_bias = None if biases[0] is None else fused(projections, "bias")
    gate_up = fused((mlp.gate_proj, mlp.up_proj), "weight")
    layer._packed_fused = (qkv, qkv_bias, gate_up)
    return layer._packed_fused


def _rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' Llama RMSNorm: the statistics in float32, the weight in the input's type."""
    dtype = x.dtype
    x = x.float()
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return weight * x.to(dtype)


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    return torch.nn.functional.linear(x, weight, bias)


def attention_projections(
    x: torch.Tensor, weights: LayerWeights, head_dim: int, eps: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A layer's queries, keys and values ``[tokens, heads, head dim]`` for packed hidden states
    ``x`` ``[tokens, hidden]``, before rotary position embedding."""
    tokens = x.shape[0]
    h = _rms_norm(x, weights.input_norm, eps)
    if weights.qkv is not None:
        rows = [weights.q.shape[0], weights.k.shape[0], weights.v.shape[0]]
        q, k, v = _linear(h, weights.qkv, weights.qkv_bias).split(rows, dim=-1)
    else:
        q = _linear(h, weights.q, weights.q_bias)
        k = _linear(h, weights.k, weights.k_bias)
        v = _linear(h, weights.v, weights.v_bias)
    return tuple(t.view(tokens, -1, head_dim) for t in (q, k, v))  # type: ignore[return-value]


def attention_inputs(
    x: torch.Tensor,
    weights: LayerWeights,
    cos: torch.Tensor,
    sin: torch.Tensor,
    head_dim: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """:func:`attention_projections` with rotary position embedding applied as transformers'
    Llama applies it (``cos``, ``sin``: ``[tokens, 1, head dim]``)."""
    q, k, v = attention_projections(x, weights, head_dim, eps)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin, v


def attention_output(
    x: torch.Tensor, attended: torch.Tensor, weights: LayerWeights, eps: float
) -> torch.Tensor:
    """The rest of the layer: output projection of ``attended`` ``[tokens, heads, head dim]``,
    residual, normalisation and gated MLP, residual."""
    x = x + _linear(attended.flatten(1), weights.o, weights.o_bias)
    h = _rms_norm(x, weights.post_norm, eps)
    if weights.gate_up is not None:
        gate, up = _linear(h, weights.gate_up, None).chunk(2, dim=-1)
    else:
        gate, up = _linear(h, weights.gate, None), _linear(h, weights.up, None)
    gated = torch.nn.functional.silu(gate) * up
    return x + _linear(gated, weights.down, None)


def _check_half_tables(decoder: Any, positions: int) -> None:
    """Refuse (ValueError, from :func:`half_tables`) a decoder whose rotary tables do not repeat
    their first half, at positions 0 to ``positions`` - 1."""
    weight = decoder.embed_tokens.weight
    probe = torch.zeros(1, positions, 1, device=weight.device, dtype=weight.dtype)
    ids = torch.arange(positions, device=weight.device)[None]
    with torch.no_grad():
        cos, sin = decoder.rotary_emb(probe, ids)
    half_tables(cos, sin)


COMPILED_RECOMPILE_LIMIT = 64
"""dynamo's recompilation limit while compiled packed layers run: one compiled function of each
half serves all layers, but compiles a graph per case it meets (one row, one token...); past
dynamo's default of 8 it would run eager without saying so. Set only around our own forwards."""


class PackedDecoder:
    """``model``'s decoder run on packed rows (see the module docstring).

    Args:
        model: a causal LM that :func:`packed_support` accepts.
        compile: wrap the layer's two halves around attention in ``torch.compile`` with dynamic
            shapes (one function each for every layer and batch shape; the first forwards pay
            the compilation; dynamo's recompilation limit is raised to
            :data:`COMPILED_RECOMPILE_LIMIT` during our forwards only). Default False.
        grouped: for ``masked`` attention, let the kernel map query heads to grouped key/value
            heads instead of repeating them. Default False.
        attention: one of :data:`ATTENTION_KINDS`. Default ``auto``.
        fuse: run the query/key/value projections as one matrix product and the gate/up
            projections as one (:func:`fuse_projections`: the model's own projections become
            views of the fused weights). Default False.
        rotary: one of :data:`ROTARY_KINDS`. Default ``torch``.

    Raises:
        ValueError: the model is not one :func:`packed_support` accepts (the reason is given),
            an unknown ``attention`` or ``rotary``, ``flash`` where :func:`flash_available` says
            no, or ``triton`` rotary where the kernel cannot run (no Triton, not on CUDA) or
            the model's rotary tables are not ones it computes (the reason is given).
    """

    def __init__(
        self,
        model: Any,
        *,
        compile: bool = False,
        grouped: bool = False,
        attention: str = "auto",
        fuse: bool = False,
        rotary: str = "torch",
    ) -> None:
        reason = packed_support(model)
        if reason:
            raise ValueError(f"packed forwards do not cover this model: {reason}")
        if attention not in ATTENTION_KINDS:
            raise ValueError(f"attention must be one of {ATTENTION_KINDS}, got {attention!r}")
        if attention == "flash" and not flash_available(model):
            raise ValueError(
                "flash attention needs the model on a CUDA device in bfloat16 or float16 with a "
                "head dimension of at most 256"
            )
        if rotary not in ROTARY_KINDS:
            raise ValueError(f"rotary must be one of {ROTARY_KINDS}, got {rotary!r}")
        self.rotary_kernel = rotary == "triton"
        if self.rotary_kernel:
            why = triton_rotary_support(next(model.parameters()).device)
            if why:
                raise ValueError(f"the Triton rotary kernel cannot run: {why}")
            _check_half_tables(
                model.get_decoder(),
                min(4096, getattr(model.config, "max_position_embeddings", 4096)),
            )
        self.flash = attention == "flash" or (attention == "auto" and flash_available(model))
        self._decoder = model.get_decoder()
        config = model.config
        self.head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        self.scaling = float(self._decoder.layers[0].self_attn.scaling)
        self.eps = float(config.rms_norm_eps)
        self.grouped = grouped
        self.layers = [LayerWeights.of(layer, fused=fuse) for layer in self._decoder.layers]
        self.compiled = compile
        inputs = attention_projections if self.rotary_kernel else attention_inputs
        self._inputs: Callable[..., Any] = inputs
        self._output: Callable[..., Any] = attention_output
        if compile:
            self._inputs = torch.compile(inputs, dynamic=True)
            self._output = torch.compile(attention_output, dynamic=True)

    def batch(self, lengths: Sequence[int], prefix_lengths: Sequence[int]) -> PackedBatch:
        """The layout of one forward for this decoder's attention."""
        device = self._decoder.embed_tokens.weight.device
        return PackedBatch.build(lengths, prefix_lengths, device, flash=self.flash)

    def forward(
        self,
        input_ids: torch.Tensor,
        batch: PackedBatch,
        prefixes: Sequence[RowCache | None],
        *,
        keep_cache: bool,
    ) -> tuple[torch.Tensor, list[RowCache]]:
        """Final-normed hidden states ``[tokens, hidden]`` of the packed ``input_ids`` (row
        ``r``'s tokens after its cached prefix ``prefixes[r]``, None: none) and, with
        ``keep_cache``, each row's cache of its prefix and new tokens (else an empty list, so a
        scoring forward holds one layer's keys and values at a time)."""
        scope = (
            torch._dynamo.config.patch(
                recompile_limit=max(torch._dynamo.config.recompile_limit, COMPILED_RECOMPILE_LIMIT)
            )
            if self.compiled
            else contextlib.nullcontext()
        )
        with scope:
            return self._forward(input_ids, batch, prefixes, keep_cache=keep_cache)

    def _forward(
        self,
        input_ids: torch.Tensor,
        batch: PackedBatch,
        prefixes: Sequence[RowCache | None],
        *,
        keep_cache: bool,
    ) -> tuple[torch.Tensor, list[RowCache]]:
        decoder = self._decoder
        x = decoder.embed_tokens(input_ids)
        cos, sin = decoder.rotary_emb(x[None], batch.positions[None])
        half = self.head_dim // 2
        cos_half, sin_half = cos[0][:, :half], sin[0][:, :half]  # [tokens, head dim / 2]
        cos, sin = cos[0][:, None], sin[0][:, None]  # [tokens, 1, head dim]
        layers: list[list[tuple[torch.Tensor, torch.Tensor]]] = []
        for layer, weights in enumerate(self.layers):
            if self.rotary_kernel:
                q, k, v = self._inputs(x, weights, self.head_dim, self.eps)
                rotate_queries_keys_(q, k, cos_half, sin_half)
            else:
                q, k, v = self._inputs(x, weights, cos, sin, self.head_dim, self.eps)
            row_prefixes = [None if p is None else p[layer] for p in prefixes]
            if self.flash:
                attended, caches = flash_attention(
                    q, k, v, row_prefixes, batch, self.scaling, keep_cache
                )
            else:
                attended, caches = masked_attention(
                    q, k, v, row_prefixes, batch, self.scaling, keep_cache, self.grouped
                )
            x = self._output(x, attended, weights, self.eps)
            layers.append(caches)
        rows: list[RowCache] = []
        if keep_cache:
            rows = [tuple(layer[row] for layer in layers) for row in range(batch.rows)]
        return _rms_norm(x, decoder.norm.weight, self.eps), rows
