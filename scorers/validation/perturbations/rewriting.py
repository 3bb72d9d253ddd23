"""Strategies in which an LLM writes the whole perturbed report from one conversation: a surface
report from weak context alone, an ultra-concise summary, and the rewrites that change style or
stance (GEM paper App. D.1.3 and D.2.1; Scoring Rules paper App. A, Tables 6-7). The answer,
stripped of surrounding whitespace, is the perturbed report (the prompts ask for no wrapper to
remove).

Each strategy's system prompt is resolved in the report's domain (:mod:`scorers.domains`): peer
review keeps the papers' prompts, other domains have their own under
``prompts/domains/<domain>/perturb/``; a strategy applies to the domains that have its prompt
(``domains``), and is refused elsewhere."""

from __future__ import annotations

import math

from scorers.domains import LEAD_SENTENCES, domains_with
from scorers.domains import domain as get_domain
from scorers.text.sentences import sentences
from scorers.validation.perturbations.base import (
    Conversations,
    PaperContext,
    Perturbation,
    answer,
    conversation,
)


def weak_context(paper: PaperContext) -> str:
    """What a surface report is written from, by the domain's ``weak_context``
    (:class:`scorers.domains.Domain`): the paper's abstract, the article's lead (its first
    :data:`~scorers.domains.LEAD_SENTENCES` sentences), the item's title (SPACE: the aspect) or
    the question.

    Raises:
        ValueError: the item has no such context (a paper without an abstract, an article
            without text, a SPACE item without its aspect).
    """
    kind = get_domain(paper.domain).weak_context
    if kind == "lead":
        found = [s for line in paper.abstract.splitlines() for s in sentences(line)]
        context = " ".join(found[:LEAD_SENTENCES])
    else:
        context = paper.title if kind == "title" else paper.abstract
    if not context.strip():
        raise ValueError(
            f"perturbation 'surface_report' needs the {kind} of the {paper.domain} item (its "
            f"weak context) and the item has none"
        )
    return context.strip()


class SurfaceReport(Perturbation):
    name = "surface_report"
    version = 2  # the sentence splitter keeps initials together
    code = "P"
    kind = "degradation"
    uses_llm = True
    domains = domains_with("perturb/surface_system")
    source = (
        "Scoring Rules paper App. A, Table 6 (Surface Report); for peer review the GEM paper's "
        "Abstract-only Review, App. D.1.3 (§4.2), verbatim; other domains' prompts not verbatim"
    )
    description = (
        "Replace the report with one an LLM writes from weak context alone: a review from the "
        "paper's abstract, a summary from the article's lead (or, with no input text, from the "
        "aspect), an answer from the question."
    )

    def requests(self, text: str, *, paper: PaperContext) -> Conversations:
        """``report``: a report written from :func:`weak_context` (required)."""
        return {
            "report": conversation(
                "perturb/surface_system",
                "perturb/surface_user",
                domain=paper.domain,
                context=weak_context(paper),
            )
        }

    def apply(self, text, *, other_text, answers, paper) -> str:
        return answer(self.name, answers, "report")


class Rewrite(Perturbation):
    """A rewrite of the whole report under one system prompt (``template``), in the wording of
    the report's domain."""

    template: str
    uses_llm = True

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "template" in cls.__dict__ and "domains" not in cls.__dict__:
            cls.domains = domains_with(cls.template)

    def variables(self, text: str) -> dict[str, object]:
        """Template variables besides the text (none by default)."""
        return {}

    def requests(self, text: str, *, paper: PaperContext) -> Conversations:
        """``rewrite``: the report under this strategy's system prompt."""
        return {
            "rewrite": conversation(
                self.template,
                "perturb/review_user",
                domain=paper.domain,
                review=text,
                **self.variables(text),
            )
        }

    def apply(self, text, *, other_text, answers, paper) -> str:
        return answer(self.name, answers, "rewrite")


def ultra_concise_cap(text: str) -> int:
    """10% of the review's words, rounded up (Scoring Rules paper App. A, Table 6)."""
    return max(1, math.ceil(len(text.split()) / 10))


class UltraConcise(Rewrite):
    name = "ultra_concise"
    code = "U"
    kind = "degradation"
    template = "perturb/ultra_concise_system"
    source = "Scoring Rules paper App. A, Table 6 (Ultra-Concise Compression); prompt not verbatim"
    description = (
        "An LLM summarises the review in at most 10% of its words, dropping specific "
        "evidence and caveats."
    )

    def variables(self, text: str) -> dict[str, object]:
        """``max_words``: the word cap (:func:`ultra_concise_cap`)."""
        return {"max_words": ultra_concise_cap(text)}


class OpinionFlip(Rewrite):
    name = "opinion_flip"
    code = "O"
    kind = "degradation"
    template = "perturb/opinion_flip_system"
    source = "Scoring Rules paper App. A, Table 6 (Opinion Flip); prompt not verbatim"
    description = (
        "An LLM reverses the review's overall verdict, keeping its structure and topical "
        "vocabulary."
    )


class Rephrase(Rewrite):
    name = "rephrase"
    code = "R"
    kind = "manipulation"
    template = "perturb/rephrase_system"
    source = "GEM paper App. D.2.1 (§4.3); Scoring Rules paper App. A, Table 7"
    description = (
        "An LLM rewrites the review in more fluent language, keeping structure and content."
    )


class PositiveShift(Rewrite):
    name = "positive_shift"
    code = "P"
    kind = "manipulation"
    template = "perturb/positive_shift_system"
    source = "Scoring Rules paper App. A, Table 7 (Opinion Shift (Positive)); prompt not verbatim"
    description = (
        "An LLM shifts the review's stance toward more favorable sentiment, keeping "
        "structure and coverage."
    )


class NegativeShift(Rewrite):
    name = "negative_shift"
    code = "N"
    kind = "manipulation"
    template = "perturb/negative_shift_system"
    source = "Scoring Rules paper App. A, Table 7 (Opinion Shift (Negative)); prompt not verbatim"
    description = (
        "An LLM shifts the review's stance toward less favorable sentiment, keeping "
        "structure and coverage."
    )


class HedgedShift(Rewrite):
    name = "hedged_shift"
    code = "H"
    kind = "manipulation"
    template = "perturb/hedged_shift_system"
    source = "Scoring Rules paper App. A, Table 7 (Opinion Shift (Neutral)); prompt not verbatim"
    description = "An LLM rewrites the review's claims as hedged, noncommittal statements."


class StrongShift(Rewrite):
    name = "strong_shift"
    code = "S"
    kind = "manipulation"
    template = "perturb/strong_shift_system"
    source = "Scoring Rules paper App. A, Table 7 (Opinion Shift (Extreme)); prompt not verbatim"
    description = "An LLM amplifies the review's claims to their strongest possible form."


class RephraseReorganize(Rewrite):
    name = "rephrase_reorganize"
    code = "Rr"
    kind = "manipulation"
    template = "perturb/rephrase_reorganize_system"
    source = (
        "Scoring Rules paper §5.1, App. A, Table 7 (Rephrase, its stronger variant that may "
        "reorganise); prompt not verbatim"
    )
    description = (
        "An LLM rewrites the review in a polished style and may reorganise it, adding no fact "
        "and keeping its stance."
    )
