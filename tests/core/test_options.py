"""Typed metric options (scorers.options): each family's options are one frozen dataclass whose
fields check their values, and the docs' table is generated from the same fields."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from conftest import REPO
from scorers import list_metrics
from scorers.errors import MetricError
from scorers.options import MetricOptions, NoOptions, describe_options, option
from scorers.registry import MetricSpec


@dataclass(frozen=True)
class Example(MetricOptions):
    count: int = option(3, "how many", minimum=1)
    weight: float = option(0.5, "how much", minimum=0)
    strict: bool = option(False, "whether strictly")
    mode: Literal["a", "b"] = option("a", "which way")
    path: str | Path | None = option(None, "where from")
    names: tuple[str, ...] = option(("x",), "which ones")
    table: Mapping[str, float] | None = option(None, "by name")


def test_defaults_build_and_the_fields_read_back_typed():
    built = Example.build("m", {})
    assert built.as_dict() == {
        "count": 3, "weight": 0.5, "strict": False, "mode": "a", "path": None,
        "names": ("x",), "table": None,
    }  # fmt: skip
    assert Example.option_names() == ("count", "weight", "strict", "mode", "path", "names", "table")
    assert "count" in built and "counts" not in built
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.count = 4  # type: ignore[misc]


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"count": True}, "option 'count' must be int, got True"),
        ({"count": 2.0}, "option 'count' must be int, got 2.0"),
        ({"count": "3"}, "option 'count' must be int, got '3'"),
        ({"count": 0}, "option 'count' must be at least 1, got 0"),
        ({"weight": "high"}, "option 'weight' must be float, got 'high'"),
        ({"weight": -0.5}, "option 'weight' must be at least 0, got -0.5"),
        ({"strict": 1}, "option 'strict' must be bool, got 1"),
        ({"mode": "c"}, "option 'mode' must be 'a' or 'b', got 'c'"),
        ({"path": 3}, "option 'path' must be str or path or None, got 3"),
        ({"names": ["x", 2]}, "option 'names' must be a list of str"),
        ({"table": {"a": "heavy"}}, "option 'table' must be a mapping of str to float or None"),
    ],
)
def test_a_wrong_value_is_refused_naming_the_metric_and_the_option(given, message):
    with pytest.raises(MetricError) as caught:
        Example.build("my_metric", given)
    assert str(caught.value).startswith(f"metric 'my_metric': {message}"), str(caught.value)


def test_values_that_fit_are_normalised_to_one_spelling():
    built = Example.build("m", {"weight": 1, "names": ["y", "z"], "path": Path("/tmp/x")})
    assert built.weight == 1.0 and isinstance(built.weight, float)  # alpha=1 is alpha=1.0
    assert built.names == ("y", "z")  # a YAML list becomes the tuple the field declares
    assert Example.build("m", {"weight": 1}) == Example.build("m", {"weight": 1.0})


def test_an_unknown_name_is_refused_with_the_valid_names():
    with pytest.raises(MetricError) as caught:
        Example.build("my_metric", {"cuont": 2})
    assert str(caught.value) == (
        "metric 'my_metric' has no option 'cuont' (did you mean 'count'?); its options: count, "
        "weight, strict, mode, path, names, table"
    )
    with pytest.raises(MetricError, match="metric 'bleu' has no option 'n'; its options: none"):
        NoOptions.build("bleu", {"n": 4})


def test_an_option_may_not_take_the_name_of_a_method():
    with pytest.raises(MetricError, match=r"\['build'\] name the class's own methods"):

        @dataclass(frozen=True)
        class Clash(MetricOptions):
            build: bool = option(False, "shadows MetricOptions.build")


def test_an_option_says_what_it_does_and_has_an_immutable_default():
    with pytest.raises(MetricError, match="says what it does"):
        option(1, " ")
    with pytest.raises(MetricError, match="immutable"):
        option(["a"], "a list default would be shared")


def test_the_docs_description_comes_from_the_fields():
    described = {o.name: o for o in describe_options(Example)}
    assert list(described) == list(Example.option_names())
    assert (described["count"].type, described["count"].default) == ("int", 3)
    assert described["count"].minimum == 1 and described["count"].doc == "how many"
    assert described["mode"].type == "'a' or 'b'"
    assert described["path"].type == "str or path or None"
    assert described["names"].type == "a list of str"
    assert describe_options(NoOptions) == []


def test_a_spec_takes_an_options_dataclass_only():
    fields = dict(
        name="x", display_name="X", family="f", higher_is_better=True, needs=frozenset(),
        version=1, factory=lambda **o: None, empty_candidate="unscored",
    )  # fmt: skip
    assert MetricSpec(**fields, options=Example).defaults["count"] == 3
    with pytest.raises(MetricError, match="options must be a MetricOptions dataclass"):
        MetricSpec(**fields, options={"count": 3})  # type: ignore[arg-type]


def test_every_registered_metric_has_typed_documented_options_in_the_generated_table():
    table = (REPO / "docs" / "metrics" / "table.md").read_text()
    for spec in list_metrics():
        assert issubclass(spec.options, MetricOptions), spec.name
        assert spec.options.__dataclass_params__.frozen, spec.name  # type: ignore[attr-defined]
        built = spec.options.build(spec.name, {})
        assert built.as_dict() == spec.defaults
        for documented in describe_options(spec.options):
            assert documented.doc.strip(), (spec.name, documented.name)
            row = f"| `{documented.name}` | "
            assert row in table, f"docs/metrics/table.md lacks {spec.name}'s {documented.name}"
