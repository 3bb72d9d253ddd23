"""ROUGE-L as the GEM authors computed it (GEM paper App. D.3):
``rouge_score.rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)``, F-measure (symmetric in
the two texts)."""

from __future__ import annotations

from functools import cache
from typing import Any

from scorers.metrics.overlap.texts import PairwiseMetric

__all__ = ["RougeL", "rouge_l"]


@cache
def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F-measure of ``candidate`` and ``reference``."""
    return float(_scorer().score(reference, candidate)["rougeL"].fmeasure)


class RougeL(PairwiseMetric):
    tokenizer = "rouge_score default tokenizer, Porter stemmer"
    settings = "rouge_score RougeScorer(['rougeL'], use_stemmer=True), F-measure"

    @staticmethod
    def pair(candidate: str, reference: str) -> float:
        return rouge_l(candidate, reference)
