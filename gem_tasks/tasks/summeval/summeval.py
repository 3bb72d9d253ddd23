"""SummEval as a judgment task (Scoring Rules paper §5, Table 3's SummEval column): summaries of
CNN/DailyMail articles scored against independent human reference summaries, with the article as
θ of the "-S" metrics. Data: SummEval (Fabbri et al., TACL 2021; MIT)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task

from gem_tasks.tasks.judgments.judgments import judgment_task
from gem_tasks.tasks.samples import SUMMEVAL_DEMO
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings

__all__ = ["summeval"]


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,gem_s,bleu,rouge_l")
def summeval(
    dataset: str | None = None,
    candidate: str = "model",
    references: int = 1,
    seed: int = 0,
    max_input_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """Summaries of news articles, scored against the human reference summaries.

    Args:
        dataset: the SummEval file as it is (the shared one-article-per-line file, or the
            original release's ``model_annotations.aligned.paired.jsonl``), or canonical
            summarisation records; default: three articles of SummEval bundled with the package.
        candidate: ``model`` (the model under test summarises the article), ``human`` (one
            human reference summary held out), ``system:<id>`` (that SummEval system's summary,
            e.g. ``system:M11``) or ``candidates`` (all 16 systems, with Spearman's ρ against the
            experts' coherence, consistency, fluency, relevance and their mean).
        references: human summaries per article used as references (the Scoring Rules paper:
            one); one more is held out.
        seed: seed of the held-out/reference split and of the negatives.
        max_input_tokens: the article beyond this (4 characters a token) is cut.
    """
    return judgment_task(
        dataset=dataset or SUMMEVAL_DEMO,
        candidate=candidate,
        references=references,
        seed=seed,
        max_input_tokens=max_input_tokens,
        scoring=scoring,
        card_folder=Path(__file__).parent,
        expected_domain="summarization",
    )
