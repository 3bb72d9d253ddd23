"""Statistics on per-item scores (numpy/scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "ONE_PAIR_DECIDES",
    "finite",
    "largest_difference_share",
    "one_pair_decides",
    "mean_confidence_interval",
    "mean_difference",
    "paired_t_test",
    "pearson",
    "pearson_confidence_interval",
    "preference_agreement",
    "signed_rank_method",
    "signed_rank_test",
    "smd",
    "smd_confidence_interval",
    "smd_paired_confidence_interval",
    "spearman",
    "standard_error",
]


def finite(values: Sequence[float]) -> np.ndarray:
    """The finite values as a float array (NaN marks an unscored item and is left out)."""
    array = np.asarray(values, dtype=float)
    return array[np.isfinite(array)]


def standard_error(values: Sequence[float]) -> float:
    """Sample standard deviation (ddof=1) over sqrt(n); NaN for fewer than two values."""
    array = finite(values)
    if array.size < 2:
        return math.nan
    return float(array.std(ddof=1) / math.sqrt(array.size))


def mean_confidence_interval(values: Sequence[float], level: float = 0.90) -> tuple[float, float]:
    """Student-t confidence interval of the mean at ``level``; NaNs for fewer than 2 values."""
    array = finite(values)
    if array.size < 2:
        return (math.nan, math.nan)
    half = stats.t.ppf(0.5 + level / 2, df=array.size - 1) * standard_error(array)
    centre = float(array.mean())
    return (centre - half, centre + half)


def proportion_interval(values: Sequence[float], level: float = 0.90) -> tuple[float, float]:
    """Wilson score interval at ``level`` of the share of 1s among 0/1 ``values`` (NaNs left
    out): always inside [0, 1], and not degenerate at 0 or n successes (where a Student-t
    interval collapses to a point or leaves the range). NaNs when no value is left; a value other
    than 0 or 1 is a ``ValueError``."""
    array = finite(values)
    if array.size == 0:
        return (math.nan, math.nan)
    if not np.isin(array, (0.0, 1.0)).all():
        raise ValueError("a proportion's interval needs 0/1 values")
    successes = int(array.sum())
    ci = stats.binomtest(successes, int(array.size)).proportion_ci(
        confidence_level=level, method="wilson"
    )
    return (float(ci.low), float(ci.high))


def _paired(before: Sequence[float], after: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Pairs where both values are finite (an unscored side drops its pair)."""
    a, b, _ = _clustered(before, after, None)
    return a, b


Units = Sequence[object] | None
"""The independent unit of each pair (a paper, a question, an article, a hotel), or None: each
pair its own unit. Items of one unit are scored on one input and are not independent: a paired
interval or test then counts the units, not the items."""


def _clustered(
    before: Sequence[float], after: Sequence[float], units: Units
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs where both values are finite and the index of each one's unit (0..J-1, in order
    of first appearance); ``units=None`` gives each pair its own unit."""
    a = np.asarray(before, dtype=float)
    b = np.asarray(after, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired samples differ in length: {a.size} vs {b.size}")
    keep = np.isfinite(a) & np.isfinite(b)
    if units is None:
        return a[keep], b[keep], np.arange(int(keep.sum()))
    labels = list(units)
    if len(labels) != a.size:
        raise ValueError(f"{len(labels)} units for {a.size} pairs")
    index: dict[object, int] = {}
    groups = np.array(
        [index.setdefault(unit, len(index)) for unit, kept in zip(labels, keep) if kept],
        dtype=int,
    )
    return a[keep], b[keep], groups


def _unit_residuals(differences: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per unit, the sum of its pairs' deviations from the mean difference over all pairs:
    ``r_j = Σ_{i in j} (δ_i − δ̄)`` (one pair per unit: the pair's own deviation)."""
    return np.bincount(groups, weights=differences - differences.mean())


def _clustered_standard_error(differences: np.ndarray, groups: np.ndarray) -> float:
    """Standard error of the mean difference δ̄ over n pairs in J units, from the units'
    residuals: ``sqrt(J/(J−1) · Σ_j r_j²) / n`` (the cluster-robust "CR1" standard error; one
    pair per unit gives ``sd(δ)/√n``, the paired t-test's). NaN for fewer than two units."""
    units = int(groups.max()) + 1 if groups.size else 0
    if units < 2:
        return math.nan
    residuals = _unit_residuals(differences, groups)
    return math.sqrt(units / (units - 1) * float((residuals**2).sum())) / differences.size


