"""Where a verdict comes from and how it is read: a rating on the venue's scale (the paper's
``rating_scale``, :mod:`scorers.scales`) and an accept/reject decision, stated by the model
under test in a follow-up turn after its review, by the held-out human reviewer's stored
rating, or by a rule that needs no reviewer (the baseline rows). A verdict that cannot be read,
or that the data cannot give, carries the reason; nothing is guessed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import prompts
from scorers.registries import Registry
from scorers.scales import DEFAULT_SCALE, VenueScale, scale_named
from scorers.types import Item

__all__ = [
    "ACCEPT_THRESHOLD",
    "COMMITTEE_RULES",
    "RULES",
    "Rule",
    "VERDICT_PROMPT",
    "Verdict",
    "committee_ratings",
    "other_reviewers_rating",
    "parse_verdict",
    "scale_of",
    "verdict_of",
    "verdict_question",
]

ACCEPT_THRESHOLD = DEFAULT_SCALE.accept_threshold
"""The lowest rating on the accept side of ICLR's scale (the default; every scale of
:mod:`scorers.scales` has its own, 6 on each: "marginally above the acceptance threshold", ICLR
2020's "weak accept"). A rating at or above it leans to acceptance."""

VERDICT_PROMPT = "decision/verdict_user"
"""The follow-up question, asked in the review's conversation after the review."""


COMMITTEE_RULES = frozenset({"committee", "committee_all_reviewers"})
"""The rules whose rating is a mean of the reviewers' ratings (a rating error against the other
reviewers would compare it with itself)."""


def verdict_question(scale: VenueScale = DEFAULT_SCALE) -> str:
    """The verdict follow-up's text (``prompts/decision/verdict_user.jinja``) on the venue's
    scale: its range, its labelled values and its accept threshold."""
    return prompts.render(
        VERDICT_PROMPT,
        low=f"{scale.low:g}",
        high=f"{scale.high:g}",
        points=scale.points(),
    )


def scale_of(item: Item) -> VenueScale:
    """The scale of the item's paper (``Paper.rating_scale``)."""
    return scale_named(item.paper.rating_scale)


@dataclass(frozen=True)
class Verdict:
    """A stated rating (None when none was stated) and decision (None likewise), where they
    came from, and why a part is missing."""

    rating: float | None
    accept: bool | None
    source: str
    missing: str | None = None


_NUMBER = r"(\d+(?:\.\d+)?)"
_RATING = re.compile(rf"rating\W{{0,6}}?(?:[:=]|is)?\W{{0,4}}{_NUMBER}", re.IGNORECASE)
_OUT_OF_TEN = re.compile(rf"{_NUMBER}\s*(?:/|out of)\s*10\b", re.IGNORECASE)
_DECISION_LINE = re.compile(r"\bdecision\b([^\n]*)", re.IGNORECASE)
_ALTERNATIVES = re.compile(
    r"\b(?:accept|reject)\w*\s*(?:or|/|and)\s*(?:accept|reject)", re.IGNORECASE
)
_WORD = re.compile(r"\b(accept|reject)(?:ed|s)?\b", re.IGNORECASE)


def parse_verdict(reply: str, scale: VenueScale = DEFAULT_SCALE) -> Verdict:
    """The rating and decision a follow-up reply states. Read: a labelled rating ("Rating: 6",
    "**Rating**: 6", "rating is 6") else "6/10"; the first of accept/reject (or "accepted",
    "rejected") on the reply's "Decision" line, else the one of them the reply uses when it uses
    only one. A rating outside the scale's range (1-10 by default; ICLR 2026's 0-10) is not a
    rating; a "Decision" line that offers both ("Accept
    or Reject": the question's words given back), or a reply using both words with no such
    line, states no decision. ``missing`` says which part could not be read."""
    text = reply or ""
    found = _RATING.search(text) or _OUT_OF_TEN.search(text)
    rating = float(found.group(1)) if found else None
    problems = []
    if rating is not None and not scale.contains(rating):
        problems.append(f"a rating of {rating:g} is outside the {scale.low:g}-{scale.high:g} scale")
        rating = None
    elif rating is None:
        problems.append("no rating")
    labelled = _DECISION_LINE.search(text)
    line = labelled.group(1) if labelled else ""
    first = _WORD.search(line)
    accept: bool | None = None
    if _ALTERNATIVES.search(line):  # "Decision: Accept or Reject" (the question's words back)
        problems.append("a 'Decision' line offering both accept and reject")
    elif first:
        accept = first.group(1).lower() == "accept"
    else:
        words = {w.lower() for w in _WORD.findall(text)}
        if len(words) == 1:
            accept = words == {"accept"}
        elif len(words) > 1:
            problems.append("both accept and reject, with no 'Decision' line naming one")
        else:
            problems.append("no accept/reject decision")
    missing = None
    if problems:
        missing = f"the verdict reply states {'; '.join(problems)}: {text.strip()[:160]!r}"
    return Verdict(rating, accept, "the model's follow-up reply", missing)


