"""BLEU and ROUGE-L (the GEM paper's overlap baselines) by hand and against the libraries."""

from __future__ import annotations

import pytest

from scorers import Item, Paper, Review, get_metric
from scorers.metrics.overlap import rouge_l, sentence_bleu, words

REFERENCE = "the cat sat on the mat"
CANDIDATE = "the cat sat on a mat"


def test_bleu_by_hand():
    # p1 = 5/6, p2 = 3/5, p3 = 2/4, p4 = 1/3, equal lengths (BP = 1): (1/12) ** (1/4)
    assert sentence_bleu(CANDIDATE, REFERENCE) == pytest.approx((1 / 12) ** 0.25, abs=1e-12)
    assert sentence_bleu(REFERENCE, REFERENCE) == pytest.approx(1.0)
    assert sentence_bleu("dogs bark loudly", REFERENCE) == 0.0  # no smoothing: a zero order is 0
    assert sentence_bleu("   ", REFERENCE) == 0.0


def test_bleu_equals_nltk_with_the_same_tokens():
    from nltk.translate.bleu_score import sentence_bleu as nltk_bleu

    candidate = "The method is novel. However, the experiments (Sec. 4) are weak, e.g. one seed."
    reference = "The method is new. The experiments are weak: only one seed is used."
    assert words(candidate)[:6] == ["The", "method", "is", "novel", ".", "However"]
    assert sentence_bleu(candidate, reference) == nltk_bleu([words(reference)], words(candidate))


def test_rouge_l_by_hand_and_against_rouge_score():
    from rouge_score import rouge_scorer

    assert rouge_l(CANDIDATE, REFERENCE) == pytest.approx(5 / 6)  # LCS 5 of 6 both ways
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    a, b = "Experiments were running slowly.", "The experiment runs slow."
    assert rouge_l(a, b) == scorer.score(b, a)["rougeL"].fmeasure
    assert rouge_l(a, b) == rouge_l(b, a)  # the F-measure is symmetric
    assert rouge_l(a, b) > 0  # stemming matches experiments/experiment and running/runs


def test_metrics_average_over_references_and_skip_empty_ones():
    item = Item(
        paper=Paper(id="p"),
        candidate=CANDIDATE,
        references=(Review("a", REFERENCE), Review("b", "   "), Review("c", CANDIDATE)),
    )
    bleu = get_metric("bleu").score(item, None)
    assert bleu.value == pytest.approx(((1 / 12) ** 0.25 + 1.0) / 2)
    assert bleu.details["skipped_references"] == {"b": "empty reference text"}
    assert [t["reference_id"] for t in bleu.terms] == ["a", "c"]
    rouge = get_metric("rouge_l").score(item, None)
    assert rouge.value == pytest.approx((5 / 6 + 1.0) / 2)
    assert rouge.signature.as_dict()["settings"].startswith("rouge_score RougeScorer")
    assert "NLTKWordTokenizer" in bleu.signature.as_dict()["tokenizer"]
    none_left = Item(paper=Paper(id="p"), candidate="x", references=(Review("b", ""),))
    result = get_metric("bleu").score(none_left, None)
    assert result.value is None and "no usable reference" in result.reason
    empty = Item(paper=Paper(id="p"), candidate=" ", references=(Review("a", REFERENCE),))
    assert get_metric("rouge_l").score(empty, None).details["flags"] == ["empty_candidate"]
