"""Does the review get the verdict right? Decision accuracy, balanced accuracy, false positive
and false negative rates, the AUC of the stated rating as a score for acceptance, and the rating
error against the other reviewers (the measurements of AI Scientist's review bench, DeepReviewer
and ReviewerToo).

Per paper: ``decision_accuracy`` 1 when the stated decision is the venue's, else 0;
``decision_fpr`` 1 when a rejected paper is accepted (accepted papers unscored: the rate counts
rejected ones); ``decision_fnr`` 1 when an accepted paper is rejected; ``rating_error`` |stated
rating − the other reviewers' mean rating| (the other reviewers: every review but the held-out
one). Their headline is the mean over papers (the rate or the MAE); a rate's interval is the
Wilson interval (:func:`scorers.validation.statistics.proportion_interval`).

Two headlines are corpus statistics (:class:`scorers.corpus.CorpusStatistic`), not means:
``decision_balanced_accuracy`` (per paper the same 1/0 as accuracy; its number the mean of the
true positive and true negative rates over the papers) and ``decision_auc`` (per paper the stated
rating; its number the AUC of the ratings against acceptance), each with a bootstrap interval
stratified by outcome. A paper without a decision in the data, or a verdict without the part a
metric needs, is unscored with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import stats

from scorers.corpus import CorpusStatistic
from scorers.errors import Unscored
from scorers.metrics.decision.verdicts import (
    ACCEPT_THRESHOLD,
    COMMITTEE_RULES,
    VERDICT_PROMPT,
    committee_ratings,
    other_reviewers_rating,
    scale_of,
    verdict_of,
)
from scorers.registry import Metric, MetricSpec
from scorers.resources import Resources
from scorers.signature import OMIT_WHEN_EMPTY, Signature, prompt_hashes
from scorers.types import Item, Result

__all__ = [
    "DECISION_VERSION",
    "KINDS",
    "DecisionMetric",
    "BALANCED_ACCURACY",
    "RATING_AUC",
    "DecisionSignature",
    "auc",
    "balanced_accuracy",
]

DECISION_VERSION = 3
"""2: ratings, thresholds and the verdict question on the data's rating scale (the question's
wording on ICLR's scale unchanged; ICLR 2020's asks for 1-8, ICLR 2026's for 0-10)."""

KINDS = ("accuracy", "balanced_accuracy", "fpr", "fnr", "auc", "rating_error")


@dataclass(frozen=True)
class DecisionSignature(Signature):
    """What a decision number depends on: the rating scale (the data's, :mod:`scorers.scales`)
    and its accept threshold, and the verdict question's wording."""

    scale: str = "iclr"
    threshold: float = ACCEPT_THRESHOLD
    prompts: dict[str, str] | None = None
    committee: str = field(default="", metadata={OMIT_WHEN_EMPTY: True})
    """Whom "the other reviewers" are (:data:`COMMITTEE`): the committee rule's verdicts and
    every rating error rest on them, and every other row of a decision board is compared with
    the committee's, so that every decision score carries it (a board whose committee is
    another one is another benchmark, not the committee row alone in a group of its own)."""


COMMITTEE = "every review but the held-out one"
"""The committee of the other reviewers: every review of the paper but the held-out one,
whatever the number of references (a paper with five reviews: the mean of four)."""


def auc(scores: Sequence[float], positives: Sequence[bool]) -> float:
    """The area under the ROC curve of ``scores`` for ``positives``: the Mann-Whitney U over
    n₁n₀ (ties count one half); NaN without both classes."""
    x = np.asarray(scores, dtype=float)
    y = np.asarray(positives, dtype=bool)
    if y.all() or not y.any():
        return math.nan
    positive, negative = int(y.sum()), int((~y).sum())
    # U of the positives from their mid-ranks (ties get the average rank: count one half)
    u = stats.rankdata(x)[y].sum() - positive * (positive + 1) / 2
    return float(u / (positive * negative))


def balanced_accuracy(predicted: Sequence[bool], truth: Sequence[bool]) -> float:
    """The mean of the true positive and true negative rates; NaN without both classes."""
    p = np.asarray(predicted, dtype=bool)
    t = np.asarray(truth, dtype=bool)
    if t.all() or not t.any():
        return math.nan
    return float(((p & t).sum() / t.sum() + (~p & ~t).sum() / (~t).sum()) / 2)


# -- corpus numbers (functions of the scored samples' result metadata) -----------------------


def _pair(first: str, second: str) -> Any:
    """A reader of two metadata fields as a row (None when either is missing)."""

    def read(metadata: Mapping[str, Any]) -> tuple[float, float] | None:
        a, b = metadata.get(first), metadata.get(second)
        if a is None or b is None:
            return None
        return float(a), float(bool(b))

    return read


