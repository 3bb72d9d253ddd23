"""NeurIPS forms, rating scales mapped onto the ICLR 2024/25 scale, the Beyond Rating quality
filters and decision cleaning in the OpenReview builder, offline.

The review contents copy the field names and value shapes of real public OpenReview reviews
(NeurIPS 2022-2025); the builder runs against a fake client serving them as recorded API answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gem_data.openreview import (
    BEYOND_RATING_FILTERS,
    BuildConfig,
    apply_quality_filters,
    build_dataset,
    clean_decision,
    form_for_venue,
    form_for_year,
    normalise_review,
)
from gem_data.openreview import build as build_module
from gem_data.openreview.client import (
    api_version_for,
    submission_invitations,
    venue_label,
)
from gem_data.openreview.filters import population_variance
from gem_data.openreview.forms import (
    ICLR2026_SCALE,
    NEURIPS2025_SCALE,
    NEURIPS_10_SCALE,
    TARGET_SCALE,
    detect_form,
)
from gem_tasks.cli.data import main as data_main
from scorers.data.records import load_records

# The spec's D2 tables ("documented choice"), written out independently of the code.
NEURIPS_10 = {1: 1, 2: 1, 3: 3, 4: 5, 5: 6, 6: 6, 7: 8, 8: 8, 9: 10, 10: 10}
NEURIPS_2025 = {1: 1, 2: 3, 3: 5, 4: 6, 5: 8, 6: 10}
ICLR_2026 = {0: 1, 2: 3, 4: 5, 6: 6, 8: 8, 10: 10}


def wrap(content: dict[str, Any]) -> dict[str, Any]:
    return {key: {"value": value} for key, value in content.items()}


def neurips2023_review(**overrides: Any) -> dict[str, Any]:
    content = {
        "summary": "The paper bounds KL privacy of wide networks.",
        "soundness": "2 fair",
        "presentation": "3 good",
        "contribution": "3 good",
        "strengths": "Interesting theory.",
        "weaknesses": "No experiments.",
        "questions": "",
        "limitations": "Not discussed.",
        "flag_for_ethics_review": ["No ethics review needed."],
        "rating": "7: Accept: Technically solid paper, with high impact on at least one "
        "sub-area, or moderate-to-high impact on more than one areas, with good-to-excellent "
        "evaluation, resources, reproducibility, and no unaddressed ethical considerations.",
        "confidence": "4: You are confident in your assessment, but not absolutely certain.",
        "code_of_conduct": "Yes",
    }
    content.update(overrides)
    return wrap(content)


def neurips2025_review(rating: int = 6, **overrides: Any) -> dict[str, Any]:
    content = {
        "summary": "Equivariant convolutions improve robustness.",
        "strengths_and_weaknesses": "## Strengths\n- Clear.\n\n## Weaknesses\n- Small datasets.",
        "questions": "What is the overhead?",
        "limitations": "yes",
        "rating": rating,
        "confidence": 3,
        "quality": 3,
        "clarity": 3,
        "significance": 2,
        "originality": 4,
        "ethical_concerns": ["NO or VERY MINOR ethics concerns only"],
        "paper_formatting_concerns": "None.",
        "code_of_conduct_acknowledgement": "Yes",
        "responsible_reviewing_acknowledgement": "Yes",
        "final_justification": "Raised my score after the rebuttal.",
    }
    content.update(overrides)
    return wrap(content)


# --------------------------------------------------------------------------- forms


def test_neurips2023_review_is_normalised_with_fields_scores_and_mapped_rating():
    form = form_for_venue("NeurIPS.cc/2023/Conference")
    assert form.name == "neurips2023-2024" and form_for_venue("NeurIPS.cc/2024/Conference") is form
    review = normalise_review(neurips2023_review(), form)
    assert review.sections == (
        "The paper bounds KL privacy of wide networks.",
        "Strengths:\nInteresting theory.\n\nWeaknesses:\nNo experiments.\n\n"
        "Limitations:\nNot discussed.",
        "",
        "",
    )
    assert review.rating == 8.0 and review.rating_raw == 7.0  # 7 accept -> ICLR 8
    assert review.rating_scale == "neurips-1-10"
    assert review.rating_label.startswith("7: Accept: Technically solid paper")
    assert review.confidence == 4.0
    extras = review.extras()
    assert extras["fields"] == {
        "summary": "The paper bounds KL privacy of wide networks.",
        "strengths": "Interesting theory.",
        "weaknesses": "No experiments.",
        "questions": "",  # the form has it, the reviewer left it empty
    }
    assert extras["scores"] == {"soundness": 2.0, "presentation": 3.0, "contribution": 3.0}
    assert extras["needs_split"] is False and extras["rating_raw"] == 7.0
    assert "Soundness" not in review.text and "ethics" not in review.text


def test_neurips2022_combined_field_is_flagged_needs_split():
    form = form_for_venue("NeurIPS.cc/2022/Conference")
    content = {  # API v1: plain content
        "summary": "A Lipschitz network.",
        "strengths_and_weaknesses": "Originality: new parameterisation. Quality: weak baselines.",
        "questions": "Is V unrestricted?",
        "limitations": "None.",
        "soundness": "3 good",
        "presentation": "3 good",
        "contribution": "2 fair",
        "rating": "4: Borderline reject: Technically solid paper where reasons to reject, e.g., "
        "limited evaluation, outweigh reasons to accept, e.g., good evaluation.",
        "confidence": "3: You are fairly confident in your assessment.",
    }
    review = normalise_review(content, form)
    assert review.form == "neurips2022" and review.needs_split is True
    assert review.fields == {
        "summary": "A Lipschitz network.",
        "strengths_and_weaknesses": content["strengths_and_weaknesses"],
        "questions": "Is V unrestricted?",
    }
    assert "strengths" not in review.fields and "weaknesses" not in review.fields
    assert review.sections[1] == (
        "Originality: new parameterisation. Quality: weak baselines.\n\n"
        "Questions:\nIs V unrestricted?\n\nLimitations:\nNone."
    )
    assert (review.rating_raw, review.rating) == (4.0, 5.0)  # borderline reject -> 5
    assert review.scores == {"soundness": 3.0, "presentation": 3.0, "contribution": 2.0}


def test_neurips2025_six_point_rating_and_quality_scores():
    form = form_for_venue("NeurIPS.cc/2025/Conference")
    top = normalise_review(neurips2025_review(6), form)
    bottom = normalise_review(neurips2025_review(1), form)
    assert (top.rating_raw, top.rating) == (6.0, 10.0)
    assert (bottom.rating_raw, bottom.rating) == (1.0, 1.0)
    assert top.rating_scale == "neurips2025-1-6" and top.rating_label is None  # plain integer
    assert top.needs_split and set(top.fields) == {
        "summary",
        "strengths_and_weaknesses",
        "questions",
    }
    assert top.scores == {"quality": 3.0, "clarity": 3.0, "significance": 2.0, "originality": 4.0}
    assert top.confidence == 3.0
    assert "Raised my score" not in top.text  # final_justification is post-discussion
    assert "Small datasets." in top.sections[1] and "Questions:\nWhat is the overhead?" in top.text
    outside = normalise_review(neurips2025_review(7), form)
    assert (outside.rating_raw, outside.rating) == (7.0, None)  # not on the form's scale


@pytest.mark.parametrize("raw, expected", sorted(NEURIPS_10.items()))
def test_every_neurips_10_point_row(raw, expected):
    for venue in ("NeurIPS.cc/2022/Conference", "NeurIPS.cc/2023/Conference"):
        review = normalise_review(
            neurips2023_review(rating=f"{raw}: some label"), form_for_venue(venue)
        )
        assert (review.rating_raw, review.rating) == (raw, expected)
    assert NEURIPS_10_SCALE.map(raw) == expected


@pytest.mark.parametrize("raw, expected", sorted(NEURIPS_2025.items()))
def test_every_neurips_2025_row(raw, expected):
    review = normalise_review(neurips2025_review(raw), form_for_venue("NeurIPS.cc/2025/Conference"))
    assert (review.rating_raw, review.rating) == (raw, expected)
    assert NEURIPS2025_SCALE.map(raw) == expected


@pytest.mark.parametrize("raw, expected", sorted(ICLR_2026.items()))
def test_every_iclr_2026_row(raw, expected):
    content = {"summary": {"value": "S."}, "rating": {"value": f"{raw}: label"}}
    review = normalise_review(content, form_for_venue("ICLR.cc/2026/Conference"))
    assert (review.rating_raw, review.rating) == (raw, expected)
    assert review.rating_scale == "iclr2026-0-2-4-6-8-10"
    assert ICLR2026_SCALE.map(raw) == expected


def test_tables_are_exactly_the_spec_tables_onto_the_target_scale():
    for scale, spec in (
        (NEURIPS_10_SCALE, NEURIPS_10),
        (NEURIPS2025_SCALE, NEURIPS_2025),
        (ICLR2026_SCALE, ICLR_2026),
    ):
        assert dict(scale.table) == {float(k): float(v) for k, v in spec.items()}
        assert set(scale.table.values()) == set(TARGET_SCALE)


def test_iclr_up_to_2025_is_kept_and_2026_has_its_own_form():
    content = {"summary": {"value": "S."}, "rating": {"value": "7: odd value"}}
    review = normalise_review(content, form_for_year(2025))
    assert (review.rating, review.rating_raw, review.rating_scale) == (
        7.0,
        7.0,
        "iclr-1-3-5-6-8-10",
    )
    assert form_for_year(2025).name == "iclr2024+" and form_for_year(2031).name == "iclr2026"
    assert form_for_year(2026).name == "iclr2026"  # 2024's fields, its own labelled text
    assert form_for_year(2026).rating_scale.name == "iclr2026-0-2-4-6-8-10"
    assert form_for_venue("ICLR.cc/2024/Conference") is form_for_year(2024)
    iclr2023 = normalise_review(
        {"summary_of_the_paper": "P.", "strength_and_weaknesses": "S & W.", "recommendation": 8},
        form_for_year(2023),
    )
    assert iclr2023.needs_split and iclr2023.fields == {
        "summary": "P.",
        "strengths_and_weaknesses": "S & W.",
    }
    legacy = normalise_review({"review": "R.", "rating": "4: Ok but not good"}, form_for_year(2019))
    assert (legacy.rating, legacy.fields, legacy.scores) == (4.0, {}, {})


def test_neurips2021_maps_by_its_labels_wording():
    form = form_for_venue("NeurIPS.cc/2021/Conference")
    old = {"summary": "S.", "main_review": "M.", "limitations_and_societal_impact": "L."}
    cases = {
        "4: Ok but not good enough - rejection": (4.0, 3.0, "neurips-old-1-10"),
        "5: Marginally below the acceptance threshold": (5.0, 5.0, "neurips-old-1-10"),
        "7: Good paper, accept": (7.0, 8.0, "neurips-old-1-10"),
        "4: Borderline reject": (4.0, 5.0, "neurips2021-1-10"),  # the 2022 table
    }
    for label, expected in cases.items():
        review = normalise_review({**old, "rating": label}, form)
        assert (review.rating_raw, review.rating, review.rating_scale) == expected
    review = normalise_review({**old, "rating": 6}, form)
    assert (review.rating, review.rating_scale) == (6.0, "neurips2021-1-10")
    assert review.sections[1] == "M.\n\nLimitations And Societal Impact:\nL."
    assert review.fields == {"summary": "S."} and not review.needs_split


def test_neurips_venues_api_versions_and_form_detection():
    assert api_version_for("NeurIPS.cc/2021/Conference") == 1
    assert api_version_for("NeurIPS.cc/2022/Conference") == 1
    assert api_version_for("NeurIPS.cc/2023/Conference") == 2
    assert api_version_for("ICLR.cc/2023/Conference") == 1  # unchanged
    assert submission_invitations("NeurIPS.cc/2022/Conference", 1)[0] == (
        "NeurIPS.cc/2022/Conference/-/Blind_Submission"
    )
    assert submission_invitations("NeurIPS.cc/2023/Conference", 2) == [
        "NeurIPS.cc/2023/Conference/-/Submission"
    ]
    assert venue_label("NeurIPS.cc/2025/Conference") == "NeurIPS 2025"
    assert form_for_venue("NeurIPS.cc/2030/Conference").name == "neurips2025"
    with pytest.raises(ValueError, match="NeurIPS 2020"):
        form_for_venue("NeurIPS.cc/2020/Conference")
    # a 2023-style review under the 2022 form is read with the 2023 form; never with an ICLR one
    assert detect_form(neurips2023_review(), form_for_venue("NeurIPS.cc/2022/Conference")).name == (
        "neurips2023-2024"
    )
    assert detect_form(neurips2023_review(), form_for_year(2023)).name == "iclr2024+"


def test_decisions_are_cleaned():
    assert clean_decision("Accept: notable-top-5%") == "Accept (notable-top-5%)"
    assert clean_decision("<p>ACCEPT&nbsp;(Poster)</p>\n") == "Accept (poster)"
    assert clean_decision("NeurIPS 2023 spotlight") == "Accept (spotlight)"
    assert clean_decision("  Reject. ") == "Reject"
    assert clean_decision("ICLR 2024 Conference Rejected Submission") == "Reject"
    assert clean_decision("Invite to Workshop Track") == "Workshop"
    assert clean_decision("NeurIPS 2022 Accept") == "Accept"
    assert clean_decision("Submitted to NeurIPS 2023") is None
    assert clean_decision("") is None and clean_decision(None) is None


# --------------------------------------------------------------------------- filters by hand


def reviews(*pairs: tuple[float | None, float | None]) -> list[tuple[float | None, float | None]]:
    """(confidence, mapped rating) per review."""
    return list(pairs)


def run_filters(papers, **options):
    return apply_quality_filters(
        papers, confidence=lambda r: r[0], rating=lambda r: r[1], **options
    )


def test_variance_is_population_variance_kept_at_the_maximum():
    assert population_variance([5, 5, 6, 8]) == 1.5  # mean 6: (1 + 1 + 0 + 4) / 4
    assert population_variance([3, 5, 6]) == pytest.approx(14 / 9)  # 1.556 > 1.5
    papers = {
        "exact": reviews((4, 5), (4, 5), (5, 6), (4, 8)),
        "above": reviews((4, 3), (4, 5), (4, 6)),
        "agree": reviews((4, 6), (4, 6), (4, 6)),
    }
    kept, report = run_filters(papers, min_reviews=3, max_rating_variance=1.5)
    assert sorted(kept) == ["agree", "exact"]
    assert report["max_rating_variance"] == {
        "threshold": 1.5,
        "papers_in": 3,
        "reviews_in": 10,
        "papers_removed": 1,
        "reviews_removed": 3,
        "papers_without_rating": 0,
    }
    kept, _ = run_filters(papers, min_reviews=3, max_rating_variance=1.4)
    assert sorted(kept) == ["agree"]


def test_order_confidence_then_count_then_variance_matters():
    papers = {
        # an unconfident outlier: the variance over all four (4.69) would drop the paper,
        # over the three confident ones (0) it stays
        "outlier": reviews((4, 6), (5, 6), (4, 6), (2, 1)),
        # three reviews, one unconfident: counting first would keep it, then two are left
        "thin": reviews((4, 8), (4, 8), (3, 8)),
        # confident disagreement: dropped by the variance in any order
        "split": reviews((5, 1), (5, 10), (4, 6)),
        # a review without confidence is removed by the confidence filter
        "unknown": reviews((None, 10), (4, 5), (4, 5), (4, 6)),
    }
    kept, report = run_filters(papers, **BEYOND_RATING_FILTERS)
    assert sorted(kept) == ["outlier", "unknown"]
    assert [r[1] for r in kept["outlier"]] == [6, 6, 6]
    assert [r[1] for r in kept["unknown"]] == [5, 5, 6]

    # the other orders by hand: variance first drops "outlier" (and "unknown": its variance over
    # 10, 5, 5, 6 is 4.25); count first keeps "thin" (3 reviews before the confidence filter)
    assert population_variance([6, 6, 6, 1]) > 1.5 and population_variance([10, 5, 5, 6]) > 1.5

    def confident_ratings(pid: str) -> list[float]:
        return [r[1] for r in papers[pid] if r[0] is not None and r[0] >= 4]

    count_first = [pid for pid, rs in papers.items() if len(rs) >= 3]
    count_first = [pid for pid in count_first if population_variance(confident_ratings(pid)) <= 1.5]
    assert sorted(count_first) == ["outlier", "thin", "unknown"] != sorted(kept)

    assert report["order"] == ["min_confidence", "min_reviews", "max_rating_variance"]
    assert report["min_confidence"] == {
        "threshold": 4,
        "papers_in": 4,
        "reviews_in": 14,
        "reviews_removed": 3,
        "reviews_without_confidence": 1,
        "papers_removed": 0,
    }
    assert report["min_reviews"] == {
        "threshold": 3,
        "papers_in": 4,
        "reviews_in": 11,
        "papers_removed": 1,
        "reviews_removed": 2,
    }
    assert report["max_rating_variance"]["papers_removed"] == 1
    assert report["max_rating_variance"]["reviews_removed"] == 3
    assert (report["papers_out"], report["reviews_out"]) == (2, 6)


def test_filters_off_change_nothing_but_the_count():
    papers = {"a": reviews((1, 1), (None, 10)), "b": reviews((1, 1))}
    kept, report = run_filters(papers, min_reviews=2)
    assert kept == {"a": papers["a"]}
    assert report["min_confidence"] == {"threshold": None}
    assert report["max_rating_variance"] == {"threshold": None}
    with pytest.raises(ValueError, match="max_rating_variance"):
        run_filters(papers, max_rating_variance=-1)


# --------------------------------------------------------------------------- the builder


class FakeClient:
    """Serves recorded listings (one JSON file per invitation id); no PDFs are asked for."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.listings: list[dict[str, Any]] = []

    def get_all_notes(self, **kwargs: Any) -> list[Any]:
        self.listings.append(kwargs)
        path = self.folder / (kwargs["invitation"].replace("/", "_") + ".json")
        return json.loads(path.read_text())["notes"] if path.exists() else []

    def get_pdf(self, id: str) -> bytes:
        raise AssertionError("PDFs are off in these tests")


