"""ICLR 2026's review form in the OpenReview builder, read on real 2026 review notes: the four
text sections under their headings (the same text ``gem-tasks data fetch iclr2026`` writes, by
the same function), the rating on 0/2/4/6/8/10, the confidence and the three 1-4 scores as
numbers.

The notes are those of ``fixtures/iclr2026_notes.json`` (real ICLR 2026 papers from
imczxx/ICLR2026ReviewTracker at 8dc6f4d3; each reply note is CC BY 4.0, by the ICLR 2026
reviewers and authors on OpenReview: see tests/data_acquisition/fetch/test_fetch_iclr2026.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem_data.fetch import iclr2026
from gem_data.openreview import form_for_venue, form_for_year, normalise_review
from gem_data.openreview.forms import (
    ICLR2026_PARTS,
    detect_form,
    format_labelled,
    format_sections,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iclr2026_notes.json"
NOTES = json.loads(FIXTURE.read_text(encoding="utf-8"))["papers"]
REVIEWS = [review for note in NOTES for review in iclr2026.latest_reviews(note)]
FORM = form_for_venue("ICLR.cc/2026/Conference")
MAPPED = {0: 1.0, 2: 3.0, 4: 5.0, 6: 6.0, 8: 8.0, 10: 10.0}


def test_the_fixture_holds_real_2026_reviews():
    assert len(REVIEWS) == 19  # 3 + 4 + 3 + 4 (withdrawn) + 2 + 3
    assert all(r["invitations"][0].endswith("/-/Official_Review") for r in REVIEWS)
    assert all(r["license"] == "CC BY 4.0" for r in REVIEWS)
    assert {r["content"]["rating"]["value"] for r in REVIEWS} <= set(MAPPED)


@pytest.mark.parametrize("reply", REVIEWS, ids=[r["id"] for r in REVIEWS])
def test_a_2026_review_reads_as_the_fetched_records_read_it(reply):
    review = normalise_review(reply["content"], detect_form(reply["content"], FORM))
    content = {key: value["value"] for key, value in reply["content"].items()}
    assert review.form == "iclr2026"
    # the text: the four sections under their headings, the converter's text for the same note
    assert review.text == iclr2026._review(reply, "fixture")["text"]
    assert review.text == (
        f"Summary:\n{content['summary'].strip()}\n\n"
        f"Strengths:\n{content['strengths'].strip()}\n\n"
        f"Weaknesses:\n{content['weaknesses'].strip()}\n\n"
        f"Questions:\n{content['questions'].strip()}"
    )
    assert review.fields == {
        name: content[name].strip() for name in ("summary", "strengths", "weaknesses", "questions")
    }
    # the scores: plain integers in the note, numbers here; the rating mapped onto ICLR 2024's
    assert review.rating_raw == content["rating"] and review.rating_label is None
    assert review.rating == MAPPED[content["rating"]]
    assert review.rating_scale == "iclr2026-0-2-4-6-8-10"
    assert review.confidence == content["confidence"] and review.confidence_label is None
    assert review.scores == {
        name: float(content[name]) for name in ("soundness", "presentation", "contribution")
    }
    assert all(isinstance(v, float) for v in (review.rating, review.confidence))
    # the form's other fields stay out of the text
    assert "No ethics review needed." not in review.text
    assert not review.empty and not review.needs_split


def test_fetched_records_and_the_builder_agree_on_a_whole_paper():
    [record] = [
        r
        for r in iclr2026.eligible_records(NOTES, {}, areas=iclr2026.AREAS)
        if r["id"] == "22hBwIf7OC"
    ]
    note = next(n for n in NOTES if n["id"] == "22hBwIf7OC")
    built = [normalise_review(r["content"], FORM) for r in iclr2026.latest_reviews(note)]
    assert [b.text for b in built] == [r["text"] for r in record["reviews"]]
    assert [b.rating_raw for b in built] == [r["rating"] for r in record["reviews"]]
    assert [b.scores["presentation"] for b in built] == [
        r["presentation"] for r in record["reviews"]
    ]


def test_the_labelled_text_writes_every_heading_and_only_2026_uses_it():
    assert [part.label for part in ICLR2026_PARTS] == [
        "Summary",
        "Strengths",
        "Weaknesses",
        "Questions",
    ]
    partial = {"summary": {"value": " S.\r\nmore "}, "questions": "Q?"}
    assert (
        format_labelled(partial)
        == "Summary:\nS.\nmore\n\nStrengths:\n\n\nWeaknesses:\n\n\nQuestions:\nQ?"
    )
    assert FORM is form_for_year(2026) and form_for_year(2031) is FORM
    # 2024 and 2025 (same fields) keep the four-section layout
    content = REVIEWS[0]["content"]
    for year in (2024, 2025):
        review = normalise_review(content, form_for_year(year))
        assert review.text == format_sections(review.sections)
        assert review.text.startswith("Summary Of The Paper:\n\n")
        assert review.rating == content["rating"]["value"]  # kept as is
