"""The one adapter: every metric of the core registry as an Inspect scorer ``gem_tasks/<name>``.

The scorer is only I/O: the sample becomes an :class:`~scorers.types.Item`
(:mod:`gem_tasks.scoring.items`), bound model roles become text generators
(:mod:`gem_tasks.scoring.roles`), the core scores, and the :class:`~scorers.types.Result` becomes
a :class:`~inspect_ai.scorer.Score` with the result's metadata (terms, details, signature).

Every scorer takes ``scorer_lm`` (evaluation-LM spec), ``scorer_lm_args`` (backend options),
``cache_dir`` and the metric's own options (e.g. ``dataset_summaries``); an option the metric
does not have is an error naming the ones it has.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from inspect_ai.model import get_model
from inspect_ai.scorer import (
    Metric as InspectMetric,
)
from inspect_ai.scorer import (
    SampleScore,
    Score,
    Scorer,
    Target,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState

from gem_tasks.scoring.items import item_from_state
from gem_tasks.scoring.metrics import at_token_limit, ci90_lower, ci90_upper
from gem_tasks.scoring.roles import model_generator, role_generators
from scorers.errors import EvaluationLMError, UnknownMetricError
from scorers.metrics.autopre.panel import register_qualification_reader
from scorers.plan import ScoringPlan, built_metric
from scorers.registries import Registry
from scorers.registry import ALL_NAMES_HINT, Metric, MetricSpec, list_metrics, metric_spec
from scorers.registry import resolve_metric_names as parse_scorer_names
from scorers.resources import Resources
from scorers.types import Result

__all__ = [
    "METRICS",
    "SCORERS",
    "make_scorers",
    "item_mean_metric",
    "metric_scorer",
    "parse_scorer_names",
    "resources_for",
    "scorer_metrics",
    "to_score",
]

METRICS = [mean(), stderr(), ci90_lower(), ci90_upper(), at_token_limit()]
"""The Inspect metrics of a metric whose headline is the mean of its per-item values."""


def _exam_log_qualification(path: Path) -> dict[str, Any] | None:
    """The qualification of an ``autopre_exam`` Inspect log (None for any other file): so
    ``scorer_options={autopre_panel: {qualification: <exam log>}}`` works."""
    from gem_tasks.analysis.autopre import is_exam_log, qualification_from_log

    return qualification_from_log(path) if is_exam_log(path) else None


register_qualification_reader("autopre_exam log", _exam_log_qualification)
_CORPUS_METRICS: dict[str, Callable[[], InspectMetric]] = {}


def corpus_metric(key: str, function: Callable[[list[dict[str, Any]]], float]) -> InspectMetric:
    """The Inspect metric ``gem_tasks/<key>`` computing a family's corpus-level number from the
    scored samples' metadata (registered once per name)."""
    if key not in _CORPUS_METRICS:

        def factory() -> InspectMetric:
            def compute(scores: list[SampleScore]) -> float:
                return function([dict(s.score.metadata or {}) for s in scores])

            return compute

        factory.__name__ = key
        _CORPUS_METRICS[key] = metric(name=key)(factory)
    return _CORPUS_METRICS[key]()


def item_mean_metric(key: str) -> InspectMetric:
    """The Inspect metric ``gem_tasks/<key>``: the mean of the scored samples' values, reported
    under a name that says what it is where it is a diagnostic beside a corpus headline (the
    mean stated rating beside a rating AUC)."""
    if key not in _CORPUS_METRICS:

        def factory() -> InspectMetric:
            def compute(scores: list[SampleScore]) -> float:
                values = [float(s.score.as_float()) for s in scores]
                return sum(values) / len(values) if values else math.nan

            return compute

        factory.__name__ = key
        _CORPUS_METRICS[key] = metric(name=key)(factory)
    return _CORPUS_METRICS[key]()


def scorer_metrics(spec: MetricSpec) -> list[InspectMetric]:
    """The Inspect metrics reported for ``spec``, its headline first under its own name: the
    mean with its standard error and 90% interval for a per-item mean (Wilson's for a
    proportion), else the corpus
    statistic with its bootstrap 95% interval (``<name>_ci95_lower``/``_upper``) and, where the
    family names it, the per-item mean as a diagnostic; then the count of samples resting on a
    generation cut at its token limit and the family's further corpus numbers."""
    extra = [corpus_metric(k, f) for k, f in spec.corpus.items()]
    headline = spec.headline
    if headline is None and spec.proportion:  # a rate: Wilson's interval, inside [0, 1]
        interval = [ci90_lower(proportion=True), ci90_upper(proportion=True)]
        return [mean(), stderr(), *interval, at_token_limit(), *extra]
    if headline is None:
        return [*METRICS, *extra]
    out = [
        corpus_metric(headline.name, headline.value),
        corpus_metric(f"{headline.name}_ci95_lower", lambda rows: headline.interval(rows)[0]),
        corpus_metric(f"{headline.name}_ci95_upper", lambda rows: headline.interval(rows)[1]),
    ]
    if headline.item_mean:
        out.append(item_mean_metric(headline.item_mean))
    return [*out, at_token_limit(), *extra]


