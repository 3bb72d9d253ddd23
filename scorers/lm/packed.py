"""Packed scoring forwards for Llama-family decoders: no padding in any matrix product.

A padded forward runs every row to the batch's longest: on the 8B scoring workload
(``benchmarks/speed/scoring_gpu.py``) 11.7% of the tokens the matrix products ran were padding,
and the least-padding batches that kept it there needed 67 small forwards. Here the rows' new
tokens are concatenated into one ``[tokens, hidden]`` sequence for the embeddings, every
projection, the MLPs and the norms; only attention sees a padded layout (each row's new tokens
scattered into ``[rows, heads, width, head dim]``, beside its cached prefix, under a mask), which
is a small share of the FLOPs. So padding costs attention only and a forward can be filled up
to the token budget.

The layer is written out from transformers' Llama modules (RMSNorm in float32, rotary position
embedding from the model's own rotary module, SiLU-gated MLP; biases where the checkpoint has
them) and takes each layer's weights as tensors, so one compiled function
(``compile_layers=True``) serves every layer: transformers' attention module reads its cache by
layer index, which compiled code specialises on. Results equal the transformers forward up to
floating-point summation order (``tests/lm/test_packed.py`` checks float32 scores against it).
Models it does not cover (other norms or activations, sliding windows, query/key norms, tensor
parallel checkpoints) are refused by :func:`packed_support`, and the caller keeps transformers'
forward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from scorers.lm.transfer import to_device

__all__ = ["PackedBatch", "PackedDecoder", "packed_layer", "packed_support"]

PACKED_MODEL_TYPES = ("llama", "mistral", "qwen2")
"""Decoders whose layers :func:`packed_layer` computes exactly (same norms, rotary, MLP)."""


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
        if not all(hasattr(layer.mlp, name) for name in ("gate_proj", "up_proj", "down_proj")):
            return "layers without a gated MLP"
    return None


@dataclass(frozen=True)
class PackedBatch:
    """One forward's layout: row ``r`` has ``lengths[r]`` new tokens after a cached prefix of
    ``prefix_lengths[r]`` (left-padded to ``longest``). ``index`` maps each packed token to its
    place in the padded ``[rows x width]`` attention layout, ``positions`` are the tokens'
    positions and ``mask`` says which of the ``longest + width`` keys each padded query sees."""

    lengths: tuple[int, ...]
    prefix_lengths: tuple[int, ...]
    longest: int
    width: int
    index: torch.Tensor
    positions: torch.Tensor
    mask: torch.Tensor

    @property
    def rows(self) -> int:
        return len(self.lengths)

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
        longest: int,
        device: Any,
    ) -> PackedBatch:
        if len(lengths) != len(prefix_lengths):
            raise ValueError("one prefix length per row")
        if any(length < 1 for length in lengths):
            raise ValueError("every row needs at least one new token")
        width = max(lengths)
        rows = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
        offsets = torch.cat([torch.arange(length) for length in lengths])
        prefix = torch.tensor(list(prefix_lengths))
        index = rows * width + offsets
        positions = prefix[rows] + offsets
        prefix, index, positions = (to_device(t, device) for t in (prefix, index, positions))
        # keys: the left-padded prefix (row r's own at its end), then the new tokens causally
        keys = torch.arange(longest, device=device)
        sees_prefix = keys[None, :] >= (longest - prefix)[:, None]  # [rows, longest]
        causal = torch.ones(width, width, dtype=torch.bool, device=device).tril()
        mask = torch.cat(
            [
                sees_prefix[:, None, :].expand(-1, width, -1),
                causal[None].expand(len(lengths), -1, -1),
            ],
            dim=2,
        )[:, None]
        return cls(tuple(lengths), tuple(prefix_lengths), longest, width, index, positions, mask)


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


@torch.compiler.disable
def _attention(
    query: torch.Tensor,
    keys: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    scaling: float,
    grouped: bool,
) -> torch.Tensor:
    """PyTorch's attention kernel under ``mask``, always eager: compiled, a masked attention
    whose key length is not a multiple of the kernel's alignment is the one part of the layer
    whose lowering has failed before, and fusing one kernel gains nothing; the layer compiles
    as two graphs around it."""
    return torch.nn.functional.scaled_dot_product_attention(
        query, keys, values, attn_mask=mask, scale=scaling, enable_gqa=grouped
    )


def packed_layer(
    x: torch.Tensor,
    weights: tuple[Any, ...],
    cos: torch.Tensor,
    sin: torch.Tensor,
    index: torch.Tensor,
    mask: torch.Tensor,
    past_keys: torch.Tensor | None,
    past_values: torch.Tensor | None,
    rows: int,
    width: int,
    head_dim: int,
    scaling: float,
    eps: float,
    grouped: bool,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One decoder layer on packed tokens ``x`` ``[tokens, hidden]``: returns the new hidden
    states and the layer's keys and values ``[rows, key/value heads, longest + width, head
    dim]`` (cached prefix, then the new tokens in the padded layout). ``weights`` are the
    layer's tensors in :meth:`PackedDecoder.layer_weights`' order; ``grouped`` lets the
    attention kernel map query heads to key/value heads (``enable_gqa``) instead of repeating
    the key/value heads."""
    (norm_in, q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b, norm_post, gate_w, up_w, down_w) = weights
    tokens = x.shape[0]
    h = _rms_norm(x, norm_in, eps)
    q = _linear(h, q_w, q_b).view(tokens, -1, head_dim)
    k = _linear(h, k_w, k_b).view(tokens, -1, head_dim)
    v = _linear(h, v_w, v_b).view(tokens, -1, head_dim)
    q = q * cos + _rotate_half(q) * sin
    k = k * cos + _rotate_half(k) * sin

    def padded(t: torch.Tensor) -> torch.Tensor:
        out = t.new_zeros(rows * width, t.shape[1], head_dim)
        out[index] = t
        return out.view(rows, width, t.shape[1], head_dim).transpose(1, 2)

    query, keys, values = padded(q), padded(k), padded(v)
    if past_keys is not None:
        keys = torch.cat([past_keys, keys], dim=2)
        values = torch.cat([past_values, values], dim=2)
    groups = query.shape[1] // keys.shape[1]
    if groups > 1 and not grouped:
        attend_keys = keys.repeat_interleave(groups, dim=1)
        attend_values = values.repeat_interleave(groups, dim=1)
    else:
        attend_keys, attend_values = keys, values
    out = _attention(query, attend_keys, attend_values, mask, scaling, groups > 1 and grouped)
    out = out.transpose(1, 2).reshape(rows * width, -1)[index]
    x = x + _linear(out, o_w, o_b)
    h = _rms_norm(x, norm_post, eps)
    gated = torch.nn.functional.silu(_linear(h, gate_w, None)) * _linear(h, up_w, None)
    return x + _linear(gated, down_w, None), keys, values


