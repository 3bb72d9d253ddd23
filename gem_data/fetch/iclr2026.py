"""ICLR 2026, GRE-bench's contamination-free edition: submissions and their official reviews as
OpenReview's API v2 served them on 2025-11-22, with the decision read from the accepted lists.

Two sources, both pinned in the catalog (:mod:`gem_data.fetch.catalog`):

- imczxx/ICLR2026ReviewTracker: ``docs/data/papers-list.json`` (every submission of its crawl:
  ``id``, ``withdrawn``, ``reviews``, the count of official reviews, ...) and
  ``docs/data/papers/<forum>.json`` (the submission, its ``content.primary_area``, and every
  version of every direct reply in ``replies``, in the order of the reply's number);
- alickzhu/iclr2026-papers: ``iclr_paper/primary_area__<area>.csv``, the accepted papers of 12
  of the 21 primary areas (``openreview_url`` with the forum id, ``venue`` "ICLR 2026 Poster" or
  "ICLR 2026 Oral").

**Eligible**: a submission whose primary area is one of the 12, not withdrawn, with at least 3
official reviews (``.../-/Official_Review`` replies, counted by id). Each review is its latest
version (the largest ``mdate``), reviews in the order they first appear. **Decision**: the
``venue`` of the list that names the paper ("accepted list of its area"; 9 of the eligible
papers are on another area's list than the area their note gives, and count as accepted); a
paper on no list is "Reject", marked "inferred: not on the accepted list of its area" (a paper
withdrawn or desk-rejected after the crawl, or missing from its list, is mislabelled so).

The papers read are those the list names as not withdrawn with at least 3 reviews (the list
cannot tell the area; the rules are applied again to every file read), and :data:`UNLISTED`.

``iclr2026_eligible.jsonl`` holds every eligible paper, sorted by id; ``iclr2026_records.jsonl``
the sample: ``random.Random(SEED).sample(eligible, SAMPLE_SKIP + SAMPLE_SIZE)`` with the first
:data:`SAMPLE_SKIP` draws left out (draws 300-1,499, in draw order), one paper per line::

    {id, venue: "ICLR 2026", title, abstract, primary_area, pdf, decision, accept,
     decision_source, reviews: [{id, text, rating, confidence, soundness, presentation,
     contribution}]}

``title`` and ``abstract`` lose their outer whitespace. ``text`` is the review's four sections
under their headings, joined by
:func:`gem_data.openreview.forms.format_labelled` (as ``gem-tasks data build``
writes an ICLR 2026 review); the scores are the integers of the note (rating on 0/2/4/6/8/10).
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gem_data.fetch.convert import write_jsonl
from gem_data.openreview.forms import format_labelled, unwrap_content
from scorers.data.records import RecordError

__all__ = [
    "ACCEPTED_DIR",
    "AREAS",
    "ELIGIBLE",
    "LIST_PATH",
    "MIN_REVIEWS",
    "RECORDS",
    "SAMPLE_SIZE",
    "SAMPLE_SKIP",
    "SEED",
    "UNLISTED",
    "accepted_list_path",
    "convert",
    "eligible_records",
    "latest_reviews",
    "paper_path",
    "paper_paths",
    "read_accepted",
    "sample",
]

VENUE = "ICLR 2026"
LIST_PATH = "docs/data/papers-list.json"
PAPERS_DIR = "docs/data/papers"
ACCEPTED_DIR = "iclr_paper"
RECORDS = "iclr2026_records.jsonl"
ELIGIBLE = "iclr2026_eligible.jsonl"

AREAS = (
    "alignment, fairness, safety, privacy, and societal considerations",
    "applications to computer vision, audio, language, and other modalities",
    "datasets and benchmarks",
    "foundation or frontier models, including LLMs",
    "generative models",
    "interpretability and explainable AI",
    "learning theory",
    "optimization",
    "probabilistic methods (Bayesian methods, variational inference, sampling, UQ, etc.)",
    "reinforcement learning",
    "transfer learning, meta learning, and lifelong learning",
    "unsupervised, self-supervised, semi-supervised, and supervised representation learning",
)
"""The 12 primary areas with an accepted list (one CSV each)."""

MIN_REVIEWS = 3
SEED = 20261127
SAMPLE_SIZE = 1200
SAMPLE_SKIP = 300

UNLISTED = ("Q5Zp1KAFSi",)
"""Paper files of the tracker's folder that its list does not name, read too: the folder holds
19,630 files, the list 19,629. Q5Zp1KAFSi (submission 14762; not withdrawn, 4 reviews) was in the
tracker's crawls up to 2025-11-17 and is in none since (OpenReview's submission listing no longer
returns it); the published sample's 13,514 eligible papers include it."""

