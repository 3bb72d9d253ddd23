"""Statistics on per-item scores (numpy/scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

__all__ = ["finite", "mean_confidence_interval", "standard_error"]


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
