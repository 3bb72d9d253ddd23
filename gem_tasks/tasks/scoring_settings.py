"""The scoring settings every scored task takes, declared once.

A task function decorated with :func:`scoring_parameters` declares only its own parameters and
a keyword-only ``scoring: TaskScoring``; the decorator gives the task the shared parameters
(``scorers``, ``scorer_lm``, ``scorer_lm_args``, ``scorer_options``, ``dataset_summaries``,
``cache_dir``, ``negatives``) in its signature, so ``-T`` reaches them and the log records them,
documents them in its docstring, and hands them to the function as one :class:`TaskScoring`: the
core :class:`scorers.settings.ScoringSettings` (the same settings the lm-evaluation-harness task
takes) with what an Inspect task adds: the model roles bound in the eval, the Inspect models a
metric's options name, and the task's Inspect scorers.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from inspect_ai.model import model_roles
from inspect_ai.scorer import Scorer

from gem_tasks.scoring.adapter import make_scorers
from gem_tasks.scoring.roles import named_model
from scorers.data.records import RecordError
from scorers.data.task_data import DomainNotTaken, TaskData
from scorers.plan import ScoringPlan
from scorers.settings import ScoringSettings

__all__ = ["SHARED_PARAMETERS", "TaskScoring", "scoring_parameters"]

F = TypeVar("F", bound=Callable[..., Any])

EVERY_DOMAIN = "gem_tasks/judgments and gem_tasks/robustness take data of every domain"
"""Where data of a domain a task does not take can be scored instead."""


class TaskScoring(ScoringSettings):
    """A scored Inspect task's :class:`~scorers.settings.ScoringSettings`."""

    def plan(
        self, *, bound_roles: Iterable[str] | None = None, checked: bool = True
    ) -> ScoringPlan:
        """The task's scoring plan, checked before any sample exists: the core checks with the
        model roles bound in this eval (default), and every Inspect model a metric's options
        name resolvable; ``checked`` false: a plan rebuilt from settings already checked."""
        roles = model_roles() if bound_roles is None else bound_roles
        plan = super().plan(bound_roles=roles, checked=checked)
        if not checked:
            return plan
        for built in plan.metrics.values():
            for model_name in built.models():
                named_model(model_name, what=f"{built.name}'s model")
        return plan

    def load(
        self, source: str | Path, plan: ScoringPlan, *, domains: frozenset[str] | None = None
    ) -> TaskData:
        """The core :meth:`~scorers.settings.ScoringSettings.load`; data of a domain the task
        does not take is refused with where it can be scored."""
        try:
            return super().load(source, plan, domains=domains)
        except DomainNotTaken as error:
            raise RecordError(f"{error} ({EVERY_DOMAIN})") from error

    def prepare(
        self, source: str | Path, *, domains: frozenset[str] | None = None
    ) -> tuple[TaskData, ScoringPlan]:
        """The task's plan (:meth:`plan`) and its data loaded against it (:meth:`load`)."""
        plan = self.plan()
        return self.load(source, plan, domains=domains), plan

    def inspect_scorers(
        self, plan: ScoringPlan, factories: Mapping[str, Callable[..., Scorer]] | None = None
    ) -> list[Scorer]:
        """The Inspect scorers of ``plan`` with this task's cache folder."""
        return make_scorers(plan, cache_dir=self.cache_dir, factories=factories)


