"""Re-render a results folder's ``report.md`` from the tables written beside it, with today's
renderer (:func:`gem_tasks.analysis.report.render_report`), without the logs it was first
written from (they are not committed).

The numbers come from the committed ``robustness.csv``, ``correlation.csv`` and
``ratings_correlation.csv``; only the text around them (footnotes, table layout, the counts
derived from the rows) follows the renderer as it now is. The owning manifest keeps the run's
provenance and records the rebuild under ``rebuilt`` (command, commit, when, and the hashes of
the tables read and of the report written), with the report's new hash under ``files``::

    python -m benchmarks.common.rebuild_report \
        benchmarks/experiments/finetune_smollm2/results/report_base
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from benchmarks.common.manifest import (
    MANIFEST,
    command_line,
    git,
    now,
    sha256,
    tracked_changes,
)
from gem_tasks.analysis.report import render_report

TABLES = ("robustness.csv", "correlation.csv", "ratings_correlation.csv")
"""The tables report.md is rendered from, as write_report writes them."""


def owning_manifest(folder: Path) -> Path:
    """The manifest of ``folder`` or of the nearest folder above it, up to ``results``.

    Raises:
        FileNotFoundError: none (a folder no benchmark script wrote).
    """
    for candidate in (folder, *folder.parents):
        if (candidate / MANIFEST).exists():
            return candidate / MANIFEST
        if candidate.name == "results":
            break
    raise FileNotFoundError(f"no {MANIFEST} at or above {folder} (up to its results folder)")


def read_table(path: Path) -> pd.DataFrame:
    """A table as write_report wrote it (an empty or absent one, as runs before the correlation
    tables existed left them: no rows, no columns)."""
    if not path.exists():
        return pd.DataFrame()
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()


def rebuild(folder: Path, *, uncommitted_changes: bool | None = None) -> Path:
    """Write ``folder/report.md`` anew from its tables and record it in the owning manifest;
    returns the report's path. ``uncommitted_changes``: as found before this and any earlier
    rebuild of the same command wrote (None: look now).

    Raises:
        FileNotFoundError: ``robustness.csv`` or the manifest is missing.
    """
    folder = Path(folder)
    manifest_path = owning_manifest(folder)
    tables = [folder / name for name in TABLES]
    if not tables[0].exists():
        raise FileNotFoundError(f"no {tables[0]}: nothing to render the report from")
    robust, corr, rated = (read_table(path) for path in tables)
    report = folder / "report.md"
    report.write_text(render_report(robust, corr, rated), encoding="utf-8")
    manifest = json.loads(manifest_path.read_text())
    root = manifest_path.parent
    name = report.relative_to(root).as_posix()
    manifest["files"][name] = sha256(report)
    manifest.setdefault("rebuilt", {})[name] = {
        "command": command_line(),
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": (
            tracked_changes() if uncommitted_changes is None else uncommitted_changes
        ),
        "date": now(),
        "from": {
            path.relative_to(root).as_posix(): sha256(path) if path.exists() else "absent"
            for path in tables
        },
    }
    manifest_path.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding report.md")
    changed = tracked_changes()
    for folder in parser.parse_args(argv).folders:
        print(rebuild(folder, uncommitted_changes=changed))


if __name__ == "__main__":
    main()
