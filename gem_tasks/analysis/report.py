"""Validation report from Inspect logs: the metric x perturbation table of the GEM paper's Table 2
(SMD with 95% CI, significant cells marked) and the failure counts of the Scoring Rules paper's
Tables 4-5, plus the human-grade correlations and, with ``against``, every metric's correlation
across models with one metric (e.g. rating MAE: the Beyond Rating paper's Fig. 3 analysis) from
the gem_tasks/iclr logs among the sources."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
from inspect_ai.log import EvalLog, read_eval_log
from tqdm import tqdm

from gem_tasks.analysis.correlation_options import DEFAULT_CORPUS_KEY, DEFAULT_MIN_SCORED
from gem_tasks.analysis.leaderboard.correlate import (
    MetricCorrelations,
    correlate,
    correlation_markdown,
    write_correlations,
)
from gem_tasks.analysis.leaderboard.logs import ICLR_TASK, log_paths, task_matches
from scorers.validation.perturbations import PERTURBATIONS
from scorers.validation.statistics import ONE_PAIR_DECIDES
from scorers.validation.statistics import one_pair_decides as _decides

__all__ = [
    "correlation_table",
    "failure_codes_markdown",
    "failure_counts",
    "gaming_table_markdown",
    "one_pair_decides",
    "read_validation_logs",
    "smd_table_markdown",
    "render_report",
    "write_report",
]

ROBUSTNESS_TASK = "gem_tasks/robustness"
CORRELATION_TASK = "gem_tasks/correlation"
RATED_TASKS = ("gem_tasks/summeval", "gem_tasks/judgments")
"""Tasks whose ``candidates`` logs hold ``rating_spearman`` (ρ with human ratings per dimension)."""


def _metric(score: object, name: str) -> float:
    metric = getattr(score, "metrics", {}).get(name)
    return float(metric.value) if metric is not None else math.nan


def _scorer_name(name: str) -> str:
    return name.removesuffix("_paired")


def read_validation_logs(
    sources: Sequence[str | Path], *, progress: bool = True, expected: Sequence[str] = ()
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Robustness rows (one per scorer and perturbation) and correlation rows (one per scorer)
    from the headers of the logs under ``sources`` (files or folders). Logs of other tasks and
    unfinished logs are skipped and listed in the frames' ``attrs["skipped"]``; when several logs
    measure the same scorer on the same perturbation (or correlation) with the same evaluation LM,
    the newest is kept and the others are listed there as superseded. Logs of the tasks in
    ``expected`` (read elsewhere) are passed over without a mention."""
    robust_rows, corr_rows, skipped = [], [], []
    paths = log_paths(sources)
    for path in tqdm(paths, desc="reading logs", disable=not progress, unit="log"):
        log: EvalLog = read_eval_log(path, header_only=True)
        if log.status != "success" or log.results is None:
            skipped.append(f"{path}: status {log.status}")
            continue
        task = log.eval.task
        if task_matches(task, [ROBUSTNESS_TASK]):
            meta = log.eval.metadata or {}
            perturbation = meta.get("perturbation", log.eval.task_args.get("perturbation"))
            strategy = PERTURBATIONS.get(str(perturbation))
            for score in log.results.scores:
                robust_rows.append(
                    {
                        "scorer": _scorer_name(score.name),
                        "perturbation": perturbation,
                        "code": strategy.code if strategy else "",
                        "dataset": log.eval.dataset.name or "",
                        "kind": meta.get("kind"),
                        "expected": meta.get("expected"),
                        "alpha": meta.get("alpha", 0.05),
                        "n": score.scored_samples,
                        "excluded": score.unscored_samples or 0,
                        "smd": _metric(score, "smd"),
                        "smd_ci95_lower": _metric(score, "smd_ci95_lower"),
                        "smd_ci95_upper": _metric(score, "smd_ci95_upper"),
                        "smd_paired_ci95_lower": _metric(score, "smd_paired_ci95_lower"),
                        "smd_paired_ci95_upper": _metric(score, "smd_paired_ci95_upper"),
                        "mean_difference": _metric(score, "mean_paired_difference"),
                        "p": _metric(score, "paired_p"),
                        "largest_share": _metric(score, "largest_share"),
                        "signed_rank_p": _metric(score, "signed_rank_p"),
                        "verdict": _metric(score, "verdict"),
                        "evaluation_lm": log.eval.task_args.get("scorer_lm"),
                        "level": log.eval.task_args.get("level"),
                        # what was perturbed (logs before the choice: the held-out report)
                        "perturbed": meta.get("perturb_target", "the held-out human report"),
                        "created": log.eval.created,
                        "log": path,
                    }
                )
        elif task_matches(task, RATED_TASKS):
            continue  # read by read_rating_correlations
        elif task_matches(task, [CORRELATION_TASK]):
            for score in log.results.scores:
                corr_rows.append(
                    {
                        "scorer": score.name,
                        "n": score.scored_samples,
                        "spearman_rho": _metric(score, "spearman_rho"),
                        "p": _metric(score, "spearman_p"),
                        "evaluation_lm": log.eval.task_args.get("scorer_lm"),
                        "created": log.eval.created,
                        "log": path,
                    }
                )
        elif not task_matches(task, expected):
            skipped.append(f"{path}: task {task} is not a validation task")
    robust = _keep_newest(
        pd.DataFrame(robust_rows),
        ["scorer", "perturbation", "level", "evaluation_lm", "dataset", "perturbed"],
        skipped,
    )
    corr = _keep_newest(pd.DataFrame(corr_rows), ["scorer", "evaluation_lm"], skipped)
    robust.attrs["skipped"] = corr.attrs["skipped"] = skipped
    return robust, corr


