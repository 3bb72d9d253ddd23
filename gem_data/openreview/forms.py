"""ICLR review forms, 2018 to the latest year, mapped onto the ICLR 2023 four-section layout
(ICLR 2026: written as its own labelled sections, below).

The GEM authors' ICLR 2023 data writes every review as (their ``review_format_str``)::

    Summary Of The Paper:\\n\\n{}\\n\\nStrength And Weaknesses:\\n\\n{}\\n\\n
    Clarity, Quality, Novelty And Reproducibility:\\n\\n{}\\n\\nSummary Of The Review:\\n\\n{}\\n

:data:`FORMS_BY_YEAR` says which form fields fill each section in each year. Only free-text
fields go into the text, as in the authors' data (their 2023 text leaves out the numeric
correctness/novelty scores, and so do we for every year); a section a year's form has no field
for stays empty, exactly as the template leaves an empty field. Where one section gathers several
fields (2024+: strengths, weaknesses, questions) each non-empty one is written under its own
label. The year's rating and confidence are parsed to numbers
(``"6: marginally above the acceptance threshold"`` -> 6); their labels are kept too.

Sections (S1 Summary Of The Paper, S2 Strength And Weaknesses, S3 Clarity, Quality, Novelty
And Reproducibility, S4 Summary Of The Review), rating and confidence fields per year:

| years | S1 | S2 | S3 | S4 |
| --- | --- | --- | --- | --- |
| 2018-2021 | - | review | - | title |
| 2022 | summary_of_the_paper | main_review | - | summary_of_the_review |
| 2023 | summary_of_the_paper | strength_and_weaknesses | (below) | summary_of_the_review |
| 2024+ | summary | strengths, weaknesses, questions | - | - |

2023's S3 is ``clarity,_quality,_novelty_and_reproducibility``. Rating: ``rating`` (2018-2021,
2024+) or ``recommendation`` (2022, 2023); confidence: ``confidence`` (none in 2020, which asked
for a free-text ``experience_assessment`` instead).

**ICLR 2026** has 2024/25's fields, but its text is not the four-section layout: it is the form's
own four sections, each under its heading (:func:`format_labelled`, :data:`ICLR2026_PARTS`)::

    Summary:\\n{summary}\\n\\nStrengths:\\n{strengths}\\n\\n
    Weaknesses:\\n{weaknesses}\\n\\nQuestions:\\n{questions}

the text of the ``iclr2026`` records ``gem-tasks data fetch iclr2026`` writes
(:mod:`gem_data.fetch.iclr2026` joins them with the same function), so a dataset built from
OpenReview and the fetched one read alike. Checked against real ICLR 2026 review notes (API v2,
as crawled on 2025-11-22 by imczxx/ICLR2026ReviewTracker, 76,812 review versions): the text
fields are ``summary``, ``strengths``, ``weaknesses`` and ``questions``; ``rating`` (0, 2, 4, 6, 8
or 10), ``confidence`` (1-5) and ``soundness``, ``presentation``, ``contribution`` (1-4) are plain
integers with no label; ``flag_for_ethics_review``, ``details_of_ethics_concerns`` and
``code_of_conduct`` are left out of the text.

Years after the last listed one use the latest form; a review whose fields match another form
better (e.g. a union of forms from a Hub dataset) is read with that one (:func:`detect_form`).

**NeurIPS 2021-2025** (:data:`NEURIPS_FORMS_BY_YEAR`, :func:`form_for_venue`) are mapped onto the
same four sections; the limitations field is written as a labelled part of S2:

| years | S1 | S2 | scores |
| --- | --- | --- | --- |
| 2021 | summary | main_review, limitations_and_societal_impact | - |
| 2022 | summary | strengths_and_weaknesses, questions, limitations | SPC |
| 2023-2024 | summary | strengths, weaknesses, questions, limitations | SPC |
| 2025 | summary | strengths_and_weaknesses, questions, limitations | QCSO |

(SPC: soundness, presentation, contribution; QCSO: quality, clarity, significance, originality;
all 1-4. S3 and S4 stay empty; rating ``rating``, confidence ``confidence`` every year.)

Field names were checked against public dumps of real OpenReview reviews for 2022, 2023, 2024 and
2025 (2025: ``rating`` and ``confidence`` are plain integers, and the post-discussion
``final_justification`` is left out of the text). The 2021 names come from third-party code
that reads 2021 dumps, not from a dump itself (see ``_NEURIPS2021``).

**Rating scales** (:class:`RatingScale`). The canonical rating is on the ICLR 2024/25 scale
{1,3,5,6,8,10} (Beyond Rating D2, documented choice): NeurIPS' 10-point scale (2022-2024) maps
1,2->1; 3->3; 4->5; 5,6->6; 7,8->8; 9,10->10; NeurIPS 2025's 6-point scale 1->1, 2->3, 3->5, 4->6,
5->8, 6->10; ICLR 2026's {0,2,4,6,8,10} 0->1, 2->3, 4->5, 6->6, 8->8, 10->10 (the notes give the
number alone; the labels behind the map are the form's wording as reported, not read from a
note). ICLR 2018-2025
ratings are kept as they are. The raw number, its label and the scale's name stay with the
review (:meth:`NormalisedReview.extras`), together with the sub-scores and the structured text
fields.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from scorers.scales import SCALES

__all__ = [
    "FIELD_NAMES",
    "FORMS",
    "FORMS_BY_YEAR",
    "ICLR2026_PARTS",
    "ICLR2026_SCALE",
    "NEURIPS2025_SCALE",
    "NEURIPS_10_SCALE",
    "NEURIPS_FORMS",
    "NEURIPS_FORMS_BY_YEAR",
    "RATING_SCALES",
    "SCORE_NAMES",
    "SECTION_HEADERS",
    "TARGET_SCALE",
    "NormalisedReview",
    "Part",
    "RatingScale",
    "ReviewForm",
    "detect_form",
    "form_for_venue",
    "form_for_year",
    "format_labelled",
    "format_sections",
    "normalise_review",
    "parse_score",
    "unwrap_content",
]

SECTION_HEADERS = (
    "Summary Of The Paper",
    "Strength And Weaknesses",
    "Clarity, Quality, Novelty And Reproducibility",
    "Summary Of The Review",
)

FIRST_YEAR = 2018


@dataclass(frozen=True)
class Part:
    """One form field feeding a section; ``label`` titles it when a section has several."""

    field: str
    label: str | None = None


TARGET_SCALE = (1.0, 3.0, 5.0, 6.0, 8.0, 10.0)
"""The ICLR 2024/25 rating values every mapped rating takes (Beyond Rating Table 2)."""

FIELD_NAMES = ("summary", "strengths", "weaknesses", "questions", "strengths_and_weaknesses")
"""Keys of a review's structured ``fields`` extra; ``strengths_and_weaknesses`` only for a form
with one combined field (then ``needs_split`` is true and ``strengths``/``weaknesses`` are
absent)."""

SCORE_NAMES = (
    "soundness",
    "presentation",
    "contribution",
    "quality",
    "clarity",
    "significance",
    "originality",
)
"""Keys of a review's ``scores`` extra (1-4 sub-scores; each form has a subset)."""


