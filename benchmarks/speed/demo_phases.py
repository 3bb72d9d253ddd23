"""Runs an ``inspect`` command in this process with timers around the phases of the demo, and
writes where its time went as JSON (``benchmarks.speed.demo`` starts it; not for direct use).

    python benchmarks/speed/demo_phases.py OUT.json eval gem_tasks/iclr --model ...

The timers wrap the project's own functions, never Inspect's: the model's loading
(``scorers.lm.loading.load_pretrained``, the embedded model's de-quantisation), every call the
batching layer hands to the transformers backend (``HFEvaluationLM.generate`` and
``target_logprobs``, on the batching leader's thread), the prefill inside each generation
(``scorers.lm.hf.decoding``'s two prefill functions), and the batching leader's waits for more
callers. Each backend call's time is split among the callers whose items it held: a generation's
rows equally, a scoring batch's requests by their tokens. A caller is the metric whose
computation asked (a context variable set around ``Metric.ascore``, carried into worker threads)
or, outside any metric, the model under test writing its review.
"""

from __future__ import annotations

import time

STARTED = time.time()  # before the heavy imports below: they are a phase of their own

import contextvars  # noqa: E402
import functools  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REVIEW = "review (model under test)"
CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default=REVIEW)


class Phases:
    """Intervals and seconds by phase, filled from several threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, float] = defaultdict(float)
        # phase -> (start, end, share): the wall-clock interval a share of which was the phase's
        self.spans: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
        self.depth = threading.local()
        self.busy: list[tuple[float, float]] = []  # backend or loading, wall-clock intervals
        self.owners: dict[Any, str] = {}  # an item (request, conversation key) -> its caller
        self.prefill = threading.local()

    def add(
        self,
        phase: str,
        seconds: float,
        count: float = 0.0,
        span: tuple[float, float] | None = None,
    ) -> None:
        """``seconds`` more of ``phase`` (``count`` more of its units), spent over ``span``."""
        with self.lock:
            self.seconds[phase] += seconds
            self.counts[phase] += count
            if span is not None and span[1] > span[0]:
                self.spans[phase].append((span[0], span[1], seconds / (span[1] - span[0])))

    def interval(self, start: float, end: float) -> None:
        with self.lock:
            self.busy.append((start, end))


PHASES = Phases()


def _timed(phase: str):
    """A decorator adding the wrapped call's time to ``phase`` (and to the busy intervals)."""

    def wrap(function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            depth = getattr(PHASES.depth, "value", 0)
            PHASES.depth.value = depth + 1
            start = time.time()
            try:
                return function(*args, **kwargs)
            finally:
                end = time.time()
                PHASES.depth.value = depth
                if depth == 0:  # a load inside another (the de-quantisation's) is the outer one's
                    PHASES.add(phase, end - start, 1, (start, end))
                    PHASES.interval(start, end)

        return timed

    return wrap


def _split(function, kind: str, weight):
    """Wrap a backend method so its time is split among the owners of the items it is given."""

    @functools.wraps(function)
    def split(self, items, *args, **kwargs):
        PHASES.prefill.seconds = 0.0
        start = time.time()
        try:
            return function(self, items, *args, **kwargs)
        finally:
            end = time.time()
            PHASES.interval(start, end)
            total = end - start
            prefill = getattr(PHASES.prefill, "seconds", 0.0)
            from scorers.lm.batching import _item_key

            weights: dict[str, float] = defaultdict(float)
            for item in items:
                owner = PHASES.owners.get(_item_key(item), "unattributed")
                weights[owner] += weight(item)
            whole = sum(weights.values()) or 1.0
            for owner, share in weights.items():
                fraction = share / whole
                span = (start, end)
                if kind == "generate":
                    PHASES.add(f"{owner}: generation prefill", prefill * fraction, 0, span)
                    PHASES.add(
                        f"{owner}: generation decoding", (total - prefill) * fraction, 0, span
                    )
                else:
                    PHASES.add(f"{owner}: scoring forwards", total * fraction, share, span)

    return split


def _own(function):
    """Wrap a batching-layer entry (the caller's thread) to note who owns each item."""

    @functools.wraps(function)
    def own(self, items, *args, **kwargs):
        from scorers.lm.batching import _item_key

        caller = CALLER.get()
        with PHASES.lock:
            for item in items:
                PHASES.owners.setdefault(_item_key(item), caller)
        return function(self, items, *args, **kwargs)

    return own


def _prefill_timer(function):
    @functools.wraps(function)
    def timed(*args, **kwargs):
        start = time.time()
        try:
            return function(*args, **kwargs)
        finally:
            PHASES.prefill.seconds = getattr(PHASES.prefill, "seconds", 0.0) + time.time() - start

    return timed


def _gather_timer(function):
    @functools.wraps(function)
    def timed(self, *args, **kwargs):
        start = time.time()
        try:
            return function(self, *args, **kwargs)
        finally:
            end = time.time()
            PHASES.add("batching: leader waiting for more callers", end - start, 1, (start, end))

    return timed


def install() -> None:
    """Put the timers in place (after the imports they wrap)."""
    import scorers.lm.embedded as embedded
    import scorers.lm.hf.decoding as decoding
    import scorers.lm.loading as loading
    from scorers.lm.batching import BatchingEvaluationLM
    from scorers.lm.hf.model import HFEvaluationLM
    from scorers.registry import Metric

    loading.load_pretrained = _timed("model load (transformers)")(loading.load_pretrained)
    embedded.materialize_embedded = _timed("model load: embedded model de-quantised")(
        embedded.materialize_embedded
    )
    decoding._prefill = _prefill_timer(decoding._prefill)
    decoding._prefill_shared = _prefill_timer(decoding._prefill_shared)
    HFEvaluationLM.generate = _split(HFEvaluationLM.generate, "generate", lambda _: 1.0)
    HFEvaluationLM.target_logprobs = _split(
        HFEvaluationLM.target_logprobs, "score", lambda r: float(r.length)
    )
    BatchingEvaluationLM.generate = _own(BatchingEvaluationLM.generate)
    BatchingEvaluationLM.target_logprobs = _own(BatchingEvaluationLM.target_logprobs)
    BatchingEvaluationLM._gather = _gather_timer(BatchingEvaluationLM._gather)
    ascore = Metric.ascore

    @functools.wraps(ascore)
    async def attributed(self, *args, **kwargs):
        token = CALLER.set(self.name)
        try:
            return await ascore(self, *args, **kwargs)
        finally:
            CALLER.reset(token)

    Metric.ascore = attributed


def within(spans: list[tuple[float, float, float]], low: float, high: float) -> float:
    """The seconds of a phase's ``spans`` (start, end, share) that fall in [low, high]."""
    return sum(max(0.0, min(end, high) - max(start, low)) * share for start, end, share in spans)


def _union(intervals: list[tuple[float, float]], low: float, high: float) -> float:
    """Seconds of [low, high] covered by ``intervals``."""
    covered, reach = 0.0, low
    for start, end in sorted(intervals):
        start, end = max(start, reach), min(end, high)
        if end > start:
            covered += end - start
            reach = end
    return covered


def main() -> None:
    out = Path(sys.argv[1])
    arguments = sys.argv[2:]
    from inspect_ai._cli.main import main as inspect_main

    import gem_tasks  # noqa: F401  (what `inspect eval gem_tasks/...` imports first)

    imported = time.time()
    install()
    status: Any = 0
    sys.argv = ["inspect", *arguments]
    try:
        inspect_main()
    except SystemExit as stop:
        status = stop.code
    finally:
        ended = time.time()
        with PHASES.lock:
            busy = list(PHASES.busy)
        record = {
            "started": STARTED,
            "imported": imported,
            "ended": ended,
            "status": status,
            "seconds": dict(PHASES.seconds),
            "counts": dict(PHASES.counts),
            "spans": {phase: list(spans) for phase, spans in PHASES.spans.items()},
            "busy_intervals": busy,
            "busy_union": _union(busy, imported, ended),
        }
        out.write_text(json.dumps(record, indent=1) + "\n")
    sys.exit(status)


if __name__ == "__main__":
    main()
