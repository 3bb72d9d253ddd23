"""Overlap baselines of the GEM paper (§4 Baselines, App. D.3): BLEU and ROUGE-L on the raw
review texts, each averaged over the references."""

from __future__ import annotations

from scorers.domains import DOMAINS
from scorers.metrics.overlap.bleu import Bleu, sentence_bleu
from scorers.metrics.overlap.rouge import RougeL, rouge_l
from scorers.metrics.overlap.texts import OVERLAP_VERSION, WORD_TOKENIZER, OverlapSignature, words
from scorers.registry import register_metric_class

__all__ = [
    "WORD_TOKENIZER",
    "Bleu",
    "OverlapSignature",
    "RougeL",
    "rouge_l",
    "sentence_bleu",
    "words",
]

_SOURCE = "GEM paper, §4 Baselines and App. D.3 (the authors' notebook pins the calls)"


def _register(name: str, display: str, cls: type, description: str) -> None:
    register_metric_class(
        cls,
        domains=frozenset(DOMAINS),
        name=name,
        display_name=display,
        family="overlap",
        higher_is_better=True,
        needs=frozenset({"references"}),
        version=OVERLAP_VERSION,
        empty_candidate="zero",
        description=description,
        source=_SOURCE,
    )


_register("bleu", "BLEU", Bleu, "sentence BLEU of the review against each reference")
_register("rouge_l", "ROUGE-L", RougeL, "ROUGE-L F-measure of the review and each reference")
