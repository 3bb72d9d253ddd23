"""Typed sample metadata -> the core's :class:`~scorers.types.Item`.

The tasks put a paper's document (:func:`scorers.data.paper_docs.paper_document`: its facts, its
reference reviews, the held-out review and, for the robustness task, how the candidate is to be
read) into each sample's metadata; this module reads it back through the same core function the
lm-evaluation-harness tasks use.
"""

from __future__ import annotations

from inspect_ai.solver import TaskState

from scorers.data.paper_docs import CANDIDATE_MODE, item_from_document, reviews_from_metadata
from scorers.types import Item

__all__ = ["CANDIDATE_MODE", "PERTURBATION_FAILED", "item_from_state", "reviews_from_metadata"]

PERTURBATION_FAILED = "perturbation_failed"
"""Sample-metadata key holding why a sample's text could not be perturbed (its pair is then
unscored with that reason, never scored unchanged)."""


def item_from_state(state: TaskState, *, candidate: str | None = None) -> Item:
    """The item a scorer scores: the sample's output (or ``candidate``) as the candidate, with
    its paper and reviews."""
    if candidate is None:
        candidate = state.output.completion if state.output else ""
    return item_from_document(
        state.metadata or {}, candidate=candidate, sample_id=str(state.sample_id)
    )
