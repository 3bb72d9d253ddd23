"""Sentence BLEU as the GEM authors computed it (GEM paper App. D.3):
``nltk.translate.bleu_score.sentence_bleu([words(reference)], words(candidate))`` with the default
weights (1/4 for 1- to 4-grams) and no smoothing, so it is 0 whenever some n-gram order has no
match."""

from __future__ import annotations

import warnings

from scorers.metrics.overlap.texts import PairwiseMetric, words

__all__ = ["Bleu", "sentence_bleu"]


def sentence_bleu(candidate: str, reference: str) -> float:
    """BLEU of ``candidate`` against one ``reference`` (0 for an empty candidate)."""
    from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu

    hypothesis = words(candidate)
    if not hypothesis:
        return 0.0
    with warnings.catch_warnings():  # nltk warns on every zero n-gram count
        warnings.simplefilter("ignore")
        return float(nltk_sentence_bleu([words(reference)], hypothesis))


class Bleu(PairwiseMetric):
    settings = "nltk sentence_bleu, weights (0.25,)*4, no smoothing"

    @staticmethod
    def pair(candidate: str, reference: str) -> float:
        return sentence_bleu(candidate, reference)
