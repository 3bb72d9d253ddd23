"""GRE-bench on ICLR papers: the model under test reviews each paper; GEM, GEM-raw and GEM-S
score the review against independent human reviews (GEM paper §5)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.model import ChatMessageUser, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from gem_tasks.scoring.headline import headline_of
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import DEMO_DATASET, paper_samples, stored_answer, task_dataset
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings
from scorers.data.candidates import Candidate
from scorers.data.paper_docs import BASELINE, VERDICT_REPLY
from scorers.metrics.decision import RULES, verdict_question
from scorers.scales import scale_named

__all__ = ["ask_verdict", "baseline_verdict", "iclr"]


@solver
def ask_verdict() -> Solver:
    """After the review, ask the model under test for its rating and accept/reject decision in
    a follow-up turn of the same conversation; the review stays the sample's output (the
    candidate every metric scores), the reply is kept for the decision metrics."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        review = state.output
        scale = scale_named(state.metadata.get("rating_scale") or "iclr")
        state.messages.append(ChatMessageUser(content=verdict_question(scale)))
        state = await generate(state)
        state.metadata[VERDICT_REPLY] = state.output.completion if state.output else ""
        state.output = review
        return state

    return solve


@solver
def baseline_verdict(rule: str, rate: float | None, seed: int) -> Solver:
    """A baseline row: no model and no review; the verdict is the rule's
    (:data:`scorers.metrics.decision.RULES`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.metadata[BASELINE] = {"rule": rule, "rate": rate, "seed": seed}
        state.output = ModelOutput.from_content(model=f"baseline:{rule}", content="")
        state.completed = True
        return state

    return solve


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,gem_s")
def iclr(
    dataset: str | None = None,
    references: int = 2,
    seed: int = 0,
    candidate: str = "model",
    max_paper_tokens: int = 12000,
    *,
    scoring: TaskScoring,
) -> Task:
    """GRE-bench peer review: review each paper (GEM paper App. C.3 prompt) and score the review.

    Args:
        dataset: canonical records (JSONL/parquet file or folder, or a Hugging Face dataset id);
            default: the bundled demo (10 fictional papers written for the project).
        references: human reviews per paper used as references (k); one more is held out.
        seed: seed of the held-out/reference split (identical for every model scored).
        candidate: ``model`` (the model under test writes the review; with a decision metric
            among the scorers it is then asked its rating and decision in a follow-up turn),
            ``human`` (the held-out human review is the answer, its stored rating the verdict;
            no model is called: the human baseline) or ``baseline:<rule>`` (no review; the
            verdict of ``always_reject``, ``base_rate``, ``committee`` (the other reviewers'
            mean rating) or ``committee_all_reviewers`` (every official reviewer's, from the
            decision data's paper-level ratings): decision metrics only).
        max_paper_tokens: paper text beyond this (estimated at 4 characters a token) is cut; the
            sample metadata says when.
    """
    scored = Candidate.parse(candidate, allowed=("model", "human", "baseline"), rules=RULES)
    rule = scored.name if scored.kind == "baseline" else None
    plan = scoring.plan()
    deciding = [n for n, m in plan.metrics.items() if m.spec.family == "decision"]
    if rule is not None:
        others = [n for n in plan.names if n not in deciding]
        if others:
            raise ValueError(
                f"candidate={candidate} writes no review, so only the decision metrics apply; "
                f"{', '.join(others)} score a review's text"
            )
    data = scoring.load(
        DEMO_DATASET if dataset is None else dataset, plan, domains=frozenset({"peer_review"})
    )
    samples = paper_samples(
        data,
        references=references,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        human=scored.kind == "human",
    )
    if rule == "committee_all_reviewers" and not any(
        s.metadata.get("official_ratings") for s in samples
    ):
        raise ValueError(
            f"candidate={candidate} needs every official reviewer's rating per paper, and no "
            "paper of the dataset lists them (join a decisions file with a ratings column: "
            "gem-tasks data convert --decisions)"
        )
    if rule is not None:
        decided = [s.metadata["decision"]["accept"] for s in samples if s.metadata.get("decision")]
        rate = sum(1 for a in decided if a) / len(decided) if decided else None
        solver: Solver | list[Solver] = baseline_verdict(rule, rate, seed)
    elif scored.kind == "human":
        solver = stored_answer()
    else:
        solver = [generate(), ask_verdict()] if deciding else generate()
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=task_dataset(data, samples),
        solver=solver,
        scorer=scoring.inspect_scorers(plan),
        headline_metric=headline_of(plan),
        metadata={
            "candidate": candidate,
            "scorer_lm": scoring.scorer_lm,
            "references": references,
            "seed": seed,
        },
    )
