"""Where the benchmarks find the repository, the public data and the bundled demo."""

from __future__ import annotations

from pathlib import Path

from gem_tasks.tasks.samples import DEMO_DATASET

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data"
"""The data folder: where ``gem-tasks data fetch NAME`` writes when run from the repository
root (its default ``--out data``)."""
DEMO = Path(DEMO_DATASET)  # the bundled demo papers

FETCH_NAMES = {
    "iclr2020_gppm": "iclr2020-gppm",
    "iclr2023_gem": "iclr2023-gem",
    "decisions": "decisions",
    "summeval": "summeval",
    "space": "space",
    "lfqa_e": "lfqa-e",
    "iclr2026": "iclr2026",
}


def missing_data(path: Path) -> str:
    """What to say when a data file is not there: the fetch command that writes it, when it is
    one of the data folder's files, else the path alone."""
    folder = Path(path).parent.name
    if folder in FETCH_NAMES:
        return (
            f"{path}: not found; 'gem-tasks data fetch {FETCH_NAMES[folder]}' (run from the "
            "repository root) writes it, or pass the file with --data"
        )
    return f"{path}: not found"
