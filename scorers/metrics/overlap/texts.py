"""What the overlap baselines share: the offline word tokenizer, and scoring a candidate against
each reference with a per-pair function (the sample's value is the mean over references)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from scorers.per_reference import PerReferenceMetric
from scorers.resources import Resources
from scorers.signature import Signature
from scorers.types import Item, Review

__all__ = ["OVERLAP_VERSION", "WORD_TOKENIZER", "OverlapSignature", "PairwiseMetric", "words"]

OVERLAP_VERSION = 1
"""Comparability version of the overlap family."""

WORD_TOKENIZER = "nltk.NLTKWordTokenizer per regex sentence (no punkt download)"
"""The authors used ``nltk.word_tokenize``, which needs the ``punkt_tab`` data (a download);
this is the same Treebank-style word tokenizer over sentences split at [.!?] + space, so it works
offline. It differs from ``word_tokenize`` only where punkt would split sentences differently."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@cache
def _tokenizer() -> Any:
    from nltk.tokenize import NLTKWordTokenizer

    return NLTKWordTokenizer()


def words(text: str) -> list[str]:
    """Word tokens of ``text`` (see :data:`WORD_TOKENIZER`)."""
    tokenizer = _tokenizer()
    return [t for s in _SENTENCE.split(text.strip()) if s for t in tokenizer.tokenize(s)]


@dataclass(frozen=True)
class OverlapSignature(Signature):
    """An overlap baseline's signature: its tokenizer and library settings."""

    tokenizer: str = ""
    settings: str = ""


class PairwiseMetric(PerReferenceMetric):
    """Mean over the item's references of ``pair(candidate, reference)``; an empty reference is
    left out with its reason, none left is unscored; an empty candidate is scored (no overlap)
    and flagged."""

    family = "overlap"
    tokenizer = WORD_TOKENIZER
    settings = ""
    pair: Callable[[str, str], float]

    async def signature(self, item: Item, resources: Resources) -> OverlapSignature:
        return OverlapSignature(
            metric=self.name,
            family=self.family,
            version=self.spec.version,
            tokenizer=self.tokenizer,
            settings=self.settings,
        )

    async def score_references(
        self,
        item: Item,
        references: Sequence[Review],
        resources: Resources,
        skipped: dict[str, str],
    ) -> list[dict[str, Any]]:
        return [
            {"reference_id": r.id, "value": float(self.pair(item.candidate, r.text))}
            for r in references
        ]
