"""Auto-PRE: parsers, exams, thresholds, selection, weights, the weighted vote, scripted judges,
the panel metrics and the ``autopre_exam`` task; the
``autopre_panel`` scorer fed the exam task's own result."""

from __future__ import annotations

import asyncio
import math

import pytest

from conftest import scripted_model
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.data.records import PaperRecord, ReviewRecord
from scorers.metrics.autopre import parse_judges
from scorers.metrics.autopre.core import (
    ExamScore,
    Vote,
    consistency_exam,
    mean_threshold,
    panel_weight,
    parse_confidence_reply,
    parse_preference,
    parse_score,
    pertinence_exam,
    prefers_a,
    qualify,
    self_confidence_exam,
    weighted_vote,
)
from scorers.metrics.autopre.exams import (
    build_exam_items,
    embedding_similarity,
    qualification_from_rows,
    run_exams,
)
from scorers.metrics.autopre.judging import Judge, Pair, ask_confidence, ask_pairs

# -- parsers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "label"),
    [
        ("one", -1),
        ("Two", 1),
        ("'one'", -1),
        ("**two**", 1),
        ("Review one", -1),
        ("Output: two", 1),
        ("Answer: 1", -1),
        ("2.", 1),
        ("tie", 0),
        ("Two. One could argue otherwise.", 1),
        ("The better review is one", -1),
        ("none of them", None),
        ("someone wrote review two", None),
        ("done", None),
        ("None", None),
        ("oneself", None),
        ("twofold", None),
        ("", None),
        ("I think the first", None),
    ],
)
def test_parse_preference_matches_whole_answers_only(reply, label):
    assert parse_preference(reply) == label


@pytest.mark.parametrize(
    ("reply", "low", "high", "score"),
    [
        ("4", 1, 5, 4.0),
        ("Score: 5", 1, 5, 5.0),
        ("4/5", 1, 5, 4.0),
        ("4 out of 5", 1, 5, 4.0),
        ("8/10", 1, 5, None),
        ("7", 1, 5, None),  # outside the prompt's scale
        ("87", 0, 100, 87.0),
        ("0", 0, 100, 0.0),
        ("The review is a 4", 1, 5, None),
        ("none", 1, 5, None),
        ("3.5.2", 1, 5, None),
    ],
)
def test_parse_score_reads_a_leading_number_on_the_prompts_scale(reply, low, high, score):
    assert parse_score(reply, low, high) == score


def test_parse_confidence_reply_reads_the_answer_and_keyword_lines():
    reply = "Review two is specific.\nAnswer: two\nConfidence: high"
    assert parse_confidence_reply(reply).label == 1
    assert parse_confidence_reply(reply).level == 4
    unread = parse_confidence_reply("Answer: none\nConfidence: highest")
    assert unread.label is None and unread.level is None
    assert parse_confidence_reply("Answer: one\nConfidence: null").level == 1


# -- exams by hand -----------------------------------------------------------------------------


def test_prefers_a_negates_the_swapped_order():
    assert prefers_a(-1, 0) == 1.0 and prefers_a(1, 0) == 0.0
    assert prefers_a(1, 1) == 1.0 and prefers_a(-1, 1) == 0.0
    assert prefers_a(0, 1) == 0.5 and prefers_a(None, 0) is None


def test_consistency_first_position_judge_scores_zero_and_unparsed_is_left_out():
    assert consistency_exam([(-1, -1)] * 4).value == 0.0  # always "one": never the same review
    assert consistency_exam([(-1, 1), (1, -1)]).value == 1.0  # the same review both times
    score = consistency_exam([(-1, 1), (0, 1), (None, 1)])
    assert score.value == pytest.approx(0.75) and score.used == 2 and score.unparsed == 1
    assert consistency_exam([(None, None)]).value is None


def test_pertinence_votes_per_order_and_expected_label_flips():
    # a = review of P. Order 0: a is "one" (expected -1); order 1: a is "two" (expected +1).
    assert pertinence_exam([(-1, 1)]).value == 1.0
    assert pertinence_exam([(1, -1)]).value == 0.0  # prefers the other paper's review
    assert pertinence_exam([(-1, -1)]).value == 0.5  # position bias: half the votes
    score = pertinence_exam([(-1, None)])
    assert score.value == 1.0 and score.unparsed == 1


def test_self_confidence_prob_and_verbal():
    easy = [-math.log(p) for p in (0.9, 0.8)]
    hard = [-math.log(p) for p in (0.6, 0.7)]
    assert self_confidence_exam(easy, hard, mode="prob").value == 1.0
    assert self_confidence_exam(hard, easy, mode="prob").value == 0.0
    assert self_confidence_exam([4, 5], [3, 3], mode="verbal").value == 1.0
    score = self_confidence_exam([4, None], [3, 3], mode="verbal")
    assert score.value == 1.0 and score.unparsed == 1  # excluded and counted, not zeroed
    assert self_confidence_exam([None], [3], mode="verbal").value is None


