"""The Binoculars detector's registration: the metrics of
:mod:`scorers.metrics.binoculars.family` (what each computes), registered by name."""

from __future__ import annotations

from scorers.metrics.binoculars.family import (
    BINOCULARS_VERSION,
    BinocularsMetric,
    BinocularsOptions,
    BinocularsSignature,
    ai_rate,
    review_fields,
)
from scorers.registry import register_metric_class

__all__ = [
    "BINOCULARS_VERSION",
    "BinocularsMetric",
    "BinocularsOptions",
    "BinocularsSignature",
    "ai_rate",
    "review_fields",
]


register_metric_class(
    BinocularsMetric,
    name="br_binoculars",
    display_name="Binoculars score",
    family="binoculars",
    higher_is_better=True,
    needs=frozenset(),
    version=BINOCULARS_VERSION,
    options=BinocularsOptions,
    corpus={"ai_rate": ai_rate},
    empty_candidate="unscored",
    description="mean Binoculars score of the review's text fields (higher: more human-like)",
    source="Beyond Rating §4.6 and App. E; Hans et al. 2024 via ahans30/Binoculars",
)
