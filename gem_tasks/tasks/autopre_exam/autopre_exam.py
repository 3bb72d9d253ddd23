"""Auto-PRE's qualification exams as an Inspect task, an adapter around the core's exams
(:mod:`scorers.metrics.autopre.exams`: the pairs, each judge's answers, the qualification): one
sample per exam pair (consistency, pertinence, easy and hard self-confidence pairs built from
the dataset's human reviews), every candidate judge answering it in both orders; each sample's
score metadata holds every answer, and the ``autopre_qualification`` metric turns them into the
exam table, the thresholds, the panel and its weights (:func:`qualification_from_rows`). The
model under test is not called (any model, e.g. ``mockllm/model``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.log import HeadlineMetric
from inspect_ai.model import get_model
from inspect_ai.scorer import SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, TaskState, solver

from gem_tasks.analysis.autopre import qualification_from_log
from gem_tasks.scoring.roles import model_generator, named_model
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import DEMO_DATASET, task_dataset
from gem_tasks.tasks.settings import checked_settings
from scorers.data.paper_docs import DATASET
from scorers.data.records import PaperRecord
from scorers.data.task_data import TaskData
from scorers.lm.embedding import DEFAULT_EMBEDDER, load_embedder
from scorers.lm.generation import LocalGenerator
from scorers.lm.preflight import check_evaluation_lm
from scorers.lm.threads import run_blocking
from scorers.metrics.autopre.core import Qualification
from scorers.metrics.autopre.exams import (
    EXAMS,
    ExamItems,
    abstract_records,
    build_exam_items,
    embedding_similarity,
    exam_answers,
    qualification_from_rows,
)
from scorers.metrics.autopre.judging import (
    VARIANTS,
    Judge,
    Pair,
    parse_judge_entries,
)
from scorers.resources import Resources

__all__ = ["DEFAULT_JUDGES", "autopre_exam", "parse_judge_specs", "qualification_from_log"]

EVALUATION_LM = "scorer_lm"
"""Judge name of the evaluation LM (``scorer_lm``; first-token probabilities available)."""
DEFAULT_JUDGES = "scorer_lm@before,scorer_lm@after,scorer_lm@expert"
"""Offline: the evaluation LM under three prompt variants."""


def parse_judge_specs(judges: str | list[str]) -> list[tuple[str, str, str]]:
    """``model[@variant]`` entries (an Inspect model name, or ``scorer_lm``) -> (name, model,
    variant); unknown variants and duplicates are ``ValueError``."""
    return parse_judge_entries(judges)


@solver
def no_generation():
    """The exams ask the judges (in the scorer); the model under test writes nothing."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


def _qualification(scores: list[SampleScore]) -> Qualification:
    rows = [s.score.metadata for s in scores if s.score.metadata]
    return qualification_from_rows(rows)  # type: ignore[arg-type]


