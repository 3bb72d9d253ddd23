"""The LLM oracle's 7-point judgment, shared by the GPPM family (its JUDGMENT score, GPPM paper
§5.2, App. D.3) and the Scoring Rules likelihood-oracle cells (Scoring Rules paper App. D.1: "a
7-point ordinal supporting judgment, which we map to {1/8, ..., 8}").

The question is GPPM App. D.3's prompt, verbatim (``prompts/gppm/judgment_*``): for each numbered
reference statement, a score k in −3..3 meaning a likelihood ratio of about 2^k, so
``log r̂ = k · ln 2``. One call per reference scores all of its statements. Two readers of the
reply: :func:`parse_likelihood` (strict: exactly one ``<SCORE=k>`` per statement, else
:class:`~scorers.lm.asking.ReplyError`) for the Scoring Rules cells, and
:func:`gppm_line_scores` (the GPPM authors' own line parser) for GPPM's score.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import prompts
from scorers.domains import template
from scorers.lm.asking import ReplyError
from scorers.lm.base import ChatMessage, GenerationSettings

__all__ = [
    "LIKELIHOOD_RATIOS",
    "NOT_GIVEN",
    "ORACLE_ROLE",
    "ORACLE_SETTINGS",
    "gppm_line_scores",
    "likelihood_messages",
    "log_ratio",
    "parse_likelihood",
]

ORACLE_ROLE = "oracle"
"""The model role that answers oracle questions (falls back to the evaluation LM)."""

ORACLE_SETTINGS = GenerationSettings(max_new_tokens=2000, temperature=0.0)
"""Temperature 0, one sample (Scoring Rules App. D.1); 2,000 new tokens, the GPPM authors'
limit for a whole 7-point reply (App. D.3 replies run to about 50 tokens per statement)."""

LIKELIHOOD_RATIOS = {k: 2.0**k for k in range(-3, 4)}
"""The 7-point scale as likelihood ratios: k -> 2^k (1/8, 1/4, 1/2, 1, 2, 4, 8)."""

NOT_GIVEN = "Not given"
"""The synopsis slot of the 7-point prompt when no abstract is used: the GPPM authors' code's
spelling (``experiments/new_direct.py``, ``get_pridiction_score``: ``if abstract is None:
abstract = "Not given"``), which their printed prompt (App. D.3) shows as "Not Provided". The
code decides: it is what their reported numbers were computed with."""


def likelihood_messages(
    candidate: str,
    statements: Sequence[str],
    *,
    synopsis: str | None = None,
    domain: str | None = None,
) -> list[ChatMessage]:
    """GPPM App. D.3: the candidate as the initial comments, ``statements`` numbered as the
    additional comments; ``synopsis`` (an abstract; in other domains the article or the
    question), or None for the placeholder :data:`NOT_GIVEN`. An empty synopsis is a
    ``ValueError``: a caller that wants the abstract checks that the paper has one (an empty
    abstract must not silently become the placeholder). ``domain`` picks the wording
    (:func:`scorers.domains.template`: peer review is App. D.3 verbatim, the other domains have
    their own copies under ``prompts/domains/<domain>/gppm/``)."""
    if not statements:
        raise ValueError("a likelihood question needs at least one statement")
    if synopsis is not None and not synopsis.strip():
        raise ValueError("an empty synopsis: pass None for the placeholder")
    return _conversation(
        "judgment",
        domain,
        synopsis=NOT_GIVEN if synopsis is None else synopsis,
        candidate=candidate,
        statements="\n".join(
            f"[{i}] {' '.join(s.split())}" for i, s in enumerate(statements, start=1)
        ),
    )


def _conversation(name: str, domain: str | None, **variables: object) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render(template(domain, f"gppm/{name}_system"))},
        {
            "role": "user",
            "content": prompts.render(template(domain, f"gppm/{name}_user"), **variables),
        },
    ]


# GPPM authors' code (get_pridiction_score): these spellings, score s tried in order -3..3
_GPPM_FORMS = ("SCORE={}", "Score={}", "SCORE= {}", "Score= {}", "SCORE = {}", "Score = {}",
               "SCORE: {}", "Score: {}")  # fmt: skip


def gppm_line_scores(reply: str) -> list[int | None]:
    """Per non-empty line of ``reply``, the score the GPPM authors' parser reads, or None: the
    first s in the order −3, −2, ..., 3 for which one of ``SCORE=s``, ``Score=s``, ``SCORE= s``,
    ``Score= s``, ``SCORE = s``, ``Score = s``, ``SCORE: s``, ``Score: s`` occurs in the line (so
    a line with two scores gives its lowest, and ``<SCORE=+2>`` gives none)."""
    out: list[int | None] = []
    for line in reply.split("\n"):
        if not line.strip():
            continue
        found = None
        for s in range(-3, 4):
            if any(form.format(s) in line for form in _GPPM_FORMS):
                found = s
                break
        out.append(found)
    return out


_TAGGED_SCORE = re.compile(r"<\s*SCORE\s*=\s*([+-]?\d+)\s*>", re.IGNORECASE)


def parse_likelihood(reply: str, statements: int) -> list[int]:
    """The 7-point scores of a likelihood reply, one per statement in order: each line's
    ``<SCORE=k>`` (k in −3..3). Raises :class:`~scorers.lm.asking.ReplyError` (the reply
    quoted) when the number of scores is not ``statements``, when a score is out of range, or
    when one line holds two scores."""
    scores: list[int] = []
    for line in reply.splitlines():
        found = _TAGGED_SCORE.findall(line)
        if len(found) > 1:
            raise ReplyError(f"a line holds {len(found)} scores", reply=reply)
        if found:
            k = int(found[0])
            if k not in LIKELIHOOD_RATIOS:
                raise ReplyError(f"score {k} is outside -3..3", reply=reply)
            scores.append(k)
    if len(scores) != statements:
        raise ReplyError(
            f"expected {statements} <SCORE=k> line(s), one per statement, found {len(scores)}",
            reply=reply,
        )
    return scores


def log_ratio(k: int) -> float:
    """``log r̂ = k · ln 2`` for a 7-point score k."""
    return k * math.log(2.0)
