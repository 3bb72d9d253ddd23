"""Metric validation on real ICLR 2020 reviews at the review level (GEM paper §4, Table 2
layout): do GEM, GEM-S, GEM-raw and every baseline penalise degraded reviews?

Data: the GPPM authors' 300 ICLR 2020 papers with abstracts and raw reviews
(``data/iclr2020_gppm/iclr2020_papers.jsonl``, written by
``gem-tasks data fetch``), the
first ``--papers`` of them with the same records file, split and references as the red-team
benchmark (``benchmarks/experiments/gaming/run.py``), so the score cache's reference rewrites are
shared.
Each strategy (by default the degradations sentence deletion and random replacement, and the
manipulation ``elongation_fixed``: GEM's ``meaningless_elongation`` needs the ICLR 2023
four-section form, which these free-text ICLR 2020 reviews do not have, so the fixed filler
paragraph that works on any format stands in for it) is applied to each paper's held-out human
review and scored before and after by ``gem_tasks/robustness`` with the evaluation LM (default
the embedded SmolLM2, which also rewrites every perturbed review into judgments for GEM and GEM-S,
and answers the LM examiner's questions); then ``gem-tasks report`` writes the SMD table with
paired 95% intervals.

    python -m benchmarks.experiments.validation_iclr2020.run --papers 100
    # other metrics into their own folder (a folder holds one run's metrics), e.g. the Scoring
    # Rules paper's oracle cells, where the embedded model is also the oracle
    python -m benchmarks.experiments.validation_iclr2020.run --papers 100 \
        --scorers fmi_tv_fvar_statement,fmi_tv_fvar_report --out scoring_rules_iclr2020

Writes ``<out>/`` (records, report.md, CSVs, timings.json, invocations.json; each strategy's log
in ``<out>/logs/<strategy>/``). A run takes hours: a stopped one resumes with the same command
(each strategy keeps its finished samples, :mod:`benchmarks.common.resumable`; a finished one is
read from its log), ``--perturbations`` splits it over invocations, and a strategy's time is the
journal's sum over them. A resume at another commit or with other settings is refused
(``--fresh`` starts over).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common.manifest import files_named_in
from benchmarks.common.paths import DATA
from benchmarks.common.records import write_records
from benchmarks.common.resumable import add_fresh_option, run_row, start_journal
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.robustness import robustness
from scorers.lm.loading import DTYPES
from scorers.registry import resolve_metric_names
from scorers.validation.perturbations import PERTURBATIONS

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
SCORERS = "gem,gem_s,gem_raw,bleu,rouge_l,bertscore,bartscore_f1,lm_examiner"
"""GEM, GEM-S, GEM-raw and every baseline of the GEM paper (§5.1)."""
STRATEGIES = ("sentence_deletion", "random_replacement", "elongation_fixed")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--papers", type=int, default=100)
    parser.add_argument("--scorers", default=SCORERS, help=f"default: {SCORERS}")
    parser.add_argument(
        "--perturbations",
        nargs="+",
        default=list(STRATEGIES),
        choices=sorted(PERTURBATIONS),
        help="the strategies to run or resume now (a finished one is read from its log)",
    )
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float32", help="evaluation-LM precision"
    )
    parser.add_argument(
        "--scorer-options",
        type=json.loads,
        default=None,
        help='per-metric options as JSON, e.g. \'{"lm_examiner": {"max_tokens": 256}}\'',
    )
    parser.add_argument("--max-samples", type=int, default=32, help="samples scored at once")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    try:
        scorers = resolve_metric_names(args.scorers)  # an unknown name fails before anything runs
    except ValueError as exc:
        parser.error(str(exc))
    settings = {  # what decides the numbers: a resume with others is refused
        "papers": args.papers,
        "scorers": list(scorers),
        "scorer_lm": args.scorer_lm,
        "dtype": args.dtype,
        "scorer_options": args.scorer_options,
        "max_samples": args.max_samples,
    }
    inputs = [args.data, *files_named_in(args.scorer_options)]  # a fit file, say
    provenance, journal = start_journal(args, settings, inputs=inputs)
    logs = args.out / "logs"
    records = write_records(args.data, args.out, args.papers, release=False)
    for perturbation in dict.fromkeys(args.perturbations):
        run_row(
            journal,
            perturbation,
            lambda perturbation=perturbation: robustness(
                perturbation=perturbation,
                dataset=str(records),
                scorers=",".join(scorers),
                scorer_lm=args.scorer_lm,
                scorer_lm_args={"dtype": args.dtype},
                scorer_options=args.scorer_options,
                level="review",
            ),
            logs / perturbation,
            model="none",
            display="plain",
            max_samples=args.max_samples,
        )
    timings = {
        f"{row} ({args.papers} papers)": round(journal.seconds(row), 1) for row in journal.rows()
    }
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    paths = write_report([logs], args.out, progress=False)
    print(paths["markdown"].read_text())
    provenance.finish()


if __name__ == "__main__":
    main()
