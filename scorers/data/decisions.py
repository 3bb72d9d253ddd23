"""Accept/reject outcomes of the papers a dataset holds: the venue's decision label, normalised,
and whether it is an acceptance.

A record's optional ``decision`` is the label (``Accept (poster)``, ``Reject``, ...): the
OpenReview builder reads it from the forum's decision note (else the venue string), a converter
joins a decisions file by forum id (:func:`read_decisions`, :func:`join_decisions`), and the
loader turns it into a :class:`Decision` whose ``accept`` follows from the label
(:func:`accepts`: every ``Accept ...`` is an acceptance, ``Reject`` and ``Desk reject`` are not,
``Withdrawn`` and ``Workshop`` are no outcome). A decisions file whose own accept column
disagrees with its label is refused, never reconciled silently.
"""

from __future__ import annotations

import csv
import html
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scorers.errors import GemTasksError

__all__ = [
    "Decision",
    "DecisionError",
    "accepts",
    "clean_decision",
    "decision_counts",
    "decision_from",
    "join_decisions",
    "official_ratings",
    "read_decisions",
]


class DecisionError(GemTasksError, ValueError):
    """A decision that cannot be read, or a decisions file that contradicts itself or the
    records."""


@dataclass(frozen=True)
class Decision:
    """A paper's outcome: the venue's label (normalised) and whether it is an acceptance (None
    for a label that is no outcome: withdrawn, workshop); with it, where the source lists them,
    the ratings of every official reviewer of the paper (``ratings``: a paper-level list, e.g. a
    decisions file's, whose reviews the data may hold without their ratings)."""

    label: str
    accept: bool | None
    ratings: tuple[float, ...] | None = None


_TAG = re.compile(r"<[^>]*>")
_TIER = re.compile(r"\b(oral|spotlight|poster|notable[\s_-]*top[\s_-]*(?:5|25)\s*%?)")


def clean_decision(raw: str | None) -> str | None:
    """A decision or venue string normalised (Beyond Rating D4: case, HTML, junk) to one of
    ``Accept (oral)``, ``Accept (spotlight)``, ``Accept (poster)``, ``Accept (notable-top-5%)``,
    ``Accept (notable-top-25%)``, ``Accept``, ``Reject``, ``Desk reject``, ``Withdrawn``,
    ``Workshop`` (ICLR 2018's invitation to the workshop track); None when it states no decision
    (``Submitted to ICLR 2025``, an empty string).

    ``"Accept: notable-top-5%"`` -> ``Accept (notable-top-5%)``; ``"<b>ACCEPT (Poster)</b>"``
    -> ``Accept (poster)``; ``"NeurIPS 2023 spotlight"`` -> ``Accept (spotlight)``;
    ``"ICLR 2024 Conference Rejected Submission"`` -> ``Reject``.
    """
    if not raw:
        return None
    text = html.unescape(_TAG.sub(" ", str(raw))).lower().replace("_", " ")
    text = re.sub(r"\s+", " ", text).strip(" .:;-*\"'")
    if not text:
        return None
    if "desk reject" in text or "desk-reject" in text:
        return "Desk reject"
    if "withdraw" in text:
        return "Withdrawn"
    if "reject" in text:
        return "Reject"
    if "workshop" in text:
        return "Workshop"
    tier = _TIER.search(text)
    if tier:
        name = re.sub(r"[\s_-]+", "-", tier.group(1)).rstrip("%").rstrip("-")
        return f"Accept ({name}%)" if name.startswith("notable") else f"Accept ({name})"
    if "accept" in text:
        return "Accept"
    return None


def accepts(label: str) -> bool | None:
    """Whether a normalised label (:func:`clean_decision`) is an acceptance: True for every
    ``Accept ...``, False for ``Reject`` and ``Desk reject``, None for ``Withdrawn`` and
    ``Workshop`` (no outcome at the main venue)."""
    if label.startswith("Accept"):
        return True
    if label in ("Reject", "Desk reject"):
        return False
    return None


def decision_from(value: Any) -> Decision | None:
    """A record's ``decision`` field as a :class:`Decision`: a label string (normalised by
    :func:`clean_decision`), or ``{"label": ..., "accept": ...}`` whose accept must agree with
    the label; None when absent.

    Raises:
        DecisionError: a value of another type, a label that states no decision, or an accept
            flag that contradicts the label.
    """
    if value is None:
        return None
    given_accept = None
    if isinstance(value, Mapping):
        given_accept = value.get("accept")
        value = value.get("label")
    if not isinstance(value, str):
        raise DecisionError(f"a decision must be a label string, got {value!r:.60}")
    label = clean_decision(value)
    if label is None:
        raise DecisionError(f"{value!r:.60} states no decision")
    decision = Decision(label, accepts(label))
    if given_accept is not None and bool(given_accept) != decision.accept:
        raise DecisionError(f"decision {label!r} with accept={given_accept!r} contradicts itself")
    return decision


