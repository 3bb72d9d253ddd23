"""Beyond Rating (arXiv 2604.19502): review-quality metrics read field by field against the
expert reviews of the same paper.

The paper's text as extracted from its PDF lost every formula and prints no prompt: each formula
here is reconstructed from the prose and checked against the paper's numbers, and each prompt in
``prompts/beyond/`` was written for this project and says so. Metrics:

- ``br_summary_coverage`` (§4.2): top-5 cosine sum between the summary and the paper's chunks;
- ``br_{strength,weakness}_{precision,recall,f1}`` (§4.3): point-level alignment with the
  experts, Max-Recall against the best single expert;
- ``br_{strength,weakness,question}_kl`` (§4.4): KL between the experts' and the model's
  category distributions, corpus-level (``corpus_kl``);
- ``br_question_score`` (§4.5): share of grounded Explain / valuable Supplement questions;
- ``br_rating_mae`` (§5): rating error against the mean expert rating.

(AI-likelihood, Binoculars §4.6, is its own family: ``scorers/metrics/binoculars``.)
"""

from __future__ import annotations

from typing import Any

from scorers.metrics.beyond.alignment import AlignmentMetric
from scorers.metrics.beyond.common import (
    BEYOND_VERSION,
    JUDGE_ROLE,
    PREPROCESSOR_ROLE,
    ChunkOptions,
)
from scorers.metrics.beyond.coverage import CoverageMetric
from scorers.metrics.beyond.focus import CORPUS_KL, FocusMetric, FocusOptions
from scorers.metrics.beyond.questions import QuestionMetric, QuestionOptions
from scorers.metrics.beyond.rating import RatingErrorMetric, RatingErrorOptions
from scorers.registry import register_metric_class

__all__ = ["BEYOND_VERSION"]

_SOURCE = "Beyond Rating (arXiv 2604.19502)"


def _register(metric_class: Any, name: str, display: str, **fields: Any) -> None:
    fields.setdefault("higher_is_better", True)
    register_metric_class(
        metric_class,
        name=name,
        display_name=display,
        family="beyond",
        version=BEYOND_VERSION,
        empty_candidate="unscored",
        **fields,
    )


_register(
    CoverageMetric,
    "br_summary_coverage",
    "Summary coverage",
    needs=frozenset({"embedder", "generator", "paper_content"}),
    options=ChunkOptions,
    roles=(PREPROCESSOR_ROLE,),
    description="sum of the top-5 cosines between the review's summary and the paper's chunks",
    source=f"{_SOURCE}, §4.2 (Eq. 1 reconstructed)",
)
_SINGULAR = {"strengths": "strength", "weaknesses": "weakness", "questions": "question"}
_QUANTITY = {"precision": "precision", "recall": "Max-Recall", "f1": "F1"}
for _field in ("strengths", "weaknesses"):
    for _quantity, _shown in _QUANTITY.items():
        _register(
            AlignmentMetric,
            f"br_{_SINGULAR[_field]}_{_quantity}",
            f"{_SINGULAR[_field].capitalize()} {_shown}",
            fixed={"field": _field, "quantity": _quantity},
            needs=frozenset({"generator", "references"}),
            roles=(PREPROCESSOR_ROLE, JUDGE_ROLE),
            description=f"{_shown} of the review's {_field} points against the experts' "
            "(binary LLM match judge)",
            source=f"{_SOURCE}, §4.3 (Eqs. 2-3 reconstructed)",
        )
for _field in ("strengths", "weaknesses", "questions"):
    _register(
        FocusMetric,
        f"br_{_SINGULAR[_field]}_kl",
        f"{_SINGULAR[_field].capitalize()} focus KL",
        fixed={"field": _field},
        higher_is_better=False,
        needs=frozenset({"generator", "references"}),
        options=FocusOptions,
        roles=(PREPROCESSOR_ROLE,),
        headline=CORPUS_KL,
        description=f"KL(human || model) over the 8 focus categories of the {_field} points "
        "(corpus statistic: corpus_kl)",
        source=f"{_SOURCE}, §4.4 (Eq. 4 reconstructed)",
    )
_register(
    QuestionMetric,
    "br_question_score",
    "Question score",
    needs=frozenset({"generator", "embedder", "paper_content"}),
    options=QuestionOptions,
    roles=(PREPROCESSOR_ROLE, JUDGE_ROLE),
    description="share of the review's questions that are grounded (Explain) or ask for what "
    "the paper lacks (Supplement)",
    source=f"{_SOURCE}, §4.5 (Eq. 5 reconstructed)",
)
_register(
    RatingErrorMetric,
    "br_rating_mae",
    "Rating MAE",
    higher_is_better=False,
    needs=frozenset({"references", "rating_scale"}),
    options=RatingErrorOptions,
    description="absolute error of the review's rating against the mean expert rating",
    source=f"{_SOURCE}, §5 (Table 3 baseline)",
)
