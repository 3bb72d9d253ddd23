"""LMExaminer (GEM paper §4 Baselines, App. D.3; Bai et al., 2024): an LLM judge reads the paper
and the review and scores the review 0-10 on understanding, coverage, substantiation and
constructiveness (the App. D.3 prompts, verbatim, in ``prompts/judge/``). The value is the number
in the judge's ``<overall_score>`` tag. No reference review is used.

The judge is the Inspect model role ``judge`` (the paper used GPT-4o), falling back to the
evaluation LM. Decoding: temperature 0, ``max_tokens`` (default 1024) new tokens. A reply whose
score cannot be read is asked again once (the one ask-and-retry path,
``scorers.lm.asking.ask_many``), sampled at temperature ``retry_temperature`` (default
0.7) with seed 1 (a greedy retry would repeat a local judge's reply word for word), then the item
is unscored with the last reply quoted. The paper is its full text, else its abstract (with the
title when it is a real one; ``paper_source`` in the details); a paper with neither is unscored
with the reason. For a local judge with a known context it is cut, by tokens,
to fit with the review and the reply (``paper_truncated``); the review is never cut: a review
that does not fit is unscored.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import prompts
from scorers.errors import Unscored
from scorers.lm.asking import ReplyError, ask_many
from scorers.lm.base import RETRY_TEMPERATURE, ChatMessage, GenerationSettings
from scorers.lm.chat import encode_text
from scorers.lm.threads import run_blocking
from scorers.options import MetricOptions, option
from scorers.registry import Metric
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.types import Item, Result

JUDGE_VERSION = 2
JUDGE_ROLE = "judge"
_TEMPLATES = ("judge/lm_examiner_system", "judge/lm_examiner_user")
_SCORE = re.compile(
    r"<overall_score>\s*(?:\[\s*)?([0-9]+(?:\.[0-9]+)?)\s*(?:/\s*10\s*)?(?:\]\s*)?</overall_score>"
)
_PROMPT_OVERHEAD = 600
"""Tokens the two templates and the chat markup take, kept free when cutting the paper."""


def examiner_messages(*, paper: str, review: str) -> list[ChatMessage]:
    return [
        {"role": "system", "content": prompts.render("judge/lm_examiner_system")},
        {
            "role": "user",
            "content": prompts.render("judge/lm_examiner_user", paper=paper, review=review),
        },
    ]


def parse_overall_score(reply: str) -> float | None:
    """The score in the reply's last complete ``<overall_score>`` tag (0-10; "7", "7.5", "[7]"
    and "7/10" are read), or None when there is none or it is out of range. Only the judge's own
    tag counts: a score inside the review cannot reach the reply's last tag unless the judge
    repeats it."""
    matches = _SCORE.findall(reply or "")
    if not matches:
        return None
    value = float(matches[-1])
    return value if 0.0 <= value <= 10.0 else None


@dataclass(frozen=True)
class JudgeSignature(Signature):
    judge: str = ""
    decoding: str = ""
    prompts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LMExaminerOptions(MetricOptions):
    max_tokens: int = option(1024, "the judge's reply budget, in new tokens", minimum=1)
    retry_temperature: float = option(
        RETRY_TEMPERATURE,
        "the temperature of the one retry after a reply with no readable score (seed 1)",
        minimum=0,
    )


class LMExaminer(Metric):
    options: LMExaminerOptions

    async def _paper(self, item: Item, resources: Resources) -> tuple[str, dict[str, Any]]:
        try:
            text, source = item.paper.content()
        except ValueError as missing:  # no text and no real abstract: nothing to read
            raise Unscored(f"nothing for the judge to read the review against: {missing}") from None
        facts: dict[str, Any] = {"paper_source": source, "paper_truncated": False}
        if resources.has_role(JUDGE_ROLE):
            return text, facts
        lm = await run_blocking(resources.lm)
        if lm.max_length is None:
            return text, facts
        review_tokens = len(encode_text(lm.tokenizer, item.candidate))
        budget = lm.max_length - self.options.max_tokens - review_tokens - _PROMPT_OVERHEAD
        if budget <= 0:
            raise Unscored(f"the review ({review_tokens} tokens) leaves no room for the paper")
        ids = encode_text(lm.tokenizer, text)
        if len(ids) > budget:
            text = lm.tokenizer.decode(ids[:budget])
            facts["paper_truncated"] = True
        return text, facts

    async def compute(self, item: Item, resources: Resources) -> Result:
        generator = resources.generator(JUDGE_ROLE)
        settings = GenerationSettings(max_new_tokens=self.options.max_tokens, temperature=0.0)
        signature = JudgeSignature(
            metric=self.name,
            family="judge",
            version=JUDGE_VERSION,
            judge=generator.identity,
            decoding=f"temperature 0, max_tokens {settings.max_new_tokens}, one retry at "
            f"temperature {self.options.retry_temperature:g} (seed 1)",
            prompts=prompt_hashes(_TEMPLATES),
        )
        if not item.candidate.strip():
            raise Unscored(
                "empty candidate: nothing for the judge to read",
                explanation="unscored: the candidate review is empty",
                details={"flags": ["empty_candidate"]},
                signature=signature,
            )
        try:
            paper, facts = await self._paper(item, resources)
        except Unscored as unscored:  # the item cannot be put to the judge
            unscored.signature = signature
            raise
        conversation = examiner_messages(paper=paper, review=item.candidate.strip())
        asked = await ask_many(
            generator,
            [conversation],
            _read_overall_score,
            settings=settings,
            retry_temperature=self.options.retry_temperature,
        )
        [value], [reply] = asked.values, asked.replies
        if value is not None:
            return Result(
                value=value,
                explanation=f"LMExaminer overall score {value:g} (attempt {asked.calls})\n\n"
                f"{reply}",
                details={**facts, "judge_calls": asked.calls, "reply": reply},
                signature=signature,
            )
        quoted = reply.strip()
        quoted = quoted if len(quoted) <= 600 else quoted[:300] + " [...] " + quoted[-300:]
        raise Unscored(
            f"the judge's reply has no readable <overall_score> (after a retry): {quoted!r}",
            explanation=f"unscored: no <overall_score> in the judge's replies\n\n{reply}",
            details={**facts, "judge_calls": asked.calls, "replies": asked.history[0]},
            signature=signature,
        )


def _read_overall_score(reply: str) -> float:
    """:func:`parse_overall_score` for the ask-and-retry path: no readable score is a
    :class:`~scorers.lm.asking.ReplyError`."""
    value = parse_overall_score(reply)
    if value is None:
        raise ReplyError("no readable <overall_score> (0-10)", reply=reply)
    return value
