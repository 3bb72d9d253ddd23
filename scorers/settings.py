"""The scoring settings every harness takes, as one type.

A scored task (an Inspect task, the lm-evaluation-harness task) is told which metrics to score
with, which evaluation LM, with what options and cache, and how many negative references; these
are the same settings with the same meanings everywhere, held by :class:`ScoringSettings`, which
turns them into the run's :class:`~scorers.plan.ScoringPlan` (built and checked once) and loads
the run's data against that plan (:class:`~scorers.data.task_data.TaskData`, refused where the
plan's metrics cannot serve it, with the negatives the plan resolved).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorers.data.task_data import TaskData
from scorers.plan import ScoringPlan
from scorers.resources import Resources

__all__ = ["ScoringSettings"]


@dataclass(frozen=True)
class ScoringSettings:
    """How a run's answers are scored.

    Attributes:
        scorers: registered metric names or aliases (comma-separated, or a list).
        scorer_lm: the evaluation LM's spec (``embedded``, ``hf/<model>``, ``vllm/<model>``).
        scorer_lm_args: the evaluation LM's backend options.
        scorer_options: per-metric options, by metric name.
        dataset_summaries: whether metrics that preprocess references read the judgment
            summaries stored with them; None where the harness has no such setting (each metric
            keeps its own default, and its options do not name it).
        cache_dir: the score cache's folder (None: the default).
        negatives: negative references per input (None: the plan's default).
    """

    scorers: str | Sequence[str]
    scorer_lm: str = "embedded"
    scorer_lm_args: Mapping[str, Any] | None = None
    scorer_options: Mapping[str, Mapping[str, Any]] | None = None
    dataset_summaries: bool | None = None
    cache_dir: str | None = None
    negatives: int | None = None

    @property
    def task_options(self) -> dict[str, Any]:
        """The settings routed to every metric that takes them (``dataset_summaries``, when the
        harness has it)."""
        if self.dataset_summaries is None:
            return {}
        return {"dataset_summaries": self.dataset_summaries}

    def plan(self, *, bound_roles: Iterable[str] = (), checked: bool = True) -> ScoringPlan:
        """The run's scoring plan, built once and (unless ``checked`` is false: a plan rebuilt
        from settings already checked) checked (:meth:`~scorers.plan.ScoringPlan.check`, with
        the model roles ``bound_roles``) before any sample exists.

        Raises:
            SettingError: an unknown scorer, option or evaluation LM, in one line.
        """
        plan = ScoringPlan.build(
            self.scorers,
            evaluation_lm=self.scorer_lm,
            evaluation_lm_options=self.scorer_lm_args,
            scorer_options=self.scorer_options,
            task_options=self.task_options,
        )
        if checked:
            plan.check(bound_roles=bound_roles)
        return plan

    def load(
        self, source: str | Path, plan: ScoringPlan, *, domains: frozenset[str] | None = None
    ) -> TaskData:
        """The run's data (:meth:`TaskData.load`), refused where ``plan``'s metrics cannot
        serve it (:meth:`~scorers.plan.ScoringPlan.refuse_data`), with the negatives the plan
        resolves for :attr:`negatives`."""
        data = TaskData.load(source, domains=domains)
        plan.refuse_data(data)
        return data.with_negatives(plan.negatives(self.negatives))

    def resources(self) -> Resources:
        """What the metrics score with: the evaluation LM and the score cache."""
        return Resources(
            evaluation_lm=self.scorer_lm,
            evaluation_lm_options=self.scorer_lm_args,
            cache_dir=self.cache_dir,
        )
