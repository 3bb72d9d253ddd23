"""Beyond Rating's metrics on real ICLR 2020 reviews with the embedded SmolLM2 as preprocessor,
judge and both Binoculars models: the human row vs the embedded model's own reviews vs random
replacement, per metric, with the cost per review.

Data: the GPPM authors' ICLR 2020 papers (``data/iclr2020_gppm/iclr2020_papers.jsonl``, written by
``gem-tasks data fetch``;
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
unscored reasons), ``summary.json``, ``timings.json`` and ``invocations.json``; each row's log goes
to ``<out>/logs/<row>/``. A row takes most of an hour on 2 cores: a stopped run resumes with the
same command (each row keeps its finished samples, :mod:`benchmarks.common.resumable`), a row
already finished is read from its log, not redone, and ``--runs human`` does only the rows named
now (the summary needs all three). A row's time is the journal's sum over the invocations that
worked on it; a resume at another commit or with other settings is refused (``--fresh`` starts
over). The cache (``$GEM_TASKS_CACHE_DIR``) makes reruns cheap: the experts are structured and
decomposed once, so a row run after another on the same papers is cheaper than a cold one, and
says so only through its calls, which count cache hits too.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common.model_options import add_model_options, lm_args, model_options
from benchmarks.common.paths import DATA
from benchmarks.common.records import write_records
from benchmarks.common.resumable import (
    add_fresh_option,
    finished_log,
    run_row,
    start_journal,
)
from gem_tasks.tasks.review_quality import review_quality
from gem_tasks.tasks.review_quality.review_quality import ALL_EXPERTS, DEFAULT_SCORERS
from gem_tasks.tasks.robustness import robustness
from scorers.validation.statistics import mean_confidence_interval

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
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
    lines += [
        "",
        "Wall-clock seconds per run, summed over its invocations (`invocations.json` names "
        "each one's machine):",
        "",
    ]
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
    add_model_options(
        parser,
        dtype_used_as="as the model writing reviews, as the scorers' LM and as both Binoculars "
        "models",
    )
    parser.add_argument(
        "--runs",
        default=",".join(RUNS),
        help="the rows to run or resume now (comma-separated, of human, model, replacement); "
        "a finished row is read from its log in <out>/logs/<row>/",
    )
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    runs = [r.strip() for r in args.runs.split(",") if r.strip()]
    if unknown := sorted(set(runs) - set(RUNS)):
        raise SystemExit(f"--runs: unknown run(s) {unknown}; choose from {list(RUNS)}")
    settings = {  # what decides the numbers: a resume with others is refused
        "papers": args.papers,
        "scorers": args.scorers,
        "max_samples": args.max_samples,
        "model": args.model,
        "dtype": args.dtype,
        "device": args.device,
        "max_connections": args.max_connections,
    }
    provenance, journal = start_journal(args, settings)
    logs = args.out / "logs"
    records = str(write_records(args.data, args.out, args.papers, release=False))
    given = lm_args(args)
    options = None
    if "br_binoculars" in args.scorers:
        options = {"br_binoculars": {**BINOCULARS["br_binoculars"], **given}}
    for_model = model_options(args)
    common = {"display": "plain", "max_samples": args.max_samples}
    tasks = {  # run -> (the task, made only when the row runs; Inspect options)
        "human": (
            lambda: review_quality(
                dataset=records,
                candidate="human",
                scorers=args.scorers,
                scorer_lm_args=given or None,
                scorer_options=options,
            ),
            {"model": "none"},
        ),
        "model": (
            lambda: review_quality(
                dataset=records,
                scorers=args.scorers,
                scorer_lm_args=given or None,
                scorer_options=options,
            ),
            {"model": args.model, "max_tokens": 512, **for_model},
        ),
        "replacement": (
            lambda: robustness(
                perturbation="random_replacement",
                dataset=records,
                scorers=args.scorers,
                references=ALL_EXPERTS,
                scorer_lm_args=given or None,
                scorer_options=options,
            ),
            {"model": "none"},
        ),
    }
    for run in runs:
        task, options_of_run = tasks[run]
        run_row(journal, run, task, logs / run, **common, **options_of_run)
    found = {run: finished_log(logs / run) for run in RUNS}
    if missing := [run for run, log in found.items() if log is None]:
        raise SystemExit(f"no complete log of run(s) {missing} in {logs}: run them (--runs)")

    from inspect_ai.log import read_eval_log

    timings: dict[str, float] = {}
    rows: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for run in RUNS:
        timings[TIMING_NAMES[run]] = round(journal.seconds(run), 1)
        rows[ROW_NAMES[run]] = _rows(read_eval_log(found[run]), SIDES[run])

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
