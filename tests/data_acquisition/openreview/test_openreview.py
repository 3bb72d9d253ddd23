"""The OpenReview dataset builder (gem_data.openreview) and `gem-tasks data`, offline.

The builder runs against a fake client serving recorded API responses in the documented
formats of API v1 (ICLR 2023: Note objects, plain content, reviews in details.directReplies) and
API v2 (ICLR 2025: dicts, content wrapped as {"value": ...}, reviews in details.replies), written
as JSON fixtures by the tests. PDFs are generated here.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from conftest import REPO, FunctionGenerator
from gem_data.openreview import (
    BuildConfig,
    Enricher,
    PdfError,
    RateLimited,
    Unreachable,
    VenueNotFound,
    build_dataset,
    form_for_year,
    normalise_review,
    parse_score,
    pdf_to_text,
)
from gem_data.openreview.client import api_version_for, note_to_dict, venue_label
from gem_data.openreview.forms import detect_form, format_sections
from gem_data.openreview.ratelimit import call_with_backoff, retry_after_seconds
from gem_data.openreview.sampling import select_papers, select_reviews
from gem_tasks.cli.data import main as data_main
from scorers.data.records import load_records

# the release as `gem-tasks data fetch iclr2023-gem` writes it from the repository root
GEM_RELEASE = REPO / "data/iclr2023_gem/iclr2023_reviews.jsonl"


# --------------------------------------------------------------------------- generated PDFs


def make_pdf(pages: list[list[str]]) -> bytes:
    """A minimal valid PDF: one Helvetica text line per string, one page per list."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        (
            "<< /Type /Pages /Kids ["
            + " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
            + f"] /Count {len(pages)} >>"
        ).encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, lines in enumerate(pages):
        escaped = [s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for s in lines]
        stream = "\n".join(
            ["BT", "/F1 11 Tf", "14 TL", "72 720 Td", *(f"({s}) Tj T*" for s in escaped), "ET"]
        ).encode()
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def paper_pdf(title: str) -> bytes:
    return make_pdf(
        [
            [title, "1 Introduction", "We study widgets and their gradients."],
            ["2 Results", "Widgets converge.", "References", "[1] A. Author. Widgets. 2020."],
            ["A Appendix", "Proof of the widget lemma."],
        ]
    )


def test_pdf_text_is_extracted_and_back_matter_stripped():
    data = paper_pdf("Deep Widgets")
    full = pdf_to_text(data)
    assert full.n_pages == 3
    assert full.text.startswith("Deep Widgets\n1 Introduction\nWe study widgets")
    assert "[1] A. Author. Widgets. 2020." in full.text and "Proof of the widget" in full.text
    cut = pdf_to_text(data, strip_references=True)
    assert cut.stripped_at == "References"
    assert cut.text == (
        "Deep Widgets\n1 Introduction\nWe study widgets and their gradients.\n\n"
        "2 Results\nWidgets converge.\n"
    )
    assert cut.n_chars_stripped == len(full.text) - len(cut.text)


def test_unreadable_or_textless_pdf_raises_pdf_error():
    with pytest.raises(PdfError, match="not a readable PDF"):
        pdf_to_text(b"%PDF-1.4 truncated garbage")
    with pytest.raises(PdfError, match="no text layer"):
        pdf_to_text(make_pdf([[]]))


# --------------------------------------------------------------------------- review forms


FORM_CONTENT = {
    2018: {
        "title": "Interesting but thin",
        "review": "The paper proposes widgets.\nExperiments are small.",
        "rating": "5: Marginally below acceptance threshold",
        "confidence": "4: The reviewer is confident but not absolutely certain that the "
        "evaluation is correct",
    },
    2020: {
        "title": "Official Blind Review #1",
        "review": "Solid theory, weak baselines.",
        "rating": "6: Weak Accept",
        "experience_assessment": "I have published one or two papers in this area.",
    },
    2021: {
        "title": "Clear accept",
        "review": "Well written.",
        "rating": "8: Top 50% of accepted papers, clear accept",
        "confidence": "3: The reviewer is fairly confident that the evaluation is correct",
    },
    2023: {
        "summary_of_the_paper": "A widget method.",
        "strength_and_weaknesses": "S: simple. W: no ablation.",
        "clarity,_quality,_novelty_and_reproducibility": "Clear; code provided.",
        "summary_of_the_review": "Borderline.",
        "correctness": "3: Some of the paper's claims have minor issues.",
        "recommendation": "6: marginally above the acceptance threshold",
        "confidence": "4: You are confident in your assessment, but not absolutely certain.",
    },
    2024: {
        "summary": {"value": "Widgets for graphs."},
        "soundness": {"value": "3 good"},
        "strengths": {"value": "Novel idea."},
        "weaknesses": {"value": "Only two datasets."},
        "questions": {"value": "Why not ImageNet?"},
        "rating": {"value": "5: marginally below the acceptance threshold"},
        "confidence": {"value": "2: You are willing to defend your assessment"},
    },
    2025: {
        "summary": {"value": "Widgets for language."},
        "strengths": {"value": "Strong results."},
        "weaknesses": {"value": ""},
        "questions": {"value": "How fast is it?"},
        "rating": {"value": 8},
        "confidence": {"value": "3: You are fairly confident in your assessment."},
    },
}

