"""GRE-bench on ICLR papers: the model under test reviews each paper; GEM, GEM-raw and GEM-S
score the review against independent human reviews (GEM paper §5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from inspect_ai import Task, task
from inspect_ai.model import ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from gem_tasks.scoring.adapter import make_scorers
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import negatives_wanted, paper_dataset

__all__ = ["human_review", "iclr"]


@solver
def human_review() -> Solver:
    """Answer with the paper's held-out human review instead of calling a model (the human
    baseline row of the leaderboard)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        text = state.metadata["held_out"]["text"]
        state.output = ModelOutput.from_content(model="human", content=text)
        state.messages.append(state.output.message)
        state.completed = True
        return state

    return solve


@task
def iclr(
    dataset: str | None = None,
    references: int = 2,
    seed: int = 0,
    candidate: Literal["model", "human"] = "model",
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    scorers: str | list[str] = "gem,gem_raw,gem_s",
    max_paper_tokens: int = 12000,
    dataset_summaries: bool = False,
    scorer_options: dict[str, dict[str, Any]] | None = None,
    cache_dir: str | None = None,
    negatives: int | None = None,
) -> Task:
    """GRE-bench peer review: review each paper (GEM paper App. C.3 prompt) and score the review.

    Args:
        dataset: canonical records (JSONL/parquet file or folder, or a Hugging Face dataset id);
            default: the bundled demo (10 fictional papers written for the project).
        references: human reviews per paper used as references (k); one more is held out.
        seed: seed of the held-out/reference split (identical for every model scored).
        candidate: ``model`` (the model under test writes the review) or ``human`` (the held-out
            human review is the answer; no model is called: the human baseline).
        scorer_lm: evaluation-LM spec: ``embedded`` (SmolLM2-135M, CPU, offline),
            ``hf/<model>`` or ``vllm/<model>``.
        scorer_lm_args: backend options: ``{base_url: "http://host:8000/v1"}`` (or a list of
            URLs) to score through running ``vllm serve`` instances; vLLM engine arguments
            (``dtype``, ``max_model_len``, ``gpu_memory_utilization``, ``tensor_parallel_size``,
            ``data_parallel_size``, ``quantization``); ``dtype``/``device`` for ``hf``.
        scorers: comma-separated names of registered metrics (``scorers.list_metrics()``:
            gem, gem_raw, gem_s (abstract), gem_s_assw, ...).
        max_paper_tokens: paper text beyond this (estimated at 4 characters a token) is cut; the
            sample metadata says when.
        dataset_summaries: use judgment summaries stored in the dataset instead of preprocessing
            those human reviews.
        scorer_options: per-metric options, e.g. ``{lm_examiner: {max_tokens: 512}}`` or
            ``{bertscore: {model: dunzhang/stella_en_400M_v5}}``.
        cache_dir: folder of the on-disk score cache.
        negatives: reviews of other papers per paper (negative references), drawn with
            ``seed`` and the same for every model; default 4 when a requested metric needs them
            (the f-variational cells, TV direct with ``tv_direct_form: product``), else none.
            Fewer than that many other papers is an error, and so is 0 with such a metric.
    """
    if candidate not in ("model", "human"):
        raise ValueError(f"candidate must be 'model' or 'human', got {candidate!r}")
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=paper_dataset(
            dataset,
            references=references,
            seed=seed,
            max_paper_tokens=max_paper_tokens,
            negatives=negatives_wanted(scorers, negatives, scorer_options=scorer_options),
            scorers=scorers,
            scorer_options=scorer_options,
        ),
        solver=human_review() if candidate == "human" else generate(),
        scorer=make_scorers(
            scorers,
            scorer_lm=scorer_lm,
            scorer_lm_args=scorer_lm_args,
            cache_dir=cache_dir,
            dataset_summaries=dataset_summaries,
            scorer_options=scorer_options,
        ),
        metadata={
            "candidate": candidate,
            "scorer_lm": scorer_lm,
            "references": references,
            "seed": seed,
        },
    )
