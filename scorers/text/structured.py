"""Structured reviews: a review's summary, strengths, weaknesses and questions, and its scores.

Beyond Rating (§4.1) reads a review field by field: the text fields ``summary``, ``strengths``,
``weaknesses``, ``questions`` and the scores ``soundness``, ``presentation``, ``contribution``
(1-4), ``rating`` (the ICLR scale, 1-10) and ``confidence`` (1-5). :func:`parse_review` reads
them from any of the layouts reviews come in, tolerantly:

- XML-like tags, as our review prompts ask for (``<strengths>...</strengths>``; a last tag left
  unclosed runs to the end of the text);
- markdown headings and bold or plain labels (``## Strengths``, ``**Weaknesses:**``,
  ``Questions: ...`` at the start of a line);
- OpenReview forms as the dataset builder writes them: the ICLR 2023 four-section layout
  (``Summary Of The Paper:``, ``Strength And Weaknesses:``, ...) and the 2024+ layout with
  ``Strengths:``/``Weaknesses:``/``Questions:`` labels inside a section;
- scores as ``Rating: 6: marginally above the acceptance threshold``, ``<rating>6</rating>``,
  ``Soundness: 3 good``.

A field that is not there is ``None``; a field that is there but empty is ``""`` (the two are
different: a model that writes an empty ``<questions>`` section has no questions; a review
without the section was not asked). A combined "Strength(s) and Weaknesses" section sets
``needs_split`` (Beyond Rating App. D.1 splits it with an LLM, see
``scorers.metrics.beyond.structure``). A score outside its range, or one that cannot be read, is
``None`` with the reason in ``issues``; it is never replaced by a default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "SCORE_RANGES",
    "TEXT_FIELDS",
    "StructuredReview",
    "parse_review",
    "parse_sections",
]

TEXT_FIELDS = ("summary", "strengths", "weaknesses", "questions")
SCORE_RANGES: dict[str, tuple[float, float]] = {
    "soundness": (1, 4),
    "presentation": (1, 4),
    "contribution": (1, 4),
    "rating": (1, 10),
    "confidence": (1, 5),
}

# label (lower case, normalised) -> canonical key; "combined" is a strengths-and-weaknesses
# section, "other" a section we recognise so that it ends the one before it but do not score
_LABELS: dict[str, str] = {
    "summary": "summary",
    "summary of the paper": "summary",
    "paper summary": "summary",
    "summary of contributions": "summary",
    "strengths": "strengths",
    "strength": "strengths",
    "pros": "strengths",
    "reasons to accept": "strengths",
    "weaknesses": "weaknesses",
    "weakness": "weaknesses",
    "cons": "weaknesses",
    "reasons to reject": "weaknesses",
    "questions": "questions",
    "question": "questions",
    "questions for the authors": "questions",
    "questions to the authors": "questions",
    "questions for authors": "questions",
    "questions and suggestions": "questions",
    "strength and weaknesses": "combined",
    "strengths and weaknesses": "combined",
    "strength and weakness": "combined",
    "strengths and weakness": "combined",
    "main review": "combined",
    "clarity, quality, novelty and reproducibility": "other",
    "summary of the review": "other",
    "limitations": "other",
    "ethics": "other",
    "ethical concerns": "other",
    "flag for ethics review": "other",
    "details of ethics concerns": "other",
    "soundness": "soundness",
    "presentation": "presentation",
    "contribution": "contribution",
    "rating": "rating",
    "overall rating": "rating",
    "recommendation": "rating",
    "confidence": "confidence",
}
_SCORE_KEYS = frozenset(SCORE_RANGES)
_TAG = re.compile(r"<\s*(/?)\s*([a-z_ ]+?)\s*>", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)(?=$|[\s:.,)/-])")


def _label_key(label: str) -> str | None:
    norm = re.sub(r"[\s_]+", " ", label.strip().lower()).replace("&", "and")
    return _LABELS.get(norm)


@dataclass(frozen=True)
class StructuredReview:
    """A review read field by field (see the module doc)."""

    fields: dict[str, str | None]
    """``summary``, ``strengths``, ``weaknesses``, ``questions``: text, ``""`` or None."""
    scores: dict[str, float | None]
    """``soundness``, ``presentation``, ``contribution``, ``rating``, ``confidence``."""
    combined: str | None = None
    """A combined strengths-and-weaknesses section, when the review has one."""
    layout: str = "none"
    """``tags``, ``headings`` or ``none`` (no field was recognised)."""
    issues: tuple[str, ...] = field(default=())

    @property
    def needs_split(self) -> bool:
        """The review's strengths and weaknesses sit in one combined section (or the review has
        no recognisable field at all) and must be split before field-level scoring."""
        if self.layout == "none":
            return True
        has_sw = bool(self.fields["strengths"]) or bool(self.fields["weaknesses"])
        return bool((self.combined or "").strip()) and not has_sw

    @property
    def present(self) -> dict[str, str]:
        """The text fields that are there and not empty."""
        return {k: v for k, v in self.fields.items() if v and v.strip()}


def parse_sections(text: str) -> tuple[dict[str, str], str]:
    """Canonical key -> body of every recognised section of ``text`` (the first occurrence of a
    key wins) and the layout (``tags``, ``headings`` or ``none``)."""
    tagged = _parse_tags(text)
    if tagged:
        return tagged, "tags"
    headed = _parse_headings(text)
    if headed:
        return headed, "headings"
    return {}, "none"


def _parse_tags(text: str) -> dict[str, str]:
    found: list[tuple[str, int, int, bool]] = []  # key, start, end, closing
    for match in _TAG.finditer(text):
        key = _label_key(match.group(2))
        if key is not None:
            found.append((key, match.start(), match.end(), bool(match.group(1))))
    if not any(not closing for _, _, _, closing in found):
        return {}
    sections: dict[str, str] = {}
    for index, (key, _, end, closing) in enumerate(found):
        if closing:
            continue
        stop = len(text)
        for other_key, other_start, _, other_closing in found[index + 1 :]:
            if other_closing and other_key == key or not other_closing:
                stop = other_start
                break
        sections.setdefault(key, text[end:stop].strip())
    return sections


_HASHES = re.compile(r"^#{1,6}\s*")
_NUMBERING = re.compile(r"^(?:\d+[.)]|[-*\u2022])\s+")
_BOLD = re.compile(r"^(\*\*|__|\*)(.+?)(\*\*|__|\*)\s*(.*)$")


def _heading(line: str) -> tuple[str, str] | None:
    """(key, text after the label) when ``line`` opens a section: a known label that ends in a
    colon, is a markdown heading or bold, or stands alone on its line."""
    rest = line.strip()
    if not rest:
        return None
    hashes = _HASHES.match(rest)
    if hashes:
        rest = rest[hashes.end() :]
    rest = _NUMBERING.sub("", rest, count=1)
    bold = _BOLD.match(rest)
    if bold:
        inner, rest = bold.group(2).strip(), bold.group(4)
        if inner.endswith(":"):
            label, colon = inner[:-1], True
        elif rest.startswith(":"):
            label, rest, colon = inner, rest[1:], True
        else:
            label, colon = inner, False
    elif ":" in rest:
        label, rest = rest.split(":", 1)
        colon = True
    else:
        label, rest, colon = rest, "", False
    key = _label_key(label)
    if key is None:
        return None
    rest = rest.strip()
    if not colon and rest:
        return None  # "**Strengths** of the method are..." is a sentence
    return key, rest


def _parse_headings(text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        heading = _heading(line)
        if heading is not None:
            current, rest = heading
            sections.setdefault(current, [])  # a repeated label continues its section
            if rest:
                sections[current].append(rest)
            continue
        if current is not None:
            sections[current].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def _score(
    key: str, raw: str | None, issues: list[str], ranges: dict[str, tuple[float, float]]
) -> float | None:
    if raw is None:
        return None
    match = _NUMBER.match(raw.strip().strip("*").strip())
    if match is None:
        issues.append(f"{key}: no number in {raw.strip()[:60]!r}")
        return None
    value = float(match.group(1))
    low, high = ranges[key]
    if not low <= value <= high:
        issues.append(f"{key}: {value:g} is outside {low:g}-{high:g}")
        return None
    return value


def parse_review(text: str, *, rating_range: tuple[float, float] = (1, 10)) -> StructuredReview:
    """The fields and scores of ``text`` (see the module doc); never raises on bad input.
    ``rating_range`` is the venue's rating range (:mod:`scorers.scales`; ICLR 2026's is 0-10):
    a rating outside it is an issue, not a rating."""
    if not isinstance(text, str):
        raise TypeError(f"a review must be a string, got {type(text).__name__}")
    sections, layout = parse_sections(text)
    issues: list[str] = []
    fields = {key: sections.get(key) for key in TEXT_FIELDS}
    ranges = {**SCORE_RANGES, "rating": rating_range}
    scores = {key: _score(key, sections.get(key), issues, ranges) for key in SCORE_RANGES}
    text_keys = set(TEXT_FIELDS) | {"combined"}
    if layout != "none" and not (set(sections) & text_keys):
        layout = "none"  # only scores were found: no text field to read
    combined = sections.get("combined")
    if combined is not None:
        # labels nested inside a combined section (ICLR 2024+ as the builder writes it) were
        # already read as their own sections; what precedes them is the combined text
        nested = _parse_headings(combined)
        for key in ("strengths", "weaknesses", "questions"):
            if fields[key] is None and key in nested:
                fields[key] = nested[key]
    return StructuredReview(
        fields=fields, scores=scores, combined=combined, layout=layout, issues=tuple(issues)
    )
