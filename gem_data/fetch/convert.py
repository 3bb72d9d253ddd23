"""Converters from the files each source publishes to the files the tasks and experiments read.

Each converter takes the folder the source's files were downloaded to (their paths as in the
source repository) and the dataset's output folder, writes its outputs there and returns their
names. The layouts written are the ones :mod:`scorers.data.sources` reads; a converter checks
every field it uses and stops with a :class:`~scorers.data.records.RecordError` naming the file
and row, so a source that changed shape is never converted half-way.
"""

from __future__ import annotations

import csv
import io
import json
import pickle
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from gem_data.files import atomic_write_bytes, atomic_write_text
from scorers.data.records import RecordError

__all__ = [
    "GEM_RELEASE_ROWS",
    "PAPERLISTS_DECISIONS",
    "SPACE_ASPECTS",
    "decisions_csv",
    "gem_release_reviews",
    "gppm_papers",
    "lfqa_e_benchmark",
    "space_references",
    "summeval_articles",
    "summeval_subset_ids",
    "write_jsonl",
]

GEM_RELEASE_ROWS = range(300, 1500)
"""The rows of the GEM release's three ``dataset_human_review<k>.parquet`` files converted: the
1,200 ICLR 2023 papers after the release's first 300."""

SPACE_ASPECTS = ("building", "cleanliness", "food", "general", "location", "rooms", "service")

PAPERLISTS_DECISIONS = {
    "ICLR 2020": {
        "Poster": "Accept (Poster)",
        "Spotlight": "Accept (Spotlight)",
        "Talk": "Accept (Oral/Talk)",
        "Oral": "Accept (Oral/Talk)",
        "Reject": "Reject",
    },
    "ICLR 2023": {
        "Poster": "Accept (Poster)",
        "Top-25%": "Accept (Spotlight, notable-top-25%)",
        "Top-5%": "Accept (Oral, notable-top-5%)",
        "Reject": "Reject",
    },
}
"""paperlists' ``status`` of a paper mapped to OpenReview's decision wording, per venue; a status
not listed (withdrawn, desk-rejected, an unknown word) stops the conversion, naming the paper."""


def write_jsonl(path: Path, rows: Iterable[Any], *, ensure_ascii: bool = True) -> None:
    """Write one JSON object per line (``json.dumps`` defaults, ``\\n`` endings), atomically
    (:func:`~gem_data.files.atomic_write_text`): a stopped conversion
    leaves no half-written file under the name."""
    atomic_write_text(
        path, "".join(json.dumps(row, ensure_ascii=ensure_ascii) + "\n" for row in rows)
    )


def _copy(source: Path, target: Path) -> None:
    """A file as published, byte for byte (no newline translation), written atomically."""
    atomic_write_bytes(target, source.read_bytes())


def _field(row: Any, key: str, where: str) -> Any:
    if not isinstance(row, dict) or key not in row or row[key] is None:
        raise RecordError(f"{where}: missing field {key!r}")
    return row[key]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: not readable JSON ({exc})") from None


# --- ICLR 2023, the GEM authors' release --------------------------------------------------------


def gem_release_reviews(
    raw: Path, out: Path, *, rows: Sequence[int] = GEM_RELEASE_ROWS
) -> list[str]:
    """``iclr2023_reviews.jsonl`` from the release's three parquet files (one human review per
    file and paper, aligned by row): ``{"paper_id", "reviews": [{"review", "review_summary"}]}``
    per paper, the reviews in file order, for the given rows."""
    import pandas as pd

    folder = raw / "task_iclr23" / "dataset"
    frames = []
    for k in (1, 2, 3):
        path = folder / f"dataset_human_review{k}.parquet"
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise RecordError(f"{path}: not a readable parquet file ({exc})") from None
        missing = {"paper_id", "review", "review_summary"} - set(frame.columns)
        if missing:
            raise RecordError(f"{path}: missing column(s) {sorted(missing)}")
        if len(frame) < max(rows) + 1:
            raise RecordError(f"{path}: {len(frame)} rows, expected at least {max(rows) + 1}")
        frames.append(frame)
    papers = []
    for i in rows:
        ids = {str(frame["paper_id"].iloc[i]) for frame in frames}
        if len(ids) != 1:
            raise RecordError(f"{folder}: row {i} names different papers {sorted(ids)}")
        reviews = []
        for k, frame in enumerate(frames, start=1):
            review, summary = frame["review"].iloc[i], frame["review_summary"].iloc[i]
            if not isinstance(review, str) or not review.strip():
                raise RecordError(f"dataset_human_review{k}.parquet row {i}: empty review")
            reviews.append({"review": review, "review_summary": summary})
        papers.append({"paper_id": ids.pop(), "reviews": reviews})
    write_jsonl(out / "iclr2023_reviews.jsonl", papers, ensure_ascii=False)
    return ["iclr2023_reviews.jsonl"]