def _keep_newest(frame: pd.DataFrame, key: list[str], skipped: list[str]) -> pd.DataFrame:
    """One row per ``key``: the newest log's; the older ones are listed in ``skipped``."""
    if frame.empty:
        return frame
    frame = frame.sort_values(["created", "log"], kind="stable").reset_index(drop=True)
    labels = frame[key].apply(lambda row: " / ".join(str(v) for v in row), axis=1)
    names = frame["log"].map(lambda log: str(log).rsplit("/", 1)[-1])
    newest = dict(zip(labels, names))  # the last row of each label wins
    older = labels.duplicated(keep="last")
    for index in frame.index[older]:
        label = labels[index]
        skipped.append(f"{names[index]}: {label} superseded by the newer {newest[label]}")
    return frame[~older].reset_index(drop=True)


_ONE_PAIR_FOOTNOTE = (
    f" ‡: one paper carries at least {ONE_PAIR_DECIDES:.0%} of the spread of the paired "
    "differences, so the t-test reads that paper alone (its t tends to ±1 as the difference "
    "grows): its verdict says little either way; the Wilcoxon signed-rank p in the same "
    "direction is shown beside it. The verdict and the counts stay the papers' t-test."
)


def _one_pair_footnote(rows: pd.DataFrame) -> str:
    """The ‡ footnote, where a row of ``rows`` is marked."""
    return _ONE_PAIR_FOOTNOTE if any(one_pair_decides(r) for _, r in rows.iterrows()) else ""


def _paired_interval(row: pd.Series) -> str:
    """The papers' paired 95% interval of the SMD, or "" for logs written before it existed."""
    low = row.get("smd_paired_ci95_lower", math.nan)
    high = row.get("smd_paired_ci95_upper", math.nan)
    if not (isinstance(low, float) and math.isfinite(low) and math.isfinite(high)):
        return ""
    return f"[{low:.2f}, {high:.2f}]"


def one_pair_decides(row: pd.Series) -> bool:
    """Whether one pair carries at least :data:`ONE_PAIR_DECIDES` of the spread of the paired
    differences (False for logs written before ``largest_share`` existed)."""
    return _decides(row.get("largest_share", math.nan))


def _one_pair_note(row: pd.Series) -> str:
    """ " ‡ (one paper: 99% of the spread; signed-rank p = …)" where one pair decides, else ""."""
    if not one_pair_decides(row):
        return ""
    rank_p = row.get("signed_rank_p", math.nan)
    rank = f"; signed-rank p = {rank_p:.2g}" if math.isfinite(rank_p) else ""
    return f" ‡ (one paper: {row['largest_share']:.0%} of the spread{rank})"


