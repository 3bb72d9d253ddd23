"""Π = LLM oracle: the conversations it is asked and how its replies are read (Scoring Rules paper
§4.4, App. C, App. D.1; GPPM paper §5.2, App. D.3).

Two kinds of question:

- **likelihood** (direct and KL f-variational cells): GPPM's 7-point judgment, verbatim
  (``prompts/fmi/likelihood_*``): for each numbered reference statement, a score k in
  −3..3 meaning a likelihood ratio of about 2^k; ``log r̂ = k · ln 2``. One call per reference
  scores all of its statements (GPPM App. D.3; the report-level cells send the whole reference as
  the single statement);
- **binary critic** (TV f-variational cells): "does the candidate support or align with this
  statement" (statement level, App. C Eq. 5) or "do these two reports describe the same item"
  (report level, §4.4, TVD-MI); Yes → +½, No → −½.

Replies are parsed strictly: a likelihood reply must give exactly one score per statement, a
binary reply must start with yes or no. An unreadable reply raises :class:`OracleReplyError`
with the reply; :func:`ask` retries once and then reports the item unscored (never a default).
"""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import prompts
from scorers.errors import GemTasksError
from scorers.lm.base import ChatMessage, GenerationSettings, retry_settings

__all__ = [
    "LIKELIHOOD_RATIOS",
    "NOT_GIVEN",
    "ORACLE_ROLE",
    "ORACLE_SETTINGS",
    "BINARY_SETTINGS",
    "OracleReplyError",
    "Parsed",
    "ask",
    "gppm_line_scores",
    "likelihood_messages",
    "parse_binary",
    "parse_likelihood",
    "same_item_messages",
    "support_messages",
]

ORACLE_ROLE = "oracle"
"""The model role that answers oracle questions (falls back to the evaluation LM)."""

ORACLE_SETTINGS = GenerationSettings(max_new_tokens=2000, temperature=0.0)
"""Temperature 0, one sample (Scoring Rules App. D.1); 2,000 new tokens, the GPPM authors'
limit for a whole 7-point reply (App. D.3 replies run to about 50 tokens per statement)."""

BINARY_SETTINGS = GenerationSettings(max_new_tokens=16, temperature=0.0)
"""Decoding for the binary critic: only the first word is read, so 16 new tokens suffice."""

LIKELIHOOD_RATIOS = {k: 2.0**k for k in range(-3, 4)}
"""The 7-point scale as likelihood ratios: k -> 2^k (1/8, 1/4, 1/2, 1, 2, 4, 8)."""

NOT_GIVEN = "Not given"
"""The synopsis slot of the 7-point prompt when no abstract is used: the GPPM authors' code's
spelling (``experiments/new_direct.py``, ``get_pridiction_score``: ``if abstract is None:
abstract = "Not given"``), which their printed prompt (App. D.3) shows as "Not Provided". The
code decides: it is what their reported numbers were computed with."""


class OracleReplyError(GemTasksError, ValueError):
    """An oracle reply that cannot be read as the answer asked for."""

    def __init__(self, message: str, reply: str) -> None:
        super().__init__(f"{message}; reply: {reply[:500]!r}")
        self.reply = reply


# --------------------------------------------------------------------------- conversations


def _conversation(name: str, **variables: object) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render(f"fmi/{name}_system")},
        {"role": "user", "content": prompts.render(f"fmi/{name}_user", **variables)},
    ]


def likelihood_messages(
    candidate: str, statements: Sequence[str], *, synopsis: str | None = None
) -> list[ChatMessage]:
    """GPPM App. D.3: the candidate as the initial comments, ``statements`` numbered as the
    additional comments; ``synopsis`` (an abstract), or None for the placeholder
    :data:`NOT_GIVEN`. An empty synopsis is a ``ValueError``: a caller that wants the abstract
    checks that the paper has one (an empty abstract must not silently become the
    placeholder)."""
    if not statements:
        raise ValueError("a likelihood question needs at least one statement")
    if synopsis is not None and not synopsis.strip():
        raise ValueError("an empty synopsis: pass None for the placeholder")
    return _conversation(
        "likelihood",
        synopsis=NOT_GIVEN if synopsis is None else synopsis,
        candidate=candidate,
        statements="\n".join(
            f"[{i}] {' '.join(s.split())}" for i, s in enumerate(statements, start=1)
        ),
    )


