"""LoRA fine-tuning of an evaluation LM on the App. E data (GEM paper App. E.1).

The paper trains Llama-3.1-8B-Instruct (4-bit, Unsloth) with LoRA r 16, alpha 16, dropout 0,
learning rate 2e-4 with a linear schedule and 5 warm-up steps, 3 epochs, batch 2 with 4
gradient-accumulation steps, weight decay 0.01, seed 42, maximum sequence length 4096 and the
8-bit AdamW of bitsandbytes. :class:`LoraSettings` holds those numbers as defaults; the optimizer
defaults to torch's AdamW (``optim="adamw_8bit"`` reproduces the paper's where bitsandbytes is
installed). LoRA goes on every linear layer of the transformer blocks (``all-linear``: q, k, v,
o, gate, up and down projections on Llama, the list Unsloth's recipe uses). This module uses
transformers' ``Trainer`` and peft; the loss is on the assistant turn only (the data's
``labels``, :mod:`gem_finetune.data`).

Checkpoints go to ``<out>/checkpoints`` every ``save_steps`` optimizer steps; a run started again
with the same ``out`` resumes from the newest one. The adapter is saved to ``<out>/adapter``
(score with it through ``scorer_lm_args={"adapter": "<out>/adapter"}``), the loss history to
``<out>/training_log.jsonl``.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gem_finetune.data import IGNORE_INDEX, chat_template_hash, load_finetune_data
from scorers.errors import GemTasksError
from scorers.lm.adapter import peft_install_hint

__all__ = [
    "FinetuneError",
    "LoraSettings",
    "TrainResult",
    "assistant_loss",
    "collate",
    "resolve_base_model",
    "train_adapter",
]

ADAPTER_FOLDER = "adapter"
CHECKPOINT_FOLDER = "checkpoints"
LOG_FILE = "training_log.jsonl"
INFO_FILE = "gem_finetune.json"


class FinetuneError(GemTasksError, RuntimeError):
    """Fine-tuning cannot run as asked (missing optional dependency, no GPU for 4-bit, data
    rendered for another chat template)."""


@dataclass(frozen=True)
class LoraSettings:
    """LoRA and optimisation settings; the defaults are GEM App. E.1's."""

    r: int = 16
    alpha: int = 16
    dropout: float = 0.0
    target_modules: str | tuple[str, ...] = "all-linear"
    learning_rate: float = 2e-4
    lr_scheduler: str = "linear"
    epochs: float = 3.0
    batch_size: int = 2
    gradient_accumulation: int = 4
    warmup_steps: int = 5
    weight_decay: float = 0.01
    seed: int = 42
    optim: str = "adamw_torch"
    """The paper's ``adamw_8bit`` needs bitsandbytes."""
    max_steps: int = -1
    """Stop after this many optimizer steps (-1: run ``epochs``)."""
    logging_steps: int = 1
    save_steps: int = 50
    save_total_limit: int | None = 3
    gradient_checkpointing: bool = False
    bf16_autocast: bool | None = None
    """Mixed precision: matrix products in bfloat16 over float32 weights and LoRA parameters.
    None (default): on a GPU whose weights are bfloat16, as before; never on a CPU. True: also on
    a CPU, where those with AVX-512 BF16 or AMX multiply in bfloat16 about 4x faster than in
    float32 (a 1200x576 by 576x1536 product on a 2-core EPYC with AVX-512 BF16: 344-397 vs 73-91
    GFLOP/s). False: never. App. E trains in bfloat16 compute (Unsloth, 4-bit base)."""


@dataclass
class TrainResult:
    """Where the adapter went and how training went."""

    adapter: Path
    steps: int
    train_loss: float | None
    log_history: list[dict[str, Any]]
    resumed_from: str | None


def resolve_base_model(base: str | Path) -> str:
    """A hub id or folder for ``base``; ``embedded`` is the embedded SmolLM2's folder."""
    if str(base) in ("embedded", "embedded/smollm2"):
        from scorers.lm.embedded import materialize_embedded

        return str(materialize_embedded())
    return str(base)


