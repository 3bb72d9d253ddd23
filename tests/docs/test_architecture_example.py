"""The architecture page's worked example of a per-reference metric: the family file (typed
options, signature, metric, registration) is under 55 lines, registers, and scores the page's
item as the page says (hand-computed)."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from scorers import registry

PAGE = REPO / "docs" / "architecture.md"


def example_blocks() -> list[str]:
    """The family file and the code that uses it (one snippet, split where the file ends)."""
    section = PAGE.read_text().split("## Adding a metric family, end to end", 1)[1]
    snippet = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)[0]
    family, usage = snippet.split("# the family file ends here", 1)
    return [family, "#" + usage]


def test_the_per_reference_example_is_one_short_file_and_scores_as_the_page_says():
    family, usage = example_blocks()
    assert len(family.strip().splitlines()) < 55
    assert "PerReferenceMetric" in family
    namespace: dict = {}
    try:
        exec(compile(family, "length/__init__.py", "exec", dont_inherit=True), namespace)
        exec(compile(usage.replace("print(", "(lambda *a: None)("), "usage", "exec"), namespace)
        result = namespace["result"]
        # 9 words against 3 and 1: (3 + 9) / 2; the blank r3 is left out with its reason
        assert result.value == pytest.approx(6.0)
        assert [t["value"] for t in result.terms] == [3.0, 9.0]
        assert result.details["skipped_references"] == {"r3": "empty reference text"}
        assert result.explanation.splitlines() == [
            "mean Length ratio over 2 reference(s): 6.0000",
            "- r1: 3.0000",
            "- r2: 9.0000",
            "- r3 left out: empty reference text",
        ]
        assert result.signature.as_dict()["family"] == "length"
        assert result.signature.as_dict()["unit"] == "words"
        # 50 characters against 20 and 6; the option is typed, and a wrong name is refused
        characters = namespace["get_metric"]("length_ratio", unit="characters")
        by_characters = characters.score(namespace["item"], resources=None)
        assert by_characters.value == pytest.approx((50 / 20 + 50 / 6) / 2)
        assert by_characters.signature.id != result.signature.id
        with pytest.raises(registry.MetricError, match="has no option 'units'"):
            registry.get_metric("length_ratio", units="words")
        with pytest.raises(registry.MetricError, match="'unit' must be 'words' or 'characters'"):
            registry.get_metric("length_ratio", unit="tokens")
        metric = registry.get_metric("length_ratio")
        empty = metric.score(
            namespace["Item"](paper=namespace["Paper"](id="p"), candidate="  ",
                              references=namespace["item"].references),
            resources=None,
        )  # fmt: skip
        assert empty.value is None and empty.reason == "empty candidate: nothing to count"
        assert empty.details["flags"] == ["empty_candidate"]
        only_blank = metric.score(
            namespace["Item"](paper=namespace["Paper"](id="p"), candidate="Some words here.",
                              references=(namespace["Review"](id="r9", text=""),)),
            resources=None,
        )  # fmt: skip
        assert only_blank.value is None
        assert only_blank.reason == "no usable reference (r9: empty reference text)"
    finally:
        registry.METRICS.remove("length_ratio")
