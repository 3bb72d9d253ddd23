"""Asking a generator many short questions at once, with strict reply parsing and retries: the
one batched ask-and-retry loop of the families that judge with an LLM (Beyond Rating's
preprocessor and judge, Auto-PRE's candidate judges)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from scorers.errors import GemTasksError
from scorers.lm.base import RETRY_TEMPERATURE, ChatMessage, GenerationSettings, retry_settings
from scorers.lm.generation import TextGenerator

__all__ = ["Asked", "ReplyError", "ask_many"]

T = TypeVar("T")


class ReplyError(GemTasksError, ValueError):
    """A model reply that cannot be read as the answer asked for: the one reply-error type of
    every parser (``reply``: the reply, quoted in the message when given; ``calls``:
    generations spent before giving up, when known)."""

    def __init__(self, message: str, *, reply: str | None = None, calls: int = 0) -> None:
        super().__init__(message if reply is None else f"{message}; reply: {reply[:500]!r}")
        self.reply = reply
        self.calls = calls


@dataclass
class Asked(Generic[T]):
    """Answers to a batch of questions: ``values[i]`` is the parsed answer (None where the
    parser raised; ``reasons[i]`` says why), ``replies[i]`` the last reply asked,
    ``history[i]`` every reply question ``i`` got, in order, ``item_calls[i]`` the generations
    it took, ``calls`` every generation asked for."""

    values: list[T | None]
    reasons: list[str | None]
    replies: list[str]
    item_calls: list[int]
    history: list[list[str]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(self.item_calls)

    @property
    def failures(self) -> list[int]:
        return [i for i, v in enumerate(self.values) if v is None]


async def ask_many(
    generator: TextGenerator,
    conversations: Sequence[Sequence[ChatMessage]],
    parse: Callable[[str], T],
    *,
    settings: GenerationSettings,
    attempts: int = 2,
    unread: Callable[[T | None], bool] | None = None,
    retry_temperature: float = RETRY_TEMPERATURE,
) -> Asked[T]:
    """Ask every conversation in one batch and parse the replies; the unreadable ones (the
    parser raised :class:`ReplyError`, or ``unread(value)`` holds) are asked again
    (:func:`scorers.lm.base.retry_settings`: another seed, sampled at ``retry_temperature``
    when the first call was greedy), up to ``attempts`` calls each. The one ask-and-retry path
    of every question the project puts to a model."""
    values: list[T | None] = [None] * len(conversations)
    reasons: list[str | None] = [None] * len(conversations)
    replies = [""] * len(conversations)
    item_calls = [0] * len(conversations)
    history: list[list[str]] = [[] for _ in conversations]
    pending = list(range(len(conversations)))
    for attempt in range(attempts):
        if not pending:
            break
        current = retry_settings(settings, attempt, temperature=retry_temperature)
        got = await generator.generate([conversations[i] for i in pending], current)
        still = []
        for index, reply in zip(pending, got):
            replies[index] = reply
            history[index].append(reply)
            item_calls[index] += 1
            try:
                values[index] = parse(reply)
                reasons[index] = None
            except ReplyError as error:
                values[index] = None
                reasons[index] = f"{error} (after {attempt + 1} call(s))"
            if values[index] is None or (unread is not None and unread(values[index])):
                still.append(index)
        pending = still
    return Asked(values, reasons, replies, item_calls, history)