@dataclass(frozen=True)
class RatingScale:
    """A form's rating scale and its map onto :data:`TARGET_SCALE`.

    ``table`` None keeps the number as it is (ICLR 2018-2025). A scale with ``by_label`` picks
    the first sub-scale whose pattern matches the review's rating label (case-insensitive), else
    uses its own table. A number outside the table maps to None (the review then has no
    canonical rating; its raw value is kept).
    """

    name: str
    description: str
    table: Mapping[float, float] | None = field(default=None, compare=False)
    by_label: tuple[tuple[str, RatingScale], ...] = field(default=(), compare=False)
    venue_scale: str | None = field(default=None, compare=False)
    """The :mod:`scorers.scales` scale the form's own values are read on, where there is one:
    a record then stores them as the reviewers gave them (the same numbers ``gem-tasks data
    fetch`` stores for that edition); None: the record stores the mapped rating, on ICLR's."""

    def resolve(self, label: str | None) -> RatingScale:
        """The scale that applies to a rating with this label."""
        for pattern, scale in self.by_label:
            if label and re.search(pattern, label, flags=re.IGNORECASE):
                return scale
        return self

    def map(self, raw: float | None) -> float | None:
        """``raw`` on :data:`TARGET_SCALE` (None if it is None or outside the table)."""
        if raw is None or self.table is None:
            return raw
        return self.table.get(float(raw))


