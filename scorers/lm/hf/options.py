"""The transformers backend's settings, in one dataclass.

Every setting is a keyword of :class:`~scorers.lm.hf.model.HFEvaluationLM` (and so of
``scorer_lm_args``); ``None`` means "chosen for the device and the model", which
:meth:`HFOptions.resolved` does once when the backend is built, so a backend's settings can be
read back as they are in force.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from scorers.lm.hf.packed_decoder import ATTENTION_KINDS, ROTARY_KINDS, packed_support
from scorers.lm.hf.prefix_tree import DEFAULT_MIN_SHARED, supports_prefix_reuse

__all__ = ["DEFAULT_FORWARD_COST", "DEFAULT_PACKED_FORWARD_COST", "HFOptions"]

DEFAULT_FORWARD_COST = 512
"""What one more scoring forward costs, in padded tokens
(:func:`~scorers.lm.hf.budget.least_padding_batches`)."""

DEFAULT_PACKED_FORWARD_COST = 4096
"""The same for packed forwards (``packed``), where padding costs attention at most, so fuller
forwards pay (``benchmarks/speed/scoring_gpu.py``)."""


@dataclass(frozen=True)
class HFOptions:
    """How the transformers backend batches, projects, caches and decodes.

    Args:
        max_batch_tokens: padded tokens per scoring forward (rows x width). Default: 1 on a CPU
            (compute-bound at one row: padding would only add work), 16,384 on a GPU.
        generation_batch_tokens: rows x (longest prompt + ``max_new_tokens``) per decoding
            batch; bounds one batch's key/value memory. Default 65,536.
        fast_decoding: decode with :func:`~scorers.lm.hf.decoding.decode` (preallocated cache,
            finished rows leave the batch); models with sliding-window or non-attention layers
            use transformers' ``generate`` whatever this says. Default True.
        projection_chunk: target positions projected onto the vocabulary at a time. Default
            1,024.
        vocab_chunk: vocabulary rows of the output head per slice of the log-normaliser (0: the
            whole vocabulary in one product). Default: 1,024 on a CPU, 0 on a GPU.
        padding_side: where padded scoring rows are padded, ``"right"`` or ``"left"``. Default
            ``"right"``.
        prefix_reuse: compute each prompt prefix shared by several requests once; off for models
            whose layers do not all attend over the whole prefix. Default True.
        min_shared_prefix: the fewest tokens a shared prefix must have to be computed on its own.
        forward_cost_tokens: padded tokens one more forward is worth when batching. Default 512,
            4,096 for packed forwards.
        compile_layers: ``torch.compile`` the layers' work around attention. Default False.
        gqa_on_gpu: grouped-query attention under a mask without repeated key/value heads on a
            GPU too (always on a CPU). Default False.
        packed: run scoring forwards packed, without padding
            (:mod:`scorers.lm.hf.packed_decoder`). Default: on a GPU for the models it covers.
        packed_attention: one of :data:`~scorers.lm.hf.packed_decoder.ATTENTION_KINDS`.
        fuse_projections: in packed forwards, the query/key/value projections as one matrix
            product and the gate/up projections as one; the model's own projections become
            views of the fused weights (no weight held twice). Default False.
        packed_rotary: in packed forwards, one of
            :data:`~scorers.lm.hf.packed_decoder.ROTARY_KINDS`: ``"triton"`` rotates queries and
            keys in place by one Triton kernel (CUDA only). Default ``"torch"``.

    Raises:
        ValueError: a ``padding_side``, ``packed_attention`` or ``packed_rotary`` that does not
            exist, a size that is not positive, or ``fuse_projections`` or a ``packed_rotary``
            other than ``"torch"`` without packed forwards.
    """

    max_batch_tokens: int | None = None
    generation_batch_tokens: int = 65536
    fast_decoding: bool = True
    projection_chunk: int = 1024
    vocab_chunk: int | None = None
    padding_side: str = "right"
    prefix_reuse: bool = True
    min_shared_prefix: int = DEFAULT_MIN_SHARED
    forward_cost_tokens: int | None = None
    compile_layers: bool = False
    gqa_on_gpu: bool = False
    packed: bool | None = None
    packed_attention: str = "auto"
    fuse_projections: bool = False
    packed_rotary: str = "torch"

    def __post_init__(self) -> None:
        if self.padding_side not in ("left", "right"):
            raise ValueError(f"padding_side must be 'left' or 'right', got {self.padding_side!r}")
        if self.packed_attention not in ATTENTION_KINDS:
            raise ValueError(
                f"packed_attention must be one of {ATTENTION_KINDS}, got {self.packed_attention!r}"
            )
        if self.packed_rotary not in ROTARY_KINDS:
            raise ValueError(
                f"packed_rotary must be one of {ROTARY_KINDS}, got {self.packed_rotary!r}"
            )
        for name in ("max_batch_tokens", "generation_batch_tokens", "projection_chunk"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        for name in ("vocab_chunk", "min_shared_prefix", "forward_cost_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")

    def resolved(self, model: Any) -> HFOptions:
        """These options with every device- or model-dependent default chosen for ``model``,
        and the reuse settings off where its layers do not allow them."""
        on_cpu = next(model.parameters()).device.type == "cpu"
        packed = self.packed
        if packed is None:
            packed = not on_cpu and packed_support(model) is None
        forward_cost = self.forward_cost_tokens
        if forward_cost is None:
            forward_cost = DEFAULT_PACKED_FORWARD_COST if packed else DEFAULT_FORWARD_COST
        if self.fuse_projections and not packed:
            raise ValueError("fuse_projections applies to packed forwards: packed is off")
        if self.packed_rotary != "torch" and not packed:
            raise ValueError(
                f"packed_rotary={self.packed_rotary!r} applies to packed forwards: packed is off"
            )
        full_attention = supports_prefix_reuse(model.config)
        return dataclasses.replace(
            self,
            max_batch_tokens=(
                self.max_batch_tokens
                if self.max_batch_tokens is not None
                else (1 if on_cpu else 16384)
            ),
            # a CPU holds [rows x 1024] logits at a time instead of [rows x vocabulary]; on a
            # GPU the whole vocabulary in one product avoids many small kernels
            vocab_chunk=self.vocab_chunk
            if self.vocab_chunk is not None
            else (1024 if on_cpu else 0),
            packed=packed,
            forward_cost_tokens=forward_cost,
            prefix_reuse=self.prefix_reuse and full_attention,
            fast_decoding=self.fast_decoding and full_attention,
        )
