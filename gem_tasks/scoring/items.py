"""Typed sample metadata -> the core's :class:`~scorers.types.Item`.

The tasks put a paper's facts, its reference reviews, the held-out review and (for the robustness
task) how the candidate is to be read into each sample's metadata; this module is the one place
that reads them back.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.solver import TaskState

from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Paper, Review

__all__ = ["CANDIDATE_MODE", "PERTURBATION_FAILED", "item_from_state", "reviews_from_metadata"]

CANDIDATE_MODE = "candidate_mode"
"""Sample-metadata key: ``judgments`` (the candidate already is judgment lines), ``preprocess``
(always rewrite it: the held-out review's stored summary must not stand in), or absent (a
candidate equal to the held-out review may use its stored summary)."""

PERTURBATION_FAILED = "perturbation_failed"
"""Sample-metadata key holding why a sample's text could not be perturbed (its pair is then
unscored with that reason, never scored unchanged)."""


def reviews_from_metadata(rows: Any) -> tuple[Review, ...]:
    return tuple(
        Review(id=str(r["id"]), text=r["text"], summary=r.get("summary"), rating=r.get("rating"))
        for r in rows or []
    )


def item_from_state(state: TaskState, *, candidate: str | None = None) -> Item:
    """The item a scorer scores: the sample's output (or ``candidate``) as the candidate, with
    its paper and reviews."""
    metadata = state.metadata or {}
    if candidate is None:
        candidate = state.output.completion if state.output else ""
    mode = metadata.get(CANDIDATE_MODE)
    held_out = metadata.get("held_out") or {}
    same_as_held_out = (
        bool(candidate.strip()) and candidate.strip() == (held_out.get("text") or "").strip()
    )
    return Item(
        paper=Paper(
            id=str(metadata.get("paper_id") or state.sample_id),
            title=metadata.get("title") or "",
            abstract=metadata.get("abstract") or "",
            paper_text=metadata.get("paper_text"),
            assw=metadata.get("assw"),
        ),
        candidate=candidate,
        references=reviews_from_metadata(metadata.get("references")),
        negatives=reviews_from_metadata(metadata.get("negatives")),
        candidate_summary=held_out.get("summary")
        if same_as_held_out and mode != "preprocess"
        else None,
        flags=frozenset({CANDIDATE_IS_JUDGMENTS} if mode == "judgments" else ()),
        held_out=reviews_from_metadata([held_out])[0] if held_out.get("text") else None,
    )
