"""Asking Auto-PRE judges: a judge is a text generator with a prompt variant; every pair is
asked in both orders in one batch, unreadable replies once more (sampled, seed + 1), everything
through the generator's cache. Self-confidence is read from the first answer token's probability
when the judge is the local evaluation LM (teacher-forced), else from a verbal
confidence keyword (the authors' "direct" mode)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import prompts
from scorers.lm.asking import ask_many
from scorers.lm.base import ChatMessage, GenerationSettings, ScoringRequest
from scorers.lm.chat import encode_text, generation_prompt_ids
from scorers.lm.generation import LocalGenerator, TextGenerator
from scorers.lm.threads import run_blocking
from scorers.metrics.autopre.core import (
    ConfidenceAnswer,
    parse_confidence_reply,
    parse_preference,
    parse_score,
    scores_to_label,
)

__all__ = [
    "PAIRWISE_SETTINGS",
    "POINTWISE",
    "all_variants",
    "parse_judge_entries",
    "template_of",
    "VARIANTS",
    "Judge",
    "Judged",
    "Pair",
    "ask_confidence",
    "ask_pairs",
    "pair_messages",
]

VARIANTS = {
    "before": "autopre/pairwise_before",
    "after": "autopre/pairwise_after",
    "expert": "autopre/pairwise_expert",
}
"""Pairwise prompt variants: the authors' pairwise1 (instruction before the reviews) and
pairwise2 (after), adapted; ``expert`` was written for this project (an area-chair persona)."""
POINTWISE = {
    "point5": ("autopre/pointwise5", 1, 5),
    "point100": ("autopre/pointwise100", 0, 100),
}
"""Pointwise variants (template, lowest, highest score): each review is scored alone, adapted
from the authors' 5-level and 100-level prompts; a pair's label compares the two scores."""
CONFIDENCE_TEMPLATE = "autopre/confidence"


def all_variants() -> list[str]:
    return sorted([*VARIANTS, *POINTWISE])


def parse_judge_entries(
    spec: str | Sequence[str], *, check: Callable[[str], None] | None = None
) -> list[tuple[str, str, str]]:
    """``judge[@variant]`` entries (comma-separated or a list) -> (name, judge, variant), the
    variant defaulting to ``before``; ``check(judge)`` may reject a judge. Unknown variants,
    duplicates and an empty spec are ``ValueError``."""
    entries = spec.split(",") if isinstance(spec, str) else list(spec)
    out = []
    for entry in (e.strip() for e in entries if e.strip()):
        judge, _, variant = entry.rpartition("@") if "@" in entry else (entry, "", "")
        variant = variant or "before"
        if check is not None:
            check(judge)
        if variant not in all_variants():
            raise ValueError(f"judge {entry!r}: unknown prompt variant; use {all_variants()}")
        out.append((f"{judge}@{variant}", judge, variant))
    if not out:
        raise ValueError("no judge given")
    if len({name for name, _, _ in out}) != len(out):
        raise ValueError(f"a judge is given twice: {spec!r}")
    return out


def template_of(variant: str) -> str:
    """The prompt template of a pairwise or pointwise variant."""
    return VARIANTS[variant] if variant in VARIANTS else POINTWISE[variant][0]


PAIRWISE_SETTINGS = GenerationSettings(max_new_tokens=8, temperature=0.0)
"""Temperature 0 (paper §Implementation); a one-word answer needs few tokens."""
CONFIDENCE_SETTINGS = GenerationSettings(max_new_tokens=256, temperature=0.0)


@dataclass(frozen=True)
class Pair:
    """Two reviews ``a`` and ``b`` of (or shown with) one paper context."""

    id: str
    paper: str
    a: str
    b: str


@dataclass(frozen=True)
class Judge:
    """A candidate judge: ``name`` (as logged), its generator and prompt variant."""

    name: str
    generator: TextGenerator
    variant: str = "before"
    forced: bool = False
    """Local pairwise judges only: answer by comparing the teacher-forced probabilities of the
    first tokens of "one" and "two" instead of generating (a documented departure from the
    paper, for small local models that do not answer in the asked format)."""

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS and self.variant not in POINTWISE:
            raise ValueError(
                f"judge {self.name!r}: unknown variant {self.variant!r}; "
                f"{sorted([*VARIANTS, *POINTWISE])}"
            )

        if self.forced and (self.pointwise or not self.local):
            raise ValueError(f"judge {self.name!r}: forced answers need a local pairwise judge")

    @property
    def pointwise(self) -> bool:
        return self.variant in POINTWISE

    @property
    def local(self) -> bool:
        """Whether the judge is the local evaluation LM (first-token probabilities available)."""
        return isinstance(self.generator, LocalGenerator)


def pair_messages(template: str, pair: Pair, order: int) -> list[ChatMessage]:
    one, two = (pair.a, pair.b) if order == 0 else (pair.b, pair.a)
    content = prompts.render(template, paper=pair.paper, review_one=one, review_two=two)
    return [{"role": "user", "content": content}]


@dataclass
class Judged:
    """Replies and labels of one judge on pairs in both orders: ``labels[i] = (order 0, order
    1)``; ``replies[i]`` likewise (the last reply asked); ``calls`` = generations asked."""

    labels: list[tuple[int | None, int | None]]
    replies: list[tuple[str, str]]
    calls: int
    confidences: list[tuple[float | None, float | None]] = field(default_factory=list)


async def _ask(
    generator: TextGenerator,
    conversations: list[list[ChatMessage]],
    parse,
    settings: GenerationSettings,
    attempts: int,
) -> tuple[list, list[str], int]:
    asked = await ask_many(
        generator, conversations, parse, settings=settings, attempts=attempts, unread=_unread
    )
    return asked.values, asked.replies, asked.calls


def _unread(value) -> bool:
    if isinstance(value, ConfidenceAnswer):
        return value.label is None or value.level is None
    return value is None


async def _ask_pointwise(judge: Judge, pairs: Sequence[Pair], attempts: int) -> Judged:
    template, low, high = POINTWISE[judge.variant]
    texts = sorted({(p.paper, r) for p in pairs for r in (p.a, p.b)})
    conversations: list[list[ChatMessage]] = [
        [{"role": "user", "content": prompts.render(template, paper=paper, review=review)}]
        for paper, review in texts
    ]
    values, replies, calls = await _ask(
        judge.generator,
        conversations,
        lambda reply: parse_score(reply, low, high),
        dataclasses.replace(PAIRWISE_SETTINGS, max_new_tokens=12),
        attempts,
    )
    score = {t: v for t, v in zip(texts, values)}
    reply = {t: r for t, r in zip(texts, replies)}
    labels, shown = [], []
    for p in pairs:
        first = scores_to_label(score[(p.paper, p.a)], score[(p.paper, p.b)])
        labels.append((first, None if first is None else -first))
        shown.append((reply[(p.paper, p.a)], reply[(p.paper, p.b)]))
    return Judged(labels=labels, replies=shown, calls=calls)


async def _first_token_logprobs(
    judge: Judge, pairs: Sequence[Pair], where: Sequence[tuple[int, int, str]]
) -> list[float]:
    """log P(first token of ``word``) right after the prompt of ``pairs[i]`` in ``order``."""
    lm = judge.generator.lm  # type: ignore[attr-defined]
    template = VARIANTS[judge.variant]
    requests = []
    for i, order, word in where:
        context = await run_blocking(
            generation_prompt_ids, lm.tokenizer, pair_messages(template, pairs[i], order)
        )
        target = encode_text(lm.tokenizer, word)[:1]
        requests.append(ScoringRequest(tuple(context), tuple(target)))
    results = await run_blocking(lm.target_logprobs, requests) if requests else []
    return [r.total for r in results]


async def _ask_forced(judge: Judge, pairs: Sequence[Pair]) -> Judged:
    where = [(i, o, w) for i in range(len(pairs)) for o in (0, 1) for w in ("one", "two")]
    logprobs = await _first_token_logprobs(judge, pairs, where)
    labels, replies, confidences = [], [], []
    for i in range(len(pairs)):
        row_labels, row_replies, row_conf = [], [], []
        for o in (0, 1):
            one, two = logprobs[4 * i + 2 * o], logprobs[4 * i + 2 * o + 1]
            row_labels.append(0 if one == two else (-1 if one > two else 1))
            row_replies.append(f"forced: P(one)={math.exp(one):.4g}, P(two)={math.exp(two):.4g}")
            row_conf.append(-max(one, two))
        labels.append(tuple(row_labels))
        replies.append(tuple(row_replies))
        confidences.append(tuple(row_conf))
    return Judged(labels, replies, calls=len(where), confidences=confidences)


async def ask_pairs(judge: Judge, pairs: Sequence[Pair], *, attempts: int = 2) -> Judged:
    """The judge's pairwise label on every pair in both orders (one batch; an unreadable reply
    is asked again, sampled with the next seed, up to ``attempts`` calls). A pointwise judge
    scores each distinct review once; its label in order 1 is the negated order-0 label (the
    scores do not depend on the order), and ``replies`` are (reply on a, reply on b)."""
    if judge.pointwise:
        return await _ask_pointwise(judge, pairs, attempts)
    if judge.forced:
        return await _ask_forced(judge, pairs)
    template = VARIANTS[judge.variant]
    conversations = [pair_messages(template, p, o) for p in pairs for o in (0, 1)]
    values, replies, calls = await _ask(
        judge.generator, conversations, parse_preference, PAIRWISE_SETTINGS, attempts
    )
    return Judged(
        labels=[(values[2 * i], values[2 * i + 1]) for i in range(len(pairs))],
        replies=[(replies[2 * i], replies[2 * i + 1]) for i in range(len(pairs))],
        calls=calls,
    )


async def ask_confidence(
    judge: Judge, pairs: Sequence[Pair], *, mode: str = "auto", attempts: int = 2
) -> tuple[Judged, str]:
    """Each pair's answers with a confidence, both orders, and the mode used. ``prob`` (the
    local evaluation LM; ``auto`` picks it for a local judge): the pairwise answer, then the
    teacher-forced probability p of its first token ("one"/"two") after the prompt; the value is
    the uncertainty −log p (an answer that is not one/two has none). ``verbal`` (``auto`` for any
    other judge): the confidence prompt's keyword, level 1..5."""
    if mode == "auto":
        mode = "prob" if judge.local and not judge.pointwise else "verbal"
    if mode == "prob":
        if not judge.local or judge.pointwise:
            raise ValueError(
                f"judge {judge.name!r}: first-token probabilities need a local pairwise judge"
            )
        judged = await ask_pairs(judge, pairs, attempts=attempts)
        if judge.forced:
            return judged, mode
        where = [
            (i, order, "one" if label == -1 else "two")
            for i, labels in enumerate(judged.labels)
            for order, label in enumerate(labels)
            if label in (-1, 1)
        ]
        logprobs = await _first_token_logprobs(judge, pairs, where)
        confidences: list[list[float | None]] = [[None, None] for _ in pairs]
        for (i, order, _), logprob in zip(where, logprobs):
            confidences[i][order] = -logprob
        judged.confidences = [(a, b) for a, b in confidences]
        judged.calls += len(where)
        return judged, mode
    if mode != "verbal":
        raise ValueError(f"mode must be auto, prob or verbal, got {mode!r}")
    conversations = [pair_messages(CONFIDENCE_TEMPLATE, p, o) for p in pairs for o in (0, 1)]
    values, replies, calls = await _ask(
        judge.generator, conversations, parse_confidence_reply, CONFIDENCE_SETTINGS, attempts
    )
    levels = [v.level if v.label is not None else None for v in values]
    return (
        Judged(
            labels=[(values[2 * i].label, values[2 * i + 1].label) for i in range(len(pairs))],
            replies=[(replies[2 * i], replies[2 * i + 1]) for i in range(len(pairs))],
            calls=calls,
            confidences=[(levels[2 * i], levels[2 * i + 1]) for i in range(len(pairs))],
        ),
        mode,
    )