NF_CATS = {
    "vicuna-7b": 0.4414,
    "baichuan2-13b": 0.0595,
    "chatglm3-6b": 0.3914,
    "fastchat-t5-3b": 0.5160,
    "chatglm_pro": 0.7481,
    "gpt-3.5-turbo": 0.5876,
    "gpt-4": 0.8686,
}
XSUM = {
    "vicuna-7b": 0.0002,
    "baichuan2-13b": 0.4357,
    "chatglm3-6b": 0.0264,
    "fastchat-t5-3b": 0.6662,
    "chatglm_pro": 0.8360,
    "gpt-3.5-turbo": 0.5948,
    "gpt-4": 0.8952,
}


def test_threshold_is_the_strict_mean_on_the_published_consistency_numbers():
    eta, passed = mean_threshold(NF_CATS)
    assert eta == pytest.approx(0.516086, abs=1e-6)
    assert eta - NF_CATS["fastchat-t5-3b"] == pytest.approx(8.6e-5, abs=1e-6)
    assert passed == {"gpt-3.5-turbo", "chatglm_pro", "gpt-4"}  # fastchat misses by 8.6e-5
    assert mean_threshold(XSUM)[1] == {"fastchat-t5-3b", "chatglm_pro", "gpt-3.5-turbo", "gpt-4"}
    # exactly at the mean fails (strict)
    assert mean_threshold({"a": 0.5, "b": 0.5, "c": 0.5})[1] == set()
    assert mean_threshold({"a": 0.2, "b": 0.5, "c": 0.8})[1] == {"c"}


def _scores(c, p, s):
    return {
        "consistency": ExamScore(c, 1, 0),
        "pertinence": ExamScore(p, 1, 0),
        "self_confidence": ExamScore(s, 1, 0),
    }


def test_selection_is_the_intersection_of_the_three_passes_and_weights_follow_the_paper():
    # NF_CATS, Table 6: C passes {5,6,7}, P passes {4,5,6,7}, S passes {3,4,6,7} -> {6,7}
    p_p = {"4": 0.845, "5": 0.8025, "6": 0.9175, "7": 0.94, "1": 0.3, "2": 0.3, "3": 0.4}
    s = {"3", "4", "6", "7"}
    table6 = ["vicuna-7b", "chatglm3-6b", "baichuan2-13b", "fastchat-t5-3b", "gpt-3.5-turbo"]
    table6 += ["chatglm_pro", "gpt-4"]  # Table 6 numbers the judges 1..7 in this order
    names = {str(i + 1): NF_CATS[name] for i, name in enumerate(table6)}
    q = qualify({j: _scores(names[j], p_p[j], float(j in s)) for j in names})
    assert {j for j in names if q.passed[j]["consistency"]} == {"5", "6", "7"}
    assert {j for j in names if q.passed[j]["pertinence"]} == {"4", "5", "6", "7"}
    assert q.panel == ["6", "7"] and q.reason is None
    assert q.weights["6"] == pytest.approx((0.9175 + 0.7481 + 1) / 3)
    assert q.weights["7"] == pytest.approx((0.94 + 0.8686 + 1) / 3)
    assert panel_weight(0.5, 0.7) == pytest.approx(2.2 / 3)


def test_fewer_than_three_candidates_or_no_passer_gives_no_panel_with_reason():
    q = qualify({"a": _scores(0.9, 0.9, 1), "b": _scores(0.1, 0.1, 1)})
    assert q.panel == [] and "at least 3" in q.reason
    q = qualify({j: _scores(0.5, 0.5, 1) for j in "abc"})
    assert q.panel == [] and q.reason == "no candidate passed all three exams"


def test_weighted_vote_by_hand():
    # judge x (w 0.9) prefers a in both orders; y and z (w 0.4 each) prefer b in both orders
    votes = [Vote("x", 0.9, 0, -1), Vote("x", 0.9, 1, 1)]
    votes += [Vote(j, 0.4, o, 1 if o == 0 else -1) for j in "yz" for o in (0, 1)]
    verdict, tally = weighted_vote(votes)
    assert verdict == 1.0 and tally["weight_for_a"] == pytest.approx(1.8)
    assert tally["weight_for_b"] == pytest.approx(1.6)
    uniform = [Vote(v.judge, 1.0, v.order, v.label) for v in votes]
    assert weighted_vote(uniform)[0] == 0.0  # uniform voting flips it
    tie = [Vote("x", 0.5, 0, -1), Vote("y", 0.5, 0, 1), Vote("z", 0.3, 0, None)]
    verdict, tally = weighted_vote(tie)
    assert verdict == 0.5 and tally["votes_unparsed"] == 1
    assert weighted_vote([Vote("x", 1.0, 0, None)])[0] is None


# -- scripted judges ---------------------------------------------------------------------------


def _reviews_in(user: str) -> tuple[str, str]:
    one = user.split("###Review one: ", 1)[1].split("\n\n###Review two: ")[0]
    two = user.split("###Review two: ", 1)[1].split("\n\n###")[0]
    return one.strip(), two.strip()


def _paper_words(user: str) -> set[str]:
    return set(user.split("###Paper: ", 1)[1].split("\n\n###Review one")[0].lower().split())


