"""The README's demo command on this machine: where its time goes, and how fast it is against a
baseline commit, with the same numbers to the digit.

- ``profile``: the command once, in this tree, as a new user runs it (fresh score cache and,
  unless ``--warm-models``, a fresh model folder, so the embedded model is de-quantised), with
  timers around its phases (:mod:`benchmarks.speed.demo_phases`): start-up and imports, task
  set-up, model load, the reviews' prefill and decoding, the judgment rewrites, each metric's
  scoring forwards, the batching layer's waits, and what is left (Inspect's own work and the
  scorers' Python). Writes ``profile.json``, ``profile.md`` and the manifest.
- ``compare``: the command in a worktree of ``--baseline-ref`` and in this tree, ``--rounds``
  times each, alternating (a drift of the machine's speed falls on both alike), each with a
  fresh score cache and the machine's warm model folder. Before any time is reported, every
  round's means must equal the values recorded in ``docs/images/demo.md`` to their digits; how
  far each sample's scores moved from the first baseline round's is written beside them
  (``sample_differences.json``: the batching layer merges whatever calls arrive together, so the
  rows a forward holds can differ from run to run). Reports the medians of Inspect's timer and of
  the whole command, and their ratios.

    python -m benchmarks.speed.demo profile --out benchmarks/speed/results/demo_profile_cpu
    python -m benchmarks.speed.demo compare --baseline-ref ec4b072 --rounds 3 \\
        --out benchmarks/speed/results/demo_cpu
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DEMO, REPO
from scorers.lm.embedded import share_machine_models

ARGUMENTS = [
    "eval",
    "gem_tasks/iclr",
    "--model",
    "smollm2/embedded",
    "--max-tokens",
    "256",
    "-T",
    "dataset_summaries=true",
]
COMMAND = "inspect " + " ".join(ARGUMENTS)
RECORDED = REPO / "docs" / "images" / "demo.md"
"""Where the demo's values are recorded (by the docs' picture script): the README's numbers."""


def recorded_means(path: Path = RECORDED) -> dict[str, float]:
    """The means of the README demo's table in ``path`` (``| gem | -11.161 | 3.815 |`` rows after
    the heading "The README's demo command")."""
    text = path.read_text().split("## The README's demo command", 1)[1]
    rows = re.findall(r"^\| (\w+) \| (-?[0-9.]+) \| [0-9.]+ \|$", text, flags=re.MULTILINE)
    if not rows:
        raise ValueError(f"{path}: no table of the demo's means")
    return {name: float(mean) for name, mean in rows}


def _inspect_seconds(log: Any) -> float:
    started = datetime.datetime.fromisoformat(log.stats.started_at)
    completed = datetime.datetime.fromisoformat(log.stats.completed_at)
    return (completed - started).total_seconds()


def run_once(
    tree: Path,
    workdir: Path,
    *,
    warm_models: bool,
    phases: Path | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """The command in ``tree`` (this checkout as installed, another through ``PYTHONPATH``),
    in ``workdir`` with a fresh score cache there; with ``phases``, through the phase timers;
    ``command`` (the program and its arguments, before ``--log-dir``) replaces the README's.
    Returns the whole command's seconds, Inspect's timer, the means, every sample's scores and
    the model's output tokens; a failed run raises with the end of its output."""
    cache = workdir / "cache"
    cache.mkdir(parents=True)
    if warm_models:
        share_machine_models(cache)
    env = dict(os.environ, GEM_TASKS_CACHE_DIR=str(cache), HF_HUB_OFFLINE="1")
    if tree.resolve() != REPO.resolve():
        env["PYTHONPATH"] = str(tree)
    logs = workdir / "logs"
    if command is not None:
        command = [*command, "--log-dir", str(logs)]
    elif phases is None:
        command = [
            str(Path(sys.executable).with_name("inspect")),
            *ARGUMENTS,
            "--log-dir",
            str(logs),
        ]
    else:
        # by its path, so that nothing but the tree's own packages is put on sys.path
        hook = Path(__file__).with_name("demo_phases.py")
        command = [sys.executable, str(hook), str(phases), *ARGUMENTS, "--log-dir", str(logs)]
    output = workdir / "output.txt"
    launched = time.time()
    with output.open("w") as sink:
        status = subprocess.run(
            command, cwd=workdir, env=env, stdout=sink, stderr=subprocess.STDOUT
        ).returncode
    seconds = time.time() - launched
    if status != 0:
        raise RuntimeError(
            f"the demo in {tree} failed (exit {status}); its output ends:\n"
            + output.read_text()[-3000:]
        )
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(next(logs.glob("*.eval"))))
    means = {s.name: s.metrics["mean"].value for s in log.results.scores if "mean" in s.metrics}
    samples = {
        str(sample.id): {name: score.value for name, score in (sample.scores or {}).items()}
        for sample in log.samples
    }
    usage = log.stats.model_usage.get("smollm2/embedded")
    return {
        "launched": launched,
        "seconds": round(seconds, 2),
        "output_tokens": usage.output_tokens if usage else None,
        "inspect_seconds": round(_inspect_seconds(log), 2),
        "inspect_started": log.stats.started_at,
        "means": means,
        "sample_scores": samples,
    }


