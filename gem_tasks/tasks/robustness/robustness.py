"""Validation of a metric (GEM paper §4, Algorithm 1; Scoring Rules paper §3): score each held-out
human review before and after a degradation or manipulation, against the same references, and
test whether the metric penalises information loss and resists cheap score inflation."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, ModelOutput, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from gem_tasks.scoring.headline import headline_of
from gem_tasks.scoring.items import CANDIDATE_MODE, PERTURBATION_FAILED
from gem_tasks.scoring.metrics import (
    at_token_limit,
    largest_share,
    mean_paired_difference,
    paired_p,
    signed_rank_p,
    smd,
    smd_ci95_lower,
    smd_ci95_upper,
    smd_paired_ci95_lower,
    smd_paired_ci95_upper,
    verdict,
)
from gem_tasks.scoring.paired import PAIRED_SCORERS
from gem_tasks.scoring.roles import ask_model
from gem_tasks.tasks import eval_card
from gem_tasks.tasks.samples import (
    ANSWER,
    DEMO_DATASET,
    distinct_candidate_samples,
    paper_samples,
    task_dataset,
)
from gem_tasks.tasks.scoring_settings import TaskScoring, scoring_parameters
from gem_tasks.tasks.settings import checked_settings
from scorers.data.task_data import TaskData
from scorers.domains import DOMAINS
from scorers.lm.base import hit_limit
from scorers.types import AT_TOKEN_LIMIT
from scorers.validation.gaming import universal_review
from scorers.validation.perturbations import (
    GAMING,
    PERTURBATIONS,
    PaperContext,
    PerturbationReplyError,
    apply_perturbation,
    llm_requests,
)

__all__ = ["perturb_review", "robustness"]


def _other_paper_order(samples: list[Sample], seed: int) -> dict[Any, Sample]:
    """Each input's 'other input' for random replacement, fixed by ``seed``: within each group
    (the record's group, else its venue: a review of another paper of the venue, a summary of
    another article), the inputs in a seeded order, each taking the next one that is about
    another entity (never a hotel's other aspect). Where every input is its own entity this is
    a derangement; an input with no other entity in its group takes itself (refused by the
    caller)."""
    groups: dict[str, list[Sample]] = {}
    for sample in samples:
        meta = sample.metadata or {}
        key = meta.get("group") if meta.get("group") is not None else meta.get("venue") or ""
        groups.setdefault(str(key), []).append(sample)

    def entity(sample: Sample) -> str:
        return str((sample.metadata or {}).get("entity") or f"record:{sample.id}")

    others: dict[Any, Sample] = {}
    for members in groups.values():
        order = sorted(
            members, key=lambda s: hashlib.sha256(f"{seed}:other:{s.id}".encode()).hexdigest()
        )
        for i, sample in enumerate(order):
            later = (order[(i + step) % len(order)] for step in range(1, len(order)))
            others[sample.id] = next((o for o in later if entity(o) != entity(sample)), sample)
    return others


PERTURB_MODES = {
    "candidates": "what the metrics score: existing candidates where the data has them, else "
    "the held-out human report",
    "held_out_reference": "the held-out human report, even where candidates exist",
}
"""What the robustness task perturbs (``-T perturb=``)."""

PERTURB_TARGET = "perturb_target"
"""Task- and sample-metadata key: which text was perturbed (``existing candidates`` or ``the
held-out human report``)."""

LEVEL_FREE = ("random_replacement", *GAMING)
"""Strategies that work on raw reviews and on judgment summaries alike."""


def _checked_level(data: TaskData, *, perturbation: str, level: str | None, perturb: str) -> str:
    """The level ``perturbation`` works on in this run (``level``, else the strategy's own),
    after refusing settings that do not fit the strategy or ``data``."""
    if perturb not in PERTURB_MODES:
        raise ValueError(f"perturb must be one of {list(PERTURB_MODES)}, got {perturb!r}")
    spec = PERTURBATIONS[perturbation]  # an unknown name: a SettingError naming the known
    level = level or spec.level
    if level not in ("review", "judgments"):
        raise ValueError(f"level must be 'review' or 'judgments', got {level!r}")
    if level != spec.level and perturbation not in LEVEL_FREE:
        raise ValueError(f"{perturbation!r} works on the {spec.level} level only")
    if data.domain not in spec.domains:
        raise ValueError(
            f"{perturbation!r} is written for {', '.join(sorted(spec.domains))}, and the data "
            f"is {data.domain}: its prompts or its reading of the text (sections, verdicts, the "
            "abstract) do not fit"
        )
    if level == "judgments" and perturb == "candidates" and any(r.candidates for r in data.records):
        raise ValueError(
            f"the judgment-level {perturbation!r} perturbs judgment summaries, which the "
            "existing candidates do not have: use level=review, or perturb=held_out_reference"
        )
    return level


def _text_to_perturb(sample: Sample, perturbation: str, *, level: str, on_candidates: bool) -> str:
    """The text of ``sample`` that ``perturbation`` rewrites: the existing candidate's, else the
    held-out report's (its judgment summary at the judgment level)."""
    if on_candidates:
        return sample.metadata[ANSWER]["text"]
    held_out = sample.metadata["held_out"]
    if level == "judgments":
        if not held_out.get("summary"):
            raise ValueError(
                f"paper {sample.id!r}: the judgment-level perturbation {perturbation!r} "
                "needs the held-out review's judgment summary (the 'summary' field)"
            )
        return held_out["summary"]
    return held_out["text"]


def robustness_dataset(
    data: TaskData,
    *,
    perturbation: str,
    references: int,
    seed: int,
    max_paper_tokens: int,
    level: str | None = None,
    perturb: str = "candidates",
) -> MemoryDataset:
    """The samples, each with the text to perturb and another input's text (for random
    replacement). ``perturb="candidates"`` perturbs what the domain's metrics score, as the
    Scoring Rules paper does: the existing candidates where the data has them (SummEval's system
    summaries, LFQA-E's answers), scored against the ground-truth references, else the held-out
    human report (a peer review, SPACE's held-out summary; or its judgment summary for
    judgment-level strategies). ``perturb="held_out_reference"`` perturbs the held-out human
    report even where candidates exist (scored against the other references)."""
    level = _checked_level(data, perturbation=perturbation, level=level, perturb=perturb)
    records = data.records
    on_candidates = perturb == "candidates" and any(r.candidates for r in records)
    if on_candidates:
        documents = {
            record.id: data.document(
                record,
                references=references,
                seed=seed,
                max_paper_tokens=max_paper_tokens,
                hold_out=not record.ground_truth,
            )
            for record in records
            if record.candidates
        }
        # each distinct text of an input once (LFQA-E's answers recur in its pairs)
        samples = distinct_candidate_samples([r for r in records if r.candidates], documents)
    else:
        samples = paper_samples(
            data, references=references, seed=seed, max_paper_tokens=max_paper_tokens
        )
    target = "existing candidates" if on_candidates else "the held-out human report"
    others = _other_paper_order(samples, seed)
    if perturbation == "random_replacement" and any(others[s.id].id == s.id for s in samples):
        raise ValueError(
            "random replacement needs at least two inputs of different entities in every group"
        )

    def text_of(sample: Sample) -> str:
        return _text_to_perturb(sample, perturbation, level=level, on_candidates=on_candidates)

    universal = (
        universal_review([text_of(s) for s in samples], level=level)
        if perturbation == "universal_review"
        else None
    )
    for sample in samples:
        sample.metadata.update(
            {
                "perturbation": perturbation,
                "level": level,
                "original": text_of(sample),
                "other_text": text_of(others[sample.id]),
                "other_paper_id": others[sample.id].id,
                "split_seed": seed,
                PERTURB_TARGET: target,
                # before and after must be preprocessed the same way
                CANDIDATE_MODE: "judgments" if level == "judgments" else "preprocess",
                **({"universal_review": universal} if universal is not None else {}),
            }
        )
    return task_dataset(data, samples)


def paper_context(metadata: dict[str, Any]) -> PaperContext:
    """The paper facts a gaming strategy uses, from a robustness sample's metadata."""
    return PaperContext(
        title=metadata.get("title") or "",
        abstract=metadata.get("abstract") or "",
        paper_text=metadata.get("paper_text"),
        universal_review=metadata.get("universal_review"),
        level=metadata.get("level") or "review",
        seed=int(metadata.get("split_seed") or 0),
        domain=metadata.get("domain") or "peer_review",
    )


@solver
def perturb_review(perturbation: str) -> Solver:
    """Apply ``perturbation`` to the sample's original text; LLM-based strategies ask the model
    under test (``--model``) at temperature 0."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        original = state.metadata["original"]
        if not original.strip():  # never sent to a model, never scored as if perturbed
            state.metadata[PERTURBATION_FAILED] = "the held-out review is empty: nothing to perturb"
            state.output = ModelOutput.from_content(model="perturbation", content="")
            state.completed = True
            return state
        other = state.metadata.get("other_text") or ""
        if perturbation == "random_replacement" and " ".join(other.split()) == " ".join(
            original.split()
        ):  # another input's text that reads the same ("No idea."): a pair that tests nothing
            state.metadata[PERTURBATION_FAILED] = (
                "random replacement drew another input's text identical to this one"
            )
            state.output = ModelOutput.from_content(model="perturbation", content="")
            state.completed = True
            return state
        outputs: dict[str, str] = {}
        requests = llm_requests(perturbation, original, paper=paper_context(state.metadata))
        for key, conversation in requests.items():
            # the reply limit is the eval's (--max-tokens): only Inspect knows it, so these
            # replies are asked uncached
            reply, output = await ask_model(
                get_model(),
                conversation,
                GenerateConfig(temperature=0.0),
                what=f"perturbation model on {state.sample_id!r}",
            )
            outputs[key] = str(reply)
            if hit_limit(reply):
                # the perturbed text may have lost its end: said in every score of the sample
                used = output.usage.output_tokens if output.usage else 0
                state.metadata.setdefault(AT_TOKEN_LIMIT, {})[f"perturbation ({key})"] = used
        state.metadata["llm_outputs"] = outputs
        try:
            perturbed = apply_perturbation(
                perturbation,
                original,
                other_text=state.metadata["other_text"],
                llm_outputs=outputs,
                paper=paper_context(state.metadata),
            )
        except PerturbationReplyError as error:  # the model did not do what was asked
            state.metadata[PERTURBATION_FAILED] = str(error)
            state.output = ModelOutput.from_content(model="perturbation", content="")
            state.completed = True
            return state
        state.metadata["perturbed"] = perturbed
        if " ".join(perturbed.split()) == " ".join(original.split()):
            # a perturbation that changed nothing tests nothing: never scored as a pair with a
            # zero difference (the paper's silent no-op), counted with its reason instead
            state.metadata[PERTURBATION_FAILED] = f"{perturbation!r} left the text unchanged" + (
                " (the model returned it as it was)" if outputs else ""
            )
        state.output = ModelOutput.from_content(model="perturbation", content=perturbed)
        state.completed = True
        return state

    return solve


def paired_metrics(*, expected: str, alpha: float) -> list[Any]:
    """The robustness task's metrics over the before/after pairs of a perturbation whose score
    is ``expected`` to ``decrease`` or ``increase``: SMD with its intervals, the mean paired
    difference, the one-sided paired t-test and Wilcoxon p-values in that direction, the
    largest pair's share and the verdict at ``alpha``."""
    alternative = "less" if expected == "decrease" else "greater"
    return [
        at_token_limit(),
        smd(),
        smd_ci95_lower(),
        smd_ci95_upper(),
        smd_paired_ci95_lower(),
        smd_paired_ci95_upper(),
        mean_paired_difference(),
        paired_p(alternative=alternative),
        largest_share(),
        signed_rank_p(alternative=alternative),
        verdict(expected=expected, alpha=alpha),
    ]


@task
@checked_settings
@scoring_parameters(scorers="gem,gem_raw,gem_s")
def robustness(
    perturbation: str = "random_replacement",
    dataset: str | None = None,
    references: int = 2,
    seed: int = 0,
    max_paper_tokens: int = 12000,
    alpha: float = 0.05,
    level: str | None = None,
    perturb: str = "candidates",
    *,
    scoring: TaskScoring,
) -> Task:
    """Score every candidate (an existing system's report, else the held-out human review)
    before and after ``perturbation`` with each scorer.

    Metrics per scorer: SMD with its 95% CI, the mean paired difference, the one-sided paired
    t-test p-value in the direction that matters (decrease for degradations, increase for
    manipulations) and a pass (1) / fail (0) verdict at ``alpha``; beside them, the share of the
    differences' spread carried by the most extreme pair (``largest_share``: at 0.5 or more one
    paper decides the t-test) and the Wilcoxon signed-rank p-value in the same direction.

    Args:
        perturbation: one of ``scorers.validation.perturbations.PERTURBATIONS``; LLM-based
            strategies use the model under test (``--model``) to rewrite; rule-based ones need
            ``--model none``.
        dataset: canonical records (default: the bundled demo).
        references: reference reviews per paper.
        seed: seed of the held-out/reference split and of the other-paper pairing.
        max_paper_tokens: paper text budget (for ASSW summaries).
        alpha: significance level of the verdict.
        level: ``judgments`` to apply a level-free strategy (random replacement) to the
            held-out review's judgment summary instead of its text.
        negatives: negative references per paper (see ``gem_tasks/iclr``); the same for the
            before and after scores.
        perturb: ``candidates`` (default: what the metrics score, as the Scoring Rules paper
            perturbs it: the existing candidates where the data has them, e.g. SummEval's
            system summaries and LFQA-E's answers, else the held-out human report) or
            ``held_out_reference`` (the held-out human report even where candidates exist);
            the log's metadata and every pair's say which text was perturbed
            (``perturb_target``).
    """
    spec = PERTURBATIONS[perturbation]  # an unknown name: a SettingError naming the known
    data, plan = scoring.prepare(
        DEMO_DATASET if dataset is None else dataset, domains=frozenset(DOMAINS)
    )
    samples = robustness_dataset(
        data,
        perturbation=perturbation,
        references=references,
        seed=seed,
        max_paper_tokens=max_paper_tokens,
        level=level,
        perturb=perturb,
    )
    made = scoring.inspect_scorers(plan, PAIRED_SCORERS)
    return Task(
        version=eval_card(Path(__file__).parent)["version"],
        dataset=samples,
        solver=perturb_review(perturbation),
        scorer=made,
        metrics=paired_metrics(expected=spec.expected, alpha=alpha),
        headline_metric=headline_of(plan, metric="smd", suffix="_paired"),
        metadata={
            "perturbation": perturbation,
            "perturbation_version": spec.version,
            "perturb": perturb,
            PERTURB_TARGET: samples[0].metadata[PERTURB_TARGET],
            "kind": spec.kind,
            "expected": spec.expected,
            "level": level or spec.level,
            "alpha": alpha,
            # the unit the paired intervals and tests count (their standard error is the
            # units'); the SMD and mean difference count each distinct text once
            "statistical_unit": "the input (paper, question, article, hotel): paired "
            "intervals and tests take their standard error over these; d counts each text once",
        },
    )