def write_listing(folder: Path, invitation: str, notes: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / (invitation.replace("/", "_") + ".json")).write_text(json.dumps({"notes": notes}))
    return folder


VENUE23 = "NeurIPS.cc/2023/Conference"


def v2_paper(
    pid: str,
    n: int,
    review_specs: list[tuple[Any, Any]],
    *,
    venueid: str = VENUE23,
    venue: str = "NeurIPS 2023 poster",
    decision: str | None = None,
) -> dict[str, Any]:
    """A NeurIPS 2023 submission; ``review_specs`` are (raw rating, confidence) pairs, a None
    confidence leaves the field out, a rating "EMPTY" makes an all-empty review."""
    replies = []
    for i, (rating, confidence) in enumerate(review_specs):
        overrides: dict[str, Any] = {"rating": f"{rating}: label", "confidence": confidence}
        if rating == "EMPTY":
            overrides = {k: "" for k in ("summary", "strengths", "weaknesses", "questions")}
            overrides.update(limitations="", rating="5: label", confidence=4)
        content = neurips2023_review(**overrides)
        if confidence is None:
            content.pop("confidence")
        replies.append(
            {
                "id": f"{pid}-r{i}",
                "invitations": [f"{VENUE23}/Submission{n}/-/Official_Review"],
                "content": content,
            }
        )
    replies.append(
        {
            "id": f"{pid}-c",
            "invitations": [f"{VENUE23}/Submission{n}/-/Official_Comment"],
            "content": wrap({"comment": "Thanks."}),
        }
    )
    if decision:
        replies.append(
            {
                "id": f"{pid}-d",
                "invitations": [f"{VENUE23}/Submission{n}/-/Decision"],
                "content": wrap({"decision": decision, "comment": "Congrats."}),
            }
        )
    content = {"title": f"Paper {pid}", "abstract": f"Abstract {pid}.", "venueid": venueid}
    content["venue"] = venue
    return {
        "id": pid,
        "number": n,
        "invitations": [f"{VENUE23}/-/Submission"],
        "license": "CC BY 4.0",
        "content": wrap(content),
        "details": {"replies": replies},
    }


