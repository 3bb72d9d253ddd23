"""The paired adapter: every core metric as ``gem_tasks/<name>_paired`` for the robustness task,
scoring a sample's original text and its perturbed text against the same references.

The score's value is ``{"before": ..., "after": ...}``; a pair whose text could not be perturbed
or that the metric could not score on either side is unscored with the reason (never scored
unchanged, never dropped silently). Each side's metadata holds its own ``value`` (None when that
side is unscored), so the side that was scored in an unscored pair is kept in the log.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Score, Scorer, Target
from inspect_ai.solver import TaskState

from gem_tasks.scoring.adapter import register_scorers, resources_for, score_with
from gem_tasks.scoring.items import PERTURBATION_FAILED
from scorers.plan import built_metric
from scorers.types import AT_TOKEN_LIMIT

__all__ = ["PAIRED_SCORERS", "paired_scorer"]


def paired_scorer(
    name: str,
    *,
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    cache_dir: str | None = None,
    **options: Any,
) -> Scorer:
    """Metric ``name`` before and after the sample's perturbation."""
    metric = built_metric(name, **options)

    async def score(state: TaskState, target: Target) -> Score:
        failed = state.metadata.get(PERTURBATION_FAILED)
        if failed:
            return Score.unscored(
                reason="perturbation_failed",
                explanation=f"{name}: unscored: {failed}",
                metadata={
                    "metric": name,
                    "perturb_target": state.metadata.get("perturb_target"),
                    "unscored_reason": failed,
                },
            )
        resources = resources_for(metric, scorer_lm, scorer_lm_args, cache_dir)
        before, _ = await score_with(metric, state, resources, candidate=state.metadata["original"])
        after, _ = await score_with(metric, state, resources, candidate=state.metadata["perturbed"])
        unscored = [
            f"{label}: {result.reason}"
            for label, result in (("before", before), ("after", after))
            if result.value is None
        ]
        metadata = {  # each side's value too: a side scored in an unscored pair is not lost
            "metric": name,
            # which text was perturbed (the robustness task's perturb_target)
            "perturb_target": state.metadata.get("perturb_target"),
            "before": {"value": before.value, **before.metadata()},
            "after": {"value": after.value, **after.metadata()},
        }
        if state.metadata.get(AT_TOKEN_LIMIT):  # the perturbation itself was cut
            metadata[AT_TOKEN_LIMIT] = dict(state.metadata[AT_TOKEN_LIMIT])
        if unscored:
            return Score.unscored(
                reason="scoring_failed",
                explanation=f"{name}: unscored pair ({'; '.join(unscored)})",
                metadata={**metadata, "unscored_reason": "; ".join(unscored)},
            )
        return Score(
            value={"before": float(before.value), "after": float(after.value)},
            explanation=f"{name} before: {before.explanation}\n\n{name} after: {after.explanation}",
            metadata=metadata,
        )

    return score


PAIRED_SCORERS = register_scorers(
    paired_scorer,
    suffix="_paired",
    metrics=[],  # the robustness task reports paired statistics (SMDs), not a headline
    doc="{spec.display_name} before and after the sample's perturbation (robustness task).",
)
"""Every core metric's paired scorer factory, by metric name (``gem_tasks/<name>_paired``)."""
