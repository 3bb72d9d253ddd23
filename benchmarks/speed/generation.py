"""Generation speed of the embedded model on CPU: our decoding loop against transformers'
``generate`` (the implementation it replaced), in one process, then the whole demo against a
baseline commit.

1. **Batches** (``--rewrite-batches 1,4,10,32``, ``--review-batches 1,10``): generated
   tokens/s for each batch size on two workloads built from the bundled demo: ``review`` (the
   App. C.3 review prompts, about 1,000 tokens each, up to 256 new tokens; batches above 10
   cycle the ten papers) and ``rewrite``
   (the App. C.1 judgment rewrite of the demo's 30 human reviews, with its prefilled reply and
   repetition penalty). Before any speed is reported, the greedy replies of both paths are
   compared token by token; every difference is listed with the first differing position.
   Each path runs the same rows; the order of the paths alternates between batch sizes so
   that a drift in the machine's speed falls on all alike. Where vLLM is importable (the CPU
   build here) our in-process vLLM engine is a third path on the same token-id prompts (every
   row in flight at once, float32), its replies compared with ours (``--no-vllm`` skips it).
2. **Demo** (``--demo``): the README's demo command, timed end to end (wall clock, fresh score
   cache, warm model folder) in a worktree of ``--baseline-ref`` and in this tree, one after the
   other; the scores of both logs are compared.

    python -m benchmarks.speed.generation --demo --out generation_cpu.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

from benchmarks.common.machine import describe_machine
from benchmarks.common.manifest import Run
from benchmarks.common.paths import DEMO, REPO
from benchmarks.common.vllm_engine import embedded_vllm_engine
from scorers.data.records import load_records
from scorers.lm import load_evaluation_lm
from scorers.lm.base import GenerationSettings
from scorers.lm.chat import generation_prompts
from scorers.text.judgments import PREPROCESS_SETTINGS, preprocess_messages

HERE = Path(__file__).resolve().parent
DEMO_COMMAND = [
    "inspect",
    "eval",
    "gem_tasks/iclr",
    "--model",
    "smollm2/embedded",
    "--max-tokens",
    "256",
    "-T",
    "dataset_summaries=true",
]
REVIEW_SETTINGS = GenerationSettings(max_new_tokens=256, temperature=0.0)


def review_conversations() -> list[list[dict[str, str]]]:
    """The demo's App. C.3 review prompts, as the iclr task sends them."""
    from gem_tasks.tasks.samples import DEMO_DATASET, paper_samples
    from scorers.data.task_data import TaskData

    conversations = []
    samples = paper_samples(
        TaskData.load(DEMO_DATASET), references=2, seed=0, max_paper_tokens=12000
    )
    for sample in samples:
        conversations.append([{"role": m.role, "content": m.text} for m in sample.input])
    return conversations


def rewrite_conversations() -> list[list[dict[str, str]]]:
    """The App. C.1 judgment rewrite of every human review of the demo."""
    records = load_records(DEMO)
    return [preprocess_messages(review.text) for record in records for review in record.reviews]


def time_path(run: Any, prompts: list[list[int]], settings: GenerationSettings) -> dict[str, Any]:
    start = time.perf_counter()
    replies = run(prompts, settings)
    seconds = time.perf_counter() - start
    generated = sum(len(r) for r in replies)
    return {
        "seconds": round(seconds, 2),
        "generated_tokens": generated,
        "tokens_per_s": round(generated / seconds, 2),
        "replies": replies,
    }


def compare(reference: list[list[int]], ours: list[list[int]]) -> list[dict[str, Any]]:
    """Every row whose replies differ, with the first differing position."""
    differences = []
    for row, (a, b) in enumerate(zip(reference, ours, strict=True)):
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            differences.append({"row": row, "first_difference": first, "lengths": [len(a), len(b)]})
    return differences


def transformers_baseline(lm: Any) -> Any:
    """The generation path this project used before ``scorers.lm.hf.decoding``: transformers'
    ``generate`` on a left-padded batch, with transformers' own ``sdpa`` attention."""

    def run(prompts: list[list[int]], settings: GenerationSettings) -> list[list[int]]:
        attention = lm.model.config._attn_implementation
        lm.model.set_attn_implementation("sdpa")
        try:
            return lm._generate_with_transformers(prompts, settings)
        finally:
            lm.model.set_attn_implementation(attention)

    return run


