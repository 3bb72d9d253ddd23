"""The one yes/no reader (``scorers.lm.answers.parse_yes_no``) on a table of replies seen from
real models: what it reads, and what it refuses (a reply it cannot read raises ReplyError with
the reply quoted; it is never guessed)."""

from __future__ import annotations

import pytest

from scorers.lm.answers import YES_NO_SETTINGS, parse_yes_no
from scorers.lm.asking import ReplyError


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Yes", True),
        ("yes.", True),
        ("YES – because it agrees", True),
        ("  \n Yes", True),  # leading whitespace
        ('"Yes"', True),
        ("**Yes**", True),
        ("**No**", False),
        ("No, it does not.", False),
        ("No, they differ.", False),
        ("Answer: No", False),
        ("Answer: yes", True),
        ("**Answer:** Yes", True),
        ("Final answer: no", False),
        ("Verdict = YES", True),
        ("- Yes", True),
        ("> No.", False),
        ('{"match": true}', True),
        ('{"answer": "no"}', False),
        ('```json\n{"match": false}\n```', False),
        ('```\n{"supported": true, "reason": "it does"}\n```', True),
    ],
)
def test_yes_no_replies_that_are_read(reply, verdict):
    assert parse_yes_no(reply) is verdict


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "Maybe",
        "Not sure",
        "Nope",
        "None of them",
        "Yesterday it was fine",
        "The answer is yes",  # the answer must come first
        "The points agree.",
        "I cannot answer that question.",  # a refusal
        "As an AI language model, I can't judge this.",
        '{"a": 1}',
        '{"match": true, "other": false}',  # two booleans: which one?
    ],
)
def test_yes_no_replies_that_are_refused_with_the_reply_quoted(reply):
    with pytest.raises(ReplyError) as error:
        parse_yes_no(reply)
    assert error.value.reply == reply.strip() and "not Yes or No" in str(error.value)


def test_one_setting_for_every_yes_no_question():
    assert YES_NO_SETTINGS.temperature == 0.0 and YES_NO_SETTINGS.max_new_tokens == 16
