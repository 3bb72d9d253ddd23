"""The suite's own guard (``tests/conftest.py``): a test not marked ``slow`` may not run an eval
end to end, in its process or as a command, so that ``scripts/test.sh --fast`` stays a quick
loop."""

from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import runs_an_eval


@pytest.mark.parametrize(
    "command,runs",
    [
        (["inspect", "eval", "gem_tasks/iclr", "--model", "none"], True),
        ([sys.executable, "-m", "inspect_ai", "eval", "gem_tasks/iclr"], True),
        (["/usr/local/bin/inspect", "score", "log.eval"], True),
        (["inspect", "eval-set", "gem_tasks/iclr"], True),
        ("inspect eval gem_tasks/iclr --limit 1", True),
        ([sys.executable, "-m", "lm_eval", "run", "--tasks", "gre_bench_iclr"], True),
        (["vllm", "serve", "model"], True),
        ([sys.executable, "tests/support/vllm_cpu_serve.py", "serve", "model"], True),
        (["inspect", "view"], False),
        (["inspect", "--version"], False),
        ([sys.executable, "-c", "print('eval')"], False),
        (["git", "status"], False),
        (["mkdocs", "build", "--strict"], False),
        (["gem-tasks", "leaderboard", "logs"], False),
    ],
)
def test_which_commands_run_an_eval(command, runs):
    assert runs_an_eval(command) is runs


def test_an_unmarked_test_may_not_start_an_eval_command():
    with pytest.raises(AssertionError, match="starts an eval end to end in a subprocess"):
        subprocess.run(["inspect", "eval", "gem_tasks/iclr"], check=False)
    done = subprocess.run([sys.executable, "-c", "print('ok')"], capture_output=True, text=True)
    assert done.stdout == "ok\n"


def test_an_unmarked_test_may_not_run_an_eval_in_process():
    from inspect_ai import Task
    from inspect_ai import eval as run_eval
    from inspect_ai.dataset import Sample

    with pytest.raises(AssertionError, match="runs an Inspect eval end to end"):
        run_eval(Task(dataset=[Sample(input="x")]), model="none", display="none")
