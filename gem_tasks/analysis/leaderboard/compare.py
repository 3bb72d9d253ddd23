"""The GRE-bench leaderboard from Inspect logs: per metric and score signature, each model's mean
score over papers with its standard error and Student-t 90% CI, paired model-vs-model comparisons
on the papers both scored, and how consistently two evaluation LMs rank the same models.

Scores are read from the logs' sample summaries (no transcripts are loaded). Scores computed
differently (another evaluation LM or precision, preprocessor, prompt, synopsis, option or metric
family version: the ``signature`` in each score's metadata) form separate groups and are ranked
together only when asked to (``merge=True``). The package version is recorded in the signature
for information only and never splits a group.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from gem_tasks.analysis.correlation_options import DEFAULT_CORPUS_KEY
from gem_tasks.analysis.leaderboard.correlate import (
    corpus_intervals,
    corpus_values,
    log_metrics,
)
from gem_tasks.analysis.leaderboard.logs import (
    HUMAN_LABEL,
    LEADERBOARD_TASKS,
    headline_kind,
    headline_name,
    higher_is_better,
    is_proportion,
    metric_name,
    metric_order,
    metric_spec_or_none,
    nothing_to_rank,
    read_scores,
    signature_differences,
)
from gem_tasks.analysis.leaderboard.types import Leaderboard
from scorers.corpus import (
    CorpusStatistic,
    PairedBootstrap,
    bootstrap_interval,
    paired_bootstrap,
)
from scorers.registry import CORPUS_STATISTIC
from scorers.validation.statistics import (
    holm_adjust,
    largest_difference_share,
    mean_confidence_interval,
    paired_comparison,
    proportion_interval,
    signed_rank_test,
    spearman,
    standard_error,
)

__all__ = [
    "HUMAN_LABEL",
    "Leaderboard",
    "compare_logs",
    "leaderboard",
    "ranking_consistency",
]


def _signature_groups(scores: pd.DataFrame) -> pd.DataFrame:
    """Number the signatures of each metric 1, 2, ...: the one with most models first."""
    rows = []
    for (metric, key), group in scores.groupby(["metric", "signature"], sort=False):
        rows.append(
            {
                "metric": metric,
                "signature": key,
                "models": group["entry"].nunique(),
                "first": group["created"].min(),
            }
        )
    table = pd.DataFrame(rows)
    table = table.sort_values(["metric", "models", "first", "signature"], ascending=[1, 0, 1, 1])
    table["group"] = table.groupby("metric").cumcount().add(1).astype(str)
    return table[["metric", "signature", "group"]]


def _per_paper(scores: pd.DataFrame) -> pd.DataFrame:
    """One value per (metric, group, entry, paper): the mean over its scored epochs, NaN when no
    epoch was scored; ``status`` scored / unscored / error (error when any epoch errored and none
    was scored)."""
    keys = ["metric", "group", "entry", "paper"]

    def status(statuses: pd.Series) -> str:
        values = set(statuses)
        return "scored" if "scored" in values else "error" if "error" in values else "unscored"

    grouped = scores.groupby(keys, sort=False)
    frame = grouped.agg(
        value=("value", "mean"),
        status=("status", status),
        other_signature=("other_signature", "sum"),
    ).reset_index()
    return frame


def _headline(metric: str) -> CorpusStatistic | None:
    """The metric's corpus headline (None: its headline is the per-item mean)."""
    spec = metric_spec_or_none(metric)
    return spec.headline if spec is not None else None


@dataclass(frozen=True)
class _CorpusRows:
    """One leaderboard row's items for a corpus statistic: their numbers, the paper of each row
    and its stratum."""

    rows: np.ndarray
    papers: list[str]
    strata: np.ndarray | None


def _corpus_rows(statistic: CorpusStatistic, scores: pd.DataFrame) -> _CorpusRows:
    """The scored samples of one (metric, group, model) read by ``statistic`` (epochs of a
    paper are rows of one item)."""
    scored = scores[scores["status"] == "scored"]
    read, papers = [], []
    for paper, details in zip(scored["paper"], scored["details"]):
        row = statistic.read(details) if isinstance(details, Mapping) else None
        if row is not None:
            read.append(tuple(map(float, row)))
            papers.append(str(paper))
    rows = np.asarray(read, dtype=float) if read else np.empty((0, 0))
    return _CorpusRows(rows, papers, statistic.strata_of(rows))


