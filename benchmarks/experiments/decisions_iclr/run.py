"""Does the review get the verdict right? Decision and rating accuracy against ICLR's real
outcomes: the baseline rows (always reject, the base-rate coin, the committee rule over the other
reviewers' ratings, and the committee over every official reviewer's rating from the decisions
file, for data whose reviews carry none), the human row (the held-out reviewer's stored rating)
and the embedded SmolLM2-135M's row (its
review, then its rating and decision asked in a follow-up turn), on ICLR 2020 (the 300 papers of
``iclr2020_gppm``, ratings stored per review) and ICLR 2023 (the 1,200 papers of the GEM release,
no per-review ratings), each set joined with its decisions file by forum id.

    python -m benchmarks.experiments.decisions_iclr.run --model-papers 1200 --max-tokens 512

Writes one folder per set, ``benchmarks/experiments/decisions_iclr/results/<set>/``:
``leaderboard/`` (the leaderboard of the rows as ``gem-tasks leaderboard --html --plot`` writes
it, the page a self-contained ``leaderboard.html``, and ``leaderboard.png``, a screenshot of its
top taken with headless Chromium where one is installed), ``verdicts.md`` (per row, how many
verdicts could not be read and why), ``timings.json``, ``invocations.json`` and
``manifest.json``; the logs and the joined records go to ``logs/`` and ``data/`` (not
committed). ``--sets iclr2020`` runs one set.

The model's row is resumable (``benchmarks.common.resumable``): a run stopped part-way (the
embedded model needs about 25 s a paper on two cores, hours for a set) is continued by the same
command at the same commit, reusing the reviews and scores already in its log; the row's time is
summed over the invocations. ``--fresh`` starts a set over.

``--board-only`` rebuilds a set's folder from the model row's finished log without running it
again (the rule and human rows, seconds each, are rerun as every invocation reruns them): how a
change to the leaderboard or to the rules reaches the committed results. The model row's journal
(``invocations.json``) is kept as its invocations wrote it, and the manifest names the log read.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.boards import rule_row, unread_verdicts, write_board
from benchmarks.common.manifest import Run
from benchmarks.common.model_options import add_model_options, lm_args, model_options
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import (
    Journal,
    JournalRecord,
    add_fresh_option,
    finished_log,
    run_row,
)
from gem_data.openreview.convert import ConvertConfig, convert_dataset
from gem_tasks.tasks.iclr import iclr
from scorers.data.records import load_records

HERE = Path(__file__).resolve().parent
SETS = {
    "iclr2020": (
        "records",
        DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl",
        DATA / "decisions" / "iclr2020_decisions.csv",
    ),
    "iclr2023": (
        "gem-release",
        DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl",
        DATA / "decisions" / "iclr2023_decisions.csv",
    ),
}
SCORERS = (
    "decision_accuracy,decision_balanced_accuracy,decision_fpr,decision_fnr,decision_auc,"
    "rating_error"
)
ROWS = (
    "human",
    "baseline:always_reject",
    "baseline:base_rate",
    "baseline:committee",
    "baseline:committee_all_reviewers",
)
MI_SCORER = "gem_raw"
"""Scored beside the decision metrics for the model's row, so the leaderboard shows both kinds for
the same run (GEM-raw: no statement rewrites, which would cost the 135M model an hour here)."""


def joined_records(name: str, out: Path) -> Path:
    """The set's records with its decisions joined (every review kept, two or more a paper)."""
    source, data, decisions = SETS[name]
    result = convert_dataset(
        ConvertConfig(
            source=source,
            input=str(data),
            out=out / name,
            min_reviews=2,
            reviews_per_paper=None,
            decisions=decisions,
        ),
        progress=False,
    )
    return result.paths["jsonl"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sets",
        default=",".join(SETS),
        help=f"comma-separated sets to run, each into its own folder (default: {','.join(SETS)})",
    )
    parser.add_argument(
        "--model-papers", type=int, default=30, help="papers the embedded model reviews per set"
    )
    parser.add_argument("--model", default="smollm2/embedded", help="the model under test")
    parser.add_argument("--max-tokens", type=int, default=1024, help="its reply limit")
    parser.add_argument(
        "--mi-scorer",
        default=MI_SCORER,
        help=f"the MI scorer beside the decision metrics on the model's row ('none': none; "
        f"default {MI_SCORER})",
    )
    add_model_options(parser, dtype_used_as="as the model under test and as the MI scorer's LM")
    add_fresh_option(parser, help="start a set over instead of resuming its stopped model row")
    parser.add_argument(
        "--board-only",
        action="store_true",
        help="rebuild each set's folder from its model row's finished log (not run again) and "
        "the rule rows (rerun); refused when the row has no finished log",
    )
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.sets.split(",") if n.strip()]
    unknown = [n for n in names if n not in SETS]
    if unknown or not names:
        raise SystemExit(f"unknown sets {unknown or args.sets!r}: choose from {', '.join(SETS)}")
    if args.board_only and args.fresh:
        raise SystemExit("--board-only reads the model row's log, which --fresh would remove")
    missing = [str(p) for n in names for p in SETS[n][1:] if not p.exists()]
    if missing:
        raise SystemExit("\n".join(missing_data(path) for path in missing))
    for name in names:
        if args.board_only:
            rebuild_set(name, args)
        else:
            run_set(name, args)


