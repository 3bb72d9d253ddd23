"""Packed scoring forwards for Llama-family decoders: no padding in any matrix product.

A padded forward runs every row to the batch's longest: on the 8B scoring workload
(``benchmarks/speed/scoring_gpu.py``) 11.7% of the tokens the matrix products ran were padding,
and the least-padding batches that kept it there needed 67 small forwards. Here the rows' new
tokens are concatenated into one ``[tokens, hidden]`` sequence for the embeddings, every
projection, the MLPs and the norms, so a forward can be filled up to the token budget. Only
attention sees the rows apart, each row's new tokens after its own cached prefix:

- ``flash`` (a GPU in bfloat16 or float16): PyTorch's variable-length FlashAttention kernel on
  the packed rows themselves (each row's prefix and new keys laid end to end, causal from the
  bottom right), grouped key/value heads read in place: no padding, no mask;
- ``masked`` (anywhere): the rows scattered into a padded ``[rows, heads, width, head dim]``
  layout beside their left-padded prefixes, PyTorch's attention under a mask.

The layer is written out from transformers' Llama modules (RMSNorm in float32, rotary position
embedding from the model's own rotary module, SiLU-gated MLP; biases where the checkpoint has
them). Its two halves around attention take each layer's weights as tensors, so with
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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from scorers.lm.transfer import to_device

__all__ = [
    "ATTENTION_KINDS",
    "PackedBatch",
    "PackedDecoder",
    "flash_available",
    "packed_support",
]

PACKED_MODEL_TYPES = ("llama", "mistral", "qwen2")
"""Decoders whose layers :class:`PackedDecoder` computes exactly (same norms, rotary, MLP)."""

ATTENTION_KINDS = ("auto", "flash", "masked")
"""How a packed forward attends: ``auto`` is ``flash`` where :func:`flash_available`, else
``masked``."""

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


@dataclass(frozen=True)
class PackedBatch:
    """One forward's layout: row ``r`` has ``lengths[r]`` new tokens after a cached prefix of
    ``prefix_lengths[r]``. ``positions`` are the packed tokens' positions. For ``flash``:
    ``cu_queries`` and ``cu_keys`` are the cumulative query and key lengths (int32, rows + 1).
    For ``masked``: ``index`` maps each packed token to its place in the padded ``[rows x
    width]`` layout and ``mask`` says which of the ``longest`` left-padded prefix positions and
    ``width`` new positions each padded query sees (None for ``flash``)."""

    lengths: tuple[int, ...]
    prefix_lengths: tuple[int, ...]
    positions: torch.Tensor
    cu_queries: torch.Tensor | None = None
    cu_keys: torch.Tensor | None = None
    index: torch.Tensor | None = None
    mask: torch.Tensor | None = None

    @property
    def rows(self) -> int:
        return len(self.lengths)

    @property
    def width(self) -> int:
        return max(self.lengths)

    @property
    def longest(self) -> int:
        return max(self.prefix_lengths)

    @property
    def key_lengths(self) -> tuple[int, ...]:
        """Each row's keys: its cached prefix and its new tokens."""
        return tuple(p + n for p, n in zip(self.prefix_lengths, self.lengths, strict=True))

    @property
    def starts(self) -> list[int]:
        """Where each row's tokens start in the packed sequence."""
        starts, total = [], 0
        for length in self.lengths:
            starts.append(total)
            total += length
        return starts

    @classmethod
    def build(
        cls,
        lengths: Sequence[int],
        prefix_lengths: Sequence[int],
        device: Any,
        *,
        flash: bool,
    ) -> PackedBatch:
        """The layout of rows with ``lengths`` new tokens on prefixes of ``prefix_lengths``,
        on ``device``, for ``flash`` attention or else ``masked``.

        Raises:
            ValueError: a row without new tokens, or not one prefix length per row.
        """
        if len(lengths) != len(prefix_lengths) or not lengths:
            raise ValueError("one prefix length per row, and at least one row")
        if any(length < 1 for length in lengths):
            raise ValueError("every row needs at least one new token")
        lengths, prefix_lengths = tuple(lengths), tuple(prefix_lengths)
        rows = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
        offsets = torch.cat([torch.arange(length) for length in lengths])
        prefix = torch.tensor(prefix_lengths)
        positions = to_device(prefix[rows] + offsets, device)
        if flash:

            def cumulative(values: Sequence[int]) -> torch.Tensor:
                cu = torch.zeros(len(values) + 1, dtype=torch.int32)
                cu[1:] = torch.tensor(values).cumsum(0)
                return to_device(cu, device)

            keys = [p + n for p, n in zip(prefix_lengths, lengths, strict=True)]  # no batch yet
            return cls(lengths, prefix_lengths, positions, cumulative(lengths), cumulative(keys))
        width, longest = max(lengths), max(prefix_lengths)
        index = to_device(rows * width + offsets, device)
        prefix = to_device(prefix, device)
        # keys: the left-padded prefix (row r's own at its end), then the new tokens causally
        sees_prefix = torch.arange(longest, device=device)[None, :] >= (longest - prefix)[:, None]
        causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()
        mask = torch.cat(
            [
                sees_prefix[:, None, :].expand(-1, width, -1),
                causal[None].expand(len(lengths), -1, -1),
            ],
            dim=2,
        )[:, None]
        return cls(lengths, prefix_lengths, positions, index=index, mask=mask)


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


