"""Leaderboard output: markdown tables, CSV and JSON files, and model parameter counts for the
plot."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from gem_tasks.analysis.leaderboard.logs import (
    headline_kind,
    headline_name,
    metric_name,
    metric_spec_or_none,
)
from gem_tasks.analysis.leaderboard.params import params_for
from scorers.corpus import BOOTSTRAP_RESAMPLES
from scorers.registry import CORPUS_STATISTIC
from scorers.validation.statistics import ONE_PAIR_DECIDES, one_pair_decides

if TYPE_CHECKING:
    from gem_tasks.analysis.leaderboard.types import Leaderboard

__all__ = ["leaderboard_markdown", "table_kind_line", "write_leaderboard"]


# -- output --------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _p(value: float) -> str:
    return "n/a" if not math.isfinite(value) else f"{value:.3g}"


_ONE_PAPER_NOTE = (
    f" ‡: one paper carries at least {ONE_PAIR_DECIDES:.0%} of the spread of the paired "
    "differences, so the t-test reads that paper alone (a heavy-tailed metric such as a "
    "density-ratio cell): the Wilcoxon signed-rank p is shown beside it; do not read the pair's "
    "order from the t-test."
)


def _decided_by_one(row: Any) -> bool:
    return one_pair_decides(row.get("largest_share", math.nan))


def _one_paper(row: Any) -> str:
    """ " ‡ (signed-rank p = …)" where one paper decides the pair's t-test, else ""."""
    if not _decided_by_one(row):
        return ""
    return f" ‡ (signed-rank p = {_p(row.get('signed_rank_p', math.nan))})"


def _any_one_paper(pairs: Any) -> bool:
    return any(_decided_by_one(row) for _, row in pairs.iterrows())


_CAPTION_SKIP = frozenset(
    {"metric", "version", "prompts", "package_version", "evaluation_lm", "preprocessor", "synopsis"}
)


def group_caption(board: Leaderboard, metric: str, group: str) -> str:
    if group == "merged":
        return "all signature groups merged (--merge)"
    row = board.groups[(board.groups["metric"] == metric) & (board.groups["group"] == group)]
    if row.empty:
        return ""
    r = row.iloc[0]
    fields = [
        (label, r.get(key))
        for label, key in (
            ("evaluation LM", "evaluation_lm"),
            ("preprocessor", "preprocessor"),
            ("synopsis", "synopsis"),
        )
    ]
    # the family's own fields (BERTScore's embedding model, a judge, ...) after the common ones
    signature = json.loads(r["signature"]) if _present(r.get("signature")) else {}
    fields += [
        (key.replace("_", " "), value)
        for key, value in signature.items()
        if key not in _CAPTION_SKIP and not isinstance(value, dict | list)
    ]
    # a field the metric's signature does not have (BLEU has no evaluation LM) is left out
    shown = [f"{label} `{value}`" for label, value in fields if _present(value)]
    return f"signature group {group}" + (": " + ", ".join(shown) if shown else "")


def table_kind_line(metric: str, pct: str) -> str:
    """One sentence saying which kind of number a metric's table ranks."""
    spec = metric_spec_or_none(metric)
    statistic = spec.headline if spec is not None else None
    if statistic is None and spec is not None and spec.proportion:
        return (
            f"*Proportion*: ranked by the share of papers whose value is 1, with its Wilson "
            f"{pct} interval (inside [0, 1]); pairs by paired t-test on the per-paper 0/1 values."
        )
    if statistic is None:
        return (
            f"*Per-item mean*: ranked by the mean of the per-paper values, with its Student-t "
            f"{pct} interval; pairs by paired t-test."
        )
    return (
        f"*Corpus statistic* `{statistic.name}` ({statistic.description}): ranked by its value, "
        f"with a bootstrap {pct} interval; pairs by paired bootstrap over the papers both scored."
    )


def _interval(row: Any) -> str:
    """`` [lower, upper]`` of a row's reported 95% interval, or "" when it has none."""
    if "interval" not in row or row["interval"] is None or pd.isna(row["interval"]):
        return ""
    return f" [{_fmt(row['interval_lower'])}, {_fmt(row['interval_upper'])}]"


def _present(value: object) -> bool:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return False
    return str(value).strip() not in ("", "None", "nan")


