"""One async text-generation interface for everything that generates: judgment rewrites, ASSW
summaries, LLM perturbations and judges, whether the generator is the evaluation LM or a model
of a harness (an Inspect model role), behind the one sqlite cache.

- :class:`LocalGenerator`: the evaluation LM's own ``generate`` (cached by
  :class:`~scorers.lm.cache.CachedEvaluationLM`); it supports a prefilled reply.
- :class:`CachedGenerator`: any async ``complete(conversation, settings) -> str`` (an API model)
  with every reply cached by (generator identity, conversation, decoding settings); the
  conversations of one call that miss the cache run concurrently. API models are not
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
from scorers.lm.cache import CachedEvaluationLM, ScoreCache, partition_cached
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
    """An async single-conversation ``complete`` behind the sqlite cache; misses of one call run
    concurrently; a failure stores nothing and propagates."""

    def __init__(self, identity: str, complete: Complete, cache: ScoreCache) -> None:
        self._identity = identity
        self._complete = complete
        self.cache = cache

    @property
    def identity(self) -> str:
        return self._identity

    async def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        settings = dataclasses.replace(settings, prefill="")
        keys = [self.cache.generation_key(self._identity, c, settings) for c in conversations]
        replies, missing = partition_cached(keys, conversations, self.cache.get_generation)
        computed = await asyncio.gather(*(self._complete(c, settings) for c in missing.values()))
        for key, text in zip(missing, computed):
            reply = Reply(str(text), hit_limit=hit_limit(text))
            self.cache.put_generation(key, reply)
            replies[key] = reply
        return [replies[key] for key in keys]
