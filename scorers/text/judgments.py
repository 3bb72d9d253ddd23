"""Judgment preprocessing (GEM paper, App. C.1) and the ASSW synopsis (App. C.4).

An LLM rewrites a review into one judgment per line, each starting "The reviewer
appreciates/criticizes/questions/suggests". The rewrite is kept as the LLM wrote it (surrounding
whitespace removed); how many of its lines are judgment lines (lines starting
"The reviewer") is reported, and a rewrite with none is flagged so the scorer can say so.

Local evaluation LMs (transformers, vLLM) generate with the reply prefilled with "The reviewer",
the words the prompt requires every line to begin with: a decoding constraint for small models
that otherwise answer with a comment on the review (SmolLM2-135M does). The prefill is part of
the decoding settings, so it is in the cache key; Inspect role models are not prefilled.

Room to write (:func:`rewrite_budget`): a rewrite may use as many new tokens as its review has,
estimated at 4 characters a token and rounded up to a multiple of 128 (so that reviews of
similar length share a batch), at least 256 and at most 1,024 (:data:`REWRITE_BUDGET`). Why:
the GEM authors' GPT-4o rewrites of the 3,600 ICLR 2023 reviews of their release run to 0.41
(median) and at most 0.94 of their review's length in tokens, and to 862 tokens at most (SmolLM2's
tokenizer); 45% of them are longer than 256 tokens, the fixed limit this project used before,
and none is longer than this budget. A rewrite (or ASSW summary) that still stops at its limit is
marked (:attr:`Preprocessed.hit_limit`), and the metrics that use it say so in their results.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import prompts
from scorers.domains import domain as get_domain
from scorers.domains import template
from scorers.errors import GemTasksError
from scorers.lm.base import ChatMessage, GenerationSettings, hit_limit
from scorers.lm.generation import TextGenerator

__all__ = [
    "ASSW_SETTINGS",
    "JUDGMENT_LINE_START",
    "JUDGMENT_PREFIXES",
    "PREPROCESS_SETTINGS",
    "REWRITE_BUDGET",
    "EmptyTextError",
    "Preprocessed",
    "assw_messages",
    "count_judgment_lines",
    "judgment_statements",
    "lines_not_statements",
    "normalise_judgments",
    "preprocess_messages",
    "rewrite_budget",
    "rewrite_reviews",
    "rewrite_settings",
    "summarise_assw",
]

JUDGMENT_PREFIXES = (
    "The reviewer appreciates",
    "The reviewer criticizes",
    "The reviewer questions",
    "The reviewer suggests",
)

JUDGMENT_LINE_START = "The reviewer"

PREPROCESS_SETTINGS = GenerationSettings(
    max_new_tokens=256, temperature=0.0, repetition_penalty=1.1, prefill=JUDGMENT_LINE_START
)
"""The App. C.1 rewrite's decoding settings; its ``max_new_tokens`` is the smallest budget (each
review's own is :func:`rewrite_settings`)."""
ASSW_SETTINGS = GenerationSettings(max_new_tokens=512, temperature=0.0, repetition_penalty=1.1)

REWRITE_MIN_TOKENS = 256
REWRITE_MAX_TOKENS = 1024
REWRITE_STEP_TOKENS = 128
REWRITE_CHARS_PER_TOKEN = 4
REWRITE_BUDGET = "min(1024, max(256, 128 * ceil(characters / 4 / 128))) new tokens"
"""The rule of :func:`rewrite_budget`, as the signatures of the families that rewrite record it."""

_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_STATEMENT_MARKER = re.compile(r"^(?:[-*\u2022]|\d+[.)]|\[\d+\])\s*")
"""A list marker before a statement: ``-``, ``*``, ``•``, ``1.``, ``1)`` or ``[1]``."""


@dataclass(frozen=True)
class Preprocessed:
    """A review rewritten as judgment lines."""

    judgments: str
    n_judgment_lines: int
    raw_output: str
    hit_limit: bool | None = None
    """Whether the rewrite stopped at its token limit (None: not generated here, e.g. a stored
    dataset summary, or its generator did not say)."""

    @classmethod
    def from_reply(cls, reply: str, *, domain: str | None = None) -> Preprocessed:
        """A rewrite as the LLM wrote it (see :func:`normalise_judgments`), its judgment lines
        counted, and whether it stopped at its token limit (from a
        :class:`~scorers.lm.base.Reply`)."""
        judgments = normalise_judgments(reply)
        lines = count_judgment_lines(judgments, domain=domain)
        return cls(judgments, lines, str(reply), hit_limit(reply))


class EmptyTextError(GemTasksError, ValueError):
    """An empty or whitespace-only text was about to be sent to a model to be rewritten or
    summarised (a model would invent content for it)."""