SHARED_PARAMETERS: dict[str, tuple[Any, str]] = {
    "scorers": (
        str | list[str],
        "comma-separated names of registered metrics (``gem-tasks metrics`` lists them with the "
        "domains they apply to; a metric that does not apply to the data is refused).",
    ),
    "scorer_lm": (
        str,
        "evaluation-LM spec: ``embedded`` (SmolLM2-135M, CPU, offline), ``hf/<model>`` or "
        "``vllm/<model>``.",
    ),
    "scorer_lm_args": (
        dict[str, Any] | None,
        'backend options: ``{base_url: "http://host:8000/v1"}`` (or a list of URLs) to score '
        "through running ``vllm serve`` instances; vLLM engine arguments (``dtype``, "
        "``max_model_len``, ``gpu_memory_utilization``, ``tensor_parallel_size``, "
        "``data_parallel_size``, ``quantization``); ``dtype``/``device`` for ``hf``.",
    ),
    "scorer_options": (
        dict[str, dict[str, Any]] | None,
        "per-metric options, e.g. ``{lm_examiner: {max_tokens: 512}}`` or ``{bertscore: "
        "{model: dunzhang/stella_en_400M_v5}}``.",
    ),
    "dataset_summaries": (
        bool,
        "use the judgment summaries (statement rewrites) stored with the references instead of "
        "preprocessing them.",
    ),
    "cache_dir": (str | None, "folder of the on-disk score cache."),
    "negatives": (
        int | None,
        "texts of other inputs per input (negative references), drawn with ``seed`` and the "
        "same for every model; default 4 when a requested metric needs them (the f-variational "
        "cells, TV direct with ``tv_direct_form: product``), else none. Fewer other inputs "
        "than that is an error, and so is 0 with such a metric.",
    ),
}
"""Each shared parameter's annotation and the line its task's docstring gives it."""

_DEFAULTS = {f.name: f.default for f in fields(ScoringSettings)} | {"dataset_summaries": False}
"""A task's defaults: the core settings' (a task that has ``dataset_summaries`` defaults it to
false)."""


def _documented(doc: str | None, names: Sequence[str]) -> str:
    """``doc`` (a Google-style docstring whose last section is ``Args:``) with an entry for
    each of ``names`` it does not document itself."""
    text = inspect.cleandoc(doc or "")
    if "\nArgs:\n" not in f"\n{text}\n":
        raise ValueError("a scored task's docstring needs an Args: section, its last")
    own = {line.split(":")[0].strip() for line in text.split("\nArgs:\n", 1)[-1].splitlines()}
    added = [
        textwrap.fill(
            f"{name}: {SHARED_PARAMETERS[name][1]}",
            width=96,
            initial_indent="    ",
            subsequent_indent="        ",
        )
        for name in names
        if not any(name in entry.replace(" ", "").split(",") for entry in own)
    ]
    return "\n".join([text, *added])


def scoring_parameters(*, scorers: str, without: Sequence[str] = ()) -> Callable[[F], F]:
    """The task function decorated takes the shared scoring parameters (default metric list
    ``scorers``; those named in ``without`` are not the task's) and receives them as its
    keyword-only ``scoring`` argument (see the module's docstring)."""
    for name in without:
        if name not in SHARED_PARAMETERS or name == "scorers":
            raise ValueError(f"{name!r} is not a shared scoring parameter a task can go without")
    shared = [name for name in SHARED_PARAMETERS if name not in without]
    defaults = {**_DEFAULTS, "scorers": scorers}

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        own = [p for name, p in signature.parameters.items() if name != "scoring"]
        if "scoring" not in signature.parameters or any(n in signature.parameters for n in shared):
            raise TypeError(
                f"{func.__name__} must take a keyword-only 'scoring' and none of {shared}"
            )
        exposed = signature.replace(
            parameters=[
                *own,
                *(
                    inspect.Parameter(
                        name,
                        inspect.Parameter.KEYWORD_ONLY,
                        default=defaults[name],
                        annotation=SHARED_PARAMETERS[name][0],
                    )
                    for name in shared
                ),
            ]
        )

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = exposed.bind(*args, **kwargs)
            settings = {n: bound.arguments.pop(n, defaults[n]) for n in shared}
            return func(**bound.arguments, scoring=TaskScoring(**settings))

        wrapper.__signature__ = exposed  # type: ignore[attr-defined]
        wrapper.__doc__ = _documented(func.__doc__, shared)
        return wrapper  # type: ignore[return-value]

    return decorate
