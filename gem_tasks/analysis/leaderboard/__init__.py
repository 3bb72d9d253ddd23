"""The GRE-bench leaderboard from Inspect logs: ``logs`` reads scores, ``compare`` ranks them
per metric and signature group with intervals and paired tests into a ``types.Leaderboard``,
``render`` writes tables and files, ``plot`` draws them, ``params`` reads model sizes,
``correlate`` correlates every metric with one (e.g. rating MAE) across models. Display names
and directions come from the metric registry; the command line is ``gem_tasks.cli.leaderboard``."""

from gem_tasks.analysis.leaderboard.compare import (
    HUMAN_LABEL,
    compare_logs,
    leaderboard,
    ranking_consistency,
)
from gem_tasks.analysis.leaderboard.correlate import (
    MetricCorrelations,
    correlate,
    correlation_markdown,
    metric_correlations,
    write_correlations,
)
from gem_tasks.analysis.leaderboard.logs import metric_name, read_scores, signature_differences
from gem_tasks.analysis.leaderboard.params import params_for, read_params
from gem_tasks.analysis.leaderboard.render import leaderboard_markdown, write_leaderboard
from gem_tasks.analysis.leaderboard.types import Leaderboard

__all__ = [
    "HUMAN_LABEL",
    "Leaderboard",
    "MetricCorrelations",
    "compare_logs",
    "correlate",
    "correlation_markdown",
    "leaderboard",
    "leaderboard_markdown",
    "metric_correlations",
    "metric_name",
    "params_for",
    "ranking_consistency",
    "read_params",
    "read_scores",
    "signature_differences",
    "write_correlations",
    "write_leaderboard",
]