def _cell(row: pd.Series) -> str:
    if not math.isfinite(row["smd"]):
        return "n/a"
    text = f"{row['smd']:.2f} [{row['smd_ci95_lower']:.2f}, {row['smd_ci95_upper']:.2f}]"
    paired = _paired_interval(row)
    if paired:
        text += f" paired {paired}"
    significant = math.isfinite(row["p"]) and row["p"] < row["alpha"]
    if significant and row["expected"] == "decrease":
        text = f"**{text}** ✓"  # a significant decrease: the degradation is penalised
    elif significant:
        text = f"**{text}** ✗"  # a significant increase: the manipulation is rewarded
    return text + _one_pair_note(row)


def smd_table_markdown(robust: pd.DataFrame) -> str:
    """Markdown table, scorers as rows and perturbations as columns (degradations first), each
    cell the SMD with its 95% CI; bold marks a significant change in the tested direction
    (✓ a degradation penalised, ✗ a manipulation rewarded). Gaming strategies have their own
    table (:func:`gaming_table_markdown`)."""
    if not robust.empty:
        robust = robust[robust["kind"] != "gaming"]
    if robust.empty:
        return "_no robustness logs_\n"
    robust = robust.copy()
    if "perturbed" not in robust:
        robust["perturbed"] = "the held-out human report"
    # a strategy run on two kinds of text (candidates, the held-out report) is two columns
    several = robust.groupby("perturbation")["perturbed"].transform("nunique") > 1
    robust["column"] = robust["perturbation"].where(
        ~several, robust["perturbation"] + " on " + robust["perturbed"]
    )
    order = robust.sort_values(["kind", "column"]).drop_duplicates("column")
    columns = list(order["column"])
    kinds = dict(zip(order["column"], order["kind"]))
    header = "| scorer | " + " | ".join(f"{c} ({kinds[c]})" for c in columns) + " |"
    lines = [header, "| --- |" + " --- |" * len(columns)]
    for scorer, group in robust.groupby("scorer", sort=True):
        cells = {row["column"]: _cell(row) for _, row in group.iterrows()}
        lines.append(f"| {scorer} | " + " | ".join(cells.get(c, "") for c in columns) + " |")
    n = robust["n"].min(), robust["n"].max()
    lines.append("")
    lines.append(
        f"SMD d = (μ' − μ)/σ_pooled after vs before; first brackets: the two-sample 95% CI of "
        "d (normal approximation, SE of Cohen's d); 'paired': the GEM paper's paired 95% "
        "interval (mean paired difference ± t·SE, over σ_pooled; GEM paper App. A.1); "
        f"n = {n[0]}–{n[1]} pairs; bold: one-sided paired t-test p < α in the tested direction. "
        f"Text perturbed: {'; '.join(sorted(set(robust['perturbed'])))}."
        + _one_pair_footnote(robust)
    )
    return "\n".join(lines) + "\n"


def _gaming_cell(row: pd.Series) -> str:
    if not math.isfinite(row["smd"]):
        return "n/a"
    low, high = (
        row.get("smd_paired_ci95_lower", math.nan),
        row.get("smd_paired_ci95_upper", math.nan),
    )
    interval = f" [{low:.2f}, {high:.2f}]" if math.isfinite(low) and math.isfinite(high) else ""
    p = row["p"]
    text = f"{row['smd']:.2f}{interval}, p = {p:.2g}" if math.isfinite(p) else f"{row['smd']:.2f}"
    text = f"**{text}** ✗" if row["verdict"] < 0.5 else text
    return text + _one_pair_note(row)


def gaming_table_markdown(robust: pd.DataFrame) -> str:
    """The red-team table: scorers as rows, gaming strategies as columns; each cell the SMD
    after vs before with the papers' paired 95% interval and the one-sided paired t-test
    p-value for an increase. A significant increase is a failure (bold, ✗), counted in the last
    column."""
    gaming = robust[robust["kind"] == "gaming"] if not robust.empty else robust
    if gaming.empty:
        return "_no gaming logs_\n"
    columns = sorted(gaming["perturbation"].unique())
    lines = [
        "| scorer | " + " | ".join(columns) + " | gamed |",
        "| --- |" + " --- |" * (len(columns) + 1),
    ]
    for scorer, group in gaming.groupby("scorer", sort=True):
        cells = {row["perturbation"]: _gaming_cell(row) for _, row in group.iterrows()}
        failed = int((group["verdict"] < 0.5).sum())
        decided = sum(one_pair_decides(row) for _, row in group.iterrows())
        count = f"{failed} of {len(group)}" + (f" ({decided} ‡)" if decided else "")
        lines.append(
            f"| {scorer} | " + " | ".join(cells.get(c, "") for c in columns) + f" | {count} |"
        )
    n = gaming["n"].min(), gaming["n"].max()
    lines.append("")
    lines.append(
        f"SMD d = (μ' − μ)/σ_pooled of the gamed review vs the real one; brackets: the papers' "
        f"paired 95% interval (mean paired difference ± t·SE, over σ_pooled); p: one-sided "
        f"paired t-test for an increase; n = {n[0]}–{n[1]} pairs. ✗: a significant increase, "
        "the metric is gamed." + _one_pair_footnote(gaming)
    )
    return "\n".join(lines) + "\n"


