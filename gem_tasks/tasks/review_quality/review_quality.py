"""Beyond Rating's review-quality benchmark: the model under test writes a structured review of
each paper and the Beyond Rating metrics compare it, field by field, with the paper's expert
reviews (every human review but the held-out one)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from inspect_ai import Task, task
from inspect_ai.solver import generate

from gem_tasks.scoring.headline import headline_of
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import DEMO_DATASET, paper_samples, stored_answer, task_dataset
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings
from scorers.data.candidates import Candidate

__all__ = ["DEFAULT_SCORERS", "review_quality"]

DEFAULT_SCORERS = (
    "br_summary_coverage,br_strength_precision,br_strength_recall,br_strength_f1,"
    "br_weakness_precision,br_weakness_recall,br_weakness_f1,br_strength_kl,br_weakness_kl,"
    "br_question_kl,br_question_score,br_rating_mae"
)
"""Every Beyond Rating metric but Binoculars (whose default Falcon-7B pair needs a GPU; add
``br_binoculars`` with ``scorer_options`` to run it)."""

ALL_EXPERTS = 1_000_000
"""``references`` for "every review but the held-out one" (the split takes up to this many)."""


@task
@checked_settings
@scoring_parameters(scorers=DEFAULT_SCORERS, without=("dataset_summaries",))
def review_quality(
    dataset: str | None = None,
    seed: int = 0,
    candidate: Literal["model", "human"] = "model",
    prompt: Literal["strict", "neutral"] = "strict",
    max_paper_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """Structured peer review scored by the Beyond Rating metrics.

    Args:
        dataset: canonical records (JSONL/parquet file or folder, or a Hugging Face dataset id);
            default: the bundled demo. Reviews should carry ratings (for ``br_rating_mae``).
        seed: seed of the held-out review (identical for every model scored).
        candidate: ``model`` (the model under test writes the review) or ``human`` (the held-out
            human review is the answer: the human baseline row).
        prompt: the review system prompt, ``strict`` (default; the paper finds "a bit strict"
            prompts rate closer to the experts) or ``neutral``.
        scorer_lm: evaluation LM, the fallback of the ``preprocessor`` (sorting reviews into
            sections, extracting points) and ``judge`` (matching points, checking questions)
            roles: ``embedded``, ``hf/<model>`` or ``vllm/<model>``. Bind capable models to the
            roles (``--model-role judge=...``): a 135M model cannot do these tasks.
        scorer_options: per-metric options, e.g. ``{br_binoculars: {observer: embedded,
            performer: embedded}}`` or ``{br_question_score: {other: exclude}}``.
        max_paper_tokens: paper text budget of the review prompt (estimated at 4 characters a
            token; the cut is recorded in the sample metadata).
        cache_dir: folder of the on-disk cache (structured human reviews and their points are
            computed once there and shared by every model scored).
    """
    scored = Candidate.parse(candidate, allowed=("model", "human"))
    if prompt not in ("strict", "neutral"):
        raise ValueError(f"prompt must be 'strict' or 'neutral', got {prompt!r}")
    data, plan = scoring.prepare(
        DEMO_DATASET if dataset is None else dataset, domains=frozenset({"peer_review"})
    )
    samples = paper_samples(
        data,
        references=ALL_EXPERTS,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        system_prompt=f"beyond/review_{prompt}_system",
        human=scored.kind == "human",
    )
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=task_dataset(data, samples),
        solver=generate() if scored.generates else stored_answer(),
        scorer=scoring.inspect_scorers(plan),
        headline_metric=headline_of(plan),
        metadata={
            "candidate": candidate,
            "prompt": prompt,
            "scorer_lm": scoring.scorer_lm,
            "experts": "all_but_held_out",
            "seed": seed,
        },
    )
