"""Statistics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from scorers.statistics import mean_confidence_interval, standard_error


def test_standard_error_by_hand():
    # values 1..4: mean 2.5, sample sd sqrt(5/3) = 1.2909944, se = 0.6454972
    assert standard_error([1, 2, 3, 4]) == pytest.approx(0.6454972, abs=1e-7)


def test_ci90_by_hand():
    # t_{0.95, 3} = 2.3533634348 (tables); half width = 2.3533634348 * 0.6454972244 = 1.5190896
    low, high = mean_confidence_interval([1, 2, 3, 4], level=0.90)
    assert low == pytest.approx(2.5 - 1.5190896, abs=1e-6)
    assert high == pytest.approx(2.5 + 1.5190896, abs=1e-6)


def test_nan_marks_unscored_and_is_left_out():
    assert standard_error([1, 2, 3, 4, math.nan]) == pytest.approx(0.6454972, abs=1e-7)
    assert all(math.isnan(v) for v in mean_confidence_interval([1.0]))