FORM_EXPECTED = {
    2018: (("", "The paper proposes widgets.\nExperiments are small.", "", "Interesting but thin"),
           5.0, 4.0),
    2020: (("", "Solid theory, weak baselines.", "", "Official Blind Review #1"), 6.0, None),
    2021: (("", "Well written.", "", "Clear accept"), 8.0, 3.0),
    2023: (("A widget method.", "S: simple. W: no ablation.", "Clear; code provided.",
            "Borderline."), 6.0, 4.0),
    2024: (("Widgets for graphs.",
            "Strengths:\nNovel idea.\n\nWeaknesses:\nOnly two datasets.\n\n"
            "Questions:\nWhy not ImageNet?", "", ""), 5.0, 2.0),
    2025: (("Widgets for language.", "Strengths:\nStrong results.\n\nQuestions:\nHow fast is it?",
            "", ""), 8.0, 3.0),
}  # fmt: skip


@pytest.mark.parametrize("year", sorted(FORM_CONTENT))
def test_each_years_form_maps_to_the_four_sections(year):
    review = normalise_review(FORM_CONTENT[year], form_for_year(year))
    sections, rating, confidence = FORM_EXPECTED[year]
    assert review.sections == sections
    assert review.text == format_sections(sections)
    assert (review.rating, review.confidence) == (rating, confidence)
    assert review.text.startswith("Summary Of The Paper:\n\n")
    assert "Soundness" not in review.text and "3: Some of" not in review.text  # scores stay out


def test_four_section_text_matches_the_gem_release_layout():
    text = normalise_review(FORM_CONTENT[2023], form_for_year(2023)).text
    assert text == (
        "Summary Of The Paper:\n\nA widget method.\n\n"
        "Strength And Weaknesses:\n\nS: simple. W: no ablation.\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\nClear; code provided.\n\n"
        "Summary Of The Review:\n\nBorderline.\n"
    )


def test_scores_and_form_table_edges():
    assert parse_score("6: marginally above the acceptance threshold") == (
        6.0,
        "6: marginally above the acceptance threshold",
    )
    assert parse_score({"value": "10: strong accept"})[0] == 10.0
    assert parse_score(3) == (3.0, None)
    assert parse_score("No rating") == (None, "No rating")
    assert parse_score("") == (None, None) and parse_score(None) == (None, None)
    assert form_for_year(2031).name == "iclr2026" and form_for_year(2019).name == "iclr2018-2021"
    assert form_for_year(2022).rating == ("recommendation",)
    with pytest.raises(ValueError, match="2018"):
        form_for_year(2017)
    assert normalise_review({"summary": {"value": "  "}}, form_for_year(2025)).empty
    odd = {"summary_of_the_paper": "P.", "main_review": "M.", "recommendation": "3: reject"}
    assert detect_form(odd, form_for_year(2023)).name == "iclr2022"  # best-filled form wins
    assert detect_form(FORM_CONTENT[2023], form_for_year(2023)).name == "iclr2023"
    assert api_version_for("ICLR.cc/2023/Conference") == 1
    assert api_version_for("ICLR.cc/2024/Conference") == 2
    assert venue_label("ICLR.cc/2025/Conference") == "ICLR 2025"


def test_sampling_is_seeded_order_free_and_extends():
    ids = [f"p{i}" for i in range(20)]
    assert select_papers(ids, 5, seed=1) == select_papers(list(reversed(ids)), 5, seed=1)
    assert select_papers(ids, 8, seed=1)[:5] == select_papers(ids, 5, seed=1)
    assert select_papers(ids, 5, seed=1) != select_papers(ids, 5, seed=2)
    chosen = select_reviews("p1", ["r4", "r1", "r3", "r2"], 3, seed=0)
    assert len(chosen) == 3 and chosen == sorted(chosen)
    assert chosen == select_reviews("p1", ["r4", "r1", "r3", "r2"], 3, seed=0)
    assert select_reviews("p1", ["a", "b"], 3, seed=0) == [0, 1]


# --------------------------------------------------------------------------- rate limits


class FakeOpenReviewException(Exception):
    """Shaped like openreview.OpenReviewException: the server's error object as first arg."""


def rate_limit_error(retry_after: str | None = "7") -> Exception:
    exc = FakeOpenReviewException(
        {"name": "RateLimitError", "message": "Too many requests", "status": 429}
    )
    exc.response = SimpleNamespace(  # type: ignore[attr-defined]
        status_code=429, headers={"Retry-After": retry_after} if retry_after else {}
    )
    return exc


