"""Checks that a change leaves every score as it was: the same eval run in a worktree of a base
commit and in this checkout, then every score of the two logs compared bit for bit (value,
answer, explanation, metadata).

    python scripts/same_scores.py --base HEAD~1
    python scripts/same_scores.py --base main --scorers gem,gem_s,bleu --limit 3
    python scripts/same_scores.py --base main --scorers decision_auc --dataset papers.jsonl

Each side runs ``inspect eval <task> --model none -T candidate=human --max-samples 1`` (one
sample at a time, so no batch differs) with the side's own packages first on the path and a
score cache of its own (nothing one side computed is read by the other), offline. The scorers
are, by default, every registered metric the embedded evaluation LM can serve on the task's demo
papers with no other model (those needing a judge panel, a qualification or data the demo lacks
are named and left out). Exit 0 when every score is identical, 1 when one differs or a side's
run failed (each difference printed), 2 on a bad argument; stopped by SIGTERM (or Ctrl-C), it
removes the base's worktree before it exits.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def default_scorers(task: str) -> tuple[list[str], dict[str, str]]:
    """The metrics this checkout's plan serves on ``task``'s demo papers with the embedded
    model alone, and those left out with why."""
    os.environ["HF_HUB_OFFLINE"] = "1"  # as the runs are: a model not on this machine is refused
    sys.path.insert(0, str(ROOT))
    from gem_tasks.tasks.samples import DEMO_DATASET
    from scorers.data.records import load_records
    from scorers.errors import GemTasksError
    from scorers.plan import ScoringPlan
    from scorers.registry import list_metrics

    if task != "gem_tasks/iclr":
        raise SystemExit(f"--scorers is needed for {task} (the default is the iclr demo's)")
    records = load_records(DEMO_DATASET)
    served, left_out = [], {}
    for name in [spec.name for spec in list_metrics()]:
        try:
            plan = ScoringPlan.build(name)
            plan.check()  # what the options name (a panel's qualification, a model) exists
            plan.refuse_unservable(records, where="the demo papers")
        except (GemTasksError, ValueError) as refused:
            left_out[name] = str(refused).splitlines()[0]
            continue
        served.append(name)
    return served, left_out


def run_side(
    tree: Path, task: str, scorers: list[str], limit: int, work: Path, dataset: Path | None
) -> Path:
    """The eval in ``tree`` (its packages first on the path), into ``work``: the log's path."""
    logs, cache = work / "logs", work / "cache"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")]),
        "GEM_TASKS_CACHE_DIR": str(cache),
        "HF_HUB_OFFLINE": "1",
    }
    command = [
        sys.executable, "-m", "inspect_ai", "eval", task, "--model", "none",
        "-T", "candidate=human", "-T", f"scorers={','.join(scorers)}",
        "--max-samples", "1", "--limit", str(limit),
        "--log-dir", str(logs), "--log-format", "json", "--display", "none",
        *(["-T", f"dataset={dataset}"] if dataset is not None else []),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True)
    found = sorted(logs.glob("*.json"))
    if done.returncode != 0 or len(found) != 1:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise SystemExit(f"{tree}: the eval failed (exit {done.returncode}):\n{tail}")
    return found[0]


def scores_of(log: Path) -> dict[tuple[str, int, str], dict[str, Any]]:
    """(sample id, epoch, scorer) -> the score's value, answer, explanation and metadata."""
    data = json.loads(log.read_text())
    if data.get("status") != "success":
        raise SystemExit(f"{log}: status {data.get('status')}: {data.get('error')}")
    out = {}
    for sample in data.get("samples") or []:
        for name, score in (sample.get("scores") or {}).items():
            key = (str(sample["id"]), int(sample.get("epoch", 1)), name)
            out[key] = {k: score.get(k) for k in ("value", "answer", "explanation", "metadata")}
    return out


def differences(base: dict, tree: dict) -> list[str]:
    """One line per score that is not identical on both sides (or is on one side only)."""
    lines = []
    for key in sorted(set(base) | set(tree)):
        where = f"sample {key[0]} epoch {key[1]} {key[2]}"
        if key not in base or key not in tree:
            lines.append(f"{where}: only in the {'tree' if key not in base else 'base'}'s log")
            continue
        a, b = base[key], tree[key]
        for field in ("value", "answer", "explanation", "metadata"):
            if json.dumps(a[field], sort_keys=True) != json.dumps(b[field], sort_keys=True):
                lines.append(f"{where}: {field} differs: {a[field]!r:.120} -> {b[field]!r:.120}")
    return lines


def _stopped(signum: int, frame: object) -> None:
    """SIGTERM as an exception, so that the running side is killed and the worktree removed."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _stopped)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", required=True, help="the commit to compare with (any git rev)")
    parser.add_argument("--task", default="gem_tasks/iclr")
    parser.add_argument("--scorers", help="comma-separated metrics (default: see above)")
    parser.add_argument("--limit", type=int, default=10, help="samples (default: the demo's 10)")
    parser.add_argument(
        "--dataset", type=Path, help="the task's dataset (default: its demo; needs --scorers)"
    )
    args = parser.parse_args(argv)
    if args.limit < 1:
        parser.error("--limit counts samples: 1 or more")
    rev = subprocess.run(
        ["git", "rev-parse", "--verify", f"{args.base}^{{commit}}"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    if rev.returncode != 0:
        parser.error(f"--base {args.base!r} is not a commit of this repository")
    if args.dataset is not None and not args.scorers:
        parser.error("--dataset needs --scorers (the default scorers are the demo's)")
    if args.dataset is not None and not args.dataset.exists():
        parser.error(f"--dataset {args.dataset}: no such file")
    dataset = args.dataset.resolve() if args.dataset is not None else None
    if args.scorers:
        scorers = [s.strip() for s in args.scorers.split(",") if s.strip()]
    else:
        scorers, left_out = default_scorers(args.task)
        for name, why in left_out.items():
            print(f"left out: {name}: {why}")
    print(f"base {rev.stdout.strip()[:12]}; {len(scorers)} scorers: {','.join(scorers)}")
    with tempfile.TemporaryDirectory(prefix="same-scores-") as scratch:
        work = Path(scratch)
        base_tree = work / "base-tree"
        try:
            subprocess.run(
                ["git", "worktree", "add", "--detach", "--quiet", str(base_tree),
                 rev.stdout.strip()],
                cwd=ROOT, check=True,
            )  # fmt: skip
            sides = {"base": base_tree, "tree": ROOT}
            base, tree = (
                scores_of(run_side(at, args.task, scorers, args.limit, work / side, dataset))
                for side, at in sides.items()
            )
        finally:
            # twice forced: a worktree stopped while it was being added is still locked
            subprocess.run(
                ["git", "worktree", "remove", "--force", "--force", str(base_tree)],
                cwd=ROOT, check=False, capture_output=True,
            )  # fmt: skip
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=False)
    found = differences(base, tree)
    for line in found:
        print(line)
    unscored = sum(1 for s in tree.values() if (s["metadata"] or {}).get("unscored_reason"))
    if found:
        print(f"{len(found)} difference(s) over {len(tree)} scores")
        return 1
    print(f"{len(tree)} scores identical ({unscored} of them unscored, with the same reasons)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
