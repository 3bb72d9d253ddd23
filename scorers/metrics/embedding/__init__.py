"""The BERTScore baseline's registration: the metrics of
:mod:`scorers.metrics.embedding.family` (what each computes), registered by name."""

from __future__ import annotations

from scorers.domains import DOMAINS
from scorers.metrics.embedding.family import (
    EMBEDDING_VERSION,
    BertScore,
    BertScoreOptions,
    BertScoreSignature,
    bertscore,
    sentences,
)
from scorers.registry import register_metric_class

__all__ = [
    "EMBEDDING_VERSION",
    "BertScore",
    "BertScoreOptions",
    "BertScoreSignature",
    "bertscore",
    "sentences",
]


register_metric_class(
    BertScore,
    domains=frozenset(DOMAINS),
    name="bertscore",
    display_name="BERTScore",
    family="embedding",
    higher_is_better=True,
    needs=frozenset({"embedder", "references"}),
    version=EMBEDDING_VERSION,
    options=BertScoreOptions,
    empty_candidate="unscored",
    description="sentence-level BERTScore F1 of the review against each reference",
    source="GEM paper, §4 Baselines and App. D.3 (the authors' notebook)",
)