def run_batches(batch_sizes: dict[str, list[int]], *, engine: Any = None) -> list[dict[str, Any]]:
    """Each workload's batches through transformers' ``generate`` and our loop, and through
    ``engine`` (a :class:`~scorers.lm.vllm.VLLMEngineLM`) where one is given."""
    lm = load_evaluation_lm("embedded").backend
    pools = {
        "review": (review_conversations(), REVIEW_SETTINGS),
        "rewrite": (rewrite_conversations(), PREPROCESS_SETTINGS),
    }
    rows = []
    for workload, sizes in batch_sizes.items():
        conversations, settings = pools[workload]
        prompts_all = generation_prompts(lm.tokenizer, conversations, settings.prefill)
        for turn, size in enumerate(sizes):
            prompts = [prompts_all[i % len(prompts_all)] for i in range(size)]
            paths = [
                ("transformers_generate", transformers_baseline(lm)),
                ("ours", lm._decode),
            ]
            if engine is not None:
                paths.append(("vllm", engine.generate_token_ids))
            if turn % 2:
                paths.reverse()
            measured = {}
            for name, run in paths:
                lm.generation_stats = Counter()
                measured[name] = time_path(run, prompts, settings)
                measured[name]["stats"] = dict(lm.generation_stats)
                print(workload, size, name, measured[name]["tokens_per_s"], "tok/s", flush=True)
            reference = measured["transformers_generate"].pop("replies")
            ours = measured["ours"].pop("replies")
            differences = compare(reference, ours)
            row: dict[str, Any] = {}
            if engine is not None:
                vllm_differences = compare(ours, measured["vllm"].pop("replies"))
                row["vllm"] = {
                    **measured["vllm"],
                    "speedup_over_ours": round(
                        measured["vllm"]["tokens_per_s"] / measured["ours"]["tokens_per_s"], 2
                    ),
                    "rows_identical_to_ours": size - len(vllm_differences),
                    "differences_from_ours": vllm_differences,
                }
            rows.append(
                {
                    "workload": workload,
                    "batch": size,
                    "prompt_tokens": [len(p) for p in prompts],
                    "transformers_generate": measured["transformers_generate"],
                    "ours": measured["ours"],
                    "speedup": round(
                        measured["ours"]["tokens_per_s"]
                        / measured["transformers_generate"]["tokens_per_s"],
                        2,
                    ),
                    "identical_rows": size - len(differences),
                    "differences": differences,
                    **row,
                }
            )
    return rows


def run_demo(tree: Path, workdir: Path) -> dict[str, Any]:
    """The README's demo command in ``tree`` with a fresh score cache (model folder warm), run
    by :func:`benchmarks.speed.demo.run_once`: this tree as installed, another (a worktree of
    the baseline) first on ``PYTHONPATH``. (Putting this checkout there too would make Python
    see two ``gem-tasks`` distributions, its ``*.egg-info`` and the installed one, and Inspect
    would then register the tasks without their ``gem_tasks/`` prefix: "No inspect tasks were
    found".) A failed run raises with the end of its output."""
    from benchmarks.speed.demo import run_once

    run = run_once(tree, workdir, warm_models=True, command=DEMO_COMMAND)
    return {
        "seconds": round(run["seconds"], 1),
        "output_tokens": run["output_tokens"],
        "scores": {name: round(value, 4) for name, value in run["means"].items()},
        "sample_scores": run["sample_scores"],
    }


def demo_comparison(baseline_ref: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gem-generation-bench-") as tmp:
        root = Path(tmp)
        baseline_tree = root / "baseline-tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(baseline_tree), baseline_ref],
            cwd=REPO,
            check=True,
            capture_output=True,
        )
        try:
            baseline = run_demo(baseline_tree, root / "baseline")
            print("demo baseline", baseline["seconds"], "s", flush=True)
            ours = run_demo(REPO, root / "ours")
            print("demo ours", ours["seconds"], "s", flush=True)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(baseline_tree)],
                cwd=REPO,
                check=False,
                capture_output=True,
            )
    moved = {
        sample: {
            name: round(value - baseline["sample_scores"][sample][name], 6)
            for name, value in scores.items()
            if isinstance(value, int | float)
            and isinstance(baseline["sample_scores"].get(sample, {}).get(name), int | float)
        }
        for sample, scores in ours["sample_scores"].items()
    }
    return {
        "command": " ".join(DEMO_COMMAND),
        "baseline_ref": baseline_ref,
        "baseline": baseline,
        "ours": ours,
        "speedup": round(baseline["seconds"] / ours["seconds"], 2),
        "score_changes": moved,
        "max_abs_score_change": max(
            (abs(v) for scores in moved.values() for v in scores.values()), default=0.0
        ),
    }


