"""Auto-PRE arithmetic (Chen et al., AAAI 2026, §Methodology):
whole-answer parsers, the three exams as functions of judge answers, the strict mean threshold,
selection (all three exams passed), the paper's weights and the weighted vote. Pure Python.

Label convention (the authors' ``exam.py``): ``-1`` = review one better, ``0`` = tie, ``+1`` =
review two better; ``None`` = the reply could not be read (counted and left out, never a tie).
Every pair is judged in both orders: order 0 shows (a, b), order 1 shows (b, a).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "CONFIDENCE_LEVELS",
    "ConfidenceAnswer",
    "ExamScore",
    "Qualification",
    "Vote",
    "consistency_exam",
    "mean_threshold",
    "panel_weight",
    "parse_confidence_reply",
    "parse_preference",
    "parse_score",
    "scores_to_label",
    "pertinence_exam",
    "prefers_a",
    "qualify",
    "self_confidence_exam",
    "weighted_vote",
]

CONFIDENCE_LEVELS = {"null": 1, "low": 2, "medium": 3, "high": 4, "expert": 5}
"""The authors' confidence keywords (``prompt_key_null_*``) and their levels 1..5."""

_WORDS = {"one": -1, "1": -1, "two": 1, "2": 1, "tie": 0}
_LEAD = re.compile(
    r"^[\s\"'`*_>#:\-\[\(]*"
    r"(?:(?:the\s+)?(?:final\s+)?(?:answer|output|verdict|better\s+review(?:\s+is)?)\s*[:=]?\s*)?"
    r"[\s\"'`*_\[\(]*(?:review\s*)?[\"'`*_]*(one|two|tie|1|2)(?![\w])",
    re.IGNORECASE,
)
_ANSWER_LINE = re.compile(
    r"^[\s\"'`*_>#\-]*answer[\s\"'`*_]*[:=][\s\"'`*_]*(?:review\s*)?(one|two|tie|1|2)(?![\w])",
    re.IGNORECASE | re.MULTILINE,
)
_CONFIDENCE_LINE = re.compile(
    r"^[\s\"'`*_>#\-]*confidence[\s\"'`*_]*[:=][\s\"'`*_]*(null|low|medium|high|expert)(?![\w])",
    re.IGNORECASE | re.MULTILINE,
)


def parse_preference(reply: str) -> int | None:
    """The label a pairwise reply gives: the reply must *begin* with the answer (``one``,
    ``two``, ``tie``, ``1``, ``2``, optionally after quotes, markdown, "Answer:", "Output:" or
    "Review"), matched as a whole word; else None. "none", "someone" and "done" are not "one"
    (the authors' substring parser reads them as "one": a bug in their code); "Two. One could argue"
    is two (the first answer word: a documented choice)."""
    match = _LEAD.match(reply or "")
    return _WORDS[match.group(1).lower()] if match else None


_SCORE = re.compile(
    r"^[\s\"'`*_>#:\-\[\(]*(?:(?:the\s+)?(?:score|rating|output|answer)\s*[:=]?\s*)?"
    r"[\s\"'`*_\[\(]*(\d+(?:\.\d+)?)(?![\w.]*\d)"
    r"(?:\s*(?:/|out\s+of)\s*(\d+))?",
    re.IGNORECASE,
)


def parse_score(reply: str, low: int, high: int) -> float | None:
    """A pointwise reply's score: the reply must begin with the number (after quotes, markdown,
    "Score:" or "Rating:"; "4/5" and "4 out of 5" read 4 when the denominator is ``high``); a
    number outside [``low``, ``high``] (the prompt's scale) or anything else is
    None."""
    match = _SCORE.match(reply or "")
    if not match:
        return None
    if match.group(2) is not None and int(match.group(2)) != high:
        return None
    value = float(match.group(1))
    return value if low <= value <= high else None


def scores_to_label(score_one: float | None, score_two: float | None) -> int | None:
    """Two pointwise scores as a pairwise label (-1: review one higher, 0: equal, +1: two)."""
    if score_one is None or score_two is None:
        return None
    return 0 if score_one == score_two else (-1 if score_one > score_two else 1)


@dataclass(frozen=True)
class ConfidenceAnswer:
    """A reply to the confidence prompt: its label and confidence level (1..5), either None when
    its line could not be read."""

    label: int | None
    level: int | None


