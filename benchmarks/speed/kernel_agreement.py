"""Do the scoring kernels compute what transformers computes, where they run? The padded path,
the packed path under a mask, the packed path through FlashAttention's variable-length kernel,
and that path with fused projections and the Triton rotary kernel
(:mod:`scorers.lm.hf.rotary_kernel`) against the plain transformers forward
(:func:`benchmarks.speed.reference.baseline_logprobs`), on real and random models, in float32
and bfloat16, on rows with and without cached prefixes of different lengths.

The CPU suite checks the packed layout with a reference kernel standing in for FlashAttention
(``tests/lm/test_packed.py``), which assumes FlashAttention's causal alignment when a row has more
keys than queries (the bottom right: a row's new tokens see its whole cached prefix). Only the
real kernel on a GPU shows whether that holds; a kernel aligned to the top left would let a new
token see only as many keys as it has new tokens before it, which changes the scores by far more
than rounding. Random weights at the usual initialisation give nearly uniform next-token
distributions, in which such a mistake can hide: the models here are the embedded SmolLM2-135M
(trained weights) and a Llama-shaped model with grouped-query attention whose weights are drawn
wide enough (``initializer_range`` 0.1) that its predictions are peaked.

A variant agrees when every request's summed target log-probability is within ``TOLERANCE`` of the
reference, per target token (float32: rounding of summation order; bfloat16: the rounding of a
different kernel order in 8-bit mantissas). ``tests/lm/test_kernel_agreement.py`` runs this in the
suite (CUDA variants skipped without a GPU) and shows that a top-left-aligned kernel fails it. On
a GPU machine:

    python -m benchmarks.speed.kernel_agreement --device cuda \
        --out benchmarks/speed/results/kernel_agreement_<gpu>/agreement.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

from benchmarks.common.manifest import Run
from benchmarks.speed.reference import baseline_logprobs
from scorers.lm.base import ScoringRequest
from scorers.lm.hf import HFEvaluationLM
from scorers.lm.hf.packed_decoder import flash_available, packed_support
from scorers.lm.hf.rotary_kernel import triton_rotary_support

TOLERANCE = {"float32": 2e-4, "bfloat16": 0.05}
"""The largest |difference| in summed target log-probability per target token (nats) between a
variant and the plain forward, by dtype."""

VARIANTS: dict[str, dict[str, Any]] = {
    "padded": {"packed": False},
    "packed_masked": {"packed": True, "packed_attention": "masked"},
    "packed_flash": {"packed": True, "packed_attention": "flash"},
    "packed_flash_fused_rotary": {
        "packed": True,
        "packed_attention": "flash",
        "fuse_projections": True,
        "packed_rotary": "triton",
    },
}
"""The scoring paths compared, as transformers-backend settings."""

GQA_LLAMA = {
    "hidden_size": 512,
    "intermediate_size": 1024,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "initializer_range": 0.1,
    "rope_theta": 500000.0,
}
"""A Llama-shaped model with grouped-query attention (four query heads per key/value head, head
dimension 64) and peaked predictions."""


def workload(vocab: int, *, seed: int = 0) -> list[ScoringRequest]:
    """Requests whose prompts share prefixes of different lengths, as GEM's do: a 90-token
    system prompt for all, a synopsis of 70 to 130 tokens per paper (so the cached prefixes of
    one forward differ in length), three requests per paper with tails and targets of different
    lengths; and two requests that share nothing (no cached prefix)."""
    rng = random.Random(seed)

    def tokens(n: int) -> list[int]:
        return [rng.randrange(vocab) for _ in range(n)]

    system = tokens(90)
    requests = []
    for paper in range(4):
        synopsis = tokens(70 + 20 * paper)
        for _ in range(3):
            tail = tokens(rng.randrange(5, 60))
            target = tuple(tokens(rng.randrange(1, 30)))
            requests.append(ScoringRequest(tuple(system + synopsis + tail), target))
    requests.append(ScoringRequest(tuple(tokens(9)), tuple(tokens(4))))
    requests.append(ScoringRequest(tuple(tokens(33)), tuple(tokens(12))))
    return requests


def random_llama(device: str, dtype: torch.dtype) -> Any:
    """:data:`GQA_LLAMA` with seeded random weights on ``device`` in ``dtype``."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=4096, **GQA_LLAMA)
    return LlamaForCausalLM(config).to(device=device, dtype=dtype).eval()


def embedded_smollm2(device: str, dtype: torch.dtype) -> Any:
    """The embedded SmolLM2-135M-Instruct on ``device`` in ``dtype``."""
    from scorers.lm.embedded import materialize_embedded
    from scorers.lm.loading import load_pretrained

    model, _ = load_pretrained(
        materialize_embedded(), dtype=str(dtype).removeprefix("torch."), device=device
    )
    return model


MODELS = {"smollm2_135m": embedded_smollm2, "random_gqa_llama": random_llama}


