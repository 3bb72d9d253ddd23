"""Numbers that exist only over a corpus: a metric's headline when it is not a mean of per-item
values (balanced accuracy, a ROC AUC, a KL divergence of pooled counts, a rank correlation), with
its bootstrap interval and the paired bootstrap that compares two rows on the items both scored.

A metric's per-item values are what Inspect averages; some of the numbers the papers report are
not such averages. Balanced accuracy is the mean of two class rates, an AUC ranks every positive
against every negative, Beyond Rating's focus KL pools category counts before dividing. Averaging
their per-item values gives another number (accuracy, the mean stated rating, the mean of
one-paper KLs), so a metric whose headline is one of these declares it
(:attr:`scorers.registry.MetricSpec.headline`) and every harness reports and ranks that number
instead of the mean.

A :class:`CorpusStatistic` reads each scored item's result metadata
(:meth:`scorers.types.Result.metadata`) into a row of numbers and computes its value from the
rows. Uncertainty comes from resampling items (papers) with replacement, ``BOOTSTRAP_RESAMPLES``
times with a fixed seed:

- :func:`bootstrap_interval`: the percentile interval of the statistic; with ``strata``, items are
  drawn within each stratum (accepted and rejected papers for a decision statistic), so every
  resample keeps the corpus's class sizes and the statistic stays defined;
- :func:`paired_bootstrap`: two rows (two models) on the items both scored, the same items drawn
  for both in each resample; the difference of their statistics, its percentile interval, and a
  two-sided p-value ``min(1, 2 · min(#{d* ≤ 0} + 1, #{d* ≥ 0} + 1) / (B + 1))``, the share of
  resampled differences on the other side of zero (Efron & Tibshirani 1993, §16; the +1 keeps a
  p-value from being 0 with finitely many resamples).

Several rows may belong to one item (epochs of one sample): the item is drawn as a whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "CorpusStatistic",
    "PairedBootstrap",
    "bootstrap_interval",
    "paired_bootstrap",
]

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0

Statistic = Callable[[np.ndarray], float]


@dataclass(frozen=True)
class CorpusStatistic:
    """A number over a corpus of scored items (a metric's headline when it is not a mean).

    ``read(metadata)`` turns one scored item's result metadata into its row of numbers (None
    when the item has nothing the statistic can use); ``compute(rows)`` gives the statistic of an
    ``(items, numbers)`` array (NaN where it is undefined, e.g. one class only). ``fields`` are
    the metadata keys ``read`` uses (what a harness keeps per item to recompute the number).
    ``strata`` is the column whose values are the bootstrap's strata (None: plain resampling).
    ``item_mean`` names the mean of the per-item values when a harness reports it as a
    diagnostic beside the headline (None: not reported, e.g. because another metric is that
    mean). ``display`` is how tables name the statistic.
    """

    name: str
    read: Callable[[Mapping[str, Any]], Sequence[float] | None]
    compute: Statistic
    fields: tuple[str, ...]
    display: str
    strata: int | None = None
    item_mean: str | None = None
    description: str = ""

    def rows(self, items: Sequence[Mapping[str, Any]]) -> np.ndarray:
        """The rows of the items that have one (an ``(n, k)`` float array)."""
        read = [self.read(item) for item in items]
        kept = [tuple(map(float, r)) for r in read if r is not None]
        if not kept:
            return np.empty((0, 0))
        widths = {len(r) for r in kept}
        if len(widths) != 1:
            raise ValueError(f"{self.name}: items give rows of different lengths {sorted(widths)}")
        return np.asarray(kept, dtype=float)

    def value(self, items: Sequence[Mapping[str, Any]]) -> float:
        """The statistic over ``items`` (result metadata of scored items); NaN for none."""
        rows = self.rows(items)
        return self.compute(rows) if rows.size else math.nan

    def strata_of(self, rows: np.ndarray) -> np.ndarray | None:
        """Each row's stratum (None when the statistic resamples without strata)."""
        if self.strata is None or not rows.size:
            return None
        return rows[:, self.strata]

    def interval(
        self, items: Sequence[Mapping[str, Any]], *, level: float = 0.95
    ) -> tuple[float, float]:
        """The bootstrap percentile interval of :meth:`value` at ``level`` (one item per row)."""
        rows = self.rows(items)
        if not rows.size:
            return math.nan, math.nan
        return bootstrap_interval(self.compute, rows, strata=self.strata_of(rows), level=level)


def _check_level(level: float) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")


def _clusters(n_rows: int, items: Sequence[Hashable] | None) -> tuple[np.ndarray, np.ndarray]:
    """The item index of each row and the list of distinct items (one item per row without
    ``items``)."""
    if items is None:
        return np.arange(n_rows), np.arange(n_rows)
    if len(items) != n_rows:
        raise ValueError(f"{len(items)} item labels for {n_rows} rows")
    order = list(dict.fromkeys(items))
    index = {item: i for i, item in enumerate(order)}
    return np.asarray([index[item] for item in items], dtype=int), np.arange(len(order))


