"""The leaderboard's result type, shared by the modules that build, render, plot and correlate
it (so none of them imports another for it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

__all__ = ["Leaderboard"]


@dataclass
class Leaderboard:
    """Everything the comparison found.

    ``table``: one row per metric, signature group and model (``papers`` seen, ``scored``,
    ``unscored``, ``errored``; the metric's ``headline`` and ``headline_kind``, per-item mean or
    corpus statistic; ``value``, the headline's number, with its interval at ``level``:
    Student-t for a mean, a bootstrap over papers stratified as the statistic asks for a corpus
    statistic; ``mean`` and ``stderr`` of the per-item values, the headline itself or a
    diagnostic; ``rank`` by ``value`` within the group (1 = best; the human baseline is ranked
    too); ``better_than``: the models it beats with two-sided paired p < 1 − level). ``pairs``:
    every two models of a group on the papers both scored (``test``: a paired t-test of the
    per-item values for a mean, a paired bootstrap of the statistic for a corpus statistic).
    ``groups``: the signature of each group. ``differences``: per metric, the fields in which
    its groups' signatures differ. ``consistency``: Spearman's ρ between groups.
    """

    table: pd.DataFrame
    pairs: pd.DataFrame
    groups: pd.DataFrame
    differences: pd.DataFrame
    consistency: pd.DataFrame
    scores: pd.DataFrame
    level: float = 0.90
    merged: bool = False
    notes: list[str] = field(default_factory=list)
