"""Beyond Rating's metrics on real ICLR 2020 reviews with the embedded SmolLM2 as preprocessor,
judge and both Binoculars models: the human row vs the embedded model's own reviews vs random
replacement, per metric, with the cost per review.

Data: the GPPM authors' ICLR 2020 papers (``../shared/data/iclr2020_gppm/iclr2020_papers.jsonl``;
free-form reviews with ratings 1/3/6/8, abstracts, no paper text; not shipped). Per paper one
review is held out (seed 0) and every other review is an expert. Three runs:

1. ``gem_tasks/review_quality -T candidate=human``: the held-out human review (the human row);
2. ``gem_tasks/review_quality --model smollm2/embedded``: the embedded model's own review under
   the strict prompt (paper = title + abstract);
3. ``gem_tasks/robustness -T perturbation=random_replacement``: the held-out review replaced by
   another paper's (its "after" side), against the same experts.

    python -m benchmarks.experiments.beyond_rating_iclr2020.run --papers 50

Writes ``benchmarks/experiments/beyond_rating_iclr2020/results/``: ``summary.md`` (per metric:
n scored / unscored, mean and 90% CI of each row, generation calls per review, the commonest
unscored reasons), ``summary.json`` and ``timings.json``; the logs go to ``<out>/logs``. The cache
(``$GEM_TASKS_CACHE_DIR``) makes reruns cheap: the experts are structured and decomposed once.
``--runs human`` reruns only the rows named and reads the others from their newest complete log
in ``<out>/logs`` (a run's time is always its log's, from start to completion: a row whose
generations were cached by an earlier run is cheaper than a cold one, and says so only through
its calls, which count cache hits too).
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai import eval as inspect_eval

from benchmarks.common.manifest import Run
from benchmarks.common.paths import SHARED_DATA
from benchmarks.common.records import write_records
from gem_tasks.tasks.review_quality import review_quality
from gem_tasks.tasks.review_quality.review_quality import ALL_EXPERTS, DEFAULT_SCORERS
from gem_tasks.tasks.robustness import robustness
from scorers.validation.statistics import mean_confidence_interval

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = SHARED_DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
SCORERS = f"{DEFAULT_SCORERS},br_binoculars"
BINOCULARS = {"br_binoculars": {"observer": "embedded", "performer": "embedded"}}


def _rows(log, side: str | None) -> dict[str, list[dict[str, Any]]]:
    """scorer -> one dict per sample: value (NaN unscored), reason, generation calls."""
    out: dict[str, list[dict[str, Any]]] = {}
    for sample in log.samples or []:
        for name, score in (sample.scores or {}).items():
            top = score.metadata or {}
            metadata = top
            if side is not None:  # paired scores: the side's own value, even in unscored pairs
                metadata = top.get(side) or top
                value = metadata.get("value")
                if isinstance(score.value, dict):
                    value = score.value.get(side)
            else:
                value = score.value
            value = float(value) if isinstance(value, int | float) else math.nan
            reason = None
            if not math.isfinite(value):
                reason = metadata.get("unscored_reason") or top.get("unscored_reason")
            calls = metadata.get("calls") or {}
            out.setdefault(name.removesuffix("_paired"), []).append(
                {
                    "value": value,
                    "reason": reason,
                    "calls": sum(calls.values()) if isinstance(calls, dict) else 0,
                }
            )
    return out


def _cell(rows: list[dict[str, Any]]) -> dict[str, Any]:
    values = [r["value"] for r in rows if math.isfinite(r["value"])]
    reasons = Counter(r["reason"].split(":")[0][:80] for r in rows if r["reason"])
    cell: dict[str, Any] = {
        "n": len(rows),
        "scored": len(values),
        "calls_per_review": float(np.mean([r["calls"] for r in rows])) if rows else math.nan,
        "unscored_reasons": dict(reasons.most_common(3)),
    }
    if values:
        low, high = (
            mean_confidence_interval(values, level=0.90)
            if len(values) > 1
            else (
                math.nan,
                math.nan,
            )
        )
        cell.update({"mean": float(np.mean(values)), "ci90": [low, high]})
    return cell


RUNS = ("human", "model", "replacement")
ROW_NAMES = {
    "human": "human",
    "model": "SmolLM2-135M",
    "replacement": "random replacement",
}
TIMING_NAMES = {
    "human": "human (held-out review)",
    "model": "SmolLM2-135M's own review (incl. writing it)",
    "replacement": "random replacement",
}
SIDES = {"human": None, "model": None, "replacement": "after"}


def run_of(log) -> str | None:
    """Which of the three runs a log is (None: none of them)."""
    args = log.eval.task_args or {}
    if log.eval.task.endswith("review_quality"):
        return "human" if args.get("candidate") == "human" else "model"
    if log.eval.task.endswith("robustness") and args.get("perturbation") == "random_replacement":
        return "replacement"
    return None


def newest_logs(log_dir: Path, records: str, scorers: str) -> dict[str, Any]:
    """The newest complete log of each run in ``log_dir`` made on ``records`` with ``scorers``."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    found: dict[str, Any] = {}
    for info in list_eval_logs(str(log_dir)):  # newest first
        header = read_eval_log(info, header_only=True)
        run = run_of(header)
        if run is None or run in found or header.status != "success":
            continue
        task_args = header.eval.task_args or {}
        if task_args.get("dataset") != records or task_args.get("scorers") != scorers:
            continue
        found[run] = info
    return found


