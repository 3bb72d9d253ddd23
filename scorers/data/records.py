"""The canonical record: validation, loading and the fixed reference split.

One record per task input (a paper, an article, a hotel, a question)::

    {"id", "venue", "title", "abstract", "paper_text" (optional), "assw" (optional),
     "domain" (optional, default "peer_review"), "group" (optional), "entity" (optional),
     "ground_truth" (optional: true when the reports are gold references, not peers),
     "decision" (optional: the venue's label, e.g. "Accept (poster)"),
     "official_ratings" (optional: every official reviewer's rating, a paper-level list),
     "reviews": [{"id", "text", "summary" (optional), "rating", "confidence",
                  "ratings" (optional: {dimension: number})}],
     "candidates" (optional): [{"id", "text", "ratings": {dimension: number}}]}

Peer review is one domain of it (:mod:`scorers.domains`): in other domains ``reviews`` are the
human reports (reference summaries, answers), ``abstract`` is θ of the "-S" metrics (the article,
the question; empty when there is none), ``paper_text`` the input text, ``group`` the set of
same-kind inputs negatives and random replacements are drawn from, and ``candidates`` existing
reports with human ratings (SummEval's systems). The generic judgment-item schema of
:func:`parse_judgment_item` is read into the same record.

Loading never drops a record silently: a malformed file or a record missing a required field
raises :class:`RecordError` naming the file and the record.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scorers.data.decisions import Decision, DecisionError, decision_from, official_ratings
from scorers.errors import GemTasksError

__all__ = [
    "CandidateRecord",
    "PaperRecord",
    "RecordError",
    "ReviewRecord",
    "ReviewSplit",
    "dataset_identity",
    "load_records",
    "parse_judgment_item",
    "parse_record",
    "read_jsonl",
    "split_reviews",
]


class RecordError(GemTasksError, ValueError):
    """A dataset file or record does not follow the canonical schema."""


@dataclass(frozen=True)
class ReviewRecord:
    """One human review of a paper."""

    id: str
    text: str
    summary: str | None = None
    rating: float | None = None
    confidence: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class CandidateRecord:
    """An existing report of a task input with its human ratings (e.g. a SummEval system's
    summary and its experts' mean coherence, consistency, fluency and relevance)."""

    id: str
    text: str
    ratings: dict[str, float] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class PaperRecord:
    """One task input (a paper in peer review) with its human reports."""

    id: str
    venue: str
    title: str
    abstract: str
    reviews: tuple[ReviewRecord, ...]
    paper_text: str | None = None
    assw: str | None = None
    domain: str = "peer_review"
    group: str | None = None
    """Inputs of the same kind (negatives and random replacements are drawn within it; None:
    the whole dataset is one group)."""
    ground_truth: bool = False
    """The human reports are ground-truth references (a dataset's gold summaries or answers:
    SummEval, SPACE, LFQA-E), not independent peers: existing candidates are scored against
    them with none held out, and the human baseline holds one out only where two or more
    exist."""
    entity: str | None = None
    """What the input is about when several inputs share it (SPACE: the hotel of each
    (hotel, aspect) item): negatives and random replacements come from other entities, never
    from the same hotel's other aspects. None: the input is its own entity."""
    candidates: tuple[CandidateRecord, ...] = ()
    decision: Decision | None = None
    """The venue's outcome (:mod:`scorers.data.decisions`), when the data has it."""
    official_ratings: tuple[float, ...] | None = None
    """Every official reviewer's rating of the paper as the venue's decision data lists them (a
    paper-level list, e.g. where the reviews are stored without their ratings), when given."""
    rating_scale: str = "iclr"
    """The scale the ratings are on (:mod:`scorers.scales`; ``""``: not known): the record's
    ``rating_scale`` when
    it names one (the OpenReview builder writes ``iclr``, the scale it maps every form onto),
    else its venue's (ICLR 2020: ``iclr2020``, ICLR 2026: ``iclr2026``, ...)."""


@dataclass(frozen=True)
class ReviewSplit:
    """The held-out human review (the human-baseline candidate; None where none is held out,
    as for ground-truth references scored against existing candidates) and the references."""

    held_out: ReviewRecord | None
    references: tuple[ReviewRecord, ...]
    others: tuple[ReviewRecord, ...] = ()
    """Every review of the paper but the held-out one, whatever the number of references: the
    committee of "the other reviewers" (the decision rules and the rating error)."""


_REQUIRED_PAPER = ("id", "title", "abstract", "reviews")
_REQUIRED_REVIEW = ("text",)


def _optional_text(value: Any, *, where: str, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise RecordError(f"{where}: field {name!r} must be a string, got {type(value).__name__}")
    return value if value.strip() else None


def _optional_number(value: Any, *, where: str, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(f"{where}: field {name!r} must be a number, got {value!r}")
    return float(value)


def parse_record(raw: Any, *, where: str) -> PaperRecord:
    """Validate one raw mapping as a canonical paper record.

    ``where`` names the file and record position for error messages.
    """
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: a record must be a JSON object, got {type(raw).__name__}")
    missing = [key for key in _REQUIRED_PAPER if raw.get(key) is None]
    if missing:
        raise RecordError(f"{where}: missing required field(s) {missing}")
    paper_id = str(raw["id"])
    where = f"{where} (paper id {paper_id!r})"
    for key in ("title", "abstract"):
        if not isinstance(raw[key], str):
            raise RecordError(
                f"{where}: field {key!r} must be a string, got {type(raw[key]).__name__}"
            )
    reviews_raw = raw["reviews"]
    if not isinstance(reviews_raw, list | tuple) or len(reviews_raw) == 0:
        raise RecordError(f"{where}: field 'reviews' must be a non-empty list")
    reviews = []
    for index, review in enumerate(reviews_raw):
        review_where = f"{where}, review #{index}"
        if not isinstance(review, dict):
            raise RecordError(f"{review_where}: a review must be an object")
        missing = [key for key in _REQUIRED_REVIEW if review.get(key) is None]
        if missing:
            raise RecordError(f"{review_where}: missing required field(s) {missing}")
        for key in _REQUIRED_REVIEW:
            if not isinstance(review[key], str):
                raise RecordError(
                    f"{review_where}: field {key!r} must be a string, got "
                    f"{type(review[key]).__name__} {review[key]!r:.60}"
                )
        known = {"id", "text", "summary", "rating", "confidence"}
        ratings = _ratings(review.get("ratings"), where=review_where)
        if ratings:
            review = {**review, "ratings": ratings}
        reviews.append(
            ReviewRecord(
                id=str(review.get("id") or f"{paper_id}-review{index}"),
                text=review["text"],
                summary=_optional_text(review.get("summary"), where=review_where, name="summary"),
                rating=_optional_number(review.get("rating"), where=review_where, name="rating"),
                confidence=_optional_number(
                    review.get("confidence"), where=review_where, name="confidence"
                ),
                extra={k: v for k, v in review.items() if k not in known},
            )
        )
    return PaperRecord(
        id=paper_id,
        venue=str(raw.get("venue") or ""),
        title=raw["title"],
        abstract=raw["abstract"],
        reviews=tuple(reviews),
        paper_text=_optional_text(raw.get("paper_text"), where=where, name="paper_text"),
        assw=_optional_text(raw.get("assw"), where=where, name="assw"),
        domain=_domain(raw.get("domain"), where=where),
        group=_optional_text(raw.get("group"), where=where, name="group"),
        entity=_optional_text(raw.get("entity"), where=where, name="entity"),
        ground_truth=_flag(raw.get("ground_truth"), where=where, name="ground_truth"),
        candidates=_candidates(raw.get("candidates"), where=where),
        decision=_decision(raw.get("decision"), where=where),
        official_ratings=_official_ratings(raw.get("official_ratings"), where=where),
        rating_scale=_rating_scale(raw, where=where),
    )


def _rating_scale(raw: dict[str, Any], *, where: str) -> str:
    from scorers.scales import venue_scale_name

    declared = raw.get("rating_scale")
    if declared is not None and not isinstance(declared, str):
        raise RecordError(f"{where}: field 'rating_scale' must be a scale name")
    try:
        return venue_scale_name(str(raw.get("venue") or ""), declared)
    except ValueError as exc:
        raise RecordError(f"{where}: field 'rating_scale': {exc}") from None


def _flag(value: Any, *, where: str, name: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RecordError(f"{where}: field {name!r} must be true or false, got {value!r:.40}")
    return value


def _official_ratings(value: Any, *, where: str) -> tuple[float, ...] | None:
    try:
        return official_ratings(value)
    except DecisionError as exc:
        raise RecordError(f"{where}: field 'official_ratings': {exc}") from None


def _decision(value: Any, *, where: str) -> Decision | None:
    try:
        return decision_from(value)
    except DecisionError as exc:
        raise RecordError(f"{where}: field 'decision': {exc}") from None


def _domain(value: Any, *, where: str) -> str:
    from scorers.domains import DOMAINS

    name = value or "peer_review"
    if name not in DOMAINS:
        raise RecordError(f"{where}: {DOMAINS.unknown_message(name)}")
    return name


def _ratings(value: Any, *, where: str) -> dict[str, float]:
    """Human ratings per dimension (``{"coherence": 4.3, ...}``); every value a number."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(f"{where}: 'ratings' must be an object of numbers, got {value!r:.60}")
    return {
        str(k): _optional_number(v, where=where, name=f"ratings.{k}")
        for k, v in value.items()
        if v is not None
    }


def _candidates(value: Any, *, where: str) -> tuple[CandidateRecord, ...]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise RecordError(f"{where}: 'candidates' must be a list")
    out = []
    seen = set()
    for index, raw in enumerate(value):
        at = f"{where}, candidate #{index}"
        if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
            raise RecordError(f"{at}: a candidate must be an object with a string 'text'")
        candidate_id = str(raw.get("id") or f"candidate{index}")
        if candidate_id in seen:
            raise RecordError(f"{at}: duplicate candidate id {candidate_id!r}")
        seen.add(candidate_id)
        out.append(
            CandidateRecord(candidate_id, raw["text"], _ratings(raw.get("ratings"), where=at))
        )
    return tuple(out)


def parse_judgment_item(raw: Any, *, where: str) -> PaperRecord:
    """Validate one generic judgment item (any domain) as a canonical record::

        {"id", "domain", "group" (optional), "entity" (optional),
         "input": {"title", "text", "synopsis"} (each optional),
         "references": [{"id", "text", "summary", "ratings"}] (two or more for a held-out one),
         "ground_truth": true (optional: the references are gold, scored against the
                               candidates with none held out),
         "candidates": [{"id", "text", "ratings"}] (optional)}

    ``input.synopsis`` is θ of the "-S" metrics (an abstract, an article, a question).
    """
    if not isinstance(raw, dict):
        raise RecordError(f"{where}: an item must be a JSON object, got {type(raw).__name__}")
    if raw.get("id") is None or not raw.get("references"):
        raise RecordError(f"{where}: an item needs an 'id' and a non-empty 'references' list")
    given = raw.get("input") or {}
    if not isinstance(given, dict):
        raise RecordError(f"{where}: 'input' must be an object (title, text, synopsis)")
    return parse_record(
        {
            "id": raw["id"],
            "venue": raw.get("group") or "",
            "title": given.get("title") or "",
            "abstract": given.get("synopsis") or "",
            "paper_text": given.get("text"),
            "reviews": raw["references"],
            "domain": raw.get("domain") or "peer_review",
            "group": raw.get("group"),
            "entity": raw.get("entity"),
            "ground_truth": raw.get("ground_truth"),
            "candidates": raw.get("candidates"),
        },
        where=where,
    )


def read_jsonl(path: Path) -> Iterable[tuple[str, Any]]:
    """``(where, row)`` for every non-blank line of a JSONL file; ``where`` is ``file:line``.
    A line that is not JSON raises :class:`RecordError` naming it."""
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            where = f"{path}:{line_number}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(f"{where}: not valid JSON ({exc.msg})") from None


def _read_with_datasets(source: str, *, split: str) -> Iterable[tuple[str, Any]]:
    import datasets

    path = Path(source)
    try:
        if path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet"))):
            files = (
                [str(path)] if path.is_file() else sorted(str(p) for p in path.glob("*.parquet"))
            )
            data = datasets.load_dataset("parquet", data_files=files, split="train")
        else:
            data = datasets.load_dataset(source, split=split)
    except Exception as exc:  # datasets raises many types; name the source in one error
        raise RecordError(
            f"{source}: could not load dataset ({type(exc).__name__}: {exc})"
        ) from exc
    for index, row in enumerate(data):
        yield f"{source}[{index}]", row


def load_records(source: str | Path, *, split: str = "train") -> list[PaperRecord]:
    """Load and validate canonical records from a JSONL file, a parquet file, a folder holding
    either, or a Hugging Face dataset id (through ``datasets``).

    Raises :class:`RecordError` naming the file and record on any malformed input, and on a
    duplicated paper id.
    """
    path = Path(source)
    if path.is_dir():
        jsonl = sorted(path.glob("*.jsonl"))
        parquet = sorted(path.glob("*.parquet"))
        if parquet:
            rows: Iterable[tuple[str, Any]] = _read_with_datasets(str(path), split=split)
        elif jsonl:
            rows = (row for file in jsonl for row in read_jsonl(file))
        else:
            raise RecordError(f"{path}: folder holds no .jsonl or .parquet file")
    elif path.suffix in (".jsonl", ".json"):
        if not path.exists():
            raise RecordError(f"{path}: file not found")
        rows = read_jsonl(path)
    elif path.suffix == ".parquet":
        if not path.exists():
            raise RecordError(f"{path}: file not found")
        rows = _read_with_datasets(str(path), split=split)
    else:
        rows = _read_with_datasets(str(source), split=split)

    records: list[PaperRecord] = []
    seen: dict[str, str] = {}
    for where, raw in rows:
        is_item = isinstance(raw, dict) and "references" in raw and "reviews" not in raw
        record = (parse_judgment_item if is_item else parse_record)(raw, where=where)
        if record.id in seen:
            raise RecordError(
                f"{where}: duplicate paper id {record.id!r} (first at {seen[record.id]})"
            )
        seen[record.id] = where
        records.append(record)
    if not records:
        raise RecordError(f"{source}: no records")
    return records


def split_reviews(
    paper: PaperRecord,
    *,
    references: int,
    seed: int,
    hold_out: bool = True,
    held_out: str | None = None,
) -> ReviewSplit:
    """Choose the held-out review and up to ``references`` reference reviews of ``paper``; with
    ``hold_out`` false (ground-truth references scored against existing candidates), no held-out
    review and up to ``references`` references; with ``held_out`` (a review id), that review is
    held out and the references are up to ``references`` of the others (leave-one-out).

    The choice depends only on (seed, paper id, review ids), so it is identical for every model
    scored and stable across runs and machines. A held-out review needs two reviews (one
    reference without), else ``RecordError`` says why.
    """
    if references < 1:
        raise ValueError("references must be at least 1")
    needed = 2 if hold_out else 1
    if len(paper.reviews) < needed:
        what = "ground-truth reference(s)" if paper.ground_truth else "review(s)"
        why = (
            "a held-out one (the human baseline) and at least one reference need two"
            if hold_out
            else "a candidate needs one to be scored against"
        )
        raise RecordError(f"paper {paper.id!r} has {len(paper.reviews)} {what}; {why}")
    digest = hashlib.sha256(f"{seed}:{paper.id}".encode()).digest()
    order: Sequence[ReviewRecord] = sorted(paper.reviews, key=lambda r: r.id)
    shuffled = list(order)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(shuffled)
    if not hold_out:
        return ReviewSplit(
            held_out=None, references=tuple(shuffled[:references]), others=tuple(shuffled)
        )
    if held_out is not None:
        chosen = [r for r in shuffled if r.id == held_out]
        if not chosen:
            raise RecordError(f"paper {paper.id!r} has no review {held_out!r} to hold out")
        others = [r for r in shuffled if r.id != held_out]
        return ReviewSplit(
            held_out=chosen[0], references=tuple(others[:references]), others=tuple(others)
        )
    return ReviewSplit(
        held_out=shuffled[0],
        references=tuple(shuffled[1 : 1 + references]),
        others=tuple(shuffled[1:]),
    )


def dataset_identity(records: Sequence[PaperRecord], *, name: str) -> dict[str, Any]:
    """What identifies a dataset's content: ``name`` (e.g. the file's stem), the number of
    ``records`` and a sha256 over their canonical content (every field of every record, in no
    particular order), so the same papers and reviews give the same hash whatever file holds
    them and in whatever order, and a changed review gives another. Recorded where a result is
    tied to one dataset (an Auto-PRE qualification)."""
    rows = sorted(
        json.dumps(asdict(r), sort_keys=True, ensure_ascii=False, default=str) for r in records
    )
    digest = hashlib.sha256("\n".join(rows).encode("utf-8")).hexdigest()
    return {"name": name, "records": len(rows), "sha256": digest}
