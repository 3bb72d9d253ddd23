"""The Auto-PRE leaderboard view: ``autopre_panel`` verdicts from several models' ``iclr`` logs
of the same papers -> a ranking by win rate against the human review, with bootstrap intervals
on the win rate and on the rank (:func:`scorers.metrics.autopre.ranking.rank_with_intervals`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gem_tasks.analysis.leaderboard.logs import read_scores
from scorers.metrics.autopre.ranking import RankRow, rank_with_intervals

__all__ = ["autopre_leaderboard", "autopre_markdown"]


def autopre_leaderboard(
    sources: Sequence[str | Path],
    *,
    metric: str = "autopre_panel",
    level: float = 0.90,
    resamples: int = 2000,
    seed: int = 0,
) -> list[RankRow]:
    """Rank the models (entries) of the logs under ``sources`` by their panel verdicts on the
    papers all of them have a verdict for (unscored papers are left out; a model whose logs mix
    panels, i.e. several signatures, is a ``ValueError``)."""
    scores = read_scores(sources, progress=False)
    scores = scores[(scores["metric"] == metric) & (scores["status"] == "scored")]
    if scores.empty:
        raise ValueError(f"no scored {metric} sample in {', '.join(map(str, sources))}")
    mixed = scores.groupby("entry")["signature"].nunique()
    if (mixed > 1).any():
        raise ValueError(f"panels differ within {sorted(mixed[mixed > 1].index)}: compare like")
    verdicts = {
        entry: dict(zip(group["paper"], group["value"])) for entry, group in scores.groupby("entry")
    }
    return rank_with_intervals(verdicts, level=level, resamples=resamples, seed=seed)


def autopre_markdown(rows: Sequence[RankRow], *, level: float = 0.90) -> str:
    pct = round(level * 100)
    lines = [
        f"| rank ({pct}% interval) | model | win rate vs human ({pct}% CI) | papers |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.rank} ({r.rank_low}-{r.rank_high}) | {r.model} | {r.win_rate:.3f} "
            f"({r.low:.3f}, {r.high:.3f}) | {r.papers} |"
        )
    return "\n".join(lines)
