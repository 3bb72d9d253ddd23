"""Strategies in which an LLM writes the whole perturbed review from one conversation: a review
from the abstract alone, an ultra-concise summary, and the rewrites that change style or stance
(GEM paper App. D.1.3 and D.2.1; Scoring Rules paper App. A, Tables 6-7). The answer, stripped of
surrounding whitespace, is the perturbed review (the prompts ask for no wrapper to remove)."""

from __future__ import annotations

import math

from scorers.validation.perturbations.base import (
    Conversations,
    Perturbation,
    answer,
    conversation,
)


class AbstractOnly(Perturbation):
    name = "abstract_only"
    code = "P"
    kind = "degradation"
    uses_llm = True
    source = "GEM paper App. D.1.3 (§4.2); Scoring Rules paper App. A, Table 6 (Surface Report)"
    description = "Replace the review with one an LLM writes from the paper's abstract alone."

    def requests(self, text: str, *, abstract: str | None) -> Conversations:
        """``review``: a review written from ``abstract`` (required)."""
        if abstract is None or not abstract.strip():
            raise ValueError("perturbation 'abstract_only' needs the paper's abstract")
        return {
            "review": conversation(
                "perturb/abstract_review_system", "perturb/abstract_user", abstract=abstract
            )
        }

    def apply(self, text, *, other_text, answers, paper) -> str:
        return answer(self.name, answers, "review")


class Rewrite(Perturbation):
    """A rewrite of the whole review under one system prompt (``template``)."""

    template: str
    uses_llm = True

    def requests(self, text: str, *, abstract: str | None) -> Conversations:
        """``rewrite``: the review under this strategy's system prompt."""
        return {"rewrite": conversation(self.template, "perturb/review_user", review=text)}

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

    def requests(self, text: str, *, abstract: str | None) -> Conversations:
        """``rewrite``: the review, with its word cap (:func:`ultra_concise_cap`)."""
        return {
            "rewrite": conversation(
                self.template,
                "perturb/review_user",
                max_words=ultra_concise_cap(text),
                review=text,
            )
        }


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
