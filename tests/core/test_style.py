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
