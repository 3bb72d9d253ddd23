"""One contract for every registered metric (``scorers.list_metrics()``): a new family passes it or
the suite fails. Each metric builds with its defaults (a few need one option, listed here),
refuses an unknown option by name, says where it comes from and its comparability version,
gives an empty or whitespace-only candidate what its registration declares (``empty_candidate``:
0 with the flag, a flagged value, or unscored with the reason), signs every result with its
family and version, and gives through ``inspect eval`` exactly the number the plain-Python call
gives. Models: a tiny random Llama as the evaluation LM (saved to a folder, so Inspect can load
it by name) and a scripted generator for every model role; nothing is downloaded."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from conftest import scripted_model
from scorers import Item, Paper, Resources, Review, get_metric, list_metrics
from scorers.data.records import dataset_identity, load_records
from scorers.errors import MetricError
from scorers.lm.base import Reply
from scorers.registry import EMPTY_CANDIDATE

SPECS = {spec.name: spec for spec in list_metrics()}
TABLE = {
    "judges": {"scripted@before": {"passed": dict.fromkeys(
        ("consistency", "pertinence", "self_confidence"), True)}},
    "panel": ["scripted@before"],
    "weights": {"scripted@before": 0.9},
    "generators": {"scripted@before": "scripted/roles"},
}  # fmt: skip
"""A qualification whose one panel judge is the scripted model (``autopre_panel``)."""


def _replies(conversation: list[dict[str, str]]) -> str:
    """What the scripted model answers, by the question it is asked."""
    text = " ".join(m["content"] for m in conversation)
    if "<SCORE=" in text:  # GPPM's 7-point judgment: one score per numbered statement
        statements = sum(1 for line in text.splitlines() if re.match(r"^\[\d+\] ", line))
        return "\n".join(f"[{i + 1}] supported <SCORE=1>" for i in range(max(statements, 1)))
    if "sort the content of a peer review" in text:
        return (
            "<summary>A method is studied.</summary><strengths>The method is clear."
            "</strengths><weaknesses>One test.</weaknesses><questions>Why one test?</questions>"
        )
    if "atomic points" in text:
        if "Question types" in text:
            return "Supplement | Experiments | Why one test?"
        return "Clarity | The method is clear."
    if "overall_score" in text:
        return "<overall_score>6</overall_score>"
    if "Answer Yes or No" in text or "Yes or No" in text:  # the binary questions
        return "Yes"
    if "The reviewer appreciates" in text:  # the App. C.1 rewrite prompt
        return "The reviewer appreciates the method."
    if "output 'one' or 'two'" in text:  # Auto-PRE's pairwise judge
        return "two"
    return "Yes"


class Scripted:
    identity = "scripted/roles"

    async def generate(self, conversations, settings):
        return [Reply(_replies(list(c)), hit_limit=False) for c in conversations]


@pytest.fixture(scope="module")
def fit_on(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("fit") / "past.jsonl"
    judgments = "The reviewer appreciates the method.\nThe reviewer criticizes the data."
    rows = [
        {
            "id": f"f{i}",
            "title": f"Past {i}",
            "abstract": "An abstract.",
            "reviews": [
                {"id": f"f{i}r{j}", "text": "A review.", "summary": judgments} for j in range(3)
            ],
        }
        for i in range(6)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def options_for(name: str, tiny_folder: Path, fit_on: Path) -> dict:
    """The options a metric cannot be built without (everything else: its defaults)."""
    return {
        "gppm_cluster": {"fit_on": str(fit_on), "n_clusters": 2},
        "br_binoculars": {"observer": str(tiny_folder), "performer": str(tiny_folder)},
        "autopre_panel": {"qualification": TABLE},
    }.get(name, {})


def _item(candidate: str) -> Item:
    return Item(
        Paper(
            "p",
            title="A paper",
            abstract="We study a method.",
            paper_text="1 Introduction\nWe study a method and test it.",
            assw="Strengths: a method. Weaknesses: one test.",
        ),
        candidate,
        (
            Review("r1", "The method is clear. The experiments are weak.", rating=6.0),
            Review("r2", "A clear paper with one test.", rating=8.0),
        ),
        negatives=tuple(Review(f"n{i}/r", f"Paper {i} is weak.") for i in range(4)),
        held_out=Review("h", "The held-out review of the method.", rating=3.0),
    )


def _resources(tiny_folder: Path, cache: Path) -> Resources:
    resources = Resources(
        evaluation_lm=f"hf/{tiny_folder}",
        cache_dir=cache,
        generators={role: Scripted() for role in ("preprocessor", "judge", "oracle")},
    )
    resources.bind_model("scripted", Scripted())
    return resources


def test_every_metric_declares_what_the_contract_reads():
    for spec in SPECS.values():
        assert spec.empty_candidate in EMPTY_CANDIDATE, spec.name
        assert spec.source and spec.description and spec.display_name, spec.name
        assert isinstance(spec.version, int) and spec.version >= 1, spec.name


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_metric_contract(name, tiny_folder, fit_on, tmp_path):
    spec = SPECS[name]
    options = options_for(name, tiny_folder, fit_on)
    with pytest.raises(MetricError, match="no_such_option"):
        get_metric(name, **options, no_such_option=1)
    metric = get_metric(name, **options)
    resources = _resources(tiny_folder, tmp_path)
    for empty in ("", "  \n\t "):
        result = metric.score(_item(empty), resources)
        flags = result.details.get("flags") or []
        if spec.empty_candidate == "unscored":
            assert result.value is None and "empty" in result.reason, (name, result.reason)
        elif spec.empty_candidate == "zero":
            assert result.value == 0.0 and "empty_candidate" in flags, (name, result.value)
        else:
            assert result.value is not None and math.isfinite(result.value), name
            assert "empty_candidate" in flags, name
        assert result.signature is not None, name
    review = (
        "<summary>The paper studies a method.</summary>\n<strengths>Novelty | The method is "
        "new.</strengths>\n<weaknesses>Experiments | One test only.</weaknesses>\n<questions>"
        "Why one test?</questions>\n<rating>6</rating>"
    )
    result = metric.score(_item(review), resources)
    signature = result.signature.as_dict()
    assert signature["family"] == spec.family and signature["version"] == spec.version, name
    assert signature["metric"] in (name, *spec.aliases, "gem_s_assw"), name
    assert result.value is not None or result.reason, name


def _scripted_inspect_model():
    scripted_model("contract_scripted", lambda conversation, model: _replies(conversation))


@pytest.mark.slow
def test_inspect_logs_the_number_the_plain_python_call_gives(tiny_folder, fit_on, tmp_path):
    """Every metric through ``inspect eval gem_tasks/iclr`` (the held-out human review as the
    answer, scripted models in every role) logs exactly what ``get_metric(...).score`` returns
    for the item rebuilt from the logged sample."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    from gem_tasks.tasks.iclr import iclr
    from scorers.data.paper_docs import item_from_document

    _scripted_inspect_model()
    held_out = (
        "<summary>The paper studies a method.</summary>\n<strengths>Novelty | The method is "
        "new.</strengths>\n<weaknesses>Experiments | One test only.</weaknesses>\n<questions>"
        "Why one test?</questions>\n<rating>6</rating>"
    )
    rows = [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": f"We study method {i}.",
            "paper_text": f"1 Introduction\nWe study method {i} and test it once.",
            "venue": "ICLR 2023",  # the decision metrics read ratings on its scale
            "decision": "Accept (poster)" if i % 2 else "Reject",  # for the decision metrics
            "reviews": [
                {"id": f"p{i}r{j}", "text": text, "rating": rating}
                for j, (text, rating) in enumerate(
                    ((held_out, 6), (f"Method {i} is clear. One test.", 8), ("Weak tests.", 3))
                )
            ],
        }
        for i in range(6)
    ]
    data = tmp_path / "papers.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    member = "contract_scripted/roles@before"
    table = {
        **TABLE,
        "judges": {member: TABLE["judges"]["scripted@before"]},
        "panel": [member],
        "weights": {member: 0.9},
        "generators": {member: "inspect/contract_scripted/roles"},
        # qualified on these papers: the panel holds a qualification to its dataset
        "dataset": dataset_identity(load_records(data), name=data.stem),
    }
    names = sorted(SPECS)
    scorer_options = {n: options_for(n, tiny_folder, fit_on) for n in names}
    scorer_options["autopre_panel"] = {"qualification": table}
    scorer_options = {n: o for n, o in scorer_options.items() if o}
    roles = {r: get_model("contract_scripted/roles") for r in ("preprocessor", "judge", "oracle")}
    cache = tmp_path / "cache"
    [log] = inspect_eval(
        iclr(
            dataset=str(data),
            candidate="human",
            scorers=",".join(names),
            scorer_lm=f"hf/{tiny_folder}",
            scorer_options=scorer_options,
            cache_dir=str(cache),
        ),
        model="mockllm/model",
        model_roles=roles,
        limit=1,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sorted(sample.scores) == names
    unscored = sorted(n for n in names if math.isnan(sample.scores[n].value))
    # every metric scores (the comparison below is of numbers), but for the rate the paper
    # cannot enter: p0 was rejected, and the false negative rate counts accepted papers
    assert unscored == ["decision_fnr"], unscored
    resources = Resources(evaluation_lm=f"hf/{tiny_folder}", cache_dir=cache)
    resources.generators = {r: Scripted() for r in ("preprocessor", "judge", "oracle")}
    resources.bind_model("contract_scripted/roles", Scripted())
    for name in names:
        logged = sample.scores[name]
        item = item_from_document(sample.metadata, candidate=logged.answer or held_out)
        options = scorer_options.get(name, {})
        if name == "autopre_panel":  # the panel's judge answers as the Inspect model it was
            options = {"qualification": {**table, "generators": {member: "scripted/roles"}}}
        result = get_metric(name, **options).score(item, resources)
        if result.value is None:
            assert math.isnan(logged.value), (name, logged.value)
            assert logged.metadata["unscored_reason"] == result.reason, name
        else:
            assert logged.value == result.value, (name, logged.value, result.value)