def committee_ratings(item: Item) -> list[float]:
    """The stated ratings of the other reviewers: every review of the paper but the held-out
    one (the same reviews for every candidate of a paper), whatever the number of references;
    the references' where the item does not list them."""
    if item.other_ratings is not None:
        return [r for r in item.other_ratings if r is not None]
    return [r.rating for r in item.references if r.rating is not None]


def other_reviewers_rating(item: Item) -> float | None:
    """The mean of :func:`committee_ratings`, None when none has a rating."""
    ratings = committee_ratings(item)
    return sum(ratings) / len(ratings) if ratings else None


def _coin(paper_id: str, seed: int, rate: float) -> bool:
    digest = hashlib.sha256(f"{seed}:base_rate:{paper_id}".encode()).hexdigest()
    return int(digest[:13], 16) / 16**13 < rate


@dataclass(frozen=True)
class Rule:
    """A baseline rule: what it does, in the leaderboard's words, and the verdict it states for
    an item given the rule's settings (the candidate's ``baseline`` mapping)."""

    description: str
    verdict: Callable[[Item, Mapping[str, Any], str], Verdict]


def _always_reject(item: Item, rule: Mapping[str, Any], source: str) -> Verdict:
    return Verdict(None, False, source, "the rule states no rating")


def _base_rate(item: Item, rule: Mapping[str, Any], source: str) -> Verdict:
    rate = rule.get("rate")
    if not isinstance(rate, int | float) or not 0 <= rate <= 1:
        return Verdict(None, None, source, "no acceptance rate for the base-rate rule")
    accept = _coin(item.paper.id, int(rule.get("seed", 0)), float(rate))
    return Verdict(None, accept, source, "the rule states no rating")


def _committee(item: Item, rule: Mapping[str, Any], source: str) -> Verdict:
    mean = other_reviewers_rating(item)
    if mean is None:
        return Verdict(None, None, source, "the other reviewers' reviews carry no rating")
    return Verdict(mean, scale_of(item).accepts(mean), source)


def _committee_all_reviewers(item: Item, rule: Mapping[str, Any], source: str) -> Verdict:
    ratings = item.paper.official_ratings
    if not ratings:
        reason = (
            "the data lists no official ratings for the paper (join a decisions file with "
            "a ratings column: gem-tasks data convert --decisions)"
        )
        return Verdict(None, None, source, reason)
    mean = sum(ratings) / len(ratings)
    return Verdict(mean, scale_of(item).accepts(mean), source)


RULES: Registry[Rule] = Registry("baseline rule")
"""The baseline rules that state a verdict with no reviewer, by name."""
RULES.register(
    "always_reject", Rule("reject every paper (the majority class at ICLR)", _always_reject)
)
RULES.register(
    "base_rate",
    Rule("accept each paper with the dataset's acceptance rate, by a seeded coin", _base_rate),
)
RULES.register(
    "committee",
    Rule(
        "accept when the mean rating of the other reviewers (every review of the paper but the "
        "held-out one, however many are references) is at least the lowest accept-side rating "
        "of the venue's scale (6 on every ICLR scale); that mean is the rule's rating",
        _committee,
    ),
)
RULES.register(
    "committee_all_reviewers",
    Rule(
        "accept when the mean rating of every official reviewer of the paper is at least the "
        "lowest accept-side rating of the venue's scale (6 on every ICLR scale); that mean is "
        "the rule's rating. The ratings are the paper-level list of the venue's decision data, "
        "so the held-out reviewer's is among them: not the leave-one-out committee (for data "
        "whose reviews carry no rating)",
        _committee_all_reviewers,
    ),
)


def _rule_verdict(item: Item, rule: Mapping[str, Any]) -> Verdict:
    name = str(rule.get("rule"))
    return RULES[name].verdict(item, rule, f"the {name} rule")


def verdict_of(item: Item) -> Verdict:
    """The verdict the item's candidate states: a rule's (``item.baseline``), the held-out human
    reviewer's (their stored rating; accept when at or above the scale's accept threshold), or
    the model's follow-up reply's (:func:`parse_verdict`, on the paper's scale)."""
    if item.baseline is not None:
        return _rule_verdict(item, item.baseline)
    if item.candidate_is_held_out:
        rating = item.held_out.rating if item.held_out is not None else None
        if rating is None:
            return Verdict(
                None,
                None,
                "the held-out reviewer's rating",
                "the held-out review has no stored rating (the data carries none for it)",
            )
        return Verdict(rating, scale_of(item).accepts(rating), "the held-out reviewer's rating")
    if item.verdict_reply is None:
        return Verdict(
            None,
            None,
            "none",
            "no verdict was asked: the task asks the model its rating and decision after the "
            "review when a decision metric is among the scorers",
        )
    return parse_verdict(item.verdict_reply, scale_of(item))
