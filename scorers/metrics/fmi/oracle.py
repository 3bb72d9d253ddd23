"""Π = LLM oracle, the Scoring Rules family's own questions (Scoring Rules paper §4.4, App. C,
App. D.1): the **binary critic** of the TV f-variational cells, "does the candidate support or
align with this statement" (statement level, App. C Eq. 5) or "do these two reports describe the
same item" (report level, §4.4, TVD-MI); Yes → +½, No → −½. A binary reply must start with yes
or no. The 7-point likelihood question of the other oracle cells is shared with the GPPM family
and lives in :mod:`scorers.oracle`. :func:`ask` asks one question and retries an unreadable reply
once, then reports it unread (never a default).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import prompts
from scorers.lm.asking import ReplyError
from scorers.lm.base import ChatMessage, GenerationSettings, retry_settings

__all__ = [
    "BINARY_SETTINGS",
    "Parsed",
    "ask",
    "parse_binary",
    "same_item_messages",
    "support_messages",
]

BINARY_SETTINGS = GenerationSettings(max_new_tokens=16, temperature=0.0)
"""Decoding for the binary critic: only the first word is read, so 16 new tokens suffice."""

# --------------------------------------------------------------------------- conversations


def _conversation(name: str, **variables: object) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render(f"fmi/{name}_system")},
        {"role": "user", "content": prompts.render(f"fmi/{name}_user", **variables)},
    ]


def support_messages(candidate: str, statement: str) -> list[ChatMessage]:
    """App. C Eq. 5: does the candidate support or align with ``statement``?"""
    return _conversation("support", candidate=candidate, statement=statement)


def same_item_messages(candidate: str, reference: str) -> list[ChatMessage]:
    """§4.4 (TVD-MI): do these two reports describe the same item?"""
    return _conversation("same_item", candidate=candidate, reference=reference)


# --------------------------------------------------------------------------- parsers

_ANSWER = re.compile(r"^[\s\"'*_`>#:\-\[(]*(yes|no)\b", re.IGNORECASE)


def parse_binary(reply: str) -> float:
    """+½ for a reply that starts with "yes", −½ for one that starts with "no" (any case,
    after quotes, markdown or punctuation); otherwise :class:`~scorers.lm.asking.ReplyError`."""
    match = _ANSWER.match(reply)
    if not match:
        raise ReplyError("the reply does not start with Yes or No", reply=reply)
    return 0.5 if match.group(1).lower() == "yes" else -0.5


# --------------------------------------------------------------------------- asking

T = TypeVar("T")


@dataclass(frozen=True)
class Parsed(Generic[T]):
    """An oracle answer: the parsed value, or None with the reason (the last reply quoted)."""

    value: T | None
    replies: tuple[str, ...]
    reason: str | None = None

    @property
    def calls(self) -> int:
        return len(self.replies)


async def ask(
    generate: Callable[[list[list[ChatMessage]], GenerationSettings], Awaitable[list[str]]],
    conversation: list[ChatMessage],
    parse: Callable[[str], T],
    *,
    settings: GenerationSettings,
    attempts: int = 2,
) -> Parsed[T]:
    """Ask ``conversation`` and parse the reply; an unreadable reply is asked again
    (:func:`scorers.lm.base.retry_settings`: another seed, sampled when the first call was
    greedy, since a local greedy oracle would repeat itself), up to ``attempts`` calls in all,
    then the answer is None with the reason."""
    replies: list[str] = []
    reason = None
    for attempt in range(attempts):
        retry = retry_settings(settings, attempt)
        [reply] = await generate([conversation], retry)
        replies.append(reply)
        try:
            return Parsed(parse(reply), tuple(replies))
        except ReplyError as error:
            reason = str(error)
    reason = f"unreadable oracle reply after {attempts} call(s): {reason}"
    return Parsed(None, tuple(replies), reason)
