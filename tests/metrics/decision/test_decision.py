"""Decision and rating accuracy (issue #37): the verdict reader on a table of replies, where a
verdict comes from (the model's follow-up, the held-out reviewer's rating, the baseline rules),
each metric and its corpus number by hand, and the whole path through `inspect eval
gem_tasks/iclr` and the leaderboard on records the tests write."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from conftest import decided_papers, write_jsonl
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.metrics.decision import parse_verdict, verdict_of
from scorers.metrics.decision.outcomes import (
    auc,
    balanced_accuracy,
    corpus_auc,
    corpus_wilson,
    wilson_interval,
)

REPLIES = [
    ("Rating: 6\nDecision: Accept", 6.0, True),
    ("**Rating:** 3\n**Decision:** Reject", 3.0, False),
    ("  Rating = 8\n\nDecision: accept.", 8.0, True),
    ("I would rate it 8/10 and accept it.", 8.0, True),
    ("The rating is 5. The paper should be rejected.", 5.0, False),
    ("Rating: 12\nDecision: Reject", None, False),  # off the scale: no rating
    ("Accept or reject? It is hard to say.", None, None),  # both words, no label
    ("The paper is interesting.", None, None),
    ("Decision: Reject (although I could accept a revision)\nRating: 4", 4.0, False),
    # the embedded model's replies: the question's words given back state no decision
    ("Rating: 1.00\nDecision: Accept or Reject", 1.0, None),
    ("Rating: 5\nDecision: Accept/Reject", 5.0, None),
]


@pytest.mark.parametrize(("reply", "rating", "accept"), REPLIES)
def test_the_verdict_reader(reply, rating, accept):
    verdict = parse_verdict(reply)
    assert (verdict.rating, verdict.accept) == (rating, accept)
    assert (verdict.missing is None) == (rating is not None and accept is not None)


def _item(*, accept=True, held_out_rating=None, reply=None, baseline=None, refs=(6.0, 8.0)):
    held_out = Review("h", "The held-out review.", rating=held_out_rating)
    references = tuple(Review(f"r{i}", f"Review {i}.", rating=r) for i, r in enumerate(refs))
    return Item(
        Paper("p1", abstract="An abstract.", accept=accept),
        candidate=held_out.text if held_out_rating is not None else "A model's review.",
        references=references,
        held_out=held_out,
        verdict_reply=reply,
        baseline=baseline,
    )


def _score(name, item, tmp_path):
    return get_metric(name).score(item, Resources(evaluation_lm="embedded", cache_dir=tmp_path))


def test_where_a_verdict_comes_from():
    assert verdict_of(_item(held_out_rating=8)).accept is True
    assert verdict_of(_item(held_out_rating=5)).accept is False  # below 6: the reject side
    human = verdict_of(_item(held_out_rating=None, reply=None))
    assert "no verdict was asked" in human.missing
    committee = verdict_of(_item(baseline={"rule": "committee"}, refs=(3.0, 8.0)))
    assert (committee.rating, committee.accept) == (5.5, False)
    assert verdict_of(_item(baseline={"rule": "always_reject"})).accept is False
    coins = [
        verdict_of(
            Item(Paper(f"p{i}"), "", (), baseline={"rule": "base_rate", "rate": 0.3, "seed": 0})
        ).accept
        for i in range(2000)
    ]
    assert abs(sum(coins) / len(coins) - 0.3) < 0.04  # a fair coin at the base rate
    again = verdict_of(Item(Paper("p7"), "", (), baseline={"rule": "base_rate", "rate": 0.3}))
    assert again.accept == coins[7]  # fixed by the paper and the seed
    no_ratings = verdict_of(_item(baseline={"rule": "committee"}, refs=(None, None)))
    assert no_ratings.accept is None and "carry no rating" in no_ratings.missing


def test_each_metric_by_hand(tmp_path):
    right = _item(accept=False, reply="Rating: 3\nDecision: Reject")
    wrong = _item(accept=False, reply="Rating: 8\nDecision: Accept")
    assert _score("decision_accuracy", right, tmp_path).value == 1.0
    assert _score("decision_accuracy", wrong, tmp_path).value == 0.0
    assert _score("decision_fpr", wrong, tmp_path).value == 1.0  # accepted a rejected paper
    fnr = _score("decision_fnr", wrong, tmp_path)
    assert fnr.value is None and "counts accepted papers" in fnr.reason
    assert _score("decision_auc", wrong, tmp_path).value == 8.0
    assert _score("rating_error", wrong, tmp_path).value == pytest.approx(1.0)  # |8 - 7|
    unknown = _item(accept=None, reply="Rating: 8\nDecision: Accept")
    assert (
        "no accept/reject decision in the data"
        in _score("decision_accuracy", unknown, tmp_path).reason
    )
    assert _score("rating_error", unknown, tmp_path).value == pytest.approx(1.0)
    vague = _item(reply="A fine paper.")
    result = _score("decision_accuracy", vague, tmp_path)
    assert result.value is None and "no accept/reject decision" in result.reason
    committee = _item(baseline={"rule": "committee"})
    assert "mean it would be compared with" in _score("rating_error", committee, tmp_path).reason


def test_corpus_numbers_by_hand():
    # Wilson, 8 of 10: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    z, n, p = 1.959963984540054, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert wilson_interval(8, 10) == pytest.approx((centre - half, centre + half))
    samples = [{"indicator": 1}] * 8 + [{"indicator": 0}] * 2 + [{"indicator": None}]
    assert corpus_wilson(samples, bound=0) == pytest.approx(centre - half)
    # AUC: of the 2 x 2 (positive, negative) pairs, 3 ordered right and one tie -> 3.5 / 4
    assert auc([3, 2, 2, 1], [True, True, False, False]) == pytest.approx(0.875)
    assert math.isnan(auc([1, 2], [True, True]))
    rows = [{"rating": r, "accept": a} for r, a in ((3, True), (2, True), (2, False), (1, False))]
    assert corpus_auc(rows, bound=None) == pytest.approx(0.875)
    low, high = corpus_auc(rows * 10, bound=0), corpus_auc(rows * 10, bound=1)
    assert low <= 0.875 <= high
    # balanced accuracy: TPR 1/2, TNR 2/2 -> 0.75
    assert balanced_accuracy([True, False, False, False], [True, True, False, False]) == 0.75


# -- through inspect eval and the leaderboard ------------------------------------------------


def _records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "records.jsonl", decided_papers(6))


def _scripted_reviewer():
    from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi

    @modelapi(name="verdict_scripted")
    def verdict_scripted():
        class Scripted(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):
                last = input[-1].text
                text = "Rating: 8\nDecision: Accept" if "Rating:" in last else "A short review."
                output = ModelOutput.from_content(self.model_name, text)
                output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
                return output

        return Scripted

    return verdict_scripted


@pytest.mark.slow
def test_the_verdict_is_asked_after_the_review_and_scored(tmp_path):
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.iclr import iclr

    _scripted_reviewer()
    dataset = str(_records(tmp_path))
    [log] = inspect_eval(
        iclr(dataset=dataset, scorers="decision_accuracy,decision_fpr,rouge_l"),
        model="verdict_scripted/reviewer",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        assert sample.output.completion == "A short review."  # the review stays the answer
        assert sample.metadata["verdict_reply"] == "Rating: 8\nDecision: Accept"
        assert [m.role for m in sample.messages][-2:] == ["user", "assistant"]
        accepted = sample.metadata["decision"]["accept"]
        assert sample.scores["decision_accuracy"].value == (1.0 if accepted else 0.0)
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert metrics["decision_accuracy"]["mean"].value == pytest.approx(0.5)
    assert metrics["decision_fpr"]["mean"].value == pytest.approx(1.0)  # accepts every paper
    low = metrics["decision_accuracy"]["wilson_ci95_lower"].value
    assert low == pytest.approx(wilson_interval(3, 6)[0])


@pytest.mark.slow
def test_baseline_rows_need_no_model_and_only_take_decision_metrics(tmp_path):
    from inspect_ai import eval as inspect_eval

    from gem_tasks.analysis.leaderboard.compare import compare_logs
    from gem_tasks.tasks.iclr import iclr

    dataset = str(_records(tmp_path))
    with pytest.raises(ValueError, match="only the decision metrics apply; gem score"):
        iclr(dataset=dataset, candidate="baseline:committee", scorers="gem,decision_accuracy")
    with pytest.raises(ValueError, match="baseline:<rule>"):
        iclr(dataset=dataset, candidate="baseline:coin")
    logs = tmp_path / "logs"
    for candidate in ("baseline:committee", "baseline:always_reject", "human"):
        [log] = inspect_eval(
            iclr(dataset=dataset, candidate=candidate, scorers="decision_accuracy,decision_auc"),
            model="none",
            log_dir=str(logs),
            display="none",
        )
        assert log.status == "success", log.error
    board = compare_logs([logs], progress=False)
    accuracy = board.table[board.table["metric"] == "decision_accuracy"].set_index("model")
    # committee: mean of the two reference ratings >= 6 decides; the references of an accepted
    # paper are two of (8, 6, 8), of a rejected one two of (3, 3, 6): always right
    assert accuracy.loc["baseline:committee", "mean"] == 1.0
    assert accuracy.loc["baseline:always_reject", "mean"] == 0.5
    aucs = board.table[board.table["metric"] == "decision_auc"].set_index("model")
    assert aucs.loc["baseline:committee", "corpus"] == 1.0
    assert (
        "baseline:always_reject" not in aucs.index
        or aucs.loc["baseline:always_reject", "scored"] == 0
    )
