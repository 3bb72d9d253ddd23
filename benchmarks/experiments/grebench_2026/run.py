"""GRE-bench's ICLR 2026 edition scored end to end: the rows every user of the edition compares
against, the embedded SmolLM2-135M's row, and how well the reviewers' own ratings predict the
outcome compared with ICLR 2023.

On the 1,200 papers of ``iclr2026_records.jsonl`` (``gem-tasks data fetch iclr2026``):

- the human row (the held-out reviewer's review and stored rating) and the decision rules
  (``always_reject``, ``base_rate``, ``committee``: the other reviewers' mean rating) with every
  metric that needs no model: the decision metrics and ``rating_error`` (on ICLR 2026's 0-10
  scale, accept side from 6), and for the human row also ``bleu``, ``rouge_l`` and
  ``br_rating_mae``;
- GEM, GEM-S (the paper's abstract as the synopsis) and GEM-raw of the human row, under the
  embedded evaluation LM, on the first ``--mi-papers`` papers (the file's order is a seeded
  random draw, so the first N are a random sample);
- the embedded model's row on the first ``--model-papers`` papers: its review, then its rating
  and decision asked in a follow-up turn on ICLR 2026's scale, scored by the decision metrics,
  ``rating_error`` and GEM-raw;
- ``naive_rules.md``: the accuracy of "accept when the mean rating is at least t" on these
  papers (ratings as of 2025-11-22, before the rebuttal period ended: mostly the initial ones)
  and on ICLR 2023's 1,200 papers (the final ratings of the decisions file).

    python -m benchmarks.experiments.grebench_2026.run --mi-papers 100 --model-papers 100

Writes ``benchmarks/experiments/grebench_2026/results/``: ``leaderboard/`` (as ``gem-tasks
leaderboard --html --plot`` writes it, the self-contained ``leaderboard.html`` and its screenshot
``leaderboard.png`` where Chromium is installed), ``naive_rules.md``, ``verdicts.md``,
``timings.json``, ``invocations.json`` and ``manifest.json``; the Inspect logs go to ``logs/``
(not committed). The two model-scored rows are resumable (``benchmarks.common.resumable``): the
same command at the same commit continues a stopped run from its logs; ``--fresh`` starts over.
The rule rows are rerun by every invocation (seconds each).
"""

from __future__ import annotations

import argparse
import csv
import random
import shutil
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.boards import rule_row, unread_verdicts, write_board
from benchmarks.common.manifest import Run
from benchmarks.common.model_options import add_model_options, lm_args, model_options
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import Journal, add_fresh_option, run_row
from gem_tasks.tasks.iclr import iclr
from scorers.data.records import load_records
from scorers.scales import to_iclr

