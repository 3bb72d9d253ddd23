"""Leaderboard plots (GEM paper Fig. 5 style): each model's mean score with its confidence
interval, against its parameter count when known, the human baseline as a horizontal band."""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from gem_tasks.analysis.leaderboard.types import Leaderboard

__all__ = ["LeaderboardPlot", "PlottedPoint", "plot_group", "plot_leaderboard"]


@dataclass(frozen=True)
class PlottedPoint:
    """One model as drawn: x (parameters in billions, or its position), mean and CI ends."""

    model: str
    x: float
    mean: float
    lower: float
    upper: float


@dataclass(frozen=True)
class LeaderboardPlot:
    """A written figure and the data read back from its artists (not from the input table)."""

    path: Path
    metric: str
    group: str
    x_axis: str  # "params" or "models"
    points: list[PlottedPoint]
    human: tuple[float, float, float] | None  # mean, CI lower, CI upper
    missing_params: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def _draw_human(
    ax: Any, humans: pd.DataFrame, *, number: str, ci: str, level: float
) -> tuple[float, float, float] | None:
    """The human baseline (the first of ``humans``) as a dashed line at its value with its CI
    as a band; its (value, lower, upper), or None without one."""
    if humans.empty:
        return None
    h = humans.iloc[0]
    human = (float(h[number]), float(h[f"{ci}_lower"]), float(h[f"{ci}_upper"]))
    ax.axhline(human[0], color="tab:gray", linestyle="--", linewidth=1, label=h["model"])
    if math.isfinite(human[1]) and math.isfinite(human[2]):
        ax.axhspan(
            human[1],
            human[2],
            color="tab:gray",
            alpha=0.2,
            label=f"{h['model']}, {round(level * 100)}% CI",
        )
    return human


def _draw_models(
    ax: Any,
    models: pd.DataFrame,
    x: list[Any],
    *,
    number: str,
    ci: str,
    level: float,
    headline: str,
    annotate: bool,
) -> list[PlottedPoint]:
    """The models as points at ``x`` with their CI as error bars (named beside each point when
    ``annotate``); the points as drawn."""
    means = models[number].to_numpy(dtype=float)
    lower = models[f"{ci}_lower"].to_numpy(dtype=float)
    upper = models[f"{ci}_upper"].to_numpy(dtype=float)
    # an interval that could not be computed (one paper) is drawn without error bar
    below = [m - lo if math.isfinite(lo) else 0.0 for m, lo in zip(means, lower)]
    above = [hi - m if math.isfinite(hi) else 0.0 for m, hi in zip(means, upper)]
    container = ax.errorbar(
        x,
        means,
        yerr=[below, above],
        fmt="o",
        capsize=4,
        color="tab:blue",
        label=f"model, {headline} with {round(level * 100)}% CI",
    )
    line = container.lines[0]
    xs_drawn = [float(v) for v in line.get_xdata()]
    ys_drawn = [float(v) for v in line.get_ydata()]
    points = []
    for name, xv, yv, lo, hi in zip(models["model"], xs_drawn, ys_drawn, lower, upper):
        points.append(PlottedPoint(name, xv, yv, float(lo), float(hi)))
        if annotate:  # without params the tick labels name the models
            ax.annotate(name, (xv, yv), textcoords="offset points", xytext=(5, 5), fontsize=8)
    return points


def plot_group(
    rows: pd.DataFrame,
    path: str | Path,
    *,
    title: str,
    level: float = 0.90,
    params: Mapping[str, float] | None = None,
    ylabel: str = "score",
    headline: str = "mean",
) -> LeaderboardPlot:
    """Plot one metric and signature group (rows of a leaderboard table) to a PNG.

    Models are points at their headline value (``value``: the mean, or the corpus statistic
    ``headline`` names) with its CI as error bars: against parameters (billions, log axis) for
    the models ``params`` knows (the others are listed in ``missing_params``, not drawn), or in
    rank order without ``params``. The human baseline is a horizontal line at its mean with its
    CI as a band. Models without a finite mean are not drawn. The returned points are read from
    the drawn artists."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from gem_tasks.analysis.leaderboard.params import params_for

    ci = f"ci{round(level * 100)}"
    number = "value" if "value" in rows else "mean"  # the headline (a table before headlines)
    drawn = rows[rows[number].notna()]
    models = drawn[~drawn["is_human"]].sort_values("rank")
    humans = drawn[drawn["is_human"]]
    missing: list[str] = []
    if params is not None:
        xs = [params_for(m, params) for m in models["model"]]
        missing = [m for m, x in zip(models["model"], xs) if x is None]
        keep = [x is not None for x in xs]
        models = models[keep]
        x = [v for v in xs if v is not None]
    else:
        x = list(range(len(models)))

    fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(models) + 3), 4.8))
    try:
        human = _draw_human(ax, humans, number=number, ci=ci, level=level)
        points = (
            _draw_models(
                ax, models, x, number=number, ci=ci, level=level, headline=headline,
                annotate=params is not None,
            )
            if len(models)
            else []
        )  # fmt: skip
        if params is not None:
            ax.set_xscale("log")
            ax.set_xlabel("parameters (billions)")
        else:
            ax.set_xticks(x, [str(m) for m in models["model"]], rotation=30, ha="right")
            ax.set_xlabel("model (by rank)")
        ax.set_ylabel(ylabel)
        ax.set_title("\n".join(textwrap.fill(t, 90) for t in title.splitlines()), fontsize=8)
        ax.margins(x=0.15)
        if ax.get_legend_handles_labels()[0]:  # a plot of rule rows alone has no labelled series
            ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        path = Path(path)
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)
    group = str(rows["group"].iloc[0]) if len(rows) else ""
    metric = str(rows["metric"].iloc[0]) if len(rows) else ""
    return LeaderboardPlot(
        path=path,
        metric=metric,
        group=group,
        x_axis="params" if params is not None else "models",
        points=points,
        human=human,
        missing_params=missing,
    )


def plot_leaderboard(
    board: Leaderboard,
    out_dir: str | Path,
    *,
    params: Mapping[str, float] | None = None,
) -> list[LeaderboardPlot]:
    """One PNG per metric and signature group of ``board`` in ``out_dir``
    (``leaderboard_<metric>_<group>.png``); see ``plot_group``."""
    from gem_tasks.analysis.leaderboard.logs import headline_kind, headline_name, metric_name
    from scorers.registry import CORPUS_STATISTIC

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    for (metric, group), rows in board.table.groupby(["metric", "group"], sort=False):
        lm = board.groups[(board.groups["metric"] == metric) & (board.groups["group"] == group)]
        if lm.empty:
            caption = "signature groups merged"
        elif lm.iloc[0].get("evaluation_lm") is None or pd.isna(lm.iloc[0].get("evaluation_lm")):
            caption = "no evaluation LM"
        else:
            caption = f"evaluation LM {lm.iloc[0]['evaluation_lm']}"
        headline = headline_name(metric)
        corpus = headline_kind(metric) == CORPUS_STATISTIC
        kind = f"corpus statistic {headline}" if corpus else "mean over papers"
        figures.append(
            plot_group(
                rows,
                out / f"leaderboard_{_slug(metric)}_{_slug(group)}.png",
                title=f"{metric_name(metric)} ({kind}), signature group {group}\n{caption}",
                level=board.level,
                params=params,
                ylabel=f"{metric_name(metric)} ({headline})" if corpus else metric_name(metric),
                headline=headline,
            )
        )
    return figures
