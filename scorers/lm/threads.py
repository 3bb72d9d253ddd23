"""Blocking evaluation-LM calls from async code, without a cap on how many wait at once.

``asyncio.to_thread`` runs on the event loop's default executor, which has
``min(32, cores + 4)`` threads: six on a 2-core machine. A call into a batching backend blocks its
thread until the batch it joined has run, so with the default executor at most six samples could
wait for one batch and the rest were pushed into later, serial batches (measured on the demo: its
ten reviews were generated in batches of 6, 3 and 1, 556 s instead of about 100 s). The threads
here mostly wait on a future, so many of them cost little; the work itself still runs one batch
at a time in :class:`~scorers.lm.batching.BatchingEvaluationLM`.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["MAX_WAITING_CALLS", "run_blocking", "run_sync"]

MAX_WAITING_CALLS = 256
"""Threads for blocking LM calls: the most samples that can wait for one shared batch."""

T = TypeVar("T")

_executor = ThreadPoolExecutor(max_workers=MAX_WAITING_CALLS, thread_name_prefix="gem-tasks-lm")


async def run_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``await fn(*args, **kwargs)`` in a worker thread (context variables carried, like
    ``asyncio.to_thread``); exceptions propagate unchanged."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    call = functools.partial(context.run, fn, *args, **kwargs)
    return await loop.run_in_executor(_executor, call)


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine``'s result from plain (synchronous) Python: the one edge where a synchronous
    caller (a command line, a data builder) meets the async text generators.

    Raises:
        RuntimeError: called inside a running event loop (await the coroutine there instead);
            the coroutine is closed unrun.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    coroutine.close()
    raise RuntimeError("run_sync() was called inside an event loop: await the coroutine instead")
