"""SPACE as a judgment task (Scoring Rules paper §5): opinion summaries of hotels, one human
summary held out and scored against the others. The hotels' input reviews are not in the data, so
there is no synopsis (the "-S" metrics are refused) and no model can write a summary of them.
Data: SPACE (Angelidis et al., TACL 2021; MIT)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

from gem_tasks.tasks.judgments.judgments import judgment_task
from gem_tasks.tasks.samples import SPACE_DEMO
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings

__all__ = ["space"]


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,bleu,rouge_l")
def space(
    dataset: str | None = None,
    candidate: str = "human",
    references: int = 1,
    seed: int = 0,
    max_input_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """Opinion summaries of hotels, one record per hotel and aspect.

    Args:
        dataset: the SPACE file as it is (``entity_id, summaries: {aspect: [3 summaries]}``) or
            canonical opinion-summarisation records; default: two hotels of SPACE's development
            set bundled with the package.
        candidate: ``human`` (one of the three human summaries held out); ``model`` is refused
            (the input reviews are not available to summarise).
        references: human summaries used as references (one; one more is held out).
        seed: seed of the held-out/reference split and of the negatives.
        max_input_tokens: the input text budget (there is none in SPACE's shared file).
    """
    return judgment_task(
        dataset=dataset or SPACE_DEMO,
        candidate=candidate,
        references=references,
        seed=seed,
        max_input_tokens=max_input_tokens,
        scoring=scoring,
        card_folder=Path(__file__).parent,
        expected_domain="opinion_summarization",
    )