def test_backoff_honours_retry_after_then_exponential_and_gives_up():
    sleeps: list[float] = []
    answers: list[Any] = [rate_limit_error("7"), rate_limit_error(None), "ok"]

    def call():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call_with_backoff(call, what="x", sleep=sleeps.append, base_delay=2.0) == "ok"
    assert sleeps == [7.0, 4.0]  # Retry-After, then base_delay * 2**1

    def always_limited():
        raise FakeOpenReviewException({"name": "RateLimitError", "message": "slow down"})

    with pytest.raises(RateLimited, match="still failing after 2 retries"):
        call_with_backoff(always_limited, what="x", sleep=lambda s: None, max_retries=2)

    def offline():
        raise ConnectionError("Name or service not known")

    with pytest.raises(Unreachable, match="cannot reach the OpenReview API"):
        call_with_backoff(offline, what="listing", sleep=lambda s: None)
    assert retry_after_seconds(FakeOpenReviewException({"retryAfter": 12})) == 12.0


# --------------------------------------------------------------------------- fixtures


def review_v1(rid: str, paper: str, **fields: str) -> dict[str, Any]:
    content = {
        "summary_of_the_paper": f"{paper} does widgets ({rid}).",
        "strength_and_weaknesses": f"Strong widgets, weak baselines ({rid}).",
        "clarity,_quality,_novelty_and_reproducibility": "Clear.",
        "summary_of_the_review": "Accept.",
        "recommendation": "8: accept, good paper",
        "confidence": "3: You are fairly confident in your assessment.",
    }
    content.update(fields)
    return {
        "id": rid,
        "invitation": f"ICLR.cc/2023/Conference/Paper{paper}/-/Official_Review",
        "content": content,
    }


def submission_v1(pid: str, n: int, replies: list[dict], *, pdf: bool = True, **extra: str):
    content = {"title": f"Paper {pid}", "abstract": f"Abstract of {pid}.", **extra}
    if pdf:
        content["pdf"] = f"/pdf/{pid}.pdf"
    return {
        "id": pid,
        "number": n,
        "invitation": "ICLR.cc/2023/Conference/-/Blind_Submission",
        "content": content,
        "details": {"directReplies": replies},
    }


def v1_fixture() -> list[dict[str, Any]]:
    empty = {k: "" for k in review_v1("x", "x")["content"] if k not in ("recommendation",)}
    return [
        submission_v1("pA", 1, [review_v1(f"pA-r{i}", "pA") for i in range(3)]),
        submission_v1(  # four reviews (one sampled out); one with an empty section
            "pB",
            2,
            [review_v1(f"pB-r{i}", "pB") for i in range(3)]
            + [review_v1("pB-r3", "pB", **{"clarity,_quality,_novelty_and_reproducibility": ""})]
            + [
                {
                    "id": "pB-c",
                    "invitation": "ICLR.cc/2023/Conference/Paper2/-/Official_Comment",
                    "content": {"comment": "thanks"},
                }
            ],
        ),
        submission_v1(
            "pC",
            3,
            [review_v1(f"pC-r{i}", "pC") for i in range(3)],
            venueid="ICLR.cc/2023/Conference/Withdrawn_Submission",
            venue="ICLR 2023 Conference Withdrawn Submission",
        ),
        submission_v1("pD", 4, [review_v1(f"pD-r{i}", "pD") for i in range(3)], pdf=False),
        submission_v1("pE", 5, [review_v1(f"pE-r{i}", "pE") for i in range(2)]),
        submission_v1(  # an all-empty review leaves two: below min_reviews
            "pF",
            6,
            [review_v1("pF-r0", "pF"), review_v1("pF-r1", "pF"), review_v1("pF-r2", "pF", **empty)],
        ),
        submission_v1(
            "pG",
            7,
            [review_v1(f"pG-r{i}", "pG") for i in range(3)],
            venue="ICLR 2023 Conference Desk Rejected Submission",
        ),
        submission_v1("pH", 8, [review_v1(f"pH-r{i}", "pH") for i in range(3)]),
    ]