class Scripted:
    """A fake judge answering by rule: ``first`` (always "one"), ``longer`` (the longer review),
    ``pertinent`` (the review sharing more words with the paper, ties by length: consistent and
    pertinent; verbal confidence "expert" when the overlap gap is large, "low" otherwise),
    ``none`` (answers "none of them")."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.identity = f"test/{rule}"
        self.calls = 0

    def choose(self, user: str) -> tuple[str, int]:
        one, two = _reviews_in(user)
        if self.rule == "first":
            return "one", 0
        if self.rule == "longer":
            return ("one" if len(one) >= len(two) else "two"), 0
        paper = _paper_words(user)
        s1, s2 = len(paper & set(one.lower().split())), len(paper & set(two.lower().split()))
        if s1 == s2:
            return ("one" if len(one) >= len(two) else "two"), 0
        return ("one" if s1 > s2 else "two"), abs(s1 - s2)

    async def generate(self, conversations, settings):
        self.calls += len(conversations)
        out = []
        for conversation in conversations:
            user = conversation[-1]["content"]
            if self.rule == "none":
                out.append("none of them")
                continue
            word, gap = self.choose(user)
            if "Confidence:" in user:
                level = "expert" if gap >= 4 else "low"
                out.append(f"Because.\nAnswer: {word}\nConfidence: {level}")
            else:
                out.append(word)
        return out


WORDS = [
    "graph neural networks message passing oversmoothing",
    "diffusion models image generation denoising sampling",
    "reinforcement learning policy gradient exploration reward",
    "language models pretraining tokens scaling laws",
]


def _records() -> list[PaperRecord]:
    records = []
    for i, topic in enumerate(WORDS):
        reviews = (
            ReviewRecord(id=f"p{i}r0", text=f"{topic} is studied here. Short."),
            ReviewRecord(id=f"p{i}r1", text=f"The {' '.join(topic.split()[:3])} part is weak."),
            ReviewRecord(
                id=f"p{i}r2",
                text="A very long and polished review with many generic words about clarity, "
                "novelty, experiments, baselines, ablations and writing quality overall.",
            ),
        )
        records.append(
            PaperRecord(
                id=f"p{i}", venue="test", title=f"Paper {i}", abstract=topic, reviews=reviews
            )
        )
    return records


def test_exam_items_pair_similar_and_unrelated_papers():
    items = build_exam_items(_records(), m=4, seed=0)
    assert all(len(items.pairs[e]) == 4 for e in items.pairs)
    for source in items.sources["pertinence"]:
        assert source["b_paper"] != source["paper"] and source["b"].endswith("r2")  # longest
    with pytest.raises(ValueError):
        build_exam_items(_records()[:1], m=1)


def test_embedding_similarity_picks_the_nearest_and_farthest_abstract_by_cosine():
    """Hand-made embeddings that disagree with word overlap: the pertinence paper is the
    nearest by cosine, the easy pair's paper the farthest; the cosines are exact."""
    vectors = {
        WORDS[0]: [1.0, 0.0, 0.0],
        WORDS[1]: [0.0, 0.0, 1.0],  # farthest from p0
        WORDS[2]: [3.0, 4.0, 0.0],  # cosine 0.6 with p0
        WORDS[3]: [1.0, 1.0, 1.0],  # cosine 1/sqrt(3) with p0
    }
    records = _records()
    encoded: list[list[str]] = []

    def encode(texts):
        encoded.append(texts)
        return [vectors[t] for t in texts]

    similarity = embedding_similarity(records, encode)
    assert len(encoded) == 1 and len(encoded[0]) == 4  # every abstract embedded once
    assert similarity(records[0], records[2]) == pytest.approx(0.6)
    assert similarity(records[0], records[3]) == pytest.approx(1 / math.sqrt(3))
    assert similarity(records[0], records[1]) == pytest.approx(0.0)
    items = build_exam_items(
        records, m=4, seed=0, similarity=similarity, similarity_name="embedding cosine (fake)"
    )
    assert items.similarity == "embedding cosine (fake)"
    by_paper = {s["paper"]: s for s in items.sources["pertinence"]}
    assert by_paper["p0"]["b_paper"] == "p2"
    easy = {s["paper"]: s for s in items.sources["confidence_easy"]}
    assert easy["p0"]["b_paper"] == "p1"
    assert build_exam_items(records, m=4, seed=0).similarity == "jaccard"


def test_embedding_similarity_refuses_unusable_input():
    records = _records()
    with pytest.raises(ValueError, match="no usable vector"):
        embedding_similarity(records, lambda texts: [[0.0, 0.0]] * len(texts))
    with pytest.raises(ValueError, match="no usable vector"):
        embedding_similarity(records, lambda texts: [[1.0, 0.0]])
    blank = PaperRecord(id="px", venue="test", title=" ", abstract="", reviews=())
    with pytest.raises(ValueError, match=r"without an abstract.*px"):
        embedding_similarity([*records, blank], lambda texts: [[1.0]] * len(texts))
    # a title (or the paper's id in its place) is not compared instead of a missing abstract
    placeholder = PaperRecord(
        id="py", venue="test", title="py", abstract="Not available", reviews=()
    )
    with pytest.raises(ValueError, match=r"without an abstract.*py"):
        embedding_similarity([*records, placeholder], lambda texts: [[1.0]] * len(texts))