def failure_counts(robust: pd.DataFrame) -> pd.DataFrame:
    """Per scorer: how many degradations it failed to penalise and how many manipulations it
    rewarded (Scoring Rules paper, Tables 4-5), and in how many tested cells one pair decided
    the t-test (``one_paper_decides``: those verdicts say little either way)."""
    if robust.empty:
        return pd.DataFrame(
            columns=[
                "scorer",
                "degradations_failed",
                "degradations",
                "manipulations_failed",
                "manipulations",
                "gaming_failed",
                "gaming",
                "failed",
                "tested",
                "one_paper_decides",
            ]
        )
    rows = []
    for scorer, group in robust.groupby("scorer", sort=True):
        # a cell with no scored pair (verdict NaN) was not tested: neither passed nor failed
        group = group[group["verdict"].notna()]
        failed = group["verdict"] < 0.5
        degr = group["kind"] == "degradation"
        gamed = group["kind"] == "gaming"
        manip = ~degr & ~gamed
        rows.append(
            {
                "scorer": scorer,
                "degradations_failed": int((failed & degr).sum()),
                "degradations": int(degr.sum()),
                "manipulations_failed": int((failed & manip).sum()),
                "manipulations": int(manip.sum()),
                "gaming_failed": int((failed & gamed).sum()),
                "gaming": int(gamed.sum()),
                "failed": int(failed.sum()),
                "tested": len(group),
                "one_paper_decides": int(sum(one_pair_decides(row) for _, row in group.iterrows())),
            }
        )
    return pd.DataFrame(rows)


_PAPER_ORDER = {"degradation": "DORSPUJ", "manipulation": "MNHPSR"}


def _codes(group: pd.DataFrame, kind: str) -> str:
    """The letters of the strategies of ``kind`` the scorer failed, in the paper's order; ✓ when
    it failed none, – when none was run, n/a when none had a scored pair (strategies run without
    a scored pair are named: "✓ (n/a: R)")."""
    run = group[group["kind"] == kind]
    if run.empty:
        return "–"
    tested = run[run["verdict"].notna()]
    untested = "".join(sorted(str(c) or "?" for c in run.loc[run["verdict"].isna(), "code"]))
    if tested.empty:
        return "n/a"
    order = _PAPER_ORDER[kind]
    failed = sorted((str(c) or "?") for c in tested.loc[tested["verdict"] < 0.5, "code"])
    failed.sort(key=lambda c: (order.find(c[0]) if c[0] in order else len(order), c))
    return ("".join(failed) or "✓") + (f" (n/a: {untested})" if untested else "")


