"""``gem-tasks data``: fetch the public datasets the evidence uses, build GRE-bench datasets
from OpenReview and convert public releases.

``add_data_commands(subparsers)`` registers ``data fetch``, ``data build`` and ``data convert``
on the ``gem-tasks`` parser; :func:`main` runs them on their own (``python -m gem_tasks.cli.data``).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["add_data_commands", "main"]


def _non_negative_float(value: str) -> float:
    number = float(value)
    if not number >= 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {value}")
    return number


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _add_selection_args(parser: argparse.ArgumentParser) -> None:
    from scorers.lm.backends import spec_forms

    parser.add_argument("--out", required=True, type=Path, help="output folder")
    parser.add_argument(
        "--min-reviews",
        type=_positive,
        default=3,
        help="keep papers with at least this many non-empty reviews (default 3, the GEM setup)",
    )
    parser.add_argument(
        "--reviews-per-paper",
        type=_positive,
        default=3,
        help="reviews sampled per paper (default 3, the GEM setup)",
    )
    parser.add_argument("--all-reviews", action="store_true", help="keep every review")
    parser.add_argument("--papers", type=_positive, help="sample this many papers (default all)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    parser.add_argument(
        "--summaries",
        action="store_true",
        help="store a judgment summary of every review (GEM App. C.1) written by --scorer-lm, "
        "for -T dataset_summaries=true",
    )
    parser.add_argument(
        "--assw",
        action="store_true",
        help="store the ASSW synopsis (App. C.4) of every paper with text, by --scorer-lm",
    )
    parser.add_argument(
        "--scorer-lm",
        default="embedded",
        help="evaluation LM writing the summaries: "
        + ", ".join(spec_forms())
        + " (default embedded)",
    )
    parser.add_argument(
        "--scorer-lm-args",
        type=json.loads,
        default=None,
        metavar="JSON",
        help='backend options as JSON, e.g. \'{"dtype": "bfloat16"}\'',
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _enricher(args: argparse.Namespace) -> Any:
    if not (args.summaries or args.assw):
        return None
    from gem_data.openreview.enrich import Enricher, fit_to_context
    from scorers.lm import load_evaluation_lm
    from scorers.lm.generation import LocalGenerator

    lm = load_evaluation_lm(args.scorer_lm, **(args.scorer_lm_args or {}))
    return Enricher(
        generator=LocalGenerator(lm),
        summaries=args.summaries,
        assw=args.assw,
        fit_text=fit_to_context(lm) if args.assw else None,
    )


def _report(result: Any) -> int:
    counts = result.card["counts"]
    print(
        f"{counts['papers']} papers, {counts['reviews']} reviews -> {result.paths['jsonl'].parent}"
    )
    failures = result.card.get("extraction_failures") or []
    if failures:
        print(f"{len(failures)} paper(s) without text: see data_card.md", file=sys.stderr)
    print("written: " + ", ".join(str(p) for p in result.paths.values()), file=sys.stderr)
    return 0


def _fail(command: str, exc: Exception) -> int:
    print(f"gem-tasks data {command}: {exc}", file=sys.stderr)
    return 2


def _build(args: argparse.Namespace) -> int:
    from gem_data.openreview.build import BuildConfig, build_dataset
    from gem_data.openreview.errors import OpenReviewError
    from gem_data.openreview.filters import BEYOND_RATING_FILTERS
    from scorers.data.records import RecordError

    preset = BEYOND_RATING_FILTERS if args.beyond_rating_filters else {}
    config = BuildConfig(
        venue=args.venue,
        out=args.out,
        min_reviews=args.min_reviews,  # the preset's 3 is the default already
        min_confidence=args.min_confidence
        if args.min_confidence is not None
        else preset.get("min_confidence"),
        max_rating_variance=args.max_rating_variance
        if args.max_rating_variance is not None
        else preset.get("max_rating_variance"),
        filter_preset="beyond-rating" if args.beyond_rating_filters else None,
        reviews_per_paper=None if args.all_reviews else args.reviews_per_paper,
        papers=args.papers,
        seed=args.seed,
        pdf=args.pdf,
        strip_references=args.strip_references,
        api_version=args.api,
        refresh_listing=args.refresh,
        retry_failed=args.retry_failed,
    )
    try:
        result = build_dataset(config, enricher=_enricher(args), progress=not args.quiet)
    except (OpenReviewError, RecordError, ValueError) as exc:
        return _fail("build", exc)
    return _report(result)


def _convert(args: argparse.Namespace) -> int:
    from gem_data.openreview.convert import ConvertConfig, convert_dataset
    from scorers.data.records import RecordError

    config = ConvertConfig(
        source=args.source,
        input=args.input,
        out=args.out,
        min_reviews=args.min_reviews,
        reviews_per_paper=None if args.all_reviews else args.reviews_per_paper,
        papers=args.papers,
        seed=args.seed,
        split=args.split,
        limit_rows=args.limit_rows,
        decisions=args.decisions,
    )
    try:
        result = convert_dataset(config, enricher=_enricher(args), progress=not args.quiet)
    except (RecordError, ValueError) as exc:
        return _fail("convert", exc)
    return _report(result)


def _fetch(args: argparse.Namespace) -> int:
    from gem_data.fetch import FetchError, fetch_dataset, fetch_order, fetched
    from scorers.data.records import RecordError

    try:
        order = fetch_order(args.names)
    except KeyError as exc:
        return _fail("fetch", ValueError(exc.args[0]))
    asked = {name for name in args.names}
    for entry in order:
        if fetched(entry, args.out):
            print(f"{entry.name}: already in {args.out / entry.folder}")
            continue
        try:
            folder = fetch_dataset(
                entry.name, args.out, mirror=args.mirror, progress=not args.quiet
            )
        except (FetchError, RecordError) as exc:
            needing = [e.name for e in order if entry.name in e.requires and e.name in asked]
            if entry.name not in asked and "all" not in asked and needing:
                exc = type(exc)(f"{', '.join(needing)} needs {entry.name}, fetched first: {exc}")
            return _fail("fetch", exc)
        print(f"{entry.name}: {folder} (see {folder / 'SOURCE.md'})")
    return 0


def _fetch_epilog() -> str:
    from gem_data.fetch import DATASETS

    width = max(len(name) for name in DATASETS)
    lines = ["datasets:"]
    for entry in DATASETS.values():
        lines += textwrap.wrap(
            entry.summary,
            width=88,
            initial_indent=f"  {entry.name:<{width}}  ",
            subsequent_indent=" " * (width + 4),
        )
    lines += [f"  {'all':<{width}}  every dataset above"]
    return "\n".join(lines)


def add_data_commands(subparsers: Any) -> None:
    """Register ``data fetch``, ``data build`` and ``data convert`` on a parser's subparsers;
    each sets ``run`` to a function of the parsed arguments returning the exit status."""
    data = subparsers.add_parser(
        "data",
        help="fetch the public datasets, build GRE-bench datasets from OpenReview, convert "
        "public releases",
    )
    commands = data.add_subparsers(dest="data_command", required=True)
    _add_fetch(commands)
    _add_build(commands)
    _add_convert(commands)


def _add_fetch(commands: Any) -> None:
    """``data fetch``: the pinned public datasets."""
    fetch = commands.add_parser(
        "fetch",
        help="download a public dataset the evidence uses and convert it for the tasks",
        # written out as it prints: the epilog's dataset list keeps its lines
        description=textwrap.fill(
            "Download each named dataset from where it is published (a repository pinned to a "
            "commit; every file checked against its pinned digest), convert it to the "
            "files the tasks and experiments read, check those against the pinned outputs, and "
            "write its LICENSE and SOURCE.md (source, licence, attribution) beside them, in "
            "OUT/<dataset folder>. A stopped fetch resumes; a dataset already fetched intact is "
            "left as it is.",
            width=88,
        ),
        epilog=_fetch_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fetch.add_argument("names", nargs="+", metavar="NAME", help="datasets to fetch (see below)")
    fetch.add_argument(
        "--out",
        type=Path,
        default=Path("data"),
        help="the data folder (default ./data, where the experiments look)",
    )
    fetch.add_argument(
        "--mirror",
        metavar="URL",
        help="fetch from a copy laid out as <owner>/<repository>/<commit>/<path> instead of "
        "raw.githubusercontent.com",
    )
    fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.set_defaults(run=_fetch)


def _add_build(commands: Any) -> None:
    """``data build``: a GRE-bench dataset from OpenReview."""
    build = commands.add_parser(
        "build",
        help="fetch an ICLR or NeurIPS year from OpenReview into canonical records (resumable)",
        description="Fetch submissions and official reviews of a venue (ICLR 2018-, NeurIPS "
        "2021-) from OpenReview, map every rating onto the ICLR 2024/25 scale (raw value kept), "
        "apply the optional quality filters (--min-confidence, then --min-reviews, then "
        "--max-rating-variance), sample papers and reviews with a seed, extract paper text "
        "from the PDFs, and write records.jsonl, records.parquet and a data card. Re-running "
        "the same command resumes an interrupted build.",
    )
    build.add_argument(
        "--venue",
        required=True,
        help="OpenReview venue id, e.g. ICLR.cc/2025/Conference or NeurIPS.cc/2023/Conference",
    )
    _add_selection_args(build)
    build.add_argument(
        "--min-confidence",
        type=_non_negative_float,
        default=None,
        metavar="C",
        help="keep only reviews with confidence >= C, before --min-reviews counts them "
        "(default off; Beyond Rating: 4)",
    )
    build.add_argument(
        "--max-rating-variance",
        type=_non_negative_float,
        default=None,
        metavar="V",
        help="drop papers whose surviving reviews' mapped ratings have a population variance "
        "above V, after --min-reviews; a paper exactly at V is kept (default off; Beyond "
        "Rating: 1.5)",
    )
    build.add_argument(
        "--beyond-rating-filters",
        action="store_true",
        help="the Beyond Rating quality filters: --min-confidence 4, --min-reviews 3, "
        "--max-rating-variance 1.5 (flags given explicitly win)",
    )
    build.add_argument(
        "--pdf",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="download PDFs and extract the paper text (default on)",
    )
    build.add_argument(
        "--strip-references",
        action="store_true",
        help="cut the paper text at its references/appendix heading",
    )
    build.add_argument(
        "--api",
        type=int,
        choices=(1, 2),
        default=None,
        help="OpenReview API version (default: v1 up to ICLR 2023 and NeurIPS 2022, v2 after)",
    )
    build.add_argument("--refresh", action="store_true", help="fetch the submission list again")
    build.add_argument("--retry-failed", action="store_true", help="retry PDFs that failed before")
    build.set_defaults(run=_build)


def _add_convert(commands: Any) -> None:
    """``data convert``: a public release into canonical records."""
    convert = commands.add_parser(
        "convert",
        help="convert the GEM authors' release or a Hub dataset into canonical records",
        description="Convert a published review dataset into records and a data card, with "
        "the same filters and sampling as 'data build'. Sources: gem-release (the GEM authors' "
        "ICLR 2023 JSONL), records (canonical records, e.g. to join decisions) and "
        "hub:reviewbench (Samarth0710/reviewbench; INPUT is its Hub id or local parquet/jsonl "
        "files). --decisions joins each paper's accept/reject decision by id.",
    )
    convert.add_argument(
        "--from",
        dest="source",
        required=True,
        help="gem-release, records (canonical records) or hub:<name>",
    )
    convert.add_argument("input", help="input file, folder or Hub dataset id")
    _add_selection_args(convert)
    convert.add_argument("--split", help="Hub split (default: the dataset's ICLR split)")
    convert.add_argument("--limit-rows", type=_positive, help="read at most this many rows")
    convert.add_argument(
        "--decisions",
        type=Path,
        help="CSV (id, decision, accept) or JSONL of accept/reject decisions, joined by paper id",
    )
    convert.set_defaults(run=_convert)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``data fetch`` / ``build`` / ``convert`` without the rest of the CLI; returns the
    status."""
    parser = argparse.ArgumentParser(prog="gem-tasks")
    commands = parser.add_subparsers(dest="command", required=True)
    add_data_commands(commands)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
