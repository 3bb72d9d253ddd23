"""Judgment domains: what is judged, what the judgment is called, and the wording of every
prompt that names them.

The Scoring Rules paper tests every metric in three domains (§5, Tables 3-5): peer review (a
paper, reviews), summarisation (an article, summaries; opinion summaries of a hotel without the
input reviews) and question answering (a question, answers). The engine is the same in each; only
the words change. A :class:`Domain` holds those words and the name of its prompt set: peer review
uses the papers' verbatim prompts (``prompts/<family>/<name>.jinja``, unchanged, so peer-review
numbers never move), and every other domain has its own copies under
``prompts/domains/<domain>/<family>/<name>.jinja``, each written for this project from the
section its header cites. :func:`template` resolves a prompt for a domain and refuses a prompt a
domain does not have (never falling back to the peer-review wording silently).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import prompts
from scorers.errors import GemTasksError
from scorers.registries import Registry

__all__ = [
    "DOMAINS",
    "LEAD_SENTENCES",
    "PEER_REVIEW",
    "Domain",
    "DomainError",
    "domain",
    "domains_with",
    "template",
]

PEER_REVIEW = "peer_review"

LEAD_SENTENCES = 2
"""How many opening sentences of an article make its lead (the weak context of a summary's
surface report)."""


class DomainError(GemTasksError, ValueError):
    """An unknown domain, or a prompt or a step a domain does not have."""


@dataclass(frozen=True)
class Domain:
    """The words of one domain.

    Attributes:
        name: the domain's name (``peer_review``, ``summarization``, ``opinion_summarization``,
            ``qa``), recorded in every signature as the prompt set.
        task_input: what is judged (``paper``, ``article``, ``hotel``, ``question``).
        report: what a judgment is called (``review``, ``summary``, ``answer``).
        synopsis: what θ is for the "-S" metrics (``abstract``, ``article``, ``question``), or
            None when the domain has no input text (opinion summaries without their reviews).
        statement_prefix: how a rewritten statement begins (GEM App. C.1: "The reviewer"), used
            to prefill a local preprocessor's reply.
        sections: whether reports have review sections (summary, strengths, weaknesses, ...),
            which Beyond Rating's field metrics need.
        has_rating: whether a report states a rating of the input (peer review: the venue's
            scale).
        weak_context: what a surface report is written from (Scoring Rules paper App. A,
            Table 6: "regenerate from weak context only"): ``abstract`` (the paper's abstract),
            ``lead`` (the article's first :data:`LEAD_SENTENCES` sentences: SummEval's
            CNN/DailyMail articles carry no headline, so the lead stands for "headline + lead
            paragraph"), ``title`` (what the item is about: SPACE's aspect, as the SPACE release
            has no input reviews) or ``question`` (the question, stored as the synopsis).
    """

    name: str
    task_input: str
    report: str
    synopsis: str | None
    statement_prefix: str
    weak_context: str
    sections: bool = False
    has_rating: bool = False

    @property
    def prompt_set(self) -> str:
        """Where the domain's prompts live: ``""`` (the papers' own) or ``domains/<name>/``."""
        return "" if self.name == PEER_REVIEW else f"domains/{self.name}/"


DOMAINS: Registry[Domain] = Registry("domain", error=DomainError)
"""Every domain by name."""
for _domain in (
    Domain(
        PEER_REVIEW,
        task_input="paper",
        report="review",
        synopsis="abstract",
        statement_prefix="The reviewer",
        weak_context="abstract",
        sections=True,
        has_rating=True,
    ),
    Domain(
        "summarization",
        task_input="article",
        report="summary",
        synopsis="article",
        statement_prefix="The summary states that",
        weak_context="lead",
    ),
    Domain(
        "opinion_summarization",
        task_input="hotel",
        report="summary",
        synopsis=None,
        statement_prefix="The summary states that",
        weak_context="title",
    ),
    Domain(
        "qa",
        task_input="question",
        report="answer",
        synopsis="question",
        statement_prefix="The answer states that",
        weak_context="question",
    ),
):
    DOMAINS.register(_domain.name, _domain)
del _domain


def domain(name: str | None) -> Domain:
    """The domain called ``name`` (peer review when None)."""
    return DOMAINS[name or PEER_REVIEW]


@cache  # asked for every scoring request: the shipped templates do not change while running
def template(domain_name: str | None, name: str) -> str:
    """The template ``name`` (``<family>/<name>``) in the wording of ``domain_name``.

    Raises:
        DomainError: the domain has no version of this prompt (a metric or a perturbation whose
            wording is specific to peer review, asked on another domain).
    """
    resolved = f"{domain(domain_name).prompt_set}{name}"
    if resolved not in prompts.available():
        raise DomainError(
            f"the {domain(domain_name).name} domain has no prompt {name!r} "
            f"(expected prompts/{resolved}.jinja)"
        )
    return resolved


def domains_with(name: str) -> frozenset[str]:
    """The domains that have a version of the template ``name`` (``<family>/<name>``): what an
    LLM-based strategy or metric whose wording is domain-specific applies to."""
    available = set(prompts.available())
    return frozenset(d.name for d in DOMAINS.values() if f"{d.prompt_set}{name}" in available)