def smd(before: Sequence[float], after: Sequence[float]) -> float:
    """Standardised mean difference d = (μ' − μ) / sqrt((σ² + σ'²) / 2) (GEM paper §4.2, Cohen's
    d with sample standard deviations); NaN with fewer than two pairs or zero spread."""
    a, b = _paired(before, after)
    if a.size < 2:
        return math.nan
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    return float((b.mean() - a.mean()) / pooled) if pooled > 0 else math.nan


def smd_confidence_interval(
    before: Sequence[float], after: Sequence[float], level: float = 0.95, units: Units = None
) -> tuple[float, float]:
    """Normal-approximation interval of d with the large-sample standard error of Cohen's d for
    two groups of n: SE = sqrt(2/n + d² / (4n)) (Hedges & Olkin, 1985). With ``units``, n is the
    number of units: pairs of one unit are not independent, and J units of m pairs each hold at
    least the information of J independent pairs (the design effect 1 + (m − 1)ρ is at most m),
    so the interval errs wide, never narrow."""
    a, _, groups = _clustered(before, after, units)
    d = smd(before, after)
    if not math.isfinite(d):
        return (math.nan, math.nan)
    n = int(groups.max()) + 1
    se = math.sqrt(2 / n + d**2 / (4 * n))
    z = float(stats.norm.ppf(0.5 + level / 2))
    return (d - z * se, d + z * se)


def smd_paired_confidence_interval(
    before: Sequence[float], after: Sequence[float], level: float = 0.95, units: Units = None
) -> tuple[float, float]:
    """The papers' SMD interval (GEM paper App. A.1, E; Scoring Rules paper App. E): the
    Student-t interval of the mean paired difference, divided by the pooled standard deviation,
    ``(mean(b − a) ± t_{n−1} · sd(b − a) / √n) / sqrt((σ_a² + σ_b²) / 2)``. It is the interval of
    the paired mean change in units of σ_pooled, far narrower than the two-sample interval of d
    when before and after are correlated. With ``units`` the standard error is the units'
    (:func:`_clustered_standard_error`) on J − 1 degrees of freedom, while the centre and σ_pooled
    stay those of the pairs, as in :func:`smd`; one pair per unit gives the papers' interval.
    NaNs with fewer than two units or zero spread."""
    a, b, groups = _clustered(before, after, units)
    if a.size < 2:
        return (math.nan, math.nan)
    pooled = math.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    differences = b - a
    se = _clustered_standard_error(differences, groups)
    if pooled == 0 or not math.isfinite(se):
        return (math.nan, math.nan)
    half = float(stats.t.ppf(0.5 + level / 2, df=int(groups.max()))) * se
    centre = float(differences.mean())
    return ((centre - half) / pooled, (centre + half) / pooled)


def mean_difference(before: Sequence[float], after: Sequence[float]) -> float:
    """Mean of the paired differences after − before."""
    a, b = _paired(before, after)
    return float((b - a).mean()) if a.size else math.nan


def paired_t_test(
    before: Sequence[float], after: Sequence[float], alternative: str, units: Units = None
) -> tuple[float, float]:
    """One-sided paired t-test on after − before: ``alternative="less"`` tests a decrease,
    ``"greater"`` an increase. With ``units``, t is the mean difference over the units' standard
    error (:func:`_clustered_standard_error`) on J − 1 degrees of freedom, the test
    :func:`smd_paired_confidence_interval` inverts; one pair per unit is scipy's ``ttest_rel``.
    Returns (t, p); NaNs with fewer than two units or no spread of the differences."""
    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(
            f"alternative must be 'less', 'greater' or 'two-sided', got {alternative!r}"
        )
    a, b, groups = _clustered(before, after, units)
    if a.size < 2 or np.all(b - a == (b - a)[0]):
        return (math.nan, math.nan)
    differences = b - a
    se = _clustered_standard_error(differences, groups)
    if not (math.isfinite(se) and se > 0):
        return (math.nan, math.nan)
    t = float(differences.mean()) / se
    df = int(groups.max())
    if alternative == "less":
        p = float(stats.t.cdf(t, df=df))
    elif alternative == "greater":
        p = float(stats.t.sf(t, df=df))
    else:
        p = float(2 * stats.t.sf(abs(t), df=df))
    return (t, p)


# One pair carries at least this share of the spread of the paired differences: the t-test then
# reads that pair, not the others (its t tends to ±1 as the pair grows, p ≈ 0.16 or 0.84 at n = 100,
# whatever the other pairs do).
ONE_PAIR_DECIDES = 0.5


