"""SPACE as a judgment task (Scoring Rules paper §5): opinion summaries of hotels, one human
summary held out and scored against the others. The hotels' input reviews are not in the data, so
there is no synopsis (the "-S" metrics are refused) and no model can write a summary of them.
Data: SPACE (Angelidis et al., TACL 2021; MIT)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task

from gem_tasks.tasks.judgments.judgments import judgment_task
from gem_tasks.tasks.samples import SPACE_DEMO
from gem_tasks.tasks.settings import checked_settings

__all__ = ["space"]


@task
@checked_settings
def space(
    dataset: str | None = None,
    candidate: str = "human",
    references: int = 1,
    seed: int = 0,
    scorers: str | list[str] = "gem,gem_raw,bleu,rouge_l",
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    scorer_options: dict[str, dict[str, Any]] | None = None,
    dataset_summaries: bool = False,
    cache_dir: str | None = None,
    negatives: int | None = None,
    max_input_tokens: int = 12000,
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
        scorers: registered metrics that apply to opinion summaries (no "-S" metric: there is
            no synopsis).
        scorer_lm, scorer_lm_args: the evaluation LM and its backend options.
        scorer_options: per-metric options.
        dataset_summaries: use statement rewrites stored with the references.
        cache_dir: folder of the on-disk score cache.
        negatives: negative references per record (other hotels' and aspects' summaries).
        max_input_tokens: the input text budget (there is none in SPACE's shared file).
    """
    return judgment_task(
        dataset=dataset or SPACE_DEMO,
        candidate=candidate,
        references=references,
        seed=seed,
        scorers=scorers,
        scorer_lm=scorer_lm,
        scorer_lm_args=scorer_lm_args,
        scorer_options=scorer_options,
        dataset_summaries=dataset_summaries,
        cache_dir=cache_dir,
        negatives=negatives,
        max_input_tokens=max_input_tokens,
        card_folder=Path(__file__).parent,
        expected_domain="opinion_summarization",
    )
