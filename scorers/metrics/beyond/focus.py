"""Focus alignment (Beyond Rating §4.4): does a model spread its strengths, weaknesses or
questions over the aspects of a paper the way human experts do?

Every point carries one of the eight App. C categories. Over a run, P_H is the distribution of
the experts' points (all reference reviews of the papers scored) and P_AI that of the model's;
the number is (Eq. 4, reconstructed; direction, base and smoothing are not legible in the seed,
spec M3 choices)::

    KL(P_H ‖ P_AI) = Σ_c P_H(c) ln(P_H(c) / P_AI(c)),  P(c) = (n_c + α) / (N + 8α), α = 0.5

in nats, lower is better. It is **corpus-level**: counts are pooled over the run's papers
before dividing (the per-sample value, the same formula on one paper's counts, is a diagnostic;
the corpus number is reported as ``corpus_kl``). Raw counts are kept in each sample's details.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from scorers.metrics.beyond.family import BeyondMetric
from scorers.metrics.beyond.structure import CATEGORIES
from scorers.resources import Resources
from scorers.types import Item

__all__ = ["DEFAULT_ALPHA", "FocusMetric", "corpus_kl", "kl_divergence", "smoothed"]

DEFAULT_ALPHA = 0.5


def smoothed(counts: Mapping[str, float], alpha: float = DEFAULT_ALPHA) -> list[float]:
    """The category distribution of ``counts`` with ``alpha`` added to each of the 8."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    unknown = set(counts) - set(CATEGORIES)
    if unknown:
        raise ValueError(f"unknown categories {sorted(unknown)}")
    raw = [float(counts.get(c, 0)) + alpha for c in CATEGORIES]
    total = sum(raw)
    if total <= 0:
        raise ValueError("no counts and no smoothing: the distribution is undefined")
    return [r / total for r in raw]


def kl_divergence(p: Sequence[float], q: Sequence[float]) -> float:
    """Σ p ln(p/q) in nats (terms with p = 0 count 0; q = 0 where p > 0 is infinite)."""
    total = 0.0
    for pi, qi in zip(p, q, strict=True):
        if pi == 0:
            continue
        if qi == 0:
            return math.inf
        total += pi * math.log(pi / qi)
    return total


def _pooled(rows: Iterable[Mapping[str, Any]], side: str) -> Counter[str]:
    pooled: Counter[str] = Counter()
    for row in rows:
        pooled.update(row["category_counts"][side])
    return pooled


def corpus_kl(rows: list[dict[str, Any]]) -> float:
    """KL(P_H ‖ P_AI) of the counts pooled over ``rows`` (scored samples' metadata, each with
    ``category_counts`` {human, model} and ``alpha``)."""
    if not rows:
        return math.nan
    alphas = {float(row["alpha"]) for row in rows}
    if len(alphas) != 1:
        raise ValueError(f"samples were scored with different smoothing {sorted(alphas)}")
    alpha = alphas.pop()
    return kl_divergence(
        smoothed(_pooled(rows, "human"), alpha), smoothed(_pooled(rows, "model"), alpha)
    )


class FocusMetric(BeyondMetric):
    """KL(P_H ‖ P_AI) over the 8 categories for one field (fixed option ``field``)."""

    uses_points = True
    choices = {
        "kl": "KL(P_H || P_AI) in nats, Jeffreys smoothing on both sides, corpus-level pooled "
        "counts (Eq. 4, reconstructed); the per-sample value is the same on one paper",
        "experts": "every human review of the paper but the held-out one",
    }

    async def compute(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        section = self.field or ""
        candidate, experts = await self.field_points(item, resources, details)
        human = Counter(p.category for points in experts.values() for p in points.points)
        model = Counter(p.category for p in candidate.points)
        alpha = float(self.options["alpha"])
        details["category_counts"] = {"human": dict(human), "model": dict(model)}
        details["alpha"] = alpha
        value = kl_divergence(smoothed(human, alpha), smoothed(model, alpha))
        shown = ", ".join(f"{c} {human.get(c, 0)}/{model.get(c, 0)}" for c in CATEGORIES)
        return value, f"{section} focus KL(H||AI) on this paper {value:.3f} (human/model: {shown})"
