"""A paper as a scoring document: the harness-free record of what one sample carries.

Every harness (the Inspect tasks, the lm-evaluation-harness tasks) turns a canonical record into
the same document (:func:`paper_document`: the paper's facts, the held-out review, the fixed
reference split, the negative references) and turns a document and a candidate review back into
the core's :class:`~scorers.types.Item` (:func:`item_from_document`). Because both harnesses go
through these two functions, a review scored in either gets the same item, hence the same number.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import Any

from scorers.data.negatives import draw_negatives, entity_of
from scorers.data.records import PaperRecord, ReviewRecord, split_reviews
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Paper, Review

__all__ = [
    "BASELINE",
    "DATASET",
    "CANDIDATE_MODE",
    "OTHER_REVIEWERS",
    "VERDICT_REPLY",
    "CHARS_PER_TOKEN",
    "item_from_document",
    "negatives_metadata",
    "paper_document",
    "paper_input",
    "reviews_from_metadata",
]

CHARS_PER_TOKEN = 4
"""Characters per token assumed when truncating paper text to ``max_paper_tokens`` (the model
under test is any model, so its tokenizer is unknown here; 4 is the usual English rate)."""

CANDIDATE_MODE = "candidate_mode"
"""Document key: ``judgments`` (the candidate already is judgment lines), ``preprocess``
(always rewrite it: the held-out review's stored summary must not stand in), or absent (a
candidate equal to the held-out review may use its stored summary)."""

VERDICT_REPLY = "verdict_reply"
"""Document key: the model's answer to the verdict follow-up (after its review)."""

OTHER_REVIEWERS = "other_reviewers"
"""Document key: every review of the paper but the held-out one, as ``{"id", "rating"}``: the
committee the decision rules and the rating error average."""

BASELINE = "baseline"
"""Document key: the baseline rule that states the sample's verdict (no reviewer)."""

DATASET = "dataset_identity"
"""Document key: the identity of the dataset the paper comes from
(:func:`scorers.data.records.dataset_identity`: name, records, content hash)."""


def _review_dict(review: ReviewRecord) -> dict[str, Any]:
    data = asdict(review)
    data.pop("extra", None)
    return data


def paper_input(paper: PaperRecord, *, max_paper_tokens: int) -> tuple[str, dict[str, Any]]:
    """The paper as the review prompt's user turn, and facts about it for the document.

    Uses the paper text when there is one, else title + abstract; text beyond
    ``max_paper_tokens`` (estimated at ``CHARS_PER_TOKEN``) is cut and the facts say so.
    """
    if paper.paper_text:
        text, source = paper.paper_text.strip(), "paper_text"
    elif paper.domain != "peer_review":
        text, source = paper.abstract.strip(), "synopsis"  # the question; "" without input
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


def negatives_metadata(
    paper: PaperRecord, pool: list[PaperRecord], *, k: int, seed: int
) -> list[dict[str, Any]]:
    """The document rows of ``paper``'s negative references (reviews of other papers, drawn by
    :func:`scorers.data.negatives.draw_negatives`)."""
    return [
        {"id": n.id, "paper_id": n.paper_id, "text": n.review.text, "summary": n.review.summary}
        for n in draw_negatives(paper, pool, k=k, seed=seed)
    ]


def paper_document(
    paper: PaperRecord,
    *,
    references: int,
    seed: int,
    max_paper_tokens: int,
    negatives: list[dict[str, Any]] | None = None,
    dataset: Mapping[str, Any] | None = None,
    hold_out: bool = True,
    held_out: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """The review prompt's paper text and the document of ``paper``: its facts, the held-out
    review, the ``references`` reference reviews of the fixed split (``seed``), the negative
    references and, when given, the identity of the ``dataset`` it comes from (:data:`DATASET`).
    With ``hold_out`` false no review is held out (``held_out`` is None: ground-truth
    references scored against existing candidates); ``held_out`` names the review to hold out
    (leave-one-out over a paper's reviews). A paper with too few reviews raises
    ``RecordError``."""
    split = split_reviews(
        paper, references=references, seed=seed, hold_out=hold_out, held_out=held_out
    )
    text, facts = paper_input(paper, max_paper_tokens=max_paper_tokens)
    return text, {
        "paper_id": paper.id,
        "venue": paper.venue,
        "title": paper.title,
        "abstract": paper.abstract,
        "assw": paper.assw,
        "paper_text": paper.paper_text,
        **facts,
        "held_out": _review_dict(split.held_out) if split.held_out is not None else None,
        "ground_truth": paper.ground_truth,
        "references": [_review_dict(r) for r in split.references],
        # every review but the held-out one: the committee the decision rules and the rating
        # error average, however many of them are references
        OTHER_REVIEWERS: [{"id": r.id, "rating": r.rating} for r in split.others],
        "negatives": list(negatives or []),
        "split_seed": seed,
        "domain": paper.domain,
        "group": paper.group,
        "entity": entity_of(paper),
        "official_ratings": (
            list(paper.official_ratings) if paper.official_ratings is not None else None
        ),
        "rating_scale": paper.rating_scale,
        "candidates": [
            {"id": c.id, "text": c.text, "ratings": dict(c.ratings)} for c in paper.candidates
        ],
        **(
            {"decision": {"label": paper.decision.label, "accept": paper.decision.accept}}
            if paper.decision is not None
            else {}
        ),
        **({DATASET: dict(dataset)} if dataset is not None else {}),
    }


def _other_ratings(rows: Any) -> tuple[float | None, ...] | None:
    """The ratings of a document's other reviewers (None for an unrated one); None for a
    document written before it listed them."""
    if rows is None:
        return None
    return tuple(None if r.get("rating") is None else float(r["rating"]) for r in rows)


def _official_ratings(ratings: Any) -> tuple[float, ...] | None:
    return tuple(float(r) for r in ratings) if ratings else None


def reviews_from_metadata(rows: Any) -> tuple[Review, ...]:
    return tuple(
        Review(id=str(r["id"]), text=r["text"], summary=r.get("summary"), rating=r.get("rating"))
        for r in rows or []
    )


def item_from_document(
    document: Mapping[str, Any], *, candidate: str, sample_id: str | None = None
) -> Item:
    """The item a metric scores: ``candidate`` with the document's paper and reviews. A
    candidate equal to the held-out review may use the held-out review's stored summary (unless
    the document's ``candidate_mode`` is ``preprocess``)."""
    mode = document.get(CANDIDATE_MODE)
    held_out = document.get("held_out") or {}
    item = Item(
        paper=Paper(
            id=str(document.get("paper_id") or sample_id),
            title=document.get("title") or "",
            abstract=document.get("abstract") or "",
            paper_text=document.get("paper_text"),
            assw=document.get("assw"),
            accept=(document.get("decision") or {}).get("accept"),
            official_ratings=_official_ratings(document.get("official_ratings")),
            rating_scale=document.get("rating_scale", "iclr"),
        ),
        candidate=candidate,
        references=reviews_from_metadata(document.get("references")),
        other_ratings=_other_ratings(document.get(OTHER_REVIEWERS)),
        negatives=reviews_from_metadata(document.get("negatives")),
        flags=frozenset({CANDIDATE_IS_JUDGMENTS} if mode == "judgments" else ()),
        held_out=reviews_from_metadata([held_out])[0] if held_out.get("text") else None,
        verdict_reply=document.get(VERDICT_REPLY),
        baseline=document.get(BASELINE),
        domain=document.get("domain") or "peer_review",
    )
    if item.candidate_is_held_out and mode != "preprocess":
        return replace(item, candidate_summary=item.held_out.summary)
    return item