def _item_strata(row_item: np.ndarray, n_items: int, strata: np.ndarray | None) -> list[np.ndarray]:
    """The items of each stratum (one stratum of every item without ``strata``); an item whose
    rows disagree on their stratum is an error."""
    if strata is None:
        return [np.arange(n_items)]
    of_item: dict[int, Any] = {}
    for item, stratum in zip(row_item.tolist(), np.asarray(strata).tolist()):
        if of_item.setdefault(item, stratum) != stratum:
            raise ValueError(f"the rows of one item are in different strata ({stratum!r})")
    labels = np.asarray([of_item[i] for i in range(n_items)])
    return [np.flatnonzero(labels == s) for s in dict.fromkeys(labels.tolist())]


def _draws(
    row_item: np.ndarray, groups: list[np.ndarray], n_items: int, resamples: int, seed: int
) -> list[np.ndarray]:
    """Per resample, how many times each item was drawn (items drawn within their stratum)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(resamples):
        counts = np.zeros(n_items, dtype=int)
        for group in groups:
            if group.size:
                np.add.at(counts, rng.choice(group, size=group.size, replace=True), 1)
        out.append(counts)
    return out


def _resampled(rows: np.ndarray, row_item: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The rows of a resample: each row repeated as often as its item was drawn."""
    return rows[np.repeat(np.arange(rows.shape[0]), counts[row_item])]


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if not finite.size:
        return math.nan, math.nan
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return float(low), float(high)


def bootstrap_interval(
    statistic: Statistic,
    rows: np.ndarray,
    *,
    strata: Sequence[Hashable] | np.ndarray | None = None,
    items: Sequence[Hashable] | None = None,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> tuple[float, float]:
    """The percentile interval at ``level`` of ``statistic(rows)`` over ``resamples`` bootstrap
    resamples of the items (``items``: each row's item, one item per row when None), drawn
    within each stratum of ``strata`` (each row's stratum; the rows of an item share it). A
    resample where the statistic is undefined (NaN) is left out; NaNs when every one is."""
    _check_level(level)
    rows = np.asarray(rows, dtype=float)
    if not rows.size:
        return math.nan, math.nan
    row_item, distinct = _clusters(rows.shape[0], items)
    groups = _item_strata(row_item, distinct.size, None if strata is None else np.asarray(strata))
    values = np.asarray(
        [
            statistic(_resampled(rows, row_item, counts))
            for counts in _draws(row_item, groups, distinct.size, resamples, seed)
        ],
        dtype=float,
    )
    return _percentiles(values, level)


@dataclass(frozen=True)
class PairedBootstrap:
    """Two rows compared on the items both scored: ``items`` shared, ``a`` and ``b`` their
    statistics on those items, ``difference`` = a − b with its percentile interval at the level
    asked, and the two-sided bootstrap ``p`` (NaN where no resample gave a difference)."""

    items: int
    a: float
    b: float
    difference: float
    ci_lower: float
    ci_upper: float
    p: float


def paired_bootstrap(
    statistic: Statistic,
    rows_a: np.ndarray,
    items_a: Sequence[Hashable],
    rows_b: np.ndarray,
    items_b: Sequence[Hashable],
    *,
    strata_a: Sequence[Hashable] | np.ndarray | None = None,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> PairedBootstrap:
    """Compare ``statistic`` of two rows (a model's and another's) on the items both have a row
    for: each resample draws those items with replacement (within the strata of ``strata_a``,
    A's stratum of each of its rows), recomputes both statistics on the drawn items and takes
    the difference A − B. Returns the observed difference on the shared items, its percentile
    interval at ``level`` and the two-sided p-value of no difference (module docstring)."""
    _check_level(level)
    rows_a = np.asarray(rows_a, dtype=float)
    rows_b = np.asarray(rows_b, dtype=float)
    if len(items_a) != len(rows_a) or len(items_b) != len(rows_b):
        raise ValueError("each row needs its item label")
    shared = [i for i in dict.fromkeys(items_a) if i in set(items_b)]
    if not shared:
        return PairedBootstrap(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    index = {item: k for k, item in enumerate(shared)}
    keep_a = [k for k, item in enumerate(items_a) if item in index]
    keep_b = [k for k, item in enumerate(items_b) if item in index]
    a, b = rows_a[keep_a], rows_b[keep_b]
    item_a = np.asarray([index[items_a[k]] for k in keep_a], dtype=int)
    item_b = np.asarray([index[items_b[k]] for k in keep_b], dtype=int)
    strata = None if strata_a is None else np.asarray(strata_a)[keep_a]
    groups = _item_strata(item_a, len(shared), strata)
    value_a, value_b = statistic(a), statistic(b)
    differences = np.asarray(
        [
            statistic(_resampled(a, item_a, counts)) - statistic(_resampled(b, item_b, counts))
            for counts in _draws(item_a, groups, len(shared), resamples, seed)
        ],
        dtype=float,
    )
    low, high = _percentiles(differences, level)
    finite = differences[np.isfinite(differences)]
    if finite.size:
        below = (np.count_nonzero(finite <= 0) + 1) / (finite.size + 1)
        above = (np.count_nonzero(finite >= 0) + 1) / (finite.size + 1)
        p = float(min(1.0, 2 * min(below, above)))
    else:
        p = math.nan
    return PairedBootstrap(len(shared), value_a, value_b, value_a - value_b, low, high, p)
