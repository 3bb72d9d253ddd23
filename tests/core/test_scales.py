"""Rating scales: every reader of a rating takes the data's scale (its range and its lowest
accept-side rating): the record's declared scale, else its venue's, else none (an error)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from scorers import Item, Paper, Resources, Review, get_metric
from scorers.data.records import RecordError, parse_record
from scorers.metrics.decision import parse_verdict, verdict_of, verdict_question
from scorers.scales import DEFAULT_SCALE, SCALES, UNKNOWN, scale_named, venue_scale_name
from scorers.text.structured import parse_review


@pytest.mark.parametrize(
    "venue,declared,name",
    [
        ("ICLR 2020", None, "iclr2020"),
        ("ICLR 2023", None, "iclr"),
        ("ICLR 2025 Conference", None, "iclr"),
        ("ICLR 2026", None, "iclr2026"),
        ("ICLR.cc/2019/Conference", None, "iclr2018"),
        ("NeurIPS 2023", None, UNKNOWN),  # no scale known: an error where a rating is read
        ("", None, UNKNOWN),
        ("NeurIPS 2023", "iclr", "iclr"),  # the builder maps NeurIPS forms onto ICLR's, declared
        ("ICLR 2026", "iclr", "iclr"),  # built by the builder: mapped, declared
    ],
)
def test_the_scale_comes_from_the_declaration_then_the_venue(venue, declared, name):
    assert venue_scale_name(venue, declared) == name


def test_ratings_of_no_known_scale_are_refused_where_they_are_read(tmp_path):
    """A venue whose scale is not known never gets ICLR's by default: reading its ratings is an
    error naming the venue and how to give a scale, up front for a task."""
    from scorers.plan import ScoringPlan

    def refuse_unservable(records, scorers):
        ScoringPlan.build(scorers).refuse_unservable(records, where="the dataset")

    record = parse_record(
        {"id": "p", "venue": "A Workshop 2025", "title": "T", "abstract": "A.",
         "reviews": [{"text": "r", "rating": 4}, {"text": "s", "rating": 2}]},
        where="x",
    )  # fmt: skip
    assert record.rating_scale == UNKNOWN
    with pytest.raises(ValueError, match="scale is not known: give each record a 'rating_scale'"):
        scale_named(record.rating_scale)
    with pytest.raises(RecordError, match="rating_error reads ratings on the venue's scale, and "
                       "the scale of venue 'A Workshop 2025' is not known"):  # fmt: skip
        refuse_unservable([record], "rating_error")
    refuse_unservable([record], "bleu")  # a metric that reads no rating does not care
    # several metrics with the same need: one sentence naming them all, not one each
    with pytest.raises(RecordError) as refused:
        refuse_unservable([record], "rating_error,decision_accuracy,bleu")
    message = str(refused.value)
    assert "rating_error, decision_accuracy read ratings on the venue's scale" in message
    assert message.count("is not known") == 1 and "bleu" not in message
    declared = parse_record(
        {"id": "p", "venue": "A Workshop 2025", "rating_scale": "iclr2018", "title": "T",
         "abstract": "A.", "reviews": [{"text": "r", "rating": 4}]},
        where="x",
    )  # fmt: skip
    refuse_unservable([declared], "rating_error")


def test_scales_by_hand():
    iclr2026 = SCALES["iclr2026"]
    assert (iclr2026.low, iclr2026.high, iclr2026.accept_threshold) == (0, 10, 6)
    assert iclr2026.contains(0) and not DEFAULT_SCALE.contains(0)
    assert SCALES["iclr2020"].high == 8 and SCALES["iclr2020"].accepts(6)
    assert not SCALES["iclr2020"].accepts(3)
    assert all(scale.accept_threshold == 6 for scale in SCALES.values())
    with pytest.raises(ValueError, match="unknown rating scale 'likert'"):
        scale_named("likert")


def _record(**extra):
    return {
        "id": "p1",
        "title": "T",
        "abstract": "A.",
        "reviews": [{"id": "r1", "text": "Fine.", "rating": 0}],
        **extra,
    }


def test_a_record_knows_its_scale():
    assert parse_record(_record(venue="ICLR 2026"), where="x").rating_scale == "iclr2026"
    assert parse_record(_record(venue="ICLR 2023"), where="x").rating_scale == "iclr"
    built = parse_record(_record(venue="ICLR 2026", rating_scale="iclr"), where="x")
    assert built.rating_scale == "iclr"
    with pytest.raises(RecordError, match="'rating_scale'.*unknown rating scale 'stars'"):
        parse_record(_record(venue="X", rating_scale="stars"), where="x")


def test_the_builder_declares_the_scale_it_maps_onto():
    from gem_data.openreview.output import record_row

    row = record_row(parse_record(_record(venue="ICLR 2026", rating_scale="iclr"), where="x"))
    assert row["rating_scale"] == "iclr"
    again = parse_record(json.loads(json.dumps(row)), where="x")
    assert again.rating_scale == "iclr"  # a written record reads back on the same scale


def _item(scale, *, rating=None, reply=None, refs=(4.0, 8.0), baseline=None):
    held_out = Review("h", "The held-out review.", rating=rating)
    return Item(
        Paper("p1", abstract="An abstract.", accept=True, rating_scale=scale),
        candidate=held_out.text if rating is not None else "A model's review.",
        references=tuple(Review(f"r{i}", f"Review {i}.", rating=r) for i, r in enumerate(refs)),
        held_out=held_out,
        verdict_reply=reply,
        baseline=baseline,
    )


def test_verdicts_on_iclr_2026s_scale(tmp_path):
    # a 0 is ICLR 2026's strong reject, and no rating on ICLR's 1-10
    assert parse_verdict("Rating: 0\nDecision: Reject", SCALES["iclr2026"]).rating == 0
    outside = parse_verdict("Rating: 0\nDecision: Reject")
    assert outside.rating is None and "outside the 1-10 scale" in outside.missing
    assert verdict_of(_item("iclr2026", reply="Rating: 0\nDecision: Reject")).rating == 0
    # the committee's mean (4 + 8) / 2 = 6 is on the accept side of every ICLR scale
    assert verdict_of(_item("iclr2026", baseline={"rule": "committee"})).accept is True
    assert verdict_of(_item("iclr2026", rating=4)).accept is False
    question = verdict_question(SCALES["iclr2026"])
    assert "0-10 scale (0: strong reject, 2: reject," in question
    assert "Rating: <a number from 0 to 10>" in question
    assert "1-8 scale (1: reject, 3: weak reject, 6: weak accept, 8: accept)" in verdict_question(
        SCALES["iclr2020"]
    )
    result = get_metric("decision_accuracy").score(
        _item("iclr2026", reply="Rating: 2\nDecision: Reject"),
        Resources(evaluation_lm="embedded", cache_dir=tmp_path),
    )
    assert result.value == 0.0  # rejected an accepted paper
    assert (result.details["rating_scale"], result.details["accept_threshold"]) == ("iclr2026", 6)
    assert (result.signature.scale, result.signature.threshold) == ("iclr2026", 6)


def test_the_question_on_iclrs_scale_reads_as_before():
    assert verdict_question() == (
        "Based on your review, rate the paper on the conference's 1-10 scale (1: strong reject, "
        "3: reject, 5: marginally below the acceptance threshold, 6: marginally above the "
        "acceptance threshold, 8: accept, 10: strong accept) and decide whether the paper should "
        "be accepted or rejected.\n\nAnswer in exactly two lines, with nothing else:\n"
        "Rating: <a number from 1 to 10>\nDecision: <Accept or Reject>"
    )


def test_beyond_ratings_rating_error_reads_on_the_papers_scale(tmp_path):
    assert parse_review("Rating: 0\n", rating_range=(0, 10)).scores["rating"] == 0
    assert parse_review("Rating: 0\n").scores["rating"] is None
    item = _item("iclr2026", refs=(2.0, 4.0))
    item = replace(item, candidate="Summary: fine.\nRating: 0\n")
    result = get_metric("br_rating_mae").score(
        item, Resources(evaluation_lm="embedded", cache_dir=tmp_path)
    )
    assert result.value == pytest.approx(3.0)  # |0 - (2 + 4) / 2|
    assert result.details["rating_scale"] == "iclr2026"