BALANCED_ACCURACY = CorpusStatistic(
    name="balanced_accuracy",
    display="balanced accuracy",
    read=_pair("predicted_accept", "accept"),
    compute=lambda rows: balanced_accuracy(rows[:, 0] > 0.5, rows[:, 1] > 0.5),
    fields=("predicted_accept", "accept"),
    strata=1,
    description="the mean of the true positive and true negative rates over the papers scored",
)
"""Balanced accuracy of the stated decisions (the decision's per-paper 1/0 are accuracy's:
its per-item mean is ``decision_accuracy``, so it is not reported again)."""

RATING_AUC = CorpusStatistic(
    name="auc",
    display="rating AUC",
    read=_pair("rating", "accept"),
    compute=lambda rows: auc(rows[:, 0], rows[:, 1] > 0.5),
    fields=("rating", "accept"),
    strata=1,
    item_mean="mean_stated_rating",
    description="ROC AUC of the stated rating as a score for acceptance over the papers scored",
)
"""The AUC of the stated rating for acceptance (its per-item values are the ratings: their mean
is reported as ``mean_stated_rating``, a diagnostic)."""


def _scored(samples: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    return [s for s in samples if all(s.get(k) is not None for k in keys)]


# -- the metric --------------------------------------------------------------------------------


class DecisionMetric(Metric):
    """One of :data:`KINDS`, per paper (see the module docstring)."""

    def __init__(self, spec: MetricSpec, *, kind: str, **options: Any) -> None:
        super().__init__(spec, **options)
        if kind not in KINDS:
            raise ValueError(f"unknown decision metric kind {kind!r}")
        self.kind = kind

    def _unscored(self, reason: str, signature: Signature, **details: Any) -> Unscored:
        """The error that leaves this item unscored, for ``reason``."""
        return Unscored(
            reason,
            explanation=f"{self.spec.display_name}: unscored: {reason}",
            details=details,
            signature=signature,
        )

    async def compute(self, item: Item, resources: Resources) -> Result:
        scale = scale_of(item)
        rule = item.baseline.get("rule") if item.baseline is not None else None
        on_committee = self.kind == "rating_error" or rule == "committee"
        signature = DecisionSignature(
            metric=self.name,
            family="decision",
            version=self.spec.version,
            scale=scale.name,
            threshold=scale.accept_threshold,
            prompts=prompt_hashes([VERDICT_PROMPT]),
            committee=COMMITTEE,
        )
        if not item.candidate.strip() and item.baseline is None:
            reason = "empty review: a verdict is read after a review, and there is none"
            raise self._unscored(reason, signature, flags=["empty_candidate"])
        verdict = verdict_of(item)
        truth = item.paper.accept
        details: dict[str, Any] = {
            "verdict_source": verdict.source,
            "rating": verdict.rating,
            "predicted_accept": verdict.accept,
            "accept": truth,
            "rating_scale": scale.name,
            "accept_threshold": scale.accept_threshold,
        }
        if verdict.missing:
            details["verdict_missing"] = verdict.missing
        if on_committee:
            details["committee_reviewers"] = len(committee_ratings(item))
        if self.kind == "rating_error":
            target = other_reviewers_rating(item)
            if item.baseline is not None and item.baseline.get("rule") in COMMITTEE_RULES:
                reason = (
                    "the committee's rating is a mean of the reviewers' ratings it would be "
                    "compared with"
                )
                raise self._unscored(reason, signature, **details)
            if verdict.rating is None:
                raise self._unscored(verdict.missing or "no rating", signature, **details)
            if target is None:
                reason = "the other reviewers' reviews carry no rating (the data stores none)"
                raise self._unscored(reason, signature, **details)
            value = abs(verdict.rating - target)
            n = details["committee_reviewers"]
            explanation = (
                f"|{verdict.rating:g} − {target:.3g} (the mean of the other {n} reviewers)|"
            )
            return Result(value, explanation, details=details, signature=signature)
        if truth is None:
            reason = (
                "the paper has no accept/reject decision in the data (join one: gem-tasks data "
                "convert --decisions)"
            )
            raise self._unscored(reason, signature, **details)
        if self.kind == "auc":
            if verdict.rating is None:
                raise self._unscored(verdict.missing or "no rating", signature, **details)
            explanation = f"stated rating {verdict.rating:g}; the paper was " + (
                "accepted" if truth else "rejected"
            )
            return Result(verdict.rating, explanation, details=details, signature=signature)
        if verdict.accept is None:
            raise self._unscored(verdict.missing or "no decision", signature, **details)
        if self.kind == "fpr" and truth:
            raise self._unscored("an accepted paper: the FPR counts rejected papers", signature)
        if self.kind == "fnr" and not truth:
            raise self._unscored("a rejected paper: the FNR counts accepted papers", signature)
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
