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
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorers.domains import DOMAINS
from scorers.lm.embedding import DEFAULT_EMBEDDER
from scorers.lm.threads import run_blocking
from scorers.registry import Metric, register_metric_class
from scorers.resources import Resources
from scorers.signature import Signature
from scorers.types import Item, Result

__all__ = ["EMBEDDING_VERSION", "BertScore", "BertScoreSignature", "bertscore", "sentences"]

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
class BertScoreSignature(Signature):
    embedder: str = ""
    splitter: str = r"re.split(r'(?<=[.!?])\s+'), newlines as spaces"


class BertScore(Metric):
    async def ascore(self, item: Item, resources: Resources) -> Result:
        embedder = await run_blocking(resources.embedder, self.options["model"])
        signature = BertScoreSignature(
            metric=self.name,
            family="embedding",
            version=EMBEDDING_VERSION,
            embedder=embedder.identity,
        )
        candidate = sentences(item.candidate)
        skipped = {r.id: "empty reference text" for r in item.references if not sentences(r.text)}
        usable = [r for r in item.references if sentences(r.text)]
        details: dict[str, Any] = {"skipped_references": skipped, "flags": []}
        if not candidate:
            return Result(
                value=None,
                reason="empty candidate: no sentence to embed",
                explanation="unscored: the candidate review is empty",
                details={**details, "flags": ["empty_candidate"]},
                signature=signature,
            )
        if not usable:
            return Result.no_usable_reference(skipped, details=details, signature=signature)

        def compute() -> list[dict[str, Any]]:
            source = embedder.encode(candidate, prompt_name="s2s_query")
            terms = []
            for review in usable:
                target = embedder.encode(sentences(review.text))
                precision, recall, f1 = bertscore(source, target)
                terms.append(
                    {"reference_id": review.id, "precision": precision, "recall": recall, "f1": f1}
                )
            return terms

        terms = await run_blocking(compute)
        value = sum(t["f1"] for t in terms) / len(terms)
        lines = [f"mean BERTScore F1 over {len(terms)} reference(s): {value:.4f}"]
        lines += [
            f"- {t['reference_id']}: P = {t['precision']:.4f}, R = {t['recall']:.4f}, "
            f"F1 = {t['f1']:.4f}"
            for t in terms
        ]
        lines += [f"- {k} left out: {v}" for k, v in skipped.items()]
        return Result(
            value=value,
            explanation="\n".join(lines),
            terms=terms,
            details=details,
            signature=signature,
        )


register_metric_class(
    BertScore,
    domains=frozenset(DOMAINS),
    name="bertscore",
    display_name="BERTScore",
    family="embedding",
    higher_is_better=True,
    needs=frozenset({"embedder", "references"}),
    version=EMBEDDING_VERSION,
    defaults={"model": DEFAULT_EMBEDDER},
    empty_candidate="unscored",
    description="sentence-level BERTScore F1 of the review against each reference",
    source="GEM paper, §4 Baselines and App. D.3 (the authors' notebook)",
)