def _require_text(text: str, what: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise EmptyTextError(f"refusing to send an empty {what} to a model: it would invent one")


def preprocess_messages(review: str, *, domain: str | None = None) -> list[ChatMessage]:
    """The App. C.1 conversation for one review (in ``domain``'s wording: a summary's or an
    answer's statements; peer review when None); an empty text raises :class:`EmptyTextError`
    (it has no judgments to rewrite)."""
    _require_text(review, get_domain(domain).report)
    return [
        {"role": "system", "content": prompts.render(template(domain, "gem/preprocess_system"))},
        {
            "role": "user",
            "content": prompts.render(template(domain, "gem/preprocess_user"), review=review),
        },
    ]


def assw_messages(paper_text: str) -> list[ChatMessage]:
    """The App. C.4 conversation for one paper's full text; an empty text raises
    :class:`EmptyTextError`."""
    _require_text(paper_text, "paper text")
    return [
        {"role": "system", "content": prompts.render("gem/assw_system")},
        {"role": "user", "content": prompts.render("gem/assw_user", paper=paper_text)},
    ]


def count_judgment_lines(text: str, *, domain: str | None = None) -> int:
    """Lines that start (after an optional list marker) with the domain's statement prefix
    ("The reviewer" in peer review)."""
    start = get_domain(domain).statement_prefix + " "
    return sum(1 for line in text.splitlines() if _BULLET.sub("", line.strip()).startswith(start))


def normalise_judgments(text: str) -> str:
    """The rewrite as the LLM wrote it, without surrounding whitespace (inner blank lines are
    kept: the authors score their GPT-4o rewrites verbatim, blank lines included)."""
    return text.strip()


def rewrite_budget(review: str) -> int:
    """The most new tokens ``review``'s judgment rewrite may use (see the module doc):
    ``min(1024, max(256, 128 * ceil(len(review) / 4 / 128)))``."""
    estimate = len(review) / REWRITE_CHARS_PER_TOKEN
    rounded = REWRITE_STEP_TOKENS * math.ceil(estimate / REWRITE_STEP_TOKENS)
    return min(REWRITE_MAX_TOKENS, max(REWRITE_MIN_TOKENS, rounded))


def rewrite_settings(review: str, *, domain: str | None = None) -> GenerationSettings:
    """The App. C.1 decoding settings for ``review``: :data:`PREPROCESS_SETTINGS` with its
    :func:`rewrite_budget`, the reply prefilled with the domain's statement prefix."""
    return replace(
        PREPROCESS_SETTINGS,
        max_new_tokens=rewrite_budget(review),
        prefill=get_domain(domain).statement_prefix,
    )


def _by_budget(reviews: Sequence[str], domain: str | None) -> dict[GenerationSettings, list[int]]:
    groups: dict[GenerationSettings, list[int]] = {}
    for index, review in enumerate(reviews):
        groups.setdefault(rewrite_settings(review, domain=domain), []).append(index)
    return groups


async def rewrite_reviews(
    generator: TextGenerator, reviews: Sequence[str], *, domain: str | None = None
) -> list[Preprocessed]:
    """Rewrite each review (each report of ``domain``) into judgment lines (App. C.1) with
    ``generator`` (a model role, or the evaluation LM as
    :class:`~scorers.lm.generation.LocalGenerator`): the one way reviews and other domains'
    reports are rewritten. One batch per rewrite budget, the batches concurrent; an empty review
    raises :class:`EmptyTextError`. From synchronous code:
    ``run_sync(rewrite_reviews(generator, reviews))`` (:func:`scorers.lm.threads.run_sync`)."""
    groups = list(_by_budget(reviews, domain).items())
    answers = await asyncio.gather(
        *(
            generator.generate(
                [preprocess_messages(reviews[i], domain=domain) for i in indexes], settings
            )
            for settings, indexes in groups
        )
    )
    out: list[Preprocessed | None] = [None] * len(reviews)
    for (_, indexes), replies in zip(groups, answers, strict=True):
        for index, reply in zip(indexes, replies, strict=True):
            out[index] = Preprocessed.from_reply(reply, domain=domain)
    return [p for p in out if p is not None]


async def summarise_assw(generator: TextGenerator, paper_texts: Sequence[str]) -> list[str]:
    """Author-stated strengths and weaknesses of each paper (App. C.4), as ``generator`` wrote
    them (one batch); an empty text raises :class:`EmptyTextError`."""
    replies = await generator.generate([assw_messages(t) for t in paper_texts], ASSW_SETTINGS)
    return [reply.strip() for reply in replies]


def judgment_statements(judgments: str, *, domain: str | None = None) -> list[str]:
    """The judgment lines of an App. C.1 rewrite (list markers removed; lines that are not
    judgments, such as a preamble, are dropped): lines starting with the domain's statement
    prefix ("The reviewer" in peer review)."""
    start = get_domain(domain).statement_prefix + " "
    out = []
    for line in judgments.splitlines():
        text = _STATEMENT_MARKER.sub("", line.strip()).strip()
        if text.startswith(start):
            out.append(text)
    return out


def lines_not_statements(judgments: str, *, domain: str | None = None) -> int:
    """How many non-blank lines of a rewrite :func:`judgment_statements` leaves out (a preamble,
    or the "They also ..." sentences of a paragraph-style rewrite): counted in the metadata of
    the metrics that score judgment lines, so that nothing vanishes without a trace."""
    lines = sum(1 for line in judgments.splitlines() if line.strip())
    return lines - len(judgment_statements(judgments, domain=domain))
