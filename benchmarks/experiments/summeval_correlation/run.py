"""SummEval's correlation column (Scoring Rules paper Table 3) with the embedded SmolLM2-135M as
evaluation LM: Spearman's ρ between each metric and the experts' ratings of the 16 systems'
summaries, per dimension and their mean, at the summary level (every article and system: the
task's ``rating_spearman`` metric) and at the system level (the 16 systems as leaderboard rows,
each metric's per-system mean against the systems' mean expert ratings, as SummEval reports:
``gem-tasks leaderboard --against rating_<dimension>``).

Data: ``data/summeval/summeval_60docs.jsonl``, written by
``gem-tasks data fetch`` (60 articles, 11 human summaries and 16
rated systems each; MIT). Each system summary is scored against one human reference summary
(the paper's setting, ``references=1``), the article as θ for GEM-S.

    python -m benchmarks.experiments.summeval_correlation.run --articles 60

Writes ``benchmarks/experiments/summeval_correlation/results/``: ``correlation.md`` (the two
tables, the unscored counts per metric and the time), ``correlation.json``, ``leaderboard/`` (the
systems' leaderboard and each metric's correlation with each rating across the systems, as
``gem-tasks leaderboard`` writes them), ``report/`` (``gem-tasks report`` of the log: Table 3's
layout), ``manifest.json``; the Inspect log goes to
``results/logs/`` (not committed).
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import Journal, add_fresh_option, run_row
from gem_tasks.analysis.leaderboard.compare import compare_logs
from gem_tasks.analysis.leaderboard.correlate import correlate, write_correlations
from gem_tasks.analysis.leaderboard.logs import RATING_PREFIX
from gem_tasks.analysis.leaderboard.render import write_leaderboard
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.summeval import summeval
from scorers.data.sources.summaries import SUMMEVAL_DIMENSIONS
from scorers.registry import resolve_metric_names

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "summeval" / "summeval_60docs.jsonl"
SCORERS = "gem_raw,gem,gem_s,bleu,rouge_l,bertscore,bartscore_f1"


def scored_counts(log: Any, metrics: list[str]) -> dict[str, int]:
    """Per metric, the samples it scored (a finite value)."""
    counts = dict.fromkeys(metrics, 0)
    for sample in log.samples or []:
        for name, score in (sample.scores or {}).items():
            value = score.value
            if name in counts and isinstance(value, int | float) and math.isfinite(value):
                counts[name] += 1
    return counts


def summary_level(log: Any, metrics: list[str]) -> dict[str, dict[str, float]]:
    """ρ per dimension and their mean over every scored summary: the log's ``rating_spearman``
    metric (computed by the task)."""
    out = {}
    for score in log.results.scores:
        if score.name in metrics:
            values = {k: v.value for k, v in score.metrics.items()}
            row = {d: values.get(f"rho_{d}", math.nan) for d in SUMMEVAL_DIMENSIONS}
            row["mean"] = values.get("rho_mean_of_dimensions", math.nan)
            out[score.name] = row
    return out


def system_level(log_dir: Path, metrics: list[str], out: Path) -> dict[str, dict[str, float]]:
    """The systems' leaderboard (written to ``out``) and each metric's Spearman ρ across the
    systems with each rating dimension, and their mean over the dimensions."""
    board = compare_logs([log_dir], progress=False)
    write_leaderboard(board, out)
    rho: dict[str, dict[str, float]] = {m: {} for m in metrics}
    for dimension in SUMMEVAL_DIMENSIONS:
        result = correlate(board, f"{RATING_PREFIX}{dimension}")
        write_correlations(result, out)
        for row in result.table.itertuples():
            if row.metric in rho:
                rho[row.metric][dimension] = float(row.spearman_rho)
    for row in rho.values():
        row["mean"] = _mean(row.get(d, math.nan) for d in SUMMEVAL_DIMENSIONS)
    write_correlations(correlate(board, f"{RATING_PREFIX}mean"), out)
    return rho


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
    titles = {
        "summary_level": "Summary level (each article's summaries; the task's rating_spearman)",
        "system_level": "System level (the 16 systems as rows of `leaderboard/leaderboard.md`; "
        "ρ from `leaderboard/correlation_with_rating_<dimension>.md`)",
    }
    for level, title in titles.items():
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
    add_fresh_option(parser)
    parser.add_argument(
        "--from-log",
        type=Path,
        help="compute the tables from this finished log of the run instead of scoring again "
        "(the log, under --out's logs/, names its own commit, settings and time)",
    )
    args = parser.parse_args(argv)
    if not args.data.exists():
        raise SystemExit(missing_data(args.data))
    provenance = Run(args.out, data=[args.data], settings={**vars(args)})
    metrics = resolve_metric_names(args.scorers)  # aliases (tvd_mi) as the log names them
    if args.from_log is not None:
        log = read_eval_log(str(args.from_log))
        seconds = (
            datetime.fromisoformat(log.stats.completed_at)
            - datetime.fromisoformat(log.stats.started_at)
        ).total_seconds()
        if sorted(s.name for s in log.results.scores) != sorted(metrics):
            raise SystemExit(f"{args.from_log} was not scored with {metrics}")
    else:
        # a stopped run resumes with its finished samples (same commit and settings), across
        # as many invocations as it takes; the time is the journal's sum over them
        settings = {
            "data": str(args.data),
            "articles": args.articles,
            "scorers": metrics,
            "scorer_lm": args.scorer_lm,
        }
        journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=args.out / "logs")
        done = run_row(
            journal,
            "summeval",
            lambda: summeval(
                dataset=str(args.data),
                candidate="candidates",
                scorers=metrics,
                scorer_lm=args.scorer_lm,
            ),
            args.out / "logs",
            model="none",
            limit=args.articles * 16,
            display="plain",
        )
        log = read_eval_log(done)
        seconds = journal.seconds("summeval")
    if log.status != "success":
        raise SystemExit(f"the run failed: {log.error}")
    result: dict[str, Any] = {
        "summary_level": summary_level(log, metrics),
        "system_level": system_level(args.out / "logs", metrics, args.out / "leaderboard"),
        "scored": scored_counts(log, metrics),
    }
    result.update(
        {"seconds": round(seconds, 1), "articles": args.articles, "samples": len(log.samples)}
    )
    (args.out / "correlation.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result, metrics, seconds, args.articles)
    (args.out / "correlation.md").write_text(text)
    # the same log through `gem-tasks report`: its Table 3 layout holds the SummEval column
    write_report([args.out / "logs"], args.out / "report", progress=False)
    print(text)
    provenance.finish()
    return result


if __name__ == "__main__":
    main()