def neurips2023_fixture() -> list[dict[str, Any]]:
    return [
        # raw 5,6,5 -> 6,6,6 (confident) and an unconfident raw 1 -> 1
        v2_paper("n1", 1, [(5, 4), (6, 5), (5, 4), (1, 2)], decision="Accept (poster)"),
        # one of three is unconfident: two left, below min_reviews
        v2_paper("n2", 2, [(7, 4), (7, 4), (7, 3)], decision="Accept (poster)"),
        # raw 4,4,5,7 -> 5,5,6,8: variance exactly 1.5, kept; plus one without confidence
        v2_paper(
            "n3", 3, [(4, 4), (4, 4), (5, 4), (7, 4), (10, None)], venue="NeurIPS 2023 spotlight"
        ),
        # raw 3,5,7 -> 3,6,8: variance 4.22, dropped
        v2_paper("n4", 4, [(3, 5), (5, 5), (7, 4)], decision="Accept (oral)"),
        v2_paper("n5", 5, [(6, 4)] * 3, venueid=f"{VENUE23}/Withdrawn_Submission"),
        # raw 3,4,4 -> 3,5,5: variance 0.89; an empty review skipped before the filters
        v2_paper(
            "n6",
            6,
            [(3, 4), (4, 4), (4, 5), ("EMPTY", 4)],
            venueid=f"{VENUE23}/Rejected_Submission",
            venue="Submitted to NeurIPS 2023",
            decision="<b>Reject</b>",
        ),
    ]


