"""The options of a cross-model correlation (``gem-tasks leaderboard --against``, ``gem-tasks
report --against``): their defaults and their argparse definition, in a module that imports
nothing heavy, so that the command line starts without pandas or Inspect (the correlation itself
is :mod:`gem_tasks.analysis.leaderboard.correlate`)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "DEFAULT_AGAINST",
    "DEFAULT_CORPUS_KEY",
    "DEFAULT_MIN_SCORED",
    "add_correlation_arguments",
]

DEFAULT_AGAINST = "br_rating_mae"
"""The metric every other one is correlated with unless told otherwise."""

DEFAULT_CORPUS_KEY = "auto"
"""Which Inspect metric of a scorer's log (a key of ``log.results.scores[i].metrics``) gives the
model's value instead of the mean of the per-sample values: ``auto`` takes the names in the
registry's ``MetricSpec.corpus`` of the scorer's metric."""

DEFAULT_MIN_SCORED = 10
"""Models with fewer scored papers than this are kept and marked (their value is noisier)."""


def add_correlation_arguments(parser: Any, *flags: str) -> None:
    """Add the correlation options to an argparse parser: ``flags`` (e.g. ``--against``) name
    the metric to correlate with (repeatable; stored as ``against``), plus ``--corpus-key`` and
    ``--min-scored``."""
    parser.add_argument(
        *flags,
        dest="against",
        action="append",
        metavar="METRIC",
        help="correlate every other metric with METRIC across models (Pearson r, p, Fisher-z "
        f"95%% CI; human baseline excluded), e.g. {DEFAULT_AGAINST}; writes "
        "correlation_with_METRIC.md/.csv; repeatable",
    )
    parser.add_argument(
        "--corpus-key",
        default=DEFAULT_CORPUS_KEY,
        metavar="NAME",
        help="Inspect metric of a scorer's log that gives a model's corpus-level value instead "
        "of the mean over papers, where the log has it; 'auto' (default): the names the metric "
        "registry gives (e.g. corpus_kl); '' for means only",
    )
    parser.add_argument(
        "--min-scored",
        type=int,
        default=DEFAULT_MIN_SCORED,
        metavar="N",
        help="mark models with fewer than N scored papers in the correlation tables (they are "
        f"still counted; default {DEFAULT_MIN_SCORED})",
    )
