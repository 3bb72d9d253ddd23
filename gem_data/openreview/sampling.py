"""The GEM data setup: papers with enough reviews, a seeded sample of papers and of reviews.

Both choices depend only on the seed and the ids, never on the order things were fetched in, so
a resumed or repeated build selects the same papers and reviews; a larger ``n`` extends the
sample of a smaller one.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["select_papers", "select_reviews"]


def select_papers(paper_ids: Sequence[str], n: int | None, *, seed: int) -> list[str]:
    """Up to ``n`` of ``paper_ids`` (all when ``n`` is None), in a seeded random order."""
    if n is not None and n < 1:
        raise ValueError(f"number of papers must be at least 1, got {n}")
    ordered = sorted(set(paper_ids))
    random.Random(seed).shuffle(ordered)
    return ordered if n is None else ordered[:n]


def select_reviews(
    paper_id: str, review_ids: Sequence[str], k: int | None, *, seed: int
) -> list[int]:
    """Indices (ascending, so reviews keep their original order) of ``k`` reviews of a paper
    drawn with a generator seeded by (seed, paper id); all of them when ``k`` is None or there
    are no more than ``k``."""
    if k is not None and k < 1:
        raise ValueError(f"reviews per paper must be at least 1, got {k}")
    if k is None or len(review_ids) <= k:
        return list(range(len(review_ids)))
    order = sorted(range(len(review_ids)), key=lambda i: (review_ids[i], i))
    chosen = random.Random(f"{seed}:{paper_id}").sample(order, k)
    return sorted(chosen)