def largest_difference_share(
    before: Sequence[float], after: Sequence[float], units: Units = None
) -> float:
    """The share of the spread of the paired differences d = after − before that the single
    most extreme pair carries: ``max_i (d_i − d̄)² / Σ_i (d_i − d̄)²``, in [1/n, 1 − 1/n]. With
    ``units``, the most extreme unit's share of the units' residuals ``r_j = Σ_{i in j} (d_i −
    d̄)``, whose squares make the standard error of :func:`paired_t_test`.

    Why: a heavy-tailed score (a density ratio exp(PMI) of tens of nats) can put one paper's
    difference orders of magnitude above the rest; the paired t statistic then tends to ±1 as that
    difference grows, whatever the other pairs do, so the test can neither pass nor fail on the
    evidence of the other papers. At or above :data:`ONE_PAIR_DECIDES` the report says so and
    shows :func:`signed_rank_test` beside the t-test. NaN with fewer than two units or when every
    difference is the same."""
    a, b, groups = _clustered(before, after, units)
    if a.size < 2 or int(groups.max()) < 1:
        return math.nan
    with np.errstate(over="ignore", invalid="ignore"):
        squares = _unit_residuals(b - a, groups) ** 2
        total = float(squares.sum())
    if not math.isfinite(total):
        return 1.0  # a difference so large its square overflows: it carries everything
    return float(squares.max() / total) if total > 0 else math.nan


def one_pair_decides(share: object) -> bool:
    """Whether a :func:`largest_difference_share` value reaches :data:`ONE_PAIR_DECIDES` (False
    for NaN or a missing value, as in logs written before the share was recorded)."""
    return isinstance(share, float) and math.isfinite(share) and share >= ONE_PAIR_DECIDES


def signed_rank_test(
    before: Sequence[float], after: Sequence[float], alternative: str, units: Units = None
) -> tuple[float, float]:
    """Wilcoxon signed-rank test on after − before (``scipy.stats.wilcoxon``; zero differences
    are left out, the "wilcox" convention): a rank test that one extreme pair cannot decide,
    shown beside the papers' t-test when one pair carries most of the spread. With ``units`` it
    ranks each unit's mean difference (a rank test needs independent differences).
    ``alternative`` as in :func:`paired_t_test`. Returns (W, p); NaNs with fewer than two
    non-zero differences."""
    if alternative not in ("less", "greater", "two-sided"):
        raise ValueError(
            f"alternative must be 'less', 'greater' or 'two-sided', got {alternative!r}"
        )
    a, b, groups = _clustered(before, after, units)
    if not groups.size:
        return (math.nan, math.nan)
    differences = np.bincount(groups, weights=b - a) / np.bincount(groups)
    if np.count_nonzero(differences) < 2:
        return (math.nan, math.nan)
    result = stats.wilcoxon(
        differences,
        zero_method="wilcox",
        alternative=alternative,
        method=signed_rank_method(differences),
    )
    return (float(result.statistic), float(result.pvalue))


def signed_rank_method(differences: Sequence[float]) -> str:
    """``exact`` for at most 50 non-zero differences without ties in their absolute values, else
    ``approx`` (the normal approximation with scipy's tie correction). scipy's ``auto`` turns to a
    9,999-resample permutation test when there are ties (0.2 s a call: minutes for a leaderboard's
    pairs), and its p-value is random."""
    nonzero = np.abs(np.asarray(differences, dtype=float))
    nonzero = nonzero[nonzero != 0]
    ties = np.unique(nonzero).size < nonzero.size
    return "exact" if nonzero.size <= 50 and not ties else "approx"


