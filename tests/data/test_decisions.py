"""Accept/reject decisions in the data: labels normalised, acceptance read from the label, a
decisions file read and joined by id (with every official reviewer's rating where it lists
them), the records' ``decision`` field, and the data card's counts, on files the tests write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gem_tasks.cli import main as cli_main
from scorers.data.decisions import (
    Decision,
    DecisionError,
    accepts,
    decision_counts,
    decision_from,
    join_decisions,
    official_ratings,
    read_decisions,
)
from scorers.data.records import RecordError, load_records, parse_record


def test_acceptance_follows_the_label():
    assert [accepts(x) for x in ("Accept (poster)", "Accept", "Reject", "Desk reject")] == [
        True,
        True,
        False,
        False,
    ]
    assert accepts("Withdrawn") is None and accepts("Workshop") is None
    assert decision_from("ACCEPT (Spotlight)") == Decision("Accept (spotlight)", True)
    assert decision_from({"label": "Reject", "accept": False}) == Decision("Reject", False)
    assert decision_from(None) is None
    assert official_ratings([3, 5]) == (3.0, 5.0) and official_ratings("3; 5") == (3.0, 5.0)
    assert official_ratings([]) is None and official_ratings(None) is None  # none listed
    with pytest.raises(DecisionError, match="must be finite"):
        official_ratings(["nan"])
    with pytest.raises(DecisionError, match="a list or"):
        official_ratings(5)
    with pytest.raises(DecisionError, match="must be a number"):
        official_ratings([True])
    with pytest.raises(DecisionError, match="contradicts itself"):
        decision_from({"label": "Reject", "accept": True})
    with pytest.raises(DecisionError, match="states no decision"):
        decision_from("Submitted to ICLR 2025")
    with pytest.raises(DecisionError, match="label string"):
        decision_from(1)


def _csv(tmp_path: Path, rows: str) -> Path:
    path = tmp_path / "decisions.csv"
    path.write_text("id,decision,accept,ratings\n" + rows)
    return path


def test_a_decisions_file_is_read_and_checked(tmp_path):
    path = _csv(tmp_path, "a,Reject,0,3;3\nb,Accept (Poster),1,6;8\nc,Accept (Talk),1,8;8\n")
    found = read_decisions(path)
    assert found == {
        "a": Decision("Reject", False, (3.0, 3.0)),
        "b": Decision("Accept (poster)", True, (6.0, 8.0)),
        "c": Decision("Accept", True, (8.0, 8.0)),
    }
    with pytest.raises(DecisionError, match=r"decisions.csv:2: a rating must be a number"):
        read_decisions(_csv(tmp_path, "a,Reject,0,3;three\n"))
    with pytest.raises(DecisionError, match=r"decisions.csv:3: decision 'Accept \(poster\)'"):
        read_decisions(_csv(tmp_path, "a,Reject,0,\nb,Accept (Poster),0,\n"))
    with pytest.raises(DecisionError, match="second decision"):
        read_decisions(_csv(tmp_path, "a,Reject,0,\na,Reject,0,\n"))
    bad = tmp_path / "bad.csv"
    bad.write_text("id,label\na,Reject\n")
    with pytest.raises(DecisionError, match=r"missing column\(s\) \['decision'\]"):
        read_decisions(bad)
    jsonl = tmp_path / "decisions.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "decision": "Reject", "accept": 0}) + "\n")
    assert read_decisions(jsonl) == {"a": Decision("Reject", False)}


def test_join_counts_and_refuses_a_disagreement():
    rows = [{"id": "a"}, {"id": "b", "decision": "Accept (poster)"}, {"id": "z"}]
    decisions = {
        "a": Decision("Reject", False),
        "b": Decision("Accept (poster)", True),
        "q": Decision("Reject", False),
    }
    assert join_decisions(rows, decisions) == {
        "joined": 2,
        "records_without_decision": 1,
        "decisions_unused": 1,
    }
    assert [r.get("decision") for r in rows] == ["Reject", "Accept (poster)", None]
    rated = [{"id": "a"}]
    join_decisions(rated, {"a": Decision("Reject", False, (3.0, 5.0))})
    assert rated[0] == {"id": "a", "decision": "Reject", "official_ratings": [3.0, 5.0]}
    with pytest.raises(DecisionError, match="official ratings"):
        join_decisions(
            [{"id": "a", "official_ratings": [3, 6]}], {"a": Decision("Reject", False, (3.0, 5.0))}
        )
    with pytest.raises(DecisionError, match="the record says 'Reject'"):
        join_decisions([{"id": "a", "decision": "Reject"}], {"a": Decision("Accept", True)})
    counts = decision_counts([decision_from(r.get("decision")) for r in rows])
    assert counts == {
        "labels": {"Accept (poster)": 1, "Reject": 1},
        "accept": 1,
        "reject": 1,
        "no_outcome": 0,
        "unknown": 1,
    }


def test_records_carry_their_decision():
    base = {"id": "p", "title": "T", "abstract": "A", "reviews": [{"text": "r"}]}
    record = parse_record({**base, "decision": "Accept (Oral)"}, where="x")
    assert record.decision == Decision("Accept (oral)", True)
    assert parse_record(base, where="x").decision is None
    with pytest.raises(RecordError, match="paper id 'p'.*decision.*states no decision"):
        parse_record({**base, "decision": "pending"}, where="x")


def test_convert_joins_decisions_into_canonical_records(tmp_path, capsys):
    records = tmp_path / "papers.jsonl"
    records.write_text(
        "".join(
            json.dumps(
                {
                    "id": pid,
                    "title": f"Paper {pid}",
                    "abstract": "An abstract.",
                    "reviews": [
                        {"id": f"{pid}r{k}", "text": "A review.", "rating": 6} for k in range(3)
                    ],
                }
            )
            + "\n"
            for pid in ("a", "b", "c")
        )
    )
    decisions = _csv(tmp_path, "a,Reject,0,3;5\nb,Accept (Poster),1,\nx,Reject,0,\n")
    out = tmp_path / "out"
    status = cli_main(
        ["data", "convert", "--from", "records", str(records), "--decisions", str(decisions),
         "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert status == 0, capsys.readouterr().err
    card = json.loads((out / "data_card.json").read_text())
    assert card["decisions"]["labels"] == {"Accept (poster)": 1, "Reject": 1}
    assert card["decisions"]["unknown"] == 1 and card["decisions"]["decisions_unused"] == 1
    loaded = {r.id: r.decision for r in load_records(out / "records.jsonl")}
    assert loaded == {
        "a": Decision("Reject", False),
        "b": Decision("Accept (poster)", True),
        "c": None,
    }
    # the decisions file's paper-level ratings travel with the records (JSONL and parquet)
    ratings = {r.id: r.official_ratings for r in load_records(out / "records.jsonl")}
    assert ratings == {"a": (3.0, 5.0), "b": None, "c": None}
    import pyarrow.parquet as pq

    rows = {
        r["id"]: r["official_ratings"] for r in pq.read_table(out / "records.parquet").to_pylist()
    }
    assert rows == {"a": [3.0, 5.0], "b": None, "c": None}
    contradicting = _csv(tmp_path, "a,Reject,1,\n")
    status = cli_main(
        ["data", "convert", "--from", "records", str(records), "--decisions", str(contradicting),
         "--out", str(tmp_path / "out2"), "--quiet"]
    )  # fmt: skip
    assert status == 2 and "contradicts itself" in capsys.readouterr().err
