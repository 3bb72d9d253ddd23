"""The sqlite cache: reuse across candidates and reruns, corruption handling."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest

from scorers.lm.base import GenerationSettings, LogprobResult, ScoringRequest
from scorers.lm.cache import CachedEvaluationLM, ScoreCache
from scorers.lm.generation import CachedGenerator, LocalGenerator
from scorers.lm.threads import run_sync
from scorers.pmi import Reference, score_review
from scorers.text.judgments import rewrite_reviews

REFERENCES = {
    "r1": "Summary Of The Paper:\n\nA method.\n\nStrengths And Weaknesses:\n\nNo baseline.",
    "r2": "Summary Of The Paper:\n\nA method.\n\nStrengths And Weaknesses:\n\nFew seeds.",
}


class EchoingPreprocessor:
    """The tiny random model for log-probabilities; generation answers with one judgment line
    naming the review it was given (deterministic, so cache behaviour is what is tested)."""

    def __init__(self, backend) -> None:
        self.backend = backend
        self.identity, self.tokenizer, self.max_length = backend.identity, backend.tokenizer, None

    def target_logprobs(self, requests):
        return self.backend.target_logprobs(requests)

    def generate(self, conversations, settings):
        return [f"The reviewer appreciates {c[-1]['content'][-40:]}" for c in conversations]


@pytest.fixture()
def cached(tiny_lm, tmp_path):
    return CachedEvaluationLM(EchoingPreprocessor(tiny_lm), ScoreCache(tmp_path / "c.sqlite"))


def score_candidate(lm: CachedEvaluationLM, candidate: str) -> float:
    texts = [candidate, *REFERENCES.values()]
    done = run_sync(rewrite_reviews(LocalGenerator(lm), texts))
    refs = [Reference(k, v, p) for (k, v), p in zip(REFERENCES.items(), done[1:])]
    return score_review(
        lm,
        candidate=candidate,
        references=refs,
        synopsis="Abstract.",
        preprocessed_candidate=done[0],
    ).value


def test_second_candidate_computes_no_new_marginal_or_reference_preprocessing(cached):
    score_candidate(cached, "Candidate A likes the paper.")
    assert cached.computed["generations"] == 3  # candidate A + two references
    assert cached.computed["logprob_requests"] == 4  # 2 conditionals + 2 marginals
    before_hits = cached.cache.stats["generation_hit"], cached.cache.stats["logprob_hit"]
    score_candidate(cached, "Candidate B dislikes the paper.")
    assert cached.computed["generations"] == 4  # only candidate B was preprocessed
    assert cached.computed["logprob_requests"] == 6  # only B's two conditionals
    assert cached.cache.stats["generation_hit"] - before_hits[0] == 2  # the two references
    assert cached.cache.stats["logprob_hit"] - before_hits[1] == 2  # the two marginals


@pytest.mark.slow
def test_rerun_is_all_hits_and_identical(cached, tiny_lm):
    first = score_candidate(cached, "Candidate A.")
    rerun = CachedEvaluationLM(EchoingPreprocessor(tiny_lm), ScoreCache(cached.cache.path))
    assert score_candidate(rerun, "Candidate A.") == first
    assert sum(rerun.computed.values()) == 0
    assert rerun.cache.stats["logprob_miss"] == 0 and rerun.cache.stats["generation_miss"] == 0


def test_tampered_row_is_recomputed(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite")
    cache.put_logprob("k", LogprobResult(-3.5, 4))
    assert cache.get_logprob("k") == LogprobResult(-3.5, 4)
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE logprobs SET total = -1.0 WHERE key = 'k'")
    assert cache.get_logprob("k") is None
    assert cache.stats["logprob_corrupt"] == 1
    cache.put_generation("g", "text")
    with sqlite3.connect(cache.path) as db:
        db.execute("UPDATE generations SET text = 'other' WHERE key = 'g'")
    assert cache.get_generation("g") is None


def test_unreadable_database_is_moved_aside(tmp_path):
    path = tmp_path / "c.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.warns(UserWarning, match="unreadable"):
        cache = ScoreCache(path)
    assert (tmp_path / "c.sqlite.corrupt").exists()
    cache.put_logprob("k", LogprobResult(-1.0, 1))
    assert cache.get_logprob("k") == LogprobResult(-1.0, 1)


class Failing:
    identity, tokenizer, max_length = "failing", None, None

    def target_logprobs(self, requests):
        raise RuntimeError("backend down")

    def generate(self, conversations, settings):
        raise RuntimeError("backend down")


def test_failed_backend_call_caches_nothing(tmp_path):
    lm = CachedEvaluationLM(Failing(), ScoreCache(tmp_path / "c.sqlite"))
    request = ScoringRequest((1, 2), (3,))
    with pytest.raises(RuntimeError):
        lm.target_logprobs([request])
    with pytest.raises(RuntimeError):
        lm.generate([[{"role": "user", "content": "u"}]], GenerationSettings())
    with sqlite3.connect(lm.cache.path) as db:
        assert db.execute("SELECT count(*) FROM logprobs").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM generations").fetchone() == (0,)


def test_keys_depend_on_model_identity_and_tokens():
    a = ScoringRequest((1, 2), (3,))
    assert ScoreCache.logprob_key("m1", a) != ScoreCache.logprob_key("m2", a)
    assert ScoreCache.logprob_key("m1", a) != ScoreCache.logprob_key(
        "m1", ScoringRequest((1,), (2, 3))
    )


class Gated:
    """A backend whose first call blocks until released, counting what it computes."""

    identity, tokenizer, max_length = "gated", None, None

    def __init__(self, fail_first: bool = False) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.batches: list[list] = []
        self.fail_first = fail_first

    def _call(self, items):
        self.batches.append(list(items))
        if len(self.batches) == 1:
            self.started.set()
            assert self.release.wait(10)
            if self.fail_first:
                raise RuntimeError("backend down")

    def target_logprobs(self, requests):
        self._call(requests)
        return [LogprobResult(-float(sum(r.target_ids)), len(r.target_ids)) for r in requests]

    def generate(self, conversations, settings):
        self._call(conversations)
        return [c[-1]["content"].upper() for c in conversations]


def _concurrently(first, second, backend):
    """Run ``first`` in a thread until the backend is busy with it, then ``second`` in another
    thread, release the backend, and return both outcomes (a result or the exception)."""
    out: dict[str, object] = {}

    def run(name, call):
        try:
            out[name] = call()
        except Exception as error:  # noqa: BLE001 - the outcome is what the test checks
            out[name] = error

    a = threading.Thread(target=run, args=("first", first))
    a.start()
    assert backend.started.wait(10)
    b = threading.Thread(target=run, args=("second", second))
    b.start()
    time.sleep(0.2)  # the second call is waiting for the first one's request by now
    backend.release.set()
    a.join(10)
    b.join(10)
    return out["first"], out["second"]


def test_a_request_in_flight_is_computed_once(tmp_path):
    backend = Gated()
    lm = CachedEvaluationLM(backend, ScoreCache(tmp_path / "c.sqlite"))
    shared, other = ScoringRequest((1, 2), (3,)), ScoringRequest((1, 2), (4, 5))
    first, second = _concurrently(
        lambda: lm.target_logprobs([shared]), lambda: lm.target_logprobs([other, shared]), backend
    )
    assert first == [LogprobResult(-3.0, 1)]
    assert second == [LogprobResult(-9.0, 2), LogprobResult(-3.0, 1)]
    # the second call computed only its own request and waited for the shared one
    assert backend.batches == [[shared], [other]]
    assert lm.computed["logprob_requests"] == 2

    backend = Gated()
    lm = CachedEvaluationLM(backend, ScoreCache(tmp_path / "g.sqlite"))
    conversation = [{"role": "user", "content": "u"}]
    first, second = _concurrently(
        lambda: lm.generate([conversation], GenerationSettings()),
        lambda: lm.generate([conversation], GenerationSettings()),
        backend,
    )
    assert first == second == ["U"]
    assert len(backend.batches) == 1 and lm.computed["generations"] == 1


def test_a_waiting_call_computes_the_request_when_the_one_in_flight_failed(tmp_path):
    backend = Gated(fail_first=True)
    lm = CachedEvaluationLM(backend, ScoreCache(tmp_path / "c.sqlite"))
    request = ScoringRequest((1, 2), (3,))
    first, second = _concurrently(
        lambda: lm.target_logprobs([request]), lambda: lm.target_logprobs([request]), backend
    )
    assert isinstance(first, RuntimeError)
    assert second == [LogprobResult(-3.0, 1)]
    assert backend.batches == [[request], [request]]


class _GatedComplete:
    """An API model whose first reply waits until released; it fails once when told to."""

    def __init__(self, fail_first: bool = False) -> None:
        self.asked: list[str] = []
        self.fail_first = fail_first
        self.release: asyncio.Event | None = None

    async def __call__(self, conversation, settings) -> str:
        self.asked.append(conversation[-1]["content"])
        if len(self.asked) == 1:
            assert self.release is not None
            await self.release.wait()
            if self.fail_first:
                raise RuntimeError("the first reply failed")
        return conversation[-1]["content"].upper()


def _two_calls(generator: CachedGenerator, complete: _GatedComplete, first, second):
    async def run():
        complete.release = asyncio.Event()
        one = asyncio.ensure_future(generator.generate(first, GenerationSettings()))
        await asyncio.sleep(0)  # the first call is now asking
        two = asyncio.ensure_future(generator.generate(second, GenerationSettings()))
        await asyncio.sleep(0)
        complete.release.set()
        return await asyncio.gather(one, two, return_exceptions=True)

    return asyncio.run(run())


def test_a_conversation_in_flight_is_asked_once_by_the_cached_generator(tmp_path):
    complete = _GatedComplete()
    generator = CachedGenerator("api/m", complete, ScoreCache(tmp_path / "c.sqlite"))
    shared, other = [{"role": "user", "content": "a"}], [{"role": "user", "content": "b"}]
    first, second = _two_calls(generator, complete, [shared], [other, shared, other])
    assert first == ["A"] and second == ["B", "A", "B"]
    assert complete.asked == ["a", "b"]  # the second call waited for "a", asked "b" once
    # and both replies are in the cache: a third call asks nothing
    assert asyncio.run(generator.generate([other, shared], GenerationSettings())) == ["B", "A"]
    assert complete.asked == ["a", "b"]


def test_a_waiting_generator_call_asks_itself_when_the_one_in_flight_failed(tmp_path):
    complete = _GatedComplete(fail_first=True)
    generator = CachedGenerator("api/m", complete, ScoreCache(tmp_path / "c.sqlite"))
    conversation = [{"role": "user", "content": "a"}]
    first, second = _two_calls(generator, complete, [conversation], [conversation])
    assert isinstance(first, RuntimeError)
    assert second == ["A"]
    assert complete.asked == ["a", "a"]
    assert generator._in_flight == {}  # nothing left waiting


def test_a_fresh_cache_shares_the_machines_model_folder(tmp_path, monkeypatch):
    """share_machine_models links a cache's models folder to the machine's, creating the
    machine's when it is missing (a link to a missing folder would fail the first
    materialisation), and refuses a cache that has one already."""
    from scorers.lm.embedded import share_machine_models

    monkeypatch.setenv("GEM_TASKS_CACHE_DIR", str(tmp_path / "machine"))
    fresh = share_machine_models(tmp_path / "fresh")
    assert (fresh / "models").is_symlink()
    assert (fresh / "models").resolve() == (tmp_path / "machine" / "models").resolve()
    (fresh / "models" / "m").mkdir()
    assert (tmp_path / "machine" / "models" / "m").is_dir()
    with pytest.raises(FileExistsError):
        share_machine_models(fresh)


def test_partition_cached_looks_each_key_up_once_in_first_seen_order():
    from scorers.lm.cache import partition_cached

    stored = {"a": 1, "c": 3}
    reads: list[str] = []

    def read(key):
        reads.append(key)
        return stored.get(key)

    found, missing = partition_cached(["c", "b", "a", "b", "d"], ["C", "B", "A", "B2", "D"], read)
    assert found == {"c": 3, "a": 1}
    assert list(missing.items()) == [("b", "B"), ("d", "D")]  # the first input of a key
    assert reads == ["c", "b", "a", "d"]
    with pytest.raises(ValueError):
        partition_cached(["a"], [], read)


def test_run_sync_is_the_edge_and_refuses_a_running_loop():
    import asyncio

    async def twice(x):
        return 2 * x

    assert run_sync(twice(4)) == 8

    async def inside():
        return run_sync(twice(1))

    with pytest.raises(RuntimeError, match="inside an event loop"):
        asyncio.run(inside())
