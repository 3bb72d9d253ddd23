"""Ranking review-writing models by the Auto-PRE panel's verdicts against the human review.

Each model has one verdict per paper (1 win, 0.5 tie, 0 loss against the held-out human
review). Models are compared on the papers every one of them has a verdict for; the win rate's
interval and the rank interval come from a paired percentile bootstrap over those papers (the
same resampled papers for every model), so a rank interval says which places the data allow.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RankRow", "rank_with_intervals"]


@dataclass(frozen=True)
class RankRow:
    model: str
    papers: int
    win_rate: float
    low: float
    high: float
    rank: int
    rank_low: int
    rank_high: int


def _ranks(values: Mapping[str, float]) -> dict[str, int]:
    """Competition ranks, 1 = highest (equal values share the better rank)."""
    return {m: 1 + sum(other > v for other in values.values()) for m, v in values.items()}


def _percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def rank_with_intervals(
    verdicts: Mapping[str, Mapping[str, float]],
    *,
    level: float = 0.90,
    resamples: int = 2000,
    seed: int = 0,
) -> list[RankRow]:
    """Rows best first: each model's win rate on the shared papers, its bootstrap interval at
    ``level`` and its rank with the rank interval. No shared paper is a ``ValueError``."""
    if not verdicts:
        raise ValueError("no model to rank")
    shared = sorted(set.intersection(*(set(v) for v in verdicts.values())))
    if not shared:
        raise ValueError("the models share no paper with a panel verdict")
    models = sorted(verdicts)
    rates = {m: sum(verdicts[m][p] for p in shared) / len(shared) for m in models}
    ranks = _ranks(rates)
    rng = random.Random(seed)
    boot_rates: dict[str, list[float]] = {m: [] for m in models}
    boot_ranks: dict[str, list[int]] = {m: [] for m in models}
    for _ in range(resamples):
        sample = [shared[rng.randrange(len(shared))] for _ in shared]
        current = {m: sum(verdicts[m][p] for p in sample) / len(sample) for m in models}
        for m, r in _ranks(current).items():
            boot_rates[m].append(current[m])
            boot_ranks[m].append(r)
    tail = (1 - level) / 2
    rows = []
    for m in models:
        rs, ks = sorted(boot_rates[m]), sorted(boot_ranks[m])
        rows.append(
            RankRow(
                model=m,
                papers=len(shared),
                win_rate=rates[m],
                low=_percentile(rs, tail),
                high=_percentile(rs, 1 - tail),
                rank=ranks[m],
                rank_low=int(_percentile(ks, tail)),
                rank_high=int(_percentile(ks, 1 - tail)),
            )
        )
    return sorted(rows, key=lambda r: (r.rank, r.model))