def provenance_record(provenance: Run) -> dict[str, Any]:
    """What every result of this script says of its run: the command, commit and CPU."""
    machine = provenance.record["machine"]
    return {
        "command": COMMAND,
        "commit": provenance.record["commit"],
        "cpu": machine.get("cpu"),
        "cpus": machine.get("cpus"),
    }


def check_means(means: dict[str, float], recorded: dict[str, float]) -> None:
    """The means to the recorded digits (three decimals) or an error naming the differences."""
    wrong = {
        name: (round(means.get(name, float("nan")), 3), value)
        for name, value in recorded.items()
        if round(means.get(name, float("nan")), 3) != value
    }
    if wrong:
        raise SystemExit(f"the demo's means differ from {RECORDED.name}'s (got, recorded): {wrong}")


# -- profile ------------------------------------------------------------------------------------


def phase_table(run: dict[str, Any], phases: dict[str, Any]) -> dict[str, Any]:
    """Seconds by phase of one profiled run: before Inspect's timer (interpreter start, imports,
    task set-up, of which the timed phases that ran then), inside it (the timed phases' seconds
    that fell inside it, and what they do not cover), after it."""
    from benchmarks.speed.demo_phases import _union, within

    started = datetime.datetime.fromisoformat(run["inspect_started"]).timestamp()
    inside = run["inspect_seconds"]
    ended = started + inside
    spans = phases["spans"]
    before = {k: round(within(v, phases["imported"], started), 2) for k, v in sorted(spans.items())}
    during = {k: round(within(v, started, ended), 2) for k, v in sorted(spans.items())}
    busy = _union([tuple(i) for i in phases["busy_intervals"]], started, ended)
    return {
        "whole command": run["seconds"],
        "interpreter start to the profiler's first line": round(
            phases["started"] - run["launched"], 2
        ),
        "imports (inspect_ai, gem_tasks and what they import)": round(
            phases["imported"] - phases["started"], 2
        ),
        "Inspect's start to its timer (task, dataset, plan, model)": round(
            started - phases["imported"], 2
        ),
        "before the timer": {k: v for k, v in before.items() if v},
        "Inspect's timer": inside,
        "inside the timer": {k: v for k, v in during.items() if v},
        "inside the timer, not in the model (Inspect, the scorers' Python, waits)": round(
            inside - busy, 2
        ),
        "after the timer (log written, exit)": round(run["launched"] + run["seconds"] - ended, 2),
        "counts": {k: round(v, 1) for k, v in sorted(phases["counts"].items())},
    }


def profile_markdown(table: dict[str, Any], run: dict[str, Any], record: dict[str, Any]) -> str:
    lines = [
        "# Where the demo's time goes",
        "",
        f"`{COMMAND}`, fresh score cache{' (warm model folder)' if record['warm_models'] else ''}, "
        f"at commit {str(record['commit'])[:7]} on {record['cpu']} ({record['cpus']} CPUs). "
        "Seconds; the timed phases inside Inspect's timer can overlap each other (two cores), "
        "a backend call's time is split among the callers whose items it held.",
        "",
        "| phase | seconds |",
        "| --- | --- |",
    ]
    for name, value in table.items():
        if name in ("before the timer", "inside the timer", "counts"):
            continue
        lines.append(f"| {name} | {value} |")
        nested = {
            "Inspect's start to its timer (task, dataset, plan, model)": "before the timer",
            "Inspect's timer": "inside the timer",
        }.get(name)
        for phase, seconds in table.get(nested, {}).items() if nested else ():
            lines.append(f"| &nbsp;&nbsp;{phase} | {seconds} |")
    lines += ["", "Means: " + ", ".join(f"{k} {v:.3f}" for k, v in run["means"].items()), ""]
    return "\n".join(lines)


