"""GEM core: PMI arithmetic, edge cases, and the semantic invariant on the embedded model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorers.pmi import NOT_AVAILABLE, Reference, TooLongError, pmi_terms, score_review
from scorers.text.judgments import Preprocessed, count_judgment_lines

X = "The reviewer appreciates the clear writing.\nThe reviewer criticizes the missing baseline."
Y = "The reviewer criticizes the missing baseline.\nThe reviewer suggests more datasets."


def judged(text: str) -> Preprocessed:
    return Preprocessed(text, count_judgment_lines(text), text)


@pytest.mark.slow
def test_pmi_is_conditional_minus_marginal(tiny_lm):
    [term] = pmi_terms(tiny_lm, candidate=X, references=[("r", Y)], synopsis="")
    assert term.pmi == pytest.approx(term.conditional - term.marginal, abs=1e-9)
    assert term.target_tokens > 0 and term.conditional_tokens > term.marginal_tokens
    assert math.isfinite(term.conditional) and term.conditional < 0


@pytest.mark.slow
def test_absent_candidate_is_exactly_zero_pmi(tiny_lm):
    [term] = pmi_terms(tiny_lm, candidate="  ", references=[("r", Y)], synopsis="")
    assert term.pmi == 0.0
    [explicit] = pmi_terms(tiny_lm, candidate=NOT_AVAILABLE, references=[("r", Y)], synopsis="")
    assert explicit.conditional == pytest.approx(term.conditional, abs=1e-9)


@pytest.mark.slow
def test_synopsis_changes_both_terms(tiny_lm):
    [plain] = pmi_terms(tiny_lm, candidate=X, references=[("r", Y)], synopsis="")
    [with_s] = pmi_terms(tiny_lm, candidate=X, references=[("r", Y)], synopsis="An abstract.")
    assert with_s.marginal != pytest.approx(plain.marginal, abs=1e-6)


@pytest.mark.slow
def test_score_review_means_over_references(tiny_lm):
    refs = [Reference("a", "raw a", judged(Y)), Reference("b", "raw b", judged(X))]
    outcome = score_review(
        tiny_lm, candidate="raw", references=refs, synopsis=None, preprocessed_candidate=judged(X)
    )
    assert outcome.value == pytest.approx(np.mean([t.pmi for t in outcome.terms]))
    assert [t.reference_id for t in outcome.terms] == ["a", "b"]
    assert "mean PMI over 2 reference(s)" in outcome.explanation


@pytest.mark.slow
def test_empty_candidate_is_scored_zero_and_explained(tiny_lm):
    refs = [Reference("a", "raw a", judged(Y))]
    outcome = score_review(tiny_lm, candidate="", references=refs, synopsis=None)
    assert outcome.value == 0.0
    assert outcome.flags == ["empty_candidate"]
    assert "empty" in outcome.explanation


@pytest.mark.slow
def test_candidate_without_judgment_lines_is_flagged(tiny_lm):
    refs = [Reference("a", "raw a", judged(Y))]
    outcome = score_review(
        tiny_lm,
        candidate="a review",
        references=refs,
        synopsis=None,
        preprocessed_candidate=judged("This is a nice summary."),
    )
    assert outcome.value == 0.0
    assert outcome.flags == ["no_judgment_lines"]


@pytest.mark.slow
def test_unusable_references_are_named_and_all_unusable_is_unscored(tiny_lm):
    refs = [Reference("a", "raw", judged("no judgments here")), Reference("b", "   ", judged(""))]
    outcome = score_review(
        tiny_lm, candidate="c", references=refs, synopsis=None, preprocessed_candidate=judged(X)
    )
    assert outcome.value is None
    assert set(outcome.skipped_references) == {"a", "b"}
    assert outcome.metadata()["unscored_reason"].startswith("no usable reference")
    raw = score_review(tiny_lm, candidate="c", references=refs[1:], synopsis=None, preprocess=False)
    assert raw.value is None and raw.skipped_references == {"b": "empty reference text"}


class ShortContext:
    """Delegates to a backend but claims a small context window."""

    def __init__(self, backend, limit: int) -> None:
        self.backend, self.max_length = backend, limit
        self.identity, self.tokenizer = backend.identity, backend.tokenizer

    def target_logprobs(self, requests):
        return self.backend.target_logprobs(requests)


@pytest.mark.slow
def test_over_long_reference_is_left_out_never_truncated(tiny_lm):
    short = ShortContext(tiny_lm, limit=190)
    long_y = "\n".join([Y] * 20)
    with pytest.raises(TooLongError, match="reference 'long'"):
        pmi_terms(short, candidate=X, references=[("long", long_y)], synopsis="")
    outcome = score_review(
        short,
        candidate="c",
        synopsis=None,
        preprocessed_candidate=judged(X),
        references=[Reference("long", "r", judged(long_y)), Reference("ok", "r", judged(Y))],
    )
    assert [t.reference_id for t in outcome.terms] == ["ok"]
    assert "exceed" in outcome.skipped_references["long"]


@pytest.mark.slow
def test_same_paper_reviews_share_more_information_than_other_papers(embedded_lm, demo_records):
    """GEM (dataset judgment summaries as the preprocessing) with the embedded SmolLM2."""
    same, other, itself = [], [], []
    n = len(demo_records)
    for i, paper in enumerate(demo_records):
        x = paper.reviews[0].summary
        y_same = paper.reviews[1].summary
        y_other = demo_records[(i + 1) % n].reviews[1].summary
        terms = pmi_terms(
            embedded_lm,
            candidate=x,
            synopsis="",
            references=[("same", y_same), ("other", y_other), ("self", x)],
        )
        same.append(terms[0].pmi)
        other.append(terms[1].pmi)
        itself.append(terms[2].pmi)
    assert np.mean(same) > np.mean(other)
    assert np.mean(itself) > np.mean(same)