def run_set(name: str, args: argparse.Namespace) -> None:
    """One set into ``args.out / name``: the model's row (resumed where a stopped invocation
    left it), the rule and human rows (rerun each time: seconds), the leaderboard, the page, the
    screenshot, ``verdicts.md``, ``timings.json``, ``invocations.json``, ``manifest.json``."""
    _, data, decisions = SETS[name]
    folder = args.out / name
    settings = {
        "set": name,
        "model_papers": args.model_papers,
        "model": args.model,
        "max_tokens": args.max_tokens,
        "mi_scorer": args.mi_scorer,
        "dtype": args.dtype,
        "device": args.device,
        "max_connections": args.max_connections,
    }
    provenance = Run(folder, data=[data, decisions], settings={**vars(args), "set": name})
    journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=folder / "logs")
    records = joined_records(name, folder / "data")
    # the model's row first: it is the long one, and once its log has finished a stopped
    # invocation resumes with the quick rows alone (on another machine too: a GPU machine's
    # model row, the rule rows and the page here)
    model = model_row(name, records, folder / "logs" / "model", journal, args)
    write_set(name, folder, records, model, journal)
    provenance.finish()


def rebuild_set(name: str, args: argparse.Namespace) -> None:
    """One set's folder rebuilt from its model row's finished log (``--board-only``): the rule
    rows rerun, the leaderboard, the page, ``verdicts.md``, ``timings.json`` and the manifest
    written again; the journal left as the model row's invocations wrote it.

    Raises:
        SystemExit: the set has no journal, or its model row did not finish, or its log is not
            in the folder (the logs are not committed: run the row, without ``--board-only``).
    """
    _, data, decisions = SETS[name]
    folder = args.out / name
    record = JournalRecord.read(folder)
    settings = record.data["settings"] if record is not None else {}
    label = f"{name}/{settings.get('model', args.model)}"
    log = finished_log(folder / "logs" / "model")
    if record is None or not record.finished(label) or log is None:
        journal = "no journal" if record is None else f"row finished: {record.finished(label)}"
        raise SystemExit(
            f"{folder}: no finished model row to rebuild from ({journal}; log: "
            f"{log or 'none in logs/model'}); run the set without --board-only"
        )
    provenance = Run(
        folder,
        data=[data, decisions, log],
        settings={
            **vars(args),
            "set": name,
            "model_row": {"settings": settings, "commits": record.commits(label), "log": log},
        },
    )
    records = joined_records(name, folder / "data")
    unread = unread_verdicts(read_eval_log(log))
    write_set(name, folder, records, (label, round(record.seconds(label), 1), unread), record)
    provenance.finish()


def write_set(
    name: str,
    folder: Path,
    records: Path,
    model: tuple[str, float, dict[str, Any]] | None,
    journal: JournalRecord,
) -> None:
    """The rule rows (rerun), then the leaderboard of every row, its page and screenshot,
    ``timings.json`` and ``verdicts.md``."""
    rules = folder / "logs" / "rules"
    timings, verdicts = rule_rows(name, records, rules)
    sources = [rules]
    if model is not None:
        label, seconds, unread = model
        timings[label], verdicts[label] = seconds, unread
        sources.append(folder / "logs" / "model")
    write_board(folder, sources, timings=timings, verdicts=verdicts, journal=journal)


def model_row(
    name: str, records: Path, logs: Path, journal: Journal, args: argparse.Namespace
) -> tuple[str, float, dict[str, Any]] | None:
    """The embedded model's row (resumed where a stopped invocation left it): its label, its
    time over the invocations and its unread verdicts; None when ``--model-papers`` is 0."""
    if not args.model_papers:
        return None
    scorers = SCORERS if args.mi_scorer == "none" else f"{SCORERS},{args.mi_scorer}"
    label = f"{name}/{args.model}"
    given = lm_args(args)
    options = model_options(args)
    location = run_row(
        journal,
        label,
        lambda: iclr(
            dataset=str(records),
            candidate="model",
            scorers=scorers,
            scorer_lm_args=given or None,
        ),
        logs,
        model=args.model,
        limit=args.model_papers,
        max_tokens=args.max_tokens,
        display="plain",
        **options,
    )
    log = read_eval_log(location)  # the one read of the model row's samples
    return label, round(journal.seconds(label), 1), unread_verdicts(log)


def rule_rows(
    name: str, records: Path, logs: Path
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """The rule and human rows into ``logs`` (deterministic and quick: rerun each time, never
    mixed with an earlier invocation's): their times and unread verdicts."""
    shutil.rmtree(logs, ignore_errors=True)
    timings: dict[str, float] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    listed = any(r.official_ratings for r in load_records(records))
    for row in ROWS:
        if row == "baseline:committee_all_reviewers" and not listed:
            print(f"{name}: no paper lists its official ratings: no {row} row", flush=True)
            continue
        label = f"{name}/{row}"
        timings[label], verdicts[label] = rule_row(
            iclr(dataset=str(records), candidate=row, scorers=SCORERS), logs, name=label
        )
    return timings, verdicts


if __name__ == "__main__":
    main()