def attention_inputs(
    x: torch.Tensor,
    weights: tuple[Any, ...],
    cos: torch.Tensor,
    sin: torch.Tensor,
    head_dim: int,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A layer's queries, keys and values ``[tokens, heads, head dim]`` for packed hidden states
    ``x`` ``[tokens, hidden]``, rotary position embedding applied (``cos``, ``sin``: ``[tokens,
    1, head dim]``); ``weights`` in :meth:`PackedDecoder.layer_weights`' order."""
    norm_in, q_w, q_b, k_w, k_b, v_w, v_b = weights[:7]
    tokens = x.shape[0]
    h = _rms_norm(x, norm_in, eps)
    q = _linear(h, q_w, q_b).view(tokens, -1, head_dim)
    k = _linear(h, k_w, k_b).view(tokens, -1, head_dim)
    v = _linear(h, v_w, v_b).view(tokens, -1, head_dim)
    return q * cos + _rotate_half(q) * sin, k * cos + _rotate_half(k) * sin, v


def attention_output(
    x: torch.Tensor, attended: torch.Tensor, weights: tuple[Any, ...], eps: float
) -> torch.Tensor:
    """The rest of the layer: output projection of ``attended`` ``[tokens, heads, head dim]``,
    residual, normalisation and gated MLP, residual."""
    o_w, o_b, norm_post, gate_w, up_w, down_w = weights[7:]
    x = x + _linear(attended.flatten(1), o_w, o_b)
    h = _rms_norm(x, norm_post, eps)
    gated = torch.nn.functional.silu(_linear(h, gate_w, None)) * _linear(h, up_w, None)
    return x + _linear(gated, down_w, None)


def _flash_varlen(
    q: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    cu_queries: torch.Tensor,
    cu_keys: torch.Tensor,
    max_queries: int,
    max_keys: int,
    scaling: float,
) -> torch.Tensor:
    """PyTorch's variable-length FlashAttention forward (causal, no dropout): sequence ``r``'s
    queries ``q[cu_queries[r]:cu_queries[r + 1]]`` over its keys and values
    ``[cu_keys[r]:cu_keys[r + 1]]``, query ``i`` of ``n`` seeing the keys up to ``i + (keys -
    n)``; fewer key/value heads than query heads are read in place (grouped-query)."""
    return torch.ops.aten._flash_attention_forward(
        q, keys, values, cu_queries, cu_keys, max_queries, max_keys, 0.0, True, False, scale=scaling
    )[0]


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    prefixes: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
    batch: PackedBatch,
    scaling: float,
    keep_cache: bool,
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """Each row's new queries over its prefix's keys and its own (causal), by PyTorch's
    variable-length FlashAttention kernel: the keys and values are laid out row after row,
    prefix then new tokens (one concatenation), the causal mask aligned to each row's last key
    (FlashAttention's rule when a row has more keys than queries). Returns the attended values
    ``[tokens, heads, head dim]`` and, with ``keep_cache``, each row's keys and values."""
    new_keys, new_values = k.split(batch.lengths), v.split(batch.lengths)
    key_parts: list[torch.Tensor] = []
    value_parts: list[torch.Tensor] = []
    for row, prefix in enumerate(prefixes):
        if prefix is not None:
            key_parts.append(prefix[0])
            value_parts.append(prefix[1])
        key_parts.append(new_keys[row])
        value_parts.append(new_values[row])
    keys, values = torch.cat(key_parts), torch.cat(value_parts)
    key_lengths = batch.key_lengths
    out = _flash_varlen(
        q, keys, values, batch.cu_queries, batch.cu_keys, batch.width, max(key_lengths), scaling
    )
    caches = []
    if keep_cache:
        caches = list(zip(keys.split(key_lengths), values.split(key_lengths), strict=True))
    return out, caches


def masked_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    prefixes: Sequence[tuple[torch.Tensor, torch.Tensor] | None],
    batch: PackedBatch,
    scaling: float,
    keep_cache: bool,
    grouped: bool,
) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
    """:func:`flash_attention` on any device: the rows scattered into a padded layout beside
    their left-padded prefixes, PyTorch's attention under ``batch.mask``; ``grouped`` lets the
    kernel map query heads to key/value heads (``enable_gqa``) instead of repeating the
    key/value heads."""
    rows, width, longest = batch.rows, batch.width, batch.longest

    def padded(t: torch.Tensor) -> torch.Tensor:
        out = t.new_zeros(rows * width, t.shape[1], t.shape[2])
        out[batch.index] = t
        return out.view(rows, width, t.shape[1], t.shape[2]).transpose(1, 2)

    query, keys, values = padded(q), padded(k), padded(v)
    if longest:
        past_keys = k.new_zeros(rows, longest, k.shape[1], k.shape[2])
        past_values = torch.zeros_like(past_keys)
        for row, prefix in enumerate(prefixes):
            if prefix is not None:
                past_keys[row, longest - prefix[0].shape[0] :] = prefix[0]
                past_values[row, longest - prefix[1].shape[0] :] = prefix[1]
        keys = torch.cat([past_keys.transpose(1, 2), keys], dim=2)
        values = torch.cat([past_values.transpose(1, 2), values], dim=2)
    groups = query.shape[1] // keys.shape[1]
    if groups > 1 and not grouped:
        attend_keys = keys.repeat_interleave(groups, dim=1)
        attend_values = values.repeat_interleave(groups, dim=1)
    else:
        attend_keys, attend_values = keys, values
    out = torch.nn.functional.scaled_dot_product_attention(
        query,
        attend_keys,
        attend_values,
        attn_mask=batch.mask,
        scale=scaling,
        enable_gqa=groups > 1 and grouped,
    )
    out = out.transpose(1, 2).reshape(rows * width, q.shape[1], q.shape[2])[batch.index]
    caches = []
    if keep_cache:
        for row, (prefix, length) in enumerate(
            zip(batch.prefix_lengths, batch.lengths, strict=True)
        ):
            span = slice(longest - prefix, longest + length)
            caches.append(
                (keys[row, :, span].transpose(0, 1), values[row, :, span].transpose(0, 1))
            )
    return out, caches


