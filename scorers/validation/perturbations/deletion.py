"""Degradations that remove information: sentence and judgment deletion, random replacement, and
deletion & completion (GEM paper App. D.1.1-D.1.2; GPPM paper §6.1; Scoring Rules paper App. A,
Table 6)."""

from __future__ import annotations

from collections.abc import Mapping

from scorers.domains import DOMAINS, domains_with
from scorers.validation.perturbations.base import (
    Conversations,
    PaperContext,
    Perturbation,
    PerturbationReplyError,
    answer,
    conversation,
)
from scorers.validation.perturbations.segmentation import (
    every_other_judgment,
    every_other_sentence,
    kept_sentences,
)

MISSING_SENTENCE = "[There is one missing sentence]"
"""The gap marker of deletion & completion (GEM paper App. D.1.2)."""


ALL_DOMAINS = frozenset(DOMAINS)


class SentenceDeletion(Perturbation):
    name = "sentence_deletion"
    version = 2  # the sentence splitter keeps initials together
    domains = ALL_DOMAINS
    code = "S"
    kind = "degradation"
    source = "GEM paper App. D.1.1 (§4.2); GPPM paper §6.1; Scoring Rules paper App. A, Table 6"
    description = (
        "Delete every other sentence (the 2nd, 4th, ... of each section), keeping the ICLR "
        "2023 section headers and the layout."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        return every_other_sentence(text, None)


class JudgmentDeletion(Perturbation):
    name = "judgment_deletion"
    code = "J"
    kind = "degradation"
    level = "judgments"
    source = "GPPM paper §6.1 (Judgment-Level Degradation)"
    description = "Delete every other judgment line (keep the 1st, 3rd, ... non-blank lines)."

    def apply(self, text, *, other_text, answers, paper) -> str:
        return every_other_judgment(text)


class RandomReplacement(Perturbation):
    domains = ALL_DOMAINS
    name = "random_replacement"
    code = "R"
    kind = "degradation"
    source = "GPPM paper §6.1 (Random Report Replacement); Scoring Rules paper App. A, Table 6"
    description = "Replace the review with a review of another paper (other_text)."

    def apply(self, text, *, other_text, answers, paper) -> str:
        if other_text is None or not other_text.strip():
            raise ValueError(
                "perturbation 'random_replacement' needs other_text, a review of another paper"
            )
        if other_text.strip() == text.strip():
            raise ValueError("perturbation 'random_replacement': other_text is the review itself")
        return other_text


class DeletionCompletion(Perturbation):
    name = "deletion_completion"
    version = 2  # the sentence splitter keeps initials together
    domains = domains_with("perturb/completion_system")
    code = "D"
    kind = "degradation"
    uses_llm = True
    source = "GEM paper App. D.1.2 (§4.2); Scoring Rules paper App. A, Table 6"
    description = (
        "Replace every other sentence with '[There is one missing sentence]', then an LLM "
        "fills the gaps with sentences that add no significant information."
    )

    def requests(self, text: str, *, paper: PaperContext) -> Conversations:
        """``completion``: the text with every other sentence replaced by the gap marker."""
        masked = every_other_sentence(text, MISSING_SENTENCE)
        return {
            "completion": conversation(
                "perturb/completion_system",
                "perturb/review_user",
                domain=paper.domain,
                review=masked,
            )
        }

    def apply(
        self,
        text: str,
        *,
        other_text: str | None,
        answers: Mapping[str, str] | None,
        paper: PaperContext,
    ) -> str:
        completed = answer(self.name, answers, "completion")
        if MISSING_SENTENCE in completed:
            raise PerturbationReplyError(
                f"perturbation 'deletion_completion': the LLM left "
                f"{completed.count(MISSING_SENTENCE)} gap(s) {MISSING_SENTENCE!r} unfilled"
            )
        # the prompt asks to keep every existing sentence (GEM App. D.1.2): a reply that drops
        # or rewrites one is another text, not this text with its gaps filled
        flat = "".join(completed.split())  # spacing aside ("million ." / "million.")
        lost = [s for s in kept_sentences(text) if "".join(s.split()) not in flat]
        if lost:
            raise PerturbationReplyError(
                f"perturbation 'deletion_completion': the LLM's completion lost "
                f"{len(lost)} of the kept sentences, e.g. {lost[0][:80]!r}"
            )
        return completed
