"""Canonical records: loading, validation errors that name file and record, the fixed split."""

from __future__ import annotations

import json

import pytest

from conftest import write_jsonl
from scorers.data.records import RecordError, load_records, parse_record, split_reviews


def paper(pid: str = "p1", n_reviews: int = 3, **overrides) -> dict:
    record = {
        "id": pid,
        "venue": "v",
        "title": f"Title {pid}",
        "abstract": f"Abstract {pid}",
        "reviews": [
            {"id": f"{pid}-r{i}", "text": f"review {i}", "rating": 5} for i in range(n_reviews)
        ],
    }
    record.update(overrides)
    return record


def test_demo_dataset_loads_with_ten_papers_of_three_reviews(demo_records):
    assert len(demo_records) >= 8
    for record in demo_records:
        assert record.title and record.abstract and record.paper_text
        assert len(record.reviews) == 3
        for review in record.reviews:
            for header in (
                "Summary Of The Paper",
                "Strengths And Weaknesses",
                "Clarity, Quality, Novelty And Reproducibility",
                "Summary Of The Review",
            ):
                assert header in review.text


def test_jsonl_round_trip_and_optional_fields(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", [paper("a", assw="S"), "", paper("b")])
    records = load_records(path)
    assert [r.id for r in records] == ["a", "b"]
    assert records[0].assw == "S" and records[1].assw is None
    assert records[0].reviews[1].rating == 5.0


def test_parquet_and_folder_sources(tmp_path):
    import pandas as pd

    pd.DataFrame([paper("a"), paper("b")]).to_parquet(tmp_path / "d.parquet")
    assert [r.id for r in load_records(tmp_path / "d.parquet")] == ["a", "b"]
    assert [r.id for r in load_records(tmp_path)] == ["a", "b"]


def test_malformed_json_names_file_and_line(tmp_path):
    path = write_jsonl(tmp_path / "bad.jsonl", [paper("a"), "{not json"])
    with pytest.raises(RecordError, match=r"bad\.jsonl:2: not valid JSON"):
        load_records(path)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.pop("abstract"), r"missing required field\(s\) \['abstract'\]"),
        (lambda r: r.update(reviews=[]), "'reviews' must be a non-empty list"),
        (
            lambda r: r["reviews"][1].pop("text"),
            r"review #1: missing required field\(s\) \['text'\]",
        ),
        (lambda r: r["reviews"][0].update(rating="high"), "'rating' must be a number"),
        (lambda r: r.update(title=3), "'title' must be a string, got int"),
        (
            lambda r: r["reviews"][0].update(text=7),
            r"review #0: field 'text' must be a string, got int 7",
        ),
    ],
)
def test_missing_or_wrong_fields_name_file_record_and_paper(tmp_path, mutate, message):
    bad = paper("p7")
    mutate(bad)
    path = write_jsonl(tmp_path / "d.jsonl", [paper("p1"), bad])
    with pytest.raises(RecordError, match=message) as info:
        load_records(path)
    assert "d.jsonl:2" in str(info.value)
    if "missing required field(s) ['abstract']" not in str(info.value):
        assert "'p7'" in str(info.value)


def test_duplicate_ids_missing_file_and_empty_file(tmp_path):
    with pytest.raises(RecordError, match="duplicate paper id 'a'"):
        load_records(write_jsonl(tmp_path / "dup.jsonl", [paper("a"), paper("a")]))
    with pytest.raises(RecordError, match="file not found"):
        load_records(tmp_path / "absent.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(RecordError, match="no records"):
        load_records(tmp_path / "empty.jsonl")


def test_split_is_fixed_by_seed_and_independent_of_review_order():
    record = parse_record(paper("x", n_reviews=4), where="t")
    reordered = parse_record(
        {**paper("x", n_reviews=4), "reviews": paper("x", n_reviews=4)["reviews"][::-1]}, where="t"
    )
    first = split_reviews(record, references=2, seed=0)
    assert first == split_reviews(record, references=2, seed=0)
    assert first == split_reviews(reordered, references=2, seed=0)
    assert len(first.references) == 2
    assert first.held_out not in first.references
    held_out_ids = {split_reviews(record, references=2, seed=s).held_out.id for s in range(20)}
    assert len(held_out_ids) > 1  # the seed matters


def test_split_needs_two_reviews():
    with pytest.raises(RecordError, match="has 1 review"):
        split_reviews(parse_record(paper("x", n_reviews=1), where="t"), references=2, seed=0)


def test_record_must_be_an_object():
    with pytest.raises(RecordError, match="must be a JSON object"):
        parse_record(json.loads("[1, 2]"), where="f:1")