def failure_codes_markdown(robust: pd.DataFrame) -> str:
    """The Scoring Rules paper's Tables 4-5 layout: per scorer and dataset, the letters of the
    degradations it failed to penalise and of the manipulations it rewarded (✓: none), then the
    totals. Letters: D deletion & completion, O opinion flip, R random replacement, S sentence
    deletion, P surface report (abstract only), U ultra-concise, J judgment deletion; M
    elongation (Mf: fixed filler), N/H/P/S negative/hedged/positive/strong shift, R rephrase
    (Rr: may reorganise)."""
    if robust.empty:
        return "_no robustness logs_\n"
    robust = robust[robust["kind"] != "gaming"]
    if robust.empty:
        return "_no degradation or manipulation logs_\n"
    datasets = sorted(robust["dataset"].fillna("").unique())
    header = ["scorer"]
    for dataset in datasets:
        header += [
            f"{dataset or 'dataset'}: degradations",
            f"{dataset or 'dataset'}: manipulations",
        ]
    header += ["degradations failed", "manipulations failed"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for scorer, group in robust.groupby("scorer", sort=True):
        cells = [scorer]
        for dataset in datasets:
            part = group[group["dataset"].fillna("") == dataset]
            cells += [_codes(part, "degradation"), _codes(part, "manipulation")]
        for kind in ("degradation", "manipulation"):
            tested = group[(group["kind"] == kind) & group["verdict"].notna()]
            cells.append(f"{int((tested['verdict'] < 0.5).sum())}/{len(tested)}")
        lines.append("| " + " | ".join(cells) + " |")
    excluded = robust[robust["excluded"].fillna(0) > 0] if "excluded" in robust else robust[:0]
    lines.append("")
    lines.append(
        "A degradation fails when the one-sided paired t-test finds no significant decrease; a "
        "manipulation fails when it finds a significant increase (α of each log). A strategy "
        "with no scored pair is not tested (n/a) and not counted. Cells where one paper decides "
        "the t-test are counted in the failure counts' one_paper_decides column."
    )
    if not excluded.empty:
        lines.append("")
        lines.append(
            "Items left out (perturbation failed, or a side unscored), never scored unchanged:"
        )
        for _, row in excluded.sort_values(["scorer", "perturbation"]).iterrows():
            lines.append(
                f"- {row['scorer']} / {row['perturbation']}: {int(row['excluded'])} excluded, "
                f"{int(row['n'])} scored"
            )
    return "\n".join(lines) + "\n"


def read_rating_correlations(sources: Sequence[str | Path]) -> pd.DataFrame:
    """One row per scorer and dataset from the summeval/judgments logs that scored existing
    candidates against their human ratings: Spearman's ρ per rating dimension (``rho_<dim>``),
    their mean and ρ with the mean rating, the newest log of each (scorer, dataset, evaluation
    LM)."""
    rows = []
    for path in log_paths(sources):
        log: EvalLog = read_eval_log(path, header_only=True)
        if log.status != "success" or log.results is None:
            continue
        if not task_matches(log.eval.task, RATED_TASKS):
            continue
        for score in log.results.scores:
            rhos = {k: v.value for k, v in score.metrics.items() if k.startswith("rho_")}
            if not rhos:
                continue
            rows.append(
                {
                    "scorer": _scorer_name(score.name),
                    "dataset": log.eval.dataset.name or "",
                    "n": score.scored_samples,
                    **rhos,
                    "evaluation_lm": log.eval.task_args.get("scorer_lm"),
                    "created": log.eval.created,
                    "log": path,
                }
            )
    return _keep_newest(pd.DataFrame(rows), ["scorer", "dataset", "evaluation_lm"], [])


def rating_correlation_markdown(rated: pd.DataFrame) -> str:
    """The Scoring Rules paper's Table 3 layout: per scorer, one column per dataset, the mean
    of Spearman's ρ over the rating dimensions."""
    if rated.empty:
        return "_no logs of rated candidates (summeval or judgments with candidate=candidates)_\n"
    datasets = sorted(rated["dataset"].unique())
    lines = [
        "| scorer | " + " | ".join(datasets) + " |",
        "| --- |" + " --- |" * len(datasets),
    ]
    for scorer, group in rated.groupby("scorer", sort=True):
        cells = []
        for dataset in datasets:
            part = group[group["dataset"] == dataset]
            value = part["rho_mean_of_dimensions"].iloc[0] if len(part) else math.nan
            cells.append(
                "–" if not math.isfinite(value) else f"{value:+.3f} (n {part['n'].iloc[0]})"
            )
        lines.append(f"| {scorer} | " + " | ".join(cells) + " |")
    note = (
        "\nSpearman's ρ between each metric and the candidates' human ratings, the mean over the "
        "rating dimensions (per-dimension values in ratings_correlation.csv); n: scored "
        "candidates.\n"
    )
    return "\n".join(lines) + "\n" + note


def correlation_table(corr: pd.DataFrame) -> str:
    """Markdown table of Spearman's ρ per scorer."""
    if corr.empty:
        return "_no correlation logs_\n"
    lines = ["| scorer | n | Spearman ρ | p |", "| --- | --- | --- | --- |"]
    for _, row in corr.sort_values("scorer").iterrows():
        lines.append(
            f"| {row['scorer']} | {row['n']} | {row['spearman_rho']:.3f} | {row['p']:.3g} |"
        )
    return "\n".join(lines) + "\n"


def _markdown_frame(frame: pd.DataFrame) -> str:
    columns = list(frame.columns)
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += [
        "| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)
    ]
    return "\n".join(lines) + "\n"


def write_report(
    sources: Iterable[str | Path],
    out_dir: str | Path,
    *,
    progress: bool = True,
    against: Sequence[str] = (),
    corpus_key: str | None = DEFAULT_CORPUS_KEY,
    min_scored: int = DEFAULT_MIN_SCORED,
) -> dict[str, Path]:
    """Write report.md, robustness.csv, failures.csv and correlation.csv to ``out_dir``;
    returns their paths. With ``against`` (metric names, e.g. ``br_rating_mae``), the
    gem_tasks/iclr logs among ``sources`` are read as for the leaderboard and every other metric
    is correlated with each of them across models (see
    :mod:`gem_tasks.analysis.leaderboard.correlate`): a section of report.md and
    ``correlation_with_<metric>.md``/``.csv``.

    Raises:
        ValueError: ``against`` is given but no gem_tasks/iclr log is among ``sources``, or it
            names a metric those logs do not have.
    """
    sources = list(sources)
    expected = (ICLR_TASK,) if against else ()
    robust, corr = read_validation_logs(sources, progress=progress, expected=expected)
    rated = read_rating_correlations(sources)
    correlations = []
    if against:
        from gem_tasks.analysis.leaderboard.compare import compare_logs

        board = compare_logs(sources, progress=progress)
        correlations = [
            correlate(board, metric, corpus_key=corpus_key, min_scored=min_scored)
            for metric in dict.fromkeys(against)
        ]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    failures = failure_counts(robust)
    paths = {
        "markdown": out / "report.md",
        "robustness": out / "robustness.csv",
        "failures": out / "failures.csv",
        "correlation": out / "correlation.csv",
        "ratings_correlation": out / "ratings_correlation.csv",
    }
    paths["markdown"].write_text(render_report(robust, corr, rated, correlations), encoding="utf-8")
    robust.to_csv(paths["robustness"], index=False)
    failures.to_csv(paths["failures"], index=False)
    corr.to_csv(paths["correlation"], index=False)
    rated.to_csv(paths["ratings_correlation"], index=False)
    for result in correlations:
        written = write_correlations(result, out)
        paths.update({f"{key}:{result.against}": path for key, path in written.items()})
    return paths


def render_report(
    robust: pd.DataFrame,
    corr: pd.DataFrame,
    rated: pd.DataFrame,
    correlations: Sequence[MetricCorrelations] = (),
) -> str:
    """report.md's text from the tables :func:`write_report` writes beside it (robustness,
    correlation with grades, correlation with ratings) and its correlations across models;
    the same tables read back from those CSVs give the same text (``robust.attrs["skipped"]``,
    the logs left out, is known only while reading logs)."""
    failures = failure_counts(robust)
    parts = [
        "# Metric validation\n",
        "## Sensitivity and robustness (GEM paper Table 2 layout)\n",
        smd_table_markdown(robust),
        "## Gaming (red-team suite: can a model raise its score without a better review?)\n",
        gaming_table_markdown(robust),
        "## Failures (Scoring Rules paper Tables 4-5 layout)\n",
        failure_codes_markdown(robust),
        "### Failure counts\n",
        _markdown_frame(failures) if not failures.empty else "_no robustness logs_\n",
        "## Correlation with human grades\n",
        correlation_table(corr),
        "## Correlation with human ratings of existing candidates (Scoring Rules paper Table 3 "
        "layout)\n",
        rating_correlation_markdown(rated),
    ]
    for result in correlations:
        parts.append(re.sub(r"^#", "##", correlation_markdown(result), flags=re.MULTILINE))
    if robust.attrs.get("skipped"):
        parts += ["## Logs skipped\n", "\n".join(f"- {s}" for s in robust.attrs["skipped"]) + "\n"]
    return "\n".join(parts)