@pytest.fixture
def neurips23(tmp_path: Path) -> Path:
    return write_listing(tmp_path / "api", f"{VENUE23}/-/Submission", neurips2023_fixture())


def test_neurips2023_build_with_beyond_rating_filters_and_its_card(tmp_path, neurips23):
    client = FakeClient(neurips23)
    config = BuildConfig.beyond_rating(VENUE23, tmp_path / "out", pdf=False, reviews_per_paper=None)
    assert (config.min_confidence, config.min_reviews, config.max_rating_variance) == (4, 3, 1.5)
    result = build_dataset(config, client=client, progress=False)
    assert client.listings == [{"invitation": f"{VENUE23}/-/Submission", "details": "replies"}]
    assert result.card["source"]["api_url"] == "https://api2.openreview.net"
    assert result.card["counts"] == {
        "submissions_listed": 6,
        "withdrawn": 1,
        "desk_rejected": 0,
        "active": 5,
        "official_reviews_of_active_papers": 19,
        "empty_reviews_skipped": 1,
        "papers_below_min_reviews": 1,
        "eligible_papers": 3,
        "papers": 3,
        "reviews": 10,
    }
    filters = result.card["quality_filters"]
    assert filters["preset"] == "beyond-rating" and filters["rule"].startswith("Beyond Rating D5")
    assert filters["order"] == ["min_confidence", "min_reviews", "max_rating_variance"]
    assert filters["min_confidence"] == {
        "threshold": 4,
        "papers_in": 5,
        "reviews_in": 18,
        "reviews_removed": 3,
        "reviews_without_confidence": 1,
        "papers_removed": 0,
    }
    assert filters["min_reviews"] == {
        "threshold": 3,
        "papers_in": 5,
        "reviews_in": 15,
        "papers_removed": 1,
        "reviews_removed": 2,
    }
    assert filters["max_rating_variance"] == {
        "threshold": 1.5,
        "papers_in": 4,
        "reviews_in": 13,
        "papers_removed": 1,
        "reviews_removed": 3,
        "papers_without_rating": 0,
    }
    assert (filters["papers_out"], filters["reviews_out"]) == (3, 10)
    options = result.card["filters"]
    assert (options["min_confidence"], options["min_reviews"], options["max_rating_variance"]) == (
        4,
        3,
        1.5,
    )
    scales = result.card["rating_scale"]
    assert scales["reviews_by_scale"] == {"neurips-1-10": 18}
    assert scales["tables"]["neurips-1-10"] == {str(k): float(v) for k, v in NEURIPS_10.items()}
    assert scales["ratings_outside_scale"] == 0
    assert result.card["review_form"]["form"] == "neurips2023-2024"
    assert result.card["review_form"]["rating_scale"] == "neurips-1-10"
    assert result.card["decisions"]["of_selected_papers"] == {
        "Accept (poster)": 1,
        "Accept (spotlight)": 1,
        "Reject": 1,
    }
    card_md = (tmp_path / "out" / "data_card.md").read_text()
    assert "## Quality filters" in card_md and "## Rating scale" in card_md

    rows = {
        json.loads(line)["id"]: json.loads(line)
        for line in (tmp_path / "out" / "records.jsonl").read_text().splitlines()
    }
    assert sorted(rows) == ["n1", "n3", "n6"]
    n1, n3, n6 = rows["n1"], rows["n3"], rows["n6"]
    assert (n1["decision"], n1["decision_raw"]) == ("Accept (poster)", "Accept (poster)")
    assert (n3["decision"], n3["decision_raw"]) == ("Accept (spotlight)", "NeurIPS 2023 spotlight")
    assert (n6["decision"], n6["decision_raw"]) == ("Reject", "<b>Reject</b>")
    assert (n1["conference"], n1["year"], n1["venue"]) == ("NeurIPS", 2023, "NeurIPS 2023")
    assert [r["id"] for r in n1["reviews"]] == ["n1-r0", "n1-r1", "n1-r2"]
    assert [(r["rating_raw"], r["rating"]) for r in n1["reviews"]] == [(5, 6), (6, 6), (5, 6)]
    assert [r["rating"] for r in n3["reviews"]] == [5, 5, 6, 8]
    review = n1["reviews"][0]
    assert review["rating_scale"] == "neurips-1-10" and review["rating_label"] == "5: label"
    assert review["fields"] == {
        "summary": "The paper bounds KL privacy of wide networks.",
        "strengths": "Interesting theory.",
        "weaknesses": "No experiments.",
        "questions": "",
    }
    assert review["scores"] == {"soundness": 2.0, "presentation": 3.0, "contribution": 3.0}
    assert review["needs_split"] is False

    # parquet (what load_records reads from the folder): the same, absent fields as null
    from_parquet = {r.id: r for r in load_records(tmp_path / "out")}
    extra = from_parquet["n1"].reviews[0].extra
    assert extra["rating_raw"] == 5.0 and extra["rating_scale"] == "neurips-1-10"
    assert extra["fields"]["strengths"] == "Interesting theory."
    assert extra["fields"]["strengths_and_weaknesses"] is None
    assert extra["scores"]["soundness"] == 2.0 and extra["scores"]["quality"] is None
    assert from_parquet["n3"].reviews[3].rating == 8.0