def collate(rows: list[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """A right-padded batch: ``input_ids`` padded with ``pad_id``, ``labels`` with -100 and an
    ``attention_mask`` of the real tokens."""
    import torch

    width = max(len(r["input_ids"]) for r in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        n = len(row["input_ids"])
        input_ids[i, :n] = torch.tensor(row["input_ids"])
        labels[i, :n] = torch.tensor(row["labels"])
        attention[i, :n] = 1
    return {"input_ids": input_ids, "labels": labels, "attention_mask": attention}


def assistant_loss(model: Any, rows: list[dict[str, Any]], pad_id: int) -> float:
    """Mean cross-entropy (nats per token) of ``rows``' target tokens under ``model``: the
    training loss, without gradients."""
    import torch

    batch = collate(rows, pad_id)
    device = next(model.parameters()).device
    with torch.no_grad():
        out = model(**{k: v.to(device) for k, v in batch.items()})
    return float(out.loss)


def _pad_id(tokenizer: Any) -> int:
    for candidate in (tokenizer.pad_token_id, tokenizer.eos_token_id, 0):
        if candidate is not None:
            return int(candidate)
    return 0


def _load_base(
    base: str, *, dtype: str | None, device: str | None, load_in_4bit: bool
) -> tuple[Any, str]:
    import torch
    from transformers import AutoModelForCausalLM

    from scorers.lm.loading import quiet_transformers

    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = "float32" if device == "cpu" else "bfloat16"
    if load_in_4bit:
        if not torch.cuda.is_available() or device == "cpu":
            raise FinetuneError("4-bit loading (bitsandbytes) needs a CUDA GPU; drop load_in_4bit")
        try:
            import bitsandbytes  # noqa: F401
        except ImportError as exc:
            raise FinetuneError(
                "4-bit loading needs bitsandbytes: pip install bitsandbytes"
            ) from exc
        from peft import prepare_model_for_kbit_training
        from transformers import BitsAndBytesConfig

        quantization = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_compute_dtype=getattr(torch, dtype),
        )
        with quiet_transformers():
            model = AutoModelForCausalLM.from_pretrained(
                base,
                quantization_config=quantization,
                device_map={"": 0},
                dtype=getattr(torch, dtype),
            )
        return prepare_model_for_kbit_training(model), device
    with quiet_transformers():  # no "Loading weights" bar beside the training's own progress
        model = AutoModelForCausalLM.from_pretrained(base, dtype=getattr(torch, dtype))
    return model.to(device), device


def _log_callback(path: Path, progress: bool) -> Any:
    from transformers import TrainerCallback

    class LossLog(TrainerCallback):
        """Appends every logged step to ``training_log.jsonl`` (with its Unix ``wall_time``, for
        throughput) and prints the loss."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if not logs or not state.is_world_process_zero:
                return
            entry = {
                "step": state.global_step,
                "max_steps": state.max_steps,
                "wall_time": round(time.time(), 3),
                **logs,
            }
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(entry) + "\n")
            if progress and "loss" in logs:
                print(
                    f"step {state.global_step}/{state.max_steps} loss {logs['loss']:.4f} "
                    f"lr {logs.get('learning_rate', 0):.2e}",
                    file=sys.stderr,
                    flush=True,
                )

    return LossLog()


def _check_chat_template(
    tokenizer: Any, manifest: dict[str, Any], *, data: str | Path, base_model: str | Path
) -> None:
    """A :class:`FinetuneError` when the data was rendered with another chat template than
    ``tokenizer``'s (the pairs would not be the requests GEM scores)."""
    expected = manifest.get("settings", {}).get("chat_template_sha")
    if expected and expected != chat_template_hash(tokenizer):
        raise FinetuneError(
            f"the data in {data} was rendered with another chat template than {base_model}'s "
            f"(tokenizer {manifest['settings'].get('tokenizer')!r}); rebuild it with "
            f"gem-tasks finetune data --model {base_model}"
        )


def _save_adapter(
    model: Any,
    trainer: Any,
    output: Any,
    adapter: Path,
    *,
    resumed_from: str | None,
    info: dict[str, Any],
) -> TrainResult:
    """Save the trained adapter into ``adapter`` with its ``info`` (and the precision, steps
    and loss of the training) beside it; what the training did."""
    model.save_pretrained(str(adapter))
    info = {
        **info,
        "mixed_precision": str(trainer.accelerator.mixed_precision),
        "steps": trainer.state.global_step,
        "train_loss": output.training_loss,
    }
    (adapter / INFO_FILE).write_text(json.dumps(info, indent=2, default=str) + "\n")
    return TrainResult(
        adapter=adapter,
        steps=trainer.state.global_step,
        train_loss=output.training_loss,
        log_history=list(trainer.state.log_history),
        resumed_from=resumed_from,
    )


def _bf16_autocast(settings: LoraSettings, *, device: str, weights: str) -> bool:
    """Whether the matrix products run in bfloat16: as ``settings`` say, else on a GPU over
    bfloat16 weights only; never over float16 weights."""
    if settings.bf16_autocast is None:
        bf16 = device != "cpu" and weights == "bfloat16"
    else:
        bf16 = settings.bf16_autocast
    if bf16 and weights == "float16":
        raise FinetuneError("bf16_autocast over float16 weights: load float32 or bfloat16")
    return bf16


def _lora_config(config_class: Any, settings: LoraSettings) -> Any:
    """peft's ``LoraConfig`` of ``settings`` (App. E's adapter: no bias, a causal LM)."""
    return config_class(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=(
            settings.target_modules
            if isinstance(settings.target_modules, str)
            else list(settings.target_modules)
        ),
        bias="none",
        task_type="CAUSAL_LM",
    )


def _training_arguments(
    arguments_class: Any,
    settings: LoraSettings,
    checkpoints: Path,
    *,
    bf16: bool,
    device: str,
    progress: bool,
) -> Any:
    """transformers' ``TrainingArguments`` of ``settings``: checkpoints every
    ``save_steps`` into ``checkpoints``, the loss logged, nothing reported elsewhere."""
    return arguments_class(
        output_dir=str(checkpoints),
        per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation,
        learning_rate=settings.learning_rate,
        lr_scheduler_type=settings.lr_scheduler,
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        warmup_steps=settings.warmup_steps,
        weight_decay=settings.weight_decay,
        optim=settings.optim,
        seed=settings.seed,
        data_seed=settings.seed,
        logging_steps=settings.logging_steps,
        logging_first_step=True,
        save_strategy="steps",
        save_steps=settings.save_steps,
        save_total_limit=settings.save_total_limit,
        bf16=bf16,
        use_cpu=device == "cpu",
        report_to=[],
        remove_unused_columns=False,
        disable_tqdm=not progress,
        dataloader_num_workers=0,
    )


def _lora_model(
    base: str,
    settings: LoraSettings,
    peft: tuple[Any, Any],
    dtype: str | None,
    device: str | None,
    load_in_4bit: bool,
) -> tuple[Any, str, str, bool]:
    """The base model loaded and wrapped with its LoRA adapter (``peft``: peft's
    ``LoraConfig`` and ``get_peft_model``), the device it is on, its weights' dtype and whether
    training autocasts to bfloat16."""
    lora_config, get_peft_model = peft
    model, device = _load_base(base, dtype=dtype, device=device, load_in_4bit=load_in_4bit)
    weights = str(next(model.parameters()).dtype).removeprefix("torch.")
    bf16 = _bf16_autocast(settings, device=device, weights=weights)
    if settings.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    return get_peft_model(model, _lora_config(lora_config, settings)), device, weights, bf16


def _adapter_info(
    base_model: str | Path,
    data: str | Path,
    manifest: dict[str, Any],
    rows: int,
    settings: LoraSettings,
    load_in_4bit: bool,
    weights: str,
) -> dict[str, Any]:
    """What the adapter's info file records of how it was trained."""
    return {
        "base_model": str(base_model),
        "data": str(data),
        "data_settings": manifest.get("settings", {}),
        "training_papers": len(manifest.get("training_papers", [])),
        "rows": rows,
        "lora": asdict(settings),
        "load_in_4bit": load_in_4bit,
        "weights_dtype": weights,
    }


def train_adapter(
    data: str | Path,
    base_model: str | Path,
    out: str | Path,
    *,
    settings: LoraSettings | None = None,
    dtype: str | None = None,
    device: str | None = None,
    load_in_4bit: bool = False,
    resume: bool = True,
    progress: bool = True,
) -> TrainResult:
    """Train a LoRA adapter of ``base_model`` on the App. E data in folder ``data``.

    Args:
        data: a folder written by ``gem-tasks finetune data``
            (:func:`gem_finetune.data.save_finetune_data`).
        base_model: hub id or folder of the model the data was rendered for (``embedded``: the
            embedded SmolLM2).
        out: output folder: ``adapter/``, ``checkpoints/``, ``training_log.jsonl``.
        settings: LoRA and optimisation settings (default: App. E's, :class:`LoraSettings`).
        dtype: weights' precision (default float32 on CPU, bfloat16 on GPU).
        device: ``cpu`` or ``cuda`` (default: a GPU where there is one).
        load_in_4bit: load the base in 4-bit NF4 (QLoRA, as App. E); needs a CUDA GPU and
            bitsandbytes, else :class:`FinetuneError`.
        resume: continue from the newest checkpoint in ``out/checkpoints`` (default True).
        progress: print the loss of every logged step to stderr (default True).

    Raises:
        FinetuneError: the data was rendered with another chat template than ``base_model``'s,
            peft is missing, or 4-bit loading cannot run on this machine.
        FinetuneDataError: ``data`` is not a finetune-data folder.
    """
    settings = settings or LoraSettings()
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as exc:
        raise FinetuneError(f"fine-tuning needs peft: {peft_install_hint}") from exc
    from transformers import AutoTokenizer, Trainer, TrainingArguments
    from transformers.trainer_utils import get_last_checkpoint

    dataset, manifest = load_finetune_data(data)
    base = resolve_base_model(base_model)
    tokenizer = AutoTokenizer.from_pretrained(base)
    _check_chat_template(tokenizer, manifest, data=data, base_model=base_model)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    checkpoints = out / CHECKPOINT_FOLDER
    model, device, weights, bf16 = _lora_model(
        base, settings, (LoraConfig, get_peft_model), dtype, device, load_in_4bit
    )
    train_set = dataset.remove_columns(
        [c for c in dataset.column_names if c not in ("input_ids", "labels")]
    )
    trainer = Trainer(
        model=model,
        args=_training_arguments(
            TrainingArguments, settings, checkpoints, bf16=bf16, device=device, progress=progress
        ),
        train_dataset=train_set,
        data_collator=functools.partial(collate, pad_id=_pad_id(tokenizer)),
        callbacks=[_log_callback(out / LOG_FILE, progress)],
    )
    last = get_last_checkpoint(str(checkpoints)) if resume and checkpoints.is_dir() else None
    if progress:
        resuming = f", resuming from {last}" if last else ""
        print(
            f"training {base_model} on {len(train_set)} rows from {data}{resuming}", file=sys.stderr
        )
    output = trainer.train(resume_from_checkpoint=last)
    return _save_adapter(
        model,
        trainer,
        output,
        out / ADAPTER_FOLDER,
        resumed_from=last,
        info=_adapter_info(
            base_model, data, manifest, len(train_set), settings, load_in_4bit, weights
        ),
    )
