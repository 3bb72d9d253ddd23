"""Metric validation on real ICLR 2023 reviews (GEM paper §4, Algorithm 1) with the embedded
SmolLM2 as evaluation LM: does GEM penalise degradations and resist manipulations?

Data: the GEM authors' released ICLR 2023 reviews with their GPT-4o judgment summaries
(``data/iclr2023_gem/iclr2023_reviews.jsonl``, written by
``gem-tasks data fetch``). The
summaries stand in for the preprocessing, so GEM needs no generation: judgment-level strategies
(judgment deletion, random replacement of the summary) are scored with GEM on the summaries;
text-level strategies (sentence deletion, meaningless elongation, random replacement of the text)
with GEM-raw on the raw reviews, which needs no preprocessing either. GEM on re-preprocessed
perturbed texts would need the evaluation LM to rewrite every perturbed review (hundreds of
SmolLM2 generations on a CPU) and SmolLM2's rewrites are poor; it is left out here.

Runs the ``gem_tasks/robustness`` task once per (strategy, level), then ``gem-tasks report``:

    python -m benchmarks.experiments.validation_iclr2023.run

Writes ``benchmarks/experiments/validation_iclr2023/results/`` (records, report.md, CSVs,
timings.json, invocations.json; each cell's log in ``logs/<level>_<strategy>/``). A run takes
hours: a stopped one resumes with the same command (each cell keeps its finished samples,
:mod:`benchmarks.common.resumable`; a finished cell is read from its log), ``--only`` splits it
over invocations, and a cell's time is the journal's sum over them. A resume at another commit
or with other settings is refused (``--fresh`` starts over).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common.paths import DATA
from benchmarks.common.records import write_records
from benchmarks.common.resumable import add_fresh_option, run_row, start_journal
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.robustness import robustness
from scorers.lm.loading import DTYPES

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"

# (strategy, level, scorer, papers-argument)
RUNS = [
    ("random_replacement", "judgments", "gem", "papers"),
    ("judgment_deletion", "judgments", "gem", "papers"),
    ("random_replacement", "review", "gem_raw", "raw_papers"),
    ("sentence_deletion", "review", "gem_raw", "raw_papers"),
    ("meaningless_elongation", "review", "gem_raw", "raw_papers"),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--papers", type=int, default=150, help="papers for GEM (summaries)")
    parser.add_argument("--raw-papers", type=int, default=150, help="papers for GEM-raw")
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="evaluation-LM precision; bfloat16 is faster on CPUs with AVX-512 BF16 or AMX",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    strategies = sorted({strategy for strategy, *_ in RUNS})
    parser.add_argument(
        "--only",
        nargs="*",
        choices=strategies,
        help="strategies to run or resume now (default: all; a finished cell is read from its log)",
    )
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    settings = {  # what decides the numbers: a resume with others is refused
        "papers": args.papers,
        "raw_papers": args.raw_papers,
        "scorer_lm": args.scorer_lm,
        "dtype": args.dtype,
    }
    provenance, journal = start_journal(args, settings)
    logs = args.out / "logs"
    cells = {}
    for strategy, level, scorer, count in RUNS:
        papers = getattr(args, count)
        cells[f"{level}_{strategy}"] = f"{strategy}/{level}/{scorer} ({papers} papers)"
        if args.only and strategy not in args.only:
            continue
        records = write_records(args.data, args.out, papers, release=True)
        # LLM parts of a strategy (elongation's one-line summaries) use the embedded model too
        model = "smollm2/embedded" if strategy == "meaningless_elongation" else "none"
        run_row(
            journal,
            f"{level}_{strategy}",
            lambda strategy=strategy, level=level, scorer=scorer, records=records: robustness(
                perturbation=strategy,
                dataset=str(records),
                scorers=scorer,
                level=level,
                scorer_lm=args.scorer_lm,
                scorer_lm_args={"dtype": args.dtype},
                dataset_summaries=True,
            ),
            logs / f"{level}_{strategy}",
            model=model,
            display="plain",
            max_tokens=64,
        )
    done = set(journal.rows())
    timings = {cells[row]: round(journal.seconds(row), 1) for row in cells if row in done}
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    paths = write_report([logs], args.out, progress=False)
    print(paths["markdown"].read_text())
    provenance.finish()


if __name__ == "__main__":
    main()