def test_filters_default_off_keep_the_old_eligibility(tmp_path, neurips23):
    result = build_dataset(
        BuildConfig(VENUE23, tmp_path / "out", pdf=False),
        client=FakeClient(neurips23),
        progress=False,
    )
    filters = result.card["quality_filters"]
    assert filters["preset"] is None
    assert filters["min_confidence"] == {"threshold": None}
    assert filters["max_rating_variance"] == {"threshold": None}
    assert result.card["counts"]["papers_below_min_reviews"] == 0
    assert result.card["counts"]["eligible_papers"] == 5
    assert sorted(r["id"] for r in result.records) == ["n1", "n2", "n3", "n4", "n6"]


def test_neurips2022_v1_build_flags_needs_split(tmp_path):
    venue = "NeurIPS.cc/2022/Conference"

    def review(rid: str, n: int, rating: int) -> dict[str, Any]:
        return {
            "id": rid,
            "invitation": f"{venue}/Paper{n}/-/Official_Review",
            "content": {
                "summary": f"Summary {rid}.",
                "strengths_and_weaknesses": f"Strong and weak points of {rid}.",
                "questions": "Why?",
                "limitations": "None.",
                "soundness": "3 good",
                "presentation": "2 fair",
                "contribution": "3 good",
                "rating": f"{rating}: Weak Accept",
                "confidence": "4: You are confident in your assessment.",
            },
        }

    notes = [
        {
            "id": "k1",
            "number": 1,
            "invitation": f"{venue}/-/Blind_Submission",
            "content": {"title": "Paper k1", "abstract": "Abstract k1.", "venue": "NeurIPS 2022"},
            "details": {
                "directReplies": [review(f"k1-r{i}", 1, 6) for i in range(3)]
                + [
                    {
                        "id": "k1-d",
                        "invitation": f"{venue}/Paper1/-/Decision",
                        "content": {"decision": "Accept"},
                    }
                ]
            },
        }
    ]
    client = FakeClient(write_listing(tmp_path / "api", f"{venue}/-/Blind_Submission", notes))
    result = build_dataset(
        BuildConfig(venue, tmp_path / "out", pdf=False), client=client, progress=False
    )
    assert client.listings == [
        {"invitation": f"{venue}/-/Blind_Submission", "details": "directReplies"}
    ]
    [k1] = load_records(tmp_path / "out" / "records.jsonl")
    assert k1.venue == "NeurIPS 2022"
    first = k1.reviews[0]
    assert (first.rating, first.extra["rating_raw"]) == (6.0, 6.0)
    assert first.extra["needs_split"] is True
    assert first.extra["fields"] == {
        "summary": "Summary k1-r0.",
        "strengths_and_weaknesses": "Strong and weak points of k1-r0.",
        "questions": "Why?",
    }
    assert result.card["review_form"]["needs_split"] is True
    assert result.card["decisions"]["of_selected_papers"] == {"Accept": 1}


