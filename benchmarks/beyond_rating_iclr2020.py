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

    python benchmarks/beyond_rating_iclr2020.py --papers 50

Writes ``benchmarks/results/beyond_rating_iclr2020/``: ``summary.md`` (per metric: n scored /
unscored, mean and 90% CI of each row, generation calls per review, the commonest unscored
reasons), ``summary.json`` and ``timings.json``; the logs go to ``<out>/logs``. The cache
(``$GEM_TASKS_CACHE_DIR``) makes reruns cheap: the experts are structured and decomposed once.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai import eval as inspect_eval
from shared_records import write_records

from gem_tasks.tasks.review_quality import review_quality
from gem_tasks.tasks.review_quality.review_quality import ALL_EXPERTS, DEFAULT_SCORERS
from gem_tasks.tasks.robustness import robustness
from scorers.validation.statistics import mean_confidence_interval

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = HERE.parent.parent / "shared" / "data" / "iclr2020_gppm" / "iclr2020_papers.jsonl"
SCORERS = f"{DEFAULT_SCORERS},br_binoculars"
BINOCULARS = {"br_binoculars": {"observer": "embedded", "performer": "embedded"}}


def _rows(log, side: str | None) -> dict[str, list[dict[str, Any]]]:
    """scorer -> one dict per sample: value (NaN unscored), reason, generation calls."""
    out: dict[str, list[dict[str, Any]]] = {}
    for sample in log.samples or []:
        for name, score in (sample.scores or {}).items():
            top = score.metadata or {}
            metadata = top
            if side is not None:  # paired scores: the side's metadata
                value = score.value.get(side) if isinstance(score.value, dict) else math.nan
                metadata = top.get(side) or top
            else:
                value = score.value
            value = float(value) if isinstance(value, int | float) else math.nan
            calls = metadata.get("calls") or {}
            out.setdefault(name.removesuffix("_paired"), []).append(
                {
                    "value": value,
                    "reason": metadata.get("unscored_reason") or top.get("unscored_reason"),
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
    lines += ["", "Wall-clock seconds per run (2-core CPU):", ""]
    lines += [f"- {k}: {v:.0f} s ({v / papers:.1f} s per review)" for k, v in timings.items()]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--papers", type=int, default=50)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "beyond_rating_iclr2020")
    parser.add_argument("--scorers", default=SCORERS)
    parser.add_argument("--max-samples", type=int, default=16)
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data}: not found (the shared review data is not in this checkout)")
    args.out.mkdir(parents=True, exist_ok=True)
    logs = str(args.out / "logs")
    records = str(write_records(args.data, args.out, args.papers, release=False))
    options = BINOCULARS if "br_binoculars" in args.scorers else None
    common = {"log_dir": logs, "display": "plain", "max_samples": args.max_samples}
    timings: dict[str, float] = {}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}

    started = time.perf_counter()
    [human] = inspect_eval(
        review_quality(
            dataset=records, candidate="human", scorers=args.scorers, scorer_options=options
        ),
        model="none",
        **common,
    )
    timings["human (held-out review)"] = time.perf_counter() - started
    rows["human"] = _rows(human, None)

    started = time.perf_counter()
    [model] = inspect_eval(
        review_quality(dataset=records, scorers=args.scorers, scorer_options=options),
        model="smollm2/embedded",
        max_tokens=512,
        **common,
    )
    timings["SmolLM2-135M's own review (incl. writing it)"] = time.perf_counter() - started
    rows["SmolLM2-135M"] = _rows(model, None)

    started = time.perf_counter()
    [replaced] = inspect_eval(
        robustness(
            perturbation="random_replacement",
            dataset=records,
            scorers=args.scorers,
            references=ALL_EXPERTS,
            scorer_options=options,
        ),
        model="none",
        **common,
    )
    timings["random replacement"] = time.perf_counter() - started
    rows["random replacement"] = _rows(replaced, "after")

    summary = summarise(rows)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    text = markdown(summary, timings, args.papers)
    (args.out / "summary.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