ACCEPTED = "accepted list of its area"
INFERRED = "inferred: not on the accepted list of its area"
DECISIONS = ("ICLR 2026 Oral", "ICLR 2026 Poster")
SCORES = ("rating", "confidence", "soundness", "presentation", "contribution")
REVIEW_INVITATION = "/-/Official_Review"


def accepted_list_path(area: str) -> str:
    """The accepted list of a primary area, as a path of alickzhu/iclr2026-papers."""
    return f"{ACCEPTED_DIR}/primary_area__{area}.csv"


def paper_path(forum: str) -> str:
    """A submission's file, as a path of imczxx/ICLR2026ReviewTracker."""
    return f"{PAPERS_DIR}/{forum}.json"


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: not readable JSON ({exc})") from None


def paper_paths(listing: Path, *, unlisted: Sequence[str] | None = None) -> list[str]:
    """The paper files to read, from the tracker's ``papers-list.json`` at ``listing``: those of
    the papers it lists as not withdrawn with at least :data:`MIN_REVIEWS` official reviews (in
    its order), then ``unlisted``'s (None: :data:`UNLISTED`)."""
    unlisted = UNLISTED if unlisted is None else unlisted
    rows = _json(listing)
    if not isinstance(rows, list):
        raise RecordError(f"{listing}: expected a JSON list of papers")
    forums = []
    for k, row in enumerate(rows):
        where = f"{listing.name}[{k}]"
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise RecordError(f"{where}: no paper id")
        if not isinstance(row.get("withdrawn"), bool) or not isinstance(row.get("reviews"), int):
            raise RecordError(f"{where}: expected 'withdrawn' (true/false) and 'reviews' (a count)")
        if not row["withdrawn"] and row["reviews"] >= MIN_REVIEWS:
            forums.append(row["id"])
    return [paper_path(forum) for forum in [*forums, *(f for f in unlisted if f not in forums)]]


def read_accepted(folder: Path, areas: Sequence[str] = AREAS) -> dict[str, str]:
    """``{forum id: decision}`` from the accepted lists of ``areas`` under ``folder`` (the
    repository's root): each CSV (UTF-8 with a byte-order mark) gives ``openreview_url``
    (``...forum?id=<id>``), ``venue`` (the decision) and ``primary_area`` (its own area)."""
    accepted: dict[str, str] = {}
    for area in areas:
        path = folder / accepted_list_path(area)
        try:
            with path.open(encoding="utf-8-sig", newline="") as handle:
                rows = list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as exc:
            raise RecordError(f"{path}: not a readable CSV ({exc})") from None
        for number, row in enumerate(rows, start=2):
            where = f"{path.name}:{number}"
            url, decision = row.get("openreview_url") or "", row.get("venue")
            if "forum?id=" not in url:
                raise RecordError(f"{where}: openreview_url {url!r} names no forum")
            if decision not in DECISIONS:
                raise RecordError(f"{where}: venue {decision!r} is not one of {DECISIONS}")
            if row.get("primary_area") != area:
                raise RecordError(
                    f"{where}: primary_area {row.get('primary_area')!r}, not {area!r}"
                )
            forum = url.split("forum?id=", 1)[1]
            if accepted.get(forum, decision) != decision:
                raise RecordError(f"{where}: {forum} is listed as {accepted[forum]} too")
            accepted[forum] = decision
    return accepted


def _is_review(reply: Mapping[str, Any]) -> bool:
    return any(str(inv).endswith(REVIEW_INVITATION) for inv in reply.get("invitations") or ())