def test_cli_preset_and_explicit_flags(tmp_path, neurips23, monkeypatch, capsys):
    configs: list[BuildConfig] = []
    real_build = build_module.build_dataset

    def fake_build(config, **kwargs):
        configs.append(config)
        return real_build(config, client=FakeClient(neurips23), progress=False)

    monkeypatch.setattr(build_module, "build_dataset", fake_build)
    base = ["data", "build", "--venue", VENUE23, "--no-pdf", "--all-reviews", "--quiet"]
    assert data_main([*base, "--out", str(tmp_path / "a"), "--beyond-rating-filters"]) == 0
    assert "3 papers, 10 reviews" in capsys.readouterr().out
    assert data_main([*base, "--out", str(tmp_path / "b")]) == 0
    assert "5 papers" in capsys.readouterr().out
    argv = [*base, "--out", str(tmp_path / "c"), "--beyond-rating-filters"]
    assert data_main([*argv, "--min-confidence", "3", "--max-rating-variance", "5"]) == 0
    preset, plain, explicit = configs
    assert (preset.min_confidence, preset.min_reviews, preset.max_rating_variance) == (4, 3, 1.5)
    assert preset.filter_preset == "beyond-rating"
    assert (plain.min_confidence, plain.max_rating_variance, plain.filter_preset) == (
        None,
        None,
        None,
    )
    assert (explicit.min_confidence, explicit.max_rating_variance) == (3.0, 5.0)
    card = json.loads((tmp_path / "c" / "data_card.json").read_text())
    # confidence >= 3 removes only n1's confidence-2 review and n3's review without one
    assert card["quality_filters"]["min_confidence"]["reviews_removed"] == 2
    assert card["counts"]["papers"] == 5 and card["counts"]["reviews"] == 16
    with pytest.raises(SystemExit):
        data_main([*base, "--out", str(tmp_path / "d"), "--max-rating-variance", "-1"])
    assert "must be a number >= 0" in capsys.readouterr().err


