"""The benchmarks' records file: the first papers of a fetched dataset written as canonical
records, so that every benchmark run on the same data and count scores the same papers with the
same split (and shares the score cache's rewrites)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from scorers.data.records import load_records
from scorers.data.sources.gem_release import gem_release_records


def write_records(data: Path, out: Path, papers: int, *, release: bool) -> Path:
    """``out/records_<papers>.jsonl``: the first ``papers`` records of ``data`` (the GEM
    authors' ICLR 2023 release when ``release``, else canonical records), review extras left
    out."""
    records = (gem_release_records(data) if release else load_records(data))[:papers]
    path = out / f"records_{papers}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            row = asdict(record)
            row["reviews"] = [{k: v for k, v in r.items() if k != "extra"} for r in row["reviews"]]
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
