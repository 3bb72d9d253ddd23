"""Statistics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from scorers.validation.statistics import (
    ONE_PAIR_DECIDES,
    largest_difference_share,
    mean_confidence_interval,
    mean_difference,
    paired_t_test,
    pearson,
    pearson_confidence_interval,
    signed_rank_test,
    smd,
    smd_confidence_interval,
    smd_paired_confidence_interval,
    spearman,
    standard_error,
)


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


BEFORE = [3.0, 5.0, 4.0, 6.0, 2.0]
AFTER = [2.0, 3.0, 4.0, 3.0, 1.0]


def test_smd_by_hand():
    # means 4.0 and 2.6; sample variances 2.5 and 1.3; pooled sd sqrt(1.9) = 1.3784049
    assert smd(BEFORE, AFTER) == pytest.approx((2.6 - 4.0) / 1.3784049, abs=1e-6)


def test_smd_ci_by_hand():
    d = (2.6 - 4.0) / 1.3784049  # -1.0156667
    se = math.sqrt(2 / 5 + d**2 / 20)  # 0.6719962
    low, high = smd_confidence_interval(BEFORE, AFTER)
    assert low == pytest.approx(d - 1.959964 * se, abs=1e-5)
    assert high == pytest.approx(d + 1.959964 * se, abs=1e-5)


def test_paired_t_test_one_sided_matches_scipy_and_hand():
    # differences -1, -2, 0, -3, -1: mean -1.4, sd 1.1401754, t = -1.4 / (1.1401754 / sqrt 5)
    t, p = paired_t_test(BEFORE, AFTER, alternative="less")
    assert t == pytest.approx(-1.4 / (1.1401754 / math.sqrt(5)), abs=1e-6)
    assert p == pytest.approx(stats.t.cdf(t, df=4), abs=1e-12)
    assert p == pytest.approx(stats.ttest_rel(AFTER, BEFORE, alternative="less").pvalue)
    _, p_up = paired_t_test(BEFORE, AFTER, alternative="greater")
    assert p_up == pytest.approx(1 - p, abs=1e-12)
    with pytest.raises(ValueError, match="alternative"):
        paired_t_test(BEFORE, AFTER, alternative="down")


def test_unscored_pairs_are_dropped_together():
    assert mean_difference([1.0, math.nan, 3.0], [2.0, 5.0, 5.0]) == pytest.approx(1.5)
    with pytest.raises(ValueError, match="differ in length"):
        smd([1.0, 2.0], [1.0])


def test_spearman_matches_scipy_and_hand():
    # ranks of y follow x except one swap: rho = 1 - 6*2/(5*24) = 0.9
    rho, p = spearman([1, 2, 3, 4, 5], [10, 20, 40, 30, 50])
    assert rho == pytest.approx(0.9)
    assert p == pytest.approx(stats.spearmanr([1, 2, 3, 4, 5], [10, 20, 40, 30, 50]).pvalue)
    assert all(math.isnan(v) for v in spearman([1, 2], [2, 1]))


def test_paired_smd_interval_by_hand():
    """The papers' interval: differences 1, .5, 1.5, 1 (mean 1, sd sqrt(1/6) = 0.4082483,
    se 0.2041241); t_{0.975, 3} = 3.1824463 (tables): half width 0.6496141; sigma_pooled =
    sqrt((5/3 + 13/6) / 2) = 1.3844373."""
    low, high = smd_paired_confidence_interval([1, 2, 3, 4], [2, 2.5, 4.5, 5], level=0.95)
    assert low == pytest.approx((1 - 0.6496141) / 1.3844373, abs=1e-6)
    assert high == pytest.approx((1 + 0.6496141) / 1.3844373, abs=1e-6)
    # narrower than the two-sample interval of d for correlated pairs
    two_low, two_high = smd_confidence_interval([1, 2, 3, 4], [2, 2.5, 4.5, 5])
    assert high - low < two_high - two_low
    assert all(math.isnan(v) for v in smd_paired_confidence_interval([1.0], [2.0]))


def test_pearson_by_hand():
    """x = 1..5, y = 2, 4, 5, 4, 5: deviations (-2, -1, 0, 1, 2) and (-2, 0, 1, 0, 1),
    Σdxdy = 6, Σdx² = 10, Σdy² = 6: r = 6 / sqrt(60) = 0.7745967; t = r·sqrt(3 / (1 − r²)) =
    2.1213203 on 3 df, two-sided p = 0.1240271."""
    r, p = pearson([1, 2, 3, 4, 5], [2, 4, 5, 4, 5])
    assert r == pytest.approx(0.7745967, abs=1e-7)
    assert p == pytest.approx(0.1240271, abs=1e-6)
    assert p == pytest.approx(2 * stats.t.sf(r * math.sqrt(3 / (1 - r**2)), df=3), rel=1e-9)
    # an unscored pair (NaN on either side) is dropped
    assert pearson([1, 2, 3, math.nan, 4, 5], [2, 4, 5, 9, 4, 5]) == (r, p)
    r_neg, _ = pearson([1, 2, 3, 4, 5], [-2, -4, -5, -4, -5])
    assert r_neg == pytest.approx(-r)


def test_pearson_refuses_what_it_cannot_compute():
    with pytest.raises(ValueError, match="at least 3 pairs"):
        pearson([1.0, 2.0, math.nan], [1.0, 3.0, 2.0])
    with pytest.raises(ValueError, match="y is constant"):
        pearson([1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match="x is constant"):
        pearson([2, 2, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="differ in length"):
        pearson([1, 2, 3], [1, 2])


def test_pearson_fisher_interval_by_hand():
    """r = .5, n = 28: atanh(.5) = 0.5493061, SE = 1 / sqrt(25) = 0.2, z_.975 · SE = 0.3919928:
    tanh(0.1573133) = 0.1560283 and tanh(0.9412989) = 0.7358185."""
    low, high = pearson_confidence_interval(0.5, 28, level=0.95)
    assert low == pytest.approx(0.1560283, abs=1e-6)
    assert high == pytest.approx(0.7358185, abs=1e-6)
    low90, high90 = pearson_confidence_interval(0.5, 28, level=0.90)
    assert low < low90 < 0.5 < high90 < high
    assert pearson_confidence_interval(-1.0, 5) == (-1.0, -1.0)
    with pytest.raises(ValueError, match="at least 4 pairs"):
        pearson_confidence_interval(0.5, 3)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        pearson_confidence_interval(math.nan, 10)


def test_largest_difference_share_by_hand():
    # differences -1, -2, 0, -3, -1: mean -1.4, deviations 0.4, -0.6, 1.4, -1.6, 0.4,
    # squares 0.16, 0.36, 1.96, 2.56, 0.16 (sum 5.2): the largest carries 2.56 / 5.2
    assert largest_difference_share(BEFORE, AFTER) == pytest.approx(2.56 / 5.2)
    assert math.isnan(largest_difference_share([1.0], [2.0]))
    assert math.isnan(largest_difference_share([1.0, 2.0], [2.0, 3.0]))  # equal differences
    # a difference whose square overflows carries everything
    assert largest_difference_share([0.0, 0.0, 0.0], [1.0, 2.0, 1e300]) == 1.0


def test_one_extreme_pair_decides_the_t_test_but_not_the_signed_rank_test():
    """Every paper gains a little and one gains 1e30 (a density ratio of 69 nats): the t-test
    sees t = 1 exactly (p = 0.16 at n = 100: "not gamed"), the share flags it, and the rank test
    finds the increase every pair shows."""
    before = [0.0] * 100
    after = [0.01] * 99 + [1e30]
    t, p = paired_t_test(before, after, alternative="greater")
    assert t == pytest.approx(1.0) and p == pytest.approx(stats.t.sf(1.0, df=99))
    assert largest_difference_share(before, after) == pytest.approx(0.99)
    assert largest_difference_share(before, after) >= ONE_PAIR_DECIDES
    _, rank_p = signed_rank_test(before, after, alternative="greater")
    assert rank_p < 1e-20


def test_signed_rank_test_matches_scipy_and_hand():
    # differences -1, -2, 0, -3, -1: the zero is left out; |d| ranks 1.5, 3, 4, 1.5 all negative,
    # so W+ = 0 and the exact one-sided p for "less" is P(W+ <= 0) over 2^4 signs with ties
    w, p = signed_rank_test(BEFORE, AFTER, alternative="less")
    # ties (|−1| twice): the normal approximation, never scipy's random permutation test
    expected = stats.wilcoxon([-1, -2, -3, -1], alternative="less", method="approx")
    assert w == pytest.approx(expected.statistic) and w == 0.0
    assert p == pytest.approx(expected.pvalue)
    assert signed_rank_test(BEFORE, AFTER, alternative="greater")[1] > 0.9
    assert all(math.isnan(v) for v in signed_rank_test([1.0, 2.0], [1.0, 3.0], "less"))
    with pytest.raises(ValueError, match="alternative"):
        signed_rank_test(BEFORE, AFTER, alternative="up")


def test_spearman_interval_by_hand():
    """Fisher's z with the Fieller-Hartley-Pearson variance: rho 0.5 over 12 pairs at 95%."""
    import math

    from scorers.validation.statistics import spearman_confidence_interval

    half = 1.959963984540054 * math.sqrt(1.06 / 9)
    expected = (math.tanh(math.atanh(0.5) - half), math.tanh(math.atanh(0.5) + half))
    assert spearman_confidence_interval(0.5, 12) == pytest.approx(expected)
    assert spearman_confidence_interval(-1.0, 12) == (-1.0, -1.0)
    with pytest.raises(ValueError, match="at least 4 pairs"):
        spearman_confidence_interval(0.5, 3)


