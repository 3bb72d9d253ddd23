"""The evaluation-LM protocol every backend implements (transformers, vLLM, ...)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ChatMessage",
    "EvaluationLM",
    "GenerationSettings",
    "LogprobResult",
    "RETRY_TEMPERATURE",
    "Reply",
    "ScoringRequest",
    "WrappedEvaluationLM",
    "hit_limit",
    "retry_settings",
]

ChatMessage = dict[str, str]
"""A chat message ``{"role": ..., "content": ...}``."""


@dataclass(frozen=True)
class ScoringRequest:
    """Teacher-forced scoring of ``target_ids`` given ``context_ids`` (token ids)."""

    context_ids: tuple[int, ...]
    target_ids: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.context_ids:
            raise ValueError("a scoring request needs at least one context token")
        if not self.target_ids:
            raise ValueError("a scoring request needs at least one target token")

    @property
    def length(self) -> int:
        return len(self.context_ids) + len(self.target_ids)


@dataclass(frozen=True)
class LogprobResult:
    """Summed log-probability (nats) of a request's target tokens, and how many there were."""

    total: float
    n_tokens: int


@dataclass(frozen=True)
class GenerationSettings:
    """Decoding settings of a generation; part of its cache key."""

    max_new_tokens: int = 512
    temperature: float = 0.0
    repetition_penalty: float = 1.0
    seed: int = 0
    prefill: str = ""
    """Text the assistant reply is forced to begin with; it is part of the returned reply."""

    def key(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class Reply(str):
    """A generated text that says whether it stopped at its token limit.

    ``hit_limit`` is True when the generation ran to ``max_new_tokens`` without ending on its
    own (the text may be cut mid-sentence, its last judgments lost), False when it ended, and
    None when the generator did not say (a plain ``str`` from a hand-written generator is read
    as None too: see :func:`hit_limit`). It is a ``str``, so every caller that only reads the
    text is unchanged; ``strip()`` and friends return plain strings, so read the flag first.
    """

    hit_limit: bool | None

    def __new__(cls, text: str, *, hit_limit: bool | None) -> Reply:
        reply = super().__new__(cls, text)
        reply.hit_limit = hit_limit
        return reply

    def __reduce__(self) -> tuple[Any, ...]:
        return _reply, (str(self), self.hit_limit)


def _reply(text: str, hit_limit: bool | None) -> Reply:
    return Reply(text, hit_limit=hit_limit)


def hit_limit(reply: str) -> bool | None:
    """Whether ``reply`` stopped at its token limit (None: its generator did not say)."""
    return getattr(reply, "hit_limit", None)


RETRY_TEMPERATURE = 0.7
"""The temperature of a retry after an unreadable greedy reply (see :func:`retry_settings`)."""


def retry_settings(
    settings: GenerationSettings, attempt: int, *, temperature: float = RETRY_TEMPERATURE
) -> GenerationSettings:
    """The settings of call ``attempt`` (0 = the first) when a reply could not be read.

    Every retry has another seed (``settings.seed + attempt``), so that a cached reply is not read
    back. A greedy first call (temperature 0) is retried *sampled* at ``temperature``: a local
    model decoding greedily would repeat its unreadable reply word for word whatever the seed,
    so such a retry could never succeed. Sampled first calls keep their temperature.
    """
    if attempt == 0:
        return settings
    hotter = settings.temperature if settings.temperature > 0 else temperature
    return replace(settings, seed=settings.seed + attempt, temperature=hotter)


@runtime_checkable
class EvaluationLM(Protocol):
    """A language model that scores targets and generates text.

    ``identity`` names the model, its weights and its numeric precision: two backends with the
    same identity must return the same log-probabilities up to the tolerance of that precision.
    """

    @property
    def identity(self) -> str: ...

    @property
    def tokenizer(self) -> Any: ...

    @property
    def max_length(self) -> int | None: ...

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        """Summed log-probability of each request's target given its context, in request order."""
        ...

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[str]:
        """The assistant reply to each conversation, rendered with the model's chat template;
        each a :class:`Reply` saying whether it stopped at ``settings.max_new_tokens``."""
        ...


class BackendLM:
    """The base of an :class:`EvaluationLM` backend that holds its model (transformers, a vLLM
    engine or server): the identity, tokenizer and length limit it set when it was built, read
    back as the protocol's properties."""

    _identity: str
    _tokenizer: Any
    _max_length: int | None = None

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def max_length(self) -> int | None:
        return self._max_length


class WrappedEvaluationLM:
    """The base of an :class:`EvaluationLM` that wraps another (the score cache, the batching
    layer): the wrapped ``backend``'s identity, tokenizer and length limit, which a wrapper never
    changes (a cached or batched result is the backend's own)."""

    backend: EvaluationLM

    @property
    def identity(self) -> str:
        return self.backend.identity

    @property
    def tokenizer(self) -> Any:
        return self.backend.tokenizer

    @property
    def max_length(self) -> int | None:
        return self.backend.max_length
