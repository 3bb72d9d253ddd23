"""Scoring speed at scale: a Llama-3.1-8B-shaped model (random bf16 weights) on a GPU, the
reference-style computation against our transformers path, with achieved TFLOP/s and model FLOP
utilisation (MFU) against the device's bf16 peak.

Speed does not depend on weight values, so the model is built from Llama-3.1-8B's configuration
(embedded below; nothing is downloaded) with random weights. The workload is the real one: the
token ids of ``benchmarks/speed/scoring.py``'s GEM/GEM-S requests, exported with
``python -m benchmarks.speed.scoring --export-workload FILE`` on a machine with the data, and mapped
token by token into the 8B vocabulary by a fixed random injection, so lengths and shared prefixes
are those of the real prompts. Run on the GPU machine:

    python -m benchmarks.speed.scoring_gpu --workload benchmarks/speed/results/workload.json

``--shape tiny`` builds a 2-layer model of the same family for a CPU smoke run (tests use it).
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from benchmarks.common.manifest import Run
from benchmarks.speed.reference import baseline_logprobs
from scorers.lm.base import ScoringRequest
from scorers.lm.hf import HFEvaluationLM
from scorers.lm.hf.options import DEFAULT_FORWARD_COST, DEFAULT_PACKED_FORWARD_COST
from scorers.lm.hf.prefix_tree import forward_segments, scoring_plan

HERE = Path(__file__).resolve().parent

# meta-llama/Llama-3.1-8B config.json (architecture fields only)
LLAMA_31_8B = {
    "vocab_size": 128256,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "tie_word_embeddings": False,
}
TINY = {
    **LLAMA_31_8B,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 4096,
}

VARIANTS: dict[str, dict[str, Any]] = {
    "compiled": {"packed": False, "compile_layers": True},
    "gqa": {"packed": False, "gqa_on_gpu": True},
    "packed": {"packed": True, "packed_attention": "masked"},
    "packed_gqa": {"packed": True, "packed_attention": "masked", "gqa_on_gpu": True},
    "packed_compiled": {"packed": True, "packed_attention": "masked", "compile_layers": True},
    "packed_compiled_gqa": {
        "packed": True,
        "packed_attention": "masked",
        "compile_layers": True,
        "gqa_on_gpu": True,
    },
    "packed_flash": {"packed": True, "packed_attention": "flash"},
    "packed_compiled_flash": {"packed": True, "packed_attention": "flash", "compile_layers": True},
    "packed_fused": {"packed": True, "packed_attention": "masked", "fuse_projections": True},
    "packed_fused_flash": {"packed": True, "packed_attention": "flash", "fuse_projections": True},
    "packed_compiled_fused_flash": {
        "packed": True,
        "packed_attention": "flash",
        "compile_layers": True,
        "fuse_projections": True,
    },
    "packed_compiled_flash_rotary": {
        "packed": True,
        "packed_attention": "flash",
        "compile_layers": True,
        "packed_rotary": "triton",
    },
    "packed_compiled_fused_flash_rotary": {
        "packed": True,
        "packed_attention": "flash",
        "compile_layers": True,
        "fuse_projections": True,
        "packed_rotary": "triton",
    },
}
"""Backend options each ``--variants`` entry times beside the padded path (``ours``: transformers'
forward, ``packed=False``, the default before packed forwards): compiled
norms and MLPs, grouped-query attention under masks on the GPU, packed forwards
(``scorers/lm/hf/packed.py``) with masked or FlashAttention variable-length
attention, fused projections (query/key/value and gate/up as one product each), rotary position
embedding by one Triton kernel for queries and keys (``packed_rotary="triton"``), and their
combinations."""


def needs_copy(options: dict[str, Any]) -> bool:
    """Whether a variant changes the model it is given (compiled modules, another attention
    implementation, fused projections), so it must run on a copy while the others keep the plain
    model."""
    return (
        bool(options.get("gqa_on_gpu"))
        or bool(options.get("fuse_projections"))
        or (bool(options.get("compile_layers")) and not options.get("packed"))
    )


# dense bf16 tensor-core peak, FLOP/s (vendor datasheets, SXM parts)
PEAK_BF16 = {"H100": 989.4e12, "H200": 989.4e12, "A100": 312e12, "L40S": 362e12}
TOLERANCE_PER_TOKEN = {"bfloat16": 2e-2, "float32": 3e-5}  # bf16: both sides round differently


def build_model(shape: dict[str, Any], dtype: torch.dtype, device: str) -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**shape)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM._from_config(config, dtype=dtype)
    return model.eval()


def load_requests(path: Path, vocab_size: int, seed: int = 0) -> list[ScoringRequest]:
    """The exported workload with every token id mapped by one random injection into
    ``[0, vocab_size)`` (identical ids stay identical, so shared prefixes are kept)."""
    rows = json.loads(path.read_text())["requests"]
    source_vocab = 1 + max(t for row in rows for t in row["context"] + row["target"])
    if source_vocab > vocab_size:
        # a smaller model vocabulary (the tiny smoke shape): fold ids, sharing is still kept
        mapping = torch.arange(source_vocab) % vocab_size
    else:
        mapping = torch.randperm(vocab_size, generator=torch.Generator().manual_seed(seed))
    return [
        ScoringRequest(
            tuple(mapping[row["context"]].tolist()), tuple(mapping[row["target"]].tolist())
        )
        for row in rows
    ]


def synthetic_requests(
    tokens: int, vocab_size: int, *, row_tokens: int = 2048, target_tokens: int = 256
) -> list[ScoringRequest]:
    """``tokens // row_tokens`` requests of ``row_tokens`` random tokens each (the last
    ``target_tokens`` scored) sharing no prefix: one forward of exactly ``tokens`` tokens when
    the budget allows it, the memory probe's load."""
    generator = torch.Generator().manual_seed(1)
    rows = torch.randint(
        0, vocab_size, (max(1, tokens // row_tokens), row_tokens), generator=generator
    )
    return [
        ScoringRequest(tuple(row[:-target_tokens].tolist()), tuple(row[-target_tokens:].tolist()))
        for row in rows
    ]


def forward_flops(shape: dict[str, Any], positions: range, projected: int) -> float:
    """Model FLOPs (multiply-add = 2) of running ``positions`` through the body (each attending
    to every earlier position) plus the output projection at ``projected`` positions."""
    d = shape["hidden_size"]
    layers = shape["num_hidden_layers"]
    kv = d * shape["num_key_value_heads"] // shape["num_attention_heads"]
    per_token = layers * 2 * (d * d * 2 + d * kv * 2 + 3 * d * shape["intermediate_size"])
    attended = sum(p + 1 for p in positions)
    attention = layers * 2 * 2 * d * attended  # scores and weighted sum
    return per_token * len(positions) + attention + 2 * d * shape["vocab_size"] * projected


def baseline_flops(shape: dict[str, Any], requests: list[ScoringRequest]) -> float:
    return sum(forward_flops(shape, range(r.length), r.length) for r in requests)


def planned_work(
    shape: dict[str, Any], requests: list[ScoringRequest], min_shared: int
) -> tuple[int, float]:
    """Tokens and FLOPs of the work our plan does (one plan): each shared prefix once, each
    suffix on top of it."""
    plan, sequences = scoring_plan(requests, min_shared=min_shared)
    segments = list(forward_segments(plan, [len(s) for s in sequences]))
    flops = sum(
        forward_flops(
            shape, range(start, end), 0 if index is None else len(requests[index].target_ids)
        )
        for start, end, index in segments
    )
    return sum(end - start for start, end, _ in segments), flops


def ours_flops(shape: dict[str, Any], requests: list[ScoringRequest], min_shared: int) -> float:
    """FLOPs of the work our plan does: each shared prefix once, each suffix on top of it."""
    return planned_work(shape, requests, min_shared)[1]


def synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(
    run: Any, requests: list[ScoringRequest], device: str
) -> tuple[list[float], float, float | None]:
    """Totals, seconds and peak GPU memory (GiB; None off the GPU) of one run."""
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    synchronize(device)
    started = time.perf_counter()
    totals = run(requests)
    synchronize(device)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
    return totals, seconds, peak


def matmul_tflops(device: str, size: int = 8192, repeats: int = 10) -> float | None:
    """The bf16 rate of a ``size``-cubed matrix product on random data (mean of ``repeats``
    after three warm-ups): the ceiling this device really reaches, beside its datasheet peak."""
    if not device.startswith("cuda"):
        return None
    a = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    b = torch.randn(size, size, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    synchronize(device)
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    synchronize(device)
    return 2 * size**3 * repeats / (time.perf_counter() - started) / 1e12


class Disagreement(ValueError):
    """A path's log-probabilities differ from the reference's beyond the tolerance."""


def check_agreement(
    totals: list[float], reference: list[float], requests: list[ScoringRequest], dtype: str
) -> float:
    """The largest difference per request from the reference; raises :class:`Disagreement`
    when one exceeds the dtype's tolerance per target token."""
    worst = 0.0
    tolerance = TOLERANCE_PER_TOKEN[dtype]
    for got, want, r in zip(totals, reference, requests, strict=True):
        worst = max(worst, abs(got - want))
        if abs(got - want) > tolerance * len(r.target_ids) + 1e-3:
            raise Disagreement(f"disagrees with the reference: {got} vs {want}")
    return worst


def rate(
    tokens: int, flops: float, seconds: float, peak: float | None, run_tokens: int | None = None
) -> dict[str, Any]:
    """A path's rates: ``tokens_per_s`` counts prompt tokens (those prefix reuse never runs
    included, fair for projecting a pass); ``run_tokens_per_s`` the tokens it ran (when given),
    the figure an engine's prefill rate compares with."""
    achieved = flops / seconds
    return {
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
        **(
            {"run_tokens": run_tokens, "run_tokens_per_s": run_tokens / seconds}
            if run_tokens is not None
            else {}
        ),
        "executed_tflop": flops / 1e12,
        "achieved_tflops": achieved / 1e12,
        "mfu": achieved / peak if peak else None,
    }


def budget_sweep(
    model: Any,
    requests: list[ScoringRequest],
    *,
    shape: dict[str, Any],
    settings: list[tuple[int, int]],
    cap_gib: float | None,
    identity: str,
    device: str,
    peak: float | None,
    deadline: float = float("inf"),
    held_elsewhere_gib: float = 0.0,
    options: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Our path (with backend ``options``) at each (token budget per forward, forward cost) of
    ``settings``, with the
    allocator capped at ``cap_gib`` (an 80 GB card's memory on a larger one): tokens/s, padding
    and peak memory (less ``held_elsewhere_gib``, a second model copy's weights, which the
    cap also leaves aside), or the out-of-memory error that ends a setting."""
    if cap_gib and device.startswith("cuda"):
        total = torch.cuda.get_device_properties(device).total_memory / 2**30
        # the weights of a second copy held for the comparison are not the sweep's to count
        cap = cap_gib + held_elsewhere_gib
        torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total))
    tokens = sum(r.length for r in requests)
    rows = []
    for budget, cost in settings:
        if time.perf_counter() > deadline:
            rows.append(
                {"max_batch_tokens": budget, "forward_cost_tokens": cost, "skipped": "time limit"}
            )
            continue
        lm = evaluation_lm(model, identity, budget, cost, **(options or {}))
        flops = ours_flops(shape, requests, lm.options.min_shared_prefix)
        try:
            _, seconds, memory = timed(
                lambda rs, lm=lm: [r.total for r in lm.target_logprobs(rs)], requests, device
            )
        except torch.OutOfMemoryError as error:
            rows.append(
                {
                    "max_batch_tokens": budget,
                    "forward_cost_tokens": cost,
                    "error": str(error).splitlines()[0],
                }
            )
            print(f"budget {budget}, forward cost {cost}: out of memory")
            torch.cuda.empty_cache()
            continue
        row = {
            "max_batch_tokens": budget,
            "forward_cost_tokens": cost,
            **rate(tokens, flops, seconds, peak),
            "peak_memory_gib": None if memory is None else memory - held_elsewhere_gib,
            **plan_stats(lm),
        }
        print(
            f"budget {budget}, forward cost {cost}: {row['tokens_per_s']:.0f} tokens/s, "
            f"{row['achieved_tflops']:.0f} TFLOP/s, peak {memory} GiB, {row['forwards']} "
            f"forwards, padding {row['padding']:.1%}"
        )
        rows.append(row)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    if cap_gib and device.startswith("cuda"):
        torch.cuda.set_per_process_memory_fraction(1.0)
    return rows


def profile_table(run: Any, requests: list[ScoringRequest], device: str) -> dict[str, Any]:
    """One run under ``torch.profiler``: the kernels taking the most device time, and how busy
    the device was over the run's wall time."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU]
    if device.startswith("cuda"):
        activities.append(ProfilerActivity.CUDA)
    synchronize(device)
    started = time.perf_counter()
    with profile(activities=activities) as prof:
        run(requests)
        synchronize(device)
    wall = time.perf_counter() - started
    events = prof.key_averages()
    busy = sum(e.self_device_time_total for e in events) / 1e6
    table = events.table(sort_by="self_device_time_total", row_limit=30, max_name_column_width=70)
    return {"wall_s": wall, "device_busy_s": busy, "busy_fraction": busy / wall, "table": table}


def plan_stats(lm: HFEvaluationLM) -> dict[str, Any]:
    """Forwards, tokens per forward and the padding of ``lm``'s last run: in the matrix
    products (``padding``) and in attention's padded layout (``attention_padding``)."""
    stats = lm.stats
    return {
        "forwards": stats["forwards"],
        "tokens_per_forward": stats["tokens"] / max(1, stats["forwards"]),
        "padding": 1 - stats["tokens"] / max(1, stats["padded_tokens"]),
        "attention_padding": 1 - stats["tokens"] / max(1, stats["attention_tokens"]),
        "padded_prefix_tokens": stats["padded_prefix_tokens"],
    }


def evaluation_lm(
    model: Any, identity: str, max_batch_tokens: int, forward_cost: int, **options: Any
) -> HFEvaluationLM:
    """Our backend on ``model`` (token ids only: no tokenizer), with backend ``options``."""
    return HFEvaluationLM(
        model,
        SimpleNamespace(pad_token_id=0, eos_token_id=0),
        identity=identity,
        max_batch_tokens=max_batch_tokens,
        forward_cost_tokens=forward_cost,
        **options,
    )


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", type=Path, required=True)
    parser.add_argument("--shape", choices=("llama-3.1-8b", "tiny"), default="llama-3.1-8b")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="bfloat16")
    parser.add_argument("--max-batch-tokens", type=int, default=16384)
    parser.add_argument(
        "--forward-cost",
        type=int,
        default=DEFAULT_FORWARD_COST,
        help="padded tokens one more forward is worth when batching (scorers/lm/hf/budget.py)",
    )
    parser.add_argument(
        "--packed-forward-cost",
        type=int,
        default=DEFAULT_PACKED_FORWARD_COST,
        help="the same for the packed variants, where padding costs attention only",
    )
    parser.add_argument("--requests", type=int, default=0, help="use the first N (0: all)")
    parser.add_argument("--rounds", type=int, default=2, help="timed rounds after a warm-up")
    parser.add_argument("--peak-tflops", type=float, help="device bf16 peak (default: by name)")
    parser.add_argument(
        "--sweep",
        default="",
        help="comma-separated BUDGET/COST settings of ours to time under --cap-gib "
        "(token budget per forward / forward cost), e.g. 16384/128,65536/512",
    )
    parser.add_argument(
        "--cap-gib",
        type=float,
        default=79.0,
        help="GPU memory the sweep may allocate (79: what an 80 GB card leaves PyTorch)",
    )
    parser.add_argument(
        "--memory-probe",
        default="",
        help="comma-separated token budgets at which the fastest path runs one forward of "
        "that many tokens (synthetic rows of 2,048 tokens, no shared prefix) under --cap-gib: "
        "peak memory or out of memory",
    )
    parser.add_argument("--profile", action="store_true", help="profile one run of ours")
    parser.add_argument(
        "--variants",
        default="",
        help="comma-separated backend variants to time beside ours, from: "
        + ", ".join(VARIANTS)
        + " (each named ours_<variant>; one that fails or disagrees is recorded and dropped)",
    )
    parser.add_argument(
        "--time-limit-s",
        type=float,
        default=float("inf"),
        help="skip the sweep's remaining settings and the profile once this many seconds have "
        "passed (a rented GPU's paid time); what was skipped is recorded",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    provenance = (
        Run(args.out.parent, data=[args.workload], settings=vars(args)) if args.out else None
    )

    shape = LLAMA_31_8B if args.shape == "llama-3.1-8b" else TINY
    dtype = getattr(torch, args.dtype)
    started = time.perf_counter()
    deadline = started + args.time_limit_s
    model = build_model(shape, dtype, args.device)
    synchronize(args.device)
    built = time.perf_counter() - started
    requests = load_requests(args.workload, shape["vocab_size"])
    if args.requests:
        requests = requests[: args.requests]
    tokens = sum(r.length for r in requests)
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    peak = (
        args.peak_tflops * 1e12
        if args.peak_tflops
        else next((v for k, v in PEAK_BF16.items() if k in name), None)
    )
    print(f"{args.shape} {args.dtype} on {name}: {len(requests)} requests, {tokens} tokens")
    print(f"model built in {built:.1f} s; attention: {model.config._attn_implementation}")
    ceiling = matmul_tflops(args.device)
    if ceiling:
        print(f"bf16 8192^3 matrix product: {ceiling:.0f} TFLOP/s")

    identity = f"{args.shape}-random:{args.dtype}"
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {list(VARIANTS)}")
    options: dict[str, dict[str, Any]] = {"ours": {"packed": False}}
    options.update({f"ours_{v}": VARIANTS[v] for v in variants})
    lms: dict[str, HFEvaluationLM] = {}
    failed: dict[str, str] = {}
    for label, opts in options.items():
        # a variant that changes its model runs on a copy of the weights: the reference and
        # the other paths keep the plain model in the same rounds
        lm_model = copy.deepcopy(model) if needs_copy(opts) else model
        cost = args.packed_forward_cost if opts.get("packed") else args.forward_cost
        try:
            lms[label] = evaluation_lm(lm_model, identity, args.max_batch_tokens, cost, **opts)
        except ValueError as error:  # a variant this model or device does not support
            if label == "ours":
                raise
            failed[label] = f"{type(error).__name__}: {error}"
            print(f"{label}: not run ({failed[label]})")
    ours_run_tokens, ours_flops_count = planned_work(
        shape, requests, lms["ours"].options.min_shared_prefix
    )
    flops = {"baseline": baseline_flops(shape, requests)}
    flops.update({label: ours_flops_count for label in lms})
    runs: dict[str, Any] = {"baseline": lambda rs: baseline_logprobs(model, rs)}
    for label, lm in lms.items():
        runs[label] = lambda rs, lm=lm: [r.total for r in lm.target_logprobs(rs)]
    seconds: dict[str, list[float]] = {label: [] for label in runs}
    first_round: dict[str, float] = {}
    memory: dict[str, float | None] = {}
    worst = {label: 0.0 for label in runs}
    for round_ in range(args.rounds + 1):  # round 0 warms kernels and the allocator up
        reference: list[float] = []
        for label, run in runs.items():
            if label in failed:
                continue
            if label != "baseline":  # the stats describe each path's last run
                lms[label].stats.clear()
            try:
                totals, elapsed, peak_memory = timed(run, requests, args.device)
                if label == "baseline":
                    reference = totals
                else:
                    agreement = check_agreement(totals, reference, requests, args.dtype)
                    worst[label] = max(worst[label], agreement)
            except Exception as error:  # a variant's failure is recorded, the rest go on
                if label in ("baseline", "ours"):
                    raise
                failed[label] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
                print(f"round {round_} {label}: dropped ({failed[label]})")
                if args.device.startswith("cuda"):
                    torch.cuda.empty_cache()
                continue
            if not round_:
                first_round[label] = elapsed
            if round_:
                seconds[label].append(elapsed)
                memory[label] = max(memory.get(label) or 0.0, peak_memory or 0.0) or None
            print(f"round {round_} {label}: {elapsed:.2f} s")
    results: dict[str, Any] = {}
    for label in runs:
        if label in failed:
            continue
        best = sorted(seconds[label])[len(seconds[label]) // 2]  # the median round
        ran = tokens if label == "baseline" else ours_run_tokens
        results[label] = rate(tokens, flops[label], best, peak, ran)
        results[label]["rounds_s"] = seconds[label]
        results[label]["peak_memory_gib"] = memory[label]
    for label in results:
        if label == "baseline":
            continue
        results[label]["options"] = options[label]
        results[label]["speedup"] = (
            results[label]["tokens_per_s"] / results["baseline"]["tokens_per_s"]
        )
        results[label]["speedups_by_round"] = [
            b / o for b, o in zip(seconds["baseline"], seconds[label], strict=True)
        ]
        results[label]["first_round_s"] = first_round[label]
        results[label]["max_abs_diff"] = worst[label]
        results[label].update(plan_stats(lms[label]))
    results["baseline"]["forwards"] = len(requests)
    results["baseline"]["tokens_per_forward"] = tokens / max(1, len(requests))
    width = max(map(len, results))
    print(
        f"\n{'':{width}} {'tokens/s':>10} {'run/s':>8} {'x base':>7} {'TFLOP/s':>8} {'MFU':>6} "
        f"{'peak GiB':>9} {'forwards':>9} {'tok/fwd':>8} {'padding':>8}"
    )
    for label, r in results.items():
        mfu = f"{r['mfu']:.1%}" if r["mfu"] is not None else "n/a"
        peak_memory = f"{r['peak_memory_gib']:.1f}" if r["peak_memory_gib"] is not None else "n/a"
        print(
            f"{label:{width}} {r['tokens_per_s']:10.0f} {r['run_tokens_per_s']:8.0f} "
            f"{r['tokens_per_s'] / results['baseline']['tokens_per_s']:7.2f} "
            f"{r['achieved_tflops']:8.1f} {mfu:>6} {peak_memory:>9} {r['forwards']:9} "
            f"{r['tokens_per_forward']:8.0f} {r.get('padding', 0):8.1%}"
        )
    best = max(
        (label for label in results if label != "baseline"),
        key=lambda label: results[label]["tokens_per_s"],
    )
    report = {
        "device": name,
        "shape": args.shape,
        "dtype": args.dtype,
        "requests": len(requests),
        "tokens": tokens,
        "max_batch_tokens": args.max_batch_tokens,
        "forward_cost_tokens": args.forward_cost,
        "packed_forward_cost_tokens": args.packed_forward_cost,
        "peak_flops": peak,
        "matmul_tflops": ceiling,
        "model_build_s": built,
        "attention": model.config._attn_implementation,
        "results": results,
        "failed": failed,
        "fastest": best,
    }
    if any(opts.get("compile_layers") for opts in options.values()):
        from torch._dynamo.utils import counters

        report["compile"] = {
            "unique_graphs": counters["stats"]["unique_graphs"],
            "graph_breaks": sum(counters["graph_break"].values()),
            "first_round_s": {
                label: first_round[label]
                for label in results
                if options.get(label, {}).get("compile_layers")
            },
        }
        print(f"compiled: {report['compile']}")
    if args.out:  # the comparison is safe on disk before the optional parts
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
    best_lm = lms[best]
    best_model = best_lm.model
    # the sweep and the profile run the fastest path alone: the other copies go
    for label in [label for label in lms if label != best]:
        del lms[label], runs[label]
    del runs["baseline"]
    gc.collect()
    if args.device.startswith("cuda"):
        torch.cuda.empty_cache()
    # the sweep and the probe: the fastest path's options on its model (whose layers, on the
    # padded path, are compiled already), the plain model's weights held beside it not counted
    other = 0.0
    if best_model is not model and args.device.startswith("cuda"):
        other = sum(p.numel() * p.element_size() for p in model.parameters()) / 2**30
    best_options = dict(options[best])
    if not best_options.get("packed"):
        best_options.pop("compile_layers", None)
    on_best = {  # what the sweep and the probe share
        "shape": shape,
        "cap_gib": args.cap_gib,
        "identity": identity,
        "device": args.device,
        "peak": peak,
        "deadline": deadline,
        "held_elsewhere_gib": other,
        "options": best_options,
    }
    if args.sweep:
        settings = [tuple(int(x) for x in item.split("/")) for item in args.sweep.split(",")]
        report["budget_sweep"] = {
            "cap_gib": args.cap_gib,
            "second_copy_gib": other,
            "model": best,
            "runs": budget_sweep(best_model, requests, settings=settings, **on_best),
        }
    if args.memory_probe:
        probes = []
        for budget in (int(x) for x in args.memory_probe.split(",")):
            probes += budget_sweep(
                best_model,
                synthetic_requests(budget, shape["vocab_size"]),
                settings=[(budget, budget)],
                **on_best,
            )
        report["memory_probe"] = {"cap_gib": args.cap_gib, "model": best, "runs": probes}
        if args.out:
            args.out.write_text(json.dumps(report, indent=2))
    if args.profile and time.perf_counter() > deadline:
        report["profile"] = {"skipped": "past --time-limit-s"}
    elif args.profile:
        profiled = profile_table(runs[best], requests, args.device)
        profiled["model"] = best
        print(profiled["table"])
        print(f"device busy {profiled['busy_fraction']:.1%} of {profiled['wall_s']:.2f} s")
        report["profile"] = {k: v for k, v in profiled.items() if k != "table"}
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            (args.out.parent / "profile.txt").write_text(profiled["table"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        provenance.finish()
    return report


if __name__ == "__main__":
    main()
