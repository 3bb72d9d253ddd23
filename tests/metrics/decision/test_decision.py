"""Decision and rating accuracy: the verdict reader on a table of replies, where a
verdict comes from (the model's follow-up, the held-out reviewer's rating, the baseline rules),
each metric and its corpus number by hand, and the whole path through `inspect eval
gem_tasks/iclr` and the leaderboard on records the tests write."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import accepting_reviewer, decided_papers, scripted_model, write_jsonl
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.metrics.decision import parse_verdict, verdict_of
from scorers.metrics.decision.outcomes import (
    BALANCED_ACCURACY,
    RATING_AUC,
    auc,
    balanced_accuracy,
)
from scorers.validation.statistics import proportion_interval

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
    # every official reviewer's rating (the paper-level list, the held-out reviewer's among
    # them), where the reviews themselves carry none: (3 + 6 + 8) / 3 < 6 rejects
    everyone = Item(
        Paper("p1", accept=False, official_ratings=(3.0, 6.0, 8.0)),
        "",
        tuple(Review(f"r{i}", f"Review {i}.") for i in range(2)),
        baseline={"rule": "committee_all_reviewers"},
    )
    verdict = verdict_of(everyone)
    assert (verdict.rating, verdict.accept, verdict.missing) == (17 / 3, False, None)
    unlisted = verdict_of(replace(everyone, paper=Paper("p1", accept=False)))
    assert unlisted.accept is None and "lists no official ratings" in unlisted.missing


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
    for rule in ("committee", "committee_all_reviewers"):
        committee = _item(baseline={"rule": rule})
        reason = _score("rating_error", committee, tmp_path).reason
        assert "ratings it would be compared with" in reason


def test_the_committee_is_every_other_reviewer_whatever_the_references(tmp_path):
    """A paper with five reviews and two references: the committee rule and the rating error
    average the four reviews that are not held out, and the signature and details say so."""
    from scorers.data.paper_docs import item_from_document, paper_document
    from scorers.data.records import parse_record

    ratings = {"a": 2.0, "b": 4.0, "c": 6.0, "d": 8.0, "e": 10.0}
    record = parse_record(
        {"id": "p5", "venue": "ICLR 2023", "title": "T", "abstract": "An abstract.",
         "decision": "Accept (Poster)",
         "reviews": [{"id": k, "text": f"Review {k}.", "rating": v} for k, v in ratings.items()]},
        where="x",
    )  # fmt: skip
    _, document = paper_document(record, references=2, seed=0, max_paper_tokens=100)
    held_out = document["held_out"]["id"]
    others = [v for k, v in ratings.items() if k != held_out]
    assert len(document["references"]) == 2 and len(others) == 4
    committee = item_from_document({**document, "baseline": {"rule": "committee"}}, candidate="")
    verdict = verdict_of(committee)
    assert verdict.rating == pytest.approx(sum(others) / 4)  # the mean of four, not of two
    result = _score("decision_accuracy", committee, tmp_path)
    assert result.details["committee_reviewers"] == 4
    assert result.signature.as_dict()["committee"] == "every review but the held-out one"
    human = item_from_document(document, candidate=document["held_out"]["text"])
    error = _score("rating_error", human, tmp_path)
    assert error.value == pytest.approx(abs(ratings[held_out] - sum(others) / 4))
    assert "the mean of the other 4 reviewers" in error.explanation
    # the human row's accuracy rests on no committee, but is ranked beside the committee's: one
    # signature for both (the board would otherwise put the committee row in a group alone)
    plain = _score("decision_accuracy", human, tmp_path)
    assert plain.signature.as_dict() == result.signature.as_dict()
    assert "committee_reviewers" not in plain.details


def test_corpus_numbers_by_hand():
    # Wilson, 8 of 10: (p + z²/2n ± z sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    z, n, p = 1.959963984540054, 10, 0.8
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    values = [1.0] * 8 + [0.0] * 2 + [math.nan]  # an unscored paper is left out
    assert proportion_interval(values, level=0.95) == pytest.approx((centre - half, centre + half))
    # a rate of 0 or 1 (always reject: FPR 0 of n, FNR n of n) keeps an interval inside [0, 1]
    # that is not a point: at 0 of 40, [0, z²/(n + z²)]
    z90 = 1.6448536269514722
    low, high = proportion_interval([0.0] * 40)
    assert low == pytest.approx(0.0, abs=1e-12) and high == pytest.approx(z90**2 / (40 + z90**2))
    low, high = proportion_interval([1.0] * 40)
    assert 0 < low < 1 and high == pytest.approx(1.0)
    assert all(math.isnan(v) for v in proportion_interval([]))
    with pytest.raises(ValueError, match="0/1 values"):
        proportion_interval([0.5, 1.0])
    # AUC: of the 2 x 2 (positive, negative) pairs, 3 ordered right and one tie -> 3.5 / 4
    assert auc([3, 2, 2, 1], [True, True, False, False]) == pytest.approx(0.875)
    assert math.isnan(auc([1, 2], [True, True]))
    # the same as scipy's Mann-Whitney U over n₁n₀ on random ratings with many ties
    from scipy import stats

    rng = np.random.default_rng(3)
    for _ in range(20):
        ratings, accepted = rng.integers(1, 6, 40).astype(float), rng.random(40) < 0.3
        u = stats.mannwhitneyu(ratings[accepted], ratings[~accepted]).statistic
        assert auc(ratings, accepted) == pytest.approx(u / (accepted.sum() * (~accepted).sum()))
    rows = [{"rating": r, "accept": a} for r, a in ((3, True), (2, True), (2, False), (1, False))]
    unscored = {"rating": None, "accept": True}  # no stated rating: not a row of the AUC
    assert RATING_AUC.value([*rows, unscored]) == pytest.approx(0.875)
    low, high = RATING_AUC.interval(rows * 10)
    assert low <= 0.875 <= high
    # stratified by outcome: every resample keeps both classes, so the AUC is always defined
    assert math.isfinite(low) and math.isfinite(high)
    # balanced accuracy: TPR 1/2, TNR 2/2 -> 0.75
    assert balanced_accuracy([True, False, False, False], [True, True, False, False]) == 0.75
    decided = [
        {"predicted_accept": p, "accept": t}
        for p, t in ((True, True), (False, True), (False, False), (False, False))
    ]
    assert BALANCED_ACCURACY.value(decided) == 0.75
    # always reject: TPR 0, TNR 1 -> 0.5 in every resample, so the interval is a point
    rejecting = [{"predicted_accept": False, "accept": t} for t in (True, False) * 6]
    assert BALANCED_ACCURACY.value(rejecting) == 0.5
    assert BALANCED_ACCURACY.interval(rejecting) == (0.5, 0.5)


# -- through inspect eval and the leaderboard ------------------------------------------------


def _records(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "records.jsonl", decided_papers(6))


def _scripted_reviewer():
    scripted_model("verdict_scripted", accepting_reviewer)


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
        assert sample.output.completion == "The method is sound."  # the review stays the answer
        assert sample.metadata["verdict_reply"] == "Rating: 8\nDecision: Accept"
        assert [m.role for m in sample.messages][-2:] == ["user", "assistant"]
        accepted = sample.metadata["decision"]["accept"]
        assert sample.scores["decision_accuracy"].value == (1.0 if accepted else 0.0)
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert metrics["decision_accuracy"]["mean"].value == pytest.approx(0.5)
    assert metrics["decision_fpr"]["mean"].value == pytest.approx(1.0)  # accepts every paper
    # a rate's interval in Inspect's summary is Wilson's 90% interval, inside [0, 1]
    low = metrics["decision_accuracy"]["ci90_lower"].value
    assert low == pytest.approx(proportion_interval([1.0] * 3 + [0.0] * 3)[0])
    fpr = metrics["decision_fpr"]
    assert 0 < fpr["ci90_lower"].value < 1 and fpr["ci90_upper"].value == pytest.approx(1.0)


@pytest.mark.slow
def test_baseline_rows_need_no_model_and_only_take_decision_metrics(tmp_path):
    from inspect_ai import eval as inspect_eval
    from inspect_ai.analysis import evals_df

    from gem_tasks.analysis.leaderboard.compare import compare_logs
    from gem_tasks.tasks.iclr import iclr

    dataset = str(_records(tmp_path))
    with pytest.raises(ValueError, match="only the decision metrics apply; gem score"):
        iclr(dataset=dataset, candidate="baseline:committee", scorers="gem,decision_accuracy")
    with pytest.raises(ValueError, match="baseline:<rule>"):
        iclr(dataset=dataset, candidate="baseline:coin")
    with pytest.raises(ValueError, match="no paper of the dataset lists them"):
        iclr(dataset=dataset, candidate="baseline:committee_all_reviewers", scorers="rating_error")
    logs = tmp_path / "logs"
    scorers = "decision_balanced_accuracy,decision_accuracy,decision_auc"
    # the reviews' ratings as the paper-level list too (all of them: 8, 6, 8 or 3, 3, 6)
    listed = [
        {**paper, "official_ratings": [r["rating"] for r in paper["reviews"]]}
        for paper in decided_papers(6)
    ]
    all_reviewers = str(write_jsonl(tmp_path / "listed.jsonl", listed))
    [log] = inspect_eval(
        iclr(dataset=all_reviewers, candidate="baseline:committee_all_reviewers", scorers=scorers),
        model="none",
        log_dir=str(logs / "committee_all_reviewers"),
        display="none",
    )
    assert log.status == "success", log.error
    for candidate in ("baseline:committee", "baseline:always_reject", "human"):
        [log] = inspect_eval(
            iclr(dataset=dataset, candidate=candidate, scorers=scorers),
            model="none",
            log_dir=str(logs / candidate.replace(":", "_")),
            display="none",
        )
        assert log.status == "success", log.error
        if candidate == "baseline:always_reject":
            rejecting = log
    # the summary Inspect prints shows each scorer's headline first, under its own name: the
    # rule's balanced accuracy is 0.5 (its accuracy, the mean of the per-paper 1/0, is 0.5 too on
    # these balanced papers, so the corpus number is told apart by its name and its interval)
    summary = {s.name: list(s.metrics.items()) for s in rejecting.results.scores}
    first, value = summary["decision_balanced_accuracy"][0]
    assert (first, value.value) == ("balanced_accuracy", 0.5)
    names = [name for name, _ in summary["decision_balanced_accuracy"]]
    assert names[:3] == [
        "balanced_accuracy",
        "balanced_accuracy_ci95_lower",
        "balanced_accuracy_ci95_upper",
    ]
    assert "mean" not in names  # its per-paper mean is decision_accuracy's number
    assert summary["decision_accuracy"][0][0] == "mean"
    # the rule states no rating: the AUC has no paper; the committee's stated mean is a diagnostic
    committee = read_first_log(logs / "baseline_committee")
    auc_metrics = {s.name: s.metrics for s in committee.results.scores}["decision_auc"]
    assert list(auc_metrics)[0] == "auc" and auc_metrics["auc"].value == 1.0
    assert "mean_stated_rating" in auc_metrics and "mean" not in auc_metrics
    # evals_df reads the same headline: the first scorer's first metric
    frame = evals_df(str(logs / "baseline_always_reject"), quiet=True)
    row = frame.iloc[0]
    assert (row["score_headline_name"], row["score_headline_metric"]) == (
        "decision_balanced_accuracy",
        "balanced_accuracy",
    )
    assert row["score_headline_value"] == 0.5
    board = compare_logs([logs], progress=False)
    accuracy = board.table[board.table["metric"] == "decision_accuracy"].set_index("model")
    # committee: mean of the two reference ratings >= 6 decides; the references of an accepted
    # paper are two of (8, 6, 8), of a rejected one two of (3, 3, 6): always right
    assert accuracy.loc["baseline:committee", "mean"] == 1.0
    assert accuracy.loc["baseline:always_reject", "mean"] == 0.5
    # every reviewer's mean: 22/3 for an accepted paper, 4 for a rejected one: always right
    assert accuracy.loc["baseline:committee_all_reviewers", "mean"] == 1.0
    aucs = board.table[board.table["metric"] == "decision_auc"].set_index("model")
    assert aucs.loc["baseline:committee", "value"] == 1.0
    assert aucs.loc["baseline:committee", "headline"] == "auc"
    assert (
        "baseline:always_reject" not in aucs.index
        or aucs.loc["baseline:always_reject", "scored"] == 0
    )
    balanced = board.table[board.table["metric"] == "decision_balanced_accuracy"]
    balanced = balanced.set_index("model")
    assert balanced.loc["baseline:always_reject", "value"] == 0.5
    assert balanced.loc["baseline:committee", "value"] == 1.0
    assert balanced.loc["baseline:committee", "rank"] == 1
    # the leaderboard's corpus numbers are those Inspect printed (recomputed from the samples)
    assert not [n for n in board.notes if "its log reports" in n]
    auc_table = board.table[board.table["metric"] == "decision_auc"].set_index("model")
    assert auc_table.loc["baseline:committee", "value"] == auc_metrics["auc"].value


def read_first_log(folder: Path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    [info] = list_eval_logs(str(folder))
    return read_eval_log(info.name, header_only=True)
