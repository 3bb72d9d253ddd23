"""What the Beyond Rating families share: roles, decoding, the signature, and asking a
generator many short questions at once with strict reply parsing and one retry."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from scorers.errors import GemTasksError
from scorers.lm.base import ChatMessage, GenerationSettings
from scorers.lm.generation import TextGenerator
from scorers.signature import Signature

__all__ = [
    "BEYOND_VERSION",
    "BINARY_SETTINGS",
    "JUDGE_ROLE",
    "PREPROCESSOR_ROLE",
    "Asked",
    "BeyondSignature",
    "ReplyError",
    "ask_many",
    "parse_yes_no",
    "quote",
]

BEYOND_VERSION = 1
JUDGE_ROLE = "judge"
"""Inspect model role of the match and question judges (falls back to the evaluation LM)."""
PREPROCESSOR_ROLE = "preprocessor"
"""Inspect model role of structuring reviews and extracting points (falls back likewise)."""
BINARY_SETTINGS = GenerationSettings(max_new_tokens=8, temperature=0.0)
"""A one-word Yes/No verdict: temperature 0 (Beyond Rating App. A.3 gives no decoding)."""

T = TypeVar("T")


class ReplyError(GemTasksError, ValueError):
    """A model reply that cannot be read as the answer asked for (``calls``: generations spent
    before giving up, when known)."""

    def __init__(self, message: str, *, calls: int = 0) -> None:
        super().__init__(message)
        self.calls = calls


@dataclass(frozen=True)
class BeyondSignature(Signature):
    """How a Beyond Rating number was computed: the models that produced it, the prompts and
    the family's choices (``choices``: the documented reconstruction of each formula)."""

    preprocessor: str = ""
    judge: str = ""
    embedder: str = ""
    choices: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)


_YES_NO = re.compile(r"^[\s\"'*_`>#:\-\[(]*(?:answer\s*[:=]?\s*)?(yes|no)\b", re.IGNORECASE)


def parse_yes_no(reply: str) -> bool:
    """True for a reply that starts with "yes", False for "no" (any case, after quotes,
    markdown, punctuation or "Answer:"), and JSON ``{"match": true}`` style objects with one
    boolean; otherwise :class:`ReplyError`."""
    text = (reply or "").strip()
    match = _YES_NO.match(text)
    if match:
        return match.group(1).lower() == "yes"
    fenced = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(fenced)
    except ValueError:
        data = None
    if isinstance(data, dict):
        booleans = [v for v in data.values() if isinstance(v, bool)]
        if len(booleans) == 1:
            return booleans[0]
    raise ReplyError(f"the reply is not Yes or No: {quote(text)}")


def quote(text: str, limit: int = 300) -> str:
    """``text`` quoted, its middle cut when it is long."""
    text = text.strip()
    if len(text) > limit:
        text = text[: limit // 2] + " [...] " + text[-limit // 2 :]
    return repr(text)


@dataclass
class Asked(Generic[T]):
    """Answers to a batch of questions: ``values[i]`` is None where the reply stayed unreadable
    (``reasons[i]`` says why); ``calls`` counts every generation asked for."""

    values: list[T | None]
    reasons: list[str | None]
    calls: int

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
) -> Asked[T]:
    """Ask every conversation in one batch and parse the replies; the unreadable ones are asked
    again (another seed, so a cached reply is not read back) up to ``attempts`` calls each."""
    values: list[T | None] = [None] * len(conversations)
    reasons: list[str | None] = [None] * len(conversations)
    pending = list(range(len(conversations)))
    calls = 0
    for attempt in range(attempts):
        if not pending:
            break
        current = dataclasses.replace(settings, seed=settings.seed + attempt)
        replies = await generator.generate([conversations[i] for i in pending], current)
        calls += len(pending)
        still = []
        for index, reply in zip(pending, replies):
            try:
                values[index] = parse(reply)
                reasons[index] = None
            except ReplyError as error:
                reasons[index] = f"{error} (after {attempt + 1} call(s))"
                still.append(index)
        pending = still
    return Asked(values, reasons, calls)