class PackedDecoder:
    """``model``'s decoder run on packed rows (see the module docstring).

    Args:
        model: a causal LM that :func:`packed_support` accepts.
        compile: wrap the layer's two halves around attention in ``torch.compile`` with dynamic
            shapes (one function each for every layer and batch shape; the first forwards pay
            the compilation). Default False.
        grouped: for ``masked`` attention, let the kernel map query heads to grouped key/value
            heads instead of repeating them. Default False.
        attention: one of :data:`ATTENTION_KINDS`. Default ``auto``.

    Raises:
        ValueError: the model is not one :func:`packed_support` accepts (the reason is given),
            an unknown ``attention``, or ``flash`` where :func:`flash_available` says no.
    """

    def __init__(
        self,
        model: Any,
        *,
        compile: bool = False,
        grouped: bool = False,
        attention: str = "auto",
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
        self.flash = attention == "flash" or (attention == "auto" and flash_available(model))
        self._decoder = model.get_decoder()
        config = model.config
        self.head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        self.scaling = float(self._decoder.layers[0].self_attn.scaling)
        self.eps = float(config.rms_norm_eps)
        self.grouped = grouped
        self.layers = [self.layer_weights(layer) for layer in self._decoder.layers]
        self._inputs: Callable[..., Any] = attention_inputs
        self._output: Callable[..., Any] = attention_output
        if compile:
            # one compiled function of each for all layers, but a graph per case it meets (one
            # row, one token...): past dynamo's limit of 8 it would run eager without saying so
            config = torch._dynamo.config
            config.recompile_limit = max(config.recompile_limit, 64)
            self._inputs = torch.compile(attention_inputs, dynamic=True)
            self._output = torch.compile(attention_output, dynamic=True)

    @staticmethod
    def layer_weights(layer: Any) -> tuple[Any, ...]:
        attention, mlp = layer.self_attn, layer.mlp
        return (
            layer.input_layernorm.weight,
            attention.q_proj.weight,
            attention.q_proj.bias,
            attention.k_proj.weight,
            attention.k_proj.bias,
            attention.v_proj.weight,
            attention.v_proj.bias,
            attention.o_proj.weight,
            attention.o_proj.bias,
            layer.post_attention_layernorm.weight,
            mlp.gate_proj.weight,
            mlp.up_proj.weight,
            mlp.down_proj.weight,
        )

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
        decoder = self._decoder
        x = decoder.embed_tokens(input_ids)
        cos, sin = decoder.rotary_emb(x[None], batch.positions[None])
        cos, sin = cos[0][:, None], sin[0][:, None]  # [tokens, 1, head dim]
        layers: list[list[tuple[torch.Tensor, torch.Tensor]]] = []
        for layer, weights in enumerate(self.layers):
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
