"""Where the benchmarks find the repository, the shared data and the bundled demo."""

from __future__ import annotations

from pathlib import Path

from gem_tasks.tasks.samples import DEMO_DATASET

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
DEMO = Path(DEMO_DATASET)  # the bundled demo papers
