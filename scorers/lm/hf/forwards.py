"""What a scoring forward does, whichever way it lays out its rows.

The backend walks the prefix tree (:mod:`scorers.lm.hf.prefix_tree`) level by level and asks a
:class:`Forwards` for two things: extend cached prefixes by a few tokens each (keeping their keys
and values), and score requests' remaining tokens on top of their cached prefixes. Two layouts
implement it with the same methods: :class:`~scorers.lm.hf.padded.PaddedForwards` (transformers'
own forward on padded rows) and :class:`~scorers.lm.hf.packed.PackedForwards` (the rows
concatenated without padding). Both count what they run in the same ``stats``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

from scorers.lm.base import ScoringRequest

__all__ = ["Forwards", "PrefixCache", "ScoredTokens", "count_forward"]

PrefixCache = tuple[tuple[Any, Any], ...]
"""A computed prefix's keys and values, per layer ``(keys, values)``, in the layout of the
:class:`Forwards` that made it (only that one reads it)."""

ScoredTokens = tuple[list[int], Any]
"""One forward's result: each target token's request index, and the tensor of their
log-probabilities (left on the device until the whole call is summed)."""


class Forwards(Protocol):
    """One layout of scoring forwards."""

    def extend(
        self, caches: Sequence[PrefixCache | None], extensions: Sequence[Sequence[int]]
    ) -> list[PrefixCache]:
        """Keys and values of each ``caches[i]``'s prefix (None: empty) extended by
        ``extensions[i]``, in one forward."""
        ...

    def score(
        self,
        rows: Sequence[int],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
    ) -> ScoredTokens:
        """The target log-probabilities of requests ``rows`` in one forward, request
        ``rows[i]``'s first tokens being those in ``caches[i]`` and its whole token sequence
        ``sequences[rows[i]]``."""
        ...


def count_forward(
    stats: Counter[str],
    rows: Sequence[Sequence[int]],
    prefix_lengths: Sequence[int],
    longest: int,
    *,
    packed: bool,
    flash: bool = False,
) -> None:
    """Count one forward of ``rows`` new tokens on cached prefixes of ``prefix_lengths``
    (``longest`` the longest) in ``stats``: ``forwards``, ``rows``, ``tokens`` (real),
    ``padded_tokens`` (the tokens the matrix products ran: rows x width, or the real tokens when
    ``packed``), ``attention_tokens`` (rows x width, the padded layout attention runs on; the
    real tokens with ``flash``) and ``padded_prefix_tokens`` (cached positions padded so that
    rows on shorter prefixes share a forward; none with ``flash``)."""
    tokens = sum(len(row) for row in rows)
    padded = len(rows) * max(len(row) for row in rows)
    stats["forwards"] += 1
    stats["rows"] += len(rows)
    stats["tokens"] += tokens
    stats["padded_tokens"] += tokens if packed else padded
    stats["attention_tokens"] += tokens if flash else padded
    if not flash:
        stats["padded_prefix_tokens"] += len(rows) * longest - sum(prefix_lengths)
