"""BERTScore as the GEM authors computed it (GEM paper §4 Baselines, App. D.3; their notebook):
sentence-level, not token-level. Both texts have their newlines turned into spaces and are split
with ``re.split(r"(?<=[.!?])\\s+", text)`` (stripped, empty parts dropped); every sentence is
embedded (the candidate's with the model's ``s2s_query`` prompt when it has one); with S the
cosine matrix (candidate sentences x reference sentences), precision is the mean over candidate
sentences of the row maximum, recall the mean over reference sentences of the column maximum,
and the value is F1 = 2PR / (P + R), averaged over the references.

Option ``model``: the sentence-embedding model (default the packaged all-MiniLM-L6-v2, offline;
the paper's ``dunzhang/stella_en_400M_v5`` on a GPU); it is in the signature.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorers.lm.embedding import DEFAULT_EMBEDDER
from scorers.lm.threads import run_blocking
from scorers.options import MetricOptions, option
from scorers.per_reference import PerReferenceMetric
from scorers.resources import Resources
from scorers.signature import Signature
from scorers.types import Item, Review

EMBEDDING_VERSION = 1
_SPLIT = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The authors' sentence split (see the module doc)."""
    return [s.strip() for s in _SPLIT.split(text.replace("\n", " ")) if s.strip()]


def bertscore(candidate: np.ndarray, reference: np.ndarray) -> tuple[float, float, float]:
    """(precision, recall, F1) from normalised sentence embeddings (rows)."""
    similarity = candidate @ reference.T
    precision = float(similarity.max(axis=1).mean())
    recall = float(similarity.max(axis=0).mean())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


@dataclass(frozen=True)
class BertScoreOptions(MetricOptions):
    model: str = option(
        DEFAULT_EMBEDDER,
        "the sentence-embedding model: the packaged all-MiniLM-L6-v2, a local folder or a Hub id",
    )


@dataclass(frozen=True)
class BertScoreSignature(Signature):
    embedder: str = ""
    splitter: str = r"re.split(r'(?<=[.!?])\s+'), newlines as spaces"


class BertScore(PerReferenceMetric):
    value_key = "f1"
    options: BertScoreOptions

    def check_settings(self) -> None:
        """The embedding model can be found (the packaged default, a local folder, or a Hub id
        that the local cache or the Hub has)."""
        from scorers.lm.locate import locate_model

        if self.options.model != DEFAULT_EMBEDDER:
            locate_model(self.options.model, what=f"{self.name}'s embedding model")

    async def signature(self, item: Item, resources: Resources) -> BertScoreSignature:
        embedder = await run_blocking(resources.embedder, self.options.model)
        return BertScoreSignature(
            metric=self.name,
            family="embedding",
            version=EMBEDDING_VERSION,
            embedder=embedder.identity,
        )

    def candidate_problem(self, item: Item) -> str | None:
        return None if sentences(item.candidate) else "empty candidate: no sentence to embed"

    async def score_references(
        self,
        item: Item,
        references: Sequence[Review],
        resources: Resources,
        skipped: dict[str, str],
    ) -> list[dict[str, Any]]:
        embedder = await run_blocking(resources.embedder, self.options.model)

        def compute() -> list[dict[str, Any]]:
            source = embedder.encode(sentences(item.candidate), prompt_name="s2s_query")
            terms = []
            for review in references:
                target = embedder.encode(sentences(review.text))
                precision, recall, f1 = bertscore(source, target)
                terms.append(
                    {"reference_id": review.id, "precision": precision, "recall": recall, "f1": f1}
                )
            return terms

        return await run_blocking(compute)

    def headline(self, value: float, terms: Sequence[dict[str, Any]]) -> str:
        return f"mean BERTScore F1 over {len(terms)} reference(s): {value:.4f}"

    def describe(self, term: dict[str, Any]) -> str:
        return (
            f"- {term['reference_id']}: P = {term['precision']:.4f}, R = {term['recall']:.4f}, "
            f"F1 = {term['f1']:.4f}"
        )
