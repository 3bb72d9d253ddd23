"""Domains: the words and prompts of summaries and answers beside peer review, without moving a
peer-review number."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import prompts
from scorers.data.records import RecordError, load_records
from scorers.data.sources.summaries import summary_records
from scorers.domains import DOMAINS, DomainError, domain, template
from scorers.errors import MetricError
from scorers.pmi import prediction_messages
from scorers.registry import list_metrics, refuse_out_of_domain
from scorers.text.judgments import (
    count_judgment_lines,
    judgment_statements,
    preprocess_messages,
    rewrite_settings,
)
from scorers.types import Item, Paper


def test_peer_review_keeps_the_papers_verbatim_prompts():
    assert template(None, "gem/predict_system") == "gem/predict_system"
    assert template("peer_review", "gem/preprocess_user") == "gem/preprocess_user"
    default = prediction_messages(synopsis="S", judgments="J")
    assert default == prediction_messages(synopsis="S", judgments="J", domain="peer_review")
    assert default[0]["content"] == prompts.render("gem/predict_system")
    assert rewrite_settings("a review").prefill == "The reviewer"


@pytest.mark.parametrize("name", sorted(set(DOMAINS) - {"peer_review"}))
def test_every_other_domain_has_its_own_wording_for_every_shared_prompt(name):
    words = domain(name)
    for base in (
        "gem/predict_system",
        "gem/predict_user",
        "gem/preprocess_system",
        "gem/preprocess_user",
        "fmi/same_item_system",
        "fmi/same_item_user",
        "fmi/support_system",
        "fmi/support_user",
        "review/system",
        "review/user",
    ):
        resolved = template(name, base)
        assert resolved == f"domains/{name}/{base}"
        source = (prompts.PROMPTS_DIR / f"{resolved}.jinja").read_text()
        assert "Written for this project" in source or "NOT VERBATIM" in source, resolved
    system = prediction_messages(synopsis="S", judgments="J", domain=name)[0]["content"]
    assert "reviewer" not in system and "paper" not in system
    assert words.statement_prefix in system
    assert rewrite_settings("a summary", domain=name).prefill == words.statement_prefix
    # a text to rewrite is a variable, never template source
    rendered = preprocess_messages("{{ evil }} text", domain=name)[1]["content"]
    assert "{{ evil }}" in rendered


def test_a_prompt_a_domain_lacks_is_refused_never_borrowed():
    with pytest.raises(DomainError, match="has no prompt 'gem/assw_system'"):
        template("summarization", "gem/assw_system")
    with pytest.raises(DomainError, match="unknown domain"):
        domain("poetry")
    with pytest.raises(DomainError, match="unknown domain"):
        Item(paper=Paper(id="p"), candidate="x", references=(), domain="poetry")


def test_statement_lines_follow_the_domain_prefix():
    text = "The summary states that A.\n- The summary states that B.\nThe reviewer likes C."
    assert count_judgment_lines(text, domain="summarization") == 2
    assert count_judgment_lines(text) == 1
    assert judgment_statements(text, domain="summarization") == [
        "The summary states that A.",
        "The summary states that B.",
    ]


def test_metrics_declare_their_domains_and_tasks_refuse_the_others():
    by_name = {spec.name: spec for spec in list_metrics()}
    for general in ("gem", "gem_raw", "bleu", "rouge_l", "bertscore", "bartscore_f1"):
        assert by_name[general].domains == frozenset(DOMAINS), general
    assert by_name["gem_s"].domains == frozenset({"peer_review", "summarization", "qa"})
    for review_only in ("gem_s_assw", "lm_examiner", "br_summary_coverage", "autopre_panel"):
        assert by_name[review_only].domains == frozenset({"peer_review"}), review_only
    refuse_out_of_domain(["gem", "bleu"], "opinion_summarization", where="x")
    with pytest.raises(MetricError, match="gem_s applies to peer_review, qa, summarization"):
        refuse_out_of_domain(["gem", "gem_s"], "opinion_summarization", where="x")


# -- data ---------------------------------------------------------------------------------------


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def summeval_shared_row(doc: str) -> dict:
    return {
        "doc_id": doc,
        "source": f"Article {doc} text .",
        "references": [f"{doc} ref {k}" for k in range(3)],
        "systems": {
            "M1": {"summary": "s1", "expert_avg": {"coherence": 4.0, "relevance": 2.0}},
            "M0": {"summary": "s0", "expert_avg": {"coherence": 1.0, "relevance": 3.0}},
        },
    }


def test_summeval_shared_and_original_release_give_the_same_records(tmp_path: Path):
    shared = summary_records(write_jsonl(tmp_path / "shared.jsonl", [summeval_shared_row("d1")]))
    release_rows = [
        {
            "id": "d1",
            "model_id": system,
            "decoded": f"s{system[-1]}",
            "references": ["d1 ref 0", "d1 ref 1", "d1 ref 2"],
            "text": "Article d1 text .",
            "expert_annotations": [
                {"coherence": c, "consistency": 5, "fluency": 5, "relevance": r}
                for c, r in annotations
            ],
        }
        for system, annotations in (
            ("M0", [(1, 3), (1, 2), (1, 4)]),
            ("M1", [(4, 2), (5, 2), (3, 2)]),
        )
    ]
    release = summary_records(write_jsonl(tmp_path / "release.jsonl", release_rows))
    for records in (shared, release):
        (record,) = records
        assert record.domain == "summarization" and record.group == "summeval"
        assert record.abstract == record.paper_text == "Article d1 text ."
        assert [r.text for r in record.reviews] == ["d1 ref 0", "d1 ref 1", "d1 ref 2"]
        assert [c.id for c in record.candidates] == ["M0", "M1"]
        assert record.candidates[0].ratings["coherence"] == 1.0
        assert record.candidates[1].ratings["relevance"] == 2.0
    # the release averages its three experts per dimension
    assert release[0].candidates[1].ratings["coherence"] == pytest.approx(4.0)
    assert release[0].candidates[0].ratings["relevance"] == pytest.approx(3.0)


def test_space_is_one_record_per_hotel_and_aspect_with_no_synopsis(tmp_path: Path):
    path = write_jsonl(
        tmp_path / "space.jsonl",
        [
            {
                "entity_id": "h1",
                "split": "dev",
                "summaries": {"rooms": ["a", "b", "c"], "food": ["d", "e", "f"]},
            }
        ],
    )
    records = summary_records(path)
    assert [r.id for r in records] == ["h1-food", "h1-rooms"]
    assert all(r.domain == "opinion_summarization" and r.abstract == "" for r in records)
    assert [r.text for r in records[1].reviews] == ["a", "b", "c"]
    assert {r.entity for r in records} == {"h1"}  # both aspects are about one hotel


def test_space_negatives_and_replacements_come_from_other_hotels(tmp_path: Path):
    """A (hotel, aspect) item's negatives and its random replacement are summaries of other
    hotels, never the same hotel's other aspects (the critic asks "same hotel?")."""
    from gem_tasks.tasks.robustness import robustness
    from scorers.data.negatives import draw_negatives

    aspects = ("rooms", "food", "service", "location", "cleanliness", "building")
    hotels = [
        {
            "entity_id": f"h{h}",
            "summaries": {a: [f"{a} {h}.{k}" for k in range(3)] for a in aspects},
        }
        for h in range(3)
    ]
    path = write_jsonl(tmp_path / "space.jsonl", hotels)
    records = summary_records(path)
    for record in records:
        for seed in range(5):
            drawn = draw_negatives(record, records, k=4, seed=seed)
            assert all(not n.paper_id.startswith(f"{record.entity}-") for n in drawn), record.id
    # a hotel with 6 aspects and two other hotels: 12 items of other entities to draw from, so
    # asking for 13 is refused, never filled with the same hotel's aspects
    with pytest.raises(RecordError, match="of another entity"):
        draw_negatives(records[0], records, k=13)
    task = robustness(dataset=str(path), perturbation="random_replacement", scorers="rouge_l")
    for sample in task.dataset:
        other = sample.metadata["other_paper_id"]
        assert other.split("-")[0] != sample.id.split("-")[0], (sample.id, other)


