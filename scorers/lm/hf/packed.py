"""Scoring forwards on packed rows: the rows' new tokens concatenated without padding through
every matrix product (:class:`~scorers.lm.hf.packed_decoder.PackedDecoder`), for the
Llama-family decoders :func:`~scorers.lm.hf.packed_decoder.packed_support` accepts."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import torch

from scorers.lm.base import ScoringRequest
from scorers.lm.hf.forwards import PrefixCache, ScoredTokens, count_forward
from scorers.lm.hf.packed_attention import PackedBatch
from scorers.lm.hf.packed_decoder import PackedDecoder
from scorers.lm.hf.projection import TargetProjection
from scorers.lm.hf.transfer import to_device

__all__ = ["PackedForwards"]


class PackedForwards:
    """:class:`~scorers.lm.hf.forwards.Forwards` on packed rows.

    A prefix cache here is, per layer, ``(keys, values)`` of shape ``[prefix length, key/value
    heads, head dimension]`` (:data:`~scorers.lm.hf.packed_decoder.RowCache`).

    Args:
        model: a causal LM that :func:`~scorers.lm.hf.packed_decoder.packed_support` accepts.
        project: the output head at target positions.
        stats: where forwards are counted (:func:`~scorers.lm.hf.forwards.count_forward`).
        compile, grouped, attention, fuse, rotary: as
            :class:`~scorers.lm.hf.packed_decoder.PackedDecoder`.

    Raises:
        ValueError: as :class:`~scorers.lm.hf.packed_decoder.PackedDecoder` (a model it does
            not cover, with the reason).
    """

    def __init__(
        self,
        model: Any,
        *,
        project: TargetProjection,
        stats: Counter[str],
        compile: bool = False,
        grouped: bool = False,
        attention: str = "auto",
        fuse: bool = False,
        rotary: str = "torch",
    ) -> None:
        self.decoder = PackedDecoder(
            model,
            compile=compile,
            grouped=grouped,
            attention=attention,
            fuse=fuse,
            rotary=rotary,
        )
        self._model = model
        self._project = project
        self._stats = stats

    @property
    def flash(self) -> bool:
        """Whether attention runs FlashAttention's variable-length kernel."""
        return self.decoder.flash

    @property
    def _device(self) -> Any:
        return next(self._model.parameters()).device

    def _input(
        self, rows: Sequence[Sequence[int]], caches: Sequence[PrefixCache | None]
    ) -> tuple[Any, PackedBatch]:
        """A packed forward's token ids (on the device) and layout, counted in ``stats``."""
        prefix_lengths = _prefix_lengths(caches)
        batch = self.decoder.batch([len(row) for row in rows], prefix_lengths)
        count_forward(
            self._stats, rows, prefix_lengths, batch.longest, packed=True, flash=self.flash
        )
        ids = torch.tensor([token for row in rows for token in row], dtype=torch.long)
        return to_device(ids, self._device), batch

    def extend(
        self, caches: Sequence[PrefixCache | None], extensions: Sequence[Sequence[int]]
    ) -> list[PrefixCache]:
        input_ids, batch = self._input(extensions, caches)
        with torch.inference_mode():
            _, rows = self.decoder.forward(input_ids, batch, caches, keep_cache=True)
        return rows

    def score(
        self,
        rows: Sequence[int],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
    ) -> ScoredTokens:
        depths = _prefix_lengths(caches)
        suffixes = [sequences[i][depth:] for i, depth in zip(rows, depths, strict=True)]
        input_ids, batch = self._input(suffixes, caches)
        owners: list[int] = []
        positions: list[int] = []
        target_tokens: list[int] = []
        for index, start, depth in zip(rows, batch.starts, depths, strict=True):
            request = requests[index]
            # the hidden state at position p predicts the token at p + 1
            first = start + len(request.context_ids) - depth - 1
            positions.extend(range(first, first + len(request.target_ids)))
            owners.extend([index] * len(request.target_ids))
            target_tokens.extend(request.target_ids)
        device = self._device
        with torch.inference_mode():
            hidden, _ = self.decoder.forward(input_ids, batch, caches, keep_cache=False)
            selected = hidden[to_device(torch.tensor(positions), device)]
            token_logprobs = self._project(selected, to_device(torch.tensor(target_tokens), device))
        return owners, token_logprobs


def _prefix_lengths(caches: Sequence[PrefixCache | None]) -> list[int]:
    """Each row's cached prefix length in the packed decoder's token-major layout (0: none)."""
    return [0 if cache is None else int(cache[0][0].shape[0]) for cache in caches]