def support_messages(candidate: str, statement: str) -> list[ChatMessage]:
    """App. C Eq. 5: does the candidate support or align with ``statement``?"""
    return _conversation("support", candidate=candidate, statement=statement)


def same_item_messages(candidate: str, reference: str) -> list[ChatMessage]:
    """§4.4 (TVD-MI): do these two reports describe the same item?"""
    return _conversation("same_item", candidate=candidate, reference=reference)


# --------------------------------------------------------------------------- parsers

# GPPM authors' code (get_pridiction_score): these spellings, score s tried in order -3..3
_GPPM_FORMS = ("SCORE={}", "Score={}", "SCORE= {}", "Score= {}", "SCORE = {}", "Score = {}",
               "SCORE: {}", "Score: {}")  # fmt: skip


def gppm_line_scores(reply: str) -> list[int | None]:
    """Per non-empty line of ``reply``, the score the GPPM authors' parser reads, or None: the
    first s in the order −3, −2, ..., 3 for which one of ``SCORE=s``, ``Score=s``, ``SCORE= s``,
    ``Score= s``, ``SCORE = s``, ``Score = s``, ``SCORE: s``, ``Score: s`` occurs in the line (so
    a line with two scores gives its lowest, and ``<SCORE=+2>`` gives none)."""
    out: list[int | None] = []
    for line in reply.split("\n"):
        if not line.strip():
            continue
        found = None
        for s in range(-3, 4):
            if any(form.format(s) in line for form in _GPPM_FORMS):
                found = s
                break
        out.append(found)
    return out


_TAGGED_SCORE = re.compile(r"<\s*SCORE\s*=\s*([+-]?\d+)\s*>", re.IGNORECASE)


def parse_likelihood(reply: str, statements: int) -> list[int]:
    """The 7-point scores of a likelihood reply, one per statement in order: each line's
    ``<SCORE=k>`` (k in −3..3). Raises :class:`OracleReplyError` when the number of scores is not
    ``statements``, when a score is out of range, or when one line holds two scores."""
    scores: list[int] = []
    for line in reply.splitlines():
        found = _TAGGED_SCORE.findall(line)
        if len(found) > 1:
            raise OracleReplyError(f"a line holds {len(found)} scores", reply)
        if found:
            k = int(found[0])
            if k not in LIKELIHOOD_RATIOS:
                raise OracleReplyError(f"score {k} is outside -3..3", reply)
            scores.append(k)
    if len(scores) != statements:
        raise OracleReplyError(
            f"expected {statements} <SCORE=k> line(s), one per statement, found {len(scores)}",
            reply,
        )
    return scores


_ANSWER = re.compile(r"^[\s\"'*_`>#:\-\[(]*(yes|no)\b", re.IGNORECASE)


def parse_binary(reply: str) -> float:
    """+½ for a reply that starts with "yes", −½ for one that starts with "no" (any case,
    after quotes, markdown or punctuation); otherwise :class:`OracleReplyError`."""
    match = _ANSWER.match(reply)
    if not match:
        raise OracleReplyError("the reply does not start with Yes or No", reply)
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
    settings: GenerationSettings = ORACLE_SETTINGS,
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
        except OracleReplyError as error:
            reason = str(error)
    reason = f"unreadable oracle reply after {attempts} call(s): {reason}"
    return Parsed(None, tuple(replies), reason)


def log_ratio(k: int) -> float:
    """``log r̂ = k · ln 2`` for a 7-point score k."""
    return k * math.log(2.0)
