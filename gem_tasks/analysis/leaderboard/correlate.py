"""Cross-model correlation of every metric with one metric (by default the rating MAE): the
Beyond Rating paper's Fig. 3 analysis, the Pearson r across models between each metric's
per-model value and the model's rating MAE (its §5.2: r = −0.781 for weakness Max-Recall).

The input is the leaderboard table (one row per metric, signature group and model); no metric
name is built in. A model counts for a metric when it has a value for both that metric and the
``against`` metric; the human baseline row is never counted (the paper reports "/" for its rating
MAE: the correlation is across models).

A model's value is its leaderboard headline: the mean over scored papers, or for a metric whose
headline is a corpus statistic (e.g. the focus KL over the category counts pooled over all
papers, which is not the mean of per-paper values) that statistic, recomputed over the scored
papers. Where a metric's log reports a further corpus-level number as an Inspect metric, that
number is used instead. Which Inspect metric: by default (``corpus_key="auto"``) the names the
metric registry gives in the metric's ``MetricSpec.corpus`` (``ai_rate`` for Binoculars); a
``corpus_key`` string names one for every scorer; ``None`` or ``""`` uses the per-item means
only, even where the headline is a corpus statistic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from gem_tasks.analysis.correlation_options import (
    DEFAULT_AGAINST,
    DEFAULT_CORPUS_KEY,
    DEFAULT_MIN_SCORED,
)
from gem_tasks.analysis.leaderboard.logs import (
    higher_is_better,
    is_reference_row,
    metric_name,
    metric_order,
)
from scorers.errors import UnknownMetricError
from scorers.registry import metric_spec
from scorers.validation.statistics import (
    pearson,
    pearson_confidence_interval,
    spearman,
    spearman_confidence_interval,
)

if TYPE_CHECKING:
    from gem_tasks.analysis.leaderboard.types import Leaderboard

__all__ = [
    "MetricCorrelations",
    "correlate",
    "correlation_file_stem",
    "correlation_markdown",
    "corpus_keys",
    "corpus_values",
    "log_metrics",
    "metric_correlations",
    "model_values",
    "write_correlations",
]

# -- the per-model values ------------------------------------------------------------------------


def log_metrics(path: str, cache: dict[str, Any], notes: list[str]) -> dict[str, dict]:
    """Scorer name -> {Inspect metric name: value} from a log's header (cached; an unreadable
    log gives {} and a note)."""
    if path not in cache:
        from inspect_ai.log import read_eval_log

        try:
            header = read_eval_log(path, header_only=True)
        except Exception as exc:  # any unreadable log is reported, not fatal
            notes.append(f"{path}: header unreadable for corpus metrics ({exc}); means used")
            cache[path] = {}
        else:
            scores = header.results.scores if header.results else []
            found: dict[str, dict] = {}
            for score in scores:
                own = found.setdefault(score.name, {})
                for key, metric in (score.metrics or {}).items():
                    own.setdefault(key, metric.value)
            cache[path] = found
    return cache[path]


def corpus_keys(metric: str, corpus_key: str | None = DEFAULT_CORPUS_KEY) -> list[str]:
    """The Inspect metric names that may hold ``metric``'s corpus-level number, in order of
    preference: ``[corpus_key]`` when one is named, the registry's ``MetricSpec.corpus`` names
    for ``"auto"`` (none for an unregistered metric), none for ``None`` or ``""``."""
    if not corpus_key:
        return []
    if corpus_key != "auto":
        return [corpus_key]
    try:
        spec = metric_spec(metric)
    except UnknownMetricError:
        return []
    return [k for k in getattr(spec, "corpus", None) or {} if not is_interval_key(k)]


INTERVAL_SUFFIXES = ("_ci95_lower", "_ci95_upper")
"""Corpus names that are the ends of an interval (``auc_ci95_lower``, ``wilson_ci95_upper``),
not a number of their own: shown beside the number they bound, never taken as a model's value."""


def is_interval_key(key: str) -> bool:
    """Whether a corpus name is an interval's end (see :data:`INTERVAL_SUFFIXES`)."""
    return key.endswith(INTERVAL_SUFFIXES)


