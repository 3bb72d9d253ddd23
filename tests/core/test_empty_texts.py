"""Empty texts are never sent to a model to be rewritten, summarised or perturbed: an empty
reference is left out with its reason by every metric, an empty candidate is flagged, an empty
held-out review makes its robustness pair unscored, and an empty paper text gets no ASSW."""

from __future__ import annotations

import math

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from conftest import write_jsonl
from gem_tasks.tasks.iclr import iclr
from gem_tasks.tasks.robustness import robustness
from scorers.data.records import RecordError, parse_record, split_reviews
from scorers.pmi import Reference, score_review
from scorers.text.judgments import EmptyTextError, assw_messages, preprocess_messages

JUDGMENTS = "The reviewer appreciates the method.\nThe reviewer criticizes the evaluation."
REAL = "The method is interesting. The evaluation on two datasets is too small to convince."


@pytest.mark.parametrize("text", ["", "   ", "\n\t "])
def test_prompt_builders_refuse_empty_texts(text):
    with pytest.raises(EmptyTextError, match="empty review"):
        preprocess_messages(text)
    with pytest.raises(EmptyTextError, match="empty paper text"):
        assw_messages(text)


@pytest.mark.slow
@pytest.mark.parametrize("preprocess", [True, False])
def test_an_empty_reference_is_left_out_without_a_rewrite(tiny_lm, preprocess):
    """No rewrite exists for an empty reference, and none is needed: every metric skips it."""
    from scorers.text.judgments import Preprocessed

    judged = Preprocessed(JUDGMENTS, 2, JUDGMENTS)
    refs = [Reference("empty", "  "), Reference("real", REAL, judged)]
    outcome = score_review(
        tiny_lm,
        candidate=REAL,
        references=refs,
        synopsis=None,
        preprocessed_candidate=judged,
        preprocess=preprocess,
    )
    assert outcome.skipped_references == {"empty": "empty reference text"}
    assert [t.reference_id for t in outcome.terms] == ["real"]


def paper_with_empty_reviews(seed: int = 0) -> dict:
    """A paper whose held-out review is empty and one of whose references is whitespace."""
    raw = {
        "id": "p-empty",
        "title": "A paper",
        "abstract": "We study a method.",
        "paper_text": "   ",
        "reviews": [{"id": f"r{i}", "text": REAL} for i in range(3)],
    }
    split = split_reviews(parse_record(raw, where="test"), references=2, seed=seed)
    texts = {split.held_out.id: "", split.references[0].id: "   "}
    for review in raw["reviews"]:
        review["text"] = texts.get(review["id"], REAL)
    return raw


def other_paper(index: int) -> dict:
    return {
        "id": f"p{index}",
        "title": f"Paper {index}",
        "abstract": f"We study method {index}.",
        "reviews": [{"id": f"p{index}-r{i}", "text": f"{REAL} Point {i}."} for i in range(3)],
    }


@pytest.mark.slow
def test_iclr_never_rewrites_empty_reviews(tmp_path):
    """candidate=human on a paper whose held-out review is empty and one reference is blank, no
    dataset summaries: a preprocessor that were asked to rewrite an empty text would raise
    (EmptyTextError); instead the blank reference is left out by GEM, GEM-S and GEM-raw alike,
    the empty candidate is flagged, and GEM-S (ASSW) has no paper text to summarise. (Another
    paper has a text: a dataset in which no paper has one is refused up front for GEM-S (ASSW),
    checked at the end.)"""
    with_text = {**other_paper(1), "paper_text": "1 Introduction\nWe study method 1."}
    data = write_jsonl(tmp_path / "d.jsonl", [paper_with_empty_reviews(), with_text])
    reply = ModelOutput.from_content("mockllm/model", JUDGMENTS)
    reply.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tiktoken
    preprocessor = get_model("mockllm/model", custom_outputs=[reply] * 10)
    [log] = inspect_eval(
        iclr(
            dataset=str(data),
            candidate="human",
            scorers="gem,gem_s,gem_raw,gem_s_assw",
            cache_dir=str(tmp_path / "cache"),
        ),
        model="mockllm/model",
        model_roles={"preprocessor": preprocessor},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    sample = next(s for s in log.samples if s.id == "p-empty")
    assert sample.error is None
    blank = next(r["id"] for r in sample.metadata["references"] if not r["text"].strip())
    for name in ("gem", "gem_s", "gem_raw"):
        score = sample.scores[name]
        assert score.metadata["skipped_references"] == {blank: "empty reference text"}, name
        assert score.metadata["flags"] == ["empty_candidate"], name
        assert score.value == 0.0, name  # an empty review reveals nothing
        assert blank not in score.metadata.get("reference_judgments", {}), name
    assw = sample.scores["gem_s_assw"]
    assert math.isnan(assw.value)
    assert assw.metadata["unscored_reason"] == "no ASSW and no paper text"
    only = write_jsonl(tmp_path / "only.jsonl", [paper_with_empty_reviews()])
    with pytest.raises(RecordError, match="gem_s_assw needs the papers' full text"):
        iclr(dataset=str(only), candidate="human", scorers="gem,gem_s_assw")


@pytest.mark.slow
def test_an_empty_held_out_review_is_never_perturbed(tmp_path):
    data = write_jsonl(
        tmp_path / "d.jsonl", [paper_with_empty_reviews(), other_paper(1), other_paper(2)]
    )
    [log] = inspect_eval(
        robustness(
            perturbation="shotgun",
            dataset=str(data),
            scorers="gem_raw",
            cache_dir=str(tmp_path / "cache"),
        ),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    by_id = {s.id: s for s in log.samples}
    empty = by_id["p-empty"].scores["gem_raw_paired"]
    assert math.isnan(empty.value)
    assert "held-out review is empty" in empty.metadata["unscored_reason"]
    assert "perturbed" not in by_id["p-empty"].metadata
    for other in ("p1", "p2"):
        value = by_id[other].scores["gem_raw_paired"].value
        assert set(value) == {"before", "after"}
    [score] = log.results.scores
    assert score.scored_samples == 2 and score.unscored_samples == 1
