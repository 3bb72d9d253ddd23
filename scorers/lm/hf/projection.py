"""Log-probabilities of target tokens from final hidden states, without a [batch x sequence x
vocabulary] tensor.

The output head is applied only at target positions, in row chunks and, where asked (a CPU by
default), in vocabulary slices with a running maximum: memory is O(rows of a chunk x slice) and
the result equals ``log_softmax(head(hidden))[token]`` up to summation order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

__all__ = ["TargetProjection", "sliced_logprobs"]


class TargetProjection:
    """``model``'s output head (with its logit scale and soft cap) applied at target positions.

    Args:
        model: a causal LM with ``get_output_embeddings()``.
        projection_chunk: target positions per product (>= 1).
        vocab_chunk: vocabulary rows of the head per slice (0: the whole vocabulary at once).
            Heads that are not a plain ``Linear`` are applied whole, whatever this says.
    """

    def __init__(self, model: Any, *, projection_chunk: int, vocab_chunk: int) -> None:
        self._head = model.get_output_embeddings()
        config = model.config
        self._softcap = getattr(config, "final_logit_softcapping", None)
        self._scale = getattr(config, "logit_scale", None)
        self.projection_chunk = projection_chunk
        self.vocab_chunk = vocab_chunk

    def _transform(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        if self._scale:
            logits = logits * self._scale
        if self._softcap:
            logits = torch.tanh(logits / self._softcap) * self._softcap
        return logits

    def __call__(self, hidden: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        """The log-probability of ``tokens[i]`` after hidden state ``hidden[i]`` (float32, one per
        row, on ``hidden``'s device)."""
        head = self._head
        sliceable = isinstance(head, torch.nn.Linear)  # else: one product through the module
        pieces = []
        for start in range(0, hidden.shape[0], self.projection_chunk):
            rows = hidden[start : start + self.projection_chunk]
            chunk_tokens = tokens[start : start + self.projection_chunk]
            if sliceable:
                step = self.vocab_chunk or head.weight.shape[0]
                pieces.append(sliced_logprobs(rows, chunk_tokens, head, step, self._transform))
                continue
            logits = self._transform(head(rows))
            picked = logits.gather(1, chunk_tokens[:, None]).squeeze(1)
            pieces.append(picked - torch.logsumexp(logits, dim=-1))
        return torch.cat(pieces)


def sliced_logprobs(
    rows: torch.Tensor,
    tokens: torch.Tensor,
    head: torch.nn.Linear,
    step: int,
    transform: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """``log softmax(transform(head(rows)))[tokens]`` computed over vocabulary slices of ``step``
    entries with a running maximum (exact up to summation order)."""
    count = rows.shape[0]
    picked = torch.zeros(count, dtype=torch.float32, device=rows.device)
    running_max = torch.full((count,), float("-inf"), device=rows.device)
    running_sum = torch.zeros(count, device=rows.device)
    for low in range(0, head.weight.shape[0], step):
        bias = head.bias[low : low + step] if head.bias is not None else None
        logits = transform(torch.nn.functional.linear(rows, head.weight[low : low + step], bias))
        inside = (tokens >= low) & (tokens < low + logits.shape[1])
        # gather and select rather than index the rows inside: no wait for the device
        local = (tokens - low).clamp(0, logits.shape[1] - 1)
        picked = torch.where(inside, logits.gather(1, local[:, None]).squeeze(1), picked)
        new_max = torch.maximum(running_max, logits.amax(dim=1))
        finite = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
        running_sum = running_sum * torch.exp(running_max - finite) + logits.sub_(
            finite[:, None]
        ).exp_().sum(dim=1)
        running_max = new_max
    finite = torch.where(torch.isfinite(running_max), running_max, torch.zeros_like(running_max))
    return picked - (running_sum.log() + finite)
