"""Does the review get the verdict right? Decision accuracy, balanced accuracy, false positive
and false negative rates, the AUC of the stated rating as a score for acceptance, and the rating
error against the other reviewers (issue #37; the measurements of AI Scientist's review bench,
DeepReviewer and ReviewerToo), each per paper so that the leaderboard's means are the rates,
with their corpus-level numbers and confidence intervals (Wilson for proportions, a stratified
bootstrap over papers for the AUC and the balanced accuracy).

Per paper: ``decision_accuracy`` 1 when the stated decision is the venue's, else 0;
``decision_fpr`` 1 when a rejected paper is accepted (accepted papers unscored: the rate counts
rejected ones); ``decision_fnr`` 1 when an accepted paper is rejected;
``decision_balanced_accuracy`` the same 1/0 as accuracy, its number the corpus mean of the true
positive and true negative rates;
``decision_auc`` the stated rating, its number the corpus AUC against acceptance;
``rating_error`` |stated rating − the other reviewers' mean rating|. A paper without a decision in
the data, or a verdict without the part a metric needs, is unscored with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
from scipy import stats

from scorers.metrics.decision.verdicts import (
    ACCEPT_THRESHOLD,
    VERDICT_PROMPT,
    other_reviewers_rating,
    verdict_of,
)
from scorers.registry import Metric, MetricSpec
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Result

__all__ = [
    "DECISION_VERSION",
    "KINDS",
    "DecisionMetric",
    "DecisionSignature",
    "auc",
    "auc_interval",
    "balanced_accuracy",
    "balanced_accuracy_interval",
    "wilson_interval",
]

DECISION_VERSION = 1
BOOTSTRAP_RESAMPLES = 2000
"""Resamples of the stratified bootstrap (seed 0): papers drawn with replacement within the
accepted and within the rejected ones, so every resample has both classes."""

KINDS = ("accuracy", "balanced_accuracy", "fpr", "fnr", "auc", "rating_error")


@dataclass(frozen=True)
class DecisionSignature(Signature):
    """What a decision number depends on: the accept threshold of the scale and the verdict
    question's wording."""

    threshold: float = ACCEPT_THRESHOLD
    prompts: dict[str, str] | None = None


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``scipy.stats.binomtest``); NaNs for n = 0."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(successes, n).proportion_ci(confidence_level=level, method="wilson")
    return float(ci.low), float(ci.high)


def auc(scores: Sequence[float], positives: Sequence[bool]) -> float:
    """The area under the ROC curve of ``scores`` for ``positives``: the Mann-Whitney U over
    n₁n₀ (ties count one half); NaN without both classes."""
    x = np.asarray(scores, dtype=float)
    y = np.asarray(positives, dtype=bool)
    if y.all() or not y.any():
        return math.nan
    u = stats.mannwhitneyu(x[y], x[~y], alternative="two-sided").statistic
    return float(u / (y.sum() * (~y).sum()))


def balanced_accuracy(predicted: Sequence[bool], truth: Sequence[bool]) -> float:
    """The mean of the true positive and true negative rates; NaN without both classes."""
    p = np.asarray(predicted, dtype=bool)
    t = np.asarray(truth, dtype=bool)
    if t.all() or not t.any():
        return math.nan
    return float(((p & t).sum() / t.sum() + (~p & ~t).sum() / (~t).sum()) / 2)


