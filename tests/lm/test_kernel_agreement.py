"""The scoring paths against the plain transformers forward (benchmarks/speed/kernel_agreement.py):
on a CPU in float32 for the padded and masked paths, with a stand-in for FlashAttention's kernel
aligned both ways (the right one agrees, a top-left one is caught); on a CUDA device, every path
in float32 and bfloat16, FlashAttention's real kernel included (skipped without a GPU)."""

from __future__ import annotations

import pytest
import torch

from conftest import load_benchmark, plain_varlen_attention
from scorers.lm.hf import packed_attention

kernels = load_benchmark("speed.kernel_agreement")

CUDA = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.fixture(scope="module")
def gqa_model():
    return kernels.random_llama("cpu", torch.float32)


def test_workload_has_prefixes_of_different_lengths_and_rows_without(gqa_model):
    from scorers.lm.hf.prefix_tree import scoring_plan

    requests = kernels.workload(gqa_model.config.vocab_size)
    plan, _ = scoring_plan(requests, min_shared=64)
    depths = sorted({child.depth for node in plan.children for child in node.children})
    assert len(depths) == 4  # one synopsis length per paper
    assert len(plan.leaves) == 2  # the two requests that share nothing


def test_padded_and_masked_paths_agree_in_float32_on_a_cpu(gqa_model):
    requests = kernels.workload(gqa_model.config.vocab_size)
    found = kernels.agreement(gqa_model, requests, kernels.VARIANTS)
    for flash in ("packed_flash", "packed_flash_fused_rotary"):
        assert found[flash] == {
            "not_run": "FlashAttention needs a CUDA device and bfloat16 or float16"
        }
    assert kernels.within_tolerance(found, "float32") == []
    for name in ("padded", "packed_masked"):
        assert found[name]["max_abs_per_token"] < kernels.TOLERANCE["float32"]
    # rows on cached prefixes of different lengths shared forwards (padded prefixes)
    assert found["padded"]["padded_prefix_tokens"] > 0


def test_a_misaligned_flash_kernel_is_caught(gqa_model, monkeypatch):
    """The flash layout through a plain kernel: aligned as FlashAttention aligns, it agrees;
    aligned to the top left, rows on a cached prefix lose most of it and the check fails by far
    more than the tolerance."""
    monkeypatch.setattr(kernels, "flash_available", lambda model: True)
    monkeypatch.setattr(
        packed_attention, "_flash_varlen", plain_varlen_attention(bottom_right=True)
    )
    from scorers.lm.hf import packed_decoder

    monkeypatch.setattr(packed_decoder, "flash_available", lambda model: True)
    requests = kernels.workload(gqa_model.config.vocab_size)
    flash = {"packed_flash": kernels.VARIANTS["packed_flash"]}
    right = kernels.agreement(gqa_model, requests, flash)
    assert kernels.within_tolerance(right, "float32") == []
    monkeypatch.setattr(
        packed_attention, "_flash_varlen", plain_varlen_attention(bottom_right=False)
    )
    wrong = kernels.agreement(gqa_model, requests, flash)
    assert kernels.within_tolerance(wrong, "float32") == ["packed_flash"]
    assert wrong["packed_flash"]["max_abs_per_token"] > 10 * kernels.TOLERANCE["bfloat16"]


@CUDA
@pytest.mark.slow  # loads the embedded model
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("model_name", list(kernels.MODELS))
def test_every_path_agrees_on_the_gpu(model_name, dtype):
    model = kernels.MODELS[model_name]("cuda", getattr(torch, dtype))
    found = kernels.agreement(model, kernels.workload(model.config.vocab_size), kernels.VARIANTS)
    assert kernels.within_tolerance(found, dtype) == [], found
    if dtype == "bfloat16":
        for flash in ("packed_flash", "packed_flash_fused_rotary"):
            assert "not_run" not in found[flash], found[flash]


def test_suite_gpu_tests_are_recorded_with_their_failures(tmp_path, monkeypatch):
    """The record of the suite's GPU tests counts what pytest ran (only the tests named
    ``*on_the_gpu*``) and names a failure; pytest's exit status makes the run fail."""
    tests = tmp_path / "test_gpu_stand_in.py"
    tests.write_text(
        "import pytest\n"
        "def test_passes_on_the_gpu(): pass\n"
        "def test_skips_on_the_gpu(): pytest.skip('no CUDA')\n"
        "def test_fails_on_the_gpu(): assert False\n"
        "def test_not_selected(): assert False\n"
    )
    monkeypatch.setattr(kernels, "SUITE_GPU_TESTS", (str(tests),))
    record = kernels.suite_gpu_tests(tmp_path)
    assert record == {
        "exit": 1,
        "tests": 3,
        "passed": 1,
        "skipped": 1,
        "failed": ["test_gpu_stand_in::test_fails_on_the_gpu"],
    }
