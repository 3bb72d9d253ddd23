"""The one registry shape (:mod:`scorers.registries`) and the registries built on it."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from scorers.errors import MetricError, SettingError
from scorers.registries import Registry, UnknownNameError


@dataclass(frozen=True)
class Entry:
    name: str
    value: int


def small() -> Registry[Entry]:
    registry: Registry[Entry] = Registry("colour", hint="`colours` lists them")
    registry.register("red", Entry("red", 1), aliases=("rouge",))
    registry.register("green", Entry("green", 2))
    return registry


def test_names_aliases_and_order():
    registry = small()
    assert list(registry) == ["red", "green"] and len(registry) == 2
    assert registry.names(aliases=True) == ("red", "green", "rouge")
    assert registry["rouge"] is registry["red"] and registry["red"].value == 1
    assert registry.canonical("rouge") == "red" and registry.aliases_of("red") == ("rouge",)
    assert "rouge" in registry and "blue" not in registry and 3 not in registry
    assert registry.get("blue") is None and registry.get("rouge").value == 1
    assert [e.value for e in registry.values()] == [1, 2]
    assert dict(registry.items()) == {"red": Entry("red", 1), "green": Entry("green", 2)}


def test_an_unknown_name_is_one_message_with_the_nearest_and_the_hint():
    registry = small()
    with pytest.raises(UnknownNameError) as caught:
        registry["gren"]
    assert str(caught.value) == (
        "unknown colour 'gren' (did you mean 'green'?); known: red, green; `colours` lists them"
    )
    assert isinstance(caught.value, SettingError) and isinstance(caught.value, KeyError)
    assert (
        registry.unknown_message("zzz")
        == "unknown colour 'zzz'; known: red, green; `colours` lists them"
    )


def test_the_error_classes_and_a_hint_computed_when_asked():
    said = []
    registry: Registry[int] = Registry(
        "rule", error=MetricError, duplicate=MetricError, hint=lambda: said.append(1) or "late",
        list_known=False,
    )  # fmt: skip
    registry.register("one", 1)
    with pytest.raises(MetricError, match=r"^unknown rule 'two'; late$"):
        registry["two"]
    with pytest.raises(MetricError, match="rule 'one' is registered twice"):
        registry.register("one", 1)
    assert said == [1]


def test_a_name_or_alias_is_registered_once():
    registry = small()
    for name, aliases in (("red", ()), ("rouge", ()), ("blue", ("rouge",)), ("blue", ("green",))):
        with pytest.raises(ValueError, match="registered twice"):
            registry.register(name, Entry(name, 0), aliases=aliases)
    with pytest.raises(ValueError, match="an alias repeats a name"):
        registry.register("blue", Entry("blue", 3), aliases=("blue",))
    assert list(registry) == ["red", "green"] and "blue" not in registry


def test_copy_and_remove_leave_the_original_alone():
    registry = small()
    other = registry.copy()
    other.register("blue", Entry("blue", 3))
    assert other.remove("red") == Entry("red", 1) and other.remove("red") is None
    assert "rouge" not in other and list(other) == ["green", "blue"]
    assert list(registry) == ["red", "green"] and registry["rouge"].value == 1
    with pytest.raises(UnknownNameError, match="unknown colour 'red'; known: green, blue"):
        other["red"]


def test_of_names_entries_by_their_name():
    registry = Registry.of("colour", [Entry("a", 1), Entry("b", 2)])
    assert list(registry) == ["a", "b"]
    keyed = Registry.of("number", [3, 4], name=str)
    assert keyed["4"] == 4


def test_the_projects_registries_share_the_shape():
    import gem_tasks.scoring.adapter  # noqa: F401  (registers the autopre_exam log reader)
    from gem_data.fetch import catalog
    from gem_data.openreview.hub import HUB_DATASETS
    from scorers.domains import DOMAINS, DomainError
    from scorers.lm.backends import _BACKENDS
    from scorers.metrics.autopre.panel import _READERS
    from scorers.metrics.decision.verdicts import RULES
    from scorers.registry import METRICS, list_metrics
    from scorers.validation.perturbations import PERTURBATIONS

    list_metrics()  # discovers the families
    for registry in (catalog.DATASETS, HUB_DATASETS, DOMAINS, _BACKENDS, _READERS, RULES,
                     METRICS, PERTURBATIONS):  # fmt: skip
        assert isinstance(registry, Registry) and len(registry) >= 1, registry
    assert "gem_s" in METRICS and METRICS["gem_s"].name == "gem_s"
    assert RULES["committee"].description.startswith("accept when the mean rating of the other")
    assert HUB_DATASETS["Samarth0710/reviewbench"] is HUB_DATASETS["reviewbench"]
    with pytest.raises(DomainError, match=r"unknown domain 'q' \(did you mean 'qa'\?\)"):
        DOMAINS["q"]
    with pytest.raises(KeyError, match="gem-tasks data build --venue"):
        catalog.dataset("iclr2025")
    assert "autopre_exam log" in _READERS
