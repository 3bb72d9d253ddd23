"""The Markdown files the words and links tests read: what a user reads on GitHub or in the site.

The top-level README and CHANGELOG, every page under ``docs/``, every task's README and every
README under ``benchmarks/``. Files inside a ``results/`` folder are left out: they are written by
the benchmark scripts (reports, leaderboards), never edited by hand, and a script's output is
checked by its script's tests, not here.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO


def user_markdown(repo: Path = REPO) -> list[Path]:
    """Every user-facing Markdown source of the repository (results folders left out)."""
    found = [repo / "README.md", repo / "CHANGELOG.md"]
    found += sorted((repo / "docs").rglob("*.md"))
    found += sorted(repo.glob("gem_tasks/tasks/*/README.md"))
    found += sorted((repo / "benchmarks").rglob("README.md"))
    return [p for p in found if p.is_file() and "results" not in p.relative_to(repo).parts]


def without_code_blocks(text: str) -> str:
    """The text with every fenced code block blanked line by line (so that line numbers still
    point at the file)."""
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        opening = re.match(r"\s*(`{3,}|~{3,})", line)
        if fence is None and opening:
            fence, lines[i] = opening.group(1), ""
        elif fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            lines[i] = ""
    return "\n".join(lines)
