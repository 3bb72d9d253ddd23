"""SummEval as a judgment task (Scoring Rules paper §5, Table 3's SummEval column): summaries of
CNN/DailyMail articles scored against independent human reference summaries, with the article as
θ of the "-S" metrics. Data: SummEval (Fabbri et al., TACL 2021; MIT)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task

from gem_tasks.tasks.judgments.judgments import judgment_task
from gem_tasks.tasks.samples import SUMMEVAL_DEMO
from gem_tasks.tasks.settings import checked_settings

__all__ = ["summeval"]


@task
@checked_settings
def summeval(
    dataset: str | None = None,
    candidate: str = "model",
    references: int = 1,
    seed: int = 0,
    scorers: str | list[str] = "gem,gem_raw,gem_s,bleu,rouge_l",
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    scorer_options: dict[str, dict[str, Any]] | None = None,
    dataset_summaries: bool = False,
    cache_dir: str | None = None,
    negatives: int | None = None,
    max_input_tokens: int = 12000,
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
        scorers: registered metrics that apply to summarisation (Beyond Rating's, LMExaminer's
            and the other peer-review-only metrics are refused, with why).
        scorer_lm, scorer_lm_args: the evaluation LM and its backend options.
        scorer_options: per-metric options.
        dataset_summaries: use statement rewrites stored with the references.
        cache_dir: folder of the on-disk score cache.
        negatives: negative references per article (other articles' summaries).
        max_input_tokens: the article beyond this (4 characters a token) is cut.
    """
    return judgment_task(
        dataset=dataset or SUMMEVAL_DEMO,
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
        expected_domain="summarization",
    )
