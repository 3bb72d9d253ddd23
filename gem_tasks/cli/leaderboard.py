"""``gem-tasks leaderboard``: rank models from their logs (see
:mod:`gem_tasks.analysis.leaderboard.compare`), write the tables, plots and correlations."""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Any

from gem_tasks.analysis.correlation_options import add_correlation_arguments

__all__ = ["add_leaderboard_command"]


def _compare_doc() -> str:
    """The leaderboard module's docstring (the command's description), read from its source:
    importing it would import pandas and Inspect, which ``gem-tasks --help`` does not need (an
    installation without the source, only bytecode, imports it)."""
    source = Path(__file__).resolve().parents[1] / "analysis" / "leaderboard" / "compare.py"
    try:
        text = source.read_text(encoding="utf-8")
    except OSError:
        from gem_tasks.analysis.leaderboard import compare

        return compare.__doc__ or ""
    return ast.get_docstring(ast.parse(text), clean=False) or ""


def _run(args: argparse.Namespace) -> int:
    from gem_tasks.analysis.leaderboard.compare import compare_logs
    from gem_tasks.analysis.leaderboard.correlate import (
        correlation_markdown,
        correlations_from_args,
        write_correlations,
    )
    from gem_tasks.analysis.leaderboard.html import write_leaderboard_html
    from gem_tasks.analysis.leaderboard.params import read_params
    from gem_tasks.analysis.leaderboard.render import leaderboard_markdown, write_leaderboard

    if args.plot and not args.out:
        raise ValueError("--plot writes PNG files: give an output folder with --out DIR")
    if args.html and not args.out:
        raise ValueError("--html writes leaderboard.html: give an output folder with --out DIR")
    params = read_params(args.params) if args.params else None
    board = compare_logs(args.logs, merge=args.merge, progress=not args.quiet)
    correlations = correlations_from_args(board, args)
    if args.out:  # files first: the printout may go to a pipe that closes early
        paths = write_leaderboard(board, args.out, params=params, plot=args.plot)
        if args.html:
            plots = {
                tuple(key.split(":", 2)[1:]): path
                for key, path in paths.items()
                if key.startswith("plot:")
            }
            paths["html"] = write_leaderboard_html(
                board, Path(args.out) / "leaderboard.html", plots
            )
        for result in correlations:
            paths.update(
                {
                    f"{k}:{result.against}": v
                    for k, v in write_correlations(result, args.out).items()
                }
            )
        print("written: " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    print(leaderboard_markdown(board))
    for result in correlations:
        print(correlation_markdown(result))
    return 0


def add_leaderboard_command(subparsers: Any) -> None:
    """Register ``gem-tasks leaderboard`` on an argparse subparsers object; its ``run`` default
    returns the exit status."""
    parser = subparsers.add_parser(
        "leaderboard",
        help="rank models from their gem_tasks/iclr and gem_tasks/review_quality logs (mean, SE, "
        "90%% CI, paired tests)",
        description=_compare_doc(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("logs", nargs="+", help="Inspect log files or folders")
    parser.add_argument("--out", help="folder for leaderboard.md/.csv/.json (and plots)")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="rank scores with different signatures (evaluation LM, preprocessor, prompts, "
        "synopsis, options, family version) together; the package version never splits them",
    )
    parser.add_argument(
        "--params", help="YAML or CSV of model -> parameters in billions (for the plot)"
    )
    parser.add_argument("--plot", action="store_true", help="write a PNG per metric (needs --out)")
    parser.add_argument(
        "--html",
        action="store_true",
        help="write leaderboard.html, one self-contained page: sortable tables with intervals, "
        "baseline rows marked, the plots (with --plot) embedded (needs --out)",
    )
    add_correlation_arguments(parser, "--correlate-with", "--against")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=_run)