HERE = Path(__file__).resolve().parent
RECORDS = DATA / "iclr2026" / "iclr2026_records.jsonl"
ICLR2023_DECISIONS = DATA / "decisions" / "iclr2023_decisions.csv"
DECISION_SCORERS = (
    "decision_accuracy,decision_balanced_accuracy,decision_fpr,decision_fnr,decision_auc,"
    "rating_error"
)
HUMAN_SCORERS = f"{DECISION_SCORERS},bleu,rouge_l,br_rating_mae"
"""The human row's metrics that need no model: the decision metrics, and the text overlap with
the reference reviews and Beyond Rating's rating error."""
RULES = ("baseline:always_reject", "baseline:base_rate", "baseline:committee")
MI_SCORERS = "gem,gem_s,gem_raw"
MODEL_SCORERS = f"{DECISION_SCORERS},gem_raw"
"""The model's row: the decision metrics, and GEM-raw beside them (no statement rewrites, whose
cost on the 135M model would double the row's time)."""
THRESHOLDS = (4.0, 4.5, 5.0, 5.5, 6.0)
"""The mean-rating thresholds of ``naive_rules.md``, on ICLR's scale (``iclr``, 1-10), which both
editions' ratings are read on there: ICLR 2026's values through the one conversion of
:func:`scorers.scales.to_iclr` (0, 2, 4 -> 1, 3, 5: the labels of the same rank)."""
FOLDS = 10
"""Folds of the cross-validated threshold (chosen on nine tenths, scored on the tenth)."""
FOLD_SEED = 20261202


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=RECORDS, help="the edition's records")
    parser.add_argument(
        "--iclr2023-decisions",
        type=Path,
        default=ICLR2023_DECISIONS,
        help="ICLR 2023's decisions file with its ratings column, for naive_rules.md "
        "('gem-tasks data fetch decisions')",
    )
    parser.add_argument(
        "--mi-papers",
        type=int,
        default=100,
        help="papers whose human review gets GEM, GEM-S and GEM-raw (0: none)",
    )
    parser.add_argument(
        "--model-papers", type=int, default=100, help="papers the embedded model reviews (0: none)"
    )
    parser.add_argument("--model", default="smollm2/embedded", help="the model under test")
    parser.add_argument("--max-tokens", type=int, default=512, help="its reply limit")
    add_model_options(parser, dtype_used_as="as the model under test and as the scorers' LM")
    add_fresh_option(parser, help="forget a stopped run's logs and journal, start over")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    missing = [p for p in (args.data, args.iclr2023_decisions) if not p.exists()]
    if missing:
        raise SystemExit("\n".join(missing_data(path) for path in missing))
    if args.mi_papers < 0 or args.model_papers < 0:
        raise SystemExit("--mi-papers and --model-papers count papers: 0 or more")

    settings = {
        "data": str(args.data),
        "mi_papers": args.mi_papers,
        "model_papers": args.model_papers,
        "model": args.model,
        "max_tokens": args.max_tokens,
        "dtype": args.dtype,
        "device": args.device,
        "max_connections": args.max_connections,
    }
    provenance = Run(
        args.out, data=[args.data, args.iclr2023_decisions], settings=vars(args).copy()
    )
    logs = args.out / "logs"
    journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=logs)
    timings: dict[str, float] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    sources = [logs / "rules"]
    given = lm_args(args)

    def resumable_row(label: str, folder: str, candidate: str, scorers: str, **options: Any) -> str:
        """A resumable row of ``iclr`` on ``args.data`` into ``logs / folder``, timed by the
        journal (``options`` go to Inspect): its finished log's path."""
        location = run_row(
            journal,
            label,
            lambda: iclr(
                dataset=str(args.data),
                candidate=candidate,
                scorers=scorers,
                scorer_lm_args=given or None,
            ),
            logs / folder,
            display="plain",
            **options,
        )
        timings[label] = round(journal.seconds(label), 1)
        sources.append(logs / folder)
        return location

    if args.mi_papers:
        label = "human: gem, gem_s, gem_raw"
        resumable_row(label, "human_mi", "human", MI_SCORERS, model="none", limit=args.mi_papers)
    if args.model_papers:
        location = resumable_row(
            args.model,
            "model",
            "model",
            MODEL_SCORERS,
            model=args.model,
            limit=args.model_papers,
            max_tokens=args.max_tokens,
            **model_options(args),
        )
        verdicts[args.model] = unread_verdicts(read_eval_log(location))
    rule_timings, rule_verdicts = rule_rows(args.data, logs / "rules")
    timings, verdicts = {**rule_timings, **timings}, {**rule_verdicts, **verdicts}
    write_board(args.out, sources, timings=timings, verdicts=verdicts, journal=journal)
    (args.out / "naive_rules.md").write_text(
        naive_rules_table(
            mean_ratings_of_records(args.data),
            mean_ratings_of_decisions(args.iclr2023_decisions),
            data=args.data,
            decisions=args.iclr2023_decisions,
        )
    )
    provenance.finish()


def rule_rows(data: Path, logs: Path) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """The human row with every metric that needs no model, and the decision rules, on every
    paper into ``logs`` (deterministic and quick: rerun each time): their times and unread
    verdicts."""
    shutil.rmtree(logs, ignore_errors=True)
    timings: dict[str, float] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    for row, scorers in (("human", HUMAN_SCORERS), *((rule, DECISION_SCORERS) for rule in RULES)):
        timings[row], verdicts[row] = rule_row(
            iclr(dataset=str(data), candidate=row, scorers=scorers), logs, name=row
        )
    return timings, verdicts


def mean_ratings_of_records(path: Path) -> list[tuple[float, bool]]:
    """Per decided paper of canonical records, the mean of its reviews' ratings on ICLR's scale
    (:func:`scorers.scales.to_iclr` of each rating on the records' own scale) and whether it was
    accepted. Papers without a decision or a rated review are left out (counted by the caller
    through the returned length)."""
    papers = []
    for record in load_records(path):
        ratings = [to_iclr(r.rating, record.rating_scale) for r in record.reviews
                   if r.rating is not None]  # fmt: skip
        if record.decision is None or record.decision.accept is None or not ratings:
            continue
        papers.append((sum(ratings) / len(ratings), bool(record.decision.accept)))
    return papers


def mean_ratings_of_decisions(path: Path) -> list[tuple[float, bool]]:
    """Per paper of a decisions file (``id,decision,accept,ratings``, ratings ``;``-separated, on
    ICLR 2023's scale, which is ICLR's), the mean rating and whether it was accepted; papers
    without ratings are left out.

    Raises:
        SystemExit: the file has no ``ratings`` column.
    """
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if rows and "ratings" not in rows[0]:
        raise SystemExit(f"{path}: no ratings column (id,decision,accept,ratings expected)")
    papers = []
    for row in rows:
        ratings = [float(v) for v in (row["ratings"] or "").split(";") if v.strip()]
        if ratings:
            papers.append((sum(ratings) / len(ratings), row["accept"].strip() == "1"))
    return papers


def rule_accuracy(papers: list[tuple[float, bool]], threshold: float | None) -> float:
    """Share of papers whose decision "accept when the mean rating is at least ``threshold``"
    gets right (``None``: always reject)."""
    if not papers:
        raise ValueError("no paper with a decision and a rating")
    right = sum(
        (threshold is not None and mean >= threshold) == accepted for mean, accepted in papers
    )
    return right / len(papers)