def _table(pairs: Mapping[int, int]) -> Mapping[float, float]:
    return MappingProxyType({float(k): float(v) for k, v in pairs.items()})


ICLR_STANDARD_SCALE = RatingScale(
    "iclr-1-3-5-6-8-10",
    "ICLR 2022-2025 recommendation/rating {1,3,5,6,8,10}: already the target scale, kept as is",
    venue_scale="iclr",
)
ICLR2020_SCALE = RatingScale(
    "iclr2020-1-3-6-8",
    "ICLR 2020 rating {1,3,6,8}: values of the target scale, kept as is",
    venue_scale="iclr2020",
)
ICLR_LEGACY_SCALE = RatingScale(
    "iclr2018-2021-1-10",
    "ICLR 2018, 2019, 2021 rating 1-10: kept as is (Beyond Rating maps only NeurIPS 2022-2025 and "
    "ICLR 2024-2026)",
    venue_scale="iclr2018",
)
ICLR2026_SCALE = RatingScale(
    "iclr2026-0-2-4-6-8-10",
    "ICLR 2026 rating {0,2,4,6,8,10} onto the nearest ICLR 2024 label (0 strong reject -> 1, "
    "2 reject -> 3, 4 marginally below -> 5, 6 marginally above -> 6, 8 accept -> 8, "
    "10 strong accept -> 10). The value set is checked on real 2026 review notes (76,812 "
    "review versions, all on it); the notes give the number alone, so the labels are the form's "
    "wording as reported, not read from a note",
    MappingProxyType(dict(SCALES["iclr2026"].on_iclr)),  # the one conversion (scorers.scales)
    venue_scale="iclr2026",
)
NEURIPS_10_SCALE = RatingScale(
    "neurips-1-10",
    "NeurIPS 2022-2024 overall score 1-10 by label (1 very strong reject, 2 strong reject -> 1; "
    "3 reject -> 3; 4 borderline reject -> 5; 5 borderline accept, 6 weak accept -> 6; 7 accept, "
    "8 strong accept -> 8; 9 very strong accept, 10 award quality -> 10)",
    _table({1: 1, 2: 1, 3: 3, 4: 5, 5: 6, 6: 6, 7: 8, 8: 8, 9: 10, 10: 10}),
)
NEURIPS_OLD_10_SCALE = RatingScale(
    "neurips-old-1-10",
    "NeurIPS 10-point score with the older ICLR-2018-style labels (1 trivial or wrong, 2 strong "
    "rejection -> 1; 3 clear rejection, 4 ok but not good enough -> 3; 5 marginally below -> 5; "
    "6 marginally above -> 6; 7 good paper, 8 top 50% -> 8; 9 top 15%, 10 top 5% -> 10)",
    _table({1: 1, 2: 1, 3: 3, 4: 3, 5: 5, 6: 6, 7: 8, 8: 8, 9: 10, 10: 10}),
)
NEURIPS2021_SCALE = RatingScale(
    "neurips2021-1-10",
    "NeurIPS 2021 overall score 1-10. Its labels are not verified: a rating whose label uses the "
    "older wording (marginally above/below, okay/ok but not good enough, good paper or "
    "submission, top N%, clear accept/reject, trivial) is mapped with neurips-old-1-10, any "
    "other with neurips-1-10",
    NEURIPS_10_SCALE.table,
    by_label=(
        (
            r"marginally|ok(ay)?\b.*not good enough|good (paper|submission)|top \d+ ?%|"
            r"clear (accept|reject)|trivial",
            NEURIPS_OLD_10_SCALE,
        ),
    ),
)
NEURIPS2025_SCALE = RatingScale(
    "neurips2025-1-6",
    "NeurIPS 2025 overall score 1-6 (1 strong reject -> 1, 2 reject -> 3, 3 borderline reject "
    "-> 5, 4 borderline accept -> 6, 5 accept -> 8, 6 strong accept -> 10)",
    _table({1: 1, 2: 3, 3: 5, 4: 6, 5: 8, 6: 10}),
)
RATING_SCALES = (
    ICLR_LEGACY_SCALE,
    ICLR2020_SCALE,
    ICLR_STANDARD_SCALE,
    ICLR2026_SCALE,
    NEURIPS2021_SCALE,
    NEURIPS_OLD_10_SCALE,
    NEURIPS_10_SCALE,
    NEURIPS2025_SCALE,
)
_SCALES_BY_NAME = {scale.name: scale for scale in RATING_SCALES}