def test_lfqa_e_pairs_become_rated_candidates(tmp_path: Path):
    path = tmp_path / "lfqa.json"
    path.write_text(
        json.dumps(
            [
                {
                    "id": 7,
                    "question": "Why?",
                    "Concise_Reference": "Because.",
                    "model_answer_a": "A",
                    "student_answer_b": "B",
                    "student_answer_b_vs_model_answer_a": "model_answer_a",
                }
            ]
        )
    )
    (record,) = summary_records(path)
    assert record.domain == "qa" and record.abstract == "Why?"
    assert {c.id: c.ratings["preferred"] for c in record.candidates} == {
        "student_answer_b": 0.0,
        "model_answer_a": 1.0,
    }
    # one record per question and pair (a question is compared in several), the question its
    # entity; the concise reference is ground truth
    assert record.id == "7:student_answer_b_vs_model_answer_a" and record.entity == "7"
    assert record.ground_truth and record.group == "lfqa_e"
    path.write_text(json.dumps([{"id": 1, "question": "q", "Concise_Reference": "r"}]))
    with pytest.raises(RecordError, match="one '<a>_vs_<b>' preference"):
        summary_records(path)


def test_generic_judgment_items_load_as_records(tmp_path: Path):
    path = write_jsonl(
        tmp_path / "items.jsonl",
        [
            {
                "id": "q1",
                "domain": "qa",
                "group": "physics",
                "input": {"synopsis": "Why is the sky blue?"},
                "references": [
                    {"id": "r1", "text": "Rayleigh scattering."},
                    {"text": "Scattering."},
                ],
                "candidates": [{"id": "c", "text": "Because.", "ratings": {"overall": 2}}],
            }
        ],
    )
    (record,) = load_records(path)
    assert (record.domain, record.group, record.abstract) == (
        "qa",
        "physics",
        "Why is the sky blue?",
    )
    assert record.candidates[0].ratings == {"overall": 2.0}
    bad = write_jsonl(
        tmp_path / "bad.jsonl", [{"id": "x", "domain": "poetry", "references": [{"text": "t"}]}]
    )
    with pytest.raises(RecordError, match="unknown domain 'poetry'"):
        load_records(bad)
    bad = write_jsonl(
        tmp_path / "bad2.jsonl",
        [
            {
                "id": "x",
                "references": [{"text": "t"}],
                "candidates": [{"text": "c", "ratings": {"a": "high"}}],
            }
        ],
    )
    with pytest.raises(RecordError, match="ratings.a"):
        load_records(bad)