# --- ICLR 2020, the GPPM authors' set -----------------------------------------------------------


def _rating(label: str, where: str) -> int:
    head = label.split(":", 1)[0].strip()
    if not head.isdigit():
        raise RecordError(f"{where}: rating {label!r} does not start with its number")
    return int(head)


def gppm_papers(raw: Path, out: Path) -> list[str]:
    """``iclr2020_papers.jsonl`` (canonical records: ``id, venue, title, abstract,
    reviews[{id, text, rating, rating_label, experience_assessment}]``) from the published
    ``openreview_item_rand.json`` (papers) and ``openreview_review_rand.json`` (reviews, each
    naming its paper in ``belong_id``), which are copied beside it as published. Papers keep the
    published order, each paper's reviews theirs; a review of no listed paper, or a paper with
    none, stops the conversion."""
    folder = raw / "openreview"
    items_path = folder / "openreview_item_rand.json"
    reviews_path = folder / "openreview_review_rand.json"
    items, reviews = _json(items_path), _json(reviews_path)
    if not isinstance(items, list) or not isinstance(reviews, list):
        raise RecordError(f"{folder}: expected JSON lists of papers and of reviews")
    by_paper: dict[str, list[dict[str, Any]]] = {}
    for k, review in enumerate(reviews):
        where = f"{reviews_path.name}[{k}]"
        label = str(_field(review, "rating", where))
        by_paper.setdefault(str(_field(review, "belong_id", where)), []).append(
            {
                "id": _field(review, "uid", where),
                "text": _field(review, "review", where),
                "rating": _rating(label, where),
                "rating_label": label,
                "experience_assessment": review.get("experience_assessment"),
            }
        )
    papers = []
    for k, item in enumerate(items):
        where = f"{items_path.name}[{k}]"
        paper_id = str(_field(item, "id", where))
        if paper_id not in by_paper:
            raise RecordError(f"{where}: paper {paper_id} has no review")
        papers.append(
            {
                "id": paper_id,
                "venue": "ICLR 2020",
                "title": _field(item, "title", where),
                "abstract": _field(item, "abstract", where),
                "reviews": by_paper.pop(paper_id),
            }
        )
    if by_paper:
        raise RecordError(f"{reviews_path}: reviews of papers not listed: {sorted(by_paper)[:5]}")
    write_jsonl(out / "iclr2020_papers.jsonl", papers)
    for path in (items_path, reviews_path):
        _copy(path, out / path.name)
    return ["iclr2020_papers.jsonl", items_path.name, reviews_path.name]


# --- decisions (papercopilot/paperlists) --------------------------------------------------------


