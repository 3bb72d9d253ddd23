"""The refactor check (scripts/same_scores.py): two logs' scores compared field by field, and the
whole check end to end on one demo paper against this checkout's own HEAD."""

from __future__ import annotations

import importlib.util
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO


def same_scores():
    path = REPO / "scripts" / "same_scores.py"
    spec = importlib.util.spec_from_file_location("same_scores", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _log(path: Path, scores: dict[str, dict], status: str = "success") -> Path:
    sample = {"id": "p1", "epoch": 1, "scores": scores}
    path.write_text(json.dumps({"status": status, "samples": [sample]}))
    return path


def test_every_field_of_every_score_is_compared(tmp_path: Path):
    module = same_scores()
    score = {"value": 1.5, "answer": "a", "explanation": "e", "metadata": {"x": [1, 2]}}
    base = module.scores_of(_log(tmp_path / "a.json", {"gem": score, "bleu": score}))
    assert set(base) == {("p1", 1, "gem"), ("p1", 1, "bleu")}
    assert module.differences(base, dict(base)) == []
    changes = (("value", 1.5000001), ("explanation", "e "), ("metadata", {"x": [2, 1]}))
    for field, changed in changes:
        changed_log = _log(tmp_path / "b.json", {"gem": {**score, field: changed}, "bleu": score})
        other = module.scores_of(changed_log)
        found = module.differences(base, other)
        assert len(found) == 1 and found[0].startswith(f"sample p1 epoch 1 gem: {field} differs")
    fewer = module.scores_of(_log(tmp_path / "c.json", {"gem": score}))
    assert module.differences(base, fewer) == ["sample p1 epoch 1 bleu: only in the base's log"]
    with pytest.raises(SystemExit, match="status error"):
        module.scores_of(_log(tmp_path / "d.json", {}, status="error"))


@pytest.mark.slow
def test_the_check_passes_against_head_and_refuses_an_unknown_commit():
    """HEAD against the checkout on one paper with BLEU: identical unless the working tree
    changed BLEU (then this test says so, which is what the check is for)."""
    script = [sys.executable, str(REPO / "scripts" / "same_scores.py")]
    bad = subprocess.run([*script, "--base", "no-such-rev"], capture_output=True, text=True)
    assert bad.returncode == 2 and "is not a commit of this repository" in bad.stderr
    done = subprocess.run(
        [*script, "--base", "HEAD", "--scorers", "bleu", "--limit", "1"],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 scores identical" in done.stdout
    listed = subprocess.run(["git", "worktree", "list"], capture_output=True, text=True, cwd=REPO)
    assert "same-scores-" not in listed.stdout  # the base's worktree is removed


@pytest.mark.slow
def test_a_stopped_check_leaves_no_worktree(tmp_path: Path):
    """SIGTERM while a side runs: the side is killed and the base's worktree removed."""
    script = [sys.executable, str(REPO / "scripts" / "same_scores.py")]

    def listed() -> set[str]:
        done = subprocess.run(["git", "worktree", "list"], capture_output=True, text=True, cwd=REPO)
        return {line.split()[0] for line in done.stdout.splitlines() if "same-scores-" in line}

    before = listed()
    running = subprocess.Popen(
        [*script, "--base", "HEAD", "--scorers", "bleu", "--limit", "1"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip

    deadline = time.monotonic() + 120
    # the worktree is checked out (the side's eval is starting in it)
    while not any((Path(p) / "pyproject.toml").exists() for p in listed() - before):
        assert running.poll() is None, running.stdout.read()
        assert time.monotonic() < deadline, "the base's worktree never appeared"
        time.sleep(0.2)
    time.sleep(2)
    assert running.poll() is None  # still running its first side
    running.send_signal(signal.SIGTERM)
    output, _ = running.communicate(timeout=120)
    assert running.returncode == 128 + signal.SIGTERM, output
    assert listed() == before