def latest_reviews(note: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A submission's official reviews, each its latest version (the largest ``mdate``; the later
    one in ``replies`` on a tie), in the order each review first appears in ``replies``."""
    latest: dict[str, dict[str, Any]] = {}
    for reply in note.get("replies") or ():
        if not isinstance(reply, dict) or not _is_review(reply) or not reply.get("id"):
            continue
        seen = latest.get(reply["id"])
        if seen is None or (reply.get("mdate") or 0) >= (seen.get("mdate") or 0):
            latest[reply["id"]] = reply  # a dict keeps the first insertion's place
    return list(latest.values())


def _review(reply: Mapping[str, Any], where: str) -> dict[str, Any]:
    content = unwrap_content(reply.get("content"))
    scores = {}
    for name in SCORES:
        value = content.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(f"{where}: review {reply['id']}: {name} {value!r} is not a number")
        scores[name] = value
    return {"id": reply["id"], "text": format_labelled(content), **scores}


def _text(content: Mapping[str, Any], key: str, where: str) -> str:
    value = content.get(key)
    if not isinstance(value, str):
        raise RecordError(f"{where}: {key} {value!r} is not a text")
    return value.strip()


def paper_record(
    note: Mapping[str, Any], accepted: Mapping[str, str], *, areas: Sequence[str] = AREAS
) -> dict[str, Any] | None:
    """The record of an eligible submission's note (a tracker paper file), None for one that is
    not eligible."""
    forum = note.get("id")
    where = f"paper {forum}"
    if not isinstance(forum, str) or not isinstance(note.get("content"), dict):
        raise RecordError(f"{where}: expected 'id' and 'content'")
    if not isinstance(note.get("withdrawn"), bool):
        raise RecordError(f"{where}: 'withdrawn' {note.get('withdrawn')!r} is not true/false")
    content = unwrap_content(note["content"])
    area = content.get("primary_area")
    reviews = latest_reviews(note)
    if area not in areas or note["withdrawn"] or len(reviews) < MIN_REVIEWS:
        return None
    decision = accepted.get(forum)
    return {
        "id": forum,
        "venue": VENUE,
        "title": _text(content, "title", where),
        "abstract": _text(content, "abstract", where),
        "primary_area": area,
        "pdf": f"https://openreview.net/pdf?id={forum}",
        "decision": decision or "Reject",
        "accept": 1 if decision else 0,
        "decision_source": ACCEPTED if decision else INFERRED,
        "reviews": [_review(reply, where) for reply in reviews],
    }


def eligible_records(
    notes: Iterable[Mapping[str, Any]],
    accepted: Mapping[str, str],
    *,
    areas: Sequence[str] = AREAS,
) -> list[dict[str, Any]]:
    """The records of the eligible submissions among ``notes``, sorted by id."""
    records = [r for note in notes if (r := paper_record(note, accepted, areas=areas))]
    ids = [r["id"] for r in records]
    if len(set(ids)) != len(ids):
        raise RecordError("a submission is read twice")
    return sorted(records, key=lambda r: r["id"])


def sample(
    records: Sequence[dict[str, Any]],
    *,
    size: int = SAMPLE_SIZE,
    skip: int = SAMPLE_SKIP,
    seed: int = SEED,
) -> list[dict[str, Any]]:
    """Draws ``skip`` to ``skip + size - 1`` of ``random.Random(seed).sample(records, skip +
    size)``, in draw order (``records`` in the order given: the eligible ones sorted by id)."""
    if skip + size > len(records):
        raise RecordError(f"{skip + size} draws asked of {len(records)} eligible papers")
    return random.Random(seed).sample(list(records), skip + size)[skip:]


def convert(
    tracker: Path,
    accepted_repo: Path,
    out: Path,
    *,
    areas: Sequence[str] = AREAS,
    unlisted: Sequence[str] | None = None,
    size: int = SAMPLE_SIZE,
    skip: int = SAMPLE_SKIP,
    seed: int = SEED,
) -> list[str]:
    """``iclr2026_eligible.jsonl`` and ``iclr2026_records.jsonl`` in ``out`` from the tracker's
    files under ``tracker`` and the accepted lists under ``accepted_repo`` (each laid out as its
    repository); returns their names. The paper files read are :func:`paper_paths`'s (with
    ``unlisted``, None: :data:`UNLISTED`); one missing stops the conversion."""
    accepted = read_accepted(accepted_repo, areas)

    def notes() -> Iterable[dict[str, Any]]:
        for path in paper_paths(tracker / LIST_PATH, unlisted=unlisted):
            note = _json(tracker / path)
            if not isinstance(note, dict):
                raise RecordError(f"{tracker / path}: expected a JSON object")
            yield note

    eligible = eligible_records(notes(), accepted, areas=areas)
    write_jsonl(out / ELIGIBLE, eligible, ensure_ascii=False)
    write_jsonl(
        out / RECORDS, sample(eligible, size=size, skip=skip, seed=seed), ensure_ascii=False
    )
    return [RECORDS, ELIGIBLE]
