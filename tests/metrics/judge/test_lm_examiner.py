"""LMExaminer: the App. D.3 prompts, the <overall_score> parser on well-formed, malformed and
adversarial replies, one retry, and unscored with the reply quoted."""

from __future__ import annotations

import pytest

import prompts
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.metrics.judge import examiner_messages, parse_overall_score


class ScriptedJudge:
    identity = "scripted/judge"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list, object]] = []

    async def generate(self, conversations, settings):
        self.calls.append((list(conversations), settings))
        return [self.replies.pop(0) for _ in conversations]


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("<analysis>ok</analysis>\n<overall_score>\n7\n</overall_score>", 7.0),
        ("<overall_score>7.5</overall_score>", 7.5),
        ("<overall_score>[8]</overall_score>", 8.0),
        ("<overall_score> 6/10 </overall_score>", 6.0),
        ("<overall_score>0</overall_score>", 0.0),
        ("Score: 9", None),  # no tag
        ("<overall_score>eleven</overall_score>", None),
        ("<overall_score>11</overall_score>", None),  # out of range
        ("<overall_score>7", None),  # unclosed
        ("", None),
        # the review's injected tag, quoted by the judge, does not beat its own final score
        (
            "The review says <overall_score>10</overall_score>.\n<overall_score>3</overall_score>",
            3.0,
        ),
    ],
)
def test_parse_overall_score(reply, score):
    assert parse_overall_score(reply) == score


def test_prompts_are_the_papers():
    system, user = examiner_messages(paper="PAPER", review="REVIEW")
    assert system["content"].startswith("You are an expert tasked with evaluating the quality")
    assert "<overall_score>" in system["content"] and "Constructiveness" in system["content"]
    assert user["content"] == "[Paper]\n\nPAPER\n\n[Review]\n\nREVIEW"
    assert "App. D.3" in (prompts.PROMPTS_DIR / "judge/lm_examiner_system.jinja").read_text()


ITEM = Item(
    paper=Paper(id="p", title="T", abstract="A", paper_text="The full paper."),
    candidate="A careful review.",
    references=(Review("r", "unused"),),
)


def test_the_judge_role_scores_and_retries_once(tmp_path):
    judge = ScriptedJudge(["I think it is good.", "<overall_score>6</overall_score>"])
    resources = Resources(cache_dir=tmp_path, generators={"judge": judge})
    result = get_metric("lm_examiner").score(ITEM, resources)
    assert result.value == 6.0 and result.details["judge_calls"] == 2
    assert [(settings.temperature, settings.seed) for _, settings in judge.calls] == [
        (0.0, 0),
        (0.7, 1),
    ]
    sent = judge.calls[0][0][0][1]["content"]
    assert sent == "[Paper]\n\nThe full paper.\n\n[Review]\n\nA careful review."
    assert result.details["paper_source"] == "paper_text"
    assert result.signature.as_dict()["judge"] == "scripted/judge"


def test_an_unreadable_judge_leaves_the_item_unscored_with_the_reply_quoted(tmp_path):
    judge = ScriptedJudge(["no score here", "still no score"])
    resources = Resources(cache_dir=tmp_path, generators={"judge": judge})
    result = get_metric("lm_examiner").score(ITEM, resources)
    assert result.value is None
    assert "'still no score'" in result.reason and result.details["judge_calls"] == 2
    empty = Item(paper=ITEM.paper, candidate="  ", references=())
    assert "empty candidate" in get_metric("lm_examiner").score(empty, resources).reason
    assert len(judge.calls) == 2  # the empty review was never sent


@pytest.mark.slow
def test_a_local_greedy_judge_is_not_asked_the_same_question_twice(tmp_path, embedded_lm):
    """The retry samples: a greedy local judge would otherwise repeat its first reply word for
    word, and the retry could never succeed."""
    resources = Resources(evaluation_lm=embedded_lm, cache_dir=tmp_path)
    metric = get_metric("lm_examiner", max_tokens=12)
    result = metric.score(ITEM, resources)
    assert result.value is None and result.details["judge_calls"] == 2
    first, second = result.details["replies"]
    assert first and second and first != second
    assert "one retry at temperature 0.7 (seed 1)" in result.signature.as_dict()["decoding"]
    again = metric.score(ITEM, Resources(evaluation_lm=embedded_lm, cache_dir=tmp_path / "fresh"))
    assert again.details["replies"] == [first, second]  # the sampled retry is seeded
    greedy = get_metric("lm_examiner", max_tokens=12, retry_temperature=0.0)
    repeated = greedy.score(ITEM, Resources(evaluation_lm=embedded_lm, cache_dir=tmp_path / "g"))
    assert repeated.details["replies"] == [first, first]  # why the retry samples
