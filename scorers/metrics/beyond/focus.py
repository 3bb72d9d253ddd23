"""Focus alignment (Beyond Rating §4.4): does a model spread its strengths, weaknesses or
questions over the aspects of a paper the way human experts do?

Every point carries one of the eight App. C categories. Over a run, P_H is the distribution of
the experts' points (all reference reviews of the papers scored) and P_AI that of the model's;
the number is (Eq. 4, reconstructed: the paper's text does not give its direction, base and
smoothing legibly; those are documented choices)::

    KL(P_H ‖ P_AI) = Σ_c P_H(c) ln(P_H(c) / P_AI(c)),  P(c) = (n_c + α) / (N + 8α), α = 0.5

in nats, lower is better. It is **corpus-level**: counts are pooled over the run's papers
before dividing. The corpus number is the metric's headline, reported as ``corpus_kl``; the
per-sample value, the same formula on one paper's counts, is a diagnostic (their mean is
``mean_per_paper_kl``). Raw counts are kept in each sample's details.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorers.corpus import CorpusStatistic
from scorers.metrics.beyond.family import BeyondMetric
from scorers.metrics.beyond.structure import CATEGORIES
from scorers.options import MetricOptions, option
from scorers.resources import Resources
from scorers.types import Item

__all__ = [
    "CORPUS_KL",
    "DEFAULT_ALPHA",
    "FocusMetric",
    "corpus_kl",
    "kl_divergence",
    "pooled_kl",
    "smoothed",
]

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


def _counts_row(metadata: Mapping[str, Any]) -> list[float] | None:
    """One paper's row: the experts' 8 category counts, the model's 8, and the smoothing α
    (None for a paper without counts, e.g. unscored)."""
    counts = metadata.get("category_counts")
    if not isinstance(counts, Mapping) or metadata.get("alpha") is None:
        return None
    row = []
    for side in ("human", "model"):
        given = counts.get(side) or {}
        unknown = set(given) - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown categories {sorted(unknown)}")
        row += [float(given.get(c, 0)) for c in CATEGORIES]
    return [*row, float(metadata["alpha"])]


def pooled_kl(rows: np.ndarray) -> float:
    """KL(P_H ‖ P_AI) of the counts pooled over ``rows`` (:func:`_counts_row` each)."""
    if not rows.size:
        return math.nan
    alphas = set(rows[:, -1].tolist())
    if len(alphas) != 1:
        raise ValueError(f"samples were scored with different smoothing {sorted(alphas)}")
    alpha = alphas.pop()
    k = len(CATEGORIES)
    human = dict(zip(CATEGORIES, rows[:, :k].sum(axis=0).tolist()))
    model = dict(zip(CATEGORIES, rows[:, k : 2 * k].sum(axis=0).tolist()))
    return kl_divergence(smoothed(human, alpha), smoothed(model, alpha))


CORPUS_KL = CorpusStatistic(
    name="corpus_kl",
    display="corpus KL",
    read=_counts_row,
    compute=pooled_kl,
    fields=("category_counts", "alpha"),
    item_mean="mean_per_paper_kl",
    description="KL(P_H || P_AI) of the category counts pooled over the papers scored (Eq. 4)",
)
"""The focus KL's headline: counts pooled over the run's papers, then the KL (the per-paper KLs'
mean is reported as ``mean_per_paper_kl``, a diagnostic)."""


def corpus_kl(rows: list[dict[str, Any]]) -> float:
    """KL(P_H ‖ P_AI) of the counts pooled over ``rows`` (scored samples' metadata, each with
    ``category_counts`` {human, model} and ``alpha``): :data:`CORPUS_KL`'s value."""
    return CORPUS_KL.value(rows)


@dataclass(frozen=True)
class FocusOptions(MetricOptions):
    alpha: float = option(
        DEFAULT_ALPHA, "the additive smoothing of each category's count", minimum=0
    )


class FocusMetric(BeyondMetric):
    options: FocusOptions

    """KL(P_H ‖ P_AI) over the 8 categories for one field (fixed option ``field``)."""

    uses_points = True
    choices = {
        "kl": "KL(P_H || P_AI) in nats, Jeffreys smoothing on both sides, corpus-level pooled "
        "counts (Eq. 4, reconstructed); the per-sample value is the same on one paper",
        "experts": "every human review of the paper but the held-out one",
    }

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        section = self.field or ""
        candidate, experts = await self.field_points(item, resources, details)
        human = Counter(p.category for points in experts.values() for p in points.points)
        model = Counter(p.category for p in candidate.points)
        alpha = self.options.alpha
        details["category_counts"] = {"human": dict(human), "model": dict(model)}
        details["alpha"] = alpha
        value = kl_divergence(smoothed(human, alpha), smoothed(model, alpha))
        shown = ", ".join(f"{c} {human.get(c, 0)}/{model.get(c, 0)}" for c in CATEGORIES)
        return value, f"{section} focus KL(H||AI) on this paper {value:.3f} (human/model: {shown})"