def resources_for(
    metric: Metric, scorer_lm: str, scorer_lm_args: dict[str, Any] | None, cache_dir: str | None
) -> Resources:
    resources = Resources(
        evaluation_lm=scorer_lm, evaluation_lm_options=scorer_lm_args, cache_dir=cache_dir
    )
    resources.generators = role_generators(metric.spec.roles, resources.cache)
    for name in metric.models():  # models the metric names (a qualified Auto-PRE panel's)
        resources.bind_model(name, model_generator(get_model(name), resources.cache, what=name))
    return resources


def to_score(result: Result, answer: str) -> Score:
    """A result as an Inspect score (unscored: NaN with its reason, excluded from metrics)."""
    if result.value is None:
        return Score.unscored(
            reason="scoring_failed", explanation=result.explanation, metadata=result.metadata()
        )
    return Score(
        value=result.value,
        answer=answer,
        explanation=result.explanation,
        metadata=result.metadata(),
    )


async def score_with(
    metric: Metric, state: TaskState, resources: Resources, *, candidate: str | None = None
) -> tuple[Result, str]:
    """The core's result for ``state`` (its output, or ``candidate`` in its place)."""
    item = item_from_state(state, candidate=candidate)
    try:
        return await metric.ascore(item, resources), item.candidate
    except EvaluationLMError as exc:
        raise EvaluationLMError(f"{metric.name}, sample {state.sample_id!r}: {exc}") from exc


def metric_scorer(
    name: str,
    *,
    scorer_lm: str = "embedded",
    scorer_lm_args: dict[str, Any] | None = None,
    cache_dir: str | None = None,
    **options: Any,
) -> Scorer:
    """The Inspect scorer of core metric ``name`` built with ``options``."""
    metric = built_metric(name, **options)

    async def score(state: TaskState, target: Target) -> Score:
        resources = resources_for(metric, scorer_lm, scorer_lm_args, cache_dir)
        result, answer = await score_with(metric, state, resources)
        return to_score(result, answer)

    return score


def register_scorers(
    build: Callable[..., Scorer],
    *,
    suffix: str,
    doc: str,
    metrics: list[Any] | None = None,
) -> Registry[Callable[..., Scorer]]:
    """An Inspect scorer ``gem_tasks/<name><suffix>`` for every registered metric, each a
    factory taking ``scorer_lm``, ``scorer_lm_args``, ``cache_dir`` and the metric's options
    and calling ``build(name, ...)``; ``doc`` is formatted with the metric's spec. The scorer
    reports ``metrics``, by default the metric's own (:func:`scorer_metrics`: its headline
    first)."""

    def register(name: str) -> Callable[..., Scorer]:
        spec = metric_spec(name)

        def factory(
            scorer_lm: str = "embedded",
            scorer_lm_args: dict[str, Any] | None = None,
            cache_dir: str | None = None,
            **options: Any,
        ) -> Scorer:
            return build(
                name,
                scorer_lm=scorer_lm,
                scorer_lm_args=scorer_lm_args,
                cache_dir=cache_dir,
                **options,
            )

        factory.__name__ = f"{name}{suffix}"
        factory.__doc__ = doc.format(spec=spec, options=", ".join(sorted(spec.defaults)) or "none")
        own = scorer_metrics(spec) if metrics is None else list(metrics)
        return scorer(metrics=own, name=f"{name}{suffix}")(factory)

    factories: Registry[Callable[..., Scorer]] = Registry(
        f"{suffix.strip('_')} scorer".lstrip(), error=UnknownMetricError, hint=ALL_NAMES_HINT,
        list_known=False,
    )  # fmt: skip
    for spec in list_metrics():
        factories.register(spec.name, register(spec.name), aliases=spec.aliases)
    return factories


SCORERS = register_scorers(
    metric_scorer,
    suffix="",
    doc="{spec.display_name}: {spec.description} ({spec.source}).\n\nOptions: {options} "
    "(defaults {spec.defaults}), plus scorer_lm, scorer_lm_args and cache_dir.",
)
"""Every core metric's Inspect scorer factory, by name (registered as ``gem_tasks/<name>``)."""


def make_scorers(
    plan: ScoringPlan,
    *,
    cache_dir: str | None,
    factories: Mapping[str, Callable[..., Scorer]] | None = None,
) -> list[Scorer]:
    """The Inspect scorers of a task's ``plan``: each metric's registered factory
    (``gem_tasks/<name>``, or ``factories``' such as the paired ones) with the options the plan
    built it with, so that the log says how to rebuild it; the factory takes the plan's metric
    (:func:`scorers.plan.built_metric`), which is not built again."""
    factories = factories or SCORERS
    return [
        factories[name](
            scorer_lm=plan.evaluation_lm,
            scorer_lm_args=dict(plan.evaluation_lm_options) or None,
            cache_dir=cache_dir,
            **options,
        )
        for name, options in plan.options.items()
    ]
