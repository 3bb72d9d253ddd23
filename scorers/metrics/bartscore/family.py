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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from scorers.domains import template
from scorers.lm.threads import run_blocking
from scorers.options import MetricOptions, option
from scorers.per_reference import PerReferenceMetric
from scorers.pmi import NOT_AVAILABLE, TooLongError, prediction_request
from scorers.registry import MetricSpec
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Review

BARTSCORE_VERSION = 1
_NORMALISATIONS = {
    "sum": "sum of the target's token log-probabilities (GEM authors' notebook)",
    "mean": "mean per target token (original BARTScore)",
}
_TEMPLATES = ("gem/predict_system", "gem/predict_user")
SOURCE = "GEM paper, §4 Baselines and App. D.3 (the authors' notebook)"


@dataclass(frozen=True)
class BartScoreOptions(MetricOptions):
    normalisation: Literal["sum", "mean"] = option(
        "sum",
        "`sum`: summed nats of the target (the GEM authors' notebook); `mean`: nats per "
        "target token (the original BARTScore)",
    )


@dataclass(frozen=True)
class BartScoreSignature(Signature):
    evaluation_lm: str = ""
    direction: str = ""
    normalisation: str = ""
    """``sum`` (the GEM authors' notebook) or ``mean`` (per target token, original BARTScore)."""
    text_cut: str = "none (over-long pairs are left out)"
    prompts: dict[str, str] = field(default_factory=dict)


class BartScore(PerReferenceMetric):
    """One direction of BARTScore through the evaluation LM."""

    options: BartScoreOptions

    def __init__(self, spec: MetricSpec, *, direction: str, **options: Any) -> None:
        super().__init__(spec, **options)
        self.direction = direction

    @property
    def value_key(self) -> str:  # type: ignore[override]
        return self.direction

    async def signature(self, item: Item, resources: Resources) -> BartScoreSignature:
        lm = await run_blocking(resources.lm)
        return BartScoreSignature(
            metric=self.name,
            family="bartscore",
            version=BARTSCORE_VERSION,
            evaluation_lm=lm.identity,
            direction=self.direction,
            normalisation=_NORMALISATIONS[self.options.normalisation],
            prompts=prompt_hashes([template(item.domain, name) for name in _TEMPLATES]),
        )

    def candidate_problem(self, item: Item) -> str | None:
        if item.candidate.strip():
            return None
        return "empty candidate: BARTScore has no text to score"

    async def score_references(
        self,
        item: Item,
        references: Sequence[Review],
        resources: Resources,
        skipped: dict[str, str],
    ) -> list[dict[str, Any]]:
        lm = await run_blocking(resources.lm)
        candidate = item.candidate.strip()
        pairs = []
        for review in references:
            reference = review.text.strip()
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
            return []
        requests = [r for _, recall, precision in pairs for r in (recall, precision)]
        results = await run_blocking(lm.target_logprobs, requests)
        per_token = self.options.normalisation == "mean"
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
        return terms

    def headline(self, value: float, terms: Sequence[dict[str, Any]]) -> str:
        unit = "nats per token" if self.options.normalisation == "mean" else "summed nats"
        return (
            f"mean BARTScore-{self.direction} over {len(terms)} reference(s): {value:.3f} ({unit})"
        )

    def describe(self, term: dict[str, Any]) -> str:
        return (
            f"- {term['reference_id']}: log P(ref | cand) = {term['recall_logprob_sum']:.3f} "
            f"({term['reference_tokens']} tokens), log P(cand | ref) = "
            f"{term['precision_logprob_sum']:.3f} ({term['candidate_tokens']} tokens)"
        )
