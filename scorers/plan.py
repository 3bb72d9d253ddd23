"""A run's scoring plan: the metrics a task asked for, built once with their options, the
evaluation LM they score with, and what they need of the data, answered before any sample is
generated.

A harness builds the plan when it sets a run up (every Inspect task does, and the
lm-evaluation-harness task), then calls :meth:`ScoringPlan.check`: a misspelled scorer name, an
option a metric lacks, an evaluation LM that cannot be found or a server that does not answer
stop the run there, with one line, instead of after the model under test has written its
reviews. The plan then says what the run draws and refuses: the negative references per input
(:meth:`ScoringPlan.negatives`), a dataset that cannot serve a metric at all
(:meth:`ScoringPlan.refuse_unservable`), a metric outside the data's domain
(:meth:`ScoringPlan.refuse_out_of_domain`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scorers.data.negatives import DEFAULT_NEGATIVES
from scorers.data.records import PaperRecord, RecordError
from scorers.errors import SettingError
from scorers.lm import parse_spec
from scorers.lm.preflight import check_evaluation_lm
from scorers.registry import (
    Metric,
    get_metric,
    metric_spec,
    refuse_out_of_domain,
    resolve_metric_names,
)
from scorers.scales import HOW_TO_GIVE, UNKNOWN
from scorers.types import abstract_problem

if TYPE_CHECKING:
    from scorers.data.task_data import TaskData

__all__ = ["ScoringPlan", "built_metric", "per_metric_options"]


_BUILT: dict[tuple[str, str], Metric] = {}


def _key(name: str, options: Mapping[str, Any]) -> tuple[str, str]:
    return name, json.dumps(options, sort_keys=True, default=repr)


def built_metric(name: str, **options: Any) -> Metric:
    """The metric ``name`` with ``options``: the one a plan built with them, else a new one (a
    scorer made outside a plan, such as ``inspect score --scorer gem_tasks/gem``). So a task's
    metrics are each built once, by its plan, however many harness objects wrap them."""
    name = metric_spec(name).name
    found = _BUILT.get(_key(name, options))
    return found if found is not None else get_metric(name, **options)


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
            _BUILT[_key(name, chosen)] = metrics[name]
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

    def negatives(self, requested: int | None) -> int:
        """Negative references per input: ``requested`` when given, else the default (4) when a
        metric scores against negatives (:attr:`scorers.registry.Metric.needs_negatives`: the
        f-variational cells, TV direct with ``tv_direct_form=product``), else none.

        Raises:
            SettingError: a negative number, or 0 while such a metric is asked for (every
                sample would be unscored).
        """
        needing = [name for name, metric in self.metrics.items() if metric.needs_negatives]
        if requested is None:
            return DEFAULT_NEGATIVES if needing else 0
        if requested < 0:
            raise SettingError(f"negatives must be 0 or more, got {requested}")
        if requested == 0 and needing:
            raise SettingError(
                f"negatives=0, but {', '.join(needing)} score(s) against negative references "
                f"(reviews of other papers): leave negatives unset for the default "
                f"({DEFAULT_NEGATIVES}) or give a number"
            )
        return requested

    def refuse_data(self, data: TaskData) -> None:
        """Refuse, before any sample exists, a task's ``data`` that some metric of the plan
        cannot score: another domain (:meth:`refuse_out_of_domain`) or no record with what the
        metric needs (:meth:`refuse_unservable`)."""
        self.refuse_out_of_domain(data.domain, where=data.source)
        self.refuse_unservable(data.records, where=data.source, identity=data.identity)

    def refuse_out_of_domain(self, domain: str, *, where: str) -> None:
        """A :class:`~scorers.errors.MetricError` naming every metric that does not apply to
        ``domain`` (:func:`scorers.registry.refuse_out_of_domain`)."""
        refuse_out_of_domain(self.names, domain, where=where)

    def refuse_unservable(
        self,
        records: Sequence[PaperRecord],
        *,
        where: str,
        identity: Mapping[str, Any] | None = None,
    ) -> None:
        """Refuse, up front, a dataset in which no record has what a metric needs, naming the
        metric: an abstract (GEM-S, GSPPM, the Auto-PRE panel; an empty abstract or a
        placeholder such as "Not available" is none), the paper's text or abstract (summary
        coverage, question score, LMExaminer), the text or a stored ASSW (GEM-S (ASSW)), the
        venue's decision (the decision metrics), ratings on a known scale. Records that lack it
        in a dataset where others have it are scored as usual: the metric leaves them unscored
        with the reason.

        ``identity`` (the dataset's, :func:`scorers.data.records.dataset_identity`) goes to every
        metric tied to one dataset (:meth:`scorers.registry.Metric.check_dataset`).

        Raises:
            RecordError: no record of ``records`` can be scored by some metric of the plan.
            SettingError: a metric refuses the dataset (a panel qualified on another one).
        """
        for metric in self.metrics.values():
            metric.check_dataset(identity)
        unmet = _needs_unmet(records)
        problems = []
        for need, (failing, (one, several), rest) in unmet.items():
            names = [name for name, metric in self.metrics.items() if need in metric.needs]
            if failing and names:
                verb = one if len(names) == 1 else several
                problems.append(f"{', '.join(names)} {verb} {rest}")
        if problems:
            raise RecordError(f"{where}: " + "; ".join(problems))


def _needs_unmet(
    records: Sequence[PaperRecord],
) -> dict[str, tuple[bool, tuple[str, str], str]]:
    """Per need a metric may declare (``Metric.needs``): whether no record of ``records`` meets
    it, the verb of the sentence that says so (one metric, several) and the rest of the
    sentence."""
    n = len(records)
    with_abstract = sum(abstract_problem(r.abstract) is None for r in records)
    with_text = sum(bool((r.paper_text or "").strip()) for r in records)
    with_content = sum(
        bool((r.paper_text or "").strip()) or abstract_problem(r.abstract) is None for r in records
    )
    with_text_or_assw = sum(
        bool((r.paper_text or "").strip() or (r.assw or "").strip()) for r in records
    )
    with_decision = sum(r.decision is not None for r in records)
    venues = sorted({repr(r.venue or "") for r in records if r.rating_scale == UNKNOWN})
    unscaled = (
        f"{len(venues)} venues ({', '.join(venues[:3])}, ...)"
        if len(venues) > 3
        else (f"venue {', '.join(venues)}" if venues else "")
    )
    return {
        "rating_scale": (
            bool(unscaled),
            ("reads", "read"),
            f"ratings on the venue's scale, and the scale of {unscaled} is not known: "
            f"{HOW_TO_GIVE}",
        ),
        "decision": (
            not with_decision,
            ("scores", "score"),
            f"a verdict against the venue's accept/reject decision, and none of the {n} "
            "papers has one (join a decisions file: gem-tasks data convert --decisions)",
        ),
        "abstract": (
            not with_abstract,
            ("needs", "need"),
            f"the papers' abstracts, and none of the {n} papers has one (an empty "
            "abstract, or a placeholder such as 'Not available', is none)",
        ),
        "paper_content": (
            not with_content,
            ("reads", "read"),
            f"a review against the paper's text or abstract, and none of the {n} papers has either",
        ),
        "paper_text": (
            not with_text_or_assw,
            ("needs", "need"),
            f"the papers' full text (or a stored ASSW summary), and none of the {n} "
            f"papers has either ({with_text} with text)",
        ),
    }
