"""A review's text fields, the way Beyond Rating needs them, and its atomic points.

- :func:`review_fields`: :func:`scorers.text.structured.parse_review`; a review whose strengths
  and weaknesses sit in one combined section (ICLR 2023, NeurIPS 2022/2025; App. D.1), or that
  has no recognisable section at all (free-form reviews such as ICLR 2018-2021), is sorted into
  the four sections by the ``preprocessor`` model once (cached; the prompt copies the
  reviewer's sentences and invents nothing); whitespace-only text is never sent.
- :func:`extract_points`: one section split into atomic points under the paper's five rules,
  each with its focus category (and, for questions, its type), in one call per section
  (§3.2, App. C, §4.5). An empty section has no points and costs no call.

Every generation goes through the one cache, so the human reviews of a paper are structured
and decomposed once and shared by every model scored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import prompts
from scorers.lm.base import ChatMessage, GenerationSettings, hit_limit
from scorers.lm.generation import TextGenerator
from scorers.metrics.beyond.common import ReplyError, ask_many, quote
from scorers.text.structured import TEXT_FIELDS, StructuredReview, parse_review, parse_sections

__all__ = [
    "CATEGORIES",
    "POINT_SECTIONS",
    "POINTS_SETTINGS",
    "QUESTION_TYPES",
    "STRUCTURE_SETTINGS",
    "Fields",
    "Point",
    "Points",
    "extract_points",
    "parse_points",
    "review_fields",
]

CATEGORIES = (
    "Novelty",
    "Soundness",
    "Experiments",
    "Clarity",
    "Significance",
    "Reproducibility",
    "Related Work",
    "Other",
)
"""The eight focus categories of Beyond Rating App. C, in the paper's order."""
QUESTION_TYPES = ("Explain", "Supplement", "Other")
POINT_SECTIONS = ("strengths", "weaknesses", "questions")
STRUCTURE_SETTINGS = GenerationSettings(max_new_tokens=1024, temperature=0.0)
POINTS_SETTINGS = GenerationSettings(max_new_tokens=512, temperature=0.0)

_CATEGORY_NAMES = {c.lower(): c for c in CATEGORIES} | {
    "related works": "Related Work",
    "relatedwork": "Related Work",
    "experiment": "Experiments",
    "experimental": "Experiments",
    "novel": "Novelty",
    "originality": "Novelty",
    "reproducible": "Reproducibility",
}
_TYPE_NAMES = {t.lower(): t for t in QUESTION_TYPES}
_BULLET = re.compile(r"^(?:\s*(?:[-*\u2022>#]+|\d+[.)]|\[\d+\]|\(\d+\))\s*)*")
"""List markers, quote and heading marks before a point, however many ("- 1. ", "* [2] ", "## ")."""
_LABEL = re.compile(r"^[\s*_`\[(]*([A-Za-z][A-Za-z ]*?)[\s*_`\])]*(?:\||:)\s*(.*)$")
"""A line that begins with a label and "|" or ":" ("Clarity | ...", "**Novelty**: ...")."""


@dataclass(frozen=True)
class Fields:
    """A review's four text fields (None: missing; "": empty) and how they were obtained."""

    fields: dict[str, str | None]
    parsed: StructuredReview
    structured_by_llm: bool = False
    calls: int = 0
    hit_limit: bool = False
    """Whether the sorting reply the fields come from stopped at its token limit."""


@dataclass(frozen=True)
class Point:
    text: str
    category: str
    qtype: str | None = None

    def as_dict(self) -> dict[str, Any]:
        row = {"text": self.text, "category": self.category}
        if self.qtype is not None:
            row["qtype"] = self.qtype
        return row


@dataclass(frozen=True)
class Points:
    """A section's points; ``unread`` lines of the reply that were not points (kept, counted)."""

    points: tuple[Point, ...]
    unread: tuple[str, ...] = ()
    calls: int = 0
    hit_limit: bool = False
    """Whether the reply the points come from stopped at its token limit."""
    details: dict[str, Any] = field(default_factory=dict)


def _structure_messages(review: str) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render("beyond/structure_system")},
        {"role": "user", "content": prompts.render("beyond/structure_user", review=review)},
    ]


