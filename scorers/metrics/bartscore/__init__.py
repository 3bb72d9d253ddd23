"""BARTScore as the GEM authors computed it (GEM paper §4 Baselines, App. D.3; their notebook):
"Instead of BART, we use Llama3.1-8b", i.e. the evaluation LM with the App. C.2 prediction prompt
(synopsis "Not available") on the raw review texts:

- ``bartscore_recall``: ``log P(reference | candidate)``, the reference as the second reviewer's
  turn after the candidate;
- ``bartscore_precision``: ``log P(candidate | reference)``;
- ``bartscore_f1``: their arithmetic mean, as in the notebook.

Each is a summed log-probability (nats), averaged over the references: the GEM authors'
notebook (``server.ipynb``: ``query_logprob`` sums the assistant turn's token log-probabilities,
and ``BARTscore_*`` use it as it is) computed their baseline so, and so do we by default. The
original BARTScore (Yuan, Neubig & Liu, NeurIPS 2021) averages per target token instead; option
``normalisation="mean"`` gives that (summed log-probability / target tokens, the end-of-turn
token included). The signature's ``normalisation`` says which: the two are different numbers (a
sum grows with the text's length) and are never ranked together.

The notebook cut both texts to their first 10,000 characters; we never cut a scored text: a pair
that does not fit the evaluation LM's context is left out with its reason (stated in the
signature's ``text_cut``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scorers.domains import DOMAINS, template
from scorers.errors import MetricError
from scorers.lm.threads import run_blocking
from scorers.pmi import NOT_AVAILABLE, TooLongError, prediction_request
from scorers.registry import Metric, MetricSpec, register_metric_class
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Result

__all__ = ["BARTSCORE_VERSION", "BartScore", "BartScoreSignature"]

BARTSCORE_VERSION = 1
_NORMALISATIONS = {
    "sum": "sum of the target's token log-probabilities (GEM authors' notebook)",
    "mean": "mean per target token (original BARTScore)",
}
_TEMPLATES = ("gem/predict_system", "gem/predict_user")
_SOURCE = "GEM paper, §4 Baselines and App. D.3 (the authors' notebook)"


@dataclass(frozen=True)
class BartScoreSignature(Signature):
    evaluation_lm: str = ""
    direction: str = ""
    normalisation: str = ""
    """``sum`` (the GEM authors' notebook) or ``mean`` (per target token, original BARTScore)."""
    text_cut: str = "none (over-long pairs are left out)"
    prompts: dict[str, str] = field(default_factory=dict)


class BartScore(Metric):
    """One direction of BARTScore through the evaluation LM."""

    def __init__(self, spec: MetricSpec, *, direction: str, **options: Any) -> None:
        super().__init__(spec, **options)
        self.direction = direction
        if self.options["normalisation"] not in _NORMALISATIONS:
            raise MetricError(
                f"metric {spec.name!r}: normalisation must be one of {list(_NORMALISATIONS)}, "
                f"got {self.options['normalisation']!r}"
            )

    async def ascore(self, item: Item, resources: Resources) -> Result:
        lm = await run_blocking(resources.lm)
        signature = BartScoreSignature(
            metric=self.name,
            family="bartscore",
            version=BARTSCORE_VERSION,
            evaluation_lm=lm.identity,
            direction=self.direction,
            normalisation=_NORMALISATIONS[self.options["normalisation"]],
            prompts=prompt_hashes([template(item.domain, name) for name in _TEMPLATES]),
        )
        candidate = item.candidate.strip()
        skipped: dict[str, str] = {}
        if not candidate:
            return Result(
                value=None,
                reason="empty candidate: BARTScore has no text to score",
                explanation="unscored: the candidate review is empty",
                details={"skipped_references": skipped, "flags": ["empty_candidate"]},
                signature=signature,
            )
        pairs = []
        for review in item.references:
            reference = review.text.strip()
            if not reference:
                skipped[review.id] = "empty reference text"
                continue
            try:
                recall = prediction_request(
                    lm,
                    synopsis=NOT_AVAILABLE,
                    judgments=candidate,
                    target=reference,
                    domain=item.domain,
                )
                precision = prediction_request(
                    lm,
                    synopsis=NOT_AVAILABLE,
                    judgments=reference,
                    target=candidate,
                    domain=item.domain,
                )
            except TooLongError as exc:
                skipped[review.id] = str(exc)
                continue
            pairs.append((review.id, recall, precision))
        if not pairs:
            return Result.no_usable_reference(
                skipped, details={"skipped_references": skipped, "flags": []}, signature=signature
            )
        requests = [r for _, recall, precision in pairs for r in (recall, precision)]
        results = await run_blocking(lm.target_logprobs, requests)
        per_token = self.options["normalisation"] == "mean"
        terms = []
        for index, (reference_id, _, _) in enumerate(pairs):
            recall, precision = results[2 * index], results[2 * index + 1]
            recall_value = recall.total / recall.n_tokens if per_token else recall.total
            precision_value = precision.total / precision.n_tokens if per_token else precision.total
            terms.append(
                {
                    "reference_id": reference_id,
                    "recall": recall_value,
                    "precision": precision_value,
                    "f1": (recall_value + precision_value) / 2,
                    "recall_logprob_sum": recall.total,
                    "precision_logprob_sum": precision.total,
                    "reference_tokens": recall.n_tokens,
                    "candidate_tokens": precision.n_tokens,
                }
            )
        value = sum(t[self.direction] for t in terms) / len(terms)
        unit = "nats per token" if per_token else "summed nats"
        lines = [
            f"mean BARTScore-{self.direction} over {len(terms)} reference(s): {value:.3f} ({unit})"
        ]
        lines += [
            f"- {t['reference_id']}: log P(ref | cand) = {t['recall_logprob_sum']:.3f} "
            f"({t['reference_tokens']} tokens), log P(cand | ref) = "
            f"{t['precision_logprob_sum']:.3f} ({t['candidate_tokens']} tokens)"
            for t in terms
        ]
        lines += [f"- {k} left out: {v}" for k, v in skipped.items()]
        return Result(
            value=value,
            explanation="\n".join(lines),
            terms=terms,
            details={"skipped_references": skipped, "flags": []},
            signature=signature,
        )


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
        defaults={"normalisation": "sum"},
        empty_candidate="unscored",
        description=description,
        source=_SOURCE,
    )


_register("precision", "BARTScore-precision", "log P(candidate | reference), summed nats (GEM)")
_register("recall", "BARTScore-recall", "log P(reference | candidate), summed nats (GEM)")
_register("f1", "BARTScore-F1", "mean of BARTScore-precision and -recall")
