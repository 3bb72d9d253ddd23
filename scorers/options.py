"""Typed metric options: each family states its options as one frozen dataclass.

A family's options are the fields of a :class:`MetricOptions` subclass, each made with
:func:`option` (its default, one line saying what it does, and a lower bound where a number
has one)::

    @dataclass(frozen=True)
    class BartScoreOptions(MetricOptions):
        normalisation: Literal["sum", "mean"] = option("sum", "summed nats or nats per token")

The metric's spec names the class (:attr:`scorers.registry.MetricSpec.options`); building a
metric builds its options with :meth:`MetricOptions.build`, so an unknown name (with the valid
ones), a value of the wrong type, a value outside a ``Literal`` or below its minimum is a
:class:`~scorers.errors.MetricError` before any work, in every harness. The docs' metric table is
generated from the same fields (:func:`describe_options`), as Inspect's scorers and sacrebleu's
metrics type every keyword they take.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, Literal, Union, get_args, get_origin

from scorers.errors import MetricError, did_you_mean

__all__ = [
    "MetricOptions",
    "NoOptions",
    "SummariesOptions",
    "OptionDoc",
    "describe_options",
    "option",
]


def option(default: Any, doc: str, *, minimum: float | None = None) -> Any:
    """A field of a :class:`MetricOptions` class: its ``default``, the line the docs print
    (``doc``) and, for a number, the smallest value it takes (``minimum``)."""
    if not doc.strip():
        raise MetricError("an option says what it does (doc)")
    if isinstance(default, (list, dict, set)):
        raise MetricError("an option's default is immutable (a tuple, not a list)")
    return dataclasses.field(default=default, metadata={"doc": doc, "minimum": minimum})


@dataclass(frozen=True)
class OptionDoc:
    """One option as the docs show it."""

    name: str
    type: str
    default: Any
    doc: str
    minimum: float | None = None


@dataclass(frozen=True)
class MetricOptions:
    """Base of a family's options: a frozen dataclass whose fields are made with
    :func:`option`. Values are checked against the fields' types when built; an ``int`` given
    for a ``float`` option becomes a float (``alpha=1`` and ``alpha=1.0`` are one setting)."""

    def __post_init__(self) -> None:
        hints = _type_hints(type(self))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            hint = hints[field.name]
            if not _matches(value, hint):
                raise MetricError(
                    f"option {field.name!r} must be {_type_name(hint)}, got {value!r}"
                )
            if _is_float(hint) and isinstance(value, int) and not isinstance(value, bool):
                object.__setattr__(self, field.name, float(value))
            if isinstance(value, list):  # a list from YAML or JSON, for a tuple option
                object.__setattr__(self, field.name, tuple(value))
            minimum = field.metadata.get("minimum")
            if minimum is not None and isinstance(value, (int, float)) and value < minimum:
                raise MetricError(
                    f"option {field.name!r} must be at least {minimum:g}, got {value}"
                )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        taken = sorted(set(cls.__dict__.get("__annotations__", {})) & _RESERVED)
        if taken:
            raise MetricError(f"options {cls.__name__}: {taken} name the class's own methods")

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The options' names, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def option_defaults(cls) -> dict[str, Any]:
        """Every option's default."""
        return {f.name: f.default for f in dataclasses.fields(cls)}

    @classmethod
    def build(cls, metric: str, given: Mapping[str, Any]) -> MetricOptions:
        """The options of ``metric`` from the caller's ``given`` values over the defaults; an
        unknown name or a bad value is a :class:`~scorers.errors.MetricError` naming the metric
        (and, for a name, the valid ones)."""
        names = cls.option_names()
        unknown = [k for k in given if k not in names]
        if unknown:
            valid = ", ".join(names) if names else "none"
            hint = did_you_mean(unknown[0], list(names)) if names else ""
            raise MetricError(
                f"metric {metric!r} has no option {unknown[0]!r}{hint}; its options: {valid}"
            )
        try:
            return cls(**dict(given))
        except MetricError as exc:
            raise MetricError(f"metric {metric!r}: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        """The options as a plain mapping (what signatures and logs record)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.option_names()


_RESERVED = frozenset({"option_names", "option_defaults", "build", "as_dict"})


@dataclass(frozen=True)
class NoOptions(MetricOptions):
    """A metric that takes no options."""


DATASET_SUMMARIES_DOC = (
    "use the dataset's own judgment summaries of the reviews where it has them, instead of "
    "rewriting them"
)
"""What the ``dataset_summaries`` option does, in every family that rewrites reviews."""


@dataclass(frozen=True)
class SummariesOptions(MetricOptions):
    """The option of every metric that rewrites reviews into judgments (GEM, GPPM, the
    Scoring Rules cells): whether stored judgment summaries stand in for the rewrites."""

    dataset_summaries: bool = option(False, DATASET_SUMMARIES_DOC)


def describe_options(options: type[MetricOptions]) -> list[OptionDoc]:
    """The documentation of every option of ``options``, in declaration order."""
    hints = _type_hints(options)
    return [
        OptionDoc(
            name=f.name,
            type=_type_name(hints[f.name]),
            default=f.default,
            doc=f.metadata.get("doc", ""),
            minimum=f.metadata.get("minimum"),
        )
        for f in dataclasses.fields(options)
    ]


def _type_hints(cls: type) -> dict[str, Any]:
    cached = cls.__dict__.get("_resolved_hints")
    if cached is None:
        try:
            cached = typing.get_type_hints(cls)
        except NameError as exc:  # a string annotation its module cannot resolve
            raise MetricError(
                f"options {cls.__name__}: cannot resolve a field's type ({exc})"
            ) from None
        type.__setattr__(cls, "_resolved_hints", cached)
    return cached


def _is_float(hint: Any) -> bool:
    return hint is float or (_is_union(hint) and float in get_args(hint))


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` is of the (simple) type ``hint``: a class, ``Literal``, a union with
    ``None``, ``tuple[X, ...]`` and ``Mapping[K, V]``, as options use them."""
    if hint is Any:
        return True
    if hint is type(None) or hint is None:
        return value is None
    origin = get_origin(hint)
    if origin is Literal:
        return any(value == choice and type(value) is type(choice) for choice in get_args(hint))
    if _is_union(hint):
        return any(_matches(value, arg) for arg in get_args(hint))
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, (tuple, list)):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(_matches(v, a) for v, a in zip(value, args))
    if origin in (Mapping, dict, typing.Mapping):
        key, item = get_args(hint) or (Any, Any)
        return isinstance(value, Mapping) and all(
            _matches(k, key) and _matches(v, item) for k, v in value.items()
        )
    return isinstance(value, hint)


def _type_name(hint: Any) -> str:
    """How the docs and errors write a type: ``int``, ``'sum' or 'mean'``, ``str or None``."""
    if hint is type(None) or hint is None:
        return "None"
    origin = get_origin(hint)
    if origin is Literal:
        return " or ".join(repr(c) for c in get_args(hint))
    if _is_union(hint):
        return " or ".join(_type_name(a) for a in get_args(hint))
    if origin is tuple:
        args = get_args(hint)
        inner = _type_name(args[0]) if args else "any"
        return f"a list of {inner}"
    if origin in (Mapping, dict, typing.Mapping):
        key, item = get_args(hint) or (Any, Any)
        return f"a mapping of {_type_name(key)} to {_type_name(item)}"
    if hint is Any:
        return "any"
    if hint is PurePath or (isinstance(hint, type) and issubclass(hint, PurePath)):
        return "path"
    return getattr(hint, "__name__", str(hint))