def v2_fixture() -> list[dict[str, Any]]:
    def wrap(d: dict[str, Any]) -> dict[str, Any]:
        return {k: {"value": v} for k, v in d.items()}

    def review(rid: str, pid: str, n: int, rating: str) -> dict[str, Any]:
        return {
            "id": rid,
            "invitations": [
                f"ICLR.cc/2025/Conference/Submission{n}/-/Official_Review",
                "ICLR.cc/2025/Conference/-/Edit",
            ],
            "content": wrap(
                {
                    "summary": f"{pid} summary by {rid}.",
                    "soundness": "3: good",
                    "strengths": f"Strength noted by {rid}.",
                    "weaknesses": f"Weakness noted by {rid}.",
                    "questions": "",
                    "rating": rating,
                    "confidence": "4: You are confident in your assessment.",
                }
            ),
        }

    def paper(pid: str, n: int, venueid: str, pdf: bool = True) -> dict[str, Any]:
        content = {"title": f"Paper {pid}", "abstract": f"Abstract of {pid}.", "venueid": venueid}
        if pdf:
            content["pdf"] = f"/pdf/{pid}.pdf"
        replies = [review(f"{pid}-r{i}", pid, n, f"{6 + i}: some label") for i in range(3)]
        replies.append(
            {
                "id": f"{pid}-d",
                "invitations": [f"ICLR.cc/2025/Conference/Submission{n}/-/Decision"],
                "content": wrap({"decision": "Accept (poster)"}),
            }
        )
        return {
            "id": pid,
            "number": n,
            "invitations": ["ICLR.cc/2025/Conference/-/Submission"],
            "license": "CC BY 4.0",
            "content": wrap(content),
            "details": {"replies": replies},
        }

    return [
        paper("q1", 1, "ICLR.cc/2025/Conference"),
        paper("q2", 2, "ICLR.cc/2025/Conference/Rejected_Submission"),
        paper("q3", 3, "ICLR.cc/2025/Conference/Withdrawn_Submission"),
        paper("q4", 4, "ICLR.cc/2025/Conference/Desk_Rejected_Submission"),
    ]


class FakeClient:
    """Serves recorded listings (JSON files, one per invitation id) and PDFs; counts calls.

    ``as_objects`` returns Note-like objects (API v1's openreview.Note), else dicts.
    """

    def __init__(
        self,
        responses: Path,
        pdfs: dict[str, bytes],
        *,
        as_objects: bool = False,
        rate_limit_once: set[str] = frozenset(),  # type: ignore[assignment]
        drop_after: int | None = None,
    ) -> None:
        self.responses = responses
        self.pdfs = pdfs
        self.as_objects = as_objects
        self.rate_limit_once = set(rate_limit_once)
        self.drop_after = drop_after
        self.listings: list[dict[str, Any]] = []
        self.pdf_calls: list[str] = []

    def get_all_notes(self, **kwargs: Any) -> list[Any]:
        self.listings.append(kwargs)
        path = self.responses / (kwargs["invitation"].replace("/", "_") + ".json")
        notes = json.loads(path.read_text())["notes"] if path.exists() else []
        return [SimpleNamespace(**n) for n in notes] if self.as_objects else notes

    def get_pdf(self, id: str) -> bytes:
        self.pdf_calls.append(id)
        if self.drop_after is not None and len(self.pdf_calls) > self.drop_after:
            raise ConnectionError("Connection aborted: network is unreachable")
        if id in self.rate_limit_once:
            self.rate_limit_once.discard(id)
            raise rate_limit_error("3")
        if id not in self.pdfs:
            raise FakeOpenReviewException({"name": "NotFoundError", "status": 404})
        return self.pdfs[id]


