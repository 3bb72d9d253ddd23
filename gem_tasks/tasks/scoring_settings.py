"""The scoring settings every scored task takes, declared once.

A task function decorated with :func:`scoring_parameters` declares only its own parameters and
a keyword-only ``scoring: ScoringSettings``; the decorator gives the task the shared parameters
(``scorers``, ``scorer_lm``, ``scorer_lm_args``, ``scorer_options``, ``dataset_summaries``,
``cache_dir``, ``negatives``) in its signature, so ``-T`` reaches them and the log records them,
documents them in its docstring, and hands them to the function as one
:class:`ScoringSettings`. The settings build the task's scoring plan
(:func:`gem_tasks.scoring.adapter.task_plan`) and its Inspect scorers.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from inspect_ai.scorer import Scorer

from gem_tasks.scoring.adapter import make_scorers, task_plan
from scorers.data.task_data import TaskData
from scorers.plan import ScoringPlan

__all__ = ["SHARED_PARAMETERS", "ScoringSettings", "scoring_parameters"]

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ScoringSettings:
    """How a task's answers are scored: the task parameters every scored task shares."""

    scorers: str | list[str]
    scorer_lm: str = "embedded"
    scorer_lm_args: dict[str, Any] | None = None
    scorer_options: dict[str, dict[str, Any]] | None = None
    dataset_summaries: bool = False
    cache_dir: str | None = None
    negatives: int | None = None
    task_options: tuple[str, ...] = field(default=("dataset_summaries",), repr=False)
    """The settings that are task options routed to the metrics that take them (the task's
    own parameters among ``dataset_summaries``)."""

    def plan(self, data: TaskData) -> ScoringPlan:
        """The task's scoring plan over ``data``, checked before any sample exists."""
        return task_plan(
            self.scorers,
            scorer_lm=self.scorer_lm,
            scorer_lm_args=self.scorer_lm_args,
            scorer_options=self.scorer_options,
            data=data,
            **{name: getattr(self, name) for name in self.task_options},
        )

    def prepare(
        self, source: str | Path, *, domains: frozenset[str] | None = None
    ) -> tuple[TaskData, ScoringPlan]:
        """The task's data (:meth:`TaskData.load`) and its scoring plan over it, checked
        before any sample exists; the data carries the negatives the plan resolved."""
        data = TaskData.load(source, domains=domains)
        plan = self.plan(data)
        return data.with_negatives(plan.negatives(self.negatives)), plan

    def inspect_scorers(
        self, plan: ScoringPlan, factories: dict[str, Callable[..., Scorer]] | None = None
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

_DEFAULTS = {f.name: f.default for f in fields(ScoringSettings) if f.name in SHARED_PARAMETERS}


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
            scoring = ScoringSettings(
                **settings, task_options=tuple(n for n in ("dataset_summaries",) if n in shared)
            )
            return func(**bound.arguments, scoring=scoring)

        wrapper.__signature__ = exposed  # type: ignore[attr-defined]
        wrapper.__doc__ = _documented(func.__doc__, shared)
        return wrapper  # type: ignore[return-value]

    return decorate