# three texts of unit a (differences -1, -2, -3) and one of unit b (-4)
CLUSTER_BEFORE = [5.0, 5.0, 5.0, 9.0]
CLUSTER_AFTER = [4.0, 3.0, 2.0, 5.0]
CLUSTER_UNITS = ["a", "a", "a", "b"]


def test_paired_statistics_take_their_standard_error_from_the_units():
    """Mean difference -2.5 over the texts; the units' residuals are (1.5 + .5 - .5) = 1.5 and
    -1.5, so SE = sqrt(J/(J-1) · Σ r²) / n = sqrt(2 · 4.5) / 4 = 0.75 and t = -10/3 on J - 1 = 1
    degree of freedom (a Cauchy: p = 1/2 - atan(10/3)/π = 0.0927736). σ_pooled is the texts':
    sqrt((4 + 5/3) / 2) = 1.6832508; t_{0.975, 1} = 12.7062047 (tables)."""
    args = (CLUSTER_BEFORE, CLUSTER_AFTER)
    t, p = paired_t_test(*args, "less", CLUSTER_UNITS)
    assert t == pytest.approx(-10 / 3)
    assert p == pytest.approx(0.0927736, abs=1e-7)
    _, two_sided = paired_t_test(*args, "two-sided", CLUSTER_UNITS)
    assert two_sided == pytest.approx(2 * p)
    assert smd(*args) == pytest.approx(-2.5 / 1.6832508, abs=1e-7)
    low, high = smd_paired_confidence_interval(*args, 0.95, CLUSTER_UNITS)
    assert low == pytest.approx((-2.5 - 12.7062047 * 0.75) / 1.6832508, abs=1e-6)
    assert high == pytest.approx((-2.5 + 12.7062047 * 0.75) / 1.6832508, abs=1e-6)
    assert largest_difference_share(*args, CLUSTER_UNITS) == pytest.approx(0.5)
    # the rank test ranks the units' mean differences, -2 and -4: P(W+ = 0) = 1/4
    assert signed_rank_test(*args, "less", CLUSTER_UNITS)[1] == pytest.approx(0.25)
    # two units: the two-sample interval of d has n = 2
    d = -2.5 / 1.6832508
    se = math.sqrt(2 / 2 + d**2 / 8)
    two_low, _ = smd_confidence_interval(*args, 0.95, CLUSTER_UNITS)
    assert two_low == pytest.approx(d - 1.959964 * se, abs=1e-5)
    # counted as four independent pairs the test would be far more certain
    assert paired_t_test(*args, "less")[1] == pytest.approx(
        stats.ttest_rel(CLUSTER_AFTER, CLUSTER_BEFORE, alternative="less").pvalue
    )
    assert paired_t_test(*args, "less")[1] < p / 5