@dataclass(frozen=True)
class ReviewForm:
    """Which fields of one year's review form fill the four sections, rating and confidence.

    ``fields`` names the form field behind each structured field (:data:`FIELD_NAMES`),
    ``scores`` the 1-4 sub-score fields kept (:data:`SCORE_NAMES`), ``rating_scale`` how the
    rating maps onto :data:`TARGET_SCALE`, ``conference`` the forms :func:`detect_form` may
    switch between. ``labelled``, where set, makes the text each of those fields under its
    label (:func:`format_labelled`) instead of the four-section layout (ICLR 2026).
    """

    name: str
    sections: tuple[tuple[Part, ...], tuple[Part, ...], tuple[Part, ...], tuple[Part, ...]]
    rating: tuple[str, ...]
    confidence: tuple[str, ...]
    fields: tuple[tuple[str, str], ...] = ()
    scores: tuple[str, ...] = ()
    rating_scale: RatingScale = ICLR_STANDARD_SCALE
    conference: str = "ICLR"
    labelled: tuple[Part, ...] = ()

    @property
    def text_fields(self) -> tuple[str, ...]:
        return tuple(part.field for section in self.sections for part in section)

    @property
    def needs_split(self) -> bool:
        """True when strengths and weaknesses share one field (Beyond Rating D3 splits it)."""
        return any(name == "strengths_and_weaknesses" for name, _ in self.fields)


_FREE_TEXT = ReviewForm(
    name="iclr2018-2021",
    sections=((), (Part("review"),), (), (Part("title"),)),
    rating=("rating",),
    confidence=("confidence",),
    rating_scale=ICLR_LEGACY_SCALE,
)
_ICLR2020 = ReviewForm(
    name="iclr2020",
    sections=_FREE_TEXT.sections,
    rating=("rating",),
    confidence=(),  # 2020 asked for "experience_assessment" (free text), not a confidence
    rating_scale=ICLR2020_SCALE,
)
_ICLR2022 = ReviewForm(
    name="iclr2022",
    sections=(
        (Part("summary_of_the_paper"),),
        (Part("main_review"),),
        (),
        (Part("summary_of_the_review"),),
    ),
    rating=("recommendation",),
    confidence=("confidence",),
    fields=(("summary", "summary_of_the_paper"),),
)
_ICLR2023 = ReviewForm(
    name="iclr2023",
    sections=(
        (Part("summary_of_the_paper"),),
        (Part("strength_and_weaknesses"),),
        (Part("clarity,_quality,_novelty_and_reproducibility"),),
        (Part("summary_of_the_review"),),
    ),
    rating=("recommendation",),
    confidence=("confidence",),
    fields=(
        ("summary", "summary_of_the_paper"),
        ("strengths_and_weaknesses", "strength_and_weaknesses"),
    ),
)
_ICLR2024 = ReviewForm(
    name="iclr2024+",
    sections=(
        (Part("summary"),),
        (
            Part("strengths", "Strengths"),
            Part("weaknesses", "Weaknesses"),
            Part("questions", "Questions"),
        ),
        (),
        (),
    ),
    rating=("rating",),
    confidence=("confidence",),
    fields=(
        ("summary", "summary"),
        ("strengths", "strengths"),
        ("weaknesses", "weaknesses"),
        ("questions", "questions"),
    ),
    scores=("soundness", "presentation", "contribution"),
)
ICLR2026_PARTS = (
    Part("summary", "Summary"),
    Part("strengths", "Strengths"),
    Part("weaknesses", "Weaknesses"),
    Part("questions", "Questions"),
)
"""ICLR 2026's text fields and the headings its text is written under (:func:`format_labelled`)."""

