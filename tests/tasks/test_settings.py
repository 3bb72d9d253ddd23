"""Every task checks its settings when it is created, before any sample is generated: a wrong
setting is one line (Inspect's prerequisite error: no traceback) and a non-zero exit."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest
from inspect_ai._util.error import PrerequisiteError

from conftest import inspect_eval
from gem_tasks.tasks.settings import UNKNOWN_PARAMETERS, TaskSettingError, checked_settings
from scorers.errors import SettingError


def _tasks():
    from gem_tasks.tasks.autopre_exam import autopre_exam
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.space import space
    from gem_tasks.tasks.summeval import summeval

    return {
        "iclr": iclr,
        "robustness": robustness,
        "correlation": correlation,
        "judgments": judgments,
        "review_quality": review_quality,
        "summeval": summeval,
        "space": space,
        "autopre_exam": autopre_exam,
    }


TASKS = list(_tasks())
# the settings under which each task builds on its own demo data (correlation needs graded
# reviews: its default grade is the reviewers' rating only where the dataset says so)
DATA = Path(__file__).parents[2] / "gem_tasks" / "tasks" / "data"


def base_settings(name: str, tmp_path: Path) -> dict:
    """What each task needs besides its defaults to build on the demo data: correlation needs
    graded reviews, judgments a dataset."""
    if name == "correlation":
        rows = [json.loads(line) for line in (DATA / "demo_iclr.jsonl").read_text().splitlines()]
        for row in rows:
            for k, review in enumerate(row["reviews"]):
                review["grade"] = 5 + k
        graded = tmp_path / "graded.jsonl"
        graded.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return {"dataset": str(graded)}
    if name == "judgments":
        return {"dataset": str(DATA / "summeval_demo.jsonl")}
    return {}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("name", TASKS)
def test_a_misspelled_evaluation_lm_stops_every_task_when_it_is_created(name, tmp_path):
    task = _tasks()[name]
    with pytest.raises(TaskSettingError) as caught:
        task(**base_settings(name, tmp_path), scorer_lm="embeded")
    assert str(caught.value).startswith(f"gem_tasks/{name}: unknown evaluation-LM spec 'embeded'")
    assert "did you mean 'embedded'?" in str(caught.value)
    assert isinstance(caught.value, PrerequisiteError)  # printed without a traceback


@pytest.mark.parametrize("name", TASKS)
def test_a_misspelled_parameter_is_refused_with_the_nearest(name):
    task = _tasks()[name]
    with pytest.raises(TaskSettingError, match=r"has no parameter 'scorer_l' \(did you mean "
                       r"'scorer_lm'\?\)"):  # fmt: skip
        task(scorer_l="embedded")


def test_the_iclr_tasks_settings_are_each_checked_before_any_sample(tmp_path):
    from gem_tasks.tasks.iclr import iclr

    cases = [
        ({"dataset": str(tmp_path / "missing.jsonl")}, "missing.jsonl: file not found"),
        ({"scorers": "gem,decision_acuracy"}, "did you mean 'decision_accuracy'?"),
        ({"scorer_lm": "hf/./no-model-here"}, "no folder './no-model-here'"),
        (
            {"scorer_lm": "vllm/embedded", "scorer_lm_args": {"base_url": f"http://127.0.0.1:{closed_port()}"}},
            "no server answers at http://127.0.0.1:",
        ),
        ({"scorer_lm_args": {"dtyp": "float32"}}, "no option 'dtyp' (did you mean 'dtype'?)"),
        ({"scorer_options": {"gem": {"dataset_summary": True}}},
         "has no option 'dataset_summary' (did you mean 'dataset_summaries'?)"),
        ({"scorer_options": {"bleu": {}}}, "not among the scorers"),
        ({"candidate": "humans"}, "candidate must be"),
    ]  # fmt: skip
    for settings, message in cases:
        with pytest.raises(TaskSettingError) as caught:
            iclr(**settings)
        assert message in str(caught.value), (settings, str(caught.value))
        assert "\n" not in str(caught.value)


def test_a_judge_model_that_does_not_resolve_stops_the_exam_task():
    from gem_tasks.tasks.autopre_exam import autopre_exam

    with pytest.raises(PrerequisiteError):
        autopre_exam(judges="no_such_provider/model,scorer_lm@before,scorer_lm@after")


def test_an_error_that_is_not_about_a_setting_keeps_its_traceback():
    @checked_settings
    def broken(x: int = 1):
        return {}[x]  # a bug: KeyError

    @checked_settings
    def library(x: int = 1):
        return int("not a number")  # a ValueError raised outside the project's code

    @checked_settings
    def refusing(x: int = 1):
        raise SettingError("x must be 2")

    with pytest.raises(KeyError):
        broken()
    with pytest.raises(ValueError) as caught:
        library()
    assert not isinstance(caught.value, PrerequisiteError)
    with pytest.raises(TaskSettingError, match="gem_tasks/refusing: x must be 2"):
        refusing()
    import inspect

    parameters = inspect.signature(refusing).parameters
    assert list(parameters) == ["x", UNKNOWN_PARAMETERS]


@pytest.mark.slow
def test_inspect_eval_stops_before_generating_with_one_line_and_a_failing_status(tmp_path):
    """The command a user types: the message is among the last lines, there is no traceback,
    the exit status is not 0, and no sample was generated (no log is written at all)."""
    run = inspect_eval(
        ["--model", "smollm2/embedded", "-T", "scorer_lm=embeded", "--limit", "1"], tmp_path
    )
    output = (run.stdout + run.stderr).strip().splitlines()
    assert run.returncode != 0
    last = "".join(output[-10:])  # Inspect wraps the message at the terminal's width
    assert "unknown evaluation-LM spec 'embeded'" in last, output
    assert "Traceback" not in run.stdout + run.stderr
    assert not list((tmp_path / "logs").glob("*.eval")) if (tmp_path / "logs").exists() else True
    assert sys.executable  # the suite's own interpreter ran it (conftest.inspect_eval)
