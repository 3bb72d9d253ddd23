"""Judgments of any domain (Scoring Rules paper §5): a report about a task input (a summary of
an article, an answer to a question, a review of a paper) scored against independent human
reports of the same input, with the metrics that apply to the domain.

The data is any file of canonical records or generic judgment items
(:func:`scorers.data.records.parse_judgment_item`), or the SummEval, SPACE and LFQA-E files as
they are (:func:`scorers.data.sources.summaries.summary_records`). The candidate is the model's
own report (``model``), the held-out human report (``human``), one existing candidate
(``system:<id>``, e.g. a SummEval system) or every existing candidate (``candidates``: one sample
per input and candidate, with its human ratings; the headline is Spearman's ρ of each metric with
the ratings, or for pairwise preferences (LFQA-E) the share of pairs the metric orders as the
annotator did). Where the human reports are ground truth (SummEval, SPACE, LFQA-E) candidates
are scored against them with none held out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.solver import generate

from gem_tasks.scoring.adapter import item_mean_metric
from gem_tasks.scoring.headline import headline_of
from gem_tasks.scoring.metrics import (
    PREFERENCE,
    at_token_limit,
    preference_agreement,
    rating_spearman,
)
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import (
    candidate_samples,
    distinct_candidate_samples,
    document_sample,
    human_answer,
    stored_answer,
    task_dataset,
)
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings
from scorers.data.candidates import Candidate, CandidateKind
from scorers.data.records import PaperRecord, RecordError
from scorers.data.sources.summaries import load_judgment_records
from scorers.data.task_data import TaskData
from scorers.domains import domain as get_domain

__all__ = ["judgment_dataset", "judgments", "load_judgment_records"]


JUDGMENT_CANDIDATES: tuple[CandidateKind, ...] = ("model", "human", "candidates", "system")
"""The candidates of a judgment task."""


def judgment_dataset(
    data: TaskData,
    *,
    candidate: Candidate,
    references: int,
    seed: int,
    max_input_tokens: int,
) -> MemoryDataset:
    """The samples of ``data`` for ``candidate`` (see the module doc). The held-out human
    report and the references are the fixed split of every input (``seed``), whatever the
    candidate, so every candidate of an input is scored against the same references. Where the
    references are ground truth (``PaperRecord.ground_truth``: gold summaries, a reference
    answer) no report is held out but for the human baseline, which needs two or more."""
    samples = []
    documents: dict[str, tuple[str, Any]] = {}
    for record in data.records:
        text, document = data.document(
            record,
            references=references,
            seed=seed,
            max_paper_tokens=max_input_tokens,
            hold_out=candidate.kind == "human" or not record.ground_truth,
        )
        if candidate.kind == "model":
            if not text.strip():
                raise RecordError(
                    f"{record.id}: the {record.domain} domain's input has no text for a model to "
                    "report on (no input reviews, no article, no question); use "
                    "candidate=human or candidates"
                )
            samples.append(document_sample(record, text, document))
        elif candidate.kind == "human":
            answer = human_answer(document)
            samples.append(document_sample(record, text, document, answer=answer))
        elif candidate.kind == "candidates":
            documents[record.id] = (text, document)  # each distinct text once, below
        else:  # system:<id>
            samples += candidate_samples(record, text, document, wanted=candidate.name)
    if candidate.kind == "candidates":
        samples = distinct_candidate_samples(data.records, documents)
    if not samples:
        raise RecordError(f"{data.source}: no sample for candidate={str(candidate)!r}")
    return task_dataset(data, samples)


def human_agreement(records: list[PaperRecord]) -> tuple[Any, str]:
    """How a candidates run measures a metric against the humans, and the key of the number
    that heads it: ``preference_agreement`` where the ratings are pairwise preferences (LFQA-E;
    the Scoring Rules paper computes no ρ from them), else ``rating_spearman`` headed by the
    mean of the per-dimension ρ."""
    dimensions = {d for r in records for c in r.candidates for d in c.ratings}
    if dimensions == {PREFERENCE}:
        return preference_agreement(), "preference_agreement"
    return rating_spearman(), "rho_mean_of_dimensions"


def judgment_task(
    *,
    dataset: str | Path,
    candidate: str,
    references: int,
    seed: int,
    max_input_tokens: int,
    card_folder: Path,
    scoring: TaskScoring,
    expected_domain: str | None = None,
) -> Task:
    """The task every domain's task is: the records of ``dataset`` (one domain), refused up
    front when a metric does not apply to the domain or the data cannot serve it."""
    scored = Candidate.parse(candidate, allowed=JUDGMENT_CANDIDATES)
    data, plan = scoring.prepare(
        dataset, domains=frozenset({expected_domain}) if expected_domain is not None else None
    )
    domain = data.records[0].domain
    agreement, agreement_name = (
        human_agreement(data.records) if scored.kind == "candidates" else (None, None)
    )
    return Task(
        version=eval_card(card_folder)["version"],
        dataset=judgment_dataset(
            data,
            candidate=scored,
            references=references,
            seed=seed,
            max_input_tokens=max_input_tokens,
        ),
        solver=generate() if scored.generates else stored_answer(),
        scorer=scoring.inspect_scorers(plan),
        # every existing candidate carries its human ratings: the headline is the agreement
        # with them (a corpus statistic: the rank correlation with graded ratings, the share of
        # preference pairs ordered as the annotator did); the mean over every candidate is a
        # diagnostic under its own name (the leaderboard ranks the systems)
        metrics=(
            [agreement, item_mean_metric("mean_score"), at_token_limit()]
            if agreement is not None
            else None
        ),
        headline_metric=headline_of(plan, metric=agreement_name),
        metadata={
            "domain": domain,
            "domain_words": get_domain(domain).report,
            "candidate": candidate,
            "references": references,
            "seed": seed,
            "scorer_lm": scoring.scorer_lm,
        },
    )


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,bleu,rouge_l")
def judgments(
    dataset: str,
    candidate: str = "human",
    references: int = 1,
    seed: int = 0,
    max_input_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """Score reports of any domain against independent human reports of the same input.

    Args:
        dataset: canonical records or generic judgment items (JSONL/parquet file or folder, or
            a Hugging Face dataset id), or a SummEval, SPACE or LFQA-E file as it is; one
            domain per dataset.
        candidate: ``human`` (the held-out human report, the baseline), ``model`` (the model
            under test writes its report of the input), ``system:<id>`` (an existing candidate
            of each input) or ``candidates`` (every existing candidate, with Spearman's ρ against
            their human ratings).
        references: human reports per input used as references (the Scoring Rules paper scores
            against one); one more is held out.
        seed: seed of the held-out/reference split and of the negatives.
        max_input_tokens: the input text beyond this (4 characters a token) is cut.
    """
    return judgment_task(
        dataset=dataset,
        candidate=candidate,
        references=references,
        seed=seed,
        max_input_tokens=max_input_tokens,
        card_folder=Path(__file__).parent,
        scoring=scoring,
    )
