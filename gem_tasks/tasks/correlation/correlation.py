"""Correlation of a metric with human quality grades (GEM paper §4.1): every graded response is
scored leave-one-out, against the other responses to the same task, and Spearman's ρ between the
scores and the grades is reported."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset

from gem_tasks.scoring.adapter import item_mean_metric
from gem_tasks.scoring.headline import headline_of
from gem_tasks.scoring.metrics import spearman_p, spearman_rho
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import (
    DEMO_DATASET,
    document_sample,
    human_answer,
    stored_answer,
    task_dataset,
)
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings
from scorers.data.records import RecordError
from scorers.data.task_data import TaskData

__all__ = ["correlation", "leave_one_out_dataset"]

_CANONICAL_REVIEW_FIELDS = {
    "rating": "reviewer's rating of the paper",
    "confidence": "reviewer's confidence in their rating of the paper",
    "id": "id",
    "text": "text",
    "summary": "judgment summary",
}
"""Fields of the canonical review record, which are never a grade of the review."""


def check_grade_field(grade_field: str) -> None:
    """A ``ValueError`` when ``grade_field`` names a field of the canonical review: a reviewer's
    rating is their grade of the paper, not a grade of the review."""
    if grade_field in _CANONICAL_REVIEW_FIELDS:
        what = _CANONICAL_REVIEW_FIELDS[grade_field]
        raise ValueError(
            f"grade_field={grade_field!r} is the review's {what}, not a grade of the review: "
            "the correlation task correlates a metric with a person's grade of each review's "
            "quality (an instructor's or meta-reviewer's grade, stored as an extra field of the "
            "review, e.g. 'grade')"
        )


def leave_one_out_dataset(
    data: TaskData,
    *,
    grade_field: str = "grade",
    seed: int = 0,
    max_paper_tokens: int = 12000,
) -> MemoryDataset:
    """One sample per graded review, built as every task builds one
    (:func:`scorers.data.paper_docs.paper_document`): that review is held out as the candidate,
    every other review of the same paper a reference, and ``negatives`` reviews of other papers
    (drawn once per paper with ``seed``); the paper text beyond ``max_paper_tokens`` is cut, as
    every task cuts it. The grade is a person's grade *of the review* (an instructor's, a
    meta-reviewer's), read from the review's extra fields (the records of ``data``).

    Raises:
        ValueError: ``grade_field`` names a field of the canonical review (``rating``,
            ``confidence``, ...): a reviewer's rating is their grade of the paper, not a grade
            of the review, and correlating with it measures something else.
        RecordError: no review carries a numeric ``grade_field`` (the message lists the extra
            fields the reviews do carry).
    """
    check_grade_field(grade_field)
    path = data.source
    samples = []
    extra_fields: set[str] = set()
    for paper in data.records:
        for review in paper.reviews:
            extra_fields.update(review.extra)
            grade = review.extra.get(grade_field)
            if grade is None:
                continue
            if isinstance(grade, bool) or not isinstance(grade, int | float):
                raise RecordError(
                    f"{path}: paper {paper.id!r}, review {review.id!r}: {grade_field!r} must be a "
                    f"number, got {grade!r}"
                )
            if len(paper.reviews) < 2:
                continue
            text, document = data.document(
                paper,
                references=len(paper.reviews) - 1,
                seed=seed,
                max_paper_tokens=max_paper_tokens,
                held_out=review.id,
            )
            samples.append(
                document_sample(
                    paper,
                    text,
                    {**document, "grade": float(grade)},
                    sample_id=f"{paper.id}/{review.id}",
                    answer=human_answer(document),
                )
            )
    if not samples:
        carried = ", ".join(sorted(extra_fields)) or "none"
        raise RecordError(
            f"{path}: no review carries a numeric {grade_field!r} grade among its extra fields "
            f"(the reviews' extra fields: {carried})"
        )
    return task_dataset(data, samples)


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,gem_s")
def correlation(
    dataset: str | None = None,
    grade_field: str = "grade",
    seed: int = 0,
    max_paper_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """Spearman correlation between each scorer and human quality grades of the responses.

    Args:
        dataset: canonical records whose reviews carry a numeric ``grade_field``.
        grade_field: the review field holding the human quality grade.
        seed: seed of the negatives' draw.
        max_paper_tokens: the paper text beyond this (at 4 characters a token) is cut and the
            sample says so.
    """
    check_grade_field(grade_field)
    data, plan = scoring.prepare(
        DEMO_DATASET if dataset is None else dataset, domains=frozenset({"peer_review"})
    )
    samples = leave_one_out_dataset(
        data,
        grade_field=grade_field,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
    )
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=samples,
        solver=stored_answer(),
        scorer=scoring.inspect_scorers(plan),
        # the headline is the rank correlation with the grades (a corpus statistic); the mean
        # score is a diagnostic under its own name
        metrics=[spearman_rho(), spearman_p(), item_mean_metric("mean_score")],
        headline_metric=headline_of(plan, metric="spearman_rho"),
        metadata={"grade_field": grade_field},
    )
