"""The HTML leaderboard: one self-contained page, rendered in headless Chromium
(Debian's, driven by playwright) and checked by what it shows: a table per metric, the human and
baseline rows marked, sorting by a clicked column, the plot drawn from its data URI, and no
request leaving the page."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import decided_papers, write_jsonl
from gem_tasks.cli import main as cli_main


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("GEM_TASKS_REQUIRE_CHROMIUM"):
            pytest.fail("no chromium: scripts/test.sh installs Debian's (apt-get install chromium)")
        pytest.skip("no chromium here (the full test command installs it)")
    return found


def _logs(tmp_path: Path) -> Path:
    """Real logs of the iclr task on records with decisions: the human row, two baselines."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.iclr import iclr

    records = write_jsonl(tmp_path / "records.jsonl", decided_papers(8))
    logs = tmp_path / "logs"
    for candidate in ("human", "baseline:committee", "baseline:always_reject"):
        inspect_eval(
            iclr(dataset=str(records), candidate=candidate, scorers="decision_accuracy"),
            model="none",
            log_dir=str(logs),
            display="none",
        )
    return logs


@pytest.mark.slow
def test_the_html_page_renders_sorts_and_fetches_nothing(tmp_path, capsys):
    from playwright.sync_api import sync_playwright

    executable = _chromium()
    out = tmp_path / "board"
    status = cli_main(["leaderboard", str(_logs(tmp_path)), "--out", str(out), "--html", "--plot"])
    assert status == 0, capsys.readouterr().err
    page_file = out / "leaderboard.html"
    text = page_file.read_text()
    assert "http://" not in text and "https://" not in text and "<link" not in text
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            requests: list[str] = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(page_file.as_uri())
            assert page.title() == "GRE-bench leaderboard"
            assert page.locator("h2").first.inner_text() == "Decision accuracy"
            table = page.locator("table.board").first
            models = table.locator("tbody td.model")
            assert models.count() == 3
            # ranked: the committee (right on every paper) first, always-reject (half) last
            first = models.nth(0).inner_text()
            assert first.startswith("baseline:committee") and first.endswith("baseline")
            assert table.locator("tr.human").count() == 1
            assert table.locator("tr.baseline").count() == 2
            assert "human" in table.locator("tr.human .badge").inner_text()
            # a proportion's interval is Wilson's, inside [0, 1]: the committee is right on all 8
            # papers, [0.747, 1.000] at 90% (by hand: Wilson's lower bound of 8/8 at z = 1.645)
            assert "Wilson" in page.locator("p.kind").first.inner_text()
            assert "[0.747, 1.000]" in table.locator("tbody tr").first.inner_text()
            header = table.locator("th", has_text="mean")
            header.click()  # ascending: the lowest mean first
            assert models.nth(0).inner_text().startswith("baseline:always_reject")
            assert header.get_attribute("aria-sort") == "ascending"
            header.click()
            assert models.nth(0).inner_text().startswith("baseline:committee")
            image = page.locator("img.plot").first
            assert image.evaluate("img => img.complete && img.naturalWidth > 0")
            assert all(u.startswith(("file:", "data:")) for u in requests), requests
        finally:
            browser.close()


def test_html_needs_an_output_folder(tmp_path, capsys):
    assert cli_main(["leaderboard", str(tmp_path), "--html"]) == 2
    assert "--html writes leaderboard.html" in capsys.readouterr().err