def decisions_csv(
    listing: Path, paper_ids: Sequence[str], out_path: Path, *, venue: str
) -> list[str]:
    """A decisions file (``id, decision, accept, ratings``: OpenReview's decision wording, 1/0,
    every official reviewer's rating ``;``-separated in the listing's order) for ``paper_ids``,
    in that order, from a paperlists year listing (a JSON list of ``{id, status, rating}``).
    A paper missing from the listing, or with a status that is no decision (withdrawn), stops
    the conversion."""
    words = PAPERLISTS_DECISIONS[venue]
    rows = _json(listing)
    if not isinstance(rows, list):
        raise RecordError(f"{listing}: expected a JSON list of papers")
    by_id = {}
    for k, row in enumerate(rows):
        if isinstance(row, dict) and "id" in row:
            by_id[str(row["id"])] = (k, row)
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # \r\n line endings, as csv writes them
    writer.writerow(["id", "decision", "accept", "ratings"])
    for paper_id in paper_ids:
        if paper_id not in by_id:
            raise RecordError(f"{listing}: paper {paper_id} is not listed")
        k, row = by_id[paper_id]
        where = f"{listing.name}[{k}] ({paper_id})"
        status = str(_field(row, "status", where))
        if status not in words:
            raise RecordError(
                f"{where}: status {status!r} is not a decision of {venue} (known: {sorted(words)})"
            )
        decision = words[status]
        writer.writerow(
            [paper_id, decision, 0 if decision == "Reject" else 1, str(row.get("rating") or "")]
        )
    atomic_write_text(out_path, buffer.getvalue())
    return [out_path.name]


# --- SummEval (neulab/BARTScore's copy) ---------------------------------------------------------


class _DataOnlyUnpickler(pickle.Unpickler):
    """Unpickles plain data only (dicts, lists, strings, numbers): a pickle that names any class
    or function is refused, so loading it cannot run code."""

    def find_class(self, module: str, name: str) -> Any:
        raise RecordError(f"the pickle names {module}.{name}; only plain data is read")


def summeval_subset_ids() -> list[str]:
    """The 60 SummEval articles of ``summeval_60docs.jsonl`` (the evidence's subset), from the
    list shipped beside this module."""
    text = resources.files(__package__).joinpath("summeval_60docs.txt").read_text("utf-8")
    return [line.strip() for line in text.splitlines() if line.strip()]


def summeval_articles(raw: Path, out: Path) -> list[str]:
    """``summeval.jsonl`` (all 100 articles, sorted by id) and ``summeval_60docs.jsonl`` (the 60
    of :func:`summeval_subset_ids`), one article per line: ``{doc_id, source, references,
    systems: {model: {summary, expert_avg}}}`` (systems sorted by name), from BARTScore's
    ``SUM/SummEval/data.pkl`` (``{doc_id: {src, ref_summs, sys_summs: {model: {sys_summ,
    scores}}}}``), read as plain data only."""
    path = raw / "SUM" / "SummEval" / "data.pkl"
    try:
        with path.open("rb") as handle:
            data = _DataOnlyUnpickler(handle).load()
    except (OSError, pickle.UnpicklingError, EOFError) as exc:
        raise RecordError(f"{path}: not a readable pickle ({exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a dict of articles")
    articles = {}
    for doc_id, entry in data.items():
        where = f"{path.name}[{doc_id}]"
        systems = _field(entry, "sys_summs", where)
        articles[str(doc_id)] = {
            "doc_id": str(doc_id),
            "source": _field(entry, "src", where),
            "references": list(_field(entry, "ref_summs", where)),
            "systems": {
                name: {
                    "summary": _field(system, "sys_summ", f"{where}[{name}]"),
                    "expert_avg": dict(_field(system, "scores", f"{where}[{name}]")),
                }
                for name, system in sorted(systems.items())
            },
        }
    write_jsonl(out / "summeval.jsonl", (articles[k] for k in sorted(articles)))
    subset = summeval_subset_ids()
    missing = [doc for doc in subset if doc not in articles]
    if missing:
        raise RecordError(f"{path}: the subset's articles {missing[:3]} are not in the file")
    write_jsonl(out / "summeval_60docs.jsonl", (articles[k] for k in sorted(subset)))
    return ["summeval.jsonl", "summeval_60docs.jsonl"]


# --- SPACE (stangelid/qt) -----------------------------------------------------------------------


