"""What every metric family takes and gives: an :class:`Item` to score and a :class:`Result`.

An item is one candidate review of one paper with the reference reviews it is compared with
(and, for the families that use them, negative references from other papers). A result is a
value, or no value and the reason; an explanation a person can read; the per-reference terms
behind the value; family details; and the signature that says how it was computed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorers.signature import Signature

__all__ = [
    "AT_TOKEN_LIMIT",
    "CANDIDATE_IS_JUDGMENTS",
    "PLACEHOLDERS",
    "Item",
    "Paper",
    "Result",
    "Review",
    "abstract_problem",
    "note_limits",
    "real_title",
]

AT_TOKEN_LIMIT = "generations_at_limit"
"""Result detail: the generated texts the value rests on that stopped at their token limit (and
may have lost their end), as ``{what: limit}``, e.g. ``{"rewrite of reference r1": 384}``.
Absent when none did. Harnesses count the samples that have it (``at_token_limit``)."""

CANDIDATE_IS_JUDGMENTS = "candidate_is_judgments"
"""Item flag: the candidate already is judgment lines (one "The reviewer ..." per line), so
families that compare judgment rewrites use it as it is (judgment-level validation)."""


@dataclass(frozen=True)
class Paper:
    """The paper a review is about."""

    id: str
    title: str = ""
    abstract: str = ""
    paper_text: str | None = None
    assw: str | None = None
    """Author-stated strengths and weaknesses (GEM App. C.4), when the dataset has them."""
    accept: bool | None = None
    """The venue's outcome (accepted or not), when the dataset has a decision
    (:mod:`scorers.data.decisions`); the decision metrics score verdicts against it."""
    official_ratings: tuple[float, ...] | None = None
    """Every official reviewer's rating of the paper, as the venue's decision data lists them
    (a paper-level list; the held-out reviewer's is among them), when the dataset has it."""
    rating_scale: str = "iclr"
    """The scale every rating of the paper is on (:mod:`scorers.scales`): its accept threshold
    and range are the decision rules' and the verdict question's."""

    @property
    def abstract_problem(self) -> str | None:
        """Why the abstract is not one (``None`` when it is): see :func:`abstract_problem`."""
        return abstract_problem(self.abstract)

    @property
    def has_abstract(self) -> bool:
        """Whether the paper has a real abstract (see :func:`abstract_problem`)."""
        return self.abstract_problem is None

    @property
    def has_title(self) -> bool:
        """Whether the title is a real one (see :func:`real_title`)."""
        return real_title(self.title, self.id)

    def content(self) -> tuple[str, str]:
        """What a metric reads a review against: the full text (source ``paper_text``), else
        the abstract with the title when it is a real one (``title+abstract`` or ``abstract``).
        A paper with neither text nor a real abstract raises ``ValueError`` with the reason (a
        placeholder title alone, e.g. the paper's id, is not the paper)."""
        if (self.paper_text or "").strip():
            return self.paper_text.strip(), "paper_text"
        if not self.has_abstract:
            raise ValueError(f"the paper has no text, and {self.abstract_problem}")
        if self.has_title:
            return f"{self.title.strip()}\n\n{self.abstract.strip()}", "title+abstract"
        return self.abstract.strip(), "abstract"


PLACEHOLDERS = frozenset(
    {"not available", "not given", "not provided", "n/a", "na", "none", "null", "nan", "-", "tbd"}
)
"""Texts a dataset writes where it has none (compared lower-case, without surrounding
punctuation); a synopsis or title equal to one is missing."""


def _normalised(text: str) -> str:
    return text.strip().strip(".:;!?\"'()[]").strip().lower()


def abstract_problem(abstract: str | None) -> str | None:
    """Why ``abstract`` is not an abstract (``None`` when it is one): it is empty, or a
    placeholder such as "Not available" that a converter wrote for a paper without one."""
    text = (abstract or "").strip()
    if not text:
        return "the abstract is empty"
    if _normalised(text) in PLACEHOLDERS:
        return f"the abstract is the placeholder {text!r}"
    return None


def real_title(title: str | None, paper_id: str) -> bool:
    """Whether ``title`` is a real title: not empty, not a placeholder, and not the paper's id
    (a converter with no titles writes the id, as the GEM release's does)."""
    text = (title or "").strip()
    return bool(text) and text != str(paper_id).strip() and _normalised(text) not in PLACEHOLDERS


@dataclass(frozen=True)
class Review:
    """A human review: its text and, when the dataset has one, its judgment rewrite."""

    id: str
    text: str
    summary: str | None = None
    rating: float | None = None
    """The reviewer's rating on the dataset's (mapped) scale, when there is one."""


@dataclass(frozen=True)
class Item:
    """One candidate review to score.

    ``candidate_summary`` is a judgment rewrite of exactly this candidate stored with the data
    (the held-out human review's, for the human baseline); families use it only when asked to
    use dataset summaries. ``flags`` holds item facts such as :data:`CANDIDATE_IS_JUDGMENTS`.
    """

    paper: Paper
    candidate: str
    references: tuple[Review, ...]
    negatives: tuple[Review, ...] = ()
    candidate_summary: str | None = None
    flags: frozenset[str] = frozenset()
    held_out: Review | None = None
    """The paper's held-out human review (the human-baseline answer), when the harness has one;
    families that compare the candidate with it (``autopre_panel``) read it here."""
    other_ratings: tuple[float | None, ...] | None = None
    """The ratings of every review of the paper but the held-out one (None for one without a
    rating), whatever the number of references: the committee of "the other reviewers" that the
    decision rules and the rating error average. None where the harness does not list them (the
    references' ratings stand in)."""
    verdict_reply: str | None = None
    """The model under test's answer to the verdict follow-up (a rating and accept/reject,
    asked after its review; :mod:`scorers.metrics.decision`), when it was asked."""
    baseline: Mapping[str, Any] | None = None
    """A rule that states the verdict instead of a reviewer (``{"rule": "committee"}``, ...;
    :data:`scorers.metrics.decision.verdicts.RULES`): the baseline rows of the leaderboard."""
    domain: str = "peer_review"
    """What is judged (:mod:`scorers.domains`): ``peer_review`` (a paper and its reviews),
    ``summarization`` (an article and summaries; the article is ``paper.abstract``, θ of the
    "-S" metrics, and ``paper.paper_text``), ``opinion_summarization`` (a hotel's summaries, no
    input text), ``qa`` (a question, in ``paper.abstract``, and answers)."""

    def __post_init__(self) -> None:
        if not isinstance(self.candidate, str):
            raise TypeError(f"candidate must be a string, got {type(self.candidate).__name__}")
        object.__setattr__(self, "references", tuple(self.references))
        object.__setattr__(self, "negatives", tuple(self.negatives))
        object.__setattr__(self, "flags", frozenset(self.flags))
        from scorers.domains import domain

        domain(self.domain)  # an unknown domain is an error here, not a silent default

    @property
    def candidate_is_held_out(self) -> bool:
        """Whether the candidate is the held-out human review itself (the human baseline): a
        non-empty candidate equal to its text, surrounding whitespace aside. Facts stored with
        that review (its judgment rewrite, its rating) then belong to the candidate."""
        return (
            self.held_out is not None
            and bool(self.candidate.strip())
            and self.candidate.strip() == self.held_out.text.strip()
        )


@dataclass
class Result:
    """A metric's answer for one item: ``value``, or None with ``reason`` (unscored)."""

    value: float | None
    explanation: str
    reason: str | None = None
    terms: list[dict[str, Any]] = field(default_factory=list)
    """One entry per reference used (the family says what is in it)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Family-specific facts (rewrites compared, references left out, flags, costs)."""
    signature: Signature | None = None

    def __post_init__(self) -> None:
        if self.value is None and not self.reason:
            raise ValueError("an unscored result needs its reason")

    @property
    def scored(self) -> bool:
        return self.value is not None

    def note_limits(self, hits: Mapping[str, int]) -> Result:
        """Record generated texts that stopped at their token limit (``what -> limit``) in
        :data:`AT_TOKEN_LIMIT`; returns the result."""
        note_limits(self.details, hits)
        return self

    def metadata(self) -> dict[str, Any]:
        """Everything but the value, as plain data (what a harness logs with the score)."""
        out: dict[str, Any] = {"references": list(self.terms), **self.details}
        if self.signature is not None:
            out["signature"] = self.signature.as_dict()
        if self.reason:
            out["unscored_reason"] = self.reason
        return out


def note_limits(details: dict[str, Any], hits: Mapping[str, int]) -> dict[str, Any]:
    """Add ``hits`` (generated texts that stopped at their token limit: ``what -> limit``) to a
    result's ``details`` under :data:`AT_TOKEN_LIMIT` (nothing when there are none); returns
    ``details``."""
    if hits:
        details.setdefault(AT_TOKEN_LIMIT, {}).update(hits)
    return details
