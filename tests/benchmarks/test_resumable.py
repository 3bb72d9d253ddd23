"""Evidence runs that outlast one invocation: the invocation journal refuses a resume that would
mix two computations and sums a row's time over its invocations; a stopped eval is continued with
its finished samples reused, and only the finished log is left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import match
from inspect_ai.solver import solver

from conftest import load_benchmark

# through load_benchmark: a plain ``import benchmarks`` here could find tests/benchmarks first
resumable = load_benchmark("common.resumable")
Run = load_benchmark("common.manifest").Run
Journal, ResumeRefused, resumable_eval = (
    resumable.Journal,
    resumable.ResumeRefused,
    resumable.resumable_eval,
)


def written(folder: Path, settings: dict, invocations: list[dict]) -> None:
    (folder / resumable.JOURNAL).write_text(
        json.dumps({"settings": settings, "invocations": invocations})
    )


def here(folder: Path) -> dict:
    """The commit fields an invocation in this checkout records (its run's)."""
    record = Run(folder).record
    return {"commit": record["commit"], "uncommitted": record["uncommitted_changes"]}


def test_a_row_is_timed_over_its_invocations_to_the_end_or_the_last_heartbeat(tmp_path):
    stopped = {"started": "2026-01-01T10:00:00+00:00", "alive": "2026-01-01T10:20:30+00:00"}
    finished = {
        "started": "2026-01-02T08:00:00+00:00",
        "alive": "2026-01-02T08:05:00+00:00",
        "ended": "2026-01-02T08:05:00+00:00",
    }
    written(
        tmp_path,
        {"papers": 3},
        [
            {**here(tmp_path), "started": "x", "rows": {"model": {**stopped, "ended": None}}},
            {**here(tmp_path), "started": "y", "rows": {}},
            {**here(tmp_path), "started": "z", "rows": {"model": finished}},
        ],
    )
    journal = Journal(Run(tmp_path), settings={"papers": 3})
    assert journal.seconds("model") == 20 * 60 + 30 + 5 * 60
    assert journal.invocations("model") == 2
    assert journal.rows() == ["model"]  # once, though two invocations worked on it
    assert journal.seconds("other") == 0
    # this invocation is recorded at once, before any row
    assert len(json.loads((tmp_path / resumable.JOURNAL).read_text())["invocations"]) == 4


def test_a_resume_with_other_settings_or_at_another_commit_is_refused(tmp_path):
    written(tmp_path, {"papers": 3}, [{**here(tmp_path), "started": "x", "rows": {}}])
    with pytest.raises(ResumeRefused, match="--fresh"):
        Journal(Run(tmp_path), settings={"papers": 4})
    written(tmp_path, {"papers": 3}, [{"commit": "0" * 40, "uncommitted": False, "rows": {}}])
    with pytest.raises(ResumeRefused, match="0000000000"):
        Journal(Run(tmp_path), settings={"papers": 3})
    logs = tmp_path / "logs"
    (logs / "model").mkdir(parents=True)
    (logs / "model" / "stopped.eval").write_text("a stopped run's samples")
    kept = Journal(Run(tmp_path), settings={"papers": 3, "n": 1}, fresh=True)
    assert (logs / "model" / "stopped.eval").exists()  # no logs folder named: nothing removed
    fresh = Journal(Run(tmp_path), settings={"papers": 4}, fresh=True, logs=logs)
    assert [i["commit"] for i in fresh.data["invocations"]] == [here(tmp_path)["commit"]]
    assert kept.rows() == [] and not logs.exists()
    # without --fresh the logs stay for the resume
    logs.mkdir()
    Journal(Run(tmp_path), settings={"papers": 4}, logs=logs)
    assert logs.is_dir()


def test_rows_are_listed_in_the_order_they_were_first_started(tmp_path):
    journal = Journal(Run(tmp_path), settings={})
    for name in ("b", "a", "b"):
        with journal.row(name):
            pass
    later = Journal(Run(tmp_path), settings={})
    with later.row("c"):
        pass
    assert later.rows() == ["b", "a", "c"]
    # each invocation says where it ran (a row can be computed on a GPU machine, the rest here)
    machines = [i["machine"] for i in later.data["invocations"]]
    assert machines == [Run(tmp_path).record["machine"]] * 2
    assert {"platform", "cpu", "cpus"} <= set(machines[0])


def test_the_fresh_flag_is_one_option_with_its_help():
    import argparse

    parser = argparse.ArgumentParser()
    resumable.add_fresh_option(parser)
    assert parser.parse_args(["--fresh"]).fresh and not parser.parse_args([]).fresh
    assert "start over" in parser.format_help()
    other = argparse.ArgumentParser()
    resumable.add_fresh_option(other, help="start a set over")
    assert "start a set over" in other.format_help()


def test_a_row_records_its_end_and_keeps_its_heartbeat_when_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr(resumable, "HEARTBEAT_S", 0.05)
    journal = Journal(Run(tmp_path), settings={})
    with journal.row("done"):
        pass
    with pytest.raises(RuntimeError), journal.row("stopped"):
        raise RuntimeError("the machine was taken")
    rows = json.loads((tmp_path / resumable.JOURNAL).read_text())["invocations"][0]["rows"]
    assert rows["done"]["ended"] is not None
    assert rows["stopped"]["ended"] is None and rows["stopped"]["alive"] is not None


CALLS: list[str] = []
FAIL_AT: dict[str, str | None] = {"id": None}


@solver
def answer_or_stop():
    async def solve(state, generate):
        CALLS.append(str(state.sample_id))
        if str(state.sample_id) == FAIL_AT["id"]:
            raise RuntimeError("stopped here")
        state.output.completion = "yes"
        return state

    return solve


@task
def six_questions():
    return Task(
        dataset=[Sample(input=f"q{i}", target="yes", id=f"s{i}") for i in range(6)],
        solver=answer_or_stop(),
        scorer=match(),
    )


@pytest.mark.slow
def test_a_stopped_eval_resumes_with_its_finished_samples_and_leaves_one_log(tmp_path):
    logs = tmp_path / "logs"
    CALLS.clear()
    FAIL_AT["id"] = "s3"
    options = {"model": "mockllm/model", "display": "none", "max_samples": 1, "log_buffer": 1}
    with pytest.raises(SystemExit, match="did not finish"):
        resumable_eval(six_questions(), logs, **options)
    assert CALLS[:4] == ["s0", "s1", "s2", "s3"]
    [stopped] = logs.glob("*.eval")
    kept = {str(s.id) for s in read_eval_log(str(stopped)).samples if not s.error}
    assert kept >= {"s0", "s1", "s2"} and "s3" not in kept
    CALLS.clear()
    FAIL_AT["id"] = None
    location = resumable_eval(six_questions(), logs, **options)
    assert not location.startswith("file://")
    log = read_eval_log(location)
    assert log.status == "success"
    assert sorted(str(s.id) for s in log.samples) == [f"s{i}" for i in range(6)]
    # what the stopped log held is reused; only the failed sample and the rest are run again
    assert sorted(CALLS) == sorted({f"s{i}" for i in range(6)} - kept)
    assert [p.name for p in logs.glob("*.eval")] == [Path(log.location).name]
    assert resumable.finished_log(logs) == log.location
    assert resumable.finished_log(tmp_path / "never_run") is None


def test_an_invocation_records_the_gpu_its_row_saw(tmp_path, monkeypatch):
    """The journal entry is written before any model loads; the machine is described again at
    each heartbeat and when a row ends, so a GPU loaded on the way is recorded."""
    journal = Journal(Run(tmp_path), settings={})
    assert "gpu" not in journal.entry["machine"] or journal.entry["machine"]["gpu"]
    seen = {"platform": "p", "cpu": "c", "cpus": 16, "gpu": {"name": "NVIDIA H100 80GB HBM3"}}
    monkeypatch.setattr(resumable, "describe_machine", lambda: seen)
    with journal.row("model"):
        pass
    written_entry = json.loads((tmp_path / resumable.JOURNAL).read_text())["invocations"][-1]
    assert written_entry["machine"] == seen