def corpus_intervals(
    scores: pd.DataFrame,
    notes: list[str] | None = None,
    headers: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """The 95% intervals a scorer's log reports for each (metric, group, model) from one log:
    columns metric, group, model, interval (``<name>_ci95``), lower, upper (e.g. Wilson's for a
    proportion, the bootstrap's for an AUC). ``headers`` caches the logs' metrics between calls."""
    notes = notes if notes is not None else []
    cache: dict[str, Any] = headers if headers is not None else {}
    rows = []
    for (metric, group, entry), sub in scores.groupby(["metric", "group", "entry"], sort=False):
        try:
            names = list(getattr(metric_spec(metric), "corpus", None) or {})
        except UnknownMetricError:
            continue
        lows = [k for k in names if k.endswith("_ci95_lower")]
        if not lows or sub["log"].nunique() != 1:
            continue
        reported = log_metrics(str(sub["log"].iloc[0]), cache, notes).get(
            str(sub["scorer"].iloc[0]), {}
        )
        for low in lows:
            high = low.replace("_lower", "_upper")
            if reported.get(low) is not None and reported.get(high) is not None:
                rows.append(
                    {
                        "metric": metric,
                        "group": group,
                        "model": entry,
                        "interval": low.removesuffix("_lower"),
                        "lower": float(reported[low]),
                        "upper": float(reported[high]),
                    }
                )
    return pd.DataFrame(rows, columns=["metric", "group", "model", "interval", "lower", "upper"])


def corpus_values(
    scores: pd.DataFrame,
    corpus_key: str | None = DEFAULT_CORPUS_KEY,
    notes: list[str] | None = None,
    headers: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """The corpus-level value of each (metric, group, model) whose scorer's log carries one of
    the metric's :func:`corpus_keys` as an Inspect metric: columns metric, group, model, corpus
    (the value) and key (the Inspect metric's name). ``scores`` is a leaderboard's ``scores``
    frame (columns log, scorer, metric, group, entry). A model whose scores of that metric come
    from several logs gets NaN and a note: one log's corpus number cannot be pooled with
    another's."""
    notes = notes if notes is not None else []
    cache: dict[str, Any] = headers if headers is not None else {}
    rows = []
    for (metric, group, entry), sub in scores.groupby(["metric", "group", "entry"], sort=False):
        keys = corpus_keys(metric, corpus_key)
        if not keys:
            continue
        found: list[tuple[str, float]] = []
        for (log, scorer), _ in sub.groupby(["log", "scorer"], sort=False):
            reported = log_metrics(str(log), cache, notes).get(scorer, {})
            present = [k for k in keys if reported.get(k) is not None]
            if present:
                found.append((present[0], float(reported[present[0]])))
        if not found:
            continue
        key = found[0][0]
        logs = sub["log"].nunique()
        if logs > 1:
            notes.append(
                f"{metric_name(metric)} of {entry}: its scores come from {logs} logs; the "
                f"corpus-level '{key}' of one log cannot be pooled with another's, so the model "
                "has no value (score its papers in one log)"
            )
            value = math.nan
        else:
            value = found[0][1]
        rows.append({"metric": metric, "group": group, "model": entry, "corpus": value, "key": key})
    return pd.DataFrame(rows, columns=["metric", "group", "model", "corpus", "key"])


def model_values(
    board: Leaderboard,
    *,
    corpus_key: str | None = DEFAULT_CORPUS_KEY,
    notes: list[str] | None = None,
) -> pd.DataFrame:
    """The leaderboard table with each row's model value: the metric's headline (``value``:
    the mean over scored papers, or the corpus statistic recomputed over them, e.g. the pooled
    ``corpus_kl``; ``value_source`` names it), except where the scorer's log reports a further
    corpus-level number that :func:`corpus_keys` names (``value_source`` is then its Inspect
    metric's name). ``corpus_key=None`` (or "") uses the per-item means only, corpus headlines
    included."""
    table = board.table.copy()
    if not corpus_key or "value" not in table:  # the means (or a table built before headlines)
        table["value"], table["headline"] = table["mean"], "mean"
    table["value"] = table["value"].astype(float)
    table["value_source"] = table["headline"].astype(str)
    if not corpus_key or table.empty:
        return table
    corpus = corpus_values(board.scores, corpus_key, notes)
    if corpus.empty:
        return table
    keys = ["metric", "group", "model"]
    merged = table[keys].merge(corpus, on=keys, how="left", indicator=True)
    has = (merged["_merge"] == "both").to_numpy()
    table.loc[has, "value"] = merged.loc[has, "corpus"].astype(float).to_numpy()
    table.loc[has, "value_source"] = merged.loc[has, "key"].to_numpy()
    return table


# -- the correlations ----------------------------------------------------------------------------


@dataclass
class MetricCorrelations:
    """Every metric's correlation across models with ``against``.

    ``table``: one row per (metric, signature group) and signature group of ``against``: the
    models counted (``models``, ``model_names``), Pearson ``pearson_r`` with its two-sided ``p``
    and Fisher-z interval at ``level``, Spearman's ρ, the models with fewer than ``min_scored``
    scored papers (``below_min_scored``) and a ``note`` saying why a number is missing.
    ``inputs``: the per-model values used (long: metric, group, model, value, value_source,
    scored)."""

    against: str
    table: pd.DataFrame
    inputs: pd.DataFrame
    level: float = 0.95
    min_scored: int = DEFAULT_MIN_SCORED
    excluded_human: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _ci_columns(level: float) -> tuple[str, str]:
    ci = f"ci{round(level * 100)}"
    return f"{ci}_lower", f"{ci}_upper"


def _source(sources: pd.Series) -> str:
    kinds = sorted(set(sources))
    return kinds[0] if len(kinds) == 1 else "mixed"


def metric_correlations(
    table: pd.DataFrame,
    against: str = DEFAULT_AGAINST,
    *,
    level: float = 0.95,
    min_scored: int = DEFAULT_MIN_SCORED,
    notes: Sequence[str] = (),
) -> MetricCorrelations:
    """Correlate every metric of a leaderboard ``table`` with ``against`` across models.

    ``table`` has one row per metric, signature ``group`` and ``model`` with ``is_human``,
    ``scored`` and the model's number in ``value`` (from :func:`model_values`) or else ``mean``.
    Per (metric, group) and group of ``against``, the models with a finite value for both (the
    human baseline excluded) give Pearson's r, its two-sided p, its Fisher-z interval at
    ``level`` and Spearman's ρ; where a number cannot be computed (fewer than 3 models, a
    constant metric; the interval needs 4) it is NaN and ``note`` says why.

    Raises:
        ValueError: ``against`` is not a metric of ``table`` (the message lists those that are).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    metrics = list(dict.fromkeys(table["metric"])) if not table.empty else []
    if against not in metrics:
        raise ValueError(
            f"no metric {against!r} in the leaderboard to correlate with; its metrics: "
            f"{', '.join(metrics) or 'none'}"
        )
    frame = _with_values(table)
    # the human baseline and the baseline rules are reference rows, not models
    human = frame["is_human"].astype(bool) | frame["model"].astype(str).map(is_reference_row)
    excluded_human = list(dict.fromkeys(frame.loc[human, "model"]))
    models = frame[~human]
    inputs = models[["metric", "group", "model", "value", "value_source", "scored"]].reset_index(
        drop=True
    )
    rows = []
    target = models[models["metric"] == against]
    for against_group, base in target.groupby("group", sort=False):
        base = base.set_index("model")
        for (metric, group), sub in models.groupby(["metric", "group"], sort=False):
            if metric == against:
                continue
            row = _correlation(sub.set_index("model"), base, level=level, min_scored=min_scored)
            rows.append(
                {
                    "against": against,
                    "against_name": metric_name(against),
                    "against_group": against_group,
                    "metric": metric,
                    "metric_name": metric_name(metric),
                    "group": group,
                    **row,
                }
            )
    result = pd.DataFrame(rows, columns=_correlation_columns(level))
    if not result.empty:
        order = result["metric"].map(metric_order)
        result = result.assign(_order=order).sort_values(
            ["_order", "group", "against_group"], kind="stable"
        )
        result = result.drop(columns="_order").reset_index(drop=True)
    return MetricCorrelations(
        against=against,
        table=result,
        inputs=inputs,
        level=level,
        min_scored=min_scored,
        excluded_human=excluded_human,
        notes=list(notes),
    )


def _with_values(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each row's number in ``value`` (float) and where it came from in
    ``value_source`` (the headline's name, ``value``, or ``mean`` where there is no value)."""
    frame = table.copy()
    if "value" not in frame:
        frame["value"] = frame["mean"]
        frame["value_source"] = "mean"
    elif "value_source" not in frame:
        frame["value_source"] = frame["headline"] if "headline" in frame else "value"
    frame["value"] = frame["value"].astype(float)
    return frame


def _correlation_columns(level: float) -> list[str]:
    """The columns of a correlation table at ``level``, in order."""
    lower_col, upper_col = _ci_columns(level)
    return [
        "against",
        "against_name",
        "against_group",
        "metric",
        "metric_name",
        "group",
        "value_source",
        "models",
        "model_names",
        "pearson_r",
        "p",
        lower_col,
        upper_col,
        "spearman_rho",
        "spearman_lower",
        "spearman_upper",
        "below_min_scored",
        "note",
    ]


def _correlation(
    sub: pd.DataFrame, base: pd.DataFrame, *, level: float, min_scored: int
) -> dict[str, Any]:
    """The correlation of one metric's values (``sub``, by model) with the values it is
    correlated against (``base``, by model) over the models with a finite value in both: the
    table's columns from ``value_source`` on (NaN where a number cannot be computed, with why
    in ``note``)."""
    both = [
        m
        for m in sub.index
        if m in base.index
        and math.isfinite(sub.at[m, "value"])
        and math.isfinite(base.at[m, "value"])
    ]
    x = sub.loc[both, "value"].to_numpy(dtype=float)
    y = base.loc[both, "value"].to_numpy(dtype=float)
    r = p = lower = upper = rho = rho_lower = rho_upper = math.nan
    reasons = []
    try:
        r, p = pearson(x, y)
    except ValueError as exc:
        reasons.append(str(exc))
    else:
        rho, _ = spearman(x, y)
        try:
            lower, upper = pearson_confidence_interval(r, len(both), level)
            if math.isfinite(rho):
                rho_lower, rho_upper = spearman_confidence_interval(rho, len(both), level)
        except ValueError as exc:
            reasons.append(str(exc))
    thin = [
        m for m in both if min(int(sub.at[m, "scored"]), int(base.at[m, "scored"])) < min_scored
    ]
    lower_col, upper_col = _ci_columns(level)
    return {
        "value_source": _source(sub.loc[both, "value_source"]) if both else "",
        "models": len(both),
        "model_names": ", ".join(both),
        "pearson_r": r,
        "p": p,
        lower_col: lower,
        upper_col: upper,
        "spearman_rho": rho,
        "spearman_lower": rho_lower,
        "spearman_upper": rho_upper,
        "below_min_scored": ", ".join(thin),
        "note": "; ".join(reasons),
    }


def correlate(
    board: Leaderboard,
    against: str = DEFAULT_AGAINST,
    *,
    corpus_key: str | None = DEFAULT_CORPUS_KEY,
    level: float = 0.95,
    min_scored: int = DEFAULT_MIN_SCORED,
) -> MetricCorrelations:
    """:func:`metric_correlations` over a leaderboard's rows, each model's value taken by
    :func:`model_values` (a scorer's corpus-level metric ``corpus_key`` where its log has one,
    else the mean over papers)."""
    notes: list[str] = []
    table = model_values(board, corpus_key=corpus_key, notes=notes)
    return metric_correlations(table, against, level=level, min_scored=min_scored, notes=notes)


# -- output --------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, float | np.floating):
        return f"{value:.{digits}f}"
    return str(value)


def _label(metric: str, group: str, several: bool) -> str:
    return f"{metric_name(metric)} [{group}]" if several else metric_name(metric)


def correlation_markdown(result: MetricCorrelations) -> str:
    """The correlations as markdown: one row per metric (and signature group), then the
    per-model values they were computed from, then what was left out and why."""
    parts = [f"# Correlation with {metric_name(result.against)} across models\n"]
    parts.append(_correlation_table(result))
    parts.append(_correlation_footer(result))
    parts += _per_model_values(result)
    if result.notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in result.notes) + "\n")
    return "\n".join(parts)