class PackedDecoder:
    """``model``'s decoder run on packed rows (see the module docstring). ``compile`` wraps
    :func:`packed_layer` in ``torch.compile`` with dynamic shapes (one function for every
    layer and batch shape; the first forwards pay the compilation); ``grouped`` is passed to
    it.

    Raises:
        ValueError: the model is not one :func:`packed_support` accepts (the reason is given).
    """

    def __init__(self, model: Any, *, compile: bool = False, grouped: bool = False) -> None:
        reason = packed_support(model)
        if reason:
            raise ValueError(f"packed forwards do not cover this model: {reason}")
        self._decoder = model.get_decoder()
        config = model.config
        self.head_dim = getattr(config, "head_dim", None) or (
            config.hidden_size // config.num_attention_heads
        )
        self.scaling = float(self._decoder.layers[0].self_attn.scaling)
        self.eps = float(config.rms_norm_eps)
        self.grouped = grouped
        self.layers = [self.layer_weights(layer) for layer in self._decoder.layers]
        self._layer: Callable[..., Any] = packed_layer
        if compile:
            # one compiled function for every layer, but a graph per case it meets (with or
            # without a prefix, one row, grouped or not, before and after the attention): past
            # dynamo's limit of 8 per function it would run eager without saying so
            config = torch._dynamo.config
            config.recompile_limit = max(config.recompile_limit, 64)
            self._layer = torch.compile(packed_layer, dynamic=True)

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

    def forward(
        self,
        input_ids: torch.Tensor,
        batch: PackedBatch,
        past: Sequence[tuple[torch.Tensor, torch.Tensor]] | None,
        *,
        keep_cache: bool,
    ) -> tuple[torch.Tensor, list[tuple[torch.Tensor, torch.Tensor]]]:
        """Final-normed hidden states ``[tokens, hidden]`` of the packed ``input_ids`` and, with
        ``keep_cache``, every layer's keys and values (see :func:`packed_layer`; else an empty
        list, so a scoring forward holds one layer's at a time); ``past`` is each layer's cached
        prefix ``[rows, key/value heads, batch.longest, head dim]`` (None: no prefix)."""
        decoder = self._decoder
        x = decoder.embed_tokens(input_ids)
        cos, sin = decoder.rotary_emb(x[None], batch.positions[None])
        cos, sin = cos[0][:, None], sin[0][:, None]  # [tokens, 1, head dim]
        caches = []
        for layer, weights in enumerate(self.layers):
            past_keys, past_values = past[layer] if past is not None else (None, None)
            x, keys, values = self._layer(
                x,
                weights,
                cos,
                sin,
                batch.index,
                batch.mask,
                past_keys,
                past_values,
                batch.rows,
                batch.width,
                self.head_dim,
                self.scaling,
                self.eps,
                self.grouped,
            )
            if keep_cache:
                caches.append((keys, values))
        return _rms_norm(x, decoder.norm.weight, self.eps), caches