def _stratified_bootstrap(
    statistic: Any, a: np.ndarray, truth: np.ndarray, level: float
) -> tuple[float, float]:
    if truth.all() or not truth.any():
        return math.nan, math.nan
    rng = np.random.default_rng(0)
    pos, neg = np.flatnonzero(truth), np.flatnonzero(~truth)
    values = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        take = np.concatenate(
            [rng.choice(pos, size=pos.size, replace=True), rng.choice(neg, size=neg.size)]
        )
        values.append(statistic(a[take], truth[take]))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def auc_interval(
    scores: Sequence[float], positives: Sequence[bool], level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the AUC over a stratified bootstrap of the papers."""
    return _interval("auc", tuple(map(float, scores)), tuple(map(bool, positives)), level)


def balanced_accuracy_interval(
    predicted: Sequence[bool], truth: Sequence[bool], level: float = 0.95
) -> tuple[float, float]:
    """Percentile interval of the balanced accuracy over a stratified bootstrap of the papers."""
    return _interval(
        "balanced_accuracy", tuple(map(bool, predicted)), tuple(map(bool, truth)), level
    )


@cache  # a run's lower and upper bound are two corpus numbers: one bootstrap serves both
def _interval(
    statistic: str, a: tuple[Any, ...], truth: tuple[bool, ...], level: float
) -> tuple[float, float]:
    function = {"auc": auc, "balanced_accuracy": balanced_accuracy}[statistic]
    return _stratified_bootstrap(function, np.asarray(a), np.asarray(truth, dtype=bool), level)


# -- corpus numbers (functions of the scored samples' result metadata) -----------------------


def _scored(samples: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    return [s for s in samples if all(s.get(k) is not None for k in keys)]


def corpus_wilson(samples: list[dict[str, Any]], bound: int) -> float:
    rows = _scored(samples, "indicator")
    return wilson_interval(sum(int(s["indicator"]) for s in rows), len(rows))[bound]


def corpus_balanced(samples: list[dict[str, Any]], bound: int | None) -> float:
    rows = _scored(samples, "predicted_accept", "accept")
    predicted = [bool(s["predicted_accept"]) for s in rows]
    truth = [bool(s["accept"]) for s in rows]
    if bound is None:
        return balanced_accuracy(predicted, truth)
    return balanced_accuracy_interval(predicted, truth)[bound]


def corpus_auc(samples: list[dict[str, Any]], bound: int | None) -> float:
    rows = _scored(samples, "rating", "accept")
    scores = [float(s["rating"]) for s in rows]
    truth = [bool(s["accept"]) for s in rows]
    if bound is None:
        return auc(scores, truth)
    return auc_interval(scores, truth)[bound]


# -- the metric --------------------------------------------------------------------------------


class DecisionMetric(Metric):
    """One of :data:`KINDS`, per paper (see the module docstring)."""

    def __init__(self, spec: MetricSpec, *, kind: str, **options: Any) -> None:
        super().__init__(spec, **options)
        if kind not in KINDS:
            raise ValueError(f"unknown decision metric kind {kind!r}")
        self.kind = kind

    def _unscored(self, reason: str, signature: Signature, **details: Any) -> Result:
        return Result(
            value=None,
            reason=reason,
            explanation=f"{self.spec.display_name}: unscored: {reason}",
            details=details,
            signature=signature,
        )

    async def ascore(self, item: Item, resources: Resources) -> Result:
        signature = DecisionSignature(
            metric=self.name,
            family="decision",
            version=self.spec.version,
            prompts=prompt_hashes([VERDICT_PROMPT]),
        )
        if not item.candidate.strip() and item.baseline is None:
            reason = "empty review: a verdict is read after a review, and there is none"
            return self._unscored(reason, signature, flags=["empty_candidate"])
        verdict = verdict_of(item)
        truth = item.paper.accept
        details: dict[str, Any] = {
            "verdict_source": verdict.source,
            "rating": verdict.rating,
            "predicted_accept": verdict.accept,
            "accept": truth,
        }
        if verdict.missing:
            details["verdict_missing"] = verdict.missing
        if self.kind == "rating_error":
            target = other_reviewers_rating(item)
            if verdict.rating is None:
                return self._unscored(verdict.missing or "no rating", signature, **details)
            if target is None:
                reason = "the other reviewers' reviews carry no rating (the data stores none)"
                return self._unscored(reason, signature, **details)
            if item.baseline is not None and item.baseline.get("rule") == "committee":
                reason = (
                    "the committee's rating is the other reviewers' mean it would be compared with"
                )
                return self._unscored(reason, signature, **details)
            value = abs(verdict.rating - target)
            explanation = f"|{verdict.rating:g} − {target:.3g} (the other reviewers' mean)|"
            return Result(value, explanation, details=details, signature=signature)
        if truth is None:
            reason = (
                "the paper has no accept/reject decision in the data (join one: gem-tasks data "
                "convert --decisions)"
            )
            return self._unscored(reason, signature, **details)
        if self.kind == "auc":
            if verdict.rating is None:
                return self._unscored(verdict.missing or "no rating", signature, **details)
            explanation = f"stated rating {verdict.rating:g}; the paper was " + (
                "accepted" if truth else "rejected"
            )
            return Result(verdict.rating, explanation, details=details, signature=signature)
        if verdict.accept is None:
            return self._unscored(verdict.missing or "no decision", signature, **details)
        if self.kind == "fpr" and truth:
            return self._unscored("an accepted paper: the FPR counts rejected papers", signature)
        if self.kind == "fnr" and not truth:
            return self._unscored("a rejected paper: the FNR counts accepted papers", signature)
        if self.kind in ("accuracy", "balanced_accuracy"):
            indicator = verdict.accept == truth
        else:  # fpr: accepted a rejected paper; fnr: rejected an accepted one
            indicator = verdict.accept != truth
        details["indicator"] = int(indicator)
        said = "accept" if verdict.accept else "reject"
        explanation = f"{verdict.source} says {said}; the venue " + (
            "accepted" if truth else "rejected"
        )
        return Result(float(indicator), explanation, details=details, signature=signature)