def leaderboard_markdown(board: Leaderboard) -> str:
    """The leaderboard as markdown: per metric and signature group the ranked table and the
    paired comparisons, then how the groups differ, ranking consistency and notes."""
    ci = f"ci{round(board.level * 100)}"
    pct = f"{round(board.level * 100)}%"
    alpha = 1 - board.level
    parts = ["# GRE-bench leaderboard\n"]
    if board.merged:
        parts.append(
            "**Signature groups merged (--merge): scores computed differently are ranked "
            "together.**\n"
        )
    kinds = set()
    for (metric, group), sub in board.table.groupby(["metric", "group"], sort=False):
        section, corpus_headline = _group_section(board, metric, group, sub, ci=ci, pct=pct)
        parts += section
        kinds.add(corpus_headline)
    parts.append(_footer(board, kinds, pct=pct, alpha=alpha))
    parts += _across_groups(board)
    if board.notes:
        parts.append("## Notes\n\n" + "\n".join(f"- {n}" for n in board.notes) + "\n")
    return "\n".join(parts)


def _group_section(
    board: Leaderboard, metric: str, group: str, sub: pd.DataFrame, *, ci: str, pct: str
) -> tuple[list[str], bool]:
    """The section of one metric and signature group (its ranked table, further corpus
    numbers, the paired comparisons) and whether its headline is a corpus statistic."""
    parts: list[str] = []
    parts.append(f"## {metric_name(metric)} — {group_caption(board, metric, group)}\n")
    corpus_headline = headline_kind(metric) == CORPUS_STATISTIC
    parts.append(table_kind_line(metric, pct) + "\n")
    if corpus_headline:
        name = headline_name(metric)
        lines = [
            f"| rank | model | papers scored | unscored | errored | {name} | {pct} CI "
            "(bootstrap) | per-item mean (diagnostic) | significantly better than |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    else:
        lines = [
            f"| rank | model | papers scored | unscored | errored | mean | SE | {pct} CI | "
            "significantly better than |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
    for _, r in sub.iterrows():
        name = f"**{r['model']}**" if r["is_human"] else r["model"]
        rank = "n/a" if pd.isna(r["rank"]) else str(r["rank"])
        middle = (
            f"{_fmt(r['value'])} | [{_fmt(r[f'{ci}_lower'])}, {_fmt(r[f'{ci}_upper'])}] | "
            f"{_fmt(r['mean'])}"
            if corpus_headline
            else f"{_fmt(r['value'])} | {_fmt(r['stderr'])} | "
            f"[{_fmt(r[f'{ci}_lower'])}, {_fmt(r[f'{ci}_upper'])}]"
        )
        lines.append(
            f"| {rank} | {name} | {r['scored']} | {r['unscored']} | {r['errored']} | "
            f"{middle} | {r['better_than'] or '—'} |"
        )
    parts.append("\n".join(lines) + "\n")
    corpus = sub.dropna(subset=["corpus"]) if "corpus" in sub else sub.iloc[0:0]
    if not corpus.empty:
        key = corpus["corpus_key"].iloc[0]
        shown = ", ".join(
            f"{r['model']} {_fmt(r['corpus'])}{_interval(r)}" for _, r in corpus.iterrows()
        )
        parts.append(
            f"Corpus-level `{key}` (a further number the log reports for this metric; the "
            f"table ranks its headline): {shown}\n"
        )
    elif "interval" in sub and sub["interval"].notna().any():
        bounded = sub[sub["interval"].notna()]
        name = bounded["interval"].iloc[0]
        shown = ", ".join(f"{r['model']}{_interval(r)}" for _, r in bounded.iterrows())
        parts.append(f"`{name}` (the log's 95% interval of the mean): {shown}\n")
    pairs = board.pairs[(board.pairs["metric"] == metric) & (board.pairs["group"] == group)]
    if not pairs.empty:
        what = f"{headline_name(metric)} A − B" if corpus_headline else "mean A − B"
        test = "p (paired bootstrap)" if corpus_headline else "p"
        lines = [
            f"| A | B | papers both scored | {what} | {pct} CI | {test} | p (Holm) |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for _, r in pairs.iterrows():
            diff = _fmt(r["difference"])
            if r["significant"]:
                diff = f"**{diff}**"
            lines.append(
                f"| {r['model_a']} | {r['model_b']} | {r['papers']} | {diff} | "
                f"[{_fmt(r[f'{ci}_lower'])}, {_fmt(r[f'{ci}_upper'])}] | {_p(r['p'])}"
                f"{_one_paper(r)} | {_p(r['p_holm'])} |"
            )
        parts.append("Paired comparisons:\n\n" + "\n".join(lines) + "\n")
    return parts, corpus_headline


def _footer(board: Leaderboard, kinds: set[bool], *, pct: str, alpha: float) -> str:
    """How the tables' numbers, intervals and tests are computed."""
    footer = []
    if False in kinds or not kinds:
        footer.append(
            f"Per-item means: mean over papers (an errored or unscored paper is left out and "
            f"counted); SE and Student-t {pct} CI over papers (Wilson's {pct} CI for a "
            f"proportion: decision accuracy, FPR, FNR); paired: A − B on the papers both "
            f"scored, two-sided paired t-test."
        )
    if True in kinds:
        footer.append(
            f"Corpus statistics: computed over the papers scored (an errored or unscored paper is "
            f"left out and counted); {pct} CI: percentile interval over "
            f"{BOOTSTRAP_RESAMPLES:,} bootstrap resamples of the papers (within each outcome "
            f"where the statistic needs both); paired: the statistic of A minus that of B on the "
            f"papers both scored, the same papers resampled for both, two-sided bootstrap p."
        )
    footer.append(
        f"Bold / 'significantly better than': p < {alpha:.2g} (the {pct} CI excludes 0), not "
        "corrected for multiple comparisons (Holm-adjusted p beside it)."
    )
    return " ".join(footer) + (_ONE_PAPER_NOTE if _any_one_paper(board.pairs) else "") + "\n"


def _across_groups(board: Leaderboard) -> list[str]:
    """How the signature groups differ and how consistently they rank the models."""
    parts: list[str] = []
    if not board.differences.empty:
        parts.append("## Signature groups that differ\n")
        lines = [
            "| metric | groups | field | group A | group B |",
            "| --- | --- | --- | --- | --- |",
        ]
        for _, r in board.differences.iterrows():
            lines.append(
                f"| {r['metric_name']} | {r['group_a']} vs {r['group_b']} | {r['field']} | "
                f"`{r['value_a']}` | `{r['value_b']}` |"
            )
        parts.append("\n".join(lines) + "\n")
    if not board.consistency.empty:
        parts.append("## Consistency across signature groups (evaluation LMs)\n")
        lines = [
            "| metric | groups | models in common | Spearman ρ | p |",
            "| --- | --- | --- | --- | --- |",
        ]
        for _, r in board.consistency.iterrows():
            lines.append(
                f"| {r['metric_name']} | {r['group_a']} vs {r['group_b']} | {r['models']} | "
                f"{_fmt(r['spearman_rho'])} | {_p(r['p'])} |"
            )
        parts.append("\n".join(lines) + "\n")
    return parts


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows: NaN as null, numpy scalars as Python numbers."""
    rows = json.loads(frame.to_json(orient="records", force_ascii=False))
    return rows


def write_leaderboard(
    board: Leaderboard,
    out_dir: str | Path,
    *,
    params: Mapping[str, float] | None = None,
    plot: bool = False,
) -> dict[str, Path]:
    """Write leaderboard.md, leaderboard.csv, pairs.csv, groups.csv, consistency.csv and
    leaderboard.json (all of it) to ``out_dir``, and with ``plot`` one PNG per metric and
    signature group (score with its CI per model, against ``params`` when given, the human
    baseline as a band); returns the paths by name (plots as ``plot:<metric>:<group>``)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table = board.table.copy()
    if params is not None:
        table["params_b"] = [params_for(m, params) for m in table["model"]]
    paths = {
        "markdown": out / "leaderboard.md",
        "leaderboard": out / "leaderboard.csv",
        "pairs": out / "pairs.csv",
        "groups": out / "groups.csv",
        "consistency": out / "consistency.csv",
        "json": out / "leaderboard.json",
    }
    paths["markdown"].write_text(leaderboard_markdown(board), encoding="utf-8")
    table.to_csv(paths["leaderboard"], index=False)
    board.pairs.to_csv(paths["pairs"], index=False)
    board.groups.to_csv(paths["groups"], index=False)
    board.consistency.to_csv(paths["consistency"], index=False)
    document = {
        "level": board.level,
        "merged": board.merged,
        "leaderboard": _records(table),
        "pairs": _records(board.pairs),
        "groups": _records(board.groups),
        "differences": _records(board.differences),
        "consistency": _records(board.consistency),
        "notes": board.notes,
    }
    paths["json"].write_text(json.dumps(document, indent=2, ensure_ascii=False), encoding="utf-8")
    if plot:
        from gem_tasks.analysis.leaderboard.plot import plot_leaderboard

        for figure in plot_leaderboard(board, out, params=params):
            paths[f"plot:{figure.metric}:{figure.group}"] = figure.path
    return paths
