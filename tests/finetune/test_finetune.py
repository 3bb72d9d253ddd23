"""The fine-tuned evaluation LM (GEM paper App. E): the training data (nine pairs per metric and
paper, loss masked to the assistant turn, identical to GEM's scoring requests), LoRA training on
the tiny random Llama, the saved adapter in the transformers and vLLM backends (its fingerprint
in the identity), and GEM with an adapter through ``inspect eval``."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from gem_finetune.data import (
    HELDOUT_FILE,
    IGNORE_INDEX,
    FinetuneDataError,
    build_finetune_data,
    load_finetune_data,
    save_finetune_data,
    training_pairs,
)
from scorers.data.records import load_records
from scorers.lm.adapter import AdapterError, adapter_fingerprint
from scorers.pmi import NOT_AVAILABLE, prediction_request
from scorers.text.judgments import Preprocessed

pytest.importorskip("peft")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, demo_records, tokenizer) -> Path:
    folder = tmp_path_factory.mktemp("finetune_data")
    data = build_finetune_data(demo_records, tokenizer, papers=2)
    save_finetune_data(data, folder, records=demo_records)
    return folder


@pytest.fixture(scope="module")
def trained(tmp_path_factory, data_dir, tiny_folder):
    """Six optimizer steps of LoRA on the tiny model, one row each (checkpoints every three)."""
    from gem_finetune.train import LoraSettings, train_adapter

    out = tmp_path_factory.mktemp("finetune_out")
    settings = LoraSettings(
        r=8,
        alpha=16,
        learning_rate=5e-3,
        warmup_steps=0,
        batch_size=1,
        gradient_accumulation=1,
        max_steps=6,
        save_steps=3,
    )
    result = train_adapter(data_dir, tiny_folder, out, settings=settings, progress=False)
    return out, settings, result


def test_nine_pairs_are_the_ordered_conditionals_and_the_marginals():
    assert training_pairs(3) == [
        (0, 1),
        (0, 2),
        (1, 0),
        (1, 2),
        (2, 0),
        (2, 1),
        (None, 0),
        (None, 1),
        (None, 2),
    ]


@pytest.mark.slow
def test_row_counts_and_what_is_left_out(demo_records, tokenizer, monkeypatch):
    full = build_finetune_data(demo_records[:3], tokenizer)
    assert full.counts()["rows"] == 3 * 18
    assert full.counts()["gem_rows"] == full.counts()["gem_s_rows"] == 27
    for paper in demo_records[:3]:
        rows = [r for r in full.rows if r["paper_id"] == paper.id]
        kinds = [(r["metric"], r["kind"]) for r in rows]
        for metric in ("gem", "gem_s"):
            assert kinds.count((metric, "conditional")) == 6
            assert kinds.count((metric, "marginal")) == 3
        pairs = {(r["first_review_id"], r["target_review_id"]) for r in rows}
        assert len(pairs) == 9 and all(a != b for a, b in pairs)

    no_abstract = dataclasses.replace(demo_records[0], abstract="  ")
    short = demo_records[1]
    short = dataclasses.replace(
        short,
        reviews=(*short.reviews[:2], dataclasses.replace(short.reviews[2], summary=None)),
    )
    data = build_finetune_data([no_abstract, short, demo_records[2]], tokenizer)
    assert data.gem_only_papers == [no_abstract.id]
    assert list(data.skipped_papers) == [short.id]
    assert "2 review(s)" in data.skipped_papers[short.id]
    assert data.training_papers == [no_abstract.id, demo_records[2].id]
    assert data.counts()["rows"] == 9 + 18
    assert {r["metric"] for r in data.rows if r["paper_id"] == no_abstract.id} == {"gem"}

    decoded: list[int] = []
    decode = tokenizer.decode
    monkeypatch.setattr(tokenizer, "decode", lambda ids, **kw: decoded.append(1) or decode(ids))
    capped = build_finetune_data(demo_records[:1], tokenizer, max_length=300)
    assert capped.counts()["too_long_rows"] == 18 and not capped.rows
    assert not decoded  # a row left out as too long is never decoded
    monkeypatch.undo()
    assert capped.skipped_papers == {demo_records[0].id: "every pair exceeds max_length"}


@pytest.mark.slow
def test_masking_hand_checked_on_one_row(demo_records, tokenizer, tiny_lm):
    paper = demo_records[0]
    data = build_finetune_data([paper], tokenizer)
    row = next(r for r in data.rows if r["metric"] == "gem_s" and r["kind"] == "conditional")
    reviews = {r.id: r for r in paper.reviews}
    first = Preprocessed.from_reply(reviews[row["first_review_id"]].summary).judgments
    target = Preprocessed.from_reply(reviews[row["target_review_id"]].summary).judgments

    ids, labels = row["input_ids"], row["labels"]
    assert len(ids) == len(labels)
    start = next(i for i, label in enumerate(labels) if label != IGNORE_INDEX)
    assert all(label == IGNORE_INDEX for label in labels[:start])
    assert labels[start:] == ids[start:]  # the assistant turn to its end, nothing after
    assert tokenizer.decode(ids[start:]) == target + "<|im_end|>"
    context = tokenizer.decode(ids[:start])
    assert context.endswith("<|im_start|>assistant\n")
    assert paper.abstract.strip() in context and first in context
    # exactly the request GEM-S scores for this pair
    request = prediction_request(
        tiny_lm, synopsis=paper.abstract.strip(), judgments=first, target=target
    )
    assert ids == list(request.context_ids) + list(request.target_ids)
    assert start == len(request.context_ids)

    marginal = next(r for r in data.rows if r["metric"] == "gem" and r["kind"] == "marginal")
    start = marginal["labels"].index(next(x for x in marginal["labels"] if x != IGNORE_INDEX))
    prompt = tokenizer.decode(marginal["input_ids"][:start])
    assert prompt.count(NOT_AVAILABLE) == 2  # no synopsis (GEM), no first reviewer (marginal)
    assert marginal["first_review_id"] is None


@pytest.mark.slow
def test_saved_data_round_trip_and_held_out_records(data_dir, demo_records, tmp_path, tokenizer):
    dataset, manifest = load_finetune_data(data_dir)
    assert len(dataset) == 36 and manifest["counts"]["rows"] == 36
    trained = set(manifest["training_papers"])
    assert len(trained) == 2 and set(dataset["paper_id"]) == trained
    heldout = load_records(data_dir / HELDOUT_FILE)
    assert {r.id for r in heldout} == {r.id for r in demo_records} - trained
    assert heldout[0] == next(r for r in demo_records if r.id == heldout[0].id)

    data = build_finetune_data(demo_records[:1], tokenizer, metrics=["gem"])
    save_finetune_data(data, tmp_path, file_format="parquet")
    parquet, _ = load_finetune_data(tmp_path)
    assert parquet["labels"] == [r["labels"] for r in data.rows]
    with pytest.raises(FinetuneDataError, match="judgment summary"):
        bare = [dataclasses.replace(r, summary=None) for r in demo_records[0].reviews]
        build_finetune_data([dataclasses.replace(demo_records[0], reviews=tuple(bare))], tokenizer)


@pytest.mark.slow
def test_training_lowers_the_loss_and_resumes(trained, data_dir, tiny_folder, tokenizer):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from gem_finetune.train import assistant_loss, train_adapter

    out, settings, result = trained
    assert result.steps == 6 and result.resumed_from is None
    assert (out / "checkpoints" / "checkpoint-6").is_dir()
    logged = [json.loads(line) for line in (out / "training_log.jsonl").read_text().splitlines()]
    assert [e["step"] for e in logged if "loss" in e] == list(range(1, 7))
    stamps = [e["wall_time"] for e in logged]
    assert stamps == sorted(stamps) and time.time() - 3600 < stamps[0] <= time.time()

    dataset, _ = load_finetune_data(data_dir)
    batch = [dataset[0], dataset[1]]
    pad = tokenizer.eos_token_id
    base = AutoModelForCausalLM.from_pretrained(tiny_folder, dtype=torch.float32)
    before = assistant_loss(base, batch, pad)
    tuned = PeftModel.from_pretrained(base, str(result.adapter))
    after = assistant_loss(tuned, batch, pad)
    assert after < before - 0.05, (before, after)

    more = dataclasses.replace(settings, max_steps=7)
    resumed = train_adapter(data_dir, tiny_folder, out, settings=more, progress=False)
    assert resumed.resumed_from.endswith("checkpoint-6") and resumed.steps == 7


@pytest.mark.slow
def test_bf16_autocast_trains_on_cpu_and_is_recorded(
    trained, data_dir, tiny_folder, tokenizer, tmp_path, capfd
):
    """bfloat16 mixed precision on a CPU: float32 weights, bf16 products (accelerate's
    mixed_precision), the loss still falls; the default run records no mixed precision. Without
    progress, training prints nothing (no "Loading weights" bar from the base model's load)."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from gem_finetune.train import FinetuneError, LoraSettings, assistant_loss, train_adapter

    out, settings, result = trained
    default_info = json.loads((result.adapter / "gem_finetune.json").read_text())
    assert default_info["mixed_precision"] == "no" and default_info["weights_dtype"] == "float32"
    mixed = dataclasses.replace(settings, bf16_autocast=True, max_steps=6, save_steps=100)
    capfd.readouterr()
    run = train_adapter(data_dir, tiny_folder, tmp_path / "bf16", settings=mixed, progress=False)
    assert "Loading weights" not in capfd.readouterr().err
    info = json.loads((run.adapter / "gem_finetune.json").read_text())
    assert info["mixed_precision"] == "bf16" and info["weights_dtype"] == "float32"
    assert info["lora"]["bf16_autocast"] is True
    dataset, _ = load_finetune_data(data_dir)
    batch = [dataset[0], dataset[1]]
    base = AutoModelForCausalLM.from_pretrained(tiny_folder, dtype=torch.float32)
    pad = tokenizer.eos_token_id
    before = assistant_loss(base, batch, pad)
    after = assistant_loss(PeftModel.from_pretrained(base, str(run.adapter)), batch, pad)
    assert after < before - 0.05, (before, after)
    with pytest.raises(FinetuneError, match="float16"):
        train_adapter(
            data_dir,
            tiny_folder,
            tmp_path / "fp16",
            settings=LoraSettings(bf16_autocast=True, max_steps=1),
            dtype="float16",
            progress=False,
        )


@pytest.mark.slow
def test_precision_benchmark_trains_both_ways_on_the_same_rows(data_dir, tiny_folder, tmp_path):
    """benchmarks/speed/finetune_precision.py: both precisions train the same number of steps on the
    same rows (losses agree to bf16 rounding), the speed-up is the ratio of the step times."""
    from conftest import load_benchmark

    bench = load_benchmark("speed.finetune_precision")
    out = tmp_path / "precision.json"
    args = ["--data", str(data_dir), "--base", str(tiny_folder), "--steps", "3"]
    report = bench.main(
        [*args, "--batch-size", "1", "--gradient-accumulation", "1", "--out", str(out)]
    )
    assert json.loads(out.read_text()) == report
    fp32, bf16 = report["float32"], report["bf16_autocast"]
    assert fp32["steps"] == bf16["steps"] == 3 and len(fp32["losses"]) == len(bf16["losses"]) == 3
    assert 0 < report["max_loss_difference"] < 0.05
    assert report["speedup_bf16_over_float32"] == round(
        fp32["seconds_per_step"] / bf16["seconds_per_step"], 2
    )
    rows = [json.loads(line) for line in (data_dir / "train.jsonl").read_text().splitlines()]
    mean_tokens = sum(len(r["input_ids"]) for r in rows) / len(rows)
    for run in (fp32, bf16):
        assert run["tokens_per_second"] == pytest.approx(
            mean_tokens / run["seconds_per_step"], rel=0.01
        )


@pytest.mark.slow
def test_adapter_changes_log_probabilities_and_the_identity(trained, tiny_folder, tmp_path):
    from scorers.lm.hf import HFEvaluationLM

    adapter = trained[2].adapter
    base = HFEvaluationLM.from_pretrained(tiny_folder)
    tuned = HFEvaluationLM.from_pretrained(tiny_folder, adapter=adapter)
    fingerprint = adapter_fingerprint(adapter)
    assert tuned.identity == base.identity.replace(":float32", f"+lora@{fingerprint}:float32")
    request = prediction_request(
        base, synopsis=NOT_AVAILABLE, judgments=NOT_AVAILABLE, target="The reviewer appreciates it."
    )
    [plain], [adapted] = base.target_logprobs([request]), tuned.target_logprobs([request])
    assert abs(plain.total - adapted.total) > 1e-3

    copy = shutil.copytree(adapter, tmp_path / "copy")
    assert adapter_fingerprint(copy) == fingerprint  # content, not location
    config = json.loads((copy / "adapter_config.json").read_text())
    (copy / "adapter_config.json").write_text(json.dumps({**config, "lora_alpha": 32}))
    assert adapter_fingerprint(copy) != fingerprint
    with pytest.raises(AdapterError, match="adapter_config.json"):
        HFEvaluationLM.from_pretrained(tiny_folder, adapter=tmp_path)
    with pytest.raises(AdapterError, match="does not exist"):
        adapter_fingerprint(tmp_path / "missing")


@pytest.mark.slow
def test_vllm_modes_take_the_adapter(trained, tiny_folder):
    from scorers.lm import load_evaluation_lm
    from scorers.lm.vllm import lora_engine_args

    adapter = trained[2].adapter
    assert lora_engine_args(adapter) == {"enable_lora": True, "max_loras": 1, "max_lora_rank": 8}
    served = load_evaluation_lm(
        f"vllm/{tiny_folder}", base_url="http://127.0.0.1:9", adapter=str(adapter)
    )
    backend = served.backend
    assert backend._served == adapter.name  # the name given to --lora-modules
    assert served.identity == f"vllm/{tiny_folder}+lora@{adapter_fingerprint(adapter)}:server"
    backend.close()


@pytest.mark.slow
def test_cli_builds_data_and_reports_counts(tmp_path, demo_records, capsys):
    from gem_tasks.cli import main

    records = tmp_path / "records.jsonl"
    from gem_finetune.data import record_dict

    records.write_text("".join(json.dumps(record_dict(r)) + "\n" for r in demo_records[:2]))
    assert main(["finetune", "data", str(records), "--out", str(tmp_path / "d")]) == 0
    assert "36 rows (18 GEM, 18 GEM-S) from 2 papers" in capsys.readouterr().out
    assert main(["finetune", "train", str(tmp_path / "d"), "--out", str(tmp_path / "o"),
                 "--load-in-4bit", "--device", "cpu"]) == 2  # fmt: skip
    assert "needs a CUDA GPU" in capsys.readouterr().err


@pytest.mark.slow
def test_gem_with_an_adapter_through_inspect_eval(embedded_folder, tmp_path):
    """GEM with a LoRA adapter on the embedded SmolLM2, end to end, beside the base model: the
    scores differ (no shared cache entries) and so do the signatures. The adapter is randomly
    initialised (training SmolLM2 on a CPU is the benchmark's job)."""
    import torch
    from inspect_ai import eval as inspect_eval
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from gem_tasks.tasks.iclr import iclr

    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(embedded_folder, dtype=torch.float32)
    config = LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False
    )
    get_peft_model(base, config).save_pretrained(tmp_path / "adapter")

    scores = {}
    for name, args in (("base", {}), ("adapter", {"adapter": str(tmp_path / "adapter")})):
        [log] = inspect_eval(
            iclr(
                candidate="human",
                scorers="gem",
                dataset_summaries=True,
                scorer_lm=f"hf/{embedded_folder}",
                scorer_lm_args=args,
                cache_dir=str(tmp_path / "cache"),
            ),
            model="mockllm/model",
            limit=1,
            log_dir=str(tmp_path / "logs" / name),
            display="none",
        )
        assert log.status == "success"
        [score] = log.samples[0].scores.values()
        scores[name] = score
    base_sig = scores["base"].metadata["signature"]
    tuned_sig = scores["adapter"].metadata["signature"]
    fingerprint = adapter_fingerprint(tmp_path / "adapter")
    assert tuned_sig["evaluation_lm"] == base_sig["evaluation_lm"].replace(
        ":float32", f"+lora@{fingerprint}:float32"
    )
    assert tuned_sig["id"] != base_sig["id"]
    assert abs(scores["adapter"].value - scores["base"].value) > 1e-6
