"""Grouped-query attention with a padding mask, without copying keys and values, on a CPU.

transformers' ``sdpa`` attention passes ``enable_gqa=True`` to PyTorch only when there is no
attention mask; with one (every padded batch: batched generation, batched scoring) it first
repeats each key/value head for its query heads. For SmolLM2-135M (9 query heads, 3 key/value
heads) decoding a batch of ten 1,100-token prompts, that copy took 280 of 985 ms per step, and
attention over the copies most of the rest. PyTorch's CPU kernel accepts a mask together with
``enable_gqa`` and gives bitwise-identical outputs (each query head reads the same key/value
head either way; ``tests/lm/test_decoding.py`` checks the logits), about 4.5x faster at
decode shapes.

:func:`use_gqa_attention` switches a loaded model on a CPU to this attention; everything it
does not cover (GPU, position biases, paged caches, heads with different key and value sizes)
goes to transformers' own ``sdpa`` function unchanged.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

__all__ = [
    "GQA_SDPA",
    "GQA_SDPA_ANY_DEVICE",
    "gqa_sdpa_attention_forward",
    "gqa_sdpa_attention_forward_any_device",
    "use_gqa_attention",
]

GQA_SDPA = "gem_tasks_gqa_sdpa"
"""The attention implementation's registered name."""


def gqa_sdpa_attention_forward(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    dropout: float = 0.0,
    scaling: float | None = None,
    is_causal: bool | None = None,
    *,
    any_device: bool = False,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' ``sdpa`` attention, with masked grouped-query attention on a CPU (or, with
    ``any_device``, on any device) done by PyTorch's kernel instead of repeated key/value
    heads."""
    groups = getattr(module, "num_key_value_groups", 1)
    plain = (
        groups > 1
        and attention_mask is not None
        and (any_device or query.device.type == "cpu")
        and kwargs.get("position_bias") is None
        and kwargs.get("cache") is None
        and key.shape[-1] == value.shape[-1]
        and not kwargs.get("output_attentions", False)
    )
    if not plain:
        return sdpa_attention_forward(
            module,
            query,
            key,
            value,
            attention_mask,
            dropout=dropout,
            scaling=scaling,
            is_causal=is_causal,
            **kwargs,
        )
    # with a mask transformers never asks the kernel for its causal flag: the mask holds it
    output = torch.nn.functional.scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask=attention_mask,
        dropout_p=dropout,
        scale=scaling,
        is_causal=False,
        enable_gqa=True,
    )
    return output.transpose(1, 2).contiguous(), None


def gqa_sdpa_attention_forward_any_device(*args: Any, **kwargs: Any) -> tuple[Any, None]:
    """:func:`gqa_sdpa_attention_forward` on every device (a GPU too)."""
    return gqa_sdpa_attention_forward(*args, any_device=True, **kwargs)


GQA_SDPA_ANY_DEVICE = "gem_tasks_gqa_sdpa_any_device"
"""The same attention on every device: whether PyTorch's GPU kernels take grouped heads with a
mask faster than transformers' repeated heads is what ``benchmarks/speed/scoring_gpu.py --gqa``
measures; it is opt-in until measured."""

AttentionInterface.register(GQA_SDPA, gqa_sdpa_attention_forward)
ALL_MASK_ATTENTION_FUNCTIONS.register(GQA_SDPA, sdpa_mask)
AttentionInterface.register(GQA_SDPA_ANY_DEVICE, gqa_sdpa_attention_forward_any_device)
ALL_MASK_ATTENTION_FUNCTIONS.register(GQA_SDPA_ANY_DEVICE, sdpa_mask)


def use_gqa_attention(model: Any, *, any_device: bool = False) -> bool:
    """Switch ``model`` to :data:`GQA_SDPA` when it runs ``sdpa`` attention on a CPU with grouped
    key/value heads (with ``any_device``, to :data:`GQA_SDPA_ANY_DEVICE` wherever it runs);
    returns whether the model now runs grouped-query attention under masks (it may have been
    switched before)."""
    config = model.config
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    on_cpu = next(model.parameters()).device.type == "cpu"
    current = getattr(config, "_attn_implementation", None)
    if current == GQA_SDPA_ANY_DEVICE or (current == GQA_SDPA and on_cpu):
        return True  # switched already (a second backend on the same model)
    if current != "sdpa":
        return False
    if not heads or kv_heads == heads or not (on_cpu or any_device):
        return False
    model.set_attn_implementation(GQA_SDPA_ANY_DEVICE if any_device else GQA_SDPA)
    return True
