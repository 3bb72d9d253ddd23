"""The BARTScore baselines' registration: the metrics of
:mod:`scorers.metrics.bartscore.family` (what each computes), registered by name."""

from __future__ import annotations

from scorers.domains import DOMAINS
from scorers.metrics.bartscore.family import (
    BARTSCORE_VERSION,
    SOURCE,
    BartScore,
    BartScoreOptions,
    BartScoreSignature,
)
from scorers.registry import register_metric_class

__all__ = ["BARTSCORE_VERSION", "BartScore", "BartScoreOptions", "BartScoreSignature"]


def _register(direction: str, display: str, description: str) -> None:
    register_metric_class(
        BartScore,
        domains=frozenset(DOMAINS),
        fixed={"direction": direction},
        name=f"bartscore_{direction}",
        display_name=display,
        family="bartscore",
        higher_is_better=True,
        needs=frozenset({"logprobs", "references"}),
        version=BARTSCORE_VERSION,
        options=BartScoreOptions,
        empty_candidate="unscored",
        description=description,
        source=SOURCE,
    )


_register("precision", "BARTScore-precision", "log P(candidate | reference), summed nats (GEM)")


_register("recall", "BARTScore-recall", "log P(reference | candidate), summed nats (GEM)")


_register("f1", "BARTScore-F1", "mean of BARTScore-precision and -recall")
