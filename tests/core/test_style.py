"""The code style CI enforces: ``ruff check`` and ``ruff format --check`` over the repository (the
rules and line length are in pyproject.toml)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from conftest import REPO


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff(command):
    ruff = shutil.which("ruff") or None
    args = [ruff] if ruff else [sys.executable, "-m", "ruff"]
    run = subprocess.run([*args, *command, str(REPO)], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


MAX_FUNCTION_LINES = 80
"""The longest a function outside the tests and the benchmarks may be (its signature, docstring
and body): a longer one does more than one thing."""


def test_no_function_outside_tests_and_benchmarks_is_over_80_lines():
    import ast

    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout.split()
    long = []
    for name in tracked:
        if name.startswith(("tests/", "benchmarks/")) or not (REPO / name).exists():
            continue
        for node in ast.walk(ast.parse((REPO / name).read_text(), filename=name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, "split these functions:\n" + "\n".join(long)