def official_ratings(value: Any) -> tuple[float, ...] | None:
    """Every official reviewer's rating of a paper: a list of numbers, or a decisions file's
    ``"3;6;8"``; None when absent or empty.

    Raises:
        DecisionError: a value that is not a number.
    """
    if value is None:
        return None
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(";") if p.strip()]
    elif isinstance(value, list | tuple):
        parts = list(value)
    else:
        raise DecisionError(f"ratings must be a list or 'a;b;c', got {value!r:.60}")
    out = []
    for part in parts:
        if isinstance(part, bool):
            raise DecisionError(f"a rating must be a number, got {part!r}")
        try:
            number = float(part)
        except (TypeError, ValueError):
            raise DecisionError(f"a rating must be a number, got {part!r:.40}") from None
        if not math.isfinite(number):
            raise DecisionError(f"a rating must be finite, got {part!r:.40}")
        out.append(number)
    return tuple(out) or None


def _flag(value: Any) -> bool | None:
    text = str(value).strip().lower() if value is not None else ""
    if text in ("", "none", "null"):
        return None
    if text in ("1", "true", "yes"):
        return True
    if text in ("0", "false", "no"):
        return False
    raise DecisionError(f"accept must be 1/0 or true/false, got {value!r:.40}")


def read_decisions(path: str | Path) -> dict[str, Decision]:
    """Decisions by paper (forum) id from a CSV (columns ``id``, ``decision`` and optionally
    ``accept`` 1/0 and ``ratings``, every official reviewer's rating as ``3;6;8``; other columns
    ignored) or a JSONL file (``{"id", "decision", "accept", "ratings"}`` per line).

    Raises:
        DecisionError: a missing file or column, a duplicated id, a label that states no
            decision, or an accept flag that contradicts its label (the row is named).
    """
    path = Path(path)
    if not path.exists():
        raise DecisionError(f"{path}: no such decisions file")
    if path.suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            missing = {"id", "decision"} - set(reader.fieldnames or ())
            if missing:
                raise DecisionError(f"{path}: missing column(s) {sorted(missing)}")
            rows = [(f"{path}:{n}", row) for n, row in enumerate(reader, start=2)]
    else:
        rows = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    rows.append((f"{path}:{n}", json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise DecisionError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
    out: dict[str, Decision] = {}
    for where, row in rows:
        paper_id = str(row.get("id") or "").strip()
        if not paper_id:
            raise DecisionError(f"{where}: no id")
        if paper_id in out:
            raise DecisionError(f"{where}: paper {paper_id!r} has a second decision")
        try:
            decision = decision_from(
                {"label": row.get("decision"), "accept": _flag(row.get("accept"))}
            )
            out[paper_id] = replace(decision, ratings=official_ratings(row.get("ratings")))
        except DecisionError as exc:
            raise DecisionError(f"{where}: {exc}") from None
    return out


def join_decisions(
    rows: Sequence[MutableMapping[str, Any]], decisions: Mapping[str, Decision]
) -> dict[str, int]:
    """Set each record row's ``decision`` label from ``decisions`` by its id, in place, and its
    ``official_ratings`` where the decisions list them; returns the counts (``joined``,
    ``records_without_decision``, ``decisions_unused``: decisions of papers not in the rows).

    Raises:
        DecisionError: a row already holds a different decision or other official ratings (two
            sources disagree).
    """
    joined = 0
    ids = set()
    for row in rows:
        ids.add(str(row["id"]))
        decision = decisions.get(str(row["id"]))
        if decision is None:
            continue
        held = decision_from(row.get("decision"))
        if held is not None and held.label != decision.label:
            raise DecisionError(
                f"paper {row['id']!r}: the record says {held.label!r}, the decisions file "
                f"{decision.label!r}"
            )
        row["decision"] = decision.label
        if decision.ratings is not None:
            held_ratings = official_ratings(row.get("official_ratings"))
            if held_ratings is not None and held_ratings != decision.ratings:
                raise DecisionError(
                    f"paper {row['id']!r}: the record lists official ratings "
                    f"{list(held_ratings)}, the decisions file {list(decision.ratings)}"
                )
            row["official_ratings"] = list(decision.ratings)
        joined += 1
    return {
        "joined": joined,
        "records_without_decision": len(rows) - joined,
        "decisions_unused": len(set(decisions) - ids),
    }


def decision_counts(decisions: Iterable[Decision | None]) -> dict[str, Any]:
    """What a data card says of the decisions: each label's count, and how many papers are
    accepted, rejected, without an outcome, or without a decision."""
    found = list(decisions)
    return {
        "labels": dict(sorted(Counter(d.label for d in found if d is not None).items())),
        "accept": sum(1 for d in found if d is not None and d.accept is True),
        "reject": sum(1 for d in found if d is not None and d.accept is False),
        "no_outcome": sum(1 for d in found if d is not None and d.accept is None),
        "unknown": sum(1 for d in found if d is None),
    }
