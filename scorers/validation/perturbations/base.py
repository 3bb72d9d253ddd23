"""What every perturbation strategy is: :class:`Perturbation`, the class each strategy subclasses,
the context some strategies need (:class:`PaperContext`), and the helpers shared by the LLM-based
strategies (their conversations, their decoding settings, reading an LLM's answer)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal

import prompts
from scorers.domains import template
from scorers.errors import GemTasksError
from scorers.lm.base import ChatMessage, GenerationSettings

Kind = Literal["degradation", "manipulation", "gaming"]
Expected = Literal["decrease", "no_increase"]
Level = Literal["review", "judgments"]
Conversations = dict[str, list[ChatMessage]]

PERTURB_SETTINGS = GenerationSettings(max_new_tokens=4000, temperature=0.0)
"""Decoding for LLM-based perturbations: temperature 0 and a 4,000-token limit, as in the GEM
authors' API calls and the Scoring Rules paper (App. D.2)."""


@dataclass(frozen=True)
class PaperContext:
    """What some strategies need beyond the review: the paper (``abstract_copy``,
    ``paper_copy``), the dataset's universal review (``universal_review``), the level of the
    text being perturbed and the seed."""

    title: str = ""
    abstract: str = ""
    paper_text: str | None = None
    universal_review: str | None = None
    level: Level = "review"
    seed: int = 0
    domain: str = "peer_review"
    """The judgment domain of the text (:mod:`scorers.domains`)."""


class Perturbation(ABC):
    """One degradation, manipulation or gaming strategy and what a good metric does under it.

    A strategy is two steps, so that any harness can run the LLM: :meth:`requests` gives the chat
    conversations an LLM must answer (none for rule-based strategies), :meth:`apply` builds the
    perturbed text from the answers. Both receive a text already checked to be non-empty.
    """

    name: ClassVar[str]
    kind: ClassVar[Kind]
    level: ClassVar[Level] = "review"
    """``review``: operates on the raw review text; ``judgments``: on judgment lines ("The
    reviewer ..." one per line), i.e. after preprocessing."""
    uses_llm: ClassVar[bool] = False
    source: ClassVar[str]
    """Where the strategy comes from (paper and section), and whether its prompt is verbatim."""
    description: ClassVar[str]
    domains: ClassVar[frozenset[str]] = frozenset({"peer_review"})
    """The judgment domains the strategy applies to: most are written for reviews (sections,
    verdicts, the abstract, review prompts); the rule-based ones that only cut, replace or append
    text apply to every domain."""
    version: ClassVar[int] = 1
    """The strategy's comparability version: bumped when the same input gives another perturbed
    text (2: the sentence-splitting strategies since the splitter keeps initials and
    abbreviations together, :mod:`scorers.text.sentences`). The robustness task records it."""
    code: ClassVar[str] = ""
    """The strategy's letter in the Scoring Rules paper's Tables 4-5 (degradations: D, O, R, S,
    P, U; manipulations: M, N, H, P, S, R); variants the paper does not have carry a suffix
    (``Mf``, ``Rr``); the red-team strategies have none (they have their own table)."""

    @property
    def expected(self) -> Expected:
        """``decrease``: degradations should lower the score; ``no_increase``: manipulations and
        gaming strategies should not raise it."""
        return "decrease" if self.kind == "degradation" else "no_increase"

    def requests(self, text: str, *, paper: PaperContext) -> Conversations:
        """Named conversations for the LLM to answer, in the wording of ``paper.domain``; {} for
        a rule-based strategy."""
        return {}

    @abstractmethod
    def apply(
        self,
        text: str,
        *,
        other_text: str | None,
        answers: Mapping[str, str] | None,
        paper: PaperContext,
    ) -> str:
        """The perturbed text."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, kind={self.kind!r})"


def conversation(
    system: str, user: str, *, domain: str | None = None, **variables: object
) -> list[ChatMessage]:
    """A system and a user message rendered from ``prompts/`` templates (texts as variables).

    ``system`` is resolved in the wording of ``domain`` (:func:`scorers.domains.template`: a
    domain without its own version is refused, never given the peer-review one); ``user`` is the
    text alone (``perturb/review_user``) or a peer-review-only user turn, rendered as named.
    """
    return [
        {"role": "system", "content": prompts.render(template(domain, system), **variables)},
        {"role": "user", "content": prompts.render(user, **variables)},
    ]


class PerturbationReplyError(GemTasksError, ValueError):
    """The perturbation LLM's answer does not do what the strategy asked (empty, gaps left,
    the kept sentences lost): the text is not perturbed as specified, so a harness records the
    item as not perturbed, with this reason, instead of scoring it."""


def answer(name: str, answers: Mapping[str, str] | None, key: str) -> str:
    """The LLM's answer for ``key``, stripped. A missing key is a caller's ``ValueError``; an
    empty answer a :class:`PerturbationReplyError`."""
    if answers is None or key not in answers:
        given = sorted(answers) if answers else []
        raise ValueError(
            f"perturbation {name!r} needs the LLM's answer to request {key!r} (from "
            f"llm_requests); got answers for {given}"
        )
    text = answers[key]
    if not isinstance(text, str) or not text.strip():
        raise PerturbationReplyError(f"perturbation {name!r}: the LLM's answer to {key!r} is empty")
    return text.strip()