def _corpus_summary(
    statistic: CorpusStatistic, scores: pd.DataFrame, level: float
) -> tuple[float, float, float]:
    """The statistic over a row's scored papers and its bootstrap interval at ``level``."""
    found = _corpus_rows(statistic, scores)
    if not found.rows.size:
        return math.nan, math.nan, math.nan
    value = statistic.compute(found.rows)
    lower, upper = bootstrap_interval(
        statistic.compute, found.rows, strata=found.strata, items=found.papers, level=level
    )
    return value, lower, upper


def _summaries(papers: pd.DataFrame, scores: pd.DataFrame, level: float) -> pd.DataFrame:
    ci = f"ci{round(level * 100)}"
    logs = scores.groupby(["metric", "group", "entry"])["log"].nunique()
    long = {key: sub for key, sub in scores.groupby(["metric", "group", "entry"], sort=False)}
    rows = []
    for (metric, group, entry), sub in papers.groupby(["metric", "group", "entry"], sort=False):
        values = sub["value"].to_numpy(dtype=float)
        finite = values[np.isfinite(values)]
        mean = float(finite.mean()) if finite.size else math.nan
        statistic = _headline(metric)
        if statistic is None:
            value = mean
            if is_proportion(metric):  # a rate: Wilson's interval, inside [0, 1]
                lower, upper = proportion_interval(finite, level=level)
            else:
                lower, upper = mean_confidence_interval(finite, level=level)
        else:
            value, lower, upper = _corpus_summary(statistic, long[(metric, group, entry)], level)
        rows.append(
            {
                "metric": metric,
                "metric_name": metric_name(metric),
                "group": group,
                "model": entry,
                "is_human": entry.startswith(HUMAN_LABEL),
                "papers": len(sub),
                "scored": int(finite.size),
                "unscored": int((sub["status"] == "unscored").sum()),
                "errored": int((sub["status"] == "error").sum()),
                "headline": headline_name(metric),
                "headline_kind": headline_kind(metric),
                "value": value,
                f"{ci}_lower": lower,
                f"{ci}_upper": upper,
                "mean": mean,
                "stderr": standard_error(finite),
                "other_signature": int(sub["other_signature"].sum()),
                "logs": int(logs[(metric, group, entry)]),
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    # rank 1 is the best: the highest headline, or the lowest for metrics where lower is better
    signed = table["value"] * table["metric"].map(lambda m: 1.0 if higher_is_better(m) else -1.0)
    table["rank"] = (
        signed.groupby([table["metric"], table["group"]])
        .rank(ascending=False, method="min")
        .astype("Int64")
    )
    table["_order"] = table["metric"].map(metric_order)
    table["_group"] = table["group"].map(lambda g: int(g) if g.isdigit() else 0)
    table = table.sort_values(["_order", "_group", "rank", "model"], na_position="last")
    return table.drop(columns=["_order", "_group"]).reset_index(drop=True)


PAIRED_T = "paired t-test"
PAIRED_BOOTSTRAP = "paired bootstrap"


def _t_pair(x: np.ndarray, y: np.ndarray, level: float) -> dict[str, Any]:
    result = paired_comparison(x, y, level=level)
    return {
        "test": PAIRED_T,
        "papers": result.n,
        "difference": result.mean_difference,
        "lower": result.ci_lower,
        "upper": result.ci_upper,
        "t": result.t,
        "p": result.p,
        # one paper carrying most of the differences' spread decides the t-test
        "largest_share": largest_difference_share(y, x),
        "signed_rank_p": signed_rank_test(y, x, alternative="two-sided")[1],
    }


def _bootstrap_pair(
    statistic: CorpusStatistic, a: pd.DataFrame, b: pd.DataFrame, level: float
) -> dict[str, Any]:
    rows_a, rows_b = _corpus_rows(statistic, a), _corpus_rows(statistic, b)
    if not rows_a.rows.size or not rows_b.rows.size:
        result = PairedBootstrap(0, math.nan, math.nan, math.nan, math.nan, math.nan, math.nan)
    else:
        result = paired_bootstrap(
            statistic.compute,
            rows_a.rows,
            rows_a.papers,
            rows_b.rows,
            rows_b.papers,
            strata_a=rows_a.strata,
            level=level,
        )
    return {
        "test": PAIRED_BOOTSTRAP,
        "papers": result.items,
        "difference": result.difference,
        "lower": result.ci_lower,
        "upper": result.ci_upper,
        "t": math.nan,
        "p": result.p,
        "largest_share": math.nan,
        "signed_rank_p": math.nan,
    }


def _pairs(
    papers: pd.DataFrame, scores: pd.DataFrame, table: pd.DataFrame, level: float
) -> pd.DataFrame:
    ci = f"ci{round(level * 100)}"
    alpha = 1 - level
    rows = []
    for (metric, group), board in table.groupby(["metric", "group"], sort=False):
        up = higher_is_better(metric)
        statistic = _headline(metric)
        wide = papers[(papers["metric"] == metric) & (papers["group"] == group)].pivot(
            index="paper", columns="entry", values="value"
        )
        long = scores[(scores["metric"] == metric) & (scores["group"] == group)]
        block = []
        for a, b in combinations(list(board["model"]), 2):  # a ranked above b
            if statistic is None:
                found = _t_pair(wide[a].to_numpy(), wide[b].to_numpy(), level)
            else:
                found = _bootstrap_pair(
                    statistic, long[long["entry"] == a], long[long["entry"] == b], level
                )
            significant = math.isfinite(found["p"]) and found["p"] < alpha
            block.append(
                {
                    "metric": metric,
                    "metric_name": metric_name(metric),
                    "group": group,
                    "headline": headline_name(metric),
                    "test": found["test"],
                    "model_a": a,
                    "model_b": b,
                    "papers": found["papers"],
                    "difference": found["difference"],
                    f"{ci}_lower": found["lower"],
                    f"{ci}_upper": found["upper"],
                    "t": found["t"],
                    "p": found["p"],
                    "largest_share": found["largest_share"],
                    "signed_rank_p": found["signed_rank_p"],
                    "significant": significant,
                    "better": (a if (found["difference"] > 0) == up else b) if significant else "",
                }
            )
        adjusted = holm_adjust([r["p"] for r in block])
        for row, p_holm in zip(block, adjusted):
            row["p_holm"] = float(p_holm)
        rows += block
    columns = [
        "metric",
        "metric_name",
        "group",
        "headline",
        "test",
        "model_a",
        "model_b",
        "papers",
        "difference",
        f"{ci}_lower",
        f"{ci}_upper",
        "t",
        "p",
        "p_holm",
        "largest_share",
        "signed_rank_p",
        "significant",
        "better",
    ]
    return pd.DataFrame(rows, columns=columns)


def _better_than(table: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    out = []
    for _, row in table.iterrows():
        mine = pairs[
            (pairs["metric"] == row["metric"])
            & (pairs["group"] == row["group"])
            & (pairs["better"] == row["model"])
        ]
        losers = [b if a == row["model"] else a for a, b in zip(mine["model_a"], mine["model_b"])]
        out.append(", ".join(losers))
    return out


def ranking_consistency(table: pd.DataFrame) -> pd.DataFrame:
    """For every two signature groups of the same metric (e.g. two evaluation LMs) that scored
    models in common: how many (``models``), their names, and Spearman's ρ between the two
    groups' headline values of those models with its two-sided p-value (NaN under three models).
    ``table`` is a leaderboard table (one row per metric, group and model)."""
    rows = []
    for metric, board in table.groupby("metric", sort=False):
        groups = list(dict.fromkeys(board["group"]))
        for g1, g2 in combinations(groups, 2):
            a = board[board["group"] == g1].set_index("model")["value"]
            b = board[board["group"] == g2].set_index("model")["value"]
            common = [m for m in a.index if m in b.index]
            if not common:
                continue
            rho, p = spearman(a[common].to_numpy(), b[common].to_numpy())
            rows.append(
                {
                    "metric": metric,
                    "metric_name": metric_name(metric),
                    "group_a": g1,
                    "group_b": g2,
                    "models": len(common),
                    "model_names": ", ".join(common),
                    "spearman_rho": rho,
                    "p": p,
                }
            )
    columns = [
        "metric",
        "metric_name",
        "group_a",
        "group_b",
        "models",
        "model_names",
        "spearman_rho",
        "p",
    ]
    return pd.DataFrame(rows, columns=columns)


# -- the whole comparison ------------------------------------------------------------------------


def _group_table(scores: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, g in groups.iterrows():
        signature = json.loads(g["signature"])
        sub = scores[(scores["metric"] == g["metric"]) & (scores["signature"] == g["signature"])]
        rows.append(
            {
                "metric": g["metric"],
                "metric_name": metric_name(g["metric"]),
                "group": g["group"],
                "signature_id": hashlib.sha256(g["signature"].encode()).hexdigest()[:12],
                "evaluation_lm": signature.get("evaluation_lm"),
                "preprocessor": signature.get("preprocessor"),
                "synopsis": signature.get("synopsis"),
                "package_version": signature.get("package_version"),
                "prompts": json.dumps(signature.get("prompts"), sort_keys=True),
                "models": ", ".join(dict.fromkeys(sub["entry"])),
                "logs": sub["log"].nunique(),
                "signature": g["signature"],
            }
        )
    return pd.DataFrame(rows)


def _differences(groups: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for metric, sub in groups.groupby("metric", sort=False):
        for (_, a), (_, b) in combinations(sub.iterrows(), 2):
            sa, sb = json.loads(a["signature"]), json.loads(b["signature"])
            for name in signature_differences(sa, sb):
                x, y = sa, sb
                for part in name.split("."):
                    x = x.get(part) if isinstance(x, Mapping) else None
                    y = y.get(part) if isinstance(y, Mapping) else None
                rows.append(
                    {
                        "metric": metric,
                        "metric_name": metric_name(metric),
                        "group_a": a["group"],
                        "group_b": b["group"],
                        "field": name,
                        "value_a": x,
                        "value_b": y,
                    }
                )
    columns = ["metric", "metric_name", "group_a", "group_b", "field", "value_a", "value_b"]
    return pd.DataFrame(rows, columns=columns)


def _keep_newest(scores: pd.DataFrame, notes: list[str]) -> pd.DataFrame:
    """A paper scored in several logs of one model under one signature (a retried or repeated
    run) counts once: from the newest log."""
    keys = ["metric", "signature", "entry", "paper", "epoch"]
    ordered = scores.sort_values(["created", "log"], kind="stable")
    duplicated = ordered.duplicated(keys, keep="last")
    if duplicated.any():
        for (metric, entry), sub in ordered[duplicated].groupby(["metric", "entry"]):
            notes.append(
                f"{metric_name(metric)}: {sub['paper'].nunique()} paper(s) of {entry} appear in "
                "several logs with the same signature; the newest log's scores are used"
            )
    return ordered[~duplicated]


def _setup_notes(scores: pd.DataFrame, notes: list[str]) -> None:
    for (metric, group), sub in scores.groupby(["metric", "group"], sort=False):
        setups = sub.groupby("setup")["entry"].unique()
        if len(setups) > 1:
            described = "; ".join(f"{s}: {', '.join(e)}" for s, e in setups.items())
            notes.append(
                f"{metric_name(metric)} group {group}: the logs differ in dataset, split seed or "
                f"number of references, so models were not scored against the same reference "
                f"reviews ({described})"
            )


def _check_logged_headlines(
    table: pd.DataFrame, scores: pd.DataFrame, notes: list[str], headers: dict[str, Any]
) -> None:
    """A note for each row whose corpus headline, as its one log reports it (the number Inspect
    printed and ``evals_df`` reads), differs from the one recomputed here from the samples
    ranked (a log with samples left out as duplicates of a newer log's, or scored by another
    definition of the statistic)."""
    for _, row in table.iterrows():
        if row["headline_kind"] != CORPUS_STATISTIC:
            continue
        sub = scores[
            (scores["metric"] == row["metric"])
            & (scores["group"] == row["group"])
            & (scores["entry"] == row["model"])
        ]
        if sub["log"].nunique() != 1:
            continue
        reported = log_metrics(str(sub["log"].iloc[0]), headers, notes).get(
            str(sub["scorer"].iloc[0]), {}
        )
        logged = reported.get(row["headline"])
        if logged is None or (math.isnan(float(logged)) and math.isnan(row["value"])):
            continue
        if not math.isclose(float(logged), float(row["value"]), rel_tol=1e-9, abs_tol=1e-12):
            notes.append(
                f"{metric_name(row['metric'])} of {row['model']}: its log reports "
                f"{row['headline']} {float(logged):.6g}, recomputed from the samples ranked "
                f"{float(row['value']):.6g}"
            )


def _with_corpus_numbers(
    table: pd.DataFrame, scores: pd.DataFrame, notes: list[str]
) -> pd.DataFrame:
    """The table with ``corpus`` and ``corpus_key``: a further run-level number a metric's logs
    report beside its headline (e.g. Binoculars' ``ai_rate``), NaN for metrics without one; and
    the 95% interval the log reports for a mean (``interval``: Wilson's for a rate). A corpus
    headline the log reports is checked against the number recomputed from its samples."""
    table = table.copy()
    table["corpus"], table["corpus_key"] = float("nan"), None
    table["interval"], table["interval_lower"], table["interval_upper"] = None, math.nan, math.nan
    if table.empty:
        return table
    keys = ["metric", "group", "model"]
    headers: dict[str, dict] = {}  # each log's header read once for both
    _check_logged_headlines(table, scores, notes, headers)
    intervals = corpus_intervals(scores, notes, headers)
    if not intervals.empty:
        first = intervals.drop_duplicates(subset=keys)
        merged = table[keys].merge(first, on=keys, how="left")
        table["interval"] = merged["interval"].to_numpy()
        table["interval_lower"] = merged["lower"].astype(float).to_numpy()
        table["interval_upper"] = merged["upper"].astype(float).to_numpy()
    corpus = corpus_values(scores, DEFAULT_CORPUS_KEY, notes, headers)
    if corpus.empty:
        return table
    merged = table[keys].merge(corpus, on=keys, how="left")
    table["corpus"] = merged["corpus"].astype(float).to_numpy()
    table["corpus_key"] = merged["key"].to_numpy()
    return table


def compare_logs(
    sources: Sequence[str | Path] | pd.DataFrame,
    *,
    merge: bool = False,
    level: float = 0.90,
    tasks: Sequence[str] = LEADERBOARD_TASKS,
    progress: bool = True,
) -> Leaderboard:
    """Build the leaderboard from Inspect logs (files or folders) or from ``read_scores``' frame.

    Per metric, scores whose signatures differ (ignoring the signature's own ``id``) are kept in
    separate groups, each ranked on its own; ``differences`` names the fields that differ. With
    ``merge=True`` each metric's groups are ranked together (a model present in several groups
    then gets one row per group, labelled ``model [signature k]``) and ``notes`` says so.
    Unscored and errored samples are left out of the means and counted. Significance is a
    two-sided paired t-test at p < 1 − ``level`` (the paired interval then excludes 0), without
    correction for multiple comparisons (``p_holm`` gives the Holm-adjusted p-values).
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    scores = sources if isinstance(sources, pd.DataFrame) else None
    if scores is None:
        scores = read_scores(list(sources), tasks=tasks, progress=progress)
    notes = list(scores.attrs.get("notes", []))
    logs = list(scores.attrs.get("logs", []))
    if not (scores["status"] == "scored").any():
        raise ValueError(nothing_to_rank(logs) if logs else "the logs hold no scored sample")
    scores = _keep_newest(scores.copy(), notes)
    if "details" not in scores:  # a frame built without result metadata: headlines need none
        scores["details"] = None
    if scores.empty:
        raise ValueError("the logs hold no scores")
    groups = _signature_groups(scores)
    scores = scores.merge(groups, on=["metric", "signature"], how="left")
    group_table = _group_table(scores, groups)
    differences = _differences(group_table)

    # consistency across signature groups is always measured on the unmerged groups
    unmerged = _summaries(_per_paper(scores), scores, level)
    consistency = ranking_consistency(unmerged)

    if merge:
        for metric, sub in differences.groupby("metric", sort=False):
            fields = ", ".join(dict.fromkeys(sub["field"]))
            count = (group_table["metric"] == metric).sum()
            notes.append(
                f"{metric_name(metric)}: --merge ranks {count} signature groups together although "
                f"their scores were computed differently (they differ in {fields})"
            )
        presence = scores.groupby(["metric", "entry"])["group"].transform("nunique")
        several = presence > 1
        scores.loc[several, "entry"] = (
            scores.loc[several, "entry"] + " [signature " + scores.loc[several, "group"] + "]"
        )
        scores["group"] = "merged"
    else:
        for metric, sub in differences.groupby("metric", sort=False):
            fields = ", ".join(dict.fromkeys(sub["field"]))
            count = (group_table["metric"] == metric).sum()
            notes.append(
                f"{metric_name(metric)}: {count} signature groups ranked separately (they differ "
                f"in {fields}); pass --merge to rank them together"
            )
    _setup_notes(scores, notes)
    papers = _per_paper(scores)
    table = unmerged if not merge else _summaries(papers, scores, level)
    pairs = _pairs(papers, scores, table, level)
    table["better_than"] = _better_than(table, pairs)
    table = _with_corpus_numbers(table, scores, notes)
    return Leaderboard(
        table=table,
        pairs=pairs,
        groups=group_table,
        differences=differences,
        consistency=consistency,
        scores=scores,
        level=level,
        merged=merge,
        notes=notes,
    )


def leaderboard(
    sources: Sequence[str | Path],
    *,
    merge: bool = False,
    level: float = 0.90,
    progress: bool = True,
) -> pd.DataFrame:
    """The leaderboard table of the logs under ``sources``: one row per metric, signature group
    and model with papers seen, scored, unscored, errored, mean, stderr, ``ci90_lower`` /
    ``ci90_upper`` (Student t), rank and ``better_than`` (see ``compare_logs``); the human
    baseline's row is labelled ``HUMAN_LABEL`` and flagged ``is_human``. ``attrs["notes"]``
    holds what the reader should know (separate signature groups, merges, skipped logs)."""
    board = compare_logs(sources, merge=merge, level=level, progress=progress)
    table = board.table.copy()
    table.attrs["notes"] = list(board.notes)
    return table
