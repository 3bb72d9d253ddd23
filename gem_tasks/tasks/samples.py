"""Canonical paper records -> Inspect samples for review generation."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser

import prompts
from gem_tasks.scoring.adapter import parse_scorer_names
from scorers.data.negatives import DEFAULT_NEGATIVES, draw_negatives
from scorers.data.records import PaperRecord, ReviewRecord, load_records, split_reviews
from scorers.registry import metric_spec

__all__ = [
    "CHARS_PER_TOKEN",
    "DEMO_DATASET",
    "negatives_metadata",
    "negatives_wanted",
    "paper_dataset",
    "paper_input",
    "record_to_sample",
]

DEMO_DATASET = Path(__file__).parent / "data" / "demo_iclr.jsonl"
"""Ten fictional papers with three reviews each, written for the project (not real reviews)."""

CHARS_PER_TOKEN = 4
"""Characters per token assumed when truncating paper text to ``max_paper_tokens`` (the model
under test is any Inspect model, so its tokenizer is unknown here; 4 is the usual English rate)."""


def _review_dict(review: ReviewRecord) -> dict[str, Any]:
    data = asdict(review)
    data.pop("extra", None)
    return data


def paper_input(paper: PaperRecord, *, max_paper_tokens: int) -> tuple[str, dict[str, Any]]:
    """The paper as the review prompt's user turn, and facts about it for the sample metadata.

    Uses the paper text when there is one, else title + abstract; text beyond
    ``max_paper_tokens`` (estimated at ``CHARS_PER_TOKEN``) is cut and the metadata says so.
    """
    if paper.paper_text:
        text, source = paper.paper_text.strip(), "paper_text"
    else:
        text, source = f"{paper.title.strip()}\n\n{paper.abstract.strip()}", "title+abstract"
    limit = max_paper_tokens * CHARS_PER_TOKEN
    truncated = len(text) > limit
    if truncated:
        text = text[:limit]
    facts = {
        "paper_source": source,
        "paper_truncated": truncated,
        "paper_chars": len(text),
        "paper_chars_limit": limit,
    }
    return text, facts


def negatives_wanted(scorers: str | list[str], negatives: int | None) -> int:
    """Negative references per paper: ``negatives`` when given, else the default (4) when a
    requested metric needs them (the f-variational cells), else none."""
    if negatives is not None:
        if negatives < 0:
            raise ValueError(f"negatives must be 0 or more, got {negatives}")
        return negatives
    needed = any("negatives" in metric_spec(n).needs for n in parse_scorer_names(scorers))
    return DEFAULT_NEGATIVES if needed else 0


def negatives_metadata(
    paper: PaperRecord, pool: list[PaperRecord], *, k: int, seed: int
) -> list[dict[str, Any]]:
    """The sample-metadata rows of ``paper``'s negative references (reviews of other papers,
    drawn by :func:`scorers.data.negatives.draw_negatives`)."""
    return [
        {"id": n.id, "paper_id": n.paper_id, "text": n.review.text, "summary": n.review.summary}
        for n in draw_negatives(paper, pool, k=k, seed=seed)
    ]


def record_to_sample(
    paper: PaperRecord,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: list[dict[str, Any]] | None = None,
    system_prompt: str = "review/system",
) -> Sample:
    """One sample per paper: a review prompt (``system_prompt``; default the GEM paper's C.3)
    as input, the held-out human review as target, and the reference reviews, abstract and ASSW
    in the metadata for the scorers."""
    split = split_reviews(paper, references=references, seed=seed)
    text, facts = paper_input(paper, max_paper_tokens=max_paper_tokens)
    return Sample(
        id=paper.id,
        input=[
            ChatMessageSystem(content=prompts.render(system_prompt)),
            ChatMessageUser(content=prompts.render("review/user", paper=text)),
        ],
        target=split.held_out.text,
        metadata={
            "paper_id": paper.id,
            "venue": paper.venue,
            "title": paper.title,
            "abstract": paper.abstract,
            "assw": paper.assw,
            "paper_text": paper.paper_text,
            **facts,
            "held_out": _review_dict(split.held_out),
            "references": [_review_dict(r) for r in split.references],
            "negatives": list(negatives or []),
            "split_seed": seed,
        },
    )


def paper_dataset(
    source: str | Path | None,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: int = 0,
    system_prompt: str = "review/system",
) -> MemoryDataset:
    """Samples for every paper of ``source`` (a JSONL/parquet path, folder or hub id; the
    bundled demo when None), each with ``negatives`` reviews of other papers. Malformed input,
    or a dataset too small for the negatives, raises ``RecordError`` naming file and record."""
    path = DEMO_DATASET if source is None else source
    records = load_records(path)
    samples = [
        record_to_sample(
            r,
            references=references,
            seed=seed,
            max_paper_tokens=max_paper_tokens,
            negatives=negatives_metadata(r, records, k=negatives, seed=seed) if negatives else [],
            system_prompt=system_prompt,
        )
        for r in records
    ]
    return MemoryDataset(samples, name=Path(str(path)).stem, location=str(path))
