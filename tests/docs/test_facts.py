"""Facts the prose states about the metric registry agree with the registry: which metrics are
lower-is-better, and how many Scoring Rules cells there are. (The metric table itself is
generated from the registry and checked by ``test_the_generated_reference_pages_are_current``.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import REPO

WORDS = "one two three four five six seven eight nine ten".split()
NUMBERS = {word: k for k, word in enumerate(WORDS, start=1)}


@pytest.fixture(scope="module")
def registry() -> list[dict]:
    """The registered metrics, listed in a fresh process (other tests register toy metrics in
    theirs)."""
    code = (
        "import json; from scorers import list_metrics as l; "
        "print(json.dumps([{'name': s.name, 'family': s.family, "
        "'higher_is_better': s.higher_is_better} for s in l()]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    return json.loads(run.stdout)


def lower_is_better_named(text: str) -> tuple[int, set[str]]:
    """The count and the metric names of the sentence "Higher is better for all but N: ..."."""
    found = re.search(r"[Hh]igher is better for all but (\w+): (.*?)\.(?:\s|$)", text, re.S)
    assert found, "no 'Higher is better for all but N: ...' sentence"
    return NUMBERS.get(found.group(1), -1), set(re.findall(r"`([a-z0-9_]+)`", found.group(2)))


def direction_problem(text: str, lower: set[str]) -> str | None:
    """What is wrong with a text's "Higher is better for all but N: ..." sentence, given the
    registry's lower-is-better metrics; None when it is right."""
    count, named = lower_is_better_named(text)
    if named != lower:
        return f"names {sorted(named)}, the registry has {sorted(lower)}"
    if count != len(lower):
        return f"says {count}, the registry has {len(lower)}"
    return None


@pytest.mark.parametrize("page", ["README.md", "docs/metrics/index.md"])
def test_the_lower_is_better_metrics_named_are_the_registrys(page, registry):
    lower = {m["name"] for m in registry if not m["higher_is_better"]}
    problem = direction_problem((REPO / page).read_text(), lower)
    assert problem is None, f"{page}: {problem}"


def test_the_scoring_rules_cell_count_is_the_registrys(registry):
    cells = [m for m in registry if m["family"] == "fmi"]
    text = (REPO / "docs" / "metrics" / "index.md").read_text()
    stated = re.search(r"`fmi_<F>_<E>_<R>` \((\d+) cells", text)
    assert stated and int(stated.group(1)) == len(cells)


def test_a_wrong_direction_sentence_is_caught():
    lower = {"br_rating_mae", "decision_fpr"}
    right = "Higher is better for all but two: `br_rating_mae` and `decision_fpr`. More text."
    assert direction_problem(right, lower) is None
    missing = "Higher is better for all but one: the rating error (`br_rating_mae`). More text."
    assert "the registry has" in direction_problem(missing, lower)
    miscounted = "Higher is better for all but seven: `br_rating_mae` and `decision_fpr`. More."
    assert direction_problem(miscounted, lower) == "says 7, the registry has 2"
