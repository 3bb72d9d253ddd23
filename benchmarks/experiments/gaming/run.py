"""The red-team suite on real ICLR 2020 reviews with the embedded SmolLM2 as evaluation LM and
preprocessor: can a model under test raise GEM, GEM-S or GEM-raw without writing a better review?

Data: the GPPM authors' 300 ICLR 2020 papers with abstracts and raw reviews
(``data/iclr2020_gppm/iclr2020_papers.jsonl``, written by
``gem-tasks data fetch``). Every
strategy of ``scorers.validation.perturbations.GAMING`` is applied to each paper's held-out human
review at the review level (the gamed text is preprocessed again by the evaluation LM, like any
review), and scored before and after against the same two references by ``gem_tasks/robustness``.
Then ``gem-tasks report`` writes the Gaming table. Finally the universal review's scores are set
beside the human baseline (the held-out reviews: the "before" side of the same logs) and the
embedded model's own reviews (``gem_tasks/iclr --model smollm2/embedded`` on the same papers and
split), paper by paper.

    python -m benchmarks.experiments.gaming.run --papers 100
    python -m benchmarks.experiments.gaming.run --papers 100 --level judgments --out \
        benchmarks/experiments/gaming/results/iclr2023_judgments

Writes ``benchmarks/experiments/gaming/results/iclr2020/`` (records, logs, report.md, CSVs,
timings.json, universal.md, oracle.md for the binary-critic metrics, invocations.json,
manifest.json). The score cache in ``$GEM_TASKS_CACHE_DIR`` computes the reference and held-out
rewrites once for all strategies.

A run takes hours; a stopped one resumes with the same command (each strategy's eval keeps its
finished samples, :mod:`benchmarks.common.resumable`), at the same commit and with the same
settings, and ``--only`` splits it over invocations; ``invocations.json`` records each
invocation and ``timings.json`` sums each strategy's time over them. Other settings (papers,
metrics, evaluation LM) need ``--fresh`` or another ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from inspect_ai.log import list_eval_logs, read_eval_log

from benchmarks.common.manifest import files_named_in
from benchmarks.common.paths import DATA
from benchmarks.common.records import write_records
from benchmarks.common.resumable import Journal, add_fresh_option, run_row, start_journal
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.iclr import iclr
from gem_tasks.tasks.robustness import robustness
from scorers.lm.loading import DTYPES
from scorers.registry import resolve_metric_names
from scorers.validation.perturbations import GAMING
from scorers.validation.statistics import mean_confidence_interval, paired_comparison

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
DEFAULT_RELEASE = DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"
SCORERS = ("gem", "gem_s", "gem_raw", "bleu", "rouge_l", "bertscore", "bartscore_f1")
NEEDS_ABSTRACT = ("abstract_copy", "paper_copy")


def _values(log, scorer: str, side: str | None) -> dict[str, float]:
    out = {}
    for sample in log.samples or ():
        score = (sample.scores or {}).get(scorer)
        if score is None:
            continue
        value = score.value[side] if side and isinstance(score.value, dict) else score.value
        value = float(value) if not isinstance(value, dict) else math.nan
        out[str(sample.id)] = value
    return out


def _row(label: str, values: dict[str, float]) -> str:
    finite = [v for v in values.values() if math.isfinite(v)]
    if not finite:
        return f"| {label} | 0 | n/a | |"
    low, high = mean_confidence_interval(finite, level=0.90)
    return f"| {label} | {len(finite)} | {np.mean(finite):.3f} | [{low:.3f}, {high:.3f}] |"


def _newest_with(logs: list, scorer: str):
    """The newest of ``logs`` (oldest first) holding a score named ``scorer``, or None."""
    for log in reversed(logs):
        if any(scorer in (sample.scores or {}) for sample in log.samples or ()):
            return log
    return None


def paired_scorers(logs: list) -> list[str]:
    """The metrics scored in ``logs`` as ``<metric>_paired`` scores, in first-seen order."""
    names: list[str] = []
    for log in logs:
        for sample in log.samples or ():
            for key in sample.scores or {}:
                name = key.removesuffix("_paired")
                if key.endswith("_paired") and name not in names:
                    names.append(name)
    return names


def _show(value: float, form: str) -> str:
    return format(value, form) if math.isfinite(value) else "n/a"


def oracle_answers(logs: list) -> str:
    """Markdown: for each binary-critic metric (TVD-MI, CTV: per reference the oracle's answers,
    +½ yes, −½ no) and strategy, the share of "yes" answers on the paper's own references and on
    the other papers' reviews (the negatives), before and after, and their gap: how well the
    oracle tells the paper's reviews from others'. A gap near 0 means the oracle cannot, and the
    metric measures nothing with it; a strategy that raises "yes" on both sides gains nothing in
    an f-variational score, which subtracts the negatives. Read from the scores' metadata (the
    scored sides only); "" when no log holds such answers. ``logs`` may repeat a strategy: the
    newest (last) wins."""
    cells: dict[tuple[str, str], dict[str, dict[str, list[bool]]]] = {}
    for log in logs:
        strategy = str((log.eval.metadata or {}).get("perturbation", "?"))
        found: dict[tuple[str, str], dict[str, dict[str, list[bool]]]] = {}
        for sample in log.samples or ():
            for key, score in (sample.scores or {}).items():
                for side in ("before", "after"):
                    terms = ((score.metadata or {}).get(side) or {}).get("references") or ()
                    for term in terms:
                        answers = term.get("answers")
                        if term.get("side") not in ("positive", "negative") or not answers:
                            continue
                        if any(abs(abs(a) - 0.5) > 1e-9 for a in answers):
                            continue  # not a binary critic
                        bucket = found.setdefault((key.removesuffix("_paired"), strategy), {})
                        bucket.setdefault(side, {}).setdefault(term["side"], []).extend(
                            a > 0 for a in answers
                        )
        cells.update(found)
    if not cells:
        return ""
    lines = [
        "# The oracle's answers: can it tell a paper's reviews from other papers'?\n",
        "| metric | strategy | side | yes: same paper | yes: other papers | gap |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for (metric, strategy), sides in sorted(cells.items()):
        for side in ("before", "after"):
            shares = sides.get(side, {})
            if not shares:
                continue
            pos, neg = shares.get("positive", []), shares.get("negative", [])
            same, other = (float(np.mean(v)) if v else math.nan for v in (pos, neg))
            gap = same - other
            lines.append(
                f"| {metric} | {strategy} | {side} | {_show(same, '.2f')} ({len(pos)}) | "
                f"{_show(other, '.2f')} ({len(neg)}) | {_show(gap, '+.2f')} |"
            )
    lines.append(
        "\nShare of the oracle's answers that are yes (number of answers), over the scored "
        "sides: a side with an unreadable answer is unscored and not counted."
    )
    return "\n".join(lines) + "\n"


def universal_comparison(universal_logs: list, model_logs: list, scorers: list[str]) -> str:
    """Markdown: per metric, the human baseline, the embedded model's own reviews and the
    universal review, with 90% intervals, and the paired differences on shared papers.

    ``universal_logs`` and ``model_logs`` are oldest first; each metric is read from the newest
    log that scored it, so a run that adds metrics keeps the earlier runs' sections."""
    parts = ["# The universal review vs real reviews\n"]
    for scorer in scorers:
        universal_log = _newest_with(universal_logs, f"{scorer}_paired")
        if universal_log is None:
            continue
        model_log = _newest_with(model_logs, scorer)
        human = _values(universal_log, f"{scorer}_paired", "before")
        universal = _values(universal_log, f"{scorer}_paired", "after")
        model = _values(model_log, scorer, None) if model_log is not None else {}
        parts += [
            f"## {scorer}\n",
            "| candidate | n | mean | 90% CI |",
            "| --- | --- | --- | --- |",
            _row("human (held-out review)", human),
        ]
        if model:
            parts.append(_row("SmolLM2-135M's own review", model))
        else:
            parts.append("| SmolLM2-135M's own review | not scored in these runs | | |")
        parts.append(_row("universal review (same text for every paper)", universal))
        for label, first, other in (
            ("universal − human", universal, human),
            ("universal − SmolLM2", universal, model),
            ("SmolLM2 − human", model, human),
        ):
            shared = sorted(set(other) & set(first))
            if not shared:
                continue
            comparison = paired_comparison(
                [first[p] for p in shared], [other[p] for p in shared], level=0.90
            )
            parts.append(
                f"\n{label}: {comparison.mean_difference:+.3f} "
                f"[{comparison.ci_lower:+.3f}, {comparison.ci_upper:+.3f}] over {comparison.n} "
                f"papers, paired t-test p = {comparison.p:.2g}"
            )
        parts.append("")
    return "\n".join(parts) + "\n"


