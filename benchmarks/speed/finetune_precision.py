"""Training speed of the App. E LoRA fine-tune in float32 and with bfloat16 autocast, measured
in the same run on the same data (``LoraSettings.bf16_autocast``: bfloat16 matrix products over
float32 weights and LoRA parameters).

Each precision trains a fresh adapter (no resume) for ``--steps`` optimizer steps on the rows of a
folder written by ``gem-tasks finetune data``, with App. E's batch (2 x accumulation 4) unless
told otherwise. Reported per precision: the wall time of the optimizer steps (from the first
step's log line to the last, so model loading and the first step's warm-up are left out),
seconds per step, training tokens per second (rows per step x the data's mean row length:
the Trainer shuffles the rows), and the losses of every step; then the speed-up of
bfloat16 over float32 and the largest loss difference between the two (the same rows in the same
order, so the losses differ only by precision).

Usage: ``python -m benchmarks.speed.finetune_precision --data <finetune data folder> --base embedded
--steps 4 --out
benchmarks/speed/results/finetune_precision_cpu/finetune_precision_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common.machine import describe_machine
from benchmarks.common.manifest import Run
from gem_finetune.train import LOG_FILE, LoraSettings, train_adapter


def train_timed(
    data: Path, base: str, out: Path, settings: LoraSettings, mean_row_tokens: float
) -> dict:
    """Train once; the optimizer steps' times from the training log's ``wall_time``s."""
    started = time.perf_counter()
    result = train_adapter(data, base, out, settings=settings, resume=False, progress=False)
    total = time.perf_counter() - started
    log = out / LOG_FILE
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    steps = [e for e in entries if "loss" in e]
    stamps = [e["wall_time"] for e in steps]
    per_step_rows = settings.batch_size * settings.gradient_accumulation
    timed = stamps[-1] - stamps[0] if len(stamps) > 1 else total
    timed_steps = max(len(stamps) - 1, 1)
    return {
        "steps": result.steps,
        "seconds_total": round(total, 2),
        "seconds_per_step": round(timed / timed_steps, 3),
        "tokens_per_second": round(mean_row_tokens * per_step_rows * timed_steps / timed, 1),
        "losses": [s["loss"] for s in steps],
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="'finetune data' folder")
    parser.add_argument("--base", default="embedded", help="base model (default: embedded)")
    parser.add_argument("--steps", type=int, default=4, help="optimizer steps per precision")
    parser.add_argument("--batch-size", type=int, default=2)
    parser.add_argument("--gradient-accumulation", type=int, default=4)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    args = parser.parse_args(argv)
    provenance = Run(args.out.parent, data=[args.data], settings=vars(args))
    report: dict = {
        "settings": {
            "data": str(args.data),
            "base": args.base,
            "steps": args.steps,
            "batch_size": args.batch_size,
            "gradient_accumulation": args.gradient_accumulation,
        },
        "machine": describe_machine(),
    }
    rows = [json.loads(line) for line in (args.data / "train.jsonl").read_text().splitlines()]
    mean_row_tokens = sum(len(r["input_ids"]) for r in rows) / len(rows)
    for name, autocast in (("float32", False), ("bf16_autocast", True)):
        settings = LoraSettings(
            max_steps=args.steps,
            batch_size=args.batch_size,
            gradient_accumulation=args.gradient_accumulation,
            save_steps=10**9,
            bf16_autocast=autocast,
        )
        work = Path(tempfile.mkdtemp(prefix=f"ft_{name}_"))
        try:
            report[name] = train_timed(args.data, args.base, work, settings, mean_row_tokens)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"{name}: {report[name]}")
    fp32, bf16 = report["float32"], report["bf16_autocast"]
    report["speedup_bf16_over_float32"] = round(
        fp32["seconds_per_step"] / bf16["seconds_per_step"], 2
    )
    report["max_loss_difference"] = max(
        abs(a - b) for a, b in zip(fp32["losses"], bf16["losses"], strict=True)
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    provenance.finish()
    print(
        f"speed-up {report['speedup_bf16_over_float32']}x, "
        f"max loss difference {report['max_loss_difference']:.4f}"
    )
    return report


if __name__ == "__main__":
    main()
