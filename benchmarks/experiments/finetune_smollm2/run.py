"""Evidence for the fine-tuned evaluation LM (GEM paper App. E) at CPU scale: a short LoRA
fine-tune of the embedded SmolLM2-135M-Instruct on ICLR 2023 papers, then GEM's validation SMDs
(GEM paper §4, Table 8's protocol) before and after, on held-out papers disjoint from the
training papers.

Data: the GEM authors' released ICLR 2023 reviews with their GPT-4o judgment summaries
(``data/iclr2023_gem/iclr2023_reviews.jsonl``, written by
``gem-tasks data fetch``). The release has no
abstracts, so App. E's GEM-S pairs cannot be built and GEM-S is not validated: the data builder
reports every paper as GEM-only. As in ``benchmarks/experiments/validation_iclr2023/run.py``,
the summaries stand in for the preprocessing and the degradations are judgment-level (judgment
deletion, random replacement of the summary), scored with GEM on the summaries; no generation is
needed.

Steps (each under ``--out``):

1. ``data/``: App. E pairs (six conditional + three marginal per paper) from ``--train-papers``
   papers, rendered with SmolLM2's chat template; ``val_records.jsonl``: the first
   ``--val-papers`` of the papers not trained on (``heldout_records.jsonl``).
2. ``train/``: LoRA with App. E's settings except ``--epochs``/``--max-steps`` (CPU budget);
   the held-out assistant-turn loss before and after (``--loss-papers`` validation papers).
3. ``logs/{base,finetuned}/<strategy>/``: ``gem_tasks/robustness`` per strategy with
   ``scorer_lm=hf/<SmolLM2 folder>``, without and with ``scorer_lm_args.adapter``;
   ``report_{base,finetuned}/`` and ``comparison.md``/``results.json`` (SMD with 95% CIs and
   the paired p-value per strategy and variant); ``training_data.json``, ``adapter_info.json``
   and ``training_log.jsonl``: copies of the data manifest, the adapter's record and the
   training log (``data/`` and ``train/`` are not committed).

Smoke test: ``python -m benchmarks.experiments.finetune_smollm2.run --train-papers 4 --val-papers 2
--max-steps 2 --loss-papers 1 --out /tmp/ft_smoke``. Cost on the project's 2-core CPU (idle,
AVX-512 BF16): the default ``--train-papers 50 --epochs 1`` (450 rows, 57 optimizer steps) trains
in 17 minutes with ``--bf16-autocast`` (30 s per step in float32, 15.7 s with it:
``benchmarks/speed/finetune_precision.py``); each validation run (100 papers, one strategy, one
variant) takes 160-400 s; the whole run about 55 minutes.

A stopped run resumes (``invocations.json`` journals each invocation and times each step): the
data are rebuilt (seconds), training continues from its newest checkpoint, each validation run
resumes from its log's finished samples and a finished one is read from its log; ``--fresh``
starts over.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import Journal, add_fresh_option, run_row
from gem_finetune.data import (
    HELDOUT_FILE,
    MANIFEST_FILE,
    build_finetune_data,
    record_dict,
    save_finetune_data,
)
from gem_finetune.train import INFO_FILE, LOG_FILE, LoraSettings, train_adapter
from gem_tasks.analysis.report import write_report
from gem_tasks.tasks.robustness import robustness
from scorers.data.records import load_records
from scorers.data.sources.gem_release import gem_release_records
from scorers.lm.embedded import materialize_embedded

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"

STRATEGIES = ("judgment_deletion", "random_replacement")
REPORTED = ("smd", "smd_ci95_lower", "smd_ci95_upper", "paired_p", "verdict")
KEPT = {
    f"data/{MANIFEST_FILE}": "training_data.json",
    f"train/adapter/{INFO_FILE}": "adapter_info.json",
    f"train/{LOG_FILE}": "training_log.jsonl",
}
"""Files of the uncommitted data/ and train/ folders copied beside the results (source: name)."""


def heldout_loss(model_folder: Path, adapter: Path | None, rows: list[dict]) -> float:
    """Mean assistant-turn loss (nats per token) over ``rows``: minus the summed target
    log-probability GEM uses, per target token, through the transformers backend (prefix reuse,
    projection at target positions only)."""
    from scorers.lm.base import ScoringRequest
    from scorers.lm.hf import HFEvaluationLM

    lm = HFEvaluationLM.from_pretrained(model_folder, dtype="float32", adapter=adapter)
    requests = []
    for row in rows:
        start = next(i for i, label in enumerate(row["labels"]) if label != -100)
        ids = row["input_ids"]
        requests.append(ScoringRequest(tuple(ids[:start]), tuple(ids[start:])))
    results = lm.target_logprobs(requests)
    return -sum(r.total for r in results) / sum(r.n_tokens for r in results)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--train-papers", type=int, default=50)
    parser.add_argument("--val-papers", type=int, default=100)
    parser.add_argument("--loss-papers", type=int, default=4, help="held-out papers for loss")
    parser.add_argument("--epochs", type=float, default=1.0, help="App. E: 3")
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--save-steps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--bf16-autocast",
        action="store_true",
        help="train with bfloat16 matrix products over float32 weights (faster on CPUs with "
        "AVX-512 BF16 or AMX); scoring stays float32",
    )
    parser.add_argument("--only", nargs="*", choices=STRATEGIES, help="strategies to run")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser, help="forget a stopped run (journal, logs, checkpoints), start over")
    args = parser.parse_args(argv)
    if not args.data.exists():
        raise SystemExit(missing_data(args.data))
    provenance = Run(args.out, data=[args.data], settings=vars(args))
    settings = {k: v for k, v in vars(args).items() if k not in ("out", "fresh")}
    if args.fresh:
        shutil.rmtree(args.out / "train", ignore_errors=True)
    journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=args.out / "logs")
    results: dict[str, object] = {
        "settings": {k: v for k, v in vars(args).items() if k != "fresh"} | {"data": str(args.data)}
    }
    with journal.row("data"):
        folder, tokenizer, data, validation, val_path = prepare_data(args)
    results["data"] = data.counts() | {"validation_papers": len(validation)}
    print(f"data: {results['data']}")

    # 2. train (from the newest checkpoint where a stopped invocation left one)
    lora = LoraSettings(
        epochs=args.epochs,
        max_steps=args.max_steps,
        seed=args.seed,
        save_steps=args.save_steps,
        bf16_autocast=args.bf16_autocast or None,
    )
    with journal.row("train"):
        trained_run = train_adapter(
            args.out / "data", "embedded", args.out / "train", settings=lora
        )
    results["train"] = {"steps": trained_run.steps, "train_loss": trained_run.train_loss}
    loss_data = build_finetune_data(
        validation[: args.loss_papers], tokenizer, metrics=["gem"], seed=args.seed
    )
    if loss_data.rows:
        with journal.row("heldout_loss"):
            results["heldout_loss"] = {
                "rows": len(loss_data.rows),
                "base": heldout_loss(folder, None, loss_data.rows),
                "finetuned": heldout_loss(folder, trained_run.adapter, loss_data.rows),
            }
        print(f"held-out loss: {results['heldout_loss']}")

    # 3. validation before and after, each run resumable in its own log folder
    table: dict[str, dict[str, dict[str, float]]] = {}
    strategies = args.only or STRATEGIES
    for variant, lm_args in (
        ("base", {}),
        ("finetuned", {"adapter": str(trained_run.adapter)}),
    ):
        logs = args.out / "logs" / variant
        for strategy in strategies:
            location = run_row(
                journal,
                f"{variant}/{strategy}",
                lambda strategy=strategy, lm_args=lm_args: robustness(
                    perturbation=strategy,
                    dataset=str(val_path),
                    scorers="gem",
                    level="judgments",
                    scorer_lm=f"hf/{folder}",
                    scorer_lm_args={"dtype": "float32", **lm_args},
                    dataset_summaries=True,
                ),
                logs / strategy,
                model="none",
                display="plain",
            )
            log = read_eval_log(location, header_only=True)
            metrics = {
                name: value.value
                for score in (log.results.scores if log.results else [])
                for name, value in score.metrics.items()
                if name in REPORTED
            }
            table.setdefault(strategy, {})[variant] = metrics
            print(f"{variant} {strategy}: {log.status} {metrics}")
        write_report(
            [logs / strategy for strategy in strategies],
            args.out / f"report_{variant}",
            progress=False,
        )
    results["smd"] = table
    results["timings_s"] = {row: round(journal.seconds(row), 1) for row in journal.rows()}
    write_comparison(table, args.out)
    (args.out / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    # the committed copies of what data/ and train/ (not committed) hold
    for source, name in KEPT.items():
        shutil.copyfile(args.out / source, args.out / name)
    provenance.finish()


def prepare_data(args: argparse.Namespace) -> tuple[Path, Any, Any, list, Path]:
    """Training papers and held-out papers disjoint from them (``data/``), the validation
    papers (``val_records.jsonl``): the embedded model's folder, its tokenizer, the fine-tuning
    data, the validation records and their file."""
    from transformers import AutoTokenizer

    folder = materialize_embedded()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    records = gem_release_records(args.data)
    random.Random(args.seed).shuffle(records)
    data = build_finetune_data(records, tokenizer, papers=args.train_papers, seed=args.seed)
    save_finetune_data(data, args.out / "data", records=records)
    heldout = load_records(args.out / "data" / HELDOUT_FILE)
    eligible = [r for r in heldout if sum(1 for v in r.reviews if v.summary) >= 3]
    validation = eligible[: args.val_papers]
    trained = set(data.training_papers)
    if trained & {r.id for r in validation}:
        raise SystemExit("the validation papers overlap the training papers")
    val_path = args.out / "val_records.jsonl"
    val_path.write_text("".join(json.dumps(record_dict(r)) + "\n" for r in validation))
    return folder, tokenizer, data, validation, val_path


def write_comparison(table: dict[str, dict[str, dict[str, float]]], out: Path) -> None:
    """``comparison.md``: SMD, its interval, the paired p-value and the verdict per strategy and
    variant (printed too)."""
    lines = [
        "| strategy | variant | SMD | 95% CI | paired p | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for strategy, variants in table.items():
        for variant, m in variants.items():
            lines.append(
                f"| {strategy} | {variant} | {m.get('smd', float('nan')):.3f} | "
                f"({m.get('smd_ci95_lower', float('nan')):.3f}, "
                f"{m.get('smd_ci95_upper', float('nan')):.3f}) | "
                f"{m.get('paired_p', float('nan')):.3g} | {m.get('verdict', float('nan')):.0f} |"
            )
    (out / "comparison.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