def agreement(
    model: Any, requests: list[ScoringRequest], variants: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Per variant: the largest and mean |difference| per target token from the plain forward,
    the rows and prefixes its forwards ran, or why it was not run (a variant the model or device
    does not support)."""
    reference = baseline_logprobs(model, requests)
    found: dict[str, dict[str, Any]] = {}
    for name, settings in variants.items():
        why = None
        if settings.get("packed") and packed_support(model):
            why = packed_support(model)
        elif settings.get("packed_attention") == "flash" and not flash_available(model):
            why = "FlashAttention needs a CUDA device and bfloat16 or float16"
        elif settings.get("packed_rotary") == "triton":
            why = triton_rotary_support(next(model.parameters()).device)
        if why:
            found[name] = {"not_run": why}
            continue
        lm = HFEvaluationLM(
            model,
            SimpleNamespace(pad_token_id=0, eos_token_id=0),
            identity=name,
            max_batch_tokens=4096,
            **settings,
        )
        totals = [r.total for r in lm.target_logprobs(requests)]
        per_token = [
            abs(ours - theirs) / len(request.target_ids)
            for ours, theirs, request in zip(totals, reference, requests, strict=True)
        ]
        found[name] = {
            "max_abs_per_token": max(per_token),
            "mean_abs_per_token": sum(per_token) / len(per_token),
            "forwards": lm.stats["forwards"],
            "padded_prefix_tokens": lm.stats["padded_prefix_tokens"],
        }
    return found


def within_tolerance(found: dict[str, dict[str, Any]], dtype: str) -> list[str]:
    """The variants of ``found`` that ran and disagree beyond :data:`TOLERANCE` for ``dtype``."""
    return [
        name
        for name, row in found.items()
        if "not_run" not in row and row["max_abs_per_token"] > TOLERANCE[dtype]
    ]


SUITE_GPU_TESTS = ("tests/lm/test_kernel_agreement.py", "tests/lm/test_rotary_kernel.py")
"""The suite's test files with GPU tests of the kernels (the tests named ``*on_the_gpu*``)."""


def suite_gpu_tests(repo: Path) -> dict[str, Any]:
    """Run the suite's GPU tests (``pytest -k on_the_gpu`` on :data:`SUITE_GPU_TESTS`, skipped
    without CUDA) in a subprocess; their outcome: pytest's exit status, how many tests ran,
    passed, were skipped, and the failed ones by name (``not_run`` with why where pytest is not
    installed)."""
    if importlib.util.find_spec("pytest") is None:
        return {"not_run": "pytest is not installed"}
    with tempfile.TemporaryDirectory() as folder:
        junit = Path(folder) / "junit.xml"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "on_the_gpu"]
            + [f"--junitxml={junit}", *SUITE_GPU_TESTS],
            cwd=repo,
            capture_output=True,
            text=True,
        )
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n", flush=True)
        if not junit.exists():
            return {"exit": done.returncode, "tests": 0, "error": done.stderr[-1000:]}
        cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    failed = [
        f"{case.get('classname')}::{case.get('name')}"
        for case in cases
        if case.find("failure") is not None or case.find("error") is not None
    ]
    skipped = sum(case.find("skipped") is not None for case in cases)
    return {
        "exit": done.returncode,
        "tests": len(cases),
        "passed": len(cases) - len(failed) - skipped,
        "skipped": skipped,
        "failed": failed,
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--out", type=Path, default=None, help="agreement.json to write")
    parser.add_argument(
        "--suite-tests",
        action="store_true",
        help="then run the suite's GPU tests of the kernels (pytest -k on_the_gpu) and record "
        "their outcome beside the agreement (a failure fails this run)",
    )
    args = parser.parse_args(argv)
    provenance = Run(args.out.parent, settings=vars(args)) if args.out else None
    report: dict[str, Any] = {"device": args.device, "tolerance": TOLERANCE, "results": {}}
    failures = []
    for model_name in args.models.split(","):
        for dtype in args.dtypes.split(","):
            model = MODELS[model_name](args.device, getattr(torch, dtype))
            requests = workload(model.config.vocab_size)
            found = agreement(model, requests, VARIANTS)
            report["results"][f"{model_name}/{dtype}"] = found
            failures += [f"{model_name}/{dtype}/{name}" for name in within_tolerance(found, dtype)]
            for name, row in found.items():
                print(f"{model_name} {dtype} {name}: {row}", flush=True)
            del model
    report["disagree"] = failures
    if args.suite_tests:
        report["suite_gpu_tests"] = suite_gpu_tests(Path(__file__).resolve().parents[2])
        if report["suite_gpu_tests"].get("exit", 0) != 0:
            failures.append(f"suite GPU tests: {report['suite_gpu_tests']}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        provenance.finish()
    if failures:
        raise SystemExit(f"beyond tolerance or failed: {failures}")
    return report


if __name__ == "__main__":
    main()
