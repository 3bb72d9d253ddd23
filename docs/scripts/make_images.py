"""The documentation's pictures, made from real runs: the demo's leaderboard plot and a screenshot
of a demo log in ``inspect view``, taken in headless Chromium.

Three rows on the bundled demo papers, all scored by the embedded SmolLM2-135M with the same
signature (every review rewritten by it, no stored summaries), so that they rank together: the
held-out human review (``-T candidate=human``), the embedded model's own review (256 new tokens),
and the same model cut to 32 new tokens (a review that says less). Writes into ``docs/images/``
(or ``--out``): ``leaderboard_gem.png``, ``inspect_view.png``, ``demo.md`` (the rows' means, from
the leaderboard, and the README's demo command run as it is, with its means and time) and
``manifest.json`` (commit, command, machine, versions, every file's hash).

Usage, from the repository root (Chromium from Debian: ``apt-get install chromium``)::

    python -m docs.scripts.make_images --chromium /usr/bin/chromium
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DEMO, REPO

README_DEMO = ["--model", "smollm2/embedded", "--max-tokens", "256", "-T", "dataset_summaries=true"]
"""The README's demo command (after ``inspect eval gem_tasks/iclr``), run exactly as printed."""
ROWS = (
    ("human", ["--model", "none", "-T", "candidate=human"]),
    ("smollm2", ["--model", "smollm2/embedded", "--max-tokens", "256"]),
    ("smollm2_short", ["--model", "smollm2/embedded", "--max-tokens", "32"]),
)


def run(command: list[str], **kwargs) -> None:
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, check=True, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def demo_summary(logs: Path) -> str:
    """The README demo's means, standard errors and time, read from its log."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    (info,) = list_eval_logs(str(logs))
    log = read_eval_log(info, header_only=True)
    lines = [
        "## The README's demo command",
        "",
        "`inspect eval gem_tasks/iclr " + " ".join(README_DEMO) + "`, fresh score cache:",
        "",
        "| metric | mean | stderr |",
        "| --- | --- | --- |",
    ]
    for score in log.results.scores:
        metrics = score.metrics
        lines.append(
            f"| {score.name} | {metrics['mean'].value:.3f} | {metrics['stderr'].value:.3f} |"
        )
    started = log.stats.started_at
    completed = log.stats.completed_at
    lines += ["", f"Started {started}, completed {completed} (Inspect's times)."]
    return "\n".join(lines) + "\n"


def screenshot(logs: Path, out: Path, chromium: str) -> None:
    """Open the first log of ``logs`` in ``inspect view`` and photograph its first sample."""
    from playwright.sync_api import sync_playwright

    port = free_port()
    server = subprocess.Popen(
        ["inspect", "view", "--log-dir", str(logs), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        else:
            raise RuntimeError(f"inspect view did not listen on port {port} within 60 s")
        with sync_playwright() as play:
            browser = play.chromium.launch(executable_path=chromium, headless=True)
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/", wait_until="networkidle")
            page.get_by_text("smollm2/embedded").first.click()
            page.wait_for_load_state("networkidle")
            page.get_by_text("Samples").first.click()
            page.wait_for_timeout(1500)
            page.screenshot(path=str(out))
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = parser.parse_args(argv)
    provenance = Run(args.out, data=[DEMO], settings=vars(args))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        logs = work / "logs"
        for name, options in ROWS:
            run(
                ["inspect", "eval", "gem_tasks/iclr", *options, "--log-dir", str(logs / name)]
                + ["--display", "plain", "-T", "scorers=gem,gem_s"],
                env={**os.environ, "GEM_TASKS_CACHE_DIR": str(work / "cache")},
            )
        run(
            ["inspect", "eval", "gem_tasks/iclr", *README_DEMO, "--log-dir", str(work / "demo")]
            + ["--display", "plain"],
            env={**os.environ, "GEM_TASKS_CACHE_DIR": str(work / "demo_cache")},
        )
        board = work / "board"
        run(["gem-tasks", "leaderboard", str(logs), "--out", str(board), "--plot", "--quiet"])
        plots = sorted(board.glob("leaderboard_gem_[0-9]*.png"))
        if len(plots) != 1:
            raise SystemExit(f"expected one GEM plot (one signature group), found {plots}")
        shutil.copy(plots[0], args.out / "leaderboard_gem.png")
        table = (board / "leaderboard.md").read_text()
        (args.out / "demo.md").write_text(
            "# The demo's rows\n\n"
            "Written by `python -m docs.scripts.make_images` (see `manifest.json`): the bundled "
            "demo papers, every row scored by the embedded SmolLM2-135M with the same "
            "signature.\n\n" + table + "\n" + demo_summary(work / "demo")
        )
        screenshot(logs / "smollm2", args.out / "inspect_view.png", args.chromium)
    provenance.finish()
    print(f"written: {sorted(p.name for p in args.out.iterdir())}", file=sys.stderr)


if __name__ == "__main__":
    main()