def write_listing(folder: Path, invitation: str, notes: list[dict[str, Any]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (invitation.replace("/", "_") + ".json")
    path.write_text(json.dumps({"notes": notes}))
    return folder


@pytest.fixture
def v1_responses(tmp_path: Path) -> Path:
    return write_listing(
        tmp_path / "v1", "ICLR.cc/2023/Conference/-/Blind_Submission", v1_fixture()
    )


def v1_pdfs() -> dict[str, bytes]:
    pdfs = {pid: paper_pdf(f"Paper {pid}") for pid in ("pA", "pC", "pF", "pG")}
    pdfs["pB"] = b"%PDF-1.4 this is not really a pdf"
    return pdfs  # pH has a PDF field but the server answers 404


# --------------------------------------------------------------------------- the builder


def test_v1_build_filters_samples_and_records_failures(tmp_path, v1_responses):
    client = FakeClient(v1_responses, v1_pdfs(), as_objects=True, rate_limit_once={"pA"})
    sleeps: list[float] = []
    config = BuildConfig(venue="ICLR.cc/2023/Conference", out=tmp_path / "out")
    result = build_dataset(config, client=client, sleep=sleeps.append, progress=False)

    assert client.listings == [
        {"invitation": "ICLR.cc/2023/Conference/-/Blind_Submission", "details": "directReplies"}
    ]
    assert sleeps == [3.0]  # the 429's Retry-After, then the retry succeeded
    assert sorted(client.pdf_calls) == ["pA", "pA", "pB", "pH"]  # pD has no PDF field
    counts = result.card["counts"]
    assert counts == {
        "submissions_listed": 8,
        "withdrawn": 1,
        "desk_rejected": 1,
        "active": 6,
        "official_reviews_of_active_papers": 18,
        "empty_reviews_skipped": 1,
        "papers_below_min_reviews": 2,
        "eligible_papers": 4,
        "papers": 4,
        "reviews": 12,
    }
    records = {r.id: r for r in load_records(tmp_path / "out")}  # reads the parquet
    assert sorted(records) == ["pA", "pB", "pD", "pH"]
    assert [r.id for r in load_records(tmp_path / "out" / "records.jsonl")] == [
        r["id"] for r in result.records
    ]
    a = records["pA"]
    assert (a.venue, a.title, a.abstract) == ("ICLR 2023", "Paper pA", "Abstract of pA.")
    assert a.paper_text is not None and "We study widgets" in a.paper_text
    assert [r.id for r in a.reviews] == ["pA-r0", "pA-r1", "pA-r2"]
    assert a.reviews[0].text == (
        "Summary Of The Paper:\n\npA does widgets (pA-r0).\n\n"
        "Strength And Weaknesses:\n\nStrong widgets, weak baselines (pA-r0).\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\nClear.\n\n"
        "Summary Of The Review:\n\nAccept.\n"
    )
    assert (a.reviews[0].rating, a.reviews[0].confidence) == (8.0, 3.0)
    assert a.reviews[0].extra["rating_label"] == "8: accept, good paper"
    assert len(records["pB"].reviews) == 3  # 4 official reviews, 3 sampled; the comment ignored
    assert {r.id for r in records["pB"].reviews} <= {"pB-r0", "pB-r1", "pB-r2", "pB-r3"}
    assert all(records[p].paper_text is None for p in ("pB", "pD", "pH"))
    failures = {f["paper_id"]: f for f in result.card["extraction_failures"]}
    assert sorted(failures) == ["pB", "pD", "pH"]
    assert failures["pD"]["status"] == "missing"
    assert failures["pB"]["error"].startswith("extraction failed: not a readable PDF")
    assert failures["pH"]["error"].startswith("download failed: FakeOpenReviewException")
    pdf = result.card["pdf_extraction"]
    assert (pdf["ok"], pdf["missing"], pdf["failed"]) == (1, 1, 2)
    assert result.card["review_form"]["form"] == "iclr2023"
    assert result.card["review_form"]["forms_used"] == {"iclr2023": 18}
    card_md = (tmp_path / "out" / "data_card.md").read_text()
    assert (
        "ICLR.cc/2023/Conference/-/Blind_Submission" in card_md and "| withdrawn | 1 |" in card_md
    )
    assert json.loads((tmp_path / "out" / "data_card.json").read_text())["counts"] == counts
    cached = (tmp_path / "out" / "cache" / "listing.json").read_text()
    assert '"pB-r3"' in cached and '"pB-c"' not in cached  # discussions are not cached


def test_review_with_an_empty_section_keeps_the_four_headers(tmp_path, v1_responses):
    client = FakeClient(v1_responses, v1_pdfs())
    config = BuildConfig(
        venue="ICLR.cc/2023/Conference", out=tmp_path / "o", reviews_per_paper=None, pdf=False
    )
    result = build_dataset(config, client=client, progress=False)
    [b] = [r for r in result.records if r["id"] == "pB"]
    [r3] = [r for r in b["reviews"] if r["id"] == "pB-r3"]
    empty_section = "Clarity, Quality, Novelty And Reproducibility:\n\n\n\nSummary Of The Review:"
    assert empty_section in r3["text"]
    assert len(b["reviews"]) == 4 and client.pdf_calls == []
    assert result.card["pdf_extraction"]["enabled"] is False


def test_v2_build_reads_wrapped_content_and_replies(tmp_path):
    responses = write_listing(tmp_path / "v2", "ICLR.cc/2025/Conference/-/Submission", v2_fixture())
    pdfs = {pid: paper_pdf(f"Paper {pid}") for pid in ("q1", "q2", "q3", "q4")}
    client = FakeClient(responses, pdfs)
    config = BuildConfig(
        venue="ICLR.cc/2025/Conference", out=tmp_path / "out", strip_references=True, seed=3
    )
    result = build_dataset(config, client=client, progress=False)
    assert client.listings == [
        {"invitation": "ICLR.cc/2025/Conference/-/Submission", "details": "replies"}
    ]
    assert result.card["source"]["api_url"] == "https://api2.openreview.net"
    counts = result.card["counts"]
    assert (counts["withdrawn"], counts["desk_rejected"], counts["papers"]) == (1, 1, 2)
    records = {r.id: r for r in load_records(tmp_path / "out")}
    assert sorted(records) == ["q1", "q2"] and sorted(client.pdf_calls) == ["q1", "q2"]
    q1 = records["q1"]
    assert q1.venue == "ICLR 2025" and q1.title == "Paper q1"
    assert q1.paper_text is not None and "Widgets converge." in q1.paper_text
    assert "[1] A. Author" not in q1.paper_text and "widget lemma" not in q1.paper_text
    assert [r.rating for r in q1.reviews] == [6.0, 7.0, 8.0]
    assert q1.reviews[0].text == (
        "Summary Of The Paper:\n\nq1 summary by q1-r0.\n\n"
        "Strength And Weaknesses:\n\nStrengths:\nStrength noted by q1-r0.\n\n"
        "Weaknesses:\nWeakness noted by q1-r0.\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\n\n\n"
        "Summary Of The Review:\n\n\n"
    )
    assert result.card["note_licences"] == {"CC BY 4.0": 2}
    assert result.card["pdf_extraction"]["references_stripped"] == 2


def test_interrupted_build_resumes_without_refetching(tmp_path, v1_responses):
    out = tmp_path / "out"
    config = BuildConfig(venue="ICLR.cc/2023/Conference", out=out)
    dropping = FakeClient(v1_responses, v1_pdfs(), drop_after=2)
    with pytest.raises(Unreachable, match="PDF of paper"):
        build_dataset(config, client=dropping, progress=False)
    done = sorted(p.stem for p in (out / "cache" / "papers").glob("*.json"))
    interrupted = dropping.pdf_calls[2]  # the download the network dropped
    assert len(dropping.pdf_calls) == 3 and interrupted not in done
    assert set(dropping.pdf_calls[:2]) < set(done)  # (+ a paper without PDF, no call needed)
    assert not list(out.rglob("*.tmp")) and not (out / "records.jsonl").exists()
    for path in (out / "cache").rglob("*.json"):
        json.loads(path.read_text())  # every cache entry is whole

    resumed = FakeClient(v1_responses, v1_pdfs())
    result = build_dataset(config, client=resumed, progress=False)
    assert resumed.listings == []  # the listing came from the cache
    assert not set(resumed.pdf_calls) & set(done) and interrupted in resumed.pdf_calls
    assert sorted(set(resumed.pdf_calls) | set(done)) == ["pA", "pB", "pD", "pH"]
    assert result.card["pdf_extraction"]["reused_from_cache"] == len(done) == 3
    assert len(load_records(out / "records.jsonl")) == 4

    again = FakeClient(v1_responses, v1_pdfs())
    build_dataset(config, client=again, progress=False)
    assert again.listings == [] and again.pdf_calls == []  # everything cached
    retry = FakeClient(v1_responses, v1_pdfs())
    build_dataset(
        BuildConfig(venue=config.venue, out=out, retry_failed=True), client=retry, progress=False
    )
    assert sorted(retry.pdf_calls) == ["pB", "pH"]


def test_wrong_venue_names_the_invitations_tried(tmp_path, v1_responses):
    client = FakeClient(v1_responses, {})
    with pytest.raises(VenueNotFound) as info:
        build_dataset(
            BuildConfig(venue="ICLR.cc/2022/Conferense", out=tmp_path / "o"), client=client
        )
    message = str(info.value)
    assert "ICLR.cc/2022/Conferense/-/Blind_Submission" in message
    assert "ICLR.cc/2022/Conferense/-/Submission" in message
    assert "https://api.openreview.net" in message
    with pytest.raises(ValueError, match="has no year"):
        build_dataset(BuildConfig(venue="ICLR.cc/Conference", out=tmp_path / "o"), client=client)


def test_no_network_is_a_clear_error(tmp_path):
    class Offline:
        def get_all_notes(self, **kwargs):
            raise ConnectionError("Failed to resolve 'api2.openreview.net'")

        def get_pdf(self, id):
            raise AssertionError("not reached")

    with pytest.raises(Unreachable, match="check the network connection"):
        build_dataset(
            BuildConfig(venue="ICLR.cc/2025/Conference", out=tmp_path / "o"), client=Offline()
        )


def test_note_objects_keep_their_details():
    note = SimpleNamespace(id="n", number=1, content={"title": "t"}, details={"replies": []})
    assert note_to_dict(note) == {
        "id": "n",
        "number": 1,
        "content": {"title": "t"},
        "details": {"replies": []},
    }


# --------------------------------------------------------------------------- enrichments


def test_summaries_and_assw_are_cached_and_resumable(tmp_path, v1_responses):
    from scorers.text.judgments import REWRITE_BUDGET

    calls: list[int] = []

    def generate(conversations, settings):
        calls.append(len(conversations))
        return [
            "The reviewer appreciates the widgets.\nThe reviewer questions the baselines."
            if settings.prefill
            else "Strengths: widgets. Weaknesses: none stated."
            for _ in conversations
        ]

    enricher = Enricher(FunctionGenerator(generate, "fake-lm"), summaries=True, assw=True)
    config = BuildConfig(venue="ICLR.cc/2023/Conference", out=tmp_path / "out", papers=2)
    first = build_dataset(
        config, client=FakeClient(v1_responses, v1_pdfs()), enricher=enricher, progress=False
    )
    summaries = first.card["enrichments"]["summaries"]
    assert summaries == {
        "reviews": 6,
        "computed": 6,
        "reused_from_cache": 0,
        "without_judgment_lines": 0,
        "empty_reviews_not_rewritten": 0,
        "budget": REWRITE_BUDGET,
        "at_token_limit": 0,  # plain strings: the generator does not say it was cut
        "at_token_limit_reviews": [],
    }
    records = load_records(tmp_path / "out" / "records.jsonl")
    assert all(
        r.summary == "The reviewer appreciates the widgets.\nThe reviewer questions the baselines."
        for p in records
        for r in p.reviews
    )
    with_text = [p for p in records if p.paper_text]
    assert [p.assw for p in with_text] == ["Strengths: widgets. Weaknesses: none stated."] * len(
        with_text
    )
    assert first.card["enrichments"]["generator"] == "fake-lm"

    calls.clear()
    second = build_dataset(
        config, client=FakeClient(v1_responses, v1_pdfs()), enricher=enricher, progress=False
    )
    assert calls == []
    assert second.card["enrichments"]["summaries"]["reused_from_cache"] == 6


def test_enriched_rewrites_get_room_by_length_and_cut_ones_are_counted(tmp_path):
    from gem_data.openreview import enrich_records
    from scorers.lm.base import Reply

    budgets: dict[str, int] = {}

    def generate(conversations, settings):
        out = []
        for conversation in conversations:
            review = conversation[-1]["content"]
            budgets[review] = settings.max_new_tokens
            out.append(Reply("The reviewer appreciates it.", hit_limit="LOOP" in review))
        return out

    long_review = "LOOP " + "word " * 600  # 3,005 characters: budget 768
    records = [
        {"id": "p", "reviews": [{"id": "r1", "text": "Short."}, {"id": "r2", "text": long_review}]}
    ]
    enricher = Enricher(FunctionGenerator(generate, "fake"), summaries=True)
    card = enrich_records(records, enricher, cache_dir=tmp_path, progress=False)
    assert sorted(budgets.values()) == [256, 768]
    assert card["summaries"]["at_token_limit"] == 1
    assert card["summaries"]["at_token_limit_reviews"] == ["r2"]


def test_empty_reviews_and_paper_texts_are_never_sent_to_the_generator(tmp_path):
    from gem_data.openreview import enrich_records

    seen: list[str] = []

    def generate(conversations, settings):
        seen.extend(c[-1]["content"] for c in conversations)
        return ["The reviewer appreciates it." for _ in conversations]

    records = [
        {
            "id": "p",
            "paper_text": "  ",
            "reviews": [{"text": "Fine work."}, {"text": " \n "}, {"text": ""}],
        }
    ]
    enricher = Enricher(FunctionGenerator(generate, "fake"), summaries=True, assw=True)
    card = enrich_records(records, enricher, cache_dir=tmp_path, progress=False)
    assert len(seen) == 1 and "Fine work." in seen[0]
    assert [r["summary"] for r in records[0]["reviews"]] == [
        "The reviewer appreciates it.",
        None,
        None,
    ]
    assert card["summaries"]["empty_reviews_not_rewritten"] == 2
    assert card["assw"]["papers"] == 0 and card["assw"]["papers_without_text"] == ["p"]
    # the one sqlite cache, under the scorers' own keys: a scorer with this generator finds it
    from scorers.lm.cache import ScoreCache
    from scorers.text.judgments import PREPROCESS_SETTINGS, preprocess_messages

    cache = ScoreCache(tmp_path / "cache.sqlite")
    key = cache.generation_key("fake", preprocess_messages("Fine work."), PREPROCESS_SETTINGS)
    assert cache.get_generation(key) == "The reviewer appreciates it."
    assert not list(tmp_path.glob("**/*.json"))  # no separate JSON cache any more


# --------------------------------------------------------------------------- gem-tasks data convert


@pytest.mark.skipif(
    not GEM_RELEASE.exists(),
    reason="the GEM release is not fetched (gem-tasks data fetch iclr2023-gem)",
)
def test_convert_gem_release_slice_through_the_cli(tmp_path, capsys):
    lines = GEM_RELEASE.read_text(encoding="utf-8").splitlines()[:6]
    source = tmp_path / "slice.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "gem"
    status = data_main(["data", "convert", "--from", "gem-release", str(source), "--out", str(out)])
    assert status == 0
    assert "6 papers, 18 reviews" in capsys.readouterr().out
    rows = [json.loads(line) for line in lines]
    records = {r.id: r for r in load_records(out)}
    assert sorted(records) == sorted(row["paper_id"] for row in rows)
    for row in rows:
        record = records[row["paper_id"]]
        assert [r.text for r in record.reviews] == [r["review"] for r in row["reviews"]]
        assert [r.summary for r in record.reviews] == [r["review_summary"] for r in row["reviews"]]
        assert record.venue == "ICLR 2023" and record.abstract == ""
    card = json.loads((out / "data_card.json").read_text())
    assert card["source"]["license"] == "Apache-2.0" and card["counts"]["papers"] == 6


def reviewbench_row(pid: str, year: int, reviews: list[dict], **extra: Any) -> dict[str, Any]:
    row = {
        "forum_id": pid,
        "conference": "ICLR",
        "year": year,
        "track": "main",
        "venue_id": f"ICLR.cc/{year}/Conference",
        "paper_number": 1,
        "title": f"Title {pid}",
        "abstract": f"Abstract {pid}.",
        "authors": ["A. Author"],
        "keywords": ["widgets"],
        "tldr": "",
        "primary_area": "",
        "venue": f"ICLR {year} Poster",
        "decision": "Accept (poster)",
        "decision_comment": "",
        "author_rebuttal": "",
        "num_reviews": len(reviews),
        "reviews_json": json.dumps(reviews),
        "markdown": f"# Title {pid}\n\nFull text of {pid}.",
        "markdown_chars": 30,
    }
    row.update(extra)
    return row


def union_review(rid: str, **fields: Any) -> dict[str, Any]:
    fields_of_all_forms = ("summary", "strengths", "weaknesses", "questions", "soundness")
    review: dict[str, Any] = {key: "" for key in fields_of_all_forms}
    review.update({"review_id": rid, "reviewer": "Reviewer_x", "rating": None, "confidence": None})
    review.update(fields)
    return review


def test_convert_reviewbench_rows_through_the_cli(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    modern = [
        union_review(
            f"h1-r{i}",
            summary=f"Sum {i}.",
            strengths="Good.",
            weaknesses="Bad.",
            rating="6: marginally above the acceptance threshold",
            confidence="3: fairly confident",
            soundness="3 good",
        )
        for i in range(4)
    ]
    old = [
        union_review(
            f"h2-r{i}", review=f"Free text review {i}.", title="Fine", rating=8, confidence=4
        )
        for i in range(3)
    ]
    rows = [
        reviewbench_row("h1", 2025, modern, markdown=""),
        reviewbench_row("h2", 2019, old + [union_review("h2-empty")]),
        reviewbench_row("h3", 2024, modern[:3], decision="Withdrawn", venue="Withdrawn"),
        reviewbench_row("h4", 2024, modern[:2]),
    ]
    source = tmp_path / "iclr-00000-of-00001.parquet"
    pq.write_table(pa.Table.from_pylist(rows), source)
    out = tmp_path / "hub"
    argv = ["data", "convert", "--from", "hub:reviewbench", str(source), "--out", str(out)]
    assert data_main([*argv, "--seed", "1"]) == 0
    records = {r.id: r for r in load_records(out / "records.jsonl")}
    assert sorted(records) == ["h1", "h2"]
    h1, h2 = records["h1"], records["h2"]
    assert (h1.venue, h1.title, h1.abstract, h1.paper_text) == (
        "ICLR 2025",
        "Title h1",
        "Abstract h1.",
        None,
    )
    assert len(h1.reviews) == 3 and all(r.rating == 6.0 and r.confidence == 3.0 for r in h1.reviews)
    assert (
        h1.reviews[0].text.startswith("Summary Of The Paper:\n\nSum ")
        and "Strengths:\nGood.\n\nWeaknesses:\nBad." in h1.reviews[0].text
    )
    assert "3 good" not in h1.reviews[0].text
    assert h2.venue == "ICLR 2019" and h2.paper_text == "# Title h2\n\nFull text of h2."
    assert [r.id for r in h2.reviews] == ["h2-r0", "h2-r1", "h2-r2"]
    assert h2.reviews[0].text == format_sections(("", "Free text review 0.", "", "Fine"))
    assert (h2.reviews[0].rating, h2.reviews[0].confidence) == (8.0, 4.0)
    card = json.loads((out / "data_card.json").read_text())
    assert card["source"]["name"] == "Samarth0710/reviewbench"
    assert card["source"]["license"] == "CC-BY-4.0"
    assert card["counts"]["withdrawn"] == 1 and card["counts"]["empty_reviews_skipped"] == 1
    assert card["counts"]["papers_below_min_reviews"] == 1  # h4: two reviews
    # a dataset folder is meant to be shared: its files get the mode any new file gets (0666 less
    # the umask), not the temporary file's private 0600
    import os
    import stat

    mask = os.umask(0o022)
    try:
        shared = tmp_path / "shared"
        assert data_main([*argv[:-1], str(shared)]) == 0
    finally:
        os.umask(mask)
    for written in ("records.jsonl", "records.parquet", "data_card.json", "data_card.md"):
        assert stat.S_IMODE((shared / written).stat().st_mode) == 0o644, written


def test_cli_reports_errors_with_exit_status(tmp_path, capsys):
    status = data_main(
        ["data", "convert", "--from", "hub:nope", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert status == 2
    assert capsys.readouterr().err.startswith(
        "gem-tasks data convert: unknown Hub dataset 'nope'; known: reviewbench; "
    )