def parse_confidence_reply(reply: str) -> ConfidenceAnswer:
    """The last ``Answer: one|two`` line and the last ``Confidence: <keyword>`` line of a reply
    to the confidence prompt (whole words; a keyword the prompt does not define is unread)."""
    labels = _ANSWER_LINE.findall(reply or "")
    levels = _CONFIDENCE_LINE.findall(reply or "")
    return ConfidenceAnswer(
        label=_WORDS[labels[-1].lower()] if labels else None,
        level=CONFIDENCE_LEVELS[levels[-1].lower()] if levels else None,
    )


def prefers_a(label: int | None, order: int) -> float | None:
    """Credit for review ``a`` of one judgment: 1 when the judge preferred a, 0 when b, 0.5 for
    a tie, None when unparsed. In order 0 a is review one; in order 1 it is review two (the
    swapped label is negated)."""
    if label is None:
        return None
    signed = -label if order == 0 else label
    return 0.5 if signed == 0 else (1.0 if signed > 0 else 0.0)


@dataclass
class ExamScore:
    """One judge's score on one exam: ``value`` over ``used`` items, ``unparsed`` left out
    (None when nothing could be used; ``reason`` says why)."""

    value: float | None
    used: int
    unparsed: int
    reason: str | None = None
    extra: dict[str, float | int | None] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        return {
            "value": self.value,
            "used": self.used,
            "unparsed": self.unparsed,
            "reason": self.reason,
            **self.extra,
        }


def consistency_exam(pairs: Sequence[tuple[int | None, int | None]]) -> ExamScore:
    """P_c (eqs. 1-2): per pair, the labels in order 0 and order 1; credit 1 when the same review
    is preferred in both orders, 0 when not, 0.5 when either answer is a tie (the authors'
    product rule). A pair with an unparsed answer is left out and counted."""
    credits, unparsed = [], 0
    for first, second in pairs:
        a0, a1 = prefers_a(first, 0), prefers_a(second, 1)
        if a0 is None or a1 is None:
            unparsed += 1
            continue
        credits.append(0.5 if 0.5 in (a0, a1) else float(a0 == a1))
    return _mean_score(credits, unparsed)


def pertinence_exam(pairs: Sequence[tuple[int | None, int | None]]) -> ExamScore:
    """P_p (eq. 3): pairs are (a = review of paper P, b = review of a similar paper P'), labels
    in order 0 and order 1; each answer is a vote (1 for a, 0 for b, 0.5 tie); unparsed answers
    are left out and counted."""
    credits, unparsed = [], 0
    for labels in pairs:
        for order, label in enumerate(labels):
            credit = prefers_a(label, order)
            if credit is None:
                unparsed += 1
            else:
                credits.append(credit)
    return _mean_score(credits, unparsed)


def self_confidence_exam(
    easy: Iterable[float | None], hard: Iterable[float | None], *, mode: str
) -> ExamScore:
    """P_s (eq. 4), binary. ``mode="prob"``: values are uncertainties (−log p of the first
    answer token); pass iff mean uncertainty on easy pairs < on hard pairs. ``mode="verbal"``:
    values are confidence levels 1..5; pass iff mean level easy > hard. None values (no answer
    token, no readable keyword) are left out and counted; an empty set gives no score."""
    if mode not in ("prob", "verbal"):
        raise ValueError(f"mode must be 'prob' or 'verbal', got {mode!r}")
    easy, hard = list(easy), list(hard)
    e = [v for v in easy if v is not None]
    h = [v for v in hard if v is not None]
    unparsed = len(easy) - len(e) + len(hard) - len(h)
    extra: dict[str, float | int | None] = {
        "mode_prob": int(mode == "prob"),
        "easy_mean": sum(e) / len(e) if e else None,
        "hard_mean": sum(h) / len(h) if h else None,
        "easy_used": len(e),
        "hard_used": len(h),
    }
    if not e or not h:
        return ExamScore(None, len(e) + len(h), unparsed, "no usable easy or hard item", extra)
    easy_mean, hard_mean = sum(e) / len(e), sum(h) / len(h)
    passed = easy_mean < hard_mean if mode == "prob" else easy_mean > hard_mean
    return ExamScore(float(passed), len(e) + len(h), unparsed, None, extra)


def _mean_score(credits: list[float], unparsed: int) -> ExamScore:
    if not credits:
        return ExamScore(None, 0, unparsed, "no parsed answer")
    return ExamScore(sum(credits) / len(credits), len(credits), unparsed)


