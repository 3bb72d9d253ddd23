"""The Beyond Rating paper's quality filters (its D5), as builder options, with what each removed.

Applied to every paper's non-empty official reviews, in this order, each on what the step before
left:

1. ``min_confidence``: keep reviews whose confidence is at least the threshold. A review without
   a confidence is removed (its expertise cannot be shown). Papers are not removed here.
2. ``min_reviews``: keep papers with at least this many surviving reviews.
3. ``max_rating_variance``: drop papers whose surviving reviews' mapped ratings (the ICLR 2024/25
   scale, :data:`~gem_data.openreview.forms.TARGET_SCALE`) have a population
   variance (ddof=0) above the maximum; a paper exactly at it is kept. Reviews without a rating
   are left out of the variance; a paper with no rated review is kept and counted.

The order matters: counting before the confidence filter would keep a paper whose confident
reviews are too few, and a variance over all reviews differs from one over the confident ones.
The paper's choices are :data:`BEYOND_RATING_FILTERS` (confidence >= 4, >= 3 reviews,
variance <= 1.5); every step is off unless asked for, except ``min_reviews`` (the builder's
default 3, the GEM setup).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "BEYOND_RATING_FILTERS",
    "ORDER",
    "apply_quality_filters",
    "population_variance",
]

R = TypeVar("R")

BEYOND_RATING_FILTERS: dict[str, float | int] = {
    "min_confidence": 4,
    "min_reviews": 3,
    "max_rating_variance": 1.5,
}
"""The Beyond Rating choices (documented where the paper is silent): c* = 4 on the 1-5 scale,
n* = 3, variance 1.5."""

ORDER = ("min_confidence", "min_reviews", "max_rating_variance")
_ROUNDING = 1e-9  # a variance equal to the maximum up to float rounding is kept


def population_variance(values: Sequence[float]) -> float:
    """The population variance (ddof=0) of ``values``; 0.0 for a single value."""
    if not values:
        raise ValueError("variance of no values")
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


def _totals(papers: Mapping[str, Sequence[Any]]) -> tuple[int, int]:
    return len(papers), sum(len(reviews) for reviews in papers.values())


def _by_confidence(
    current: dict[str, list[R]],
    confidence: Callable[[R], float | None],
    min_confidence: float | None,
) -> tuple[dict[str, list[R]], dict[str, Any]]:
    """The reviews whose confidence is at least ``min_confidence`` (a review without one is
    removed and counted), and the step's report; off (``None``) removes nothing."""
    papers_in, reviews_in = _totals(current)
    step: dict[str, Any] = {"threshold": min_confidence}
    if min_confidence is None:
        return current, step
    without = 0
    for pid, reviews in current.items():
        kept = []
        for review in reviews:
            value = confidence(review)
            if value is None:
                without += 1
            elif value >= min_confidence:
                kept.append(review)
        current[pid] = kept
    step.update(
        papers_in=papers_in,
        reviews_in=reviews_in,
        reviews_removed=reviews_in - _totals(current)[1],
        reviews_without_confidence=without,
        papers_removed=0,
    )
    return current, step


def _by_rating_variance(
    current: dict[str, list[R]],
    rating: Callable[[R], float | None],
    max_rating_variance: float | None,
) -> tuple[dict[str, list[R]], dict[str, Any]]:
    """The papers whose reviews' ratings vary by at most ``max_rating_variance`` (population
    variance; a paper with no rating is kept and counted), and the step's report; off
    (``None``) removes nothing."""
    papers_in, reviews_in = _totals(current)
    step: dict[str, Any] = {"threshold": max_rating_variance}
    if max_rating_variance is None:
        return current, step
    unrated = 0
    kept_papers: dict[str, list[R]] = {}
    for pid, reviews in current.items():
        ratings = [r for r in (rating(review) for review in reviews) if r is not None]
        if not ratings:
            unrated += 1
            kept_papers[pid] = reviews
        elif population_variance(ratings) <= max_rating_variance + _ROUNDING:
            kept_papers[pid] = reviews
    papers_out, reviews_out = _totals(kept_papers)
    step.update(
        papers_in=papers_in,
        reviews_in=reviews_in,
        papers_removed=papers_in - papers_out,
        reviews_removed=reviews_in - reviews_out,
        papers_without_rating=unrated,
    )
    return kept_papers, step


def apply_quality_filters(
    papers: Mapping[str, Sequence[R]],
    *,
    confidence: Callable[[R], float | None],
    rating: Callable[[R], float | None],
    min_confidence: float | None = None,
    min_reviews: int = 1,
    max_rating_variance: float | None = None,
) -> tuple[dict[str, list[R]], dict[str, Any]]:
    """The papers (id -> reviews) that pass the filters, each with its surviving reviews in their
    original order, and a report of what each step removed::

        {"order": [...], "min_confidence": {"threshold", "papers_in", "reviews_in",
         "reviews_removed", "reviews_without_confidence", "papers_removed"}, "min_reviews":
         {...}, "max_rating_variance": {..., "papers_without_rating"}, "papers_out",
         "reviews_out"}

    A step that is off reports ``{"threshold": None}`` and removes nothing.
    """
    if min_reviews < 1:
        raise ValueError(f"min_reviews must be at least 1, got {min_reviews}")
    if max_rating_variance is not None and max_rating_variance < 0:
        raise ValueError(f"max_rating_variance must be >= 0, got {max_rating_variance}")
    current: dict[str, list[R]] = {pid: list(reviews) for pid, reviews in papers.items()}
    report: dict[str, Any] = {"order": list(ORDER)}

    current, report["min_confidence"] = _by_confidence(current, confidence, min_confidence)
    papers_in, reviews_in = _totals(current)
    current = {pid: reviews for pid, reviews in current.items() if len(reviews) >= min_reviews}
    papers_out, reviews_out = _totals(current)
    report["min_reviews"] = {
        "threshold": min_reviews,
        "papers_in": papers_in,
        "reviews_in": reviews_in,
        "papers_removed": papers_in - papers_out,
        "reviews_removed": reviews_in - reviews_out,
    }
    current, step = _by_rating_variance(current, rating, max_rating_variance)
    report["max_rating_variance"] = step
    report["papers_out"], report["reviews_out"] = _totals(current)
    return current, report
