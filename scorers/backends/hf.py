"""Transformers implementation of the evaluation-LM protocol (CPU or GPU)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scorers.backends.base import (
    ChatMessage,
    GenerationSettings,
    LogprobResult,
    ScoringRequest,
)
from scorers.chat import generation_prompt_ids

__all__ = ["HFEvaluationLM", "token_budget_batches"]

_DTYPES = ("float32", "bfloat16", "float16")


def token_budget_batches(lengths: Sequence[int], max_batch_tokens: int) -> list[list[int]]:
    """Group request indices into batches, shortest first, so that each batch's padded size
    (rows x longest row) stays within ``max_batch_tokens`` (a longer single row is its own batch).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[index]  # ascending order: the newest row is the longest
        if current and longest * (len(current) + 1) > max_batch_tokens:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


class HFEvaluationLM:
    """A causal LM loaded through transformers.

    Scoring runs length-sorted, token-budget batches through the transformer body and applies the
    output projection only at target positions (memory O(target tokens x vocabulary), never
    batch x sequence x vocabulary). Results do not depend on batching or padding side.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        identity: str,
        max_batch_tokens: int = 8192,
        projection_chunk: int = 1024,
        padding_side: str = "right",
    ) -> None:
        if padding_side not in ("left", "right"):
            raise ValueError("padding_side must be 'left' or 'right'")
        self._model = model.eval()
        self._tokenizer = tokenizer
        self._identity = identity
        self.max_batch_tokens = max_batch_tokens
        self.projection_chunk = projection_chunk
        self.padding_side = padding_side
        self._lock = threading.Lock()
        self._pad_id = self._pick_pad_id()

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        *,
        dtype: str | None = None,
        device: str | None = None,
        gguf_file: str | None = None,
        revision: str | None = None,
        identity: str | None = None,
        **options: Any,
    ) -> HFEvaluationLM:
        """Load a model and tokenizer from a local folder or hub id.

        ``dtype`` defaults to float32 on CPU (the reproducible reference) and bfloat16 on GPU.
        """
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype is None:
            dtype = "float32" if device == "cpu" else "bfloat16"
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        load_args: dict[str, Any] = {"revision": revision} if revision else {}
        if gguf_file:
            load_args["gguf_file"] = gguf_file
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), **load_args)
        model = AutoModelForCausalLM.from_pretrained(
            str(name_or_path), dtype=getattr(torch, dtype), **load_args
        ).to(device)
        if identity is None:
            commit = getattr(model.config, "_commit_hash", None) or revision or "local"
            identity = f"hf/{name_or_path}@{commit}:{dtype}"
        elif not identity.endswith(f":{dtype}"):
            identity = f"{identity}:{dtype}"
        return cls(model, tokenizer, identity=identity, **options)

    # -- protocol -----------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self._identity

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def model(self) -> Any:
        return self._model

    @property
    def max_length(self) -> int | None:
        value = getattr(self._model.config, "max_position_embeddings", None)
        return int(value) if value else None

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        """Summed target log-probabilities, computed in token-budget batches."""
        results: list[LogprobResult | None] = [None] * len(requests)
        lengths = [r.length for r in requests]
        with self._lock:
            for batch in token_budget_batches(lengths, self.max_batch_tokens):
                for index, result in zip(batch, self._score_batch([requests[i] for i in batch])):
                    results[index] = result
        return [r for r in results if r is not None]

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[str]:
        """Greedy (temperature 0) or sampled assistant replies, one per conversation."""
        import torch

        prefill = (
            self._tokenizer(settings.prefill, add_special_tokens=False)["input_ids"]
            if settings.prefill
            else []
        )
        prompts = [generation_prompt_ids(self._tokenizer, c) + prefill for c in conversations]
        outputs: list[str] = [""] * len(prompts)
        lengths = [len(p) + settings.max_new_tokens for p in prompts]
        with self._lock, torch.inference_mode():
            for batch in token_budget_batches(lengths, max(self.max_batch_tokens, 1)):
                width = max(len(prompts[i]) for i in batch)
                input_ids = torch.full((len(batch), width), self._pad_id, dtype=torch.long)
                attention = torch.zeros((len(batch), width), dtype=torch.long)
                for row, index in enumerate(batch):
                    ids = prompts[index]
                    input_ids[row, width - len(ids) :] = torch.tensor(ids)
                    attention[row, width - len(ids) :] = 1
                sampling: dict[str, Any] = {"do_sample": False}
                if settings.temperature > 0:
                    torch.manual_seed(settings.seed)
                    sampling = {"do_sample": True, "temperature": settings.temperature}
                generated = self._model.generate(
                    input_ids=input_ids.to(self._device),
                    attention_mask=attention.to(self._device),
                    max_new_tokens=settings.max_new_tokens,
                    repetition_penalty=settings.repetition_penalty,
                    pad_token_id=self._pad_id,
                    **sampling,
                )
                for row, index in enumerate(batch):
                    new_tokens = generated[row, width:]
                    reply = self._tokenizer.decode(new_tokens, skip_special_tokens=True)
                    outputs[index] = (settings.prefill + reply).strip()
        return outputs

    # -- internals ----------------------------------------------------------------------------
    @property
    def _device(self) -> Any:
        return next(self._model.parameters()).device

    def _pick_pad_id(self) -> int:
        for candidate in (self._tokenizer.pad_token_id, self._tokenizer.eos_token_id, 0):
            if candidate is not None:
                return int(candidate)
        return 0

    def _score_batch(self, batch: Sequence[ScoringRequest]) -> list[LogprobResult]:
        import torch

        device = self._device
        width = max(r.length for r in batch)
        rows = len(batch)
        input_ids = torch.full((rows, width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((rows, width), dtype=torch.long)
        hidden_rows: list[int] = []
        hidden_cols: list[int] = []
        target_tokens: list[int] = []
        for row, request in enumerate(batch):
            ids = list(request.context_ids) + list(request.target_ids)
            offset = width - len(ids) if self.padding_side == "left" else 0
            input_ids[row, offset : offset + len(ids)] = torch.tensor(ids)
            attention[row, offset : offset + len(ids)] = 1
            first = offset + len(request.context_ids)
            # the hidden state at position p predicts the token at p + 1
            hidden_cols.extend(range(first - 1, first - 1 + len(request.target_ids)))
            hidden_rows.extend([row] * len(request.target_ids))
            target_tokens.extend(request.target_ids)
        position_ids = (attention.cumsum(dim=1) - 1).clamp(min=0)
        with torch.inference_mode():
            body = self._model.get_decoder()
            hidden = body(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                position_ids=position_ids.to(device),
                use_cache=False,
            ).last_hidden_state
            selected = hidden[
                torch.tensor(hidden_rows, device=device), torch.tensor(hidden_cols, device=device)
            ]
            token_logprobs = torch.cat(
                list(self._project(selected, torch.tensor(target_tokens, device=device)))
            )
        sums = torch.zeros(rows, dtype=torch.float64)
        sums.index_add_(0, torch.tensor(hidden_rows), token_logprobs.double().cpu())
        return [
            LogprobResult(total=float(sums[row]), n_tokens=len(request.target_ids))
            for row, request in enumerate(batch)
        ]

    def _project(self, hidden: Any, tokens: Any) -> Iterator[Any]:
        """Log-probability of each token under the output head, in row chunks."""
        import torch

        head = self._model.get_output_embeddings()
        config = self._model.config
        softcap = getattr(config, "final_logit_softcapping", None)
        scale = getattr(config, "logit_scale", None)
        for start in range(0, hidden.shape[0], self.projection_chunk):
            logits = head(hidden[start : start + self.projection_chunk]).float()
            if scale:
                logits = logits * scale
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            chunk_tokens = tokens[start : start + self.projection_chunk]
            picked = logits.gather(1, chunk_tokens[:, None]).squeeze(1)
            yield picked - torch.logsumexp(logits, dim=-1)


def file_fingerprint(path: Path) -> str:
    """sha256 (first 16 hex digits) of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
