"""Every committed benchmark result says where it came from, and no number in it was edited by
hand: each results folder holds a manifest written by the script that produced it, and every
committed file has the hash it recorded."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, load_benchmark

RUN_KEYS = {
    "commit",
    "uncommitted_changes",
    "command",
    "machine",
    "versions",
    "data",
    "settings",
    "started",
    "ended",
    "files",
}


def git_lines(*args: str) -> list[str]:
    try:
        run = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"not a git checkout ({error}): committed results cannot be listed")
    return [line for line in run.stdout.splitlines() if line]


def script_written(path: str) -> bool:
    """Benchmark results, and the documentation's pictures (made by docs/scripts)."""
    return "/results/" in path or path.startswith("docs/images/")


def committed_results() -> list[Path]:
    return [
        REPO / path
        for path in git_lines("ls-files", "benchmarks", "docs/images")
        if script_written(path) and Path(path).name != "manifest.json"
    ]


def committed_manifests() -> list[Path]:
    return [
        REPO / path
        for path in git_lines("ls-files", "benchmarks", "docs/images")
        if script_written(path) and Path(path).name == "manifest.json"
    ]


def owning_manifest(path: Path) -> Path | None:
    """The manifest of the nearest folder above ``path``, up to its ``results`` folder."""
    folder = path.parent
    while True:
        candidate = folder / "manifest.json"
        if candidate.exists():
            return candidate
        if folder.name in ("results", "images") or folder == REPO:
            return None
        folder = folder.parent


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_repository_has_committed_results_to_check():
    assert len(committed_results()) >= 20
    assert len(committed_manifests()) >= 13


def test_every_committed_result_is_in_its_folders_manifest_with_its_hash():
    problems = []
    for path in committed_results():
        manifest_path = owning_manifest(path)
        if manifest_path is None:
            problems.append(f"{path.relative_to(REPO)}: no manifest.json in its results folder")
            continue
        files = json.loads(manifest_path.read_text())["files"]
        name = str(path.relative_to(manifest_path.parent))
        if name not in files:
            problems.append(f"{path.relative_to(REPO)}: not in {manifest_path.relative_to(REPO)}")
        elif files[name] != sha256(path):
            problems.append(f"{path.relative_to(REPO)}: changed since its script wrote it")
    assert not problems, "\n".join(problems)


def ignored_by_git(path: Path) -> bool:
    """Whether git keeps ``path`` out of the repository (a run's logs and data copies)."""
    check = subprocess.run(["git", "check-ignore", "-q", str(path)], cwd=REPO, check=False)
    return check.returncode == 0


def test_every_manifest_is_a_runs_record():
    for manifest_path in committed_manifests():
        manifest = json.loads(manifest_path.read_text())
        where = manifest_path.relative_to(REPO)
        # a run of its script, never a reconstruction: an earlier backfill lives on only as
        # history, under earlier_runs
        assert "backfilled" not in manifest, f"{where}: rerun its script"
        assert RUN_KEYS <= set(manifest), f"{where}: missing {RUN_KEYS - set(manifest)}"
        assert manifest["command"].startswith(("python -m benchmarks.", "python -m docs.")), where
        assert len(manifest["commit"]) == 40, where
        assert manifest["started"] <= manifest["ended"], where
        for item in manifest["data"]:
            assert item["sha256"], f"{where}: {item['path']} was not found when it ran"
        # a committed file the run found and did not write needs an earlier run that did
        # (files git keeps out, a resumed run's logs from its earlier invocations among
        # them, are not results the repository holds)
        if not manifest.get("earlier_runs"):
            found = [
                name
                for name in manifest.get("not_written_by_this_run", [])
                if not ignored_by_git(manifest_path.parent / name)
            ]
            assert not found, f"{where}: files no run of its script wrote: {found}"
        # a file the manifest lists but the repository lacks must be one git keeps out (logs)
        for name in manifest["files"]:
            path = manifest_path.parent / name
            if not path.exists():
                assert ignored_by_git(path), f"{where}: lists {name}, which is missing"


