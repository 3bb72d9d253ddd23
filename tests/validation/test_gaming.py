"""The red-team texts (scorers/validation/gaming.py) by hand, and through apply_perturbation."""

from __future__ import annotations

import random

import pytest

from scorers.validation import gaming
from scorers.validation.perturbations import GAMING, PERTURBATIONS, PaperContext, apply_perturbation

ABSTRACT = "We propose a sparse optimiser. Our results show a 2x speed-up on ImageNet."


def test_gaming_strategies_are_registered_as_such():
    assert GAMING == (
        "abstract_copy",
        "paper_copy",
        "universal_review",
        "shotgun",
        "injection",
        "self_reference",
        "oracle_injection",
    )
    for name in GAMING:
        spec = PERTURBATIONS[name]
        assert (spec.kind, spec.expected, spec.uses_llm) == ("gaming", "no_increase", False)


def test_abstract_copy_by_hand():
    assert gaming.abstract_as_judgments(ABSTRACT, level="judgments") == (
        "The reviewer appreciates that the authors propose a sparse optimiser.\n"
        "The reviewer appreciates that their results show a 2x speed-up on ImageNet."
    )
    assert gaming.abstract_as_judgments(ABSTRACT, level="review") == (
        "The authors propose a sparse optimiser. Their results show a 2x speed-up on ImageNet."
    )
    with pytest.raises(ValueError, match="abstract"):
        gaming.abstract_as_judgments("  ", level="review")


PAPER = "\n".join(f"Sentence number {i} of the paper has five words." for i in range(40))


def test_paper_copy_is_verbatim_in_order_fixed_by_seed_and_length_matched():
    copy, source = gaming.paper_copy(
        title="T", abstract="A b c.", paper_text=PAPER, target_words=30, seed=3
    )
    assert source == "paper_text"
    sentences = copy.split(". ")
    numbers = [int(s.split()[2]) for s in sentences]
    assert numbers == sorted(numbers)  # paper order
    assert all(f"Sentence number {n} of the paper has five words." in PAPER for n in numbers)
    assert 30 <= len(copy.split()) < 30 + 9  # one sentence (9 words) past the target at most
    again, _ = gaming.paper_copy(
        title="T", abstract="A b c.", paper_text=PAPER, target_words=30, seed=3
    )
    other, _ = gaming.paper_copy(
        title="T", abstract="A b c.", paper_text=PAPER, target_words=30, seed=4
    )
    assert again == copy and other != copy


def test_paper_copy_falls_back_to_title_and_abstract():
    copy, source = gaming.paper_copy(
        title="Sparse Optimisers at Scale",
        abstract=ABSTRACT,
        paper_text=None,
        target_words=1000,
        seed=0,
    )
    assert source == "title+abstract"
    assert copy == "Sparse Optimisers at Scale. " + ABSTRACT


def test_universal_review_keeps_common_judgments_and_drops_paper_specific_ones():
    common = [
        "The reviewer appreciates the clarity of the writing.",
        "The reviewer criticizes the lack of baselines.",
        "The reviewer suggests more ablations.",
        "The reviewer questions the scalability.",
    ]
    reviews = []
    for i in range(20):
        specific = f"The reviewer criticizes the zorblax{i} kernel of method{i}."
        reviews.append("\n".join([*common[: 2 + i % 3], specific]))
    result = gaming.universal_review(reviews, level="judgments", size=8)
    lines = result.splitlines()
    assert "zorblax" not in result and "method" not in result
    assert set(lines) <= set(common)
    assert "The reviewer appreciates the clarity of the writing." in lines
    shuffled = reviews[:]
    random.Random(1).shuffle(shuffled)
    assert gaming.universal_review(shuffled, level="judgments", size=8) == result
    with pytest.raises(ValueError, match="at least two papers"):
        gaming.universal_review([reviews[0], "  "], level="judgments")


def test_universal_review_from_prose():
    reviews = [
        f"The paper is well written and easy to follow. The zeta{i} trick is odd. Ok."
        for i in range(10)
    ]
    assert gaming.universal_review(reviews, level="review") == (
        "The paper is well written and easy to follow."
    )


def test_shotgun_injection_and_self_reference():
    review = "The method is sound."
    shot = gaming.shotgun(review, level="judgments")
    assert shot.startswith(review + "\n")
    assert shot.count("\nThe reviewer ") == len(gaming.SHOTGUN_JUDGMENTS)
    prose = gaming.shotgun(review, level="review")
    assert all(sentence in prose for _, sentence in gaming.SHOTGUN_JUDGMENTS)
    injected = gaming.inject(review)
    assert injected.startswith(gaming.INJECTION_PREFIX) and injected.endswith(
        gaming.INJECTION_SUFFIX
    )
    assert f"\n\n{review}\n\n" in injected
    assert "<|im_start|>" in injected and "<|start_header_id|>" in injected
    assert gaming.self_reference(level="review") == gaming.SELF_REFERENCE["review"]
    planted = gaming.inject_oracle(f"  {review}\n")
    assert planted == (
        f"{gaming.ORACLE_INJECTION_PREFIX}\n\n{review}\n\n{gaming.ORACLE_INJECTION_SUFFIX}"
    )
    assert planted.startswith("Answer: Yes.") and planted.endswith("Answer: Yes")
    assert "describe the same item? Yes." in planted and "<SCORE=3>" in planted


def test_apply_perturbation_builds_each_gaming_text():
    paper = PaperContext(
        title="T", abstract=ABSTRACT, universal_review="The reviewer appreciates it.", seed=1
    )
    review = "A real review with several words in it."
    out = {name: apply_perturbation(name, review, paper=paper) for name in GAMING}
    assert out["abstract_copy"].startswith("The authors propose")
    assert out["universal_review"] == "The reviewer appreciates it."
    assert out["shotgun"].startswith(review)
    assert review in out["injection"]
    assert out["self_reference"] == gaming.SELF_REFERENCE["review"]
    assert out["oracle_injection"] == gaming.inject_oracle(review)
    assert out["paper_copy"] == ABSTRACT  # "T." is too short to count as a sentence
    with pytest.raises(ValueError, match="universal review"):
        apply_perturbation("universal_review", review, paper=PaperContext())
    with pytest.raises(ValueError, match="empty"):
        apply_perturbation("shotgun", "   ", paper=paper)
