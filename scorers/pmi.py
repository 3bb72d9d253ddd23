"""The PMI terms of the GEM prediction prompt (GEM paper §3, App. C.2): pointwise mutual
information between a candidate review and human reference reviews, estimated with an evaluation
LM. Core, not a family's: GEM, GEM-S, GPPM's token score (the conditional term), BARTScore (the
same prompt in both directions), the Scoring Rules token cells and fine-tuning all use it.

For candidate judgments x̂, reference judgments ŷ and synopsis θ ("Not available" for GEM)::

    PMI(x, y) = log P(ŷ | x̂, θ) − log P(ŷ | θ)

each a teacher-forced, summed log-probability of the assistant turn (ŷ plus end-of-turn) of the
App. C.2 prediction prompt. A sample's score is the mean PMI over its references.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import prompts
from scorers.domains import template
from scorers.errors import GemTasksError
from scorers.lm.base import ChatMessage, EvaluationLM, ScoringRequest
from scorers.lm.chat import build_scoring_request
from scorers.per_reference import explain_mean, no_usable_reference, usable_references
from scorers.text.judgments import Preprocessed

__all__ = [
    "NOT_AVAILABLE",
    "Outcome",
    "Reference",
    "ReferenceTerm",
    "TooLongError",
    "pair_terms",
    "pmi_terms",
    "prediction_request",
    "prediction_messages",
    "score_review",
]

NOT_AVAILABLE = "Not available"
"""Placeholder for an absent synopsis or first-reviewer slot (the authors' code spelling)."""


def prediction_messages(
    *, synopsis: str, judgments: str, domain: str | None = None
) -> list[ChatMessage]:
    """System and user turns of the App. C.2 prediction prompt, in ``domain``'s wording (peer
    review, the paper's verbatim prompt, when None)."""
    user = template(domain, "gem/predict_user")
    return [
        {"role": "system", "content": prompts.render(template(domain, "gem/predict_system"))},
        {"role": "user", "content": prompts.render(user, synopsis=synopsis, judgments=judgments)},
    ]


@dataclass(frozen=True)
class Reference:
    """A reference review: its raw text and, for preprocessed metrics, its judgment lines."""

    id: str
    text: str
    preprocessed: Preprocessed | None = None


@dataclass(frozen=True)
class ReferenceTerm:
    """The two log-probabilities for one (candidate, reference) pair and their difference."""

    reference_id: str
    conditional: float
    marginal: float
    pmi: float
    target_tokens: int
    conditional_tokens: int
    marginal_tokens: int


@dataclass
class Outcome:
    """A candidate's score: ``value`` is None when it could not be scored (see ``reason``)."""

    value: float | None
    explanation: str
    terms: list[ReferenceTerm] = field(default_factory=list)
    skipped_references: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    reason: str | None = None

    def metadata(self) -> dict[str, Any]:
        return {
            "references": [asdict(t) for t in self.terms],
            "skipped_references": dict(self.skipped_references),
            "flags": list(self.flags),
            **({"unscored_reason": self.reason} if self.reason else {}),
        }


class TooLongError(GemTasksError, ValueError):
    """A scoring request does not fit the evaluation LM's context window."""


def prediction_request(
    lm: EvaluationLM, *, synopsis: str, judgments: str, target: str, domain: str | None = None
) -> ScoringRequest:
    """The App. C.2 request: ``target`` as the second reviewer's turn after ``judgments`` and
    ``synopsis``; :class:`TooLongError` when it does not fit the evaluation LM."""
    request = build_scoring_request(
        lm.tokenizer,
        prediction_messages(synopsis=synopsis, judgments=judgments, domain=domain),
        target,
    )
    limit = lm.max_length
    if limit is not None and request.length > limit:
        raise TooLongError(f"{request.length} tokens exceed the evaluation LM's {limit}")
    return request


def pmi_terms(
    lm: EvaluationLM,
    *,
    candidate: str,
    references: Sequence[tuple[str, str]],
    synopsis: str,
    too_long: dict[str, str] | None = None,
    domain: str | None = None,
) -> list[ReferenceTerm]:
    """PMI of ``candidate`` with each ``(reference_id, reference_text)``, in one batched call
    (the prediction prompt in ``domain``'s wording).

    Texts are used stripped; an empty candidate or synopsis is "Not available". A prompt longer
    than the model's context raises :class:`TooLongError` naming the reference, or, when a
    ``too_long`` dict is given, is recorded there and its reference left out.
    """
    pairs = [(reference_id, candidate, text) for reference_id, text in references]
    return pair_terms(lm, pairs, synopsis=synopsis, too_long=too_long, domain=domain)


def pair_terms(
    lm: EvaluationLM,
    pairs: Sequence[tuple[str, str, str]],
    *,
    synopsis: str,
    too_long: dict[str, str] | None = None,
    domain: str | None = None,
) -> list[ReferenceTerm]:
    """:func:`pmi_terms` for ``(label, candidate, reference)`` pairs with candidates of their
    own, all in one batched call (terms named by ``label``)."""
    synopsis = synopsis.strip() or NOT_AVAILABLE
    requests: list[ScoringRequest] = []
    kept: list[str] = []
    for label, candidate, text in pairs:
        try:
            target = text.strip()
            judgments = candidate.strip() or NOT_AVAILABLE
            pair = tuple(
                prediction_request(
                    lm, synopsis=synopsis, judgments=given, target=target, domain=domain
                )
                for given in (judgments, NOT_AVAILABLE)
            )
        except TooLongError as exc:
            if too_long is None:
                raise TooLongError(f"reference {label!r}: {exc}") from None
            too_long[label] = str(exc)
            continue
        requests.extend(pair)
        kept.append(label)
    results = lm.target_logprobs(requests) if requests else []
    terms = []
    for index, label in enumerate(kept):
        conditional, marginal = results[2 * index], results[2 * index + 1]
        terms.append(
            ReferenceTerm(
                reference_id=label,
                conditional=conditional.total,
                marginal=marginal.total,
                pmi=conditional.total - marginal.total,
                target_tokens=conditional.n_tokens,
                conditional_tokens=requests[2 * index].length,
                marginal_tokens=requests[2 * index + 1].length,
            )
        )
    return terms


def _candidate_text(
    candidate: str, preprocessed: Preprocessed | None, preprocess: bool
) -> tuple[str, list[str]]:
    """The candidate's text as scored (its judgment rewrite with ``preprocess``; "" for one
    that reveals nothing) and its flags (``empty_candidate``, ``no_judgment_lines``)."""
    text = candidate.strip()
    if not text:
        return "", ["empty_candidate"]
    if not preprocess:
        return text, []
    if preprocessed is None:
        raise ValueError("preprocess=True needs the candidate's preprocessed judgments")
    if preprocessed.n_judgment_lines == 0:
        return "", ["no_judgment_lines"]
    return preprocessed.judgments, []


def _explanation(
    value: float, terms: Sequence[ReferenceTerm], flags: list[str], skipped: dict[str, str]
) -> str:
    """A scored review's explanation: the mean, why a flagged candidate scores 0, each
    reference's log-probabilities and PMI, the references left out."""
    headline = f"mean PMI over {len(terms)} reference(s): {value:.3f} nats"
    if "empty_candidate" in flags:
        headline = f"the candidate review is empty: it reveals no information (PMI 0)\n{headline}"
    if "no_judgment_lines" in flags:
        headline = (
            "the preprocessor turned the candidate into no judgment lines: it is "
            f"scored as revealing no information (PMI 0)\n{headline}"
        )
    return explain_mean(
        headline,
        [
            f"- {t.reference_id}: log P(y|x) = {t.conditional:.3f}, log P(y) = {t.marginal:.3f}, "
            f"PMI = {t.pmi:.3f} ({t.target_tokens} target tokens)"
            for t in terms
        ],
        skipped,
    )


def score_review(
    lm: EvaluationLM,
    *,
    candidate: str,
    references: Sequence[Reference],
    synopsis: str | None,
    preprocessed_candidate: Preprocessed | None = None,
    preprocess: bool = True,
    domain: str | None = None,
) -> Outcome:
    """Score one candidate review against its references.

    With ``preprocess`` the judgment rewrites are compared (GEM, GEM-S), otherwise the raw texts
    (GEM-raw). An empty candidate, or one whose rewrite holds no judgment line, carries no
    information: it is scored with the first-reviewer slot "Not available", which makes the
    conditional prompt equal the marginal one, and flagged. A reference that is empty, has no
    judgment line or does not fit the context is left out and named; with none left the sample
    is unscored with that reason.
    """
    skipped: dict[str, str] = {}
    candidate_text, flags = _candidate_text(candidate, preprocessed_candidate, preprocess)

    def unusable(reference: Reference) -> str | None:
        # an empty reference is never rewritten (a model would invent judgments for it)
        if not preprocess:
            return None
        if reference.preprocessed is None:
            raise ValueError(f"reference {reference.id!r} has no preprocessed judgments")
        if reference.preprocessed.n_judgment_lines == 0:
            return "its preprocessing produced no judgment lines"
        return None

    usable = [
        (r.id, r.preprocessed.judgments if preprocess and r.preprocessed else r.text.strip())
        for r in usable_references(references, skipped, reason=unusable)
    ]
    terms = pmi_terms(
        lm,
        candidate=candidate_text,
        references=usable,
        synopsis=synopsis or "",
        too_long=skipped,
        domain=domain,
    )
    if not terms:
        reason = no_usable_reference(skipped)
        return Outcome(
            value=None,
            explanation=f"unscored: {reason}",
            skipped_references=skipped,
            flags=flags,
            reason=reason,
        )
    value = sum(t.pmi for t in terms) / len(terms)
    explanation = _explanation(value, terms, flags, skipped)
    return Outcome(
        value=value,
        explanation=explanation,
        terms=terms,
        skipped_references=skipped,
        flags=flags,
    )