def test_a_run_records_its_provenance_and_every_files_hash(tmp_path: Path):
    manifest = load_benchmark("common.manifest")
    data = tmp_path / "data.jsonl"
    data.write_text('{"id": 1}\n')
    out = tmp_path / "results"
    run = manifest.Run(out, data=[data, tmp_path / "absent.jsonl"], settings={"papers": 3})
    (out / "table.md").write_text("| a |\n")
    (out / "sub").mkdir()
    (out / "sub" / "x.json").write_text("{}")
    record = json.loads(run.finish().read_text())
    assert record["not_written_by_this_run"] == []
    assert record["files"] == {
        "sub/x.json": hashlib.sha256(b"{}").hexdigest(),
        "table.md": hashlib.sha256(b"| a |\n").hexdigest(),
    }
    assert record["data"][0] == {
        "path": str(data),
        "bytes": 10,
        "sha256": hashlib.sha256(b'{"id": 1}\n').hexdigest(),
    }
    assert record["data"][1]["sha256"] is None  # absent data is recorded as absent
    assert record["settings"] == {"papers": 3}
    assert record["versions"]["python"]
    assert record["started"] <= record["ended"]
    assert record["earlier_runs"] == []
    # a second run into the same folder that leaves a file of the first keeps the first run's
    # provenance, and hashes anew
    os.utime(out / "sub" / "x.json", (1_000_000_000, 1_000_000_000))
    (out / "table.md").write_text("| b |\n")
    again = json.loads(manifest.Run(out).finish().read_text())
    assert again["files"]["table.md"] == hashlib.sha256(b"| b |\n").hexdigest()
    assert again["not_written_by_this_run"] == ["sub/x.json"]
    assert [r["started"] for r in again["earlier_runs"]] == [record["started"]]
    assert "files" not in again["earlier_runs"][0]
    # a third that rewrites every file supersedes both: nothing in the folder is theirs
    third = manifest.Run(out)
    (out / "table.md").write_text("| c |\n")
    (out / "sub" / "x.json").write_text("{}")
    last = json.loads(third.finish().read_text())
    assert last["not_written_by_this_run"] == []
    assert last["earlier_runs"] == []
    assert last["started"] == third.record["started"]


def test_a_run_names_the_files_it_found_and_did_not_write(tmp_path: Path):
    """A file older than the run (a copy made by hand, a stale output) is named in the manifest;
    the suite fails on one in a committed folder without an earlier run (see above)."""
    manifest = load_benchmark("common.manifest")
    out = tmp_path / "results"
    out.mkdir()
    (out / "found.md").write_text("a copy made before the run\n")
    os.utime(out / "found.md", (1_000_000_000, 1_000_000_000))
    (out / "rewritten.md").write_text("old\n")
    os.utime(out / "rewritten.md", (1_000_000_000, 1_000_000_000))
    run = manifest.Run(out)
    (out / "rewritten.md").write_text("old\n")  # the same bytes, written by this run
    (out / "new.md").write_text("new\n")
    record = json.loads(run.finish().read_text())
    assert record["not_written_by_this_run"] == ["found.md"]
    assert set(record["files"]) == {"found.md", "rewritten.md", "new.md"}


def test_a_runs_own_results_are_not_uncommitted_changes_of_the_code(tmp_path: Path, monkeypatch):
    """A finished row rewrites tracked result files: the next invocation of the same run (its
    journal compares the flag) must still see a clean tree; a change anywhere else counts."""
    import subprocess

    manifest = load_benchmark("common.manifest")
    repo = tmp_path / "repo"
    (repo / "results").mkdir(parents=True)
    (repo / "code.py").write_text("x = 1\n")
    (repo / "results" / "table.md").write_text("| 1 |\n")

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True
        )

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    monkeypatch.setattr(manifest, "REPO", repo.resolve())
    flag = lambda out: manifest.Run(out).record["uncommitted_changes"]  # noqa: E731
    assert flag(repo / "results") is False
    assert manifest.tracked_changes() is False
    (repo / "results" / "table.md").write_text("| 2 |\n")  # the run's own output
    assert flag(repo / "results") is False
    assert manifest.tracked_changes() is True  # the whole checkout (what a rebuild records)
    assert manifest.tracked_changes("--", "code.py") is False
    assert flag(repo / "other") is True  # another run's folder: that table is a change
    assert flag(tmp_path / "outside") is True  # a folder outside the checkout excludes nothing
    (repo / "results" / "table.md").write_text("| 1 |\n")
    (repo / "code.py").write_text("x = 2\n")
    assert flag(repo / "results") is True
    assert manifest.tracked_changes("--", "code.py") is True
    monkeypatch.setattr(manifest, "REPO", tmp_path)  # not a checkout: unknown, not "clean"
    assert manifest.tracked_changes() is None


def test_a_copy_without_git_records_the_commit_it_is_told_and_no_claim_on_changes(
    tmp_path: Path, monkeypatch
):
    """A tree copied to a rented GPU machine has no git: the commit comes from
    GEM_TASKS_COMMIT, marked as such, and whether the copy had changes is unknown (None);
    without the variable the commit is None, never a guess."""
    manifest = load_benchmark("common.manifest")
    monkeypatch.setattr(manifest, "git", lambda *args: None)
    monkeypatch.delenv("GEM_TASKS_COMMIT", raising=False)
    record = manifest.Run(tmp_path / "a").record
    assert (record["commit"], record["commit_source"], record["uncommitted_changes"]) == (
        None,
        None,
        None,
    )
    monkeypatch.setenv("GEM_TASKS_COMMIT", "abc123")
    record = manifest.Run(tmp_path / "b").record
    assert (record["commit"], record["commit_source"], record["uncommitted_changes"]) == (
        "abc123",
        "GEM_TASKS_COMMIT",
        None,
    )
    # in a checkout git answers, and the declared commit is recorded beside it
    monkeypatch.setattr(manifest, "git", lambda *args: "f00d" if args[0] == "rev-parse" else "")
    record = manifest.Run(tmp_path / "c").record
    assert (record["commit"], record["commit_source"], record["uncommitted_changes"]) == (
        "f00d",
        "git",
        False,
    )
    assert record["declared_commit"] == "abc123"