@metric(name="autopre_qualification")
def autopre_qualification():
    """Per judge: P_c, P_p, P_s (NaN when unscored), pass of all three (``in_panel``) and the
    panel weight; the thresholds and the panel size."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        q = _qualification(scores)
        out: dict[str, float] = {}
        for judge, exams in q.scores.items():
            for exam, score in exams.items():
                out[f"{judge}:{exam}"] = float("nan") if score.value is None else score.value
            out[f"{judge}:in_panel"] = float(judge in q.panel)
            out[f"{judge}:weight"] = q.weights.get(judge, 0.0)
        for exam in ("consistency", "pertinence"):
            eta = q.thresholds[exam]
            out[f"threshold:{exam}"] = float("nan") if eta is None else eta
        out["panel_size"] = float(len(q.panel))
        return out

    return compute


@scorer(metrics=[autopre_qualification()])
def autopre_exam_scorer(
    judges: str | list[str] = DEFAULT_JUDGES,
    confidence: str = "auto",
    local_answers: str = "generate",
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    cache_dir: str | None = None,
) -> Scorer:
    """Every judge answers the sample's pair in both orders; the value is the share of judges
    whose two answers were read; the metadata holds every answer and the judge calls."""
    specs = parse_judge_specs(judges)

    async def score(state: TaskState, target: Target) -> Score:
        resources = Resources(
            evaluation_lm=scorer_lm, evaluation_lm_options=scorer_lm_args, cache_dir=cache_dir
        )
        meta = state.metadata
        pair = Pair(id=str(state.sample_id), paper=meta["paper"], a=meta["a"], b=meta["b"])
        answers: dict[str, Any] = {}
        read = 0
        for name, model, variant in specs:
            generator = (
                LocalGenerator(await run_blocking(resources.lm))
                if model == EVALUATION_LM
                else model_generator(get_model(model), resources.cache, what="judge")
            )
            forced = local_answers == "forced" and model == EVALUATION_LM and variant in VARIANTS
            judge = Judge(name, generator, variant, forced=forced)
            [answer] = await exam_answers(judge, meta["exam"], [pair], confidence_mode=confidence)
            read += all(label is not None for label in answer["labels"])
            answers[name] = answer
        return Score(
            value=read / len(specs),
            explanation=f"{meta['exam']} pair; labels -1 = review one, +1 = review two: "
            + "; ".join(f"{n}: {a['labels']}" for n, a in answers.items()),
            metadata={"exam": meta["exam"], "judges": answers, "sources": meta["sources"]},
        )

    return score


def _checked_judges(
    judges: str | list[str],
    *,
    scorer_lm: str,
    scorer_lm_args: dict[str, Any] | None,
    confidence: str,
    local_answers: str,
) -> list[tuple[str, str, str]]:
    """The judge specs of ``judges``, after checking, before any sample, that every judge's
    model resolves (the evaluation LM when a judge is it) and the answer settings are known."""
    specs = parse_judge_specs(judges)
    if any(model == EVALUATION_LM for _, model, _ in specs):
        check_evaluation_lm(scorer_lm, scorer_lm_args)
    for _, model, _ in specs:
        if model != EVALUATION_LM:
            named_model(model, what="judge")  # a name that does not resolve stops the task now
    if local_answers not in ("generate", "forced"):
        raise ValueError(f"local_answers must be generate or forced, got {local_answers!r}")
    if confidence not in ("auto", "verbal", "prob"):
        raise ValueError(f"confidence must be auto, verbal or prob, got {confidence!r}")
    return specs


def _exam_items(
    records: list[PaperRecord], *, items: int, seed: int, similarity: str, embedder: str
) -> ExamItems:
    """The exams' pairs over ``records``: ``items`` papers drawn with ``seed``, the similar and
    unrelated papers found by ``similarity`` (``embedding`` under ``embedder``, or
    ``jaccard``)."""
    if similarity != "embedding":
        return build_exam_items(records, m=items, seed=seed)
    model = load_embedder(embedder)
    return build_exam_items(
        records,
        m=items,
        seed=seed,
        similarity=embedding_similarity(records, model.encode),
        similarity_name=f"embedding cosine ({model.identity})",
    )


def _exam_samples(exam_items: ExamItems) -> list[Sample]:
    """One sample per exam pair, with the pair and where its reviews come from."""
    return [
        Sample(
            id=pair.id,
            input=f"Auto-PRE {exam} exam pair for paper {src['paper']}",
            metadata={"exam": exam, "paper": pair.paper, "a": pair.a, "b": pair.b, "sources": src},
        )
        for exam in EXAMS
        for pair, src in zip(exam_items.pairs[exam], exam_items.sources[exam])
    ]


@task
@checked_settings
def autopre_exam(
    dataset: str | None = None,
    judges: str | list[str] = DEFAULT_JUDGES,
    items: int = 50,
    seed: int = 0,
    similarity: str = "embedding",
    embedder: str = DEFAULT_EMBEDDER,
    confidence: str = "auto",
    local_answers: str = "generate",
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    cache_dir: str | None = None,
) -> Task:
    """Auto-PRE's three exams for candidate judges of peer reviews.

    Args:
        dataset: canonical records (papers with two or more human reviews); default the demo.
        judges: comma-separated ``model[@variant]``: an Inspect model name (``openai/gpt-4o``)
            or ``scorer_lm`` (the evaluation LM), with a prompt variant ``before`` (default),
            ``after`` or ``expert``. At least three candidates are needed for a panel.
        items: exam papers (each gives one pair per exam: 4 pairs, 8 judge answers per judge).
        seed: which papers are drawn.
        similarity: how the similar paper P' (pertinence) and the unrelated paper (easy
            self-confidence pairs) are found: ``embedding`` (default: cosine of the abstracts'
            embeddings under ``embedder``) or ``jaccard`` (word overlap of the abstracts).
        embedder: the sentence embedder for ``similarity=embedding`` (default the embedded
            all-MiniLM-L6-v2; a local folder or a hub id otherwise).
        confidence: ``auto`` (first-token probability for ``scorer_lm``, a verbal keyword for
            the others), ``verbal`` or ``prob``.
        local_answers: how ``scorer_lm`` pairwise judges answer: ``generate`` (as the paper;
            a small model rarely starts its reply with one/two) or ``forced`` (the more probable
            of the first tokens of "one" and "two", teacher-forced; a documented departure).
        scorer_lm, scorer_lm_args: the evaluation LM and its backend options.
        cache_dir: folder of the on-disk cache (every judge reply is cached there).
    """
    specs = _checked_judges(
        judges,
        scorer_lm=scorer_lm,
        scorer_lm_args=scorer_lm_args,
        confidence=confidence,
        local_answers=local_answers,
    )
    if similarity not in ("embedding", "jaccard"):
        raise ValueError(f"similarity must be embedding or jaccard, got {similarity!r}")
    data = TaskData.load(
        DEMO_DATASET if dataset is None else dataset, domains=frozenset({"peer_review"})
    )
    try:  # the exams compare papers by their abstracts: papers without one take no part
        records = abstract_records(data.records)
    except ValueError as exc:
        raise ValueError(f"{data.source}: {exc}") from None
    exam_items = _exam_items(
        records, items=items, seed=seed, similarity=similarity, embedder=embedder
    )
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=task_dataset(data, _exam_samples(exam_items)),
        solver=no_generation(),
        scorer=autopre_exam_scorer(
            judges=judges,
            confidence=confidence,
            local_answers=local_answers,
            scorer_lm=scorer_lm,
            scorer_lm_args=scorer_lm_args,
            cache_dir=cache_dir,
        ),
        headline_metric=HeadlineMetric(metric="panel_size"),  # how many judges qualified
        metadata={
            "judges": [name for name, _, _ in specs],
            "items": items,
            "seed": seed,
            "similarity": exam_items.similarity,
            "pertinence_ia": "the longest human review of the most similar other paper",
            "papers_without_abstract_left_out": len(data.records) - len(records),
            "scorer_lm": scorer_lm,
            "local_answers": local_answers,
            # the qualification holds for this dataset (Auto-PRE qualifies judges per task)
            DATASET: data.identity,
        },
    )