def test_exam_papers_are_those_with_an_abstract():
    """Auto-PRE's pertinence and easy pairs come from the most and least similar abstracts: a
    paper without one takes no part, and a dataset without any is refused."""
    records = _records()
    ids = [r.id for r in records]
    no_abstract = [
        PaperRecord(
            id=r.id, venue=r.venue, title=r.id, abstract="" if k % 2 else "N/A", reviews=r.reviews
        )
        for k, r in enumerate(records)
    ]
    mixed = [*records[:3], no_abstract[3]]
    items = build_exam_items(mixed, m=4, seed=0)
    used = {s["paper"] for s in items.sources["consistency"]} | {
        s["b_paper"] for exam in ("pertinence", "confidence_easy") for s in items.sources[exam]
    }
    assert used <= set(ids[:3])
    with pytest.raises(ValueError, match="none of the 4 papers has one"):
        build_exam_items(no_abstract, m=4, seed=0)


def _run(judges):
    return asyncio.run(run_exams(judges, build_exam_items(_records(), m=4, seed=0)))


def test_scripted_judges_give_the_expected_exam_results_and_panel():
    first, longer, pertinent, none = (Scripted(r) for r in ("first", "longer", "pertinent", "none"))
    judges = [
        Judge("first", first),
        Judge("longer", longer),
        Judge("pertinent", pertinent),
        Judge("none", none),
    ]
    q, logs = _run(judges)
    c = {j: q.scores[j]["consistency"].value for j in q.scores}
    p = {j: q.scores[j]["pertinence"].value for j in q.scores}
    assert c == {"first": 0.0, "longer": 1.0, "pertinent": 1.0, "none": None}
    # the IA (longest review of a similar paper) is longer than the RA: the length judge fails
    assert p["longer"] == 0.0 and p["pertinent"] == 1.0 and p["first"] == 0.5
    assert q.scores["none"]["consistency"].unparsed == 4  # counted, left out, never a tie
    assert q.scores["pertinent"]["self_confidence"].value == 1.0
    assert q.scores["first"]["self_confidence"].value == 0.0  # confidence: "low" everywhere
    assert q.thresholds["consistency"] == pytest.approx(2 / 3)
    assert q.panel == ["pertinent"]
    assert q.weights == {"pertinent": pytest.approx((1 + 1 + 1) / 3)}
    calls = logs["pertinent"]["calls"]
    assert calls == {"consistency": 8, "pertinence": 8, "confidence_easy": 8, "confidence_hard": 8}
    assert logs["none"]["calls"]["consistency"] == 16  # one retry per unread answer
    answers = logs["first"]["answers"]["consistency"][0]
    assert answers["labels"] == [-1, -1] and answers["replies"] == ["one", "one"]
    # the same table from per-pair rows (what the Inspect task logs)
    rows = [
        {
            "exam": exam,
            "judges": {
                name: {
                    "labels": log["answers"][exam][i]["labels"],
                    "confidences": log["answers"][exam][i]["confidences"],
                    "confidence_mode": log["confidence_mode"],
                }
                for name, log in logs.items()
            },
        }
        for exam in ("consistency", "pertinence", "confidence_easy", "confidence_hard")
        for i in range(4)
    ]
    again = qualification_from_rows(rows)
    assert again.panel == q.panel and again.thresholds == q.thresholds


def test_ask_pairs_asks_both_orders_through_the_cache_key_settings():
    judge = Judge("longer", Scripted("longer"), variant="after")
    pair = Pair("x", "paper", "short", "a much longer review")
    judged = asyncio.run(ask_pairs(judge, [pair]))
    assert judged.labels == [(1, -1)] and judged.calls == 2  # b preferred in both orders