def _parse_structure(reply: str) -> dict[str, str]:
    sections, layout = parse_sections(reply)
    found = {k: sections[k] for k in TEXT_FIELDS if k in sections}
    if layout != "tags" or not found:
        raise ReplyError(f"no tagged section in the reply: {quote(reply)}")
    return found


async def review_fields(text: str, generator: TextGenerator) -> Fields:
    """The four text fields of ``text``, sorted by ``generator`` when the review needs it (see
    the module doc). An unreadable sorting reply (after a retry) raises :class:`ReplyError`."""
    parsed = parse_review(text)
    if not parsed.needs_split or not text.strip():
        return Fields(fields=dict(parsed.fields), parsed=parsed)
    source = parsed.combined if parsed.layout != "none" else text
    asked = await ask_many(
        generator,
        [_structure_messages(source.strip())],
        _parse_structure,
        settings=STRUCTURE_SETTINGS,
    )
    [found] = asked.values
    if found is None:
        raise ReplyError(
            f"could not sort the review into sections: {asked.reasons[0]}", calls=asked.calls
        )
    fields = dict(parsed.fields)
    for key in TEXT_FIELDS:
        if fields[key] is None or (parsed.layout == "none"):
            fields[key] = found.get(key, "")
    return Fields(
        fields=fields,
        parsed=parsed,
        structured_by_llm=True,
        calls=asked.calls,
        hit_limit=bool(hit_limit(asked.replies[0])),
    )


def _points_messages(section: str, text: str) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render("beyond/points_system", section=section)},
        {
            "role": "user",
            "content": prompts.render("beyond/points_user", section=section, text=text),
        },
    ]


def _labelled(line: str, names: dict[str, str]) -> tuple[str, str] | None:
    """(label, rest) when ``line`` begins with one of ``names`` and "|" or ":"."""
    match = _LABEL.match(line)
    if not match:
        return None
    label = names.get(match.group(1).strip().lower())
    return (label, match.group(2).strip()) if label else None


def parse_points(reply: str, section: str) -> Points:
    """Points of a reply in the prompt's line format (``Category | point``; questions
    ``Type | Category | point``). Tolerated: list markers however many ("- 1. "), markdown
    around a label ("**Novelty** | ..."), a colon for the bar ("Clarity: ..."). A line that is not
    a point (a header such as "The strengths section:", a point without a known category) is
    kept in ``unread``, never given a category. ``NONE`` alone means no points. A reply with no
    point and no ``NONE`` raises :class:`ReplyError`."""
    lines = [_BULLET.sub("", line).strip() for line in (reply or "").splitlines()]
    lines = [line for line in lines if line]
    if len(lines) == 1 and lines[0].strip(" .*`").upper() == "NONE":
        return Points(points=())
    points, unread = [], []
    for line in lines:
        qtype = None
        found = None
        if section == "questions":
            typed = _labelled(line, _TYPE_NAMES)
            if typed:
                qtype = typed[0]
                found = _labelled(typed[1], _CATEGORY_NAMES)
        else:
            found = _labelled(line, _CATEGORY_NAMES)
        if found and found[1].strip(" *`"):
            text = found[1].strip(" *`").strip()
            points.append(Point(text=text, category=found[0], qtype=qtype))
        else:
            unread.append(line)
    if not points:
        raise ReplyError(f"no point in the {section} reply: {quote(reply or '')}")
    return Points(points=tuple(points), unread=tuple(unread))


async def extract_points(section: str, text: str | None, generator: TextGenerator) -> Points:
    """The atomic points of one section's ``text`` (None or blank: no points, no call). An
    unreadable reply after a retry raises :class:`ReplyError`."""
    if section not in POINT_SECTIONS:
        raise ValueError(f"section must be one of {POINT_SECTIONS}, got {section!r}")
    if text is None or not text.strip():
        return Points(points=())
    asked = await ask_many(
        generator,
        [_points_messages(section, text.strip())],
        lambda reply: parse_points(reply, section),
        settings=POINTS_SETTINGS,
    )
    [found] = asked.values
    if found is None:
        raise ReplyError(
            f"could not read the {section} points: {asked.reasons[0]}", calls=asked.calls
        )
    return Points(
        points=found.points,
        unread=found.unread,
        calls=asked.calls,
        hit_limit=bool(hit_limit(asked.replies[0])),
    )
