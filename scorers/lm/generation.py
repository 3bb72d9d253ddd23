"""One async text-generation interface for everything that generates: judgment rewrites, ASSW
summaries, LLM perturbations and judges, whether the generator is the evaluation LM or a model
of a harness (an Inspect model role), behind the one sqlite cache.

- :class:`LocalGenerator`: the evaluation LM's own ``generate`` (cached by
  :class:`~scorers.lm.cache.CachedEvaluationLM`); it supports a prefilled reply.
- :class:`CachedGenerator`: any async ``complete(conversation, settings) -> str`` (an API model)
  with every reply cached by (generator identity, conversation, decoding settings); the
  conversations of one call that miss the cache run concurrently, and a conversation already
  being generated is waited for, not asked twice (single flight). API models are not
  prefilled: they follow the prompt, so the prefill is dropped from the settings (and the key).

Every reply is a :class:`~scorers.lm.base.Reply`: a string that says whether it stopped at its
token limit (``complete`` returns one where the model says so; a plain string is "not said").
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, runtime_checkable

from scorers.lm.base import ChatMessage, EvaluationLM, GenerationSettings, Reply, hit_limit
from scorers.lm.cache import CachedEvaluationLM, ScoreCache
from scorers.lm.threads import run_blocking

__all__ = ["CachedGenerator", "LocalGenerator", "TextGenerator"]


@runtime_checkable
class TextGenerator(Protocol):
    """Turns conversations into assistant replies."""

    @property
    def identity(self) -> str:
        """Names the generator (model, weights, precision): part of every cache key and
        signature that depends on its replies."""
        ...

    async def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[str]:
        """One reply per conversation, in order; :class:`~scorers.lm.base.Reply` objects where
        the generator knows whether a reply stopped at ``settings.max_new_tokens``."""
        ...


class LocalGenerator:
    """The evaluation LM as a generator (its batched ``generate``, cached when the LM is a
    :class:`~scorers.lm.cache.CachedEvaluationLM`, in a worker thread)."""

    def __init__(self, lm: CachedEvaluationLM | EvaluationLM) -> None:
        self.lm = lm

    @property
    def identity(self) -> str:
        return self.lm.identity

    async def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[str]:
        if not conversations:
            return []
        return await run_blocking(self.lm.generate, list(conversations), settings)


Complete = Callable[[Sequence[ChatMessage], GenerationSettings], Awaitable[str]]


class CachedGenerator:
    """An async single-conversation ``complete`` behind the sqlite cache. The distinct
    conversations of a call that miss the cache run concurrently. Single flight, as in
    :class:`~scorers.lm.cache.CachedEvaluationLM`: a conversation that another call of the same
    event loop is generating at the moment is not asked again; the call waits for that reply
    (if that generation failed, the waiting call asks itself). A failed generation stores
    nothing and propagates."""

    def __init__(self, identity: str, complete: Complete, cache: ScoreCache) -> None:
        self._identity = identity
        self._complete = complete
        self.cache = cache
        self._in_flight: dict[tuple[int, str], asyncio.Future[Reply | None]] = {}

    @property
    def identity(self) -> str:
        return self._identity

    async def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        settings = dataclasses.replace(settings, prefill="")
        keys = [self.cache.generation_key(self._identity, c, settings) for c in conversations]
        distinct = dict(zip(keys, conversations, strict=True))
        replies = await asyncio.gather(*(self._reply(k, c, settings) for k, c in distinct.items()))
        found = dict(zip(distinct, replies, strict=True))
        return [found[key] for key in keys]

    async def _reply(
        self, key: str, conversation: Sequence[ChatMessage], settings: GenerationSettings
    ) -> Reply:
        """The reply under ``key``: from the cache, from the generation of it in flight, or
        generated here."""
        loop = asyncio.get_running_loop()
        slot = (id(loop), key)
        while True:
            stored = self.cache.get_generation(key)
            if stored is not None:
                return stored
            in_flight = self._in_flight.get(slot)
            if in_flight is None:
                break
            reply = await asyncio.shield(in_flight)
            if reply is not None:
                return reply
            # that generation failed: look again (the cache, another flight, or ask here)
        mine: asyncio.Future[Reply | None] = loop.create_future()
        self._in_flight[slot] = mine
        reply = None
        try:
            text = await self._complete(conversation, settings)
            reply = Reply(str(text), hit_limit=hit_limit(text))
            self.cache.put_generation(key, reply)
            return reply
        finally:
            del self._in_flight[slot]
            mine.set_result(reply)  # None: failed (or cancelled), and the waiters ask themselves