MODEL_ROW = "model"
"""The journal's row (and log folder) of the embedded model's own reviews."""


def journal_timings(journal: Journal, args: argparse.Namespace) -> dict[str, float]:
    """Seconds per row over every invocation the journal records (a strategy split over
    invocations by ``--only`` or resumed after a stop is summed)."""
    timings = {}
    for row in journal.rows():
        if row == MODEL_ROW:
            reviewed = min(args.model_papers or args.papers, args.papers)
            label = f"iclr smollm2/embedded reviews ({reviewed} papers)"
        else:
            label = f"{row} ({args.papers} papers)"
        timings[label] = round(journal.seconds(row), 1)
    return timings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--level",
        choices=("review", "judgments"),
        default="review",
        help="review: ICLR 2020 raw reviews, preprocessed by the evaluation LM (GEM, GEM-S, "
        "GEM-raw); judgments: the GEM authors' ICLR 2023 release with GPT-4o judgment "
        "summaries, no generation (GEM only: no abstracts, so no GEM-S, abstract_copy or "
        "paper_copy)",
    )
    parser.add_argument("--data", type=Path, help="default: the fetched file for --level")
    parser.add_argument("--papers", type=int, default=100)
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float32", help="evaluation-LM precision"
    )
    parser.add_argument("--max-samples", type=int, default=32, help="samples scored at once")
    parser.add_argument(
        "--generation-batch-tokens",
        type=int,
        default=65536,
        help="evaluation-LM generation batch budget (rows x (prompt + new tokens))",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "iclr2020")
    parser.add_argument("--only", nargs="*", help="strategies to run, in this order (default: all)")
    parser.add_argument(
        "--skip-model", action="store_true", help="do not run the embedded model's own reviews"
    )
    parser.add_argument(
        "--model-papers",
        type=int,
        help="the embedded model reviews only the first this many papers (default all)",
    )
    parser.add_argument(
        "--scorers",
        help="comma-separated metrics to score (default: "
        + ",".join(SCORERS)
        + "; at --level judgments: gem); any registered metric, e.g. lm_examiner or the "
        "Scoring Rules cells, to extend the gaming table",
    )
    parser.add_argument(
        "--scorer-options",
        type=json.loads,
        default=None,
        help='per-metric options as JSON, e.g. \'{"br_binoculars": {"observer": "embedded", '
        '"performer": "embedded"}}\'',
    )
    parser.add_argument(
        "--model-only",
        action="store_true",
        help="run no strategy: only the embedded model's reviews, then the report",
    )
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    judgments = args.level == "judgments"
    args.data = args.data or (DEFAULT_RELEASE if judgments else DEFAULT_DATA)
    default = ("gem",) if judgments else SCORERS
    try:
        scorers = tuple(resolve_metric_names(args.scorers)) if args.scorers else default
    except ValueError as exc:
        parser.error(str(exc))
    strategies = [s for s in GAMING if not (judgments and s in NEEDS_ABSTRACT)]
    if judgments:
        args.skip_model = True  # the model's own reviews would need rewriting by the LM
    settings = {  # what decides the numbers: a resume with others is refused
        "level": args.level,
        "papers": args.papers,
        "scorer_lm": args.scorer_lm,
        "dtype": args.dtype,
        "max_samples": args.max_samples,
        "generation_batch_tokens": args.generation_batch_tokens,
        "scorers": list(scorers),
        "scorer_options": args.scorer_options,
        "model_papers": args.model_papers,
    }
    inputs = [args.data, *files_named_in(args.scorer_options)]  # a fit file, say
    provenance, journal = start_journal(args, settings, inputs=inputs)
    logs = args.out / "logs"
    records = write_records(args.data, args.out, args.papers, release=judgments)
    lm_args = {"dtype": args.dtype, "generation_batch_tokens": args.generation_batch_tokens}
    if args.only:  # in the order given, so that a split run measures what matters first
        unknown = sorted(set(args.only) - set(strategies))
        if unknown:
            parser.error(f"--only: unknown or unavailable strategies {unknown}; from {strategies}")
        strategies = list(dict.fromkeys(args.only))
    for strategy in [] if args.model_only else strategies:
        run_row(
            journal,
            strategy,
            lambda strategy=strategy: robustness(
                perturbation=strategy,
                dataset=str(records),
                scorers=",".join(scorers),
                scorer_lm=args.scorer_lm,
                scorer_lm_args=lm_args,
                scorer_options=args.scorer_options,
                level=args.level,
                dataset_summaries=judgments,
            ),
            logs / strategy,
            model="none",
            display="plain",
            max_samples=args.max_samples,
        )
    if not args.skip_model:
        run_row(
            journal,
            MODEL_ROW,
            lambda: iclr(
                dataset=str(records),
                scorers=",".join(scorers),
                scorer_lm=args.scorer_lm,
                scorer_lm_args=lm_args,
                scorer_options=args.scorer_options,
            ),
            logs / MODEL_ROW,
            model="smollm2/embedded",
            display="plain",
            max_tokens=256,
            max_samples=args.max_samples,
            limit=args.model_papers,
        )
    paths = write_report([logs], args.out, progress=False)
    timings = journal_timings(journal, args)
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    universal_logs, model_logs = [], []  # one finished log per row (resumable_eval)
    strategy_logs = []
    for info in sorted(list_eval_logs(str(logs)), key=lambda info: info.mtime or 0):
        path = info.name
        header = read_eval_log(path, header_only=True)
        if header.status != "success":
            continue
        perturbation = (header.eval.metadata or {}).get("perturbation")
        if perturbation:
            strategy_logs.append(read_eval_log(path))  # read once, used twice
            if perturbation == "universal_review":
                universal_logs.append(strategy_logs[-1])
        elif header.eval.task.split("/")[-1] == "iclr":
            model_logs.append(read_eval_log(path))
    if universal_logs:
        found = paired_scorers(universal_logs)
        first = list(dict.fromkeys([*SCORERS, *scorers]))
        ordered = [s for s in first if s in found] + [s for s in found if s not in first]
        (args.out / "universal.md").write_text(
            universal_comparison(universal_logs, model_logs, ordered)
        )
    answers = oracle_answers(strategy_logs)
    if answers:
        (args.out / "oracle.md").write_text(answers)
    print(paths["markdown"].read_text())
    provenance.finish()


if __name__ == "__main__":
    main()
