"""Auto-PRE exam items for peer reviews (§Methodology, adapted to reviews) and running the three
exams.

From canonical paper records (each paper with two or more human reviews), for m papers P:

- consistency: (two human reviews of P), both orders;
- pertinence: a = a human review of P, b = the longest human review of the most similar other
  paper P' (the "well-written review of a similar paper"; similarity = cosine of the abstracts'
  sentence embeddings (:func:`embedding_similarity`, the task's default), or word overlap of the
  abstracts, Jaccard over lower-cased words of 3+ letters, without an embedder);
- self-confidence: easy = (a human review of P, a review of the least similar paper), hard = (two
  human reviews of P).

The paper context shown to the judges is the title and abstract (the cheap default of A.10).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scorers.data.records import PaperRecord
from scorers.metrics.autopre.core import (
    Qualification,
    consistency_exam,
    pertinence_exam,
    qualify,
    self_confidence_exam,
)
from scorers.metrics.autopre.judging import Judge, Pair, ask_confidence, ask_pairs
from scorers.types import abstract_problem, real_title

__all__ = [
    "EXAMS",
    "ExamItems",
    "build_exam_items",
    "embedding_similarity",
    "abstract_records",
    "exam_answers",
    "paper_context",
    "run_exams",
]

EXAMS = ("consistency", "pertinence", "confidence_easy", "confidence_hard")
_WORD = re.compile(r"[a-z]{3,}")


def paper_context(title: str, abstract: str, paper_id: str = "") -> str:
    """What a judge is told about the paper: its title (when a real one, see
    :func:`scorers.types.real_title`) and its abstract."""
    shown = title.strip() if real_title(title, paper_id) else ""
    return f"{shown}\n\n{abstract.strip()}".strip()


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def embedding_similarity(
    records: Sequence[PaperRecord], encode: Callable[[list[str]], np.ndarray]
) -> Callable[[PaperRecord, PaperRecord], float]:
    """Cosine similarity of the papers' abstracts under ``encode`` (texts -> one row per text),
    every abstract embedded once. A paper without a real abstract (empty, or a placeholder) is
    a ``ValueError``: :func:`build_exam_items` compares papers with abstracts only."""
    missing = [r.id for r in records if abstract_problem(r.abstract) is not None]
    if missing:
        raise ValueError(f"papers without an abstract cannot be compared by it: {missing}")
    texts = [r.abstract.strip() for r in records]
    vectors = np.asarray(encode(texts), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if vectors.shape[0] != len(records) or not np.all(norms > 0):
        raise ValueError("the embedder returned no usable vector for some abstract")
    unit = {r.id: v for r, v in zip(records, vectors / norms)}

    def similarity(p: PaperRecord, q: PaperRecord) -> float:
        return float(unit[p.id] @ unit[q.id])

    return similarity


def abstract_records(records: Sequence[PaperRecord]) -> list[PaperRecord]:
    """The papers with a real abstract (the exams find the similar paper P' and the unrelated
    paper by their abstracts; an empty abstract or a placeholder cannot be compared). None at
    all is a ``ValueError``."""
    kept = [r for r in records if abstract_problem(r.abstract) is None]
    if not kept:
        raise ValueError(
            f"the Auto-PRE exams compare papers by their abstracts, and none of the "
            f"{len(records)} papers has one (an empty abstract, or a placeholder such as 'Not "
            "available', is none)"
        )
    return kept


@dataclass
class ExamItems:
    """The pairs of each exam (``pairs[exam]``) and where each review came from."""

    pairs: dict[str, list[Pair]]
    sources: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    similarity: str = "jaccard"


def build_exam_items(
    records: Sequence[PaperRecord],
    *,
    m: int,
    seed: int = 0,
    similarity: Callable[[PaperRecord, PaperRecord], float] | None = None,
    similarity_name: str = "custom",
) -> ExamItems:
    """Up to ``m`` exam papers (drawn with ``seed`` among those with 2+ non-empty reviews) and
    their pairs; every other record is a candidate P' or unrelated paper. Papers are compared
    by their abstracts (``similarity``, named ``similarity_name`` in the result, defaults to the
    abstracts' word Jaccard), so only papers with a real abstract take part (see
    :func:`abstract_records`). Fewer than two usable papers is a ``ValueError``."""
    records = abstract_records(records)
    usable = [r for r in records if sum(bool(v.text.strip()) for v in r.reviews) >= 2]
    if len(usable) < 2 or len(records) < 2:
        raise ValueError(
            "the Auto-PRE exams need at least two papers with an abstract and two or more reviews"
        )
    chosen = sorted(usable, key=lambda r: r.id)
    random.Random(seed).shuffle(chosen)
    chosen = chosen[: max(1, m)]
    words = {r.id: _words(r.abstract) for r in records}

    def sim(p: PaperRecord, q: PaperRecord) -> float:
        return similarity(p, q) if similarity else _jaccard(words[p.id], words[q.id])

    pairs: dict[str, list[Pair]] = {exam: [] for exam in EXAMS}
    sources: dict[str, list[dict[str, str]]] = {exam: [] for exam in EXAMS}
    for paper in chosen:
        reviews = [v for v in paper.reviews if v.text.strip()]
        others = [r for r in records if r.id != paper.id and any(v.text.strip() for v in r.reviews)]
        ranked = sorted(others, key=lambda r: (-sim(paper, r), r.id))
        similar, unrelated = ranked[0], ranked[-1]
        ia = max((v for v in similar.reviews if v.text.strip()), key=lambda v: len(v.text))
        far = next(v for v in unrelated.reviews if v.text.strip())
        context = paper_context(paper.title, paper.abstract, paper.id)
        first, second = reviews[0], reviews[1]
        add = [
            ("consistency", first, second, paper.id),
            ("pertinence", first, ia, similar.id),
            ("confidence_easy", first, far, unrelated.id),
            ("confidence_hard", first, second, paper.id),
        ]
        for exam, a, b, b_paper in add:
            pairs[exam].append(Pair(id=f"{exam}:{paper.id}", paper=context, a=a.text, b=b.text))
            sources[exam].append({"paper": paper.id, "a": a.id, "b": b.id, "b_paper": b_paper})
    return ExamItems(pairs, sources, similarity_name if similarity else "jaccard")


async def exam_answers(
    judge: Judge, exam: str, pairs: Sequence[Pair], *, confidence_mode: str = "auto"
) -> list[dict[str, Any]]:
    """One judge's answers to ``pairs`` of one exam (both orders): per pair a row ``{"labels",
    "replies", "confidences", "confidence_mode", "forced", "calls", "generator"}`` (calls
    spread evenly over the pairs, the remainder on the first), the row
    :func:`qualification_from_rows` reads. Consistency and pertinence pairs are judged
    (:func:`ask_pairs`); the self-confidence pairs are answered with a confidence
    (:func:`ask_confidence`, ``confidence_mode`` ``auto``, ``prob`` or ``verbal``)."""
    if exam not in EXAMS:
        raise ValueError(f"unknown exam {exam!r}; exams: {EXAMS}")
    mode: str | None = None
    if exam in ("consistency", "pertinence"):
        judged = await ask_pairs(judge, pairs)
    else:
        judged, mode = await ask_confidence(judge, pairs, mode=confidence_mode)
    share, extra = divmod(judged.calls, max(len(pairs), 1))
    return [
        {
            "labels": list(judged.labels[i]),
            "replies": list(judged.replies[i]),
            "confidences": list(judged.confidences[i]) if judged.confidences else [],
            "confidence_mode": mode,
            "forced": judge.forced,
            "calls": share + (extra if i == 0 else 0),
            "generator": judge.generator.identity,
        }
        for i in range(len(pairs))
    ]


async def run_exams(
    judges: Sequence[Judge], items: ExamItems, *, confidence_mode: str = "auto"
) -> tuple[Qualification, dict[str, dict[str, Any]]]:
    """Every judge takes the three exams (:func:`exam_answers` on each exam's pairs); the
    qualification (:func:`qualification_from_rows`, as the ``autopre_exam`` task computes it)
    and, per judge, every answer and the judge calls per exam."""
    if len({j.name for j in judges}) != len(judges):
        raise ValueError("judge names must be unique")

    async def one(judge: Judge) -> dict[str, list[dict[str, Any]]]:
        answered: dict[str, list[dict[str, Any]]] = {}
        mode = confidence_mode
        for exam in EXAMS:
            answered[exam] = await exam_answers(
                judge, exam, items.pairs[exam], confidence_mode=mode
            )
            if exam == "confidence_easy" and answered[exam]:  # the hard pairs alike
                mode = answered[exam][0]["confidence_mode"]
        return answered

    done = await asyncio.gather(*(one(j) for j in judges))
    rows = [
        {"exam": exam, "judges": {judge.name: answers[exam][i]}}
        for judge, answers in zip(judges, done)
        for exam in EXAMS
        for i in range(len(answers[exam]))
    ]
    logs = {
        judge.name: {
            "variant": judge.variant,
            "generator": judge.generator.identity,
            "confidence_mode": next(
                (r["confidence_mode"] for r in answers["confidence_easy"]), None
            ),
            "calls": {exam: sum(r["calls"] for r in answers[exam]) for exam in EXAMS},
            "answers": {
                exam: [
                    {k: r[k] for k in ("labels", "replies", "confidences")} for r in answers[exam]
                ]
                for exam in EXAMS
            },
        }
        for judge, answers in zip(judges, done)
    }
    return qualification_from_rows(rows), logs


def qualification_from_rows(rows: Sequence[dict[str, Any]]) -> Qualification:
    """The qualification from per-pair exam rows (what the ``autopre_exam`` task logs per
    sample): ``{"exam": <one of EXAMS>, "judges": {name: {"labels": [l0, l1], "confidences":
    [c0, c1], "confidence_mode": ...}}}``."""
    by_judge: dict[str, dict[str, list]] = {}
    modes: dict[str, str] = {}
    for row in rows:
        for name, answer in (row.get("judges") or {}).items():
            exams = by_judge.setdefault(name, {exam: [] for exam in EXAMS})
            if row["exam"] in ("consistency", "pertinence"):
                exams[row["exam"]].append(tuple(answer["labels"]))
            else:
                exams[row["exam"]].extend(answer["confidences"])
                modes[name] = answer["confidence_mode"]
    scores = {
        name: {
            "consistency": consistency_exam(exams["consistency"]),
            "pertinence": pertinence_exam(exams["pertinence"]),
            "self_confidence": self_confidence_exam(
                exams["confidence_easy"], exams["confidence_hard"], mode=modes.get(name, "verbal")
            ),
        }
        for name, exams in by_judge.items()
    }
    return qualify(scores)
