"""Attention of packed rows: each row's new queries over its own cached prefix and its own new
keys, with no padding in the packed sequence (:mod:`scorers.lm.hf.packed_decoder`).

- :func:`flash_attention` (a GPU in bfloat16 or float16): PyTorch's variable-length
  FlashAttention kernel on the packed rows themselves, each row's prefix and new keys laid end
  to end, causal from the bottom right; grouped key/value heads are read in place;
- :func:`masked_attention` (anywhere): the rows scattered into a padded ``[rows, heads, width,
  head dim]`` layout beside their left-padded prefixes, PyTorch's attention under a mask.

A row's prefix is, per layer, ``(keys, values)`` of shape ``[prefix length, key/value heads,
head dim]`` (token-major, so the flash layout is built by one concatenation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from scorers.lm.hf.transfer import to_device

__all__ = ["PackedBatch", "flash_attention", "masked_attention"]


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
