"""The verdict experiments' boards: rows that need no model, the leaderboard of every row with
its page and a screenshot (headless Chromium, where one is installed), and what is written
beside it (the verdicts a row could not read, each row's time)."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common.resumable import JournalRecord


def rule_row(task: Any, logs: Path, *, name: str) -> tuple[float, dict[str, Any]]:
    """Run ``task``, a row that needs no model (a decision rule, the stored human review), into
    ``logs``: its seconds and its unread verdicts (:func:`unread_verdicts`). Such rows are
    deterministic and quick, so every invocation reruns them.

    Raises:
        SystemExit: the row did not finish (``name`` and the log's error).
    """
    from inspect_ai import eval as inspect_eval

    started = time.perf_counter()
    [log] = inspect_eval(task, model="none", log_dir=str(logs), display="plain")
    if log.status != "success":
        raise SystemExit(f"{name} failed: {log.error}")
    return round(time.perf_counter() - started, 1), unread_verdicts(log)


def write_board(
    folder: Path,
    sources: Sequence[Path],
    *,
    timings: dict[str, float],
    verdicts: dict[str, dict[str, Any]],
    journal: JournalRecord,
) -> None:
    """The leaderboard of the rows logged in ``sources`` into ``folder / "leaderboard"``
    (Markdown, CSV, JSON, plots, the HTML page and its screenshot), and ``timings.json`` and
    ``verdicts.md`` (:func:`verdicts_table`) into ``folder``."""
    from gem_tasks.analysis.leaderboard.compare import compare_logs
    from gem_tasks.analysis.leaderboard.html import write_leaderboard_html
    from gem_tasks.analysis.leaderboard.render import write_leaderboard

    board = compare_logs(list(sources), progress=False)
    board_folder = folder / "leaderboard"
    paths = write_leaderboard(board, board_folder, plot=True)
    plots = {tuple(k.split(":", 2)[1:]): p for k, p in paths.items() if k.startswith("plot:")}
    page = write_leaderboard_html(board, board_folder / "leaderboard.html", plots)
    screenshot(page, board_folder / "leaderboard.png")
    (folder / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    (folder / "verdicts.md").write_text(verdicts_table(verdicts, journal))


def unread_verdicts(log: Any) -> dict[str, Any]:
    """How many samples' verdicts lacked a part, and why (grouped)."""
    why: Counter[str] = Counter()
    for sample in log.samples or []:
        score = (sample.scores or {}).get("decision_accuracy")
        missing = (score.metadata or {}).get("verdict_missing") if score else None
        if missing:
            why[missing.split(":")[0]] += 1
    return {"samples": len(log.samples or []), "missing": sum(why.values()), "why": dict(why)}


def screenshot(page: Path, out: Path) -> Path | None:
    """The top of ``page`` (1200 x 900 pixels) rendered by headless Chromium, or None (with a
    message) when no Chromium is installed."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        print(f"no chromium: {out} not written", file=sys.stderr)
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            view = browser.new_page(viewport={"width": 1200, "height": 900})
            view.goto(page.resolve().as_uri())
            view.screenshot(path=str(out))
        finally:
            browser.close()
    return out


def verdicts_table(verdicts: dict[str, dict[str, Any]], journal: JournalRecord) -> str:
    """``verdicts.md``: per row, its samples, the verdicts missing a part and why, and the rows
    that ran over several invocations."""
    lines = [
        "# Verdicts that could not be read",
        "",
        "Per row: samples, verdicts missing a part (no rating or no decision), and why.",
        "",
        "| row | samples | missing | why |",
        "| --- | --- | --- | --- |",
    ]
    for row, found in verdicts.items():
        why = "; ".join(f"{n}x {w}" for w, n in found["why"].items()) or "–"
        lines.append(f"| {row} | {found['samples']} | {found['missing']} | {why} |")
    for row in verdicts:
        if (count := journal.invocations(row)) > 1:
            lines += ["", f"{row} ran over {count} invocations (`invocations.json`)."]
    return "\n".join(lines) + "\n"
