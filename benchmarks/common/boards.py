"""What the verdict experiments write beside a leaderboard: the verdicts a row could not read,
and a screenshot of the leaderboard page (headless Chromium, where one is installed)."""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common.resumable import JournalRecord


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
