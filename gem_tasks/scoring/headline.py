"""Which number summarises a task's log (``Task(headline_metric=...)``): what Inspect's log
viewer shows first, what eval-set listings and ``inspect_ai.analysis.evals_df`` report as the
log's ``score_headline_*`` columns, and what the leaderboard reads.

Without a declaration Inspect takes the first metric of the first score, which for the
robustness task was the count of generations at their token limit. A declaration that does not
match a log's scores (a scorer swapped at ``inspect score`` time) is abandoned by Inspect with a
warning, never an error.
"""

from __future__ import annotations

from inspect_ai.log import HeadlineMetric

from scorers.plan import ScoringPlan
from scorers.registry import metric_spec

__all__ = ["headline_of"]

MEAN = "mean"
"""The Inspect metric of a per-item mean (Inspect's ``mean()``)."""


def headline_of(
    plan: ScoringPlan, *, metric: str | None = None, suffix: str = ""
) -> HeadlineMetric:
    """The headline of a task scoring ``plan``: the first requested metric's scorer
    (``<name><suffix>``: ``_paired`` for the robustness task's scorers) and ``metric``, the
    task's own statistic where it reports one (Spearman's ρ with the grades, the SMD), else the
    metric's headline: the mean of its per-item values, or its corpus statistic (balanced
    accuracy, a rating AUC) under its own name."""
    first = plan.names[0]
    if metric is None:
        headline = metric_spec(first).headline
        metric = MEAN if headline is None else headline.name
    return HeadlineMetric(scorer=f"{first}{suffix}", metric=metric)
