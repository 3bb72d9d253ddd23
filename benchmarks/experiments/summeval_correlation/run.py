"""SummEval's correlation column (Scoring Rules paper Table 3) with the embedded SmolLM2-135M as
evaluation LM: Spearman's ρ between each metric and the experts' ratings of the 16 systems'
summaries, per dimension and their mean, at the summary level (every article and system) and at
the system level (the systems ranked by their mean score against their mean expert rating, as
SummEval reports).

Data: ``../shared/data/summeval/summeval_60docs.jsonl`` (60 articles, 11 human summaries and 16
rated systems each; MIT). Each system summary is scored against one human reference summary
(the paper's setting, ``references=1``), the article as θ for GEM-S.

    python -m benchmarks.experiments.summeval_correlation.run --articles 60

Writes ``benchmarks/experiments/summeval_correlation/results/``: ``correlation.md`` (the two
tables, the unscored counts per metric and the time), ``correlation.json``, ``manifest.json``;
the Inspect log goes to ``results/logs/`` (not committed).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from inspect_ai import eval as inspect_eval

from benchmarks.common.manifest import Run
from benchmarks.common.paths import SHARED_DATA
from gem_tasks.tasks.summeval import summeval
from scorers.data.sources.summaries import SUMMEVAL_DIMENSIONS
from scorers.validation import statistics

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = SHARED_DATA / "summeval" / "summeval_60docs.jsonl"
SCORERS = "gem_raw,gem,gem_s,bleu,rouge_l,bertscore,bartscore_f1"


def rows_from_log(log: Any) -> list[dict[str, Any]]:
    """One row per sample: article, system, each metric's value (NaN when unscored) and the
    experts' ratings."""
    rows = []
    for sample in log.samples or []:
        values = {}
        for name, score in (sample.scores or {}).items():
            value = score.value
            values[name] = float(value) if isinstance(value, int | float) else math.nan
        meta = sample.metadata or {}
        rows.append(
            {
                "article": meta["paper_id"],
                "system": meta["answer"]["id"],
                "values": values,
                "ratings": meta["ratings"],
            }
        )
    return rows


def correlations(rows: list[dict[str, Any]], metrics: list[str]) -> dict[str, Any]:
    """Spearman's ρ per metric and dimension (and their mean), summary-level and system-level."""
    out: dict[str, Any] = {"summary_level": {}, "system_level": {}, "scored": {}}
    for metric in metrics:
        scored = [r for r in rows if math.isfinite(r["values"].get(metric, math.nan))]
        out["scored"][metric] = len(scored)
        summary = {}
        for dimension in SUMMEVAL_DIMENSIONS:
            summary[dimension] = statistics.spearman(
                [r["values"][metric] for r in scored], [r["ratings"][dimension] for r in scored]
            )[0]
        summary["mean"] = _mean(summary.values())
        out["summary_level"][metric] = summary
        by_system: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in scored:
            by_system[r["system"]].append(r)
        systems = sorted(by_system)
        system = {}
        for dimension in SUMMEVAL_DIMENSIONS:
            system[dimension] = statistics.spearman(
                [_mean(r["values"][metric] for r in by_system[s]) for s in systems],
                [_mean(r["ratings"][dimension] for r in by_system[s]) for s in systems],
            )[0]
        system["mean"] = _mean(system.values())
        out["system_level"][metric] = system
    return out


def _mean(values: Any) -> float:
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else math.nan


def markdown(result: dict[str, Any], metrics: list[str], seconds: float, articles: int) -> str:
    lines = [
        "# SummEval: Spearman's ρ with the experts' ratings, embedded SmolLM2-135M",
        "",
        f"{articles} articles × 16 systems; each summary scored against one human reference "
        f"summary (seed 0); {seconds:.0f} s for the whole run. ρ per dimension, and the mean of "
        "the four (the Scoring Rules paper's Table 3 SummEval column reports the mean).",
        "",
    ]
    for level, title in (("summary_level", "Summary level"), ("system_level", "System level")):
        lines += [
            f"## {title}",
            "",
            "| metric | scored | " + " | ".join(SUMMEVAL_DIMENSIONS) + " | mean |",
            "| --- | --- | " + " | ".join("---" for _ in SUMMEVAL_DIMENSIONS) + " | --- |",
        ]
        for metric in metrics:
            row = result[level][metric]
            cells = " | ".join(f"{row[d]:+.3f}" for d in (*SUMMEVAL_DIMENSIONS, "mean"))
            lines.append(f"| {metric} | {result['scored'][metric]} | {cells} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--articles", type=int, default=60)
    parser.add_argument("--scorers", default=SCORERS)
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    if not args.data.exists():
        raise SystemExit(f"{args.data}: not found (the shared SummEval file is not here)")
    provenance = Run(args.out, data=[args.data], settings=vars(args))
    metrics = [m.strip() for m in args.scorers.split(",") if m.strip()]
    started = time.perf_counter()
    [log] = inspect_eval(
        summeval(
            dataset=str(args.data),
            candidate="candidates",
            scorers=metrics,
            scorer_lm=args.scorer_lm,
        ),
        model="none",
        limit=args.articles * 16,
        log_dir=str(args.out / "logs"),
        display="plain",
    )
    seconds = time.perf_counter() - started
    if log.status != "success":
        raise SystemExit(f"the run failed: {log.error}")
    rows = rows_from_log(log)
    result = correlations(rows, metrics)
    result.update({"seconds": round(seconds, 1), "articles": args.articles, "samples": len(rows)})
    (args.out / "correlation.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result, metrics, seconds, args.articles)
    (args.out / "correlation.md").write_text(text)
    print(text)
    provenance.finish()
    return result


if __name__ == "__main__":
    main()
