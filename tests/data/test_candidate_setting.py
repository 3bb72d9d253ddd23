"""A task's ``candidate`` setting, parsed once (scorers.data.candidates.Candidate): its kind and
name, the forms each task allows in the message of a refusal, and the text given back."""

from __future__ import annotations

import pytest

from scorers.data.candidates import Candidate

JUDGMENTS = ("model", "human", "candidates", "system")


@pytest.mark.parametrize(
    ("text", "kind", "name"),
    [
        ("model", "model", ""),
        ("human", "human", ""),
        ("candidates", "candidates", ""),
        ("system:M11", "system", "M11"),
        ("system:a:b", "system", "a:b"),  # an id may hold a colon
    ],
)
def test_each_form_is_read_into_its_kind_and_name(text, kind, name):
    parsed = Candidate.parse(text, allowed=JUDGMENTS)
    assert (parsed.kind, parsed.name, str(parsed)) == (kind, name, text)
    assert parsed.generates is (kind == "model")


def test_a_baseline_names_one_of_the_rules():
    rules = {"committee", "always_reject"}
    parsed = Candidate.parse("baseline:committee", allowed=("model", "baseline"), rules=rules)
    assert (parsed.kind, parsed.name) == ("baseline", "committee")
    message = "candidate must be 'model' or 'baseline:<rule>' with a rule of "
    with pytest.raises(ValueError, match=message + r"\['always_reject', 'committee'\]"):
        Candidate.parse("baseline:coin", allowed=("model", "baseline"), rules=rules)


@pytest.mark.parametrize(
    "text", ["humans", "system:", "system", "model:x", "candidates:1", "", "baseline:committee"]
)
def test_anything_else_is_refused_with_the_forms_the_task_allows(text):
    forms = "'model', 'human', 'candidates' or 'system:<id>'"
    with pytest.raises(ValueError, match=f"candidate must be {forms}, got {text!r}"):
        Candidate.parse(text, allowed=JUDGMENTS)
    with pytest.raises(ValueError, match="candidate must be 'model' or 'human', got"):
        Candidate.parse(text, allowed=("model", "human"))
