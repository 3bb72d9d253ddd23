"""Token-budget batching: which rows share one padded forward."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["token_budget_batches"]


def token_budget_batches(lengths: Sequence[int], max_batch_tokens: int) -> list[list[int]]:
    """Group indices into batches, shortest first, so that each batch's padded size (rows x
    longest row) stays within ``max_batch_tokens`` (a longer single row is its own batch)."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[index]  # ascending order: the newest row is the longest
        if current and longest * (len(current) + 1) > max_batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