def test_the_files_a_runs_options_name_are_found_for_its_manifest(tmp_path: Path):
    """A fit file named deep in per-metric options is an input the manifest hashes; strings
    that are not files (a model name, a missing path) and repeats are not."""
    fit = tmp_path / "fit.jsonl"
    fit.write_text("{}\n")
    other = tmp_path / "other.json"
    other.write_text("[]")
    options = {
        "gppm_cluster": {"fit_on": str(fit), "k": 30},
        "br_binoculars": {"observer": "embedded", "pair": [str(other), str(fit)]},
        "missing": {"fit_on": str(tmp_path / "absent.jsonl")},
    }
    manifest = load_benchmark("common.manifest")
    assert manifest.files_named_in(options) == [fit, other]
    assert manifest.files_named_in(None) == []
    [described] = manifest.describe_data(manifest.files_named_in({"a": str(fit)}))
    assert described["bytes"] == 3 and described["sha256"] == manifest.sha256(fit)


def test_the_machine_is_described_again_when_the_run_finishes(tmp_path: Path, monkeypatch):
    """A run starts before torch has loaded a model, so the GPU it then uses is only known at
    the end (seen on an H100: a journal and manifest with no GPU)."""
    manifest = load_benchmark("common.manifest")
    run = manifest.Run(tmp_path / "results")
    assert "gpu" not in run.record["machine"] or run.record["machine"]["gpu"]
    seen = {"platform": "p", "cpu": "c", "cpus": 16, "gpu": {"name": "NVIDIA H100 80GB HBM3"}}
    monkeypatch.setattr(manifest, "describe_machine", lambda: seen)
    assert json.loads(run.finish().read_text())["machine"] == seen


def test_a_manifest_names_the_repositorys_files_relative_to_its_root(tmp_path: Path):
    _manifest = load_benchmark("common.manifest")
    REPO = _manifest.REPO
    Run = _manifest.Run
    portable = _manifest.portable

    data = REPO / "gem_tasks" / "tasks" / "data"
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("{}\n")
    run = Run(tmp_path / "out", data=[data, outside], settings={"data": str(data), "n": 3})
    assert [d["path"] for d in run.record["data"]] == ["gem_tasks/tasks/data", str(outside)]
    assert run.record["settings"] == {"data": "gem_tasks/tasks/data", "n": 3}
    assert portable([REPO / "benchmarks", "/elsewhere", {"k": str(REPO)}]) == [
        "benchmarks",
        "/elsewhere",
        {"k": "."},
    ]


def test_rebuilt_report_is_rendered_from_its_tables_and_recorded(tmp_path: Path):
    """benchmarks/common/rebuild_report.py on a copy of a committed report folder: report.md is
    today's rendering of the committed tables (the same lines as the run wrote but the text that
    changed since), its new hash is in the owning manifest with the rebuild's provenance and the
    tables' hashes; a folder without its robustness table or without a manifest is refused."""
    import shutil

    rebuild_report = load_benchmark("common.rebuild_report")
    from gem_tasks.analysis.report import render_report

    source = REPO / "benchmarks/experiments/finetune_smollm2/results"
    results = tmp_path / "results"
    shutil.copytree(source / "report_base", results / "report_base")
    shutil.copy(source / "manifest.json", results / "manifest.json")
    folder = results / "report_base"
    before = (folder / "report.md").read_text().splitlines()
    report = rebuild_report.rebuild(folder)
    after = report.read_text().splitlines()
    tables = [rebuild_report.read_table(folder / name) for name in rebuild_report.TABLES]
    assert report.read_text() == render_report(*tables)
    assert len(after) == len(before) and sum(a != b for a, b in zip(after, before)) <= 1
    manifest = json.loads((results / "manifest.json").read_text())
    assert manifest["files"]["report_base/report.md"] == sha256(report)
    record = manifest["rebuilt"]["report_base/report.md"]
    assert record["commit"] and "rebuild_report" not in record["from"]
    assert record["from"]["report_base/robustness.csv"] == sha256(folder / "robustness.csv")
    assert manifest["command"] == json.loads((source / "manifest.json").read_text())["command"]
    (folder / "robustness.csv").unlink()
    with pytest.raises(FileNotFoundError, match="nothing to render"):
        rebuild_report.rebuild(folder)
    with pytest.raises(FileNotFoundError, match="no manifest.json"):
        rebuild_report.rebuild(tmp_path / "elsewhere" / "results")
