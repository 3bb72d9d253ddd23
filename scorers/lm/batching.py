"""Batching across concurrent callers: many samples scored at once share forward passes.

:class:`BatchingEvaluationLM` wraps a backend so that calls arriving from several threads while a
batch runs are merged into the next batch (leader/follower: the first caller runs batches until
the queue is empty; the others wait for their results). Before taking a batch the leader waits
until no call has arrived for ``settle_s`` (at most ``max_gather_s``): samples that reach the
model within milliseconds of each other (an Inspect task starting its samples) then share one
batch instead of the first running alone while the others queue behind it; a lone caller pays
``settle_s``.
Identical requests within a batch (two scorers asking for the same rewrite, or the same marginal)
are computed once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from scorers.lm.base import (
    ChatMessage,
    EvaluationLM,
    GenerationSettings,
    LogprobResult,
    ScoringRequest,
    WrappedEvaluationLM,
)

__all__ = ["BatchingEvaluationLM"]


@dataclass
class _Call:
    kind: str
    settings: GenerationSettings | None
    items: list[Any]
    future: Future = field(default_factory=Future)


def _item_key(item: Any) -> Any:
    """A hashable identity of a scoring request or a conversation."""
    if isinstance(item, ScoringRequest):
        return item
    return json.dumps(list(item), sort_keys=True)


class BatchingEvaluationLM(WrappedEvaluationLM):
    """An :class:`EvaluationLM` that merges concurrent calls into shared batches."""

    def __init__(
        self, backend: EvaluationLM, *, settle_s: float = 0.02, max_gather_s: float = 0.25
    ) -> None:
        """Args:
        backend: the evaluation LM that runs the merged batches.
        settle_s: the leader takes the queue once no call has arrived for this long.
        max_gather_s: ... or once it has waited this long in all.
        """
        if settle_s < 0 or max_gather_s < 0:
            raise ValueError("settle_s and max_gather_s must be >= 0")
        self.backend = backend
        self.settle_s = settle_s
        self.max_gather_s = max_gather_s
        self._queue: list[_Call] = []
        self._lock = threading.Lock()
        self._leader_active = False
        self._last_arrival = 0.0
        self.batches_run = 0

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        return self._submit(_Call("logprobs", None, list(requests)))

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[str]:
        return self._submit(_Call("generate", settings, list(conversations)))

    def _submit(self, call: _Call) -> list[Any]:
        if not call.items:
            return []
        with self._lock:
            self._queue.append(call)
            self._last_arrival = time.monotonic()
            lead = not self._leader_active
            if lead:
                self._leader_active = True
        if lead:
            self._lead()
        return call.future.result()

    def _gather(self) -> None:
        """Wait until the queue has been quiet for ``settle_s`` (at most ``max_gather_s``)."""
        deadline = time.monotonic() + self.max_gather_s
        while True:
            with self._lock:
                quiet = time.monotonic() - self._last_arrival
            now = time.monotonic()
            if quiet >= self.settle_s or now >= deadline:
                return
            time.sleep(min(self.settle_s - quiet, deadline - now))

    def _lead(self) -> None:
        while True:
            self._gather()
            with self._lock:
                if not self._queue:
                    self._leader_active = False
                    return
                first = self._queue[0]
                group = [
                    c for c in self._queue if (c.kind, c.settings) == (first.kind, first.settings)
                ]
                self._queue = [c for c in self._queue if c not in group]
            items = [item for call in group for item in call.items]
            # identical items (the same rewrite asked for by two scorers of one sample, the same
            # marginal for several candidates) are computed once
            keys = [_item_key(item) for item in items]
            unique = list(dict(zip(keys, items)).items())
            try:
                if first.kind == "logprobs":
                    computed: list[Any] = self.backend.target_logprobs([i for _, i in unique])
                else:
                    assert first.settings is not None
                    computed = self.backend.generate([i for _, i in unique], first.settings)
                by_key = dict(zip((k for k, _ in unique), computed, strict=True))
                results = [by_key[key] for key in keys]
            except Exception as exc:  # every waiting caller gets the failure
                for call in group:
                    call.future.set_exception(exc)
                continue
            self.batches_run += 1
            start = 0
            for call in group:
                call.future.set_result(results[start : start + len(call.items)])
                start += len(call.items)