def space_split(raw: Path, split: str) -> list[str]:
    """The hotels of a split (``dev`` or ``test``) from ``data/space_summ_splits.txt``
    (``<entity_id> <split>`` per line), sorted as strings."""
    path = raw / "data" / "space_summ_splits.txt"
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise RecordError(f"{path}: not readable ({exc})") from None
    hotels = []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 2:
            raise RecordError(f"{path}:{number}: expected '<entity_id> <split>', got {line!r}")
        if fields[1] == split:
            hotels.append(fields[0])
    if not hotels:
        raise RecordError(f"{path}: no hotel in split {split!r}")
    return sorted(hotels)


def space_gold_paths(hotels: Sequence[str]) -> list[str]:
    """The repository paths of the hotels' gold summaries: ``data/gold/<aspect>/<id>_<k>.txt``
    for the seven aspects and k = 0, 1, 2."""
    return [
        f"data/gold/{aspect}/{hotel}_{k}.txt"
        for hotel in hotels
        for aspect in SPACE_ASPECTS
        for k in range(3)
    ]


def space_references(raw: Path, out: Path, *, split: str = "dev") -> list[str]:
    """``space_<split>_refs.jsonl``: per hotel of the split (sorted as strings) ``{entity_id,
    split, summaries: {aspect: [3 summaries]}}``, each summary's whitespace runs (tabs, the
    final newline) collapsed to single spaces."""
    rows = []
    for hotel in space_split(raw, split):
        summaries: dict[str, list[str]] = {}
        for aspect in SPACE_ASPECTS:
            texts = []
            for k in range(3):
                path = raw / "data" / "gold" / aspect / f"{hotel}_{k}.txt"
                try:
                    text = " ".join(path.read_text(encoding="utf-8").split())
                except OSError as exc:
                    raise RecordError(f"{path}: not readable ({exc})") from None
                if not text:
                    raise RecordError(f"{path}: empty summary")
                texts.append(text)
            summaries[aspect] = texts
        rows.append({"entity_id": hotel, "split": split, "summaries": summaries})
    name = f"space_{split}_refs.jsonl"
    write_jsonl(out / name, rows)
    return [name]


# --- LFQA-E -------------------------------------------------------------------------------------


LFQA_E_FIELDS = ("id", "question", "reference", "response_a", "response_b", "label")


def lfqa_e_benchmark(raw: Path, sample: Path, out: Path) -> list[str]:
    """``lfqa_e_en.json``: LFQA-E's English benchmark as published (``raw``: ``data/
    unified_benchmark_en.json``: ``id, question, context, type, reference, response_a,
    response_b, compare_type, label``), after checking that every record has the fields the
    task reads and a label of ``response_a``, ``response_b`` or ``same``; and
    ``lfqa_e_en_sample.json``, the 12 English test records of LFQA-E's earlier release
    (``sample``: ``data/en_test.json``, ``Concise_Reference`` and an ``<a>_vs_<b>`` preference),
    as published."""
    path = raw / "data" / "unified_benchmark_en.json"
    rows = _json(path)
    if not isinstance(rows, list) or not rows:
        raise RecordError(f"{path}: expected a non-empty JSON list of records")
    for k, row in enumerate(rows):
        for key in LFQA_E_FIELDS:
            _field(row, key, f"{path.name}[{k}]")
        if row["label"] not in ("response_a", "response_b", "same"):
            raise RecordError(f"{path.name}[{k}]: label {row['label']!r} is not a preference")
    _copy(path, out / "lfqa_e_en.json")
    sample_path = sample / "data" / "en_test.json"
    sample_rows = _json(sample_path)
    if not isinstance(sample_rows, list) or not sample_rows:
        raise RecordError(f"{sample_path}: expected a non-empty JSON list of records")
    for k, row in enumerate(sample_rows):
        for key in ("id", "question", "Concise_Reference"):
            _field(row, key, f"{sample_path.name}[{k}]")
    _copy(sample_path, out / "lfqa_e_en_sample.json")
    return ["lfqa_e_en.json", "lfqa_e_en_sample.json"]
