"""Public ICLR review datasets on the Hugging Face Hub, read into canonical records.

Supported: **ReviewBench** (``Samarth0710/reviewbench``, https://huggingface.co/datasets/
Samarth0710/reviewbench, licence CC-BY-4.0: reuse with attribution), a multi-conference
OpenReview corpus whose ``iclr`` split holds 22,532 ICLR papers with their official reviews,
decisions and OCR'd full text. Documented row format (one paper per row)::

    forum_id, conference, year, track, venue_id, paper_number, title, abstract, authors,
    keywords, tldr, primary_area, venue, decision, decision_comment, author_rebuttal,
    num_reviews, reviews_json (json.dumps of a list of review dicts), markdown (OCR'd text,
    "" when the PDF was unavailable), markdown_chars

Each review dict is the union of the OpenReview form fields of all venues and years (absent
fields empty or None); ``review_id``, ``reviewer``, ``rating``, ``confidence`` are always there,
``summary``, ``strengths``, ``weaknesses``, ``questions`` for ICLR.

Field mapping (:func:`reviewbench_record`):

| canonical          | ReviewBench                                                         |
| ------------------ | ------------------------------------------------------------------- |
| id                 | forum_id (the OpenReview forum id, as in records built from the API) |
| venue              | f"{conference} {year}", e.g. "ICLR 2025"                            |
| title, abstract    | title, abstract                                                     |
| paper_text         | markdown (None when "")                                             |
| reviews[].id       | review_id (else "<forum_id>-r<k>")                                  |
| reviews[].text     | the review dict read with its year's form (:mod:`.forms`, falling   |
|                    | back to the best-matching form): the ICLR 2023 four-section text    |
| reviews[].rating   | rating parsed ("6: marginally above ..." -> 6) and mapped onto the  |
|                    | ICLR 2024/25 scale (ICLR 2026's {0,...,10}); raw value, label kept  |
| reviews[].confidence | confidence parsed the same way                                    |

Papers whose decision or venue says withdrawn or desk-rejected are skipped and counted, and so
are reviews whose every section is empty. The decision is kept cleaned (``decision``) and raw
(``decision_raw``), with ``conference`` and ``year``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gem_data.openreview.forms import (
    FORMS_BY_YEAR,
    detect_form,
    form_for_year,
    normalise_review,
    stored_ratings,
)
from gem_data.openreview.submissions import clean_decision
from scorers.data.records import RecordError, read_jsonl
from scorers.registries import Registry

__all__ = ["HUB_DATASETS", "REVIEWBENCH", "HubDataset", "hub_dataset", "hub_records", "read_rows"]


@dataclass(frozen=True)
class HubDataset:
    """A supported Hub dataset: where it is, its licence, and its row adapter."""

    name: str
    repo_id: str
    url: str
    license: str
    split: str
    to_record: Callable[[Mapping[str, Any], Counter[str]], dict[str, Any] | None]
    notes: str


def _skip_status(row: Mapping[str, Any]) -> str | None:
    text = f"{row.get('decision') or ''} {row.get('venue') or ''}".lower().replace("-", " ")
    if "desk reject" in text:
        return "desk_rejected"
    if "withdraw" in text:
        return "withdrawn"
    return None


def _reviews(value: Any, *, where: str) -> list[Mapping[str, Any]]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{where}: reviews_json is not valid JSON ({exc.msg})") from None
    if not isinstance(value, list):
        raise RecordError(f"{where}: reviews_json must hold a list of reviews")
    return [r for r in value if isinstance(r, Mapping)]


def reviewbench_record(row: Mapping[str, Any], counts: Counter[str]) -> dict[str, Any] | None:
    """The canonical record of one ReviewBench row (see the module docstring for the mapping),
    or None for a withdrawn/desk-rejected paper; ``counts`` collects what was skipped."""
    paper_id = str(row.get("forum_id") or "")
    where = f"ReviewBench row {paper_id or '?'}"
    if not paper_id:
        raise RecordError(f"{where}: no forum_id")
    status = _skip_status(row)
    if status is not None:
        counts[status] += 1
        return None
    year = int(row["year"]) if row.get("year") is not None else max(FORMS_BY_YEAR)
    default_form = form_for_year(max(year, min(FORMS_BY_YEAR)))
    kept = []
    for k, review in enumerate(_reviews(row.get("reviews_json"), where=where)):
        normalised = normalise_review(review, detect_form(review, default_form))
        if normalised.empty:
            counts["empty_reviews_skipped"] += 1
            continue
        counts[f"form {normalised.form}"] += 1
        kept.append((str(review.get("review_id") or f"{paper_id}-r{k}"), normalised))
    scale, ratings = stored_ratings([normalised for _, normalised in kept])
    reviews = [
        {
            "id": review_id,
            "text": normalised.text,
            "summary": None,
            "rating": rating,
            "confidence": normalised.confidence,
            **normalised.extras(),
        }
        for (review_id, normalised), rating in zip(kept, ratings, strict=True)
    ]
    conference = str(row.get("conference") or "").strip()
    markdown = row.get("markdown")
    return {
        "id": paper_id,
        "venue": f"{conference} {year}".strip() if conference else str(row.get("venue_id") or ""),
        "rating_scale": scale,  # the form's own values where scorers.scales has the scale
        "title": str(row.get("title") or ""),
        "abstract": str(row.get("abstract") or ""),
        "paper_text": markdown if isinstance(markdown, str) and markdown.strip() else None,
        "assw": None,
        "decision": clean_decision(row.get("decision")),
        "decision_raw": str(row.get("decision") or "").strip() or None,
        "conference": conference or None,
        "year": year if row.get("year") is not None else None,
        "reviews": reviews,
    }


REVIEWBENCH = HubDataset(
    name="reviewbench",
    repo_id="Samarth0710/reviewbench",
    url="https://huggingface.co/datasets/Samarth0710/reviewbench",
    license="CC-BY-4.0",
    split="iclr",
    to_record=reviewbench_record,
    notes="ReviewBench (ReviewArena): OpenReview papers, reviews, decisions and OCR'd full "
    "text; CC-BY-4.0, so credit the dataset's authors when redistributing derived data.",
)

HUB_DATASETS: Registry[HubDataset] = Registry(
    "Hub dataset", hint=f"each is also known by its Hub id (reviewbench: {REVIEWBENCH.repo_id})"
)
"""The supported Hub datasets by short name, each with its Hub id as an alias."""
HUB_DATASETS.register("reviewbench", REVIEWBENCH, aliases=(REVIEWBENCH.repo_id,))


def hub_dataset(name: str) -> HubDataset:
    """The supported dataset called ``name`` (short name or Hub id); an unknown name is an
    :class:`~scorers.registries.UnknownNameError` (a ``ValueError``) naming the supported ones."""
    return HUB_DATASETS[name]


def _jsonl_rows(path: Path) -> Iterator[Mapping[str, Any]]:
    for _, row in read_jsonl(path):
        yield row


def _parquet_rows(path: Path) -> Iterator[Mapping[str, Any]]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=256):
        yield from batch.to_pylist()


def read_rows(source: str, *, split: str) -> Iterator[Mapping[str, Any]]:
    """Rows of a dataset from local files (a .jsonl or .parquet file, or a folder of them, e.g.
    a downloaded snapshot) or, for anything else, from the Hub through ``datasets`` (streamed,
    split ``split``)."""
    path = Path(source)
    if path.exists():
        files = (
            [path]
            if path.is_file()
            else sorted(path.rglob("*.parquet")) or sorted(path.rglob("*.jsonl"))
        )
        if not files:
            raise RecordError(f"{path}: no .parquet or .jsonl file")
        for file in files:
            yield from _parquet_rows(file) if file.suffix == ".parquet" else _jsonl_rows(file)
        return
    import datasets

    try:
        rows = datasets.load_dataset(source, split=split, streaming=True)
    except Exception as exc:  # datasets raises many types; name the source in one error
        raise RecordError(f"{source}: could not load ({type(exc).__name__}: {exc})") from exc
    yield from rows


def hub_records(
    name: str, source: str | None = None, *, split: str | None = None, limit: int | None = None
) -> tuple[list[dict[str, Any]], Counter[str], HubDataset]:
    """Canonical record dicts of the supported dataset ``name`` read from ``source`` (local
    files or a Hub id; default its Hub id), at most ``limit`` rows; with the skip counts."""
    dataset = hub_dataset(name)
    counts: Counter[str] = Counter()
    records = []
    for index, row in enumerate(read_rows(source or dataset.repo_id, split=split or dataset.split)):
        if limit is not None and index >= limit:
            break
        counts["rows"] += 1
        record = dataset.to_record(row, counts)
        if record is not None:
            records.append(record)
    return records, counts, dataset
