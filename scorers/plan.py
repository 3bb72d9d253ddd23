"""A run's scoring plan: the metrics a task asked for, built once with their options, and the
evaluation LM they score with, checked before any sample is generated.

A harness builds the plan when it sets a run up (every Inspect task does, and the
lm-evaluation-harness task), then calls :meth:`ScoringPlan.check`: a misspelled scorer name, an
option a metric lacks, an evaluation LM that cannot be found or a server that does not answer
stop the run there, with one line, instead of after the model under test has written its
reviews.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scorers.errors import SettingError
from scorers.lm import parse_spec
from scorers.lm.preflight import check_evaluation_lm
from scorers.registry import Metric, get_metric, metric_spec, resolve_metric_names

__all__ = ["ScoringPlan", "per_metric_options"]


def per_metric_options(
    scorer_options: Mapping[str, Mapping[str, Any]] | None, wanted: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """``scorer_options`` keyed by registered metric name (aliases resolved); an entry for a
    metric that is not among ``wanted`` is a :class:`SettingError`."""
    if scorer_options is not None and not isinstance(scorer_options, Mapping):
        raise SettingError(
            f"scorer_options must map metric names to their options, got {scorer_options!r}"
        )
    out: dict[str, dict[str, Any]] = {}
    for key, value in (scorer_options or {}).items():
        if value is not None and not isinstance(value, Mapping):
            raise SettingError(f"scorer_options {key}: options must be a mapping, got {value!r}")
        out[metric_spec(key).name] = dict(value or {})
    stray = sorted(set(out) - set(wanted))
    if stray:
        raise SettingError(
            f"scorer_options for {', '.join(stray)}, which are not among the scorers "
            f"({', '.join(wanted)})"
        )
    return out


@dataclass(frozen=True)
class ScoringPlan:
    """The metrics of a run by name (in the order asked), each built once, and the evaluation
    LM (spec and backend options) they score with."""

    metrics: Mapping[str, Metric]
    evaluation_lm: str = "embedded"
    evaluation_lm_options: Mapping[str, Any] = field(default_factory=dict)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """The options each metric was built with (task options it takes, then its own entry)."""

    @classmethod
    def build(
        cls,
        scorers: str | Sequence[str],
        *,
        evaluation_lm: str = "embedded",
        evaluation_lm_options: Mapping[str, Any] | None = None,
        scorer_options: Mapping[str, Mapping[str, Any]] | None = None,
        task_options: Mapping[str, Any] | None = None,
    ) -> ScoringPlan:
        """Resolve ``scorers`` (names or aliases, comma-separated or a list) and build each
        metric with the ``task_options`` it takes (``dataset_summaries`` goes to the families
        that read dataset summaries) and its ``scorer_options`` entry.

        Raises:
            SettingError: an unknown scorer name (with the nearest registered one), an option a
                metric does not have, or a ``scorer_options`` entry for a metric not asked for.
        """
        if evaluation_lm_options is not None and not isinstance(evaluation_lm_options, Mapping):
            raise SettingError(
                f"scorer_lm_args must be a mapping of backend options, got "
                f"{evaluation_lm_options!r}"
            )
        wanted = resolve_metric_names(scorers)
        own = per_metric_options(scorer_options, wanted)
        options: dict[str, dict[str, Any]] = {}
        metrics: dict[str, Metric] = {}
        for name in wanted:
            defaults = metric_spec(name).defaults
            chosen = {k: v for k, v in (task_options or {}).items() if k in defaults}
            chosen.update(own.get(name, {}))
            options[name] = chosen
            metrics[name] = get_metric(name, **chosen)
        return cls(
            metrics=metrics,
            evaluation_lm=evaluation_lm,
            evaluation_lm_options=dict(evaluation_lm_options or {}),
            options=options,
        )

    @property
    def names(self) -> list[str]:
        return list(self.metrics)

    def uses_evaluation_lm(self, bound_roles: Iterable[str] = ()) -> bool:
        """Whether a metric scores with the evaluation LM's log-probabilities, or generates with
        a model role that is not bound (an unbound role falls back to the evaluation LM)."""
        bound = set(bound_roles)
        for metric in self.metrics.values():
            if "logprobs" in metric.needs:
                return True
            if "generator" in metric.needs and not set(metric.spec.roles) <= bound:
                return True
        return False

    def check(self, *, bound_roles: Iterable[str] = ()) -> None:
        """Everything the run's settings name that can be checked without scoring: the
        evaluation LM's spec, the evaluation LM itself when a metric uses it
        (:func:`~scorers.lm.preflight.check_evaluation_lm`), and what each metric's options name
        (:meth:`~scorers.registry.Metric.check_settings`).

        Raises:
            SettingError: the first setting found wrong, in one line.
        """
        parse_spec(self.evaluation_lm)  # a misspelled spec is wrong whether or not it is used
        if self.uses_evaluation_lm(bound_roles):
            check_evaluation_lm(self.evaluation_lm, self.evaluation_lm_options)
        for metric in self.metrics.values():
            metric.check_settings()
