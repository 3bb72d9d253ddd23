"""A paper as a scoring document: the harness-free record of what one sample carries.

Every harness (the Inspect tasks, the lm-evaluation-harness tasks) turns a canonical record into
the same document (:func:`paper_document`: the paper's facts, the held-out review, the fixed
reference split, the negative references) and turns a document and a candidate review back into
the core's :class:`~scorers.types.Item` (:func:`item_from_document`). Because both harnesses go
through these two functions, a review scored in either gets the same item, hence the same number.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, replace
from typing import Any

from scorers.data.negatives import DEFAULT_NEGATIVES, draw_negatives, entity_of
from scorers.data.records import PaperRecord, RecordError, ReviewRecord, split_reviews
from scorers.registry import get_metric, metric_spec, resolve_metric_names
from scorers.scales import HOW_TO_GIVE, UNKNOWN
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Paper, Review, abstract_problem

__all__ = [
    "BASELINE",
    "DATASET",
    "CANDIDATE_MODE",
    "OTHER_REVIEWERS",
    "VERDICT_REPLY",
    "CHARS_PER_TOKEN",
    "item_from_document",
    "negatives_metadata",
    "negatives_wanted",
    "paper_document",
    "paper_input",
    "refuse_unservable",
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


def negatives_wanted(
    scorers: str | Sequence[str],
    negatives: int | None,
    *,
    scorer_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> int:
    """Negative references per paper, decided in one place for every task: ``negatives`` when
    given, else the default (4) when a requested metric, built with its ``scorer_options``,
    scores against negatives (:attr:`scorers.registry.Metric.needs_negatives`: the
    f-variational cells, and TV direct with ``tv_direct_form=product``), else none. Asking for
    0 while such a metric is requested is a ``ValueError`` (every sample would be unscored)."""
    options = {metric_spec(k).name: dict(v or {}) for k, v in (scorer_options or {}).items()}
    needing = [
        name
        for name in resolve_metric_names(scorers)
        if get_metric(name, **options.get(name, {})).needs_negatives
    ]
    if negatives is not None:
        if negatives < 0:
            raise ValueError(f"negatives must be 0 or more, got {negatives}")
        if negatives == 0 and needing:
            raise ValueError(
                f"negatives=0, but {', '.join(needing)} score(s) against negative references "
                f"(reviews of other papers): leave negatives unset for the default "
                f"({DEFAULT_NEGATIVES}) or give a number"
            )
        return negatives
    return DEFAULT_NEGATIVES if needing else 0


def refuse_unservable(
    records: Sequence[PaperRecord],
    scorers: str | Sequence[str],
    *,
    scorer_options: Mapping[str, Mapping[str, Any]] | None = None,
    where: str = "the dataset",
) -> None:
    """Refuse, up front, a dataset in which no paper has what a requested metric (built with
    its ``scorer_options``) needs, naming the metric: an abstract (GEM-S, GSPPM, the Auto-PRE
    panel; an empty abstract or a placeholder such as "Not available" is none), the paper's
    text or abstract (summary coverage, question score, LMExaminer), the text or a stored ASSW
    (GEM-S (ASSW)), the venue's decision (the decision metrics). Papers that lack it in a dataset
    where others have it are scored as usual:
    the metric leaves them unscored with the reason.

    Raises:
        RecordError: no paper of ``records`` can be scored by some requested metric.
    """
    options = {metric_spec(k).name: dict(v or {}) for k, v in (scorer_options or {}).items()}
    n = len(records)
    with_abstract = sum(abstract_problem(r.abstract) is None for r in records)
    with_text = sum(bool((r.paper_text or "").strip()) for r in records)
    with_content = sum(
        bool((r.paper_text or "").strip()) or abstract_problem(r.abstract) is None for r in records
    )
    with_text_or_assw = sum(
        bool((r.paper_text or "").strip() or (r.assw or "").strip()) for r in records
    )
    with_decision = sum(r.decision is not None for r in records)
    venues = sorted({repr(r.venue or "") for r in records if r.rating_scale == UNKNOWN})
    unscaled = (
        f"{len(venues)} venues ({', '.join(venues[:3])}, ...)"
        if len(venues) > 3
        else (f"venue {', '.join(venues)}" if venues else "")
    )
    problems = []
    for name in resolve_metric_names(scorers):
        needs = get_metric(name, **options.get(name, {})).needs
        if "rating_scale" in needs and unscaled:
            problems.append(
                f"{name} reads ratings on the venue's scale, and the scale of {unscaled} is not "
                f"known: {HOW_TO_GIVE}"
            )
        if "decision" in needs and not with_decision:
            problems.append(
                f"{name} scores a verdict against the venue's accept/reject decision, and none "
                f"of the {n} papers has one (join a decisions file: gem-tasks data convert "
                "--decisions)"
            )
        if "abstract" in needs and not with_abstract:
            problems.append(
                f"{name} needs the papers' abstracts, and none of the {n} papers has one (an empty "
                "abstract, or a placeholder such as 'Not available', is none)"
            )
        if "paper_content" in needs and not with_content:
            problems.append(
                f"{name} reads a review against the paper's text or abstract, and none of the {n} "
                "papers has either"
            )
        if "paper_text" in needs and not with_text_or_assw:
            problems.append(
                f"{name} needs the papers' full text (or a stored ASSW summary), and none of the "
                f"{n} papers has either ({with_text} with text)"
            )
    if problems:
        raise RecordError(f"{where}: " + "; ".join(problems))


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
