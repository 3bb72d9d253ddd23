"""Inspect metrics for the benchmark scores: 90% confidence bounds of the mean (the GEM paper's
plots use 90% intervals)."""

from __future__ import annotations

from inspect_ai.scorer import Metric, SampleScore, metric

from scorers.statistics import mean_confidence_interval

__all__ = ["ci90_lower", "ci90_upper"]


def _values(scores: list[SampleScore]) -> list[float]:
    return [float(s.score.as_float()) for s in scores]


@metric
def ci90_lower() -> Metric:
    """Lower end of the Student-t 90% confidence interval of the mean score."""

    def compute(scores: list[SampleScore]) -> float:
        return mean_confidence_interval(_values(scores), level=0.90)[0]

    return compute


@metric
def ci90_upper() -> Metric:
    """Upper end of the Student-t 90% confidence interval of the mean score."""

    def compute(scores: list[SampleScore]) -> float:
        return mean_confidence_interval(_values(scores), level=0.90)[1]

    return compute
