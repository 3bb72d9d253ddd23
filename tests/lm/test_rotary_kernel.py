"""The Triton rotary kernel (scorers/lm/hf/rotary_kernel.py) rotates queries and keys as
transformers' Llama does, checked on CPU under Triton's interpreter; packed forwards that use it
score what transformers' forward scores."""

from __future__ import annotations

import pytest
import torch
import triton  # noqa: F401  (a test dependency: the kernel runs under its interpreter)
from test_packed import TOKENS, small_model, totals, workload

from scorers.lm.hf import HFEvaluationLM, rotary_kernel
from scorers.lm.hf import packed_decoder as packed
from scorers.lm.hf.rotary_kernel import half_tables, rotary_reference, rotate_queries_keys_


@pytest.fixture
def interpreted(monkeypatch):
    """Triton's interpreter: the kernel runs on CPU tensors."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def tables(tokens: int, head_dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotary tables as transformers builds them: ``cat((freqs, freqs))``, positions shuffled
    (packed rows restart their positions)."""
    positions = torch.randperm(tokens).float()
    inverse = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
    freqs = positions[:, None] * inverse[None]
    angles = torch.cat((freqs, freqs), dim=-1)
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half_form(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``x * cos + rotate_half(x) * sin``, in float32."""
    half = x.shape[-1] // 2
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x.float() * cos.float()[:, None] + rotated.float() * sin.float()[:, None]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("head_dim", [64, 96])
def test_kernel_rotates_fused_queries_and_keys_in_place(interpreted, dtype, head_dim):
    """Queries and keys as strided views of one fused projection output (37 tokens: not a
    whole number of blocks; head dim 96: a half of 48 is not a power of two): rotated in place as
    transformers rotates them, the values beside them untouched."""
    torch.manual_seed(0)
    tokens, q_heads, kv_heads = 37, 4, 2
    fused = torch.randn(tokens, (q_heads + 2 * kv_heads) * head_dim, dtype=dtype)
    q = fused[:, : q_heads * head_dim].view(tokens, q_heads, head_dim)
    k = fused[:, q_heads * head_dim : (q_heads + kv_heads) * head_dim].view(
        tokens, kv_heads, head_dim
    )
    values = fused[:, (q_heads + kv_heads) * head_dim :].clone()
    cos, sin = tables(tokens, head_dim, dtype)
    cos_half, sin_half = half_tables(cos, sin)
    expected_q, expected_k = rotate_half_form(q, cos, sin), rotate_half_form(k, cos, sin)
    reference_q = rotary_reference(q, cos_half, sin_half)
    rotate_queries_keys_(q, k, cos_half, sin_half)
    assert torch.equal(fused[:, (q_heads + kv_heads) * head_dim :], values)
    if dtype == torch.float32:
        assert torch.allclose(q, expected_q, atol=1e-6)
        assert torch.allclose(k, expected_k, atol=1e-6)
        assert torch.equal(q, reference_q)
    else:  # one rounding to bfloat16 (the interpreter may round the other way: one unit)
        ulp = 2.0**-7
        assert torch.allclose(q.float(), expected_q, rtol=ulp, atol=1e-6)
        assert torch.allclose(k.float(), expected_k, rtol=ulp, atol=1e-6)
    # nothing happened where nothing should: the identity at position 0 (cos 1, sin 0)
    zero = torch.zeros(1, head_dim // 2, dtype=dtype)
    one_q, one_k = (
        torch.randn(1, 2, head_dim, dtype=dtype),
        torch.randn(1, 1, head_dim, dtype=dtype),
    )
    before = one_q.clone(), one_k.clone()
    rotate_queries_keys_(one_q, one_k, zero + 1, zero)
    assert torch.equal(one_q, before[0]) and torch.equal(one_k, before[1])


@pytest.mark.parametrize("capability", [80, 90])
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_kernel_compiles_for_the_gpu_with_128_bit_loads(monkeypatch, capability, dtype):
    """The kernel as the GPU runs it, compiled here to machine code for A100 (sm_80) and
    H100/H200 (sm_90) by Triton's own ptxas (no GPU needed), specialised as Triton specialises a
    launch whose pointers and strides are multiples of 16 (every layout packed forwards give it):
    each thread moves its halves and tables in 128-bit loads and stores, no element at a time
    (what a bandwidth-bound kernel needs); one branch each for queries and keys."""
    import re
    from collections import Counter

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "1")
    kernel = rotary_kernel._kernel()
    names = kernel.arg_names
    constants = {"HALF": 64, "BLOCK_T": rotary_kernel.BLOCK_TOKENS, "BLOCK_D": 64}
    signature = {
        name: f"*{dtype}" if name.endswith("_ptr") else "constexpr" if name in constants else "i32"
        for name in names
    }
    aligned = [["tt.divisibility", 16]]
    source = ASTSource(
        fn=kernel,
        signature=signature,
        constexprs={(names.index(name),): value for name, value in constants.items()},
        attrs={(i,): aligned for i, name in enumerate(names) if name.endswith(("_ptr", "_stride"))},
    )
    compiled = triton.compile(source, target=GPUTarget("cuda", capability, 32))
    moves = Counter(re.findall(r"\b((?:ld|st)\.global[\w.]*)", compiled.asm["ptx"]))
    assert moves == {"ld.global.v4.b32": 8, "st.global.v4.b32": 4}, moves
    assert compiled.asm["cubin"]  # assembled to machine code


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_kernel_on_the_gpu_rotates_as_transformers(dtype):
    """The compiled kernel where it runs: 8B-shaped heads (32 query, 8 key/value, dimension 128)
    as strided views of one fused projection, 1,000 tokens; within one rounding of the
    tensors' type of transformers' rotation, the values untouched."""
    torch.manual_seed(0)
    tokens, q_heads, kv_heads, head_dim = 1000, 32, 8, 128
    fused = torch.randn(tokens, (q_heads + 2 * kv_heads) * head_dim, dtype=dtype, device="cuda")
    q = fused[:, : q_heads * head_dim].view(tokens, q_heads, head_dim)
    k = fused[:, q_heads * head_dim : (q_heads + kv_heads) * head_dim].view(
        tokens, kv_heads, head_dim
    )
    values = fused[:, (q_heads + kv_heads) * head_dim :].clone()
    cos, sin = (t.cuda() for t in tables(tokens, head_dim, dtype))
    expected_q, expected_k = rotate_half_form(q, cos, sin), rotate_half_form(k, cos, sin)
    rotate_queries_keys_(q, k, *half_tables(cos, sin))
    torch.cuda.synchronize()
    assert torch.equal(fused[:, (q_heads + kv_heads) * head_dim :], values)
    rtol = {torch.float32: 1e-6, torch.bfloat16: 2.0**-7, torch.float16: 2.0**-10}[dtype]
    assert torch.allclose(q.float(), expected_q, rtol=rtol, atol=1e-5)
    assert torch.allclose(k.float(), expected_k, rtol=rtol, atol=1e-5)


def test_kernel_refuses_what_it_does_not_compute(interpreted):
    q, k = torch.zeros(3, 2, 8), torch.zeros(3, 1, 8)
    cos, sin = torch.ones(3, 4), torch.zeros(3, 4)
    with pytest.raises(ValueError, match="do not agree"):
        rotate_queries_keys_(q, torch.zeros(2, 1, 8), cos, sin)
    with pytest.raises(ValueError, match=r"not \[3, 4\]"):
        rotate_queries_keys_(q, k, torch.ones(3, 3), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="contiguous"):
        rotate_queries_keys_(q.transpose(1, 2).contiguous().transpose(1, 2), k, cos, sin)
    with pytest.raises(ValueError, match="even head dimension"):
        rotate_queries_keys_(torch.zeros(3, 2, 7), torch.zeros(3, 1, 7), cos, sin)
    rotate_queries_keys_(torch.zeros(0, 2, 8), torch.zeros(0, 1, 8), cos[:0], sin[:0])  # no-op
    # tables whose halves differ (a rotary scheme the half-table kernel does not compute)
    uneven = torch.arange(8.0)[None].repeat(3, 1)
    with pytest.raises(ValueError, match="cos table's second half does not repeat"):
        half_tables(uneven, uneven)


def test_kernel_needs_cuda_or_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    why = rotary_kernel.triton_rotary_support(torch.device("cpu"))
    assert why is not None and "CUDA" in why
    with pytest.raises(ValueError, match="Triton rotary kernel cannot run: .*CUDA"):
        packed.PackedDecoder(small_model(), rotary="triton")
    with pytest.raises(ValueError, match="rotary must be one of"):
        packed.PackedDecoder(small_model(), rotary="fused")
    with pytest.raises(ValueError, match="packed_rotary must be one of"):
        HFEvaluationLM(small_model(), TOKENS, identity="t", packed_rotary="fused")
    with pytest.raises(ValueError, match="applies to packed forwards"):
        HFEvaluationLM(small_model(), TOKENS, identity="t", packed=False, packed_rotary="triton")


def plain_and_rotated(model, **options) -> tuple[list[float], HFEvaluationLM]:
    """The workload's scores by transformers' own forward, and a packed backend on ``model``
    that rotates by the kernel (``options``: more backend settings)."""
    expected = totals(HFEvaluationLM(model, TOKENS, identity="t", prefix_reuse=False), workload())
    rotated = HFEvaluationLM(
        model,
        TOKENS,
        identity="t",
        max_batch_tokens=4096,
        packed=True,
        packed_rotary="triton",
        **options,
    )
    return expected, rotated


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("fuse", [False, True])
def test_packed_forwards_with_the_kernel_score_as_transformers(interpreted, kind, fuse):
    """Llama 3's scaled rotary tables and Qwen2's biased projections; with fused projections
    the kernel rotates the fused output's query and key columns in place (weights drawn wider
    than the default so that positions move the scores: see the next test)."""
    expected, ours = plain_and_rotated(
        small_model(kind, initializer_range=0.1), fuse_projections=fuse
    )
    assert ours.forwards.decoder.rotary_kernel and ours.options.packed_rotary == "triton"
    assert totals(ours, workload()) == pytest.approx(expected, abs=1e-4)


def test_a_wrong_rotation_is_caught(interpreted, monkeypatch):
    """The packed comparison above can fail: a kernel that swaps sin's sign (rotates the other
    way) is off by far more than its tolerance."""
    real = packed.rotate_queries_keys_
    monkeypatch.setattr(packed, "rotate_queries_keys_", lambda q, k, c, s: real(q, k, c, -s))
    expected, wrong = plain_and_rotated(small_model(initializer_range=0.1))
    off = max(abs(a - b) for a, b in zip(totals(wrong, workload()), expected, strict=True))
    assert off > 100 * 1e-4


@pytest.mark.slow
def test_compiled_projections_with_the_kernel_score_as_transformers(interpreted):
    """Compiled, the projections alone are compiled and the kernel rotates their output."""
    expected, ours = plain_and_rotated(
        small_model(initializer_range=0.1), compile_layers=True, fuse_projections=True
    )
    assert totals(ours, workload()) == pytest.approx(expected, abs=1e-4)
