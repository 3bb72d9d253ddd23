"""The LMExaminer judge's registration: the metrics of
:mod:`scorers.metrics.judge.family` (what each computes), registered by name."""

from __future__ import annotations

from scorers.metrics.judge.family import (
    JUDGE_ROLE,
    JUDGE_VERSION,
    LMExaminer,
    LMExaminerOptions,
    examiner_messages,
    parse_overall_score,
)
from scorers.registry import register_metric_class

__all__ = [
    "JUDGE_ROLE",
    "JUDGE_VERSION",
    "LMExaminer",
    "LMExaminerOptions",
    "examiner_messages",
    "parse_overall_score",
]


register_metric_class(
    LMExaminer,
    name="lm_examiner",
    display_name="LMExaminer",
    family="judge",
    higher_is_better=True,
    needs=frozenset({"generator", "paper_content"}),
    version=JUDGE_VERSION,
    empty_candidate="unscored",
    options=LMExaminerOptions,
    roles=(JUDGE_ROLE,),
    description="an LLM judge's 0-10 score of the review given the paper (no reference)",
    source="GEM paper, §4 Baselines and App. D.3 (prompts verbatim)",
)
