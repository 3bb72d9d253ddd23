"""Convert a published review dataset into a GRE-bench folder (records + data card), with the
same filters and seeded sampling as the OpenReview builder.

Sources: ``gem-release`` (the GEM authors' ICLR 2023 file, :func:`scorers.data.sources.gem_release.
gem_release_records`) and ``hub:<name>`` (a supported Hugging Face dataset,
:mod:`gem_data.openreview.hub`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gem_data.openreview.build import BuildResult, package_version
from gem_data.openreview.enrich import Enricher, enrich_records
from gem_data.openreview.hub import hub_records
from gem_data.openreview.output import record_row, write_dataset
from gem_data.openreview.sampling import select_papers, select_reviews
from scorers.data.decisions import decision_counts, decision_from, join_decisions, read_decisions
from scorers.data.records import load_records
from scorers.data.sources.gem_release import gem_release_records

__all__ = ["GEM_RELEASE", "ConvertConfig", "convert_dataset"]

GEM_RELEASE = {
    "name": "GEM authors' ICLR 2023 release",
    "url": "https://github.com/yx-lu/Benchmarking-LLMs--Judgments-with-No-Gold-Standard",
    "license": "Apache-2.0",
    "notes": "task_iclr23/dataset/: 3 human reviews per paper in the four-section layout, each "
    "with its GPT-4o judgment summary; no titles, abstracts or paper texts (the title is the "
    "OpenReview id and the abstract is empty).",
}


@dataclass(frozen=True)
class ConvertConfig:
    """What to convert (the CLI's ``gem-tasks data convert`` options)."""

    source: str
    """``gem-release`` or ``hub:<name>``."""
    input: str
    out: Path
    min_reviews: int = 3
    reviews_per_paper: int | None = 3
    papers: int | None = None
    seed: int = 0
    split: str | None = None
    """Hub split (default: the dataset's ICLR split)."""
    limit_rows: int | None = None
    """Read at most this many source rows (for a quick look at a large dataset)."""
    decisions: Path | None = None
    """A decisions file (:func:`scorers.data.decisions.read_decisions`) joined by paper id."""


def _read(config: ConvertConfig) -> tuple[list[dict[str, Any]], Counter[str], dict[str, Any]]:
    if config.source == "gem-release":
        records = [record_row(r) for r in gem_release_records(config.input)]
        return records, Counter(rows=len(records)), dict(GEM_RELEASE)
    if config.source == "records":  # canonical records, e.g. to join decisions or resample
        read = load_records(config.input)
        records = [
            record_row(
                r,
                {
                    "decision": r.decision.label if r.decision else None,
                    "official_ratings": r.official_ratings,
                },
            )
            for r in read
        ]
        source = {
            "name": Path(config.input).name,
            "url": str(config.input),
            "license": "as the records' own source",
            "notes": "Canonical records read as they are.",
        }
        return records, Counter(rows=len(records)), source
    if config.source.startswith("hub:"):
        records, counts, dataset = hub_records(
            config.source.removeprefix("hub:"),
            config.input,
            split=config.split,
            limit=config.limit_rows,
        )
        source = {
            "name": dataset.repo_id,
            "url": dataset.url,
            "license": dataset.license,
            "split": config.split or dataset.split,
            "notes": dataset.notes,
        }
        return records, counts, source
    raise ValueError(
        f"unknown source {config.source!r}: use 'gem-release', 'records' or 'hub:<name>'"
    )


def convert_dataset(
    config: ConvertConfig, *, enricher: Enricher | None = None, progress: bool = True
) -> BuildResult:
    """Read ``config.input``, keep papers with at least ``min_reviews`` reviews, sample
    ``papers`` of them and ``reviews_per_paper`` reviews each with ``seed``, and write records
    and a data card to ``config.out``; with ``decisions``, each paper's decision is joined by
    id first and the card counts the labels. Raises ``RecordError`` for a malformed source,
    ``DecisionError`` (a ``ValueError``) for a malformed decisions file or one that contradicts
    the records, and ``ValueError`` for an unknown source or when no paper is left."""
    if config.min_reviews < 1:
        raise ValueError(f"min_reviews must be at least 1, got {config.min_reviews}")
    records, counts, source = _read(config)
    joined = (
        join_decisions(records, read_decisions(config.decisions))
        if config.decisions is not None
        else None
    )
    eligible = {r["id"]: r for r in records if len(r["reviews"]) >= config.min_reviews}
    if not eligible:
        raise ValueError(
            f"{config.input}: no paper has at least {config.min_reviews} usable reviews "
            f"({len(records)} papers read)"
        )
    chosen = []
    for paper_id in select_papers(list(eligible), config.papers, seed=config.seed):
        record = eligible[paper_id]
        reviews = record["reviews"]
        keep = select_reviews(
            paper_id, [r["id"] for r in reviews], config.reviews_per_paper, seed=config.seed
        )
        chosen.append({**record, "reviews": [reviews[i] for i in keep]})
    card: dict[str, Any] = {
        "name": f"GRE-bench from {source['name']}",
        "source": {
            **source,
            "input": str(config.input),
            "converted_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "converter": f"gem-tasks {package_version()} (gem_data.openreview.convert)",
        },
        "filters": {
            "min_reviews": config.min_reviews,
            "reviews_per_paper": config.reviews_per_paper,
            "papers": config.papers,
            "seed": config.seed,
        },
        "counts": {
            **dict(counts),
            "papers_read": len(records),
            "papers_below_min_reviews": len(records) - len(eligible),
            "eligible_papers": len(eligible),
            "papers": len(chosen),
            "reviews": sum(len(r["reviews"]) for r in chosen),
            "papers_with_text": sum(1 for r in chosen if r.get("paper_text")),
        },
        "decisions": {
            **decision_counts(decision_from(r.get("decision")) for r in chosen),
            **({"file": str(config.decisions), **joined} if joined is not None else {}),
        },
        "licence_notes": f"Source licence: {source['license']} ({source['url']}). "
        f"{source['notes']}",
    }
    if enricher is not None:
        card["enrichments"] = enrich_records(
            chosen, enricher, cache_dir=Path(config.out) / "cache", progress=progress
        )
    paths = write_dataset(chosen, Path(config.out), card)
    return BuildResult(records=chosen, card=card, paths=paths)