def profile(args: argparse.Namespace) -> None:
    provenance = Run(args.out, data=[DEMO], settings=vars(args))
    with tempfile.TemporaryDirectory(prefix="gem-demo-profile-") as tmp:
        phases_path = Path(tmp) / "phases.json"
        run = run_once(REPO, Path(tmp) / "run", warm_models=args.warm_models, phases=phases_path)
        phases = json.loads(phases_path.read_text())
    check_means(run["means"], recorded_means())
    table = phase_table(run, phases)
    record = {**provenance_record(provenance), "warm_models": args.warm_models}
    result = {**record, "phases": table, "means": run["means"], "raw": phases}
    (args.out / "profile.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "profile.md").write_text(profile_markdown(table, run, record))
    provenance.finish()
    print(json.dumps(table, indent=1))


# -- compare ------------------------------------------------------------------------------------


def compare(args: argparse.Namespace) -> None:
    provenance = Run(args.out, data=[DEMO], settings=vars(args))
    recorded = recorded_means()
    runs: dict[str, list[dict[str, Any]]] = {"baseline": [], "tree": []}
    with tempfile.TemporaryDirectory(prefix="gem-demo-compare-") as tmp:
        root = Path(tmp)
        baseline_tree = root / "baseline-tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(baseline_tree), args.baseline_ref],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        try:
            for round_ in range(args.rounds):
                order = ("baseline", "tree") if round_ % 2 == 0 else ("tree", "baseline")
                for side in order:
                    tree = baseline_tree if side == "baseline" else REPO
                    run = run_once(tree, root / f"{side}-{round_}", warm_models=True)
                    runs[side].append(run)
                    print(side, round_, run["inspect_seconds"], run["seconds"], flush=True)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(baseline_tree)],
                cwd=REPO,
                check=False,
                capture_output=True,
            )
    first = runs["baseline"][0]["sample_scores"]
    differences = {
        f"{side} {number}": sample_differences(first, run["sample_scores"])
        for side, side_runs in runs.items()
        for number, run in enumerate(side_runs)
    }
    (args.out / "sample_differences.json").write_text(json.dumps(differences, indent=1) + "\n")
    for side_runs in runs.values():
        for run in side_runs:
            check_means(run["means"], recorded)
    largest = max((d for found in differences.values() for d in found.values()), default=0.0)

    def medians(side: str) -> dict[str, float]:
        return {
            key: round(statistics.median(r[key] for r in runs[side]), 2)
            for key in ("inspect_seconds", "seconds")
        }

    base, ours = medians("baseline"), medians("tree")
    result = {
        **provenance_record(provenance),
        "baseline_ref": args.baseline_ref,
        "rounds": args.rounds,
        "baseline": {**base, "runs": [_times(r) for r in runs["baseline"]]},
        "tree": {**ours, "runs": [_times(r) for r in runs["tree"]]},
        "ratio_inspect": round(base["inspect_seconds"] / ours["inspect_seconds"], 3),
        "ratio_whole": round(base["seconds"] / ours["seconds"], 3),
        "means": runs["tree"][0]["means"],
        "means_equal_recorded": True,
        "largest_sample_difference": largest,
        "samples_differing": sum(len(found) for found in differences.values()),
    }
    (args.out / "demo.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "demo.md").write_text(
        "# The demo against a baseline\n\n"
        f"`{COMMAND}`, {args.rounds} rounds each, alternating, fresh score cache, warm model "
        f"folder; baseline {args.baseline_ref}, tree {str(result['commit'])[:7]}, on "
        f"{result['cpu']} ({result['cpus']} CPUs). Every round's means equal the recorded "
        f"demo values to their three decimals; the largest difference of a sample's score from "
        f"the first baseline round's is {largest:.3g} "
        f"([sample_differences.json](sample_differences.json)).\n\n"
        "| | baseline | tree | ratio |\n| --- | --- | --- | --- |\n"
        f"| Inspect's timer (median s) | {base['inspect_seconds']} | {ours['inspect_seconds']} "
        f"| {result['ratio_inspect']} |\n"
        f"| whole command (median s) | {base['seconds']} | {ours['seconds']} "
        f"| {result['ratio_whole']} |\n"
    )
    provenance.finish()
    print(json.dumps(result, indent=1))


def sample_differences(
    first: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]
) -> dict[str, float]:
    """``"<sample> <metric>"`` -> |difference| of every numeric score that is not identical in
    ``other`` (a score missing on one side, or not a number, counts as infinitely far)."""
    found: dict[str, float] = {}
    for sample in sorted(set(first) | set(other)):
        a, b = first.get(sample, {}), other.get(sample, {})
        for metric in sorted(set(a) | set(b)):
            x, y = a.get(metric), b.get(metric)
            if x == y:
                continue
            numeric = all(isinstance(v, int | float) for v in (x, y))
            found[f"{sample} {metric}"] = abs(float(x) - float(y)) if numeric else float("inf")
    return found


def _times(run: dict[str, Any]) -> dict[str, float]:
    return {"inspect_seconds": run["inspect_seconds"], "seconds": run["seconds"]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="what", required=True)
    one = commands.add_parser("profile", help="where one run's time goes")
    one.add_argument("--out", type=Path, required=True)
    one.add_argument("--warm-models", action="store_true", help="reuse the machine's model folder")
    two = commands.add_parser("compare", help="a baseline commit against this tree")
    two.add_argument("--baseline-ref", required=True)
    two.add_argument("--rounds", type=int, default=3)
    two.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if getattr(args, "rounds", 1) < 1:
        parser.error("--rounds must be at least 1")
    profile(args) if args.what == "profile" else compare(args)


if __name__ == "__main__":
    main()
