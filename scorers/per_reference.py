"""Metrics that score a candidate against each reference and report the mean: the loop, the
accounting of the references left out and the explanation, written once.

GEM and GEM-raw (:mod:`scorers.pmi`), BARTScore, BERTScore, BLEU and ROUGE-L all compute one
value per (candidate, reference) pair and average it over the item's usable references. What
differs is the pair's value; what is shared is here:

- a reference whose text is empty is left out, named in ``details["skipped_references"]`` with
  its reason, and so is one the family cannot use (over-long for the model, no judgment line);
- no reference left: the item is unscored, "no usable reference (<who: why>; ...)";
- the value is the mean of the terms' values; the explanation is one headline line, one line per
  reference and one per reference left out.

:class:`PerReferenceMetric` is the base with hooks (sacrebleu's ``Metric`` is the model): a
family says how it signs its results, what an empty candidate gets, and how it scores the
usable references (all at once, so a model can batch them); :func:`usable_references` and
:func:`explain_mean` serve a family whose loop has more steps (GEM rewrites texts first).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from scorers.errors import Unscored
from scorers.registry import Metric
from scorers.types import Item, Result, Review

if TYPE_CHECKING:
    from scorers.resources import Resources
    from scorers.signature import Signature

__all__ = [
    "EMPTY_REFERENCE",
    "PerReferenceMetric",
    "explain_mean",
    "left_out_lines",
    "no_usable_reference",
    "usable_references",
]

EMPTY_REFERENCE = "empty reference text"
"""Why a reference with no text is left out (never rewritten, never scored)."""


class _HasText(Protocol):
    id: str
    text: str


R = TypeVar("R", bound=_HasText)


def usable_references(
    references: Iterable[R],
    skipped: dict[str, str],
    *,
    reason: Callable[[R], str | None] | None = None,
) -> list[R]:
    """The references a metric can score, in order; each one left out goes into ``skipped``
    (id -> why): an empty text (:data:`EMPTY_REFERENCE`), then whatever ``reason`` says (None:
    usable)."""
    usable = []
    for reference in references:
        why = EMPTY_REFERENCE if not reference.text.strip() else None
        if why is None and reason is not None:
            why = reason(reference)
        if why is None:
            usable.append(reference)
        else:
            skipped[reference.id] = why
    return usable


def no_usable_reference(skipped: dict[str, str]) -> str:
    """The reason an item with no usable reference is unscored."""
    detail = "; ".join(f"{k}: {v}" for k, v in skipped.items()) or "no references"
    return f"no usable reference ({detail})"


def left_out_lines(skipped: dict[str, str]) -> list[str]:
    """One explanation line per reference left out."""
    return [f"- {k} left out: {v}" for k, v in skipped.items()]


def explain_mean(headline: str, term_lines: Sequence[str], skipped: dict[str, str]) -> str:
    """An explanation: the headline, a line per scored reference, a line per one left out."""
    return "\n".join([headline, *term_lines, *left_out_lines(skipped)])


class PerReferenceMetric(Metric):
    """The mean over the item's usable references of one value per reference.

    A family implements :meth:`signature` and :meth:`score_references`, and where its defaults
    do not fit, :meth:`candidate_problem` (an empty candidate is scored and flagged unless it
    says why not), :meth:`skip_reason`, :meth:`headline` and :meth:`describe`. Each term is a
    dict with ``reference_id`` and the value under :attr:`value_key`; the result's ``terms`` are
    the terms, its details ``skipped_references`` and ``flags``.
    """

    value_key = "value"
    """The key of each term whose mean is the value."""

    @abstractmethod
    async def signature(self, item: Item, resources: Resources) -> Signature:
        """The signature of this item's result (loads what it names: the model, the embedder)."""

    @abstractmethod
    async def score_references(
        self,
        item: Item,
        references: Sequence[Review],
        resources: Resources,
        skipped: dict[str, str],
    ) -> list[dict[str, Any]]:
        """The terms of the usable ``references``, one each, in order; a reference the family
        cannot score after all (a pair over the model's context) is left out of the terms and
        named in ``skipped``."""

    def candidate_problem(self, item: Item) -> str | None:
        """Why the candidate cannot be scored (the item is then unscored with that reason), or
        None. Default: every candidate can (an empty one is flagged ``empty_candidate``)."""
        return None

    def skip_reason(self, reference: Review) -> str | None:
        """Why a reference with text is left out, or None (default: never)."""
        return None

    def headline(self, value: float, terms: Sequence[dict[str, Any]]) -> str:
        return f"mean {self.spec.display_name} over {len(terms)} reference(s): {value:.4f}"

    def describe(self, term: dict[str, Any]) -> str:
        return f"- {term['reference_id']}: {term[self.value_key]:.4f}"

    async def compute(self, item: Item, resources: Resources) -> Result:
        signature = await self.signature(item, resources)
        skipped: dict[str, str] = {}
        flags = [] if item.candidate.strip() else ["empty_candidate"]
        details: dict[str, Any] = {"skipped_references": skipped, "flags": flags}
        problem = self.candidate_problem(item)
        if problem is not None:
            raise Unscored(
                problem,
                explanation="unscored: the candidate review is empty"
                if "empty_candidate" in flags
                else None,
                details=details,
                signature=signature,
            )
        usable = usable_references(item.references, skipped, reason=self.skip_reason)
        terms = await self.score_references(item, usable, resources, skipped) if usable else []
        if not terms:
            raise Unscored(no_usable_reference(skipped), details=details, signature=signature)
        value = sum(t[self.value_key] for t in terms) / len(terms)
        return Result(
            value=value,
            explanation=explain_mean(
                self.headline(value, terms), [self.describe(t) for t in terms], skipped
            ),
            terms=terms,
            details=details,
            signature=signature,
        )
