"""Corpus statistics (scorers.corpus): the bootstrap interval and the paired bootstrap on cases
whose answer is known by hand (constant statistics, constant differences, strata that fix a
count, items drawn whole), and a statistic's reading of result metadata."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorers.corpus import CorpusStatistic, bootstrap_interval, paired_bootstrap


def column_mean(rows: np.ndarray) -> float:
    return float(rows[:, 0].mean())


def test_a_statistic_that_every_resample_leaves_unchanged_has_a_point_interval():
    rows = np.array([[1.0], [2.0], [3.0], [4.0]])
    assert bootstrap_interval(lambda r: 7.0, rows) == (7.0, 7.0)


def test_strata_keep_each_class_size_in_every_resample():
    # the count of rows of stratum 1 is 3 in every stratified resample; unstratified it varies
    rows = np.array([[1.0], [1.0], [1.0], [0.0], [0.0]])

    def positives(r: np.ndarray) -> float:
        return float(r[:, 0].sum())

    assert bootstrap_interval(positives, rows, strata=rows[:, 0], level=0.99) == (3.0, 3.0)
    low, high = bootstrap_interval(positives, rows, level=0.99)
    assert low < 3.0 < high


def test_an_item_is_drawn_whole():
    # two equal rows per item resample exactly as one row per item (same draws, same means)
    single = np.array([[1.0], [2.0], [3.0], [10.0]])
    double = np.repeat(single, 2, axis=0)
    items = ["a", "a", "b", "b", "c", "c", "d", "d"]
    assert bootstrap_interval(column_mean, double, items=items) == bootstrap_interval(
        column_mean, single
    )


def test_an_item_in_two_strata_is_refused():
    rows = np.array([[1.0], [2.0]])
    with pytest.raises(ValueError, match="different strata"):
        bootstrap_interval(column_mean, rows, strata=[0, 1], items=["a", "a"])
    with pytest.raises(ValueError, match="level"):
        bootstrap_interval(column_mean, rows, level=1.5)


def test_undefined_resamples_are_left_out_and_an_empty_corpus_has_no_interval():
    assert all(math.isnan(v) for v in bootstrap_interval(column_mean, np.empty((0, 0))))
    assert all(math.isnan(v) for v in bootstrap_interval(lambda r: math.nan, np.ones((3, 1))))


def test_a_constant_difference_has_a_point_interval_and_the_smallest_p():
    a = np.array([[2.0], [3.0], [4.0]])
    b = a - 1.0  # A − B is 1 in every resample
    result = paired_bootstrap(column_mean, a, ["x", "y", "z"], b, ["x", "y", "z"], resamples=9)
    assert (result.items, result.difference) == (3, 1.0)
    assert (result.ci_lower, result.ci_upper) == (1.0, 1.0)
    assert result.p == pytest.approx(2 * 1 / 10)  # no resample at or below 0: 2 (0 + 1) / (9 + 1)


def test_no_difference_has_p_one_and_only_shared_items_count():
    a = np.array([[2.0], [3.0], [4.0], [100.0]])
    b = np.array([[2.0], [3.0], [4.0]])
    result = paired_bootstrap(column_mean, a, ["x", "y", "z", "only_a"], b, ["z", "y", "x"])
    assert result.items == 3
    assert (result.a, result.b, result.difference) == (3.0, 3.0, 0.0)
    assert result.p == 1.0
    none = paired_bootstrap(column_mean, a, ["p", "q", "r", "s"], b, ["x", "y", "z"])
    assert none.items == 0 and math.isnan(none.p)


def test_a_statistic_reads_what_it_needs_and_skips_items_without_it():
    share = CorpusStatistic(
        name="share",
        display="share",
        read=lambda m: None if m.get("flag") is None else (float(m["flag"]),),
        compute=lambda rows: float(rows[:, 0].mean()),
        fields=("flag",),
    )
    items = [{"flag": True}, {"flag": False}, {"flag": True}, {"other": 1}]
    assert share.value(items) == pytest.approx(2 / 3)
    assert math.isnan(share.value([{"other": 1}]))
    low, high = share.interval(items)
    assert 0 <= low <= 2 / 3 <= high <= 1
    assert share.interval(items) == (low, high)  # remembered, the same numbers
