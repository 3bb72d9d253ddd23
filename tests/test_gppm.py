"""GPPM and GSPPM (scorers/metrics/gppm): TOKEN equals GEM's conditional term, JUDGMENT sums the
authors' line parser's scores, with the paper's worked examples."""

from __future__ import annotations

import pytest

from scorers import Item, Paper, Resources, Review, get_metric

ICLR_EXAMPLE = "\n\n".join(
    f"[{i}] The initial comments ... <SCORE={s}>"
    for i, s in enumerate([3, 2, 0, 2, 0, 3, 2, 0, 2], start=1)
)  # GPPM App. D.3 example output: sums to 14


class Scripted:
    identity = "scripted/oracle"

    def __init__(self, replies):
        self.replies = list(replies)
        self.users: list[str] = []

    async def generate(self, conversations, settings):
        self.users += [c[-1]["content"] for c in conversations]
        return [self.replies.pop(0) for _ in conversations]


def _item(candidate="The reviewer appreciates the proofs.", references=None):
    references = references or (
        Review("r1", "raw one", summary="The reviewer criticizes A.\nThe reviewer likes B."),
    )
    return Item(
        Paper("p", abstract="We study symmetric functions."),
        candidate,
        tuple(references),
        flags=frozenset({"candidate_is_judgments"}),
    )


def test_token_is_the_conditional_term_and_differs_from_gem_by_the_marginal(tiny_lm, tmp_path):
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    item = _item()
    gppm = get_metric("gppm_token", dataset_summaries=True).score(item, resources)
    [term] = gppm.terms
    assert gppm.value == pytest.approx(term["conditional"])
    assert gppm.value - gppm.details["pmi"] == pytest.approx(term["marginal"])
    assert gppm.signature.synopsis == "placeholder 'Not given'"
    other = get_metric("gppm_token", dataset_summaries=True, placeholder="Not Provided")
    changed = other.score(item, resources)
    assert changed.signature.id != gppm.signature.id and changed.value != gppm.value
    gsppm = get_metric("gsppm_token", dataset_summaries=True).score(item, resources)
    gem_s = get_metric("gem_s", dataset_summaries=True).score(item, resources)
    assert gsppm.details["pmi"] == gem_s.value
    assert gsppm.value == pytest.approx(gem_s.terms[0]["conditional"])


def test_judgment_sums_the_worked_example_and_counts_lines(tmp_path):
    oracle = Scripted([ICLR_EXAMPLE + "\nA closing remark without a score."])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert result.value == 14.0
    [term] = result.terms
    assert (term["scored_lines"], term["unscored_lines"], term["target_judgments"]) == (9, 1, 2)
    assert "[1] The reviewer criticizes A.\n[2] The reviewer likes B." in oracle.users[0]
    assert "Not Provided" in oracle.users[0]


def test_judgment_yelp_example_and_the_abstract_of_gsppm(tmp_path):
    oracle = Scripted(["[1] a <SCORE=0>\n[2] b <SCORE=3>\n[3] c <SCORE=-1>"])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gsppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert result.value == 2.0
    assert "We study symmetric functions." in oracle.users[0]


def test_judgment_of_an_empty_candidate_asks_nothing(tmp_path):
    oracle = Scripted([])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(_item("  "), resources)
    assert result.value == 0.0 and oracle.users == []
    assert result.details["flags"] == ["empty_candidate"]
    empty = _item(references=[Review("r1", " ")])
    unscored = get_metric("gppm_judgment").score(empty, resources)
    assert unscored.value is None and "empty reference text" in unscored.reason