class PointScorer:
    """A pointwise fake judge: scores a review by its length (1..5), "n/a" for "unreadable"."""

    identity = "test/points"

    def __init__(self) -> None:
        self.calls = 0

    async def generate(self, conversations, settings):
        self.calls += len(conversations)
        out = []
        for conversation in conversations:
            review = conversation[-1]["content"].split("###Review: ", 1)[1].split("\n\n###")[0]
            out.append("n/a" if "unreadable" in review else str(min(5, 1 + len(review) // 10)))
        return out


def test_pointwise_judge_scores_each_review_once_and_compares_the_scores():
    judge = Judge("points", PointScorer(), variant="point5")
    pairs = [
        Pair("x", "paper", "short", "a much longer review here"),
        Pair("y", "paper", "short", "tiny!"),
        Pair("z", "paper", "short", "unreadable"),
    ]
    judged = asyncio.run(ask_pairs(judge, pairs))
    assert judged.labels == [(1, -1), (0, 0), (None, None)]
    assert judged.calls == 4 + 1  # four distinct reviews, one retry for the unreadable one
    assert judged.replies[0] == ("1", "3")
    with pytest.raises(ValueError):
        asyncio.run(ask_confidence(judge, pairs, mode="prob"))


class FakeLM:
    """A local evaluation LM whose first-token log-probabilities are scripted."""

    identity = "test/local"
    max_length = None

    class tokenizer:  # noqa: N801
        pass

    def __init__(self, logprob: float) -> None:
        self.logprob = logprob

    def target_logprobs(self, requests):
        from scorers.lm.base import LogprobResult

        return [LogprobResult(self.logprob, 1) for _ in requests]


def test_prob_confidence_from_the_first_answer_token(monkeypatch):
    from scorers.lm.generation import LocalGenerator
    from scorers.metrics.autopre import judging

    monkeypatch.setattr(judging, "generation_prompt_ids", lambda tok, msgs: [1, 2, 3])
    monkeypatch.setattr(judging, "encode_text", lambda tok, text: [7, 8])

    class Local(LocalGenerator):
        def __init__(self, lm, reply):
            self.lm, self.reply = lm, reply

        async def generate(self, conversations, settings):
            return [self.reply for _ in conversations]

    judge = Judge("local", Local(FakeLM(math.log(0.8)), "two"))
    judged, mode = asyncio.run(ask_confidence(judge, [Pair("x", "p", "a", "b")]))
    assert mode == "prob" and judged.confidences[0][0] == pytest.approx(-math.log(0.8))
    unread = Judge("local", Local(FakeLM(0.0), "none"))
    judged, _ = asyncio.run(ask_confidence(unread, [Pair("x", "p", "a", "b")]))
    assert judged.confidences == [(None, None)]  # no one/two token: excluded


def test_forced_local_answers_compare_the_first_token_probabilities(monkeypatch):
    from scorers.lm.base import LogprobResult
    from scorers.lm.generation import LocalGenerator
    from scorers.metrics.autopre import judging

    monkeypatch.setattr(judging, "generation_prompt_ids", lambda tok, msgs: [1, 2, 3])
    monkeypatch.setattr(judging, "encode_text", lambda tok, text: [11 if text == "one" else 22])

    class PositionLM(FakeLM):
        """P(one) = 0.6, P(two) = 0.3 whatever the prompt: a first-position judge."""

        def target_logprobs(self, requests):
            return [
                LogprobResult(math.log(0.6 if r.target_ids == (11,) else 0.3), 1) for r in requests
            ]

    class Local(LocalGenerator):
        def __init__(self, lm):
            self.lm = lm

        async def generate(self, conversations, settings):
            raise AssertionError("a forced judge does not generate")

    judge = Judge("forced", Local(PositionLM(0.0)), forced=True)
    pairs = [Pair("x", "p", "a", "b")]
    judged = asyncio.run(ask_pairs(judge, pairs))
    assert judged.labels == [(-1, -1)] and judged.calls == 4
    assert consistency_exam(judged.labels).value == 0.0
    assert judged.confidences[0][0] == pytest.approx(-math.log(0.6))
    judged, mode = asyncio.run(ask_confidence(judge, pairs))
    assert mode == "prob" and judged.confidences[0][1] == pytest.approx(-math.log(0.6))
    with pytest.raises(ValueError):
        Judge("api", Scripted("first"), forced=True)


# -- the panel metric --------------------------------------------------------------------------


def _item(candidate: str, held_out: str | None = "The graph part is weak.") -> Item:
    return Item(
        paper=Paper(id="p0", title="Paper 0", abstract=WORDS[0]),
        candidate=candidate,
        references=(Review(id="r", text="ref"),),
        held_out=Review(id="h", text=held_out) if held_out is not None else None,
    )


def test_panel_metric_weighted_vote_against_the_held_out_review(tmp_path):
    resources = Resources(
        generators={"judge": Scripted("pertinent"), "judge_2": Scripted("first")},
        cache_dir=tmp_path,
    )
    metric = get_metric(
        "autopre_panel_unqualified",
        judges="judge,judge_2@after",
        weights={"judge@before": 0.9, "judge_2@after": 0.4},
    )
    result = metric.score(_item(f"{WORDS[0]} all discussed."), resources)
    # pertinent judge: candidate both orders (0.9 x 2); first-position judge: split (0.4 each)
    assert result.value == 1.0
    assert result.details["tally"]["weight_for_a"] == pytest.approx(2.2)
    assert result.details["judges"]["judge_2@after"]["labels"] == [-1, -1]
    assert result.details["judge_calls"] == 4
    unweighted = get_metric("autopre_panel_unqualified", judges="judge_2").score(
        _item("x"), resources
    )
    assert unweighted.value == 0.5 and unweighted.details["weighting"].startswith("uniform")
    assert result.signature.qualification.startswith("none: judges not qualified")


def test_panel_metric_bad_input_is_unscored_with_its_reason(tmp_path):
    resources = Resources(generators={"judge": Scripted("none")}, cache_dir=tmp_path)
    metric = get_metric("autopre_panel_unqualified")
    assert "empty candidate" in metric.score(_item("  "), resources).reason
    assert "held-out" in metric.score(_item("text", held_out=None), resources).reason
    unread = metric.score(_item("text"), resources)
    assert unread.value is None and "could be read" in unread.reason
    with pytest.raises(ValueError):
        parse_judges("judge@loud")
    with pytest.raises(ValueError):
        get_metric("autopre_panel_unqualified", weights={"other@before": 1.0}).score(
            _item("t"), resources
        )
    # the judges are told the paper's abstract: a paper without one is unscored, with why
    no_abstract = Item(
        paper=Paper(id="p0", title="p0", abstract="Not available"),
        candidate="text",
        references=(Review(id="r", text="ref"),),
        held_out=Review(id="h", text="The graph part is weak."),
    )
    assert "placeholder" in metric.score(no_abstract, resources).reason


# -- through Inspect ---------------------------------------------------------------------------


def _scripted_model_api():
    """``autopre_scripted/<rule>``: the scripted judge of rule ``<rule>`` as an Inspect model."""

    async def reply(conversation, rule):
        [text] = await Scripted(rule).generate([conversation], None)
        return text

    scripted_model("autopre_scripted", reply)


def _write_records(path) -> str:
    import json
    from dataclasses import asdict

    with open(path, "w") as f:
        for record in _records():
            row = asdict(record)
            row["reviews"] = [{"id": r["id"], "text": r["text"]} for r in row["reviews"]]
            f.write(json.dumps({k: row[k] for k in ("id", "title", "abstract", "reviews")}) + "\n")
    return str(path)


@pytest.mark.slow
def test_autopre_exam_task_logs_every_answer_and_the_qualification(tmp_path):
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.autopre_exam import autopre_exam, qualification_from_log

    _scripted_model_api()
    data = _write_records(tmp_path / "papers.jsonl")
    judges = "autopre_scripted/first,autopre_scripted/longer,autopre_scripted/pertinent@after"
    [log] = inspect_eval(
        autopre_exam(dataset=data, judges=judges, items=4, cache_dir=str(tmp_path / "cache")),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 16
    metrics = log.results.scores[0].metrics
    assert metrics["autopre_scripted/first@before:consistency"].value == 0.0
    assert metrics["autopre_scripted/longer@before:pertinence"].value == 0.0
    assert metrics["autopre_scripted/pertinent@after:in_panel"].value == 1.0
    assert metrics["autopre_scripted/pertinent@after:weight"].value == pytest.approx(1.0)
    assert metrics["panel_size"].value == 1.0
    sample = log.samples[0]
    answer = next(iter(sample.scores.values())).metadata["judges"]["autopre_scripted/first@before"]
    assert answer["replies"] and answer["calls"] == 2
    table = qualification_from_log(log.location)
    assert qualification_from_log(log) == table  # a log already read gives the same
    assert table["panel"] == ["autopre_scripted/pertinent@after"]
    assert table["judge_calls"]["autopre_scripted/first@before"]["consistency"] == 8
    assert log.eval.metadata["similarity"] == "embedding cosine (embedded/all-MiniLM-L6-v2)"
    with pytest.raises(ValueError, match="similarity must be embedding or jaccard"):
        autopre_exam(dataset=data, similarity="tfidf")


@pytest.mark.slow
def test_autopre_panel_through_the_iclr_task(tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from gem_tasks.tasks.iclr import iclr

    _scripted_model_api()
    data = _write_records(tmp_path / "papers.jsonl")
    on_topic = "Paper 0 1 2 3: " + " ".join(WORDS)  # on every paper's topic, and long
    outputs = [ModelOutput.from_content("mockllm/model", on_topic) for _ in WORDS]
    for output in outputs:
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    [log] = inspect_eval(
        iclr(dataset=data, scorers="autopre_panel_unqualified", cache_dir=str(tmp_path / "cache")),
        model=get_model("mockllm/model", custom_outputs=outputs),
        model_roles={"judge": get_model("autopre_scripted/pertinent")},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        score = sample.scores["autopre_panel_unqualified"]
        assert score.value == 1.0  # the on-topic candidate beats the held-out human review
        assert score.metadata["judge_calls"] == 2
        assert score.metadata["judges"]["judge@before"]["labels"] == [-1, 1]
    # the leaderboard view ranks the model by its panel verdicts
    from gem_tasks.analysis.autopre import autopre_leaderboard, autopre_markdown

    [row] = autopre_leaderboard(
        [tmp_path / "logs"], metric="autopre_panel_unqualified", resamples=50
    )
    assert row.win_rate == 1.0 and row.papers == 4 and row.rank == 1
    assert "win rate vs human" in autopre_markdown([row])
    # the same ranking from the command line
    import contextlib
    import io

    from gem_tasks.cli import main as cli_main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        argv = ["autopre-ranking", str(tmp_path / "logs"), "--metric", "autopre_panel_unqualified"]
        assert cli_main([*argv, "--resamples", "50"]) == 0
    assert "| 1 (1-1) | mockllm/model | 1.000 (1.000, 1.000) | 4 |" in out.getvalue()
    assert cli_main(["autopre-ranking", str(tmp_path / "logs")]) == 2  # no autopre_panel there


def test_rank_with_intervals_on_shared_papers_only():
    from scorers.metrics.autopre.ranking import rank_with_intervals

    verdicts = {
        "strong": {f"p{i}": 1.0 for i in range(20)},
        "weak": {f"p{i}": 0.0 if i % 4 else 0.5 for i in range(20)},
        "mid": {**{f"p{i}": float(i % 2) for i in range(20)}, "extra": 1.0},
    }
    rows = rank_with_intervals(verdicts, resamples=300)
    assert [r.model for r in rows] == ["strong", "mid", "weak"]
    assert rows[0].win_rate == 1.0 and rows[0].rank_low == rows[0].rank_high == 1
    assert rows[1].papers == 20 and rows[1].win_rate == 0.5  # "extra" is not shared
    assert rows[1].low < 0.5 < rows[1].high
    assert rows[2].win_rate == pytest.approx(5 * 0.5 / 20)
    with pytest.raises(ValueError):
        rank_with_intervals({"a": {"p": 1.0}, "b": {"q": 1.0}})


# -- Auto-PRE's panel is the exam's panel --------------------------------------------------------


def _qualification_table() -> dict:
    """A qualification as ``qualification_from_log`` returns it: three candidates, one passed."""
    exams = {"consistency": {"value": 0.9}, "pertinence": {"value": 0.8}}
    return {
        "judges": {
            "strong@before": {
                **exams,
                "passed": {"consistency": True, "pertinence": True, "self_confidence": True},
            },
            "weak@before": {
                **exams,
                "passed": {"consistency": False, "pertinence": True, "self_confidence": True},
            },
        },
        "panel": ["strong@before"],
        "weights": {"strong@before": (0.9 + 0.8 + 1) / 3},
        "generators": {"strong@before": "inspect/strong", "weak@before": "inspect/weak"},
        "forced": {"strong@before": False, "weak@before": False},
        "reason": None,
    }


def test_a_qualification_is_read_and_refused_when_it_is_not_auto_pres_panel(tmp_path):
    import json

    from scorers import MetricError
    from scorers.metrics.autopre import load_qualification

    table = _qualification_table()
    q = load_qualification(table)
    assert q.panel == ("strong@before",) and q.weights["strong@before"] == pytest.approx(0.9)
    path = tmp_path / "qualification.json"
    path.write_text(json.dumps(table))
    assert load_qualification(path).digest == q.digest and load_qualification(path).source == (
        "qualification.json"
    )
    with pytest.raises(
        MetricError, match="panel is empty .*3 candidate.*autopre_panel_unqualified"
    ):
        load_qualification({**table, "panel": [], "weights": {}, "reason": "3 candidates needed"})
    with pytest.raises(MetricError, match="'weak@before' did not pass consistency"):
        load_qualification({**table, "panel": ["weak@before"], "weights": {"weak@before": 0.5}})
    with pytest.raises(MetricError, match="no positive weight"):
        load_qualification({**table, "weights": {}})
    with pytest.raises(MetricError, match="generator .* is not recorded"):
        load_qualification({**table, "generators": {}})
    with pytest.raises(MetricError, match="does not exist"):
        load_qualification(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("not json")
    with pytest.raises(MetricError, match="neither a qualification JSON file"):
        load_qualification(tmp_path / "bad.json")
    with pytest.raises(MetricError, match="autopre_panel needs a qualification"):
        get_metric("autopre_panel")
    panel = get_metric("autopre_panel", qualification=table)
    assert panel.models() == ("strong",)  # the harness binds this model by name
    with pytest.raises(MetricError, match="has no content hash"):
        load_qualification({**table, "dataset": {"name": "papers"}})


def test_a_qualification_holds_for_the_dataset_it_was_computed_on():
    """Auto-PRE qualifies judges per dataset: the panel refuses a qualification computed on
    another dataset (or one that does not say which) unless told to accept it, and its
    signature says which case it is."""
    from scorers import MetricError
    from scorers.data.records import dataset_identity, parse_record

    records = [
        parse_record({"id": f"p{i}", "title": "T", "abstract": "A", "reviews": [{"text": "r"}]},
                     where="x")
        for i in range(3)
    ]  # fmt: skip
    exam = dataset_identity(records, name="papers")
    assert exam == dataset_identity(list(reversed(records)), name="papers")  # order-free
    changed = [*records[:2], parse_record({"id": "p2", "title": "T", "abstract": "A",
                                           "reviews": [{"text": "r!"}]}, where="x")]  # fmt: skip
    other = dataset_identity(changed, name="papers")
    assert other["sha256"] != exam["sha256"] and other["records"] == 3

    table = {**_qualification_table(), "dataset": exam}

    def panel(scored, **options):  # the dataset a task's scoring plan gives the panel
        metric = get_metric("autopre_panel", qualification=options.pop("q", table), **options)
        metric.check_dataset(scored)
        return metric

    assert panel(exam).checked == "same dataset"
    with pytest.raises(MetricError, match=r"qualified on papers \(3 records.*scoring papers"):
        panel(other)
    accepted = panel(other, accept_other_dataset=True)
    assert accepted.checked.startswith("accepted: qualified on papers")
    assert other["sha256"][:12] in accepted.checked
    unrecorded = _qualification_table()  # written before qualifications named their dataset
    with pytest.raises(MetricError, match="a dataset it does not record"):
        panel(exam, q=unrecorded)
    from scorers.plan import ScoringPlan

    plan = ScoringPlan.build(
        "autopre_panel", scorer_options={"autopre_panel": {"qualification": table}}
    )
    with pytest.raises(MetricError, match="scoring papers"):
        plan.refuse_unservable(changed, where="x", identity=other)  # through the plan, as tasks do
    unchecked = get_metric("autopre_panel", qualification=table)  # plain Python, no dataset
    assert unchecked.checked.startswith("not checked: the scored dataset was not given")


@pytest.mark.slow
def test_the_panel_judges_with_the_model_the_exam_qualified(tiny_lm, tmp_path):
    """A ``scorer_lm`` judge qualified as one evaluation LM is refused with another one; a named
    model the harness did not bind is refused too (no silent fallback)."""
    from scorers import MetricError

    table = _qualification_table()
    table["panel"] = ["scorer_lm@before"]
    table["judges"]["scorer_lm@before"] = table["judges"].pop("strong@before")
    table["weights"] = {"scorer_lm@before": 0.9}
    table["generators"] = {"scorer_lm@before": "embedded/SmolLM2-135M-Instruct:float32"}
    panel = get_metric("autopre_panel", qualification=table)
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    with pytest.raises(MetricError, match="was qualified as 'embedded/SmolLM2.*test/tiny-llama"):
        panel.score(_item(f"{WORDS[0]} all discussed."), resources)
    named = get_metric("autopre_panel", qualification=_qualification_table())
    with pytest.raises(MetricError, match="model 'strong' is not bound"):
        named.score(_item(f"{WORDS[0]} all discussed."), resources)
    resources.bind_model("strong", Scripted("pertinent"))
    with pytest.raises(MetricError, match="qualified as 'inspect/strong'.*'test/pertinent'"):
        named.score(_item(f"{WORDS[0]} all discussed."), resources)


@pytest.mark.slow
def test_the_exam_tasks_result_feeds_the_panel(tmp_path, capsys):
    """The ``autopre_exam`` task's log (or the JSON ``gem-tasks autopre-qualification`` writes
    from it) is ``autopre_panel``'s qualification: the panel is exactly the judges that passed,
    weighted as the exam weighted them, answering as the models they were examined as."""
    import json
    from pathlib import Path

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from gem_tasks.cli import main as cli_main
    from gem_tasks.tasks.autopre_exam import autopre_exam
    from gem_tasks.tasks.iclr import iclr
    from scorers import MetricError

    _scripted_model_api()
    data = _write_records(tmp_path / "papers.jsonl")
    cache = str(tmp_path / "cache")
    judges = "autopre_scripted/first,autopre_scripted/longer,autopre_scripted/pertinent@after"
    [exam] = inspect_eval(
        autopre_exam(dataset=data, judges=judges, items=4, cache_dir=cache),
        model="mockllm/model",
        log_dir=str(tmp_path / "exam_logs"),
        display="none",
    )
    assert exam.status == "success", exam.error
    written = tmp_path / "qualification.json"
    assert cli_main(["autopre-qualification", exam.location, "--out", str(written)]) == 0
    assert "panel: autopre_scripted/pertinent@after" in capsys.readouterr().err
    table = json.loads(written.read_text())
    member = "autopre_scripted/pertinent@after"
    assert table["panel"] == [member]
    # the qualification names the dataset its exams were drawn from, as the iclr task names it
    assert table["dataset"]["name"] == "papers" and len(table["dataset"]["sha256"]) == 64
    assert (
        table["dataset"]
        == iclr(dataset=data, scorers="bleu").dataset[0].metadata["dataset_identity"]
    )
    other = tmp_path / "other.jsonl"
    other.write_text(Path(data).read_text().replace("Paper 0", "Paper zero", 1))
    with pytest.raises(MetricError, match="qualified on papers .* scoring other"):
        iclr(
            dataset=str(other),
            scorers="autopre_panel",
            scorer_options={"autopre_panel": {"qualification": str(written)}},
        )
    assert table["generators"][member] == "inspect/autopre_scripted/pertinent"
    on_topic = "Paper 0 1 2 3: " + " ".join(WORDS)
    for qualification in (exam.location, str(written)):
        outputs = [ModelOutput.from_content("mockllm/model", on_topic) for _ in WORDS]
        for output in outputs:
            output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        [log] = inspect_eval(
            iclr(
                dataset=data,
                scorers="autopre_panel",
                scorer_options={"autopre_panel": {"qualification": qualification}},
                cache_dir=cache,
            ),
            model=get_model("mockllm/model", custom_outputs=outputs),
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
        assert log.status == "success", log.error
        for sample in log.samples:
            score = sample.scores["autopre_panel"]
            assert score.value == 1.0  # the on-topic review beats the held-out human review
            assert list(score.metadata["judges"]) == [member]  # only the judge that passed
            assert score.metadata["judges"][member]["weight"] == pytest.approx(
                table["weights"][member]
            )
            assert score.metadata["weighting"].startswith("exam weights")
            signature = score.metadata["signature"]
            assert signature["dataset_check"] == "same dataset"
            assert signature["judges"] == {member: "inspect/autopre_scripted/pertinent"}
            assert signature["weights"] == {member: table["weights"][member]}
    # two candidates cannot qualify anyone (the mean threshold needs three): refused up front
    [small] = inspect_eval(
        autopre_exam(
            dataset=data, judges="autopre_scripted/first,autopre_scripted/longer", items=2
        ),
        model="mockllm/model",
        log_dir=str(tmp_path / "small_logs"),
        display="none",
    )
    from scorers import MetricError

    with pytest.raises(MetricError, match="panel is empty"):
        iclr(
            dataset=data,
            scorers="autopre_panel",
            scorer_options={"autopre_panel": {"qualification": small.location}},
        )