def mean_threshold(scores: Mapping[str, float | None]) -> tuple[float | None, set[str]]:
    """η = mean score over the candidates with a score; passers are those strictly above it (a
    candidate exactly at the mean fails; no 0.55 pre-filter: a documented choice). A candidate
    without a score fails."""
    known = {k: v for k, v in scores.items() if v is not None}
    if not known:
        return None, set()
    eta = math.fsum(known.values()) / len(known)
    return eta, {k for k, v in known.items() if v > eta}


def panel_weight(p_c: float, p_p: float, p_s: float = 1.0) -> float:
    """The paper's fusion weight w = (P_c + P_p + P_s) / 3 (P_s = 1 for every panel member)."""
    return (p_c + p_p + p_s) / 3.0


MIN_CANDIDATES = 3
"""Fewer candidates make the mean threshold meaningless (a documented choice)."""


@dataclass
class Qualification:
    """The exam table and its outcome: per judge its exam scores and passes, the thresholds,
    the panel (judges passing all three) and their weights; ``reason`` when no panel."""

    scores: dict[str, dict[str, ExamScore]]
    thresholds: dict[str, float | None]
    passed: dict[str, dict[str, bool]]
    panel: list[str]
    weights: dict[str, float]
    reason: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "judges": {
                judge: {
                    **{exam: score.as_dict() for exam, score in exams.items()},
                    "passed": self.passed[judge],
                    "in_panel": judge in self.panel,
                    "weight": self.weights.get(judge),
                }
                for judge, exams in self.scores.items()
            },
            "thresholds": self.thresholds,
            "panel": self.panel,
            "weights": self.weights,
            "reason": self.reason,
        }


def qualify(scores: Mapping[str, Mapping[str, ExamScore]]) -> Qualification:
    """Thresholds, passes, panel and weights from each judge's ``consistency``, ``pertinence``
    and ``self_confidence`` scores: consistency and pertinence pass strictly above the mean over
    candidates, self-confidence passes at 1; the panel is the intersection (Table 6)."""
    judges = list(scores)
    p_c = {j: scores[j]["consistency"].value for j in judges}
    p_p = {j: scores[j]["pertinence"].value for j in judges}
    eta_c, pass_c = mean_threshold(p_c)
    eta_p, pass_p = mean_threshold(p_p)
    passed = {
        j: {
            "consistency": j in pass_c,
            "pertinence": j in pass_p,
            "self_confidence": scores[j]["self_confidence"].value == 1.0,
        }
        for j in judges
    }
    panel = [j for j in judges if all(passed[j].values())]
    weights = {j: panel_weight(p_c[j], p_p[j], 1.0) for j in panel}  # type: ignore[arg-type]
    reason = None
    if len(judges) < MIN_CANDIDATES:
        reason = (
            f"{len(judges)} candidate judge(s): the mean threshold needs at least "
            f"{MIN_CANDIDATES}; no panel"
        )
        panel, weights = [], {}
    elif not panel:
        reason = "no candidate passed all three exams"
    return Qualification(
        scores={j: dict(scores[j]) for j in judges},
        thresholds={"consistency": eta_c, "pertinence": eta_p, "self_confidence": 1.0},
        passed=passed,
        panel=panel,
        weights=weights,
        reason=reason,
    )


@dataclass(frozen=True)
class Vote:
    """One judgment of one judge on (a, b) in one order."""

    judge: str
    weight: float
    order: int
    label: int | None


def weighted_vote(votes: Sequence[Vote]) -> tuple[float | None, dict[str, float | int]]:
    """The panel's verdict on (a, b): 1 when the weighted votes for a exceed those for b, 0 when
    fewer, 0.5 on an exact tie (§Methodology; a tie answer puts half its weight on each side);
    unparsed votes are left out and counted; None when no vote could be read."""
    for_a = for_b = 0.0
    unparsed = used = 0
    for vote in votes:
        credit = prefers_a(vote.label, vote.order)
        if credit is None:
            unparsed += 1
            continue
        used += 1
        for_a += vote.weight * credit
        for_b += vote.weight * (1.0 - credit)
    tally: dict[str, float | int] = {
        "weight_for_a": for_a,
        "weight_for_b": for_b,
        "votes_used": used,
        "votes_unparsed": unparsed,
    }
    if not used:
        return None, tally
    if math.isclose(for_a, for_b, rel_tol=1e-12, abs_tol=1e-12):
        return 0.5, tally
    return (1.0 if for_a > for_b else 0.0), tally