# Checked against real 2026 review notes (see the module docstring): 2024/25's fields, the
# rating on {0,2,4,6,8,10}, and the text written as the form's own four labelled sections.
_ICLR2026 = replace(
    _ICLR2024, name="iclr2026", rating_scale=ICLR2026_SCALE, labelled=ICLR2026_PARTS
)

FORMS_BY_YEAR: dict[int, ReviewForm] = {
    2018: _FREE_TEXT,
    2019: _FREE_TEXT,
    2020: _ICLR2020,
    2021: _FREE_TEXT,
    2022: _ICLR2022,
    2023: _ICLR2023,
    2024: _ICLR2024,
    2025: _ICLR2024,
    2026: _ICLR2026,
}
FORMS = (_FREE_TEXT, _ICLR2020, _ICLR2022, _ICLR2023, _ICLR2024)

_LIMITATIONS = Part("limitations", "Limitations")
# 2021: names from third-party code reading NeurIPS 2021 dumps (summary, main_review,
# limitations_and_societal_impact, rating, confidence); not checked against a dump itself.
_NEURIPS2021 = ReviewForm(
    name="neurips2021",
    sections=(
        (Part("summary"),),
        (
            Part("main_review"),
            Part("limitations_and_societal_impact", "Limitations And Societal Impact"),
        ),
        (),
        (),
    ),
    rating=("rating",),
    confidence=("confidence",),
    fields=(("summary", "summary"),),
    rating_scale=NEURIPS2021_SCALE,
    conference="NeurIPS",
)
# 2022: checked against real review dumps (combined strengths_and_weaknesses field).
_NEURIPS2022 = ReviewForm(
    name="neurips2022",
    sections=(
        (Part("summary"),),
        (
            Part("strengths_and_weaknesses"),  # the section's own header names it
            Part("questions", "Questions"),
            _LIMITATIONS,
        ),
        (),
        (),
    ),
    rating=("rating",),
    confidence=("confidence",),
    fields=(
        ("summary", "summary"),
        ("strengths_and_weaknesses", "strengths_and_weaknesses"),
        ("questions", "questions"),
    ),
    scores=("soundness", "presentation", "contribution"),
    rating_scale=NEURIPS_10_SCALE,
    conference="NeurIPS",
)
# 2023 and 2024: checked against real review dumps (2024 gives the scores as plain integers).
_NEURIPS2023 = ReviewForm(
    name="neurips2023-2024",
    sections=(
        (Part("summary"),),
        (
            Part("strengths", "Strengths"),
            Part("weaknesses", "Weaknesses"),
            Part("questions", "Questions"),
            _LIMITATIONS,
        ),
        (),
        (),
    ),
    rating=("rating",),
    confidence=("confidence",),
    fields=_ICLR2024.fields,
    scores=("soundness", "presentation", "contribution"),
    rating_scale=NEURIPS_10_SCALE,
    conference="NeurIPS",
)
# 2025: checked against real review dumps. Also on the form, left out of the text: ethical
# concerns, paper formatting concerns, acknowledgements, and final_justification (written after
# the discussion with the authors).
_NEURIPS2025 = ReviewForm(
    name="neurips2025",
    sections=_NEURIPS2022.sections,
    rating=("rating",),
    confidence=("confidence",),
    fields=_NEURIPS2022.fields,
    scores=("quality", "clarity", "significance", "originality"),
    rating_scale=NEURIPS2025_SCALE,
    conference="NeurIPS",
)
NEURIPS_FORMS_BY_YEAR: dict[int, ReviewForm] = {
    2021: _NEURIPS2021,
    2022: _NEURIPS2022,
    2023: _NEURIPS2023,
    2024: _NEURIPS2023,
    2025: _NEURIPS2025,
}
NEURIPS_FORMS = (_NEURIPS2021, _NEURIPS2022, _NEURIPS2023, _NEURIPS2025)


