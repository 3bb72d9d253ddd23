"""Auto-PRE from the logs: the qualification an ``autopre_exam`` log holds
(:func:`qualification_from_log`, what the ``autopre_panel`` scorer reads), and the leaderboard
view: ``autopre_panel`` verdicts from several models' ``iclr`` logs of the same papers -> a
ranking by win rate against the human review, with bootstrap intervals on the win rate and on
the rank (:func:`scorers.metrics.autopre.ranking.rank_with_intervals`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, read_eval_log

from gem_tasks.analysis.leaderboard.logs import read_scores
from scorers.data.paper_docs import DATASET
from scorers.metrics.autopre.exams import EXAMS, qualification_from_rows
from scorers.metrics.autopre.ranking import RankRow, rank_with_intervals

__all__ = [
    "autopre_leaderboard",
    "autopre_markdown",
    "is_exam_log",
    "qualification_from_log",
]

EXAM_TASK = "autopre_exam"


def is_exam_log(path: str | Path) -> bool:
    """Whether ``path`` is an Inspect log of the ``autopre_exam`` task."""
    try:
        header = read_eval_log(str(path), header_only=True)
    except Exception:  # not an Inspect log at all
        return False
    return header.eval.task.split("/")[-1] == EXAM_TASK


def qualification_from_log(log: str | Path | EvalLog) -> dict[str, Any]:
    """The full qualification of an ``autopre_exam`` log (a file, or a log already read with
    its samples): exam scores with used/unparsed counts, passes, thresholds, the panel and its
    weights, judge calls per exam, and what a panel needs to judge as the exam did: the
    generator identity each judge answered with and whether it answered forced. ``source``
    names the log; ``dataset`` is the identity of the dataset the exams were drawn from (name,
    records, content hash), which the panel holds a scored dataset to."""
    eval_log = log if isinstance(log, EvalLog) else read_eval_log(str(log))
    if eval_log.eval.task.split("/")[-1] != EXAM_TASK:
        raise ValueError(f"{eval_log.location}: a {eval_log.eval.task} log, not {EXAM_TASK}'s")
    if eval_log.status != "success":
        raise ValueError(
            f"{eval_log.location}: the exam run did not finish (status {eval_log.status}); a "
            "qualification needs every exam answer"
        )
    rows, calls = [], {}
    generators: dict[str, set[str]] = {}
    forced: dict[str, set[bool]] = {}
    for sample in eval_log.samples or []:
        for score in (sample.scores or {}).values():
            meta = score.metadata or {}
            if "exam" in meta:
                rows.append(meta)
                for name, answer in meta["judges"].items():
                    per = calls.setdefault(name, dict.fromkeys(EXAMS, 0))
                    per[meta["exam"]] += answer["calls"]
                    generators.setdefault(name, set()).add(str(answer.get("generator")))
                    forced.setdefault(name, set()).add(bool(answer.get("forced")))
    out = qualification_from_rows(rows).as_dict()
    out["judge_calls"] = calls
    for name, seen in generators.items():
        if len(seen) > 1 or len(forced[name]) > 1:
            raise ValueError(f"{eval_log.location}: judge {name!r} answered as several models")
    out["generators"] = {name: next(iter(seen)) for name, seen in generators.items()}
    out["forced"] = {name: next(iter(seen)) for name, seen in forced.items()}
    out["source"] = Path(str(eval_log.location)).name if eval_log.location else "log"
    # the dataset the judges were qualified on (None for an exam log that did not record it)
    out["dataset"] = (eval_log.eval.metadata or {}).get(DATASET)
    return out


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