def rating_auc(papers: list[tuple[float, bool]]) -> float:
    """The mean rating's AUC as a score for acceptance (threshold-free, so it compares sets of
    different accept rates): the share of (accepted, rejected) pairs the accepted paper rates
    higher, ties counted half."""
    accepted = [mean for mean, a in papers if a]
    rejected = [mean for mean, a in papers if not a]
    if not accepted or not rejected:
        raise ValueError("the AUC needs accepted and rejected papers")
    wins = sum((a > r) + 0.5 * (a == r) for a in accepted for r in rejected)
    return wins / (len(accepted) * len(rejected))


def best_threshold(papers: list[tuple[float, bool]]) -> float:
    """The threshold of :data:`THRESHOLDS` that decides ``papers`` best (ties: the lowest)."""
    return max(THRESHOLDS, key=lambda t: (rule_accuracy(papers, t), -t))


def cross_validated_accuracy(
    papers: list[tuple[float, bool]], *, folds: int = FOLDS, seed: int = FOLD_SEED
) -> float:
    """The accuracy of a threshold chosen on other papers: the papers dealt into ``folds``
    seeded folds (one paper each where there are fewer papers: leave-one-out), each fold decided
    by the best threshold of the others, the share right over all papers."""
    if len(papers) < 2:
        raise ValueError("a threshold chosen on other papers needs two papers or more")
    folds = min(folds, len(papers))
    order = list(range(len(papers)))
    random.Random(seed).shuffle(order)
    right = 0
    for k in range(folds):
        held = set(order[k::folds])
        threshold = best_threshold([p for i, p in enumerate(papers) if i not in held])
        right += sum((papers[i][0] >= threshold) == papers[i][1] for i in held)
    return right / len(papers)


def naive_rules_table(
    initial: list[tuple[float, bool]],
    final: list[tuple[float, bool]],
    *,
    data: Path,
    decisions: Path,
) -> str:
    """``naive_rules.md``: the accuracy of always-reject and of mean-rating thresholds on the
    ICLR 2026 papers (initial ratings) and on ICLR 2023's (final ratings), both on ICLR's scale;
    a threshold fixed in advance (the accept side's first value), and thresholds chosen on other
    papers than they decide (the other edition's best; the best of nine folds, cross-validated)."""
    sets = (
        ("ICLR 2026 (ratings as of 2025-11-22: mostly initial)", initial, data),
        ("ICLR 2023 (final ratings)", final, decisions),
    )
    header = ["rule"] + [f"{name}: {len(papers)} papers" for name, papers, _ in sets]
    lines = [
        "# Naive decision rules: initial ratings against final ones",
        "",
        "Accuracy of deciding each paper from its reviewers' ratings alone, against the venue's",
        "decision, with every rating on ICLR's scale (1-10; ICLR 2026's 0, 2, 4 read as 1, 3, 5,",
        "the labels of the same rank). ICLR 2026's rejects are inferred (not on the accepted",
        "lists). Files: " + ", ".join(f"`{p.name}`" for _, _, p in sets) + ".",
        "",
        "| " + " | ".join(header) + " |",
        "| " + " | ".join("---" for _ in header) + " |",
    ]
    accept_rates = [sum(a for _, a in papers) / len(papers) for _, papers, _ in sets]
    lines.append("| accept rate | " + " | ".join(f"{rate:.3f}" for rate in accept_rates) + " |")
    for threshold in (None, *THRESHOLDS):
        if threshold is None:
            rule = "always reject"
        elif threshold == 6.0:
            rule = "accept when mean rating ≥ 6 (the accept side's first value: fixed in advance)"
        else:
            rule = f"accept when mean rating ≥ {threshold:g}"
        cells = [f"{rule_accuracy(papers, threshold):.3f}" for _, papers, _ in sets]
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    cells = [f"{rating_auc(papers):.3f}" for _, papers, _ in sets]
    lines.append("| AUC of the mean rating (no threshold) | " + " | ".join(cells) + " |")
    (_, first, _), (_, second, _) = sets
    chosen = [best_threshold(second), best_threshold(first)]
    cells = [f"≥ {t:g} ({rule_accuracy(papers, t):.3f})" for t, (_, papers, _) in zip(chosen, sets)]
    lines.append("| the other edition's best threshold | " + " | ".join(cells) + " |")
    cells = [f"{cross_validated_accuracy(papers):.3f}" for _, papers, _ in sets]
    lines.append(
        f"| best threshold chosen on the other folds ({FOLDS}-fold cross-validated) | "
        + " | ".join(cells)
        + " |"
    )
    best = [f"≥ {best_threshold(p):g} ({rule_accuracy(p, best_threshold(p)):.3f})"
            for _, p, _ in sets]  # fmt: skip
    lines.append(
        "| best threshold of these, on the papers it decides (optimistic: chosen and scored on "
        "the same papers) | " + " | ".join(best) + " |"
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