def log_seconds(log) -> float:
    from datetime import datetime

    started = datetime.fromisoformat(log.stats.started_at)
    return (datetime.fromisoformat(log.stats.completed_at) - started).total_seconds()


def summarise(rows_by_candidate: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    metrics = sorted({m for rows in rows_by_candidate.values() for m in rows})
    return {
        metric: {c: _cell(rows.get(metric, [])) for c, rows in rows_by_candidate.items()}
        for metric in metrics
    }


def markdown(summary: dict[str, Any], timings: dict[str, float], papers: int) -> str:
    lines = [
        f"# Beyond Rating on {papers} ICLR 2020 papers, embedded SmolLM2-135M as preprocessor, "
        "judge and both Binoculars models\n",
        "| metric | candidate | scored / n | mean [90% CI] | generation calls per review | "
        "commonest unscored reasons |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for metric, cells in summary.items():
        for candidate, cell in cells.items():
            shown = "-"
            if "mean" in cell:
                low, high = cell["ci90"]
                shown = f"{cell['mean']:.3f} [{low:.3f}, {high:.3f}]"
            reasons = "; ".join(f"{k} ({v})" for k, v in cell["unscored_reasons"].items())
            lines.append(
                f"| {metric} | {candidate} | {cell['scored']} / {cell['n']} | {shown} | "
                f"{cell['calls_per_review']:.1f} | {reasons or '-'} |"
            )
    lines += ["", "Wall-clock seconds per run (2-core CPU, each from its log):", ""]
    lines += [f"- {k}: {v:.0f} s ({v / papers:.1f} s per review)" for k, v in timings.items()]
    lines += [
        "",
        "Generation calls count cache hits; times do not: a run after another on the same "
        "papers reuses the texts that run already structured (random replacement's texts are "
        "the other papers' held-out reviews, structured in the human row).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--papers", type=int, default=50)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--scorers", default=SCORERS)
    parser.add_argument("--max-samples", type=int, default=16)
    parser.add_argument("--model", default="smollm2/embedded", help="the model writing reviews")
    parser.add_argument(
        "--runs",
        default=",".join(RUNS),
        help="the runs to do now (comma-separated, of human, model, replacement); the others "
        "are read from their newest complete log in <out>/logs",
    )
    args = parser.parse_args(argv)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    if unknown := sorted(set(runs) - set(RUNS)):
        raise SystemExit(f"--runs: unknown run(s) {unknown}; choose from {list(RUNS)}")
    if not args.data.exists():
        raise SystemExit(f"{args.data}: not found (the shared review data is not in this checkout)")
    provenance = Run(args.out, data=[args.data], settings=vars(args))
    logs = args.out / "logs"
    records = str(write_records(args.data, args.out, args.papers, release=False))
    options = BINOCULARS if "br_binoculars" in args.scorers else None
    common = {"log_dir": str(logs), "display": "plain", "max_samples": args.max_samples}
    tasks = {
        "human": lambda: inspect_eval(
            review_quality(
                dataset=records, candidate="human", scorers=args.scorers, scorer_options=options
            ),
            model="none",
            **common,
        ),
        "model": lambda: inspect_eval(
            review_quality(dataset=records, scorers=args.scorers, scorer_options=options),
            model=args.model,
            max_tokens=512,
            **common,
        ),
        "replacement": lambda: inspect_eval(
            robustness(
                perturbation="random_replacement",
                dataset=records,
                scorers=args.scorers,
                references=ALL_EXPERTS,
                scorer_options=options,
            ),
            model="none",
            **common,
        ),
    }
    for run in runs:
        [log] = tasks[run]()
        if log.status != "success":
            raise SystemExit(f"the {run} run did not complete: {log.error}")
    found = newest_logs(logs, records, args.scorers)
    if missing := [run for run in RUNS if run not in found]:
        raise SystemExit(f"no complete log of run(s) {missing} in {logs}: run them (--runs)")

    from inspect_ai.log import read_eval_log

    timings: dict[str, float] = {}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for run in RUNS:
        log = read_eval_log(found[run])
        timings[TIMING_NAMES[run]] = log_seconds(log)
        rows[ROW_NAMES[run]] = _rows(log, SIDES[run])

    summary = summarise(rows)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    text = markdown(summary, timings, args.papers)
    (args.out / "summary.md").write_text(text)
    print(text)
    provenance.finish()
    return summary


if __name__ == "__main__":
    main()