def _correlation_table(result: MetricCorrelations) -> str:
    """The table of correlations, one row per metric and signature group."""
    against = result.against
    pct = f"{round(result.level * 100)}%"
    lower_col, upper_col = _ci_columns(result.level)
    table = result.table
    several_against = table["against_group"].nunique() > 1 if not table.empty else False
    lines = [
        f"| metric | models | Pearson r | p | {pct} CI (Fisher z) | Spearman ρ | {pct} CI | value "
        "| note |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups = table.groupby("metric")["group"].nunique() if not table.empty else {}
    for _, r in table.iterrows():
        name = _label(r["metric"], r["group"], groups[r["metric"]] > 1)
        if several_against:
            name += f" vs {against} [{r['against_group']}]"
        interval = (
            f"[{_fmt(r[lower_col])}, {_fmt(r[upper_col])}]"
            if math.isfinite(r[lower_col])
            else "n/a"
        )
        p = "n/a" if not math.isfinite(r["p"]) else f"{r['p']:.3g}"
        note = r["note"]
        rho_interval = (
            f"[{_fmt(r['spearman_lower'])}, {_fmt(r['spearman_upper'])}]"
            if math.isfinite(r["spearman_lower"])
            else "n/a"
        )
        lines.append(
            f"| {name} | {r['models']} | {_fmt(r['pearson_r'])} | {p} | {interval} | "
            f"{_fmt(r['spearman_rho'])} | {rho_interval} | {r['value_source'] or 'n/a'} | "
            f"{note or ''} |"
        )
    if table.empty:
        lines.append("| _no other metric in the leaderboard_ | | | | | | | | |")
    return "\n".join(lines) + "\n"


def _correlation_footer(result: MetricCorrelations) -> str:
    """How the correlations are computed, and who was left out."""
    against = result.against
    pct = f"{round(result.level * 100)}%"
    table = result.table
    direction = (
        "higher is better"
        if higher_is_better(against)
        else "lower is better: a negative r "
        "means models that score higher on the metric have the better (lower) value"
    )
    footer = [
        f"Pearson r across models between each metric's per-model value and "
        f"{metric_name(against)}'s ({direction}); p two-sided (t test); {pct} CI by Fisher's z "
        "(needs 4 models); Spearman ρ beside it, its interval by Fisher's z with the Fieller-"
        "Hartley-Pearson variance 1.06/(n − 3). A model counts for a metric only when it has "
        "a value for both (models = n). Value: 'mean' is the mean over the model's scored "
        "papers; any other is the name of the corpus-level number the log reports for the "
        "scorer (e.g. KL over pooled counts), used instead of the mean.",
    ]
    if result.excluded_human:
        footer.append(
            f"The human baseline ({', '.join(result.excluded_human)}) is excluded: the "
            f"correlation is across models, and {metric_name(against)} has no meaning for it "
            "(Beyond Rating reports '/')."
        )
    else:
        footer.append("The human baseline, when present, is excluded (the paper's '/').")
    thin = list(
        dict.fromkeys(
            m for names in table.get("below_min_scored", []) if names for m in names.split(", ")
        )
    )
    footer.append(
        f"Models with fewer than {result.min_scored} scored papers are counted all the same"
        + (f" ({', '.join(thin)}; marked † below)." if thin else " (none here).")
    )
    return " ".join(footer) + "\n"


def _per_model_values(result: MetricCorrelations) -> list[str]:
    """The per-model values the correlations were computed from (none when there are none)."""
    against = result.against
    parts: list[str] = []
    inputs = result.inputs
    if not inputs.empty:
        keys = list(dict.fromkeys(zip(inputs["metric"], inputs["group"])))
        keys.sort(key=lambda k: (k[0] != against, metric_order(k[0]), k[1]))
        per_metric = inputs.groupby("metric")["group"].nunique()
        header = [_label(m, g, per_metric[m] > 1) for m, g in keys]
        lines = [
            "| model | " + " | ".join(header) + " |",
            "| --- |" + " --- |" * len(keys),
        ]
        cells = inputs.set_index(["model", "metric", "group"])
        ranked = inputs.loc[inputs["metric"] == against, "model"]  # the leaderboard's order
        for model in dict.fromkeys([*ranked, *inputs["model"]]):
            row = []
            for m, g in keys:
                if (model, m, g) not in cells.index:
                    row.append("—")
                    continue
                c = cells.loc[(model, m, g)]
                mark = "†" if int(c["scored"]) < result.min_scored else ""
                source = "ᶜ" if c["value_source"] != "mean" else ""
                row.append(f"{_fmt(float(c['value']))}{source} (n={int(c['scored'])}){mark}")
            lines.append(f"| {model} | " + " | ".join(row) + " |")
        parts.append("## Per-model values\n")
        parts.append("\n".join(lines) + "\n")
        parts.append(
            f"n: scored papers; †: fewer than {result.min_scored}; ᶜ: a corpus-level number (the "
            "metric's corpus headline over the scored papers, or the log's further corpus "
            "number); —: the model has no score for that metric; n/a: no value (none of its "
            "papers was scored, or see the notes).\n"
        )
    return parts


def correlation_file_stem(against: str) -> str:
    """``correlation_with_<metric>``, the metric name made safe for a file name."""
    return "correlation_with_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", against)


def write_correlations(result: MetricCorrelations, out_dir: str | Path) -> dict[str, Path]:
    """Write ``correlation_with_<against>.md`` and ``.csv`` (the table) to ``out_dir``; returns
    their paths by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = correlation_file_stem(result.against)
    paths = {"correlation_markdown": out / f"{stem}.md", "correlation_csv": out / f"{stem}.csv"}
    paths["correlation_markdown"].write_text(correlation_markdown(result), encoding="utf-8")
    result.table.to_csv(paths["correlation_csv"], index=False)
    return paths


# -- command line --------------------------------------------------------------------------------


def correlations_from_args(board: Leaderboard, args: Any) -> list[MetricCorrelations]:
    """The correlations the parsed ``args`` ask for (none without ``against``)."""
    return [
        correlate(
            board,
            against,
            corpus_key=args.corpus_key or None,
            min_scored=args.min_scored,
        )
        for against in dict.fromkeys(args.against or [])
    ]
