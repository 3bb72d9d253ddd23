"""``gem-tasks finetune``: a fine-tuned evaluation LM (GEM paper App. E).

- ``finetune data``: the App. E prompt/target pairs from canonical records with judgment
  summaries (per paper three reviews; for GEM and for GEM-S the six ordered conditional pairs
  and the three marginals), rendered with the target model's chat template; the papers trained
  on are recorded, and the others written as held-out records for validation.
- ``finetune train``: a LoRA adapter with the appendix's settings (peft + transformers),
  resumable from its checkpoints.

Score with the adapter: ``-T scorer_lm=hf/<base> -T scorer_lm_args='{"adapter": "<out>/adapter"}'``
(or ``vllm/<base>``). The core is :mod:`gem_finetune`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from scorers.lm.loading import DTYPES

__all__ = ["add_finetune_commands"]

_PAIRS_HELP = (
    "Per paper, three reviews r1..r3 with their judgment summaries give nine pairs per metric: "
    "the six ordered conditional pairs (ri -> rj, i != j: predict rj's judgments given ri's) and "
    "the three marginals (Null -> ri). App. E's own list names only five gen(...) calls and "
    "repeats one, so nine is read as every conditional and marginal GEM takes between them."
)


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {number}")
    return number


def _load_tokenizer(model: str) -> Any:
    from transformers import AutoTokenizer

    from gem_finetune.train import resolve_base_model

    return AutoTokenizer.from_pretrained(resolve_base_model(model))


def _data(args: argparse.Namespace) -> int:
    from gem_finetune.data import build_finetune_data, save_finetune_data
    from scorers.data.records import load_records

    records = load_records(args.records)
    data = build_finetune_data(
        records,
        _load_tokenizer(args.model),
        papers=args.papers,
        reviews_per_paper=args.reviews_per_paper,
        metrics=[m.strip() for m in args.metrics.split(",") if m.strip()],
        max_length=args.max_length,
        seed=args.seed,
    )
    paths = save_finetune_data(data, args.out, records=records, file_format=args.format)
    counts = data.counts()
    print(
        f"{counts['rows']} rows ({counts['gem_rows']} GEM, {counts['gem_s_rows']} GEM-S) from "
        f"{counts['training_papers']} papers -> {paths['data']}"
    )
    if data.skipped_papers:
        print(
            f"{len(data.skipped_papers)} paper(s) skipped (fewer usable reviews than "
            f"{args.reviews_per_paper}, or too long): see manifest.json",
            file=sys.stderr,
        )
    if data.gem_only_papers:
        print(
            f"{len(data.gem_only_papers)} paper(s) without an abstract: GEM pairs only "
            "(GEM-S needs the abstract)",
            file=sys.stderr,
        )
    if data.too_long:
        print(
            f"{len(data.too_long)} pair(s) over {args.max_length} tokens left out",
            file=sys.stderr,
        )
    print("written: " + ", ".join(str(p) for p in paths.values()), file=sys.stderr)
    return 0


def _train(args: argparse.Namespace) -> int:
    from gem_finetune.train import FinetuneError, LoraSettings, train_adapter

    settings = LoraSettings(
        r=args.r,
        alpha=args.alpha,
        dropout=args.dropout,
        learning_rate=args.lr,
        lr_scheduler=args.lr_scheduler,
        epochs=args.epochs,
        batch_size=args.batch_size,
        gradient_accumulation=args.gradient_accumulation,
        warmup_steps=args.warmup_steps,
        weight_decay=args.weight_decay,
        seed=args.seed,
        optim=args.optim,
        max_steps=args.max_steps,
        save_steps=args.save_steps,
        gradient_checkpointing=args.gradient_checkpointing,
        bf16_autocast=args.bf16_autocast,
    )
    try:
        result = train_adapter(
            args.data,
            args.base,
            args.out,
            settings=settings,
            dtype=args.dtype,
            device=args.device,
            load_in_4bit=args.load_in_4bit,
            resume=args.resume,
            progress=not args.quiet,
        )
    except FinetuneError as exc:
        print(f"gem-tasks finetune train: {exc}", file=sys.stderr)
        return 2
    loss = f"{result.train_loss:.4f}" if result.train_loss is not None else "n/a"
    print(f"{result.steps} steps, mean training loss {loss}; adapter -> {result.adapter}")
    print(
        f"score with it: -T scorer_lm=hf/{args.base} "
        f'-T scorer_lm_args=\'{{"adapter": "{result.adapter}"}}\'',
        file=sys.stderr,
    )
    return 0


def add_finetune_commands(subparsers: Any) -> None:
    """Register ``finetune data`` and ``finetune train``; each sets ``run``."""
    finetune = subparsers.add_parser(
        "finetune",
        help="fine-tune the evaluation LM on the prediction task (GEM App. E): data, train",
    )
    commands = finetune.add_subparsers(dest="finetune_command", required=True)
    _add_data(commands)
    _add_train(commands)


def _add_data(commands: Any) -> None:
    """``finetune data``: the App. E training pairs."""
    data = commands.add_parser(
        "data",
        help="App. E prompt/target pairs from records with judgment summaries",
        description="Build the App. E training data: " + _PAIRS_HELP + " GEM pairs use the "
        "synopsis 'Not available', GEM-S pairs the abstract (papers without one get GEM pairs "
        "only, and are counted). Each pair is exactly the request GEM scores, rendered with "
        "--model's chat template; labels are -100 except on the target judgments and the "
        "end-of-turn token. Writes train.jsonl (or .parquet), manifest.json (settings, counts, "
        "training papers, everything left out) and heldout_records.jsonl (the papers not "
        "trained on, for validation).",
    )
    data.add_argument("records", help="canonical records: .jsonl, .parquet, folder or Hub id")
    data.add_argument("--out", required=True, type=Path, help="output folder")
    data.add_argument(
        "--model",
        default="embedded",
        help="model whose chat template renders the pairs: hub id, folder or 'embedded' "
        "(default embedded)",
    )
    data.add_argument("--papers", type=_positive, help="use this many papers (default all)")
    data.add_argument(
        "--reviews-per-paper", type=_positive, default=3, help="reviews per paper (default 3)"
    )
    data.add_argument(
        "--metrics", default="gem,gem_s", help="gem and/or gem_s, comma-separated (default both)"
    )
    data.add_argument(
        "--max-length", type=_positive, default=4096, help="longest pair kept (default 4096)"
    )
    data.add_argument("--seed", type=int, default=42, help="paper/review draw (default 42)")
    data.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    data.set_defaults(run=_data)


def _add_train(commands: Any) -> None:
    """``finetune train``: a LoRA adapter."""
    train = commands.add_parser(
        "train",
        help="train a LoRA adapter on finetune data (App. E settings by default)",
        description="LoRA fine-tuning with peft and transformers' Trainer, loss on the "
        "assistant turn only. Defaults are App. E's: r 16, alpha 16, dropout 0, lr 2e-4, "
        "linear schedule, 5 warm-up steps, 3 epochs, batch 2 x accumulation 4, weight decay "
        "0.01, seed 42 (the paper's adamw_8bit optimizer: --optim adamw_8bit with "
        "bitsandbytes). Writes OUT/adapter, OUT/checkpoints (a rerun resumes from the newest) "
        "and OUT/training_log.jsonl.",
    )
    train.add_argument("data", help="folder written by 'finetune data'")
    train.add_argument(
        "--base", default="embedded", help="base model: hub id, folder or 'embedded'"
    )
    train.add_argument("--out", required=True, type=Path, help="output folder")
    train.add_argument("--r", type=_positive, default=16)
    train.add_argument("--alpha", type=_positive, default=16)
    train.add_argument("--dropout", type=float, default=0.0)
    train.add_argument("--lr", type=float, default=2e-4)
    train.add_argument("--lr-scheduler", default="linear")
    train.add_argument("--epochs", type=float, default=3.0)
    train.add_argument("--batch-size", type=_positive, default=2)
    train.add_argument("--gradient-accumulation", type=_positive, default=4)
    train.add_argument("--warmup-steps", type=int, default=5)
    train.add_argument("--weight-decay", type=float, default=0.01)
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--optim", default="adamw_torch", help="default adamw_torch")
    train.add_argument("--max-steps", type=int, default=-1, help="stop early (default: epochs)")
    train.add_argument("--save-steps", type=_positive, default=50, help="checkpoint interval")
    train.add_argument("--gradient-checkpointing", action="store_true")
    train.add_argument(
        "--bf16-autocast",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="bfloat16 matrix products over float32 weights (default: on a GPU with bfloat16 "
        "weights only; on a CPU with AVX-512 BF16 or AMX, --bf16-autocast multiplies faster)",
    )
    train.add_argument("--dtype", choices=DTYPES, default=None)
    train.add_argument("--device", default=None, help="cpu or cuda (default: GPU if any)")
    train.add_argument(
        "--load-in-4bit",
        action="store_true",
        help="4-bit NF4 base (QLoRA, as App. E); needs a CUDA GPU and bitsandbytes",
    )
    train.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="resume from the newest checkpoint in OUT/checkpoints (default on)",
    )
    train.add_argument("--quiet", action="store_true", help="no progress output")
    train.set_defaults(run=_train)