def test_the_bundled_summeval_and_space_files_are_read_as_they_are():
    from gem_tasks.tasks.samples import SPACE_DEMO, SUMMEVAL_DEMO

    summeval = summary_records(SUMMEVAL_DEMO)
    assert len(summeval) == 3 and all(
        len(r.candidates) == 16 and len(r.reviews) == 11 for r in summeval
    )
    assert all(math.isfinite(c.ratings["coherence"]) for r in summeval for c in r.candidates)
    assert len(summary_records(SPACE_DEMO)) == 14  # 2 hotels x 7 aspects


def test_ground_truth_references_need_no_held_out_one(tmp_path: Path):
    """Gold references (LFQA-E's one reference answer) score existing candidates with none held
    out; the human baseline holds one out only where two or more exist, and is refused with why
    otherwise. Peer reports keep their held-out split."""
    from gem_tasks.tasks.judgments import judgments
    from scorers.data.records import parse_record, split_reviews

    gold = parse_record(
        {"id": "q", "title": "", "abstract": "Why?", "domain": "qa", "ground_truth": True,
         "reviews": [{"id": "ref", "text": "Because."}]},
        where="x",
    )  # fmt: skip
    split = split_reviews(gold, references=1, seed=0, hold_out=False)
    assert split.held_out is None and [r.id for r in split.references] == ["ref"]
    with pytest.raises(RecordError, match="1 ground-truth reference.*held-out one .* need two"):
        split_reviews(gold, references=1, seed=0)
    with pytest.raises(RecordError, match="'ground_truth' must be true or false"):
        parse_record({"id": "q", "title": "", "abstract": "", "ground_truth": "yes",
                      "reviews": [{"text": "r"}]}, where="x")  # fmt: skip
    path = tmp_path / "lfqa.json"
    path.write_text(
        json.dumps(
            [
                {"id": i, "question": f"Why {i}?", "Concise_Reference": f"Because {i}.",
                 "student_answer_a": f"A{i}", "student_answer_b": f"B{i}",
                 "student_answer_a_vs_student_answer_b": "student_answer_a"}
                for i in range(3)
            ]
        )
    )  # fmt: skip
    task = judgments(dataset=str(path), candidate="candidates", scorers="rouge_l")
    assert len(task.dataset) == 6
    for sample in task.dataset:
        assert sample.metadata["held_out"] is None and sample.target == ""
        assert [r["text"] for r in sample.metadata["references"]] == [
            f"Because {sample.metadata['entity']}."
        ]
    with pytest.raises(RecordError, match="1 ground-truth reference"):
        judgments(dataset=str(path), candidate="human", scorers="rouge_l")
