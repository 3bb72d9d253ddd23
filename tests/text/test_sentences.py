"""The one sentence splitter (scorers.text.sentences): initials, abbreviations, decimals and list
markers end no sentence; what the sentence-based strategies cut with it."""

from __future__ import annotations

import pytest

from scorers.text.sentences import sentences, split_sentences
from scorers.validation.perturbations import PERTURBATIONS
from scorers.validation.perturbations.segmentation import every_other_sentence

CASES = [
    # SummEval's news text: initials and honorifics inside a sentence
    (
        "Donald T. Sterling's girlfriend V. Stiviano spoke to Mr. Smith. He left.",
        ["Donald T. Sterling's girlfriend V. Stiviano spoke to Mr. Smith.", "He left."],
    ),
    (
        "The U.S. team won 3.5 points. Then it rained!",
        ["The U.S. team won 3.5 points.", "Then it rained!"],
    ),  # fmt: skip
    (
        "See Fig. 2 and Smith et al. for details. Done?",
        ["See Fig. 2 and Smith et al. for details.", "Done?"],
    ),  # fmt: skip
    (
        "1. The method is new. It works in 2015. Then?",
        ["1. The method is new.", "It works in 2015.", "Then?"],
    ),  # fmt: skip
    ('He said "stop." Then he went...', ['He said "stop."', "Then he went..."]),
    (
        "J. R. R. Tolkien wrote it in Jan. 1937. It sold.",
        ["J. R. R. Tolkien wrote it in Jan. 1937.", "It sold."],
    ),  # fmt: skip
    ("No end here", ["No end here"]),
]


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_sentences_keep_initials_abbreviations_and_decimals_together(line, expected):
    assert sentences(line) == expected


def test_a_line_break_ends_a_sentence_and_blank_lines_give_none():
    assert split_sentences("First line\n\nSecond. Third.\r\n") == [
        "First line",
        "Second.",
        "Third.",
    ]


def test_sentence_deletion_keeps_whole_sentences_of_news_text():
    text = "Officials said V. Stiviano left. The team met Mr. Sterling. Fans cheered. It ended."
    assert every_other_sentence(text, None) == "Officials said V. Stiviano left. Fans cheered."


def test_the_sentence_based_strategies_carry_a_new_comparability_version():
    bumped = {name for name, p in PERTURBATIONS.items() if p.version == 2}
    assert {"sentence_deletion", "deletion_completion", "abstract_copy"} <= bumped
    assert PERTURBATIONS["judgment_deletion"].version == 1  # cuts lines, no sentence split
