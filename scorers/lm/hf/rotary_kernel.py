"""Rotary position embedding applied to packed queries and keys in place, by one Triton kernel.

Packed forwards (:mod:`scorers.lm.hf.packed_decoder`) rotate queries and keys as transformers'
Llama does: ``x * cos + rotate_half(x) * sin``. Compiled, inductor turns that into one pointwise
kernel for the queries and one for the keys; on the 8B scoring workload on one H100 the two took
11% of the GPU's time at well under its memory bandwidth
(``benchmarks/speed/results/scoring_gpu_h100/profile.txt``). Here one launch rotates the
queries and keys of every token: each program takes a block of tokens and one head (query and
key heads numbered in one range), loads the first halves of the cos/sin tables for its tokens
once and each head's two halves once, and writes the rotated halves back::

    x1' = x1 * cos - x2 * sin        x2' = x2 * cos + x1 * sin

in float32, rounded once to the tensors' type (as inductor's kernel does; transformers' eager
forward rounds after each product). It holds because transformers' rotary tables repeat their
first half (``cat((freqs, freqs))``), which :func:`half_tables` checks rather than assumes.

Queries and keys may be strided views (the fused query/key/value product's columns); each head's
dimensions must be contiguous. Runs on CUDA tensors, or on CPU tensors under Triton's interpreter
(``TRITON_INTERPRET=1``, how the tests check it).
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import torch

__all__ = ["half_tables", "rotary_reference", "rotate_queries_keys_", "triton_rotary_support"]

BLOCK_TOKENS = 32
"""Tokens per program (by a head): 32 tokens x 64 dimensions of bfloat16 halves are 4 KiB per
load."""

_KERNELS: dict[bool, Any] = {}


def _interpreted() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def triton_rotary_support(device: torch.device) -> str | None:
    """None when the kernel can run on ``device``; otherwise why not."""
    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed"
    if device.type != "cuda" and not _interpreted():
        return f"the kernel runs on CUDA devices (or under TRITON_INTERPRET=1), not {device.type}"
    return None


def _kernel() -> Any:
    """The compiled kernel (built on first use, once per interpreter setting: Triton decides
    at definition whether a kernel is interpreted)."""
    interpreted = _interpreted()
    if interpreted in _KERNELS:
        return _KERNELS[interpreted]
    import triton
    import triton.language as tl

    @triton.jit
    def rotary(
        q_ptr,
        k_ptr,
        cos_ptr,
        sin_ptr,
        tokens,
        q_heads,
        q_token_stride,
        q_head_stride,
        k_token_stride,
        k_head_stride,
        cos_stride,
        sin_stride,
        HALF: tl.constexpr,
        BLOCK_T: tl.constexpr,
        BLOCK_D: tl.constexpr,
    ):
        head = tl.program_id(1)
        # token offsets in 64 bits: tokens x row stride passes 2**31 at ~350k tokens of a
        # fused 8B projection (6,144 columns)
        t = (tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)[:, None]).to(tl.int64)
        d = tl.arange(0, BLOCK_D)[None, :]
        mask = (t < tokens) & (d < HALF)
        head = head.to(tl.int64)
        if head < q_heads:
            base = q_ptr + t * q_token_stride + head * q_head_stride
        else:
            base = k_ptr + t * k_token_stride + (head - q_heads) * k_head_stride
        cos = tl.load(cos_ptr + t * cos_stride + d, mask=mask, other=0.0).to(tl.float32)
        sin = tl.load(sin_ptr + t * sin_stride + d, mask=mask, other=0.0).to(tl.float32)
        x1 = tl.load(base + d, mask=mask, other=0.0).to(tl.float32)
        x2 = tl.load(base + HALF + d, mask=mask, other=0.0).to(tl.float32)
        out = base.dtype.element_ty
        tl.store(base + d, (x1 * cos - x2 * sin).to(out), mask=mask)
        tl.store(base + HALF + d, (x2 * cos + x1 * sin).to(out), mask=mask)

    _KERNELS[interpreted] = rotary
    return rotary


def half_tables(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The first halves of rotary tables ``[..., head dim]`` (views, no copy), after checking
    that each table's second half repeats its first, which the half-table rotation needs.

    Raises:
        ValueError: a table's halves differ (a rotary scheme this kernel does not compute).
    """
    half = cos.shape[-1] // 2
    for name, table in (("cos", cos), ("sin", sin)):
        if table.shape[-1] % 2 or not torch.equal(table[..., :half], table[..., half:]):
            raise ValueError(
                f"the rotary {name} table's second half does not repeat its first; the half-table "
                "rotary kernel does not compute this model's position embedding"
            )
    return cos[..., :half], sin[..., :half]


def rotary_reference(
    x: torch.Tensor, cos_half: torch.Tensor, sin_half: torch.Tensor
) -> torch.Tensor:
    """What the kernel computes for ``x`` ``[tokens, heads, head dim]`` (``cos_half``,
    ``sin_half``: ``[tokens, head dim / 2]``), in PyTorch: float32, rounded once."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half].float(), x[..., half:].float()
    c, s = cos_half.float()[:, None], sin_half.float()[:, None]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)


def rotate_queries_keys_(
    q: torch.Tensor, k: torch.Tensor, cos_half: torch.Tensor, sin_half: torch.Tensor
) -> None:
    """Rotate queries ``q`` ``[tokens, query heads, head dim]`` and keys ``k`` ``[tokens,
    key/value heads, head dim]`` in place, in one launch (``cos_half``, ``sin_half``:
    ``[tokens, head dim / 2]``, as :func:`half_tables` gives).

    Raises:
        ValueError: shapes that do not agree, a head's dimensions not contiguous, an odd head
            dimension, or tensors on different devices.
    """
    tokens, q_heads, head_dim = q.shape
    if k.shape[0] != tokens or k.shape[2] != head_dim:
        raise ValueError(f"queries {tuple(q.shape)} and keys {tuple(k.shape)} do not agree")
    half = head_dim // 2
    if head_dim % 2:
        raise ValueError(f"rotary needs an even head dimension, got {head_dim}")
    if cos_half.shape != (tokens, half) or sin_half.shape != cos_half.shape:
        raise ValueError(
            f"rotary tables {tuple(cos_half.shape)}/{tuple(sin_half.shape)} are not "
            f"[{tokens}, {half}]"
        )
    if q.stride(2) != 1 or k.stride(2) != 1 or cos_half.stride(1) != 1 or sin_half.stride(1) != 1:
        raise ValueError("each head's dimensions (and each table row) must be contiguous")
    if len({q.device, k.device, cos_half.device, sin_half.device}) != 1:
        raise ValueError("queries, keys and tables must be on one device")
    if tokens == 0:
        return
    import triton

    grid = (triton.cdiv(tokens, BLOCK_TOKENS), q_heads + k.shape[1])
    _kernel()[grid](
        q,
        k,
        cos_half,
        sin_half,
        tokens,
        q_heads,
        q.stride(0),
        q.stride(1),
        k.stride(0),
        k.stride(1),
        cos_half.stride(0),
        sin_half.stride(0),
        HALF=half,
        BLOCK_T=BLOCK_TOKENS,
        BLOCK_D=triton.next_power_of_2(half),
    )
