"""Submission notes (API v1 or v2, as dicts) read into papers with their official reviews and
decision."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gem_data.openreview.forms import unwrap_content
from scorers.data.decisions import clean_decision

__all__ = [
    "ACTIVE",
    "DESK_REJECTED",
    "WITHDRAWN",
    "ReviewNote",
    "Submission",
    "clean_decision",
    "compact_note",
    "parse_submission",
]

ACTIVE = "active"
WITHDRAWN = "withdrawn"
DESK_REJECTED = "desk_rejected"


@dataclass(frozen=True)
class ReviewNote:
    """One official review: its note id and unwrapped form content."""

    id: str
    content: dict[str, Any]


@dataclass(frozen=True)
class Submission:
    """A submission with its status (active, withdrawn or desk-rejected) and official reviews."""

    id: str
    number: int | None
    title: str
    abstract: str
    pdf: str | None
    status: str
    license: str | None
    reviews: tuple[ReviewNote, ...]
    decision_raw: str | None = None
    """The decision note's text, else the venue string when it states one (see
    :func:`clean_decision`); None when neither says."""

    @property
    def decision(self) -> str | None:
        """:attr:`decision_raw` cleaned (:func:`clean_decision`)."""
        return clean_decision(self.decision_raw)


def _invitations(note: Mapping[str, Any]) -> list[str]:
    found = list(note.get("invitations") or [])
    if note.get("invitation"):
        found.append(str(note["invitation"]))
    return [str(i) for i in found]


def _replies(note: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    details = note.get("details") or {}
    replies = details.get("directReplies") or details.get("replies") or []
    return [r for r in replies if isinstance(r, Mapping)]


def _is_review(reply: Mapping[str, Any]) -> bool:
    return any(inv.endswith("Official_Review") for inv in _invitations(reply))


def _is_status_marker(reply: Mapping[str, Any]) -> bool:
    names = " ".join(i.rsplit("/", 1)[-1] for i in _invitations(reply)).lower()
    return "withdraw" in names or "desk_reject" in names


def _is_decision(reply: Mapping[str, Any]) -> bool:
    return any(i.rsplit("/", 1)[-1].endswith("Decision") for i in _invitations(reply))


def _decision_raw(note: Mapping[str, Any], content: Mapping[str, Any]) -> str | None:
    for reply in _replies(note):
        if reply.get("ddate") or not _is_decision(reply):
            continue
        decision = unwrap_content(reply.get("content")).get("decision")
        if isinstance(decision, str) and decision.strip():
            return decision.strip()
    venue = content.get("venue")
    if isinstance(venue, str) and clean_decision(venue) is not None:
        return venue.strip()
    return None


def compact_note(note: Mapping[str, Any]) -> dict[str, Any]:
    """``note`` with only the replies :func:`parse_submission` reads (official reviews,
    decisions and withdrawal / desk-rejection notes): discussions are dropped, so the cached
    listing of a large venue stays a fraction of the API's answer."""
    compact = dict(note)
    details = dict(note.get("details") or {})
    for key in ("directReplies", "replies"):
        if key in details:
            details[key] = [
                r
                for r in details[key]
                if isinstance(r, Mapping)
                and (_is_review(r) or _is_status_marker(r) or _is_decision(r))
            ]
    compact["details"] = details
    return compact


def _status(note: Mapping[str, Any], content: Mapping[str, Any]) -> str:
    markers = [str(content.get("venueid") or ""), str(content.get("venue") or "")]
    markers += _invitations(note)
    for reply in _replies(note):
        markers += [i.rsplit("/", 1)[-1] for i in _invitations(reply)]
    text = " ".join(markers).lower().replace("-", "_").replace(" ", "_")
    if "desk_reject" in text:
        return DESK_REJECTED
    if "withdraw" in text:
        return WITHDRAWN
    return ACTIVE


def parse_submission(note: Mapping[str, Any]) -> Submission:
    """Read one submission note (v1 or v2 layout) and the official reviews among its replies.

    Withdrawn / desk-rejected papers are recognised by their venue id or venue string
    (``.../Withdrawn_Submission``, ``... Desk Rejected Submission``), their invitations, or a
    withdrawal / desk-rejection reply. Deleted replies (with a ``ddate``) are ignored. The
    decision comes from a ``.../-/Decision`` reply, else from a venue string that states one
    (``NeurIPS 2023 poster``).
    """
    content = unwrap_content(note.get("content"))
    reviews = []
    for reply in _replies(note):
        if reply.get("ddate"):
            continue
        if _is_review(reply):
            content_of_review = unwrap_content(reply.get("content"))
            reviews.append(ReviewNote(id=str(reply["id"]), content=content_of_review))
    pdf = content.get("pdf")
    number = note.get("number")
    return Submission(
        id=str(note["id"]),
        number=int(number) if isinstance(number, int) else None,
        title=str(content.get("title") or "").strip(),
        abstract=str(content.get("abstract") or "").strip(),
        pdf=str(pdf) if isinstance(pdf, str) and pdf.strip() else None,
        status=_status(note, content),
        license=str(note["license"]) if note.get("license") else None,
        reviews=tuple(reviews),
        decision_raw=_decision_raw(note, content),
    )