def test_note_without_decision_or_stated_venue_has_none(tmp_path):
    note = v2_paper("x", 1, [(6, 4)] * 3, venue="Submitted to NeurIPS 2023")
    from gem_data.openreview.submissions import compact_note, parse_submission

    paper = parse_submission(compact_note(note))
    assert (paper.decision, paper.decision_raw) == (None, None)
    compact = compact_note(v2_paper("y", 2, [], decision="Reject"))
    kept = [reply["id"] for reply in compact["details"]["replies"]]
    assert kept == ["y-d"]  # the decision is kept in the cached listing, the comment is not


def test_reviewbench_rows_get_the_same_mapping_and_decision():
    from collections import Counter

    from gem_data.openreview.hub import reviewbench_record

    review = {
        "review_id": "r1",
        "summary": "S.",
        "strengths": "Good.",
        "weaknesses": "Bad.",
        "questions": "",
        "soundness": "3 good",
        "rating": "4: marginally below the acceptance threshold",
        "confidence": "3: fairly confident",
    }
    row = {
        "forum_id": "f1",
        "conference": "ICLR",
        "year": 2026,
        "title": "T",
        "abstract": "A",
        "decision": "Accept (Poster)",
        "venue": "ICLR 2026 Poster",
        "reviews_json": json.dumps([review]),
        "markdown": "",
    }
    record = reviewbench_record(row, Counter())
    assert (record["decision"], record["decision_raw"]) == ("Accept (poster)", "Accept (Poster)")
    assert (record["conference"], record["year"]) == ("ICLR", 2026)
    [converted] = record["reviews"]
    # ICLR 2026's own value, on its own scale: what the fetched edition stores (0-10)
    assert (converted["rating_raw"], converted["rating"]) == (4.0, 4.0)
    assert converted["rating_scale"] == "iclr2026-0-2-4-6-8-10"
    assert record["rating_scale"] == "iclr2026"
    assert converted["scores"]["soundness"] == 3.0 and converted["fields"]["questions"] == ""
