"""What the Beyond Rating families share: roles, the signature, a quoting helper, and
(re-exported from :mod:`scorers.lm.asking`) the batched ask-and-retry loop. Yes/No verdicts are
read by the project's one reader, :func:`scorers.lm.answers.parse_yes_no`, with its settings
(Beyond Rating App. A.3 gives no decoding: temperature 0)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from scorers.lm.asking import Asked, ReplyError, ask_many
from scorers.lm.embedding import DEFAULT_EMBEDDER
from scorers.options import MetricOptions, option
from scorers.signature import Signature

__all__ = [
    "BEYOND_VERSION",
    "JUDGE_ROLE",
    "PREPROCESSOR_ROLE",
    "Asked",
    "BeyondSignature",
    "ReplyError",
    "ask_many",
    "quote",
]

BEYOND_VERSION = 4
"""4: the rating error reads a review's rating on the data's scale (:mod:`scorers.scales`: ICLR
2020's 1-8, ICLR 2026's 0-10; 3 read every rating on 1-10). 3: Yes/No verdicts are read by the
project's one reader (also "Verdict: yes" and JSON strings) with its 16 new tokens (2: Beyond's
own reader, 8 tokens), and point lists tolerate doubled list markers, markdown labels and
"Category: point" (2 read none of those)."""
JUDGE_ROLE = "judge"
"""Inspect model role of the match and question judges (falls back to the evaluation LM)."""
PREPROCESSOR_ROLE = "preprocessor"
"""Inspect model role of structuring reviews and extracting points (falls back likewise)."""

T = TypeVar("T")


@dataclass(frozen=True)
class ChunkOptions(MetricOptions):
    """How a paper is cut into chunks and matched (summary coverage, the question score)."""

    embedder: str = option(DEFAULT_EMBEDDER, "the sentence-embedding model of the chunks")
    chunk_tokens: int = option(512, "a chunk's length, in the embedder's tokens", minimum=1)
    overlap: int = option(128, "tokens two neighbouring chunks share", minimum=0)
    k: int = option(5, "the most similar chunks kept", minimum=1)


@dataclass(frozen=True)
class BeyondSignature(Signature):
    """How a Beyond Rating number was computed: the models that produced it, the prompts and
    the family's choices (``choices``: the documented reconstruction of each formula)."""

    preprocessor: str = ""
    judge: str = ""
    embedder: str = ""
    choices: dict[str, str] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)


def quote(text: str, limit: int = 300) -> str:
    """``text`` quoted, its middle cut when it is long."""
    text = text.strip()
    if len(text) > limit:
        text = text[: limit // 2] + " [...] " + text[-limit // 2 :]
    return repr(text)
