"""R = statement: a reference split into atomic claims (Scoring Rules paper §4.3, App. C Eq. 4,
App. D.1). Only references are decomposed; the candidate stays whole.

Two decompositions:

- ``judgments`` (default, peer review): the GEM App. C.1 judgment rewrite, one "The reviewer ..."
  line per claim (the rewrite the GEM family already makes and caches, or the dataset's stored
  one with ``dataset_summaries``; read by :func:`scorers.text.judgments.judgment_statements`);
  this is what GPPM's JUDGMENT statements were;
- ``llm``: a generic atomic-claim prompt (``prompts/fmi/decompose_*``, written for the
  project), one claim per line.

A reference whose decomposition has no claim is left out with its reason, never scored as zero.
"""

from __future__ import annotations

import re

import prompts
from scorers.lm.base import ChatMessage, GenerationSettings

__all__ = ["DECOMPOSE_SETTINGS", "claim_lines", "decompose_messages"]

DECOMPOSE_SETTINGS = GenerationSettings(max_new_tokens=1024, temperature=0.0)

_BULLET = re.compile(r"^(?:[-*\u2022]|\d+[.)]|\[\d+\])\s*")


def claim_lines(reply: str) -> list[str]:
    """The non-blank lines of a decomposition reply, list markers removed."""
    return [c for c in (_BULLET.sub("", line.strip()).strip() for line in reply.splitlines()) if c]


def decompose_messages(text: str) -> list[ChatMessage]:
    """The generic decomposition conversation for one reference."""
    if not text.strip():
        raise ValueError("refusing to decompose an empty text: a model would invent claims")
    return [
        {"role": "system", "content": prompts.render("fmi/decompose_system")},
        {"role": "user", "content": prompts.render("fmi/decompose_user", text=text)},
    ]
