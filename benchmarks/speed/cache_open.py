"""What opening the score cache costs on a large file: the whole-file integrity check (sqlite's
``quick_check``) that runs when the file is not as a clean close left it, against the open of a
file a clean close stamped, in the same run on the same file.

The cache is filled with generations of about 3.5 kB each (a judgment rewrite's size) to
``--gigabytes``; each open is timed ``--rounds`` times (the file's pages warm in the page cache
after the first) and the medians and their ratio reported.

    python -m benchmarks.speed.cache_open --gigabytes 1 --out benchmarks/speed/results/cache_open
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common.manifest import Run
from scorers.lm.cache import ScoreCache

HERE = Path(__file__).resolve().parent
ROW_BYTES = 3500


def fill(path: Path, gigabytes: float) -> int:
    """A cache of about ``gigabytes`` of generations; returns the rows written."""
    ScoreCache(path).close()
    rows = int(gigabytes * 1e9 / (ROW_BYTES + 100))
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO generations(key, text, checksum) VALUES (?, ?, ?)",
            ((f"k{i}", "x" * ROW_BYTES + str(i), "c") for i in range(rows)),
        )
    db.close()
    ScoreCache(path).close()  # a clean close: stamped
    return rows


def time_open(path: Path, *, stamped: bool) -> tuple[float, bool]:
    if not stamped:
        Path(f"{path}.closed").unlink(missing_ok=True)
    start = time.perf_counter()
    cache = ScoreCache(path)
    elapsed = time.perf_counter() - start
    checked = cache.checked
    cache.close()
    return elapsed, checked


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "cache_open")
    args = parser.parse_args(argv)
    run = Run(args.out, settings=vars(args))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "cache.sqlite"
        rows = fill(path, args.gigabytes)
        size = path.stat().st_size
        times: dict[str, list[float]] = {"whole_file_check": [], "stamped": []}
        for _ in range(args.rounds):
            for kind, stamped in (("whole_file_check", False), ("stamped", True)):
                elapsed, checked = time_open(path, stamped=stamped)
                if checked == stamped:
                    raise SystemExit(f"{kind}: the open did not do what it was timed for")
                times[kind].append(elapsed)
    medians = {kind: statistics.median(values) for kind, values in times.items()}
    result = {
        "file_bytes": size,
        "rows": rows,
        "rounds": args.rounds,
        "seconds": times,
        "median_seconds": medians,
        "stamped_over_checked": medians["stamped"] / medians["whole_file_check"],
    }
    (args.out / "cache_open.json").write_text(json.dumps(result, indent=2) + "\n")
    run.finish()
    print(
        f"{size / 1e9:.2f} GB: open with the whole-file check {medians['whole_file_check']:.3f} "
        f"s, stamped {medians['stamped'] * 1e3:.2f} ms (median of {args.rounds})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
