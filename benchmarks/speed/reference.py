"""The reference scoring computation every benchmark measures against: the GEM authors'
notebook, one request at a time."""

from __future__ import annotations

from typing import Any

import torch

from scorers.lm.base import ScoringRequest


def baseline_logprobs(model: Any, requests: list[ScoringRequest]) -> list[float]:
    """Summed target log-probabilities the authors' way: batch 1, one full forward per request,
    full-vocabulary log-softmax over every position, gather."""
    device = next(model.parameters()).device
    totals = []
    with torch.inference_mode():
        for request in requests:
            ids = torch.tensor(
                [list(request.context_ids) + list(request.target_ids)], device=device
            )
            logprobs = torch.log_softmax(model(ids).logits[0].float(), dim=-1)
            start = len(request.context_ids)
            positions = torch.arange(start - 1, ids.shape[1] - 1, device=device)
            totals.append(float(logprobs[positions, ids[0, start:]].sum()))
    return totals
