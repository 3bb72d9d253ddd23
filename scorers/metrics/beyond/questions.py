"""Question score (Beyond Rating §4.5, App. A.4): are a review's questions grounded in the
paper and worth asking?

The Questions section is split into atomic question points, each typed Explain (asks to
clarify content the paper has), Supplement (asks for something missing) or Other. For each
point the top-``k`` paper chunks by embedding cosine (the §4.2 chunks; retrieval is not
specified in the paper: our choice) are shown to the judge (role ``judge``), which answers
whether the excerpts contain what the question refers to or asks for. Then (Eq. 5,
reconstructed)::

    Explain:    c_i = 1 if the content is present (the question is not hallucinated)
    Supplement: s_i = 1 if it is absent (the request adds something)
    QS = (1/n) Σ_i 1[c_i = 1 or s_i = 1]

Other points count in n with 0 (``other="zero"``, the literal "at least one criterion") or are
left out (``other="exclude"``). A review without a Questions section, or with no question
point, is unscored; an unreadable verdict (after a retry) leaves the review unscored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

import prompts
from scorers.errors import Unscored
from scorers.lm.answers import YES_NO_SETTINGS, parse_yes_no
from scorers.lm.base import ChatMessage
from scorers.lm.threads import run_blocking
from scorers.metrics.beyond.common import JUDGE_ROLE, ChunkOptions, ask_many
from scorers.metrics.beyond.coverage import ChunkingEmbedder, paper_chunks
from scorers.metrics.beyond.family import BeyondMetric
from scorers.options import option
from scorers.resources import Resources
from scorers.types import Item

__all__ = ["QuestionMetric", "question_messages", "question_score"]


def question_messages(question: str, chunks: Sequence[str]) -> list[ChatMessage]:
    excerpts = "\n\n".join(f"[{i}] {chunk}" for i, chunk in enumerate(chunks, 1))
    return [
        {"role": "system", "content": prompts.render("beyond/question_system")},
        {
            "role": "user",
            "content": prompts.render("beyond/question_user", excerpts=excerpts, question=question),
        },
    ]


def question_score(verdicts: Sequence[tuple[str, bool | None]], *, other: str = "zero") -> float:
    """QS of (question type, content present?) pairs; see the module doc."""
    if other not in ("zero", "exclude"):
        raise ValueError(f"other must be 'zero' or 'exclude', got {other!r}")
    hits, n = 0, 0
    for qtype, present in verdicts:
        if qtype == "Other":
            if other == "zero":
                n += 1
            continue
        if present is None:
            raise ValueError(f"a {qtype} question has no verdict")
        n += 1
        hits += int(present if qtype == "Explain" else not present)
    if n == 0:
        raise ValueError("no question counts")
    return hits / n


@dataclass(frozen=True)
class QuestionOptions(ChunkOptions):
    other: Literal["zero", "exclude"] = option(
        "zero",
        "a question judged neither Explain nor Supplement: `zero` counts it as 0, `exclude` "
        "leaves it out of the share",
    )


class QuestionMetric(BeyondMetric):
    options: QuestionOptions

    prompts = ("beyond/question_system", "beyond/question_user")
    uses_points = True
    uses_judge = True
    uses_embedder = True
    choices = {
        "qs": "share of question points meeting their criterion (Eq. 5, reconstructed)",
        "retrieval": "embedding cosine top-k of the summary-coverage chunks",
        "verdict": "one present/absent Yes/No judge call per Explain/Supplement point, polarity "
        "applied in code; temperature 0, one retry",
    }

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        fields = await self.candidate_fields(item, resources, details)
        text = fields.fields["questions"]
        if text is None:
            raise Unscored("the review has no questions section")
        points = (await self.points_of("questions", text, resources, details)).points
        if not points:
            raise Unscored("the review asks no question")
        judged = [p for p in points if p.qtype != "Other"]
        verdicts: dict[int, bool] = {}
        if judged:
            embedder = resources.embedder(self.options.embedder)
            if not isinstance(embedder, ChunkingEmbedder):
                raise Unscored(f"embedder {embedder.identity} cannot cut text into tokens")
            size = min(self.options.chunk_tokens, embedder.max_tokens)
            chunks, source = paper_chunks(item, embedder, size=size, overlap=self.options.overlap)
            details["paper_source"] = source

            def retrieve() -> list[list[int]]:
                chunk_vectors = embedder.encode(chunks, max_tokens=size)
                question_vectors = embedder.encode([p.text for p in judged])
                similarity = question_vectors @ chunk_vectors.T
                k = self.options.k
                return [list(np.argsort(-row, kind="stable")[:k]) for row in similarity]

            top = await run_blocking(retrieve)
            asked = await ask_many(
                resources.generator(JUDGE_ROLE),
                [
                    question_messages(p.text, [chunks[i] for i in sorted(rows)])
                    for p, rows in zip(judged, top)
                ],
                parse_yes_no,
                settings=YES_NO_SETTINGS,
            )
            details["calls"]["judge"] += asked.calls
            if asked.failures:
                raise Unscored(
                    f"{len(asked.failures)} of {len(judged)} question verdicts unreadable; "
                    f"first: {asked.reasons[asked.failures[0]]}"
                )
            verdicts = {id(p): bool(v) for p, v in zip(judged, asked.values)}
        rows = [(p.qtype or "Other", verdicts.get(id(p))) for p in points]
        details["questions"] = [
            {**p.as_dict(), "content_present": verdicts.get(id(p))} for p in points
        ]
        try:
            value = question_score(rows, other=self.options.other)
        except ValueError as exc:
            raise Unscored(str(exc)) from None
        counts = {t: sum(1 for q, _ in rows if q == t) for t in ("Explain", "Supplement", "Other")}
        return value, f"question score {value:.3f} over {len(points)} question point(s) {counts}"
