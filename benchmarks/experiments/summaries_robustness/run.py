"""Degradations and manipulations on summaries (Scoring Rules paper Tables 4-5, the SummEval and
SPACE columns) with the embedded SmolLM2-135M as evaluation LM and preprocessor: the strategies
that apply to summaries, applied to the candidates as the paper does (SummEval: the 16 systems'
summaries of each article, scored before and after against one human reference summary; SPACE,
which has no systems: each hotel aspect's held-out human summary, against one other).
Rule-based: sentence deletion and random replacement within the dataset (a metric
should penalise them), the fixed elongation (it should not reward it). LLM-based, written by the
perturbation model (``--model``, default the embedded SmolLM2-135M): deletion & completion, the
surface report (from the article's lead; for SPACE from the aspect), ultra-concise compression
(degradations) and rephrasing (a manipulation). A pair whose perturbation left the text
unchanged (the 135M model often echoes it) is unscored with that reason and counted.

Data: SummEval's 60 annotated articles and SPACE's development summaries as published (MIT),
``gem-tasks data fetch summeval space`` (or ``--summeval-data`` and ``--space-data``).

    python -m benchmarks.experiments.summaries_robustness.run --summeval 10 --space 25

Each dataset is its own run with its own results folder (``--summeval 0`` or ``--space 0`` skips
one), so the two can be run, resumed and committed apart. Every strategy of a dataset is its own
resumable Inspect run: a stopped invocation is resumed by the same command at the same commit
(:mod:`benchmarks.common.resumable`; ``--fresh`` starts over), and ``timings.json`` sums each
strategy over its invocations.

Writes ``benchmarks/experiments/summaries_robustness/results/<dataset>/`` (``summeval``,
``space``): ``report.md`` and the CSVs of ``gem-tasks report`` (the failure counts),
``perturbations.md``/``.csv`` (what the perturbation model did: pairs unscored because their
perturbation failed and why, how long the perturbed texts are, how many open with a chat
preamble, how many ultra-concise texts keep to their cap), ``timings.json``, ``invocations.json``
and ``manifest.json``; the logs go to ``results/<dataset>/logs/`` (not committed).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import Journal, add_fresh_option, run_row
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.robustness import robustness
from scorers.validation.perturbations import PERTURBATIONS
from scorers.validation.perturbations.rewriting import ultra_concise_cap

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = {
    "summeval": DATA / "summeval" / "summeval_60docs.jsonl",
    "space": DATA / "space" / "space_dev_refs.jsonl",
}
SAMPLES_PER = {"summeval": 16, "space": 7}
"""Samples per SummEval article (its 16 systems' summaries) and per SPACE hotel (its 7 aspects)."""
STRATEGIES = (
    "sentence_deletion",
    "random_replacement",
    "elongation_fixed",
    "deletion_completion",
    "surface_report",
    "ultra_concise",
    "rephrase",
)
SCORERS = {
    "summeval": "gem,gem_raw,gem_s,bleu,rouge_l,bertscore,bartscore_f1",
    "space": "gem,gem_raw,bleu,rouge_l,bertscore,bartscore_f1",
}


PREAMBLE = re.compile(
    r"^\W*(here(?:'s| is| are)|sure\b|certainly\b|the (?:original|revised|rewritten|corrected)"
    r"|i (?:have|added|made|rewrote))",
    re.IGNORECASE,
)
"""A reply that opens by talking about the text (``Here's a rewritten version ...``) rather than
being it: the perturbed text then carries words no strategy asked for."""


def perturbation_rows(log: Any, dataset: str) -> dict[str, Any]:
    """What the perturbation did to one log's samples."""
    strategy = log.eval.task_args["perturbation"]
    failed = Counter()
    ratios, preamble, within_cap, done = [], 0, 0, 0
    for sample in log.samples:
        reason = sample.metadata.get("perturbation_failed")
        if reason:
            failed[re.sub(r"'[^']*'$|e\.g\. .*$", "", reason).strip()] += 1
            continue
        original, perturbed = sample.metadata["original"], sample.metadata["perturbed"]
        done += 1
        ratios.append(len(perturbed.split()) / max(1, len(original.split())))
        preamble += bool(PREAMBLE.match(perturbed))
        within_cap += len(perturbed.split()) <= ultra_concise_cap(original)
    return {
        "dataset": dataset,
        "strategy": strategy,
        "samples": len(log.samples),
        "perturbed": done,
        "unscored_perturbation_failed": sum(failed.values()),
        "why": "; ".join(f"{n}x {why}" for why, n in failed.most_common()),
        "median_length_ratio": round(statistics.median(ratios), 3) if ratios else None,
        "chat_preamble": preamble if PERTURBATIONS[strategy].uses_llm else None,
        "within_ultra_concise_cap": within_cap if strategy == "ultra_concise" else None,
    }


def write_perturbations(rows: list[dict[str, Any]], out: Path) -> None:
    """``perturbations.csv`` and ``perturbations.md``: one row per dataset and strategy."""
    with (out / "perturbations.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [
        "# What the perturbation model did",
        "",
        "Per dataset and strategy: samples, pairs perturbed and scored, pairs unscored because the",
        "perturbation failed (why), the median length of the perturbed text over the original's",
        "(words), replies opening with a chat preamble (LLM-based strategies), and ultra-concise",
        "texts within their cap (10% of the original's words).",
        "",
        "| dataset | strategy | samples | perturbed | failed | why | length ratio | preamble "
        "| within cap |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        cells = [r[k] for k in list(r)]
        lines.append("| " + " | ".join("–" if c in (None, "") else str(c) for c in cells) + " |")
    (out / "perturbations.md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--summeval",
        type=int,
        default=10,
        help="SummEval articles (16 system summaries each; 0 skips SummEval)",
    )
    parser.add_argument(
        "--space", type=int, default=25, help="SPACE hotels (7 aspects each; 0 skips SPACE)"
    )
    parser.add_argument(
        "--summeval-data", type=Path, default=DEFAULT_DATA["summeval"], help="SummEval's file"
    )
    parser.add_argument(
        "--space-data", type=Path, default=DEFAULT_DATA["space"], help="SPACE's file"
    )
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument(
        "--model",
        default="smollm2/embedded",
        help="the perturbation model (an Inspect model) for the LLM-based strategies",
    )
    parser.add_argument(
        "--max-tokens", type=int, default=256, help="the perturbation model's reply limit"
    )
    parser.add_argument(
        "--strategies", default=",".join(STRATEGIES), help="comma-separated strategies to run"
    )
    parser.add_argument(
        "--scorers",
        help="comma-separated scorers for both datasets (default: each dataset's set above)",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    data = {"summeval": args.summeval_data, "space": args.space_data}
    units = {"summeval": args.summeval, "space": args.space}
    if any(n < 0 for n in units.values()) or not any(units.values()):
        raise SystemExit(
            "--summeval and --space count articles and hotels: 0 skips a dataset, "
            "and at least one must be positive"
        )
    missing = [str(data[name]) for name in units if units[name] and not data[name].exists()]
    if missing:
        raise SystemExit("\n".join(missing_data(path) for path in missing))
    for name in units:
        if units[name]:
            run_dataset(name, units[name], data[name], args, args.out / name)


def run_dataset(name: str, units: int, data: Path, args: argparse.Namespace, out: Path) -> None:
    """Every strategy on ``units`` articles or hotels of one dataset: one resumable Inspect run
    per strategy, and the dataset's own results folder ``out`` (report, perturbations, timings,
    journal, manifest), so each dataset can be run, resumed and committed on its own."""
    settings = {
        name: units,
        f"{name}_data": str(data),
        "scorer_lm": args.scorer_lm,
        "model": args.model,
        "max_tokens": args.max_tokens,
        "strategies": args.strategies,
        "scorers": args.scorers or SCORERS[name],
    }
    provenance = Run(out, data=[data], settings=settings)
    journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=out / "logs")
    done: list[dict[str, Any]] = []
    for strategy in args.strategies.split(","):
        path = run_row(
            journal,
            strategy,
            lambda strategy=strategy: robustness(
                perturbation=strategy,
                dataset=str(data),
                scorers=settings["scorers"],
                references=1,
                scorer_lm=args.scorer_lm,
            ),
            out / "logs" / strategy,
            model=args.model if PERTURBATIONS[strategy].uses_llm else "none",
            max_tokens=args.max_tokens,
            limit=units * SAMPLES_PER[name],
            display="plain",
        )
        done.append(perturbation_rows(read_eval_log(path), name))
    timings = {row: round(journal.seconds(row), 1) for row in journal.rows()}
    (out / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    write_perturbations(done, out)
    write_report([out / "logs"], out, progress=False)
    provenance.finish()


if __name__ == "__main__":
    main()
