"""Batching across concurrent callers gives each caller its own results."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from scorers.lm.base import GenerationSettings, LogprobResult, ScoringRequest
from scorers.lm.batching import BatchingEvaluationLM


class Recording:
    identity, tokenizer, max_length = "rec", None, None

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.gate = threading.Event()

    def target_logprobs(self, requests):
        self.gate.wait(5)
        self.calls.append(len(requests))
        return [LogprobResult(-float(sum(r.target_ids)), len(r.target_ids)) for r in requests]

    def generate(self, conversations, settings):
        if settings.max_new_tokens == 13:
            raise RuntimeError("boom")
        return [f"{settings.max_new_tokens}:{c[0]['content']}" for c in conversations]


def test_concurrent_calls_are_merged_and_results_routed_back():
    backend = Recording()
    lm = BatchingEvaluationLM(backend)
    with ThreadPoolExecutor(8) as pool:
        futures = [
            pool.submit(
                lm.target_logprobs, [ScoringRequest((1,), (i,)), ScoringRequest((1,), (i, i))]
            )
            for i in range(1, 9)
        ]
        time.sleep(0.3)  # the first call holds the backend; the rest queue up
        backend.gate.set()
        results = [f.result() for f in futures]
    for i, result in enumerate(results, start=1):
        assert [r.total for r in result] == [-i, -2 * i]
    assert sum(backend.calls) == 16
    assert len(backend.calls) < 8  # fewer backend calls than callers: they were batched


def test_generation_groups_by_settings_and_failures_reach_their_callers():
    lm = BatchingEvaluationLM(Recording())
    one = [[{"role": "user", "content": "a"}]]
    assert lm.generate(one, GenerationSettings(max_new_tokens=5)) == ["5:a"]
    with pytest.raises(RuntimeError, match="boom"):
        lm.generate(one, GenerationSettings(max_new_tokens=13))
    assert lm.generate(one, GenerationSettings(max_new_tokens=7)) == ["7:a"]  # still usable
    assert lm.target_logprobs([]) == []


def test_identical_requests_in_a_batch_are_computed_once():
    backend = Recording()
    backend.gate.set()
    lm = BatchingEvaluationLM(backend)
    same = ScoringRequest((1,), (4,))
    results = lm.target_logprobs([same, ScoringRequest((1,), (5,)), same])
    assert [r.total for r in results] == [-4, -5, -4]
    assert backend.calls == [2]
    seen = []

    class Counting(Recording):
        def generate(self, conversations, settings):
            seen.append(len(conversations))
            return super().generate(conversations, settings)

    lm = BatchingEvaluationLM(Counting())
    a, b = [{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]
    assert lm.generate([a, b, a], GenerationSettings(max_new_tokens=3)) == ["3:a", "3:b", "3:a"]
    assert seen == [2]
