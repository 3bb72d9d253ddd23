"""The ``gem-tasks`` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from gem_tasks.analysis.correlation_options import add_correlation_arguments
from gem_tasks.cli.data import add_data_commands
from gem_tasks.cli.finetune import add_finetune_commands
from gem_tasks.cli.leaderboard import add_leaderboard_command

__all__ = ["main"]


def _report(args: argparse.Namespace) -> int:
    from gem_tasks.analysis.report import write_report

    paths = write_report(
        args.logs,
        args.out,
        progress=not args.quiet,
        against=args.against or (),
        corpus_key=args.corpus_key or None,
        min_scored=args.min_scored,
    )
    print(paths["markdown"].read_text(encoding="utf-8"))
    print("written: " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def _autopre_qualification(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from gem_tasks.analysis.autopre import qualification_from_log
    from scorers.metrics.autopre import load_qualification

    table = qualification_from_log(args.log)
    text = json.dumps(table, indent=1) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"written: {args.out}", file=sys.stderr)
    else:
        print(text, end="")
    panel = ", ".join(f"{j} (w={table['weights'][j]:.3f})" for j in table["panel"]) or "empty"
    print(f"panel: {panel}{' (' + table['reason'] + ')' if table.get('reason') else ''}",
          file=sys.stderr)  # fmt: skip
    if table["panel"]:
        load_qualification(table)  # what autopre_panel will read: refuse a broken table now
    return 0


def _autopre_ranking(args: argparse.Namespace) -> int:
    from gem_tasks.analysis.autopre import autopre_leaderboard, autopre_markdown

    rows = autopre_leaderboard(
        args.logs,
        metric=args.metric,
        level=args.level,
        resamples=args.resamples,
        seed=args.seed,
    )
    print(autopre_markdown(rows, level=args.level))
    return 0


def _lm_eval_path(args: argparse.Namespace) -> int:
    from gem_tasks.lm_eval_tasks import CONFIG_PATH

    print(CONFIG_PATH)
    return 0


def _metrics(args: argparse.Namespace) -> int:
    from scorers.registry import list_metrics

    rows = [
        (
            spec.name,
            spec.family,
            "higher" if spec.higher_is_better else "lower",
            spec.headline_name,
            ", ".join(spec.aliases) or "-",
        )
        for spec in list_metrics()
    ]
    header = ("name", "family", "better", "headline", "aliases")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0


def _docs_reference(args: argparse.Namespace) -> int:
    from gem_tasks.docs_reference import write_reference

    for path in write_reference(Path(args.out), build_parser()):
        print(f"written: {path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gem-tasks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report",
        help="metric validation report (SMD table, failure counts, correlations) from logs; "
        "with --against METRIC, every metric's correlation with METRIC across models",
    )
    report.add_argument("logs", nargs="+", help="Inspect log files or folders")
    report.add_argument("--out", default="validation_report", help="output folder")
    add_correlation_arguments(report, "--against")
    report.add_argument("--quiet", action="store_true", help="no progress bar")
    report.set_defaults(run=_report)
    lm_eval_path = commands.add_parser(
        "lm-eval-path",
        help="the folder of the lm-evaluation-harness task configs (gre_bench_iclr), for "
        'lm_eval --include_path "$(gem-tasks lm-eval-path)"',
    )
    lm_eval_path.set_defaults(run=_lm_eval_path)
    qualification = commands.add_parser(
        "autopre-qualification",
        help="the qualification of an autopre_exam log (exam table, panel, weights, and the "
        "generator each judge answered as) as JSON, for the autopre_panel scorer's "
        "qualification option",
    )
    qualification.add_argument("log", help="an Inspect log of gem_tasks/autopre_exam")
    qualification.add_argument("--out", help="write the JSON here (default: standard output)")
    qualification.set_defaults(run=_autopre_qualification)
    ranking = commands.add_parser(
        "autopre-ranking",
        help="rank the models of iclr logs by their Auto-PRE panel verdicts (win rate against "
        "the held-out human review on the papers all of them were judged on), with bootstrap "
        "intervals on the win rate and on the rank",
    )
    ranking.add_argument("logs", nargs="+", help="Inspect log files or folders")
    ranking.add_argument(
        "--metric",
        default="autopre_panel",
        help="the panel scorer (default autopre_panel; or autopre_panel_unqualified)",
    )
    ranking.add_argument("--level", type=float, default=0.90, help="interval level (0.90)")
    ranking.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    ranking.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    ranking.set_defaults(run=_autopre_ranking)
    metrics = commands.add_parser(
        "metrics",
        help="every registered metric (the names -T scorers=... takes): family, whether higher "
        "is better, the headline number, aliases",
    )
    metrics.set_defaults(run=_metrics)
    docs = commands.add_parser(
        "docs-reference",
        help="write the documentation's generated pages (the metric table from the registry, "
        "this command-line reference) under a docs folder",
    )
    docs.add_argument("--out", default="docs", help="the docs folder (default docs)")
    docs.set_defaults(run=_docs_reference)
    add_leaderboard_command(commands)
    add_data_commands(commands)
    add_finetune_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"gem-tasks {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