@dataclass(frozen=True)
class NormalisedReview:
    """A review in the four-section layout with its parsed scores."""

    text: str
    sections: tuple[str, str, str, str]
    rating: float | None
    confidence: float | None
    rating_label: str | None
    confidence_label: str | None
    form: str
    rating_raw: float | None = None
    """The number the reviewer gave, on the form's own scale (``rating`` is mapped)."""
    rating_scale: str | None = None
    """The name of the :class:`RatingScale` that mapped it."""
    scores: dict[str, float | None] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)
    needs_split: bool = False

    @property
    def empty(self) -> bool:
        """True when every section is empty (nothing to score)."""
        return not any(self.sections)

    def extras(self) -> dict[str, Any]:
        """What a canonical review record keeps beside text, rating and confidence."""
        return {
            "rating_label": self.rating_label,
            "confidence_label": self.confidence_label,
            "rating_raw": self.rating_raw,
            "rating_scale": self.rating_scale,
            "scores": dict(self.scores),
            "fields": dict(self.fields),
            "needs_split": self.needs_split,
        }


def stored_ratings(reviews: Sequence[NormalisedReview]) -> tuple[str, list[float | None]]:
    """The scale a paper's record declares and the rating each review stores: the form's own
    values where :mod:`scorers.scales` has the form's scale (every ICLR form: so a built ICLR
    2026 record holds the 0-10 numbers a fetched one holds), else the ratings mapped onto ICLR's
    (``iclr``; NeurIPS), the one conversion, which the Beyond Rating filters also read. Reviews
    on several scales (a form that changed between reviews) are all stored mapped."""
    scales = {_SCALES_BY_NAME[r.rating_scale].venue_scale for r in reviews if r.rating_scale}
    if len(scales) == 1 and None not in scales:
        return str(next(iter(scales))), [r.rating_raw for r in reviews]
    return "iclr", [r.rating for r in reviews]


def form_for_year(year: int) -> ReviewForm:
    """The ICLR review form of ``year`` (the latest form for later years)."""
    if year < FIRST_YEAR:
        raise ValueError(f"ICLR {year}: review forms are mapped from {FIRST_YEAR} on")
    return FORMS_BY_YEAR.get(year, FORMS_BY_YEAR[max(FORMS_BY_YEAR)])


def form_for_venue(venue: str) -> ReviewForm:
    """The review form of an OpenReview venue id: NeurIPS (``NeurIPS.cc/2023/Conference``)
    from 2021, ICLR (and any other conference, read with the ICLR forms) from 2018; the latest
    form for later years."""
    from gem_data.openreview.client import venue_conference, venue_year

    year = venue_year(venue)
    if venue_conference(venue).lower() == "neurips":
        first = min(NEURIPS_FORMS_BY_YEAR)
        if year < first:
            raise ValueError(f"NeurIPS {year}: review forms are mapped from {first} on")
        return NEURIPS_FORMS_BY_YEAR.get(year, NEURIPS_FORMS_BY_YEAR[max(NEURIPS_FORMS_BY_YEAR)])
    return form_for_year(year)


def unwrap_content(content: Mapping[str, Any] | None) -> dict[str, Any]:
    """Content with API v2's ``{"value": ...}`` wrappers removed (v1 content is returned as is)."""
    out: dict[str, Any] = {}
    for key, value in (content or {}).items():
        if isinstance(value, Mapping) and "value" in value:
            value = value["value"]
        out[key] = value
    return out


def _text(value: Any) -> str:
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, list | tuple):
        return "\n".join(_text(v) for v in value if _text(v))
    return str(value).replace("\r\n", "\n").replace("\r", "\n").strip()


_LEADING_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)(?=$|[\s:.)-])")


