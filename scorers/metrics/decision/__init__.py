"""Decision and rating accuracy against the venue's real outcomes: the verdict each
review leads to, stated in a follow-up turn (or by the held-out reviewer's rating, or by a
baseline rule), scored against the accept/reject decision the data holds. See
:mod:`.verdicts` (where a verdict comes from, how a reply is read) and :mod:`.outcomes` (the
numbers and their intervals)."""

from __future__ import annotations

from scorers.metrics.decision.outcomes import (
    BALANCED_ACCURACY,
    DECISION_VERSION,
    RATING_AUC,
    DecisionMetric,
)
from scorers.metrics.decision.verdicts import (
    ACCEPT_THRESHOLD,
    RULES,
    Verdict,
    parse_verdict,
    verdict_of,
    verdict_question,
)
from scorers.registry import register_metric_class

__all__ = [
    "ACCEPT_THRESHOLD",
    "RULES",
    "Verdict",
    "parse_verdict",
    "verdict_of",
    "verdict_question",
]

_SOURCE = (
    "the outcome measures of AI Scientist's review bench (accuracy, balanced accuracy, AUC, "
    "FPR/FNR), DeepReviewer and ReviewerToo (rating error, decision accuracy)"
)
_RATES = frozenset({"accuracy", "fpr", "fnr"})
"""The kinds whose per-paper values are 0/1 indicators: their means are proportions, with the
Wilson interval."""

for _name, _kind, _display, _up, _headline, _description in (
    ("decision_accuracy", "accuracy", "Decision accuracy", True, None,
     "1 when the stated accept/reject is the venue's decision (a proportion: Wilson interval)"),
    ("decision_balanced_accuracy", "balanced_accuracy", "Decision balanced accuracy", True,
     BALANCED_ACCURACY,
     "mean of the true positive and true negative rates (corpus statistic); per paper 1/0 "
     "correct"),
    ("decision_fpr", "fpr", "Decision FPR", False, None,
     "share of rejected papers the verdict accepts (a proportion: Wilson interval)"),
    ("decision_fnr", "fnr", "Decision FNR", False, None,
     "share of accepted papers the verdict rejects (a proportion: Wilson interval)"),
    ("decision_auc", "auc", "Rating AUC", True, RATING_AUC,
     "AUC of the stated rating as a score for acceptance (corpus statistic; bootstrap 95% CI); "
     "per paper the rating"),
    ("rating_error", "rating_error", "Rating error", False, None,
     "|stated rating − the mean rating of the other reviewers (every review but the held-out "
     "one)| (mean: the MAE)"),
):  # fmt: skip
    register_metric_class(
        DecisionMetric,
        fixed={"kind": _kind},
        name=_name,
        display_name=_display,
        family="decision",
        higher_is_better=_up,
        # the rating error reads the other reviewers' ratings, the rest the venue's decision
        needs=frozenset(
            {"references", "rating_scale"}
            if _kind == "rating_error"
            else {"references", "decision", "rating_scale"}
        ),
        version=DECISION_VERSION,
        empty_candidate="unscored",
        description=_description,
        source=_SOURCE,
        headline=_headline,
        proportion=_kind in _RATES,
    )