def markdown_report(result: dict[str, Any], command: str) -> str:
    """The run's tables as markdown, written beside its JSON: tokens/s of both paths per
    workload and batch (with the token-by-token check), and the demo before and after."""
    machine = result["machine"]
    lines = [
        f"# Generation speed, SmolLM2-135M fp32, {machine.get('cpus')} cores",
        "",
        f"`{command}`, on {machine.get('cpu') or machine.get('processor')}, torch "
        f"{machine.get('torch')} ({machine.get('torch_threads')} threads). Written by the "
        "script with [the JSON](generation_cpu.json).",
        "",
    ]
    with_vllm = any("vllm" in row for row in result["batches"])
    header = [
        "workload",
        "batch",
        "transformers generate (tok/s)",
        "ours (tok/s)",
        "speed-up",
        "identical replies",
    ]
    if with_vllm:
        header += ["vLLM engine (tok/s)", "vLLM / ours", "vLLM replies identical to ours"]
    lines += ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for row in result["batches"]:
        cells = [
            row["workload"],
            str(row["batch"]),
            f"{row['transformers_generate']['tokens_per_s']:.2f}",
            f"{row['ours']['tokens_per_s']:.2f}",
            f"{row['speedup']:.2f}",
            f"{row['identical_rows']} of {row['batch']}",
        ]
        if with_vllm:
            vllm = row.get("vllm")
            cells += (
                [
                    f"{vllm['tokens_per_s']:.2f}",
                    f"{vllm['speedup_over_ours']:.2f}",
                    f"{vllm['rows_identical_to_ours']} of {row['batch']}",
                ]
                if vllm
                else ["not run"] * 3
            )
        lines.append("| " + " | ".join(cells) + " |")
    demo = result.get("demo")
    if demo:
        lines += [
            "",
            f"Demo (`{demo['command']}`, fresh score cache, warm model folder), in the same run:",
            "",
            "| tree | wall clock | generated tokens | "
            + " | ".join(sorted(demo["ours"]["scores"]))
            + " |",
            "| --- | --- | --- | " + " | ".join("---" for _ in demo["ours"]["scores"]) + " |",
        ]
        names = sorted(demo["ours"]["scores"])
        for label, run in (
            (f"{demo['baseline_ref']} (baseline)", demo["baseline"]),
            ("this tree", demo["ours"]),
        ):
            lines.append(
                f"| {label} | {run['seconds']} s | {run['output_tokens']} | "
                + " | ".join(str(run["scores"].get(name)) for name in names)
                + " |"
            )
        lines += [
            "",
            f"Speed-up {demo['speedup']}x; largest change of a sample's score "
            f"{demo['max_abs_score_change']:.3g}.",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--review-batches", default="1,10", help="batch sizes (comma-separated)")
    parser.add_argument("--rewrite-batches", default="1,4,10,32")
    parser.add_argument("--demo", action="store_true", help="also time the demo end to end")
    parser.add_argument("--baseline-ref", default="d93ba1c")
    parser.add_argument("--no-vllm", action="store_true", help="skip the vLLM engine path")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    engine = None
    if not args.no_vllm and importlib.util.find_spec("vllm") is not None:
        # 2 GiB holds the 32 rewrite rows at once; an idle engine takes no CPU from the other
        # paths (measured)
        engine = embedded_vllm_engine(kv_cache_memory_bytes=2 << 30)
        engine.generate_token_ids([[1, 2, 3]], GenerationSettings(max_new_tokens=2))  # warm-up
    provenance = Run(args.out.parent, data=[DEMO], settings=vars(args)) if args.out else None
    result: dict[str, Any] = {
        "machine": {
            **describe_machine(),
            "processor": platform.processor(),
            "torch_threads": torch.get_num_threads(),
            "python": sys.version.split()[0],
            "torch": torch.__version__,
        },
        "batches": run_batches(
            {
                "review": [int(b) for b in args.review_batches.split(",") if b],
                "rewrite": [int(b) for b in args.rewrite_batches.split(",") if b],
            },
            engine=engine,
        ),
    }
    if engine is not None:
        engine.close()
    if args.out:  # the batch results survive a failing demo
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    if args.demo:
        if shutil.which("inspect") is None:
            raise SystemExit("the demo needs the inspect CLI on PATH")
        result["demo"] = demo_comparison(args.baseline_ref)
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
        report = markdown_report(result, provenance.record["command"])
        args.out.with_suffix(".md").write_text(report)
        provenance.finish()
    print(text)


if __name__ == "__main__":
    main()
