"""What the Beyond Rating families share: roles, decoding, the signature, the Yes/No parser,
and (re-exported from :mod:`scorers.lm.asking`) the batched ask-and-retry loop."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TypeVar

from scorers.lm.asking import Asked, ReplyError, ask_many
from scorers.lm.base import GenerationSettings
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

BEYOND_VERSION = 2
JUDGE_ROLE = "judge"
"""Inspect model role of the match and question judges (falls back to the evaluation LM)."""
PREPROCESSOR_ROLE = "preprocessor"
"""Inspect model role of structuring reviews and extracting points (falls back likewise)."""
BINARY_SETTINGS = GenerationSettings(max_new_tokens=8, temperature=0.0)
"""A one-word Yes/No verdict: temperature 0 (Beyond Rating App. A.3 gives no decoding)."""

T = TypeVar("T")


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