def spearman(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Spearman's rank correlation ρ and its two-sided p-value over pairs where both are finite."""
    a, b = _paired(x, y)
    if a.size < 3:
        return (math.nan, math.nan)
    result = stats.spearmanr(a, b)
    return (float(result.statistic), float(result.pvalue))


def pearson(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """Pearson's r and its two-sided p-value (``scipy.stats.pearsonr``, exact under
    bivariate normality) over the pairs where both values are finite.

    Raises:
        ValueError: the inputs differ in length, fewer than 3 pairs are finite, or either side
            is constant over them (r is undefined: never returned as NaN).
    """
    a, b = _paired(x, y)
    if a.size < 3:
        raise ValueError(f"Pearson's r needs at least 3 pairs with both values, got {a.size}")
    for side, values in (("x", a), ("y", b)):
        if np.ptp(values) == 0:
            raise ValueError(
                f"Pearson's r is undefined: {side} is constant ({values[0]:g}) over the "
                f"{a.size} pairs"
            )
    result = stats.pearsonr(a, b)
    return (float(result.statistic), float(result.pvalue))


def pearson_confidence_interval(r: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Fisher-z confidence interval of a Pearson correlation ``r`` over ``n`` pairs:
    ``tanh(atanh(r) ± z_{(1+level)/2} / sqrt(n − 3))``. ``|r| = 1`` gives ``(r, r)``.

    Raises:
        ValueError: ``n < 4`` (the standard error 1/sqrt(n − 3) needs n > 3), ``r`` outside
            [−1, 1] or not finite, or ``level`` outside (0, 1).
    """
    return _fisher_interval(r, n, level, variance=1.0)


def _fisher_interval(r: float, n: int, level: float, *, variance: float) -> tuple[float, float]:
    """``tanh(atanh(r) ± z_{(1+level)/2} sqrt(variance / (n − 3)))``; ``|r| = 1`` gives (r, r)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    if not (math.isfinite(r) and -1 <= r <= 1):
        raise ValueError(f"a correlation must be in [-1, 1], got {r}")
    if n < 4:
        raise ValueError(f"the Fisher-z interval needs at least 4 pairs, got {n}")
    if abs(r) == 1:
        return (float(r), float(r))
    half = float(stats.norm.ppf(0.5 + level / 2)) * math.sqrt(variance / (n - 3))
    z = math.atanh(r)
    return (math.tanh(z - half), math.tanh(z + half))


def spearman_confidence_interval(rho: float, n: int, level: float = 0.95) -> tuple[float, float]:
    """Confidence interval of Spearman's ``rho`` over ``n`` pairs by Fisher's z with the
    Fieller, Hartley & Pearson (1957) variance ``1.06 / (n − 3)``:
    ``tanh(atanh(rho) ± z_{(1+level)/2} sqrt(1.06 / (n − 3)))``. ``|rho| = 1`` gives
    ``(rho, rho)``.

    Raises:
        ValueError: as :func:`pearson_confidence_interval` (``n < 4``, ``rho`` not a
            correlation, ``level`` outside (0, 1)).
    """
    return _fisher_interval(rho, n, level, variance=1.06)


# -- paired model-vs-model comparisons (leaderboard) ---------------------------------------------

__all__ += ["PairedComparison", "holm_adjust", "paired_comparison"]


@dataclass(frozen=True)
class PairedComparison:
    """Mean of the paired differences x − y with its Student-t confidence interval and the
    two-sided paired t-test, over the ``n`` pairs where both values are finite."""

    n: int
    mean_difference: float
    ci_lower: float
    ci_upper: float
    t: float
    p: float


def paired_comparison(
    x: Sequence[float], y: Sequence[float], level: float = 0.90
) -> PairedComparison:
    """Compare x with y item by item (x[i] and y[i] scored on the same item): the mean of
    x − y, its Student-t interval at ``level`` and the two-sided paired t-test p-value. Pairs
    with a NaN on either side are left out. Fewer than two pairs give NaN interval, t and p; a
    constant difference gives a zero-width interval and NaN t and p."""
    a, b = _paired(x, y)
    differences = a - b
    mean = float(differences.mean()) if differences.size else math.nan
    lower, upper = mean_confidence_interval(differences, level=level)
    t, p = paired_t_test(b, a, alternative="two-sided")
    return PairedComparison(int(differences.size), mean, lower, upper, t, p)


def holm_adjust(pvalues: Sequence[float]) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1), in the input order;
    NaN p-values stay NaN and do not count as tests."""
    p = np.asarray(pvalues, dtype=float)
    adjusted = np.full(p.shape, math.nan)
    keep = np.flatnonzero(np.isfinite(p))
    m = keep.size
    if m == 0:
        return adjusted
    order = keep[np.argsort(p[keep], kind="stable")]
    running = 0.0
    for i, index in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[index]))
        adjusted[index] = running
    return adjusted


def preference_agreement(pairs: Sequence[tuple[float, float]]) -> float:
    """The share of annotated pairs whose metric scores order them as the human did: each pair
    is (score of the answer the human preferred, score of the other), counting 1 when the
    preferred one scores higher, 1/2 for a tie, 0 otherwise (higher must mean better: negate a
    lower-is-better metric first); NaN for no pair."""
    if not pairs:
        return math.nan
    agree = [1.0 if a > b else 0.5 if a == b else 0.0 for a, b in pairs]
    return float(sum(agree) / len(agree))
