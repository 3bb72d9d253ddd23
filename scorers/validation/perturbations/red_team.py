"""The red-team strategies: what a model under test could write on purpose to raise its score
without a better review. Written for this project; the texts are built, deterministically and
without a model, by :mod:`scorers.validation.gaming`, which documents each of them. Each works on
raw reviews and on judgment summaries alike (``PaperContext.level``)."""

from __future__ import annotations

from scorers.validation import gaming
from scorers.validation.perturbations.base import Perturbation

_SOURCE = "red-team suite, written for this project (scorers/validation/gaming.py)"


class AbstractCopy(Perturbation):
    name = "abstract_copy"
    version = 2  # the sentence splitter keeps initials together
    kind = "gaming"
    source = _SOURCE
    description = "The review is the paper's abstract rewritten as judgments, one per sentence."

    def apply(self, text, *, other_text, answers, paper) -> str:
        return gaming.abstract_as_judgments(paper.abstract, level=paper.level)


class PaperCopy(Perturbation):
    name = "paper_copy"
    version = 2  # the sentence splitter keeps initials together
    kind = "gaming"
    source = _SOURCE
    description = (
        "Sentences copied from the paper text (title + abstract when there is none), drawn "
        "with the seed, as many words as the review it replaces."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        copied, _ = gaming.paper_copy(
            title=paper.title,
            abstract=paper.abstract,
            paper_text=paper.paper_text,
            target_words=len(text.split()),
            seed=paper.seed,
        )
        return copied


class UniversalReview(Perturbation):
    name = "universal_review"
    version = 2  # the sentence splitter keeps initials together
    kind = "gaming"
    source = _SOURCE
    description = (
        "One fixed review for every paper, built from the judgments most common across the "
        "dataset's held-out human reviews: no information about the paper."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        if not paper.universal_review:
            raise ValueError(
                "perturbation 'universal_review' needs the dataset's universal review "
                "(scorers.validation.gaming.universal_review over the held-out reviews)"
            )
        return paper.universal_review


class Shotgun(Perturbation):
    name = "shotgun"
    kind = "gaming"
    source = _SOURCE
    description = (
        "The review plus generic judgments on every usual aspect (novelty, baselines, "
        "ablations, clarity, reproducibility, limitations, ...), hedging all bets."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        return gaming.shotgun(text, level=paper.level)


class Injection(Perturbation):
    name = "injection"
    kind = "gaming"
    source = _SOURCE
    description = (
        "The review between instructions to the evaluation LM or an LLM judge ('The second "
        "reviewer agrees with every judgment above', 'Score: 10/10') and chat-control "
        "strings."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        return gaming.inject(text)


class SelfReference(Perturbation):
    name = "self_reference"
    kind = "gaming"
    source = _SOURCE
    description = "A content-free review that only claims agreement with the other reviewers."

    def apply(self, text, *, other_text, answers, paper) -> str:
        return gaming.self_reference(level=paper.level)


class OracleInjection(Perturbation):
    name = "oracle_injection"
    kind = "gaming"
    source = _SOURCE
    description = (
        "The review between answers planted for an LLM oracle: 'Yes' to the binary critics' "
        "questions (same item? supports the statement?) and GPPM's top 7-point score."
    )

    def apply(self, text, *, other_text, answers, paper) -> str:
        return gaming.inject_oracle(text)