def test_one_pair_per_unit_is_the_plain_paired_test():
    units = ["p1", "p2", "p3", "p4", "p5"]
    assert paired_t_test(BEFORE, AFTER, "less", units) == pytest.approx(
        paired_t_test(BEFORE, AFTER, "less")
    )
    assert smd_paired_confidence_interval(BEFORE, AFTER, 0.95, units) == pytest.approx(
        smd_paired_confidence_interval(BEFORE, AFTER, 0.95)
    )
    assert largest_difference_share(BEFORE, AFTER, units) == pytest.approx(
        largest_difference_share(BEFORE, AFTER)
    )
    assert signed_rank_test(BEFORE, AFTER, "less", units) == pytest.approx(
        signed_rank_test(BEFORE, AFTER, "less")
    )


def test_an_unscored_pair_leaves_its_unit_and_units_must_match_the_pairs():
    before = CLUSTER_BEFORE + [math.nan]
    after = CLUSTER_AFTER + [1.0]
    assert paired_t_test(before, after, "less", CLUSTER_UNITS + ["c"]) == pytest.approx(
        paired_t_test(CLUSTER_BEFORE, CLUSTER_AFTER, "less", CLUSTER_UNITS)
    )
    # one unit left: no test, no interval
    assert all(math.isnan(v) for v in paired_t_test([1, 2, 3], [0, 2, 1], "less", "aaa"))
    assert all(
        math.isnan(v) for v in smd_paired_confidence_interval([1, 2, 3], [0, 2, 1], 0.95, "aaa")
    )
    with pytest.raises(ValueError, match="3 units for 4 pairs"):
        paired_t_test(CLUSTER_BEFORE, CLUSTER_AFTER, "less", ["a", "a", "b"])


def test_the_paired_interval_excludes_zero_exactly_when_the_test_rejects():
    """The interval inverts the test: for many random clustered samples, 0 lies outside the
    95% paired interval if and only if the two-sided p is below 0.05."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        units = rng.integers(0, 6, size=15)
        before = rng.normal(size=15)
        after = before + rng.normal(loc=rng.normal(), size=15) + units * rng.normal()
        low, high = smd_paired_confidence_interval(before, after, 0.95, units.tolist())
        _, p = paired_t_test(before, after, "two-sided", units.tolist())
        assert (low > 0 or high < 0) == (p < 0.05)
