"""The leaderboard as one self-contained HTML page: per metric and signature group a
table that sorts by any column when its header is clicked, each row's mean with its interval (and
the corpus number with its interval where the metric has one), the human and baseline rows
marked, the groups' captions, and the plots embedded as data URIs. No server and no network: the
page's style and script are inline and it fetches nothing.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gem_tasks.analysis.leaderboard.logs import (
    BASELINE_PREFIX,
    headline_kind,
    headline_name,
    metric_name,
)
from gem_tasks.analysis.leaderboard.render import group_caption, table_kind_line
from gem_tasks.analysis.leaderboard.types import Leaderboard
from scorers.registry import CORPUS_STATISTIC

__all__ = ["leaderboard_html", "write_leaderboard_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
p.caption { color: #555; font-size: 0.9rem; margin: 0.2rem 0 0.6rem; }
p.kind { font-size: 0.9rem; margin: 0 0 0.6rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.9rem; }
th, td { border-bottom: 1px solid #ddd; padding: 0.3rem 0.5rem; text-align: right; }
th { cursor: pointer; background: #f4f4f4; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
td.model, th.model { text-align: left; }
tr.human td { background: #eef6ff; } tr.baseline td { background: #f6f6f6; color: #555; }
span.badge { font-size: 0.75rem; border: 1px solid #888; border-radius: 0.6rem;
  padding: 0 0.4rem; margin-left: 0.4rem; }
img.plot { max-width: 100%; margin-top: 0.6rem; }
ul.notes { font-size: 0.85rem; color: #555; }
"""

_SCRIPT = """
document.querySelectorAll("table.board").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (header, column) {
    header.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
        var nx = parseFloat(x), ny = parseFloat(y);
        var order = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
        if (isNaN(nx) && !isNaN(ny)) { order = 1; }
        else if (!isNaN(nx) && isNaN(ny)) { order = -1; }
        return ascending ? order : -order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});
"""


def _number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "n/a"
    return f"{float(value):.{digits}f}"


def _cell(text: str, value: Any = None, css: str = "") -> str:
    sort = "" if value is None or (isinstance(value, float) and math.isnan(value)) else value
    cls = f' class="{css}"' if css else ""
    return f'<td{cls} data-value="{html.escape(str(sort))}">{text}</td>'


def _kind(model: str, is_human: bool) -> str:
    if is_human:
        return "human"
    return "baseline" if model.startswith(BASELINE_PREFIX) else ""


def _kind_line(metric: str, level: float) -> str:
    return table_kind_line(metric, f"{round(level * 100)}%").replace("*", "").replace("`", "")


def _caption(board: Leaderboard, metric: str, group: str) -> str:
    return group_caption(board, metric, group).replace("`", "")


def _table(board: Leaderboard, sub: pd.DataFrame) -> str:
    ci = f"ci{round(board.level * 100)}"
    pct = f"{round(board.level * 100)}%"
    has_corpus = "corpus" in sub and sub["corpus"].notna().any()
    has_interval = "interval" in sub and sub["interval"].notna().any()
    metric = str(sub["metric"].iloc[0])
    corpus_headline = headline_kind(metric) == CORPUS_STATISTIC
    headers = ["rank", "model", "papers scored", "unscored", headline_name(metric)]
    headers.append(f"{pct} CI (bootstrap)" if corpus_headline else f"{pct} CI")
    if corpus_headline:
        headers.append("per-item mean (diagnostic)")
    if has_corpus:
        headers.append(str(sub["corpus_key"].dropna().iloc[0]))
    if has_interval:
        headers.append(str(sub["interval"].dropna().iloc[0]).replace("_ci95", " 95% interval"))
    headers.append("significantly better than")
    head = "".join(
        f'<th class="model" scope="col">{html.escape(h)}</th>'
        if h == "model"
        else f'<th scope="col">{html.escape(h)}</th>'
        for h in headers
    )
    rows = []
    for _, r in sub.iterrows():
        model = str(r["model"])
        kind = _kind(model, bool(r["is_human"]))
        badge = f'<span class="badge">{kind}</span>' if kind else ""
        rank = None if pd.isna(r["rank"]) else int(r["rank"])
        cells = [
            _cell("n/a" if rank is None else str(rank), rank),
            _cell(html.escape(model) + badge, model, "model"),
            _cell(str(int(r["scored"])), int(r["scored"])),
            _cell(str(int(r["unscored"])), int(r["unscored"])),
            _cell(_number(r["value"]), r["value"]),
            _cell(f"[{_number(r[f'{ci}_lower'])}, {_number(r[f'{ci}_upper'])}]", r[f"{ci}_lower"]),
        ]
        if corpus_headline:
            cells.append(_cell(_number(r["mean"]), r["mean"]))
        if has_corpus:
            cells.append(_cell(_number(r["corpus"]), r["corpus"]))
        if has_interval:
            low, high = r.get("interval_lower"), r.get("interval_upper")
            shown = "–" if pd.isna(low) else f"[{_number(low)}, {_number(high)}]"
            cells.append(_cell(shown, None if pd.isna(low) else low))
        cells.append(_cell(html.escape(str(r["better_than"] or "—"))))
        css = f' class="{kind}"' if kind else ""
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    return (
        f'<table class="board"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def leaderboard_html(
    board: Leaderboard, plots: Mapping[tuple[str, str], Path] | None = None
) -> str:
    """The page: a section per metric and signature group (its caption, its sortable table, its
    plot when ``plots`` has one for ``(metric, group)``), then the notes."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>GRE-bench leaderboard</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<h1>GRE-bench leaderboard</h1>",
        '<p class="caption">Click a column\'s header to sort by it. Rows marked human or '
        "baseline are reference points, not models. Each table says which kind of number it "
        "ranks: a per-item mean (mean over papers, Student-t interval, paired t-tests) or a "
        "corpus statistic (an AUC, a balanced accuracy, a pooled KL: computed over the papers "
        "scored, bootstrap interval, paired bootstrap).</p>",
    ]
    for (metric, group), sub in board.table.groupby(["metric", "group"], sort=False):
        anchor = html.escape(f"{metric}-{group}")
        parts.append(
            f'<section id="{anchor}"><h2>{html.escape(metric_name(metric))}</h2>'
            f'<p class="caption">{html.escape(_caption(board, metric, group))}</p>'
            f'<p class="kind">{html.escape(_kind_line(metric, board.level))}</p>'
        )
        parts.append(_table(board, sub))
        plot = (plots or {}).get((metric, group))
        if plot is not None:
            data = base64.b64encode(Path(plot).read_bytes()).decode("ascii")
            parts.append(
                f'<img class="plot" alt="{html.escape(metric_name(metric))} by model" '
                f'src="data:image/png;base64,{data}">'
            )
        parts.append("</section>")
    if board.notes:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in board.notes)
        parts.append(f'<h2>Notes</h2><ul class="notes">{notes}</ul>')
    parts.append(f"<script>{_SCRIPT}</script></body></html>")
    return "\n".join(parts)


def write_leaderboard_html(
    board: Leaderboard, path: str | Path, plots: Mapping[tuple[str, str], Path] | None = None
) -> Path:
    """Write :func:`leaderboard_html` to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(leaderboard_html(board, plots), encoding="utf-8")
    return path