def parse_score(value: Any) -> tuple[float | None, str | None]:
    """(number, label) of a rating or confidence: ``"6: marginally above the acceptance
    threshold"`` -> ``(6.0, "6: marginally ...")``, ``8`` -> ``(8.0, None)``; a text without a
    leading number gives ``(None, text)``, a missing value ``(None, None)``."""
    if isinstance(value, Mapping) and "value" in value:
        value = value["value"]
    if value is None or isinstance(value, bool):
        return None, None
    if isinstance(value, int | float):
        return float(value), None
    label = _text(value)
    if not label:
        return None, None
    match = _LEADING_NUMBER.match(label)
    return (float(match.group(1)) if match else None), label


def format_sections(sections: tuple[str, str, str, str]) -> str:
    """The authors' four-section text for the given section bodies."""
    return (
        "\n\n".join(f"{header}:\n\n{body}" for header, body in zip(SECTION_HEADERS, sections))
        + "\n"
    )


def format_labelled(content: Mapping[str, Any], parts: tuple[Part, ...] = ICLR2026_PARTS) -> str:
    """Each field of ``parts`` under its label, in order, the sections joined by a blank line:
    ``Summary:`` newline summary, blank line, ``Strengths:`` newline strengths, ... Every label
    is written; a missing or empty field leaves its body empty. ``content`` is a review note's
    content, v2 ``{"value": ...}`` wrappers or not; each body is the field's text with line
    endings made newlines and outer whitespace stripped."""
    content = unwrap_content(content)
    return "\n\n".join(f"{part.label}:\n{_text(content.get(part.field))}" for part in parts)


def _section(content: Mapping[str, Any], parts: tuple[Part, ...]) -> str:
    if len(parts) == 1:
        return _text(content.get(parts[0].field))
    pieces = []
    for part in parts:
        body = _text(content.get(part.field))
        if body:
            pieces.append(f"{part.label}:\n{body}" if part.label else body)
    return "\n\n".join(pieces)


def _first_score(content: Mapping[str, Any], fields: tuple[str, ...]) -> tuple[Any, Any]:
    for name in fields:
        number, label = parse_score(content.get(name))
        if number is not None or label is not None:
            return number, label
    return None, None


def detect_form(content: Mapping[str, Any], default: ReviewForm) -> ReviewForm:
    """``default`` unless another form of the same conference has its text fields better
    filled in ``content``."""
    content = unwrap_content(content)

    def filled(form: ReviewForm) -> int:
        return sum(1 for name in form.text_fields if _text(content.get(name)))

    candidates = NEURIPS_FORMS if default.conference == "NeurIPS" else FORMS
    best = max(candidates, key=filled)
    return default if filled(default) >= filled(best) else best


def normalise_review(content: Mapping[str, Any], form: ReviewForm) -> NormalisedReview:
    """The review ``content`` (v1 plain or v2 wrapped) in the four-section layout of the authors'
    ICLR 2023 data (a form with ``labelled`` parts, ICLR 2026: its own labelled sections), with
    rating and confidence parsed by ``form`` and the rating mapped by its scale onto
    :data:`TARGET_SCALE` (raw number, label and scale name kept)."""
    content = unwrap_content(content)
    sections = tuple(_section(content, parts) for parts in form.sections)
    assert len(sections) == 4
    rating_raw, rating_label = _first_score(content, form.rating)
    confidence, confidence_label = _first_score(content, form.confidence)
    scale = form.rating_scale.resolve(rating_label)
    if form.labelled:
        text = format_labelled(content, form.labelled)
    else:
        text = format_sections(sections)  # type: ignore[arg-type]
    return NormalisedReview(
        text=text,
        sections=sections,  # type: ignore[arg-type]
        rating=scale.map(rating_raw),
        confidence=confidence,
        rating_label=rating_label,
        confidence_label=confidence_label,
        form=form.name,
        rating_raw=rating_raw,
        rating_scale=scale.name,
        scores={name: parse_score(content.get(name))[0] for name in form.scores},
        fields={name: _text(content.get(source)) for name, source in form.fields},
        needs_split=form.needs_split,
    )
