"""Metric validation on real ICLR 2023 reviews (GEM paper §4, Algorithm 1) with the embedded
SmolLM2 as evaluation LM: does GEM penalise degradations and resist manipulations?

Data: the GEM authors' released ICLR 2023 reviews with their GPT-4o judgment summaries
(``../shared/data/iclr2023_gem/iclr2023_reviews.jsonl``; not shipped with the package). The
summaries stand in for the preprocessing, so GEM needs no generation: judgment-level strategies
(judgment deletion, random replacement of the summary) are scored with GEM on the summaries;
text-level strategies (sentence deletion, meaningless elongation, random replacement of the text)
with GEM-raw on the raw reviews, which needs no preprocessing either. GEM on re-preprocessed
perturbed texts would need the evaluation LM to rewrite every perturbed review (hundreds of
SmolLM2 generations on a CPU) and SmolLM2's rewrites are poor; it is left out here.

Runs the ``gem_tasks/robustness`` task once per (strategy, level), then ``gem-tasks report``:

    python -m benchmarks.experiments.validation_iclr2023.run --dtype bfloat16

The committed results came from ``--papers 150 --raw-papers 20`` (all five runs) and then
``--raw-papers 150 --only sentence_deletion meaningless_elongation`` with the score cache in
``$GEM_TASKS_CACHE_DIR`` kept between them; the report keeps the newest log of each cell.

Writes ``benchmarks/experiments/validation_iclr2023/results/`` (records, logs, report.md, CSVs).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from inspect_ai import eval as inspect_eval

from benchmarks.common.manifest import Run
from benchmarks.common.paths import SHARED_DATA
from benchmarks.common.records import write_records
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.robustness import robustness

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = SHARED_DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"

# (strategy, level, scorer, papers-argument)
RUNS = [
    ("random_replacement", "judgments", "gem", "papers"),
    ("judgment_deletion", "judgments", "gem", "papers"),
    ("random_replacement", "review", "gem_raw", "raw_papers"),
    ("sentence_deletion", "review", "gem_raw", "raw_papers"),
    ("meaningless_elongation", "review", "gem_raw", "raw_papers"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--papers", type=int, default=150, help="papers for GEM (summaries)")
    parser.add_argument("--raw-papers", type=int, default=150, help="papers for GEM-raw")
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument(
        "--dtype",
        default="float32",
        help="evaluation-LM precision; bfloat16 is faster only on CPUs with AMX",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--only", nargs="*", help="strategies to run (default: all)")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"{args.data}: not found (the shared review data is not in this checkout)")
    provenance = Run(args.out, data=[args.data], settings=vars(args))
    logs = args.out / "logs"
    timings_file = args.out / "timings.json"
    timings = json.loads(timings_file.read_text()) if timings_file.exists() else {}
    for strategy, level, scorer, count in RUNS:
        if args.only and strategy not in args.only:
            continue
        papers = getattr(args, count)
        records = write_records(args.data, args.out, papers, release=True)
        started = time.perf_counter()
        # LLM parts of a strategy (elongation's one-line summaries) use the embedded model too
        model = "smollm2/embedded" if strategy == "meaningless_elongation" else "none"
        [log] = inspect_eval(
            robustness(
                perturbation=strategy,
                dataset=str(records),
                scorers=scorer,
                level=level,
                scorer_lm=args.scorer_lm,
                scorer_lm_args={"dtype": args.dtype},
                dataset_summaries=True,
            ),
            model=model,
            log_dir=str(logs),
            display="plain",
            max_tokens=64,
        )
        seconds = round(time.perf_counter() - started, 1)
        timings[f"{strategy}/{level}/{scorer} ({papers} papers)"] = seconds
        print(f"{strategy} ({level}, {scorer}, {papers} papers): {log.status}, {seconds} s")
    paths = write_report([logs], args.out, progress=False)
    timings_file.write_text(json.dumps(timings, indent=2) + "\n")
    print(paths["markdown"].read_text())
    provenance.finish()


if __name__ == "__main__":
    main()
