"""Optional enrichments of a built dataset, computed once and stored with it: the judgment
rewrite of every human review (GEM App. C.1) and the ASSW synopsis of every paper with text
(App. C.4).

Stored in the records (``reviews[].summary``, ``assw``), they are reused by every later scoring
run (``-T dataset_summaries=true``) instead of being recomputed per model. Every reply is also
kept in the one sqlite cache (``cache.sqlite`` in ``cache_dir``; the same store and keys as the
scorers': generator identity, conversation, decoding settings) as soon as its batch is done, so
an interrupted enrichment resumes where it stopped, and a scorer using the same generator and
cache finds the rewrites there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorers.lm.base import ChatMessage, GenerationSettings, hit_limit
from scorers.lm.cache import ScoreCache, partition_cached
from scorers.lm.chat import encode_text
from scorers.lm.generation import TextGenerator
from scorers.lm.threads import run_sync
from scorers.text.judgments import (
    ASSW_SETTINGS,
    REWRITE_BUDGET,
    Preprocessed,
    assw_messages,
    preprocess_messages,
    rewrite_settings,
)

__all__ = ["Enricher", "enrich_records", "fit_to_context"]


@dataclass(frozen=True)
class Enricher:
    """What to add and with which generator (e.g. ``LocalGenerator(load_evaluation_lm(spec))``).

    The generator's ``identity`` (model, weights, precision) keys the cache and is written to
    the data card so readers know who wrote the summaries.
    """

    generator: TextGenerator
    summaries: bool = True
    assw: bool = False
    batch_size: int = 8
    fit_text: Callable[[str], str] | None = None
    """Shortens a paper text to what the generator can read (see :func:`fit_to_context`)."""

    @property
    def identity(self) -> str:
        return self.generator.identity


def fit_to_context(lm: Any) -> Callable[[str], str] | None:
    """A function cutting a paper text to fit ``lm``'s context with room for the ASSW prompt and
    reply (the budget the ``gem_s_assw`` scorer uses); None when ``lm`` states no limit."""
    limit = getattr(lm, "max_length", None)
    if limit is None:
        return None
    budget = max(256, limit - 1024 - ASSW_SETTINGS.max_new_tokens)

    def fit(text: str) -> str:
        ids = encode_text(lm.tokenizer, text)
        return text if len(ids) <= budget else lm.tokenizer.decode(ids[:budget])

    return fit


def _batched(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _progress(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not enabled or total == 0)


def _run_cached(
    conversations: list[list[ChatMessage]],
    enricher: Enricher,
    settings: GenerationSettings,
    cache: ScoreCache,
    *,
    batch_size: int,
    desc: str,
    progress: bool,
) -> tuple[list[str], int]:
    """The generator's reply to every conversation, computing the uncached ones in batches and
    storing each batch's replies as soon as it is done; returns the replies (in order) and how
    many were computed."""
    keys = [cache.generation_key(enricher.identity, c, settings) for c in conversations]
    replies, missing = partition_cached(keys, conversations, cache.get_generation)
    todo = list(missing.items())
    with _progress(len(todo), desc, progress) as bar:
        for batch in _batched(todo, batch_size):
            outputs = run_sync(enricher.generator.generate([c for _, c in batch], settings))
            for (key, _), output in zip(batch, outputs, strict=True):
                cache.put_generation(key, output)
                replies[key] = output
            bar.update(len(batch))
    return [replies[key] for key in keys], len(todo)


def enrich_records(
    records: list[dict[str, Any]],
    enricher: Enricher,
    *,
    cache_dir: Path,
    progress: bool = True,
) -> dict[str, Any]:
    """Add the requested enrichments to canonical record dicts in place; returns the data-card
    entry (generator, counts computed / reused, papers without text for ASSW).

    A computed summary replaces a summary the record already had.
    """
    card: dict[str, Any] = {"generator": enricher.identity}
    cache = ScoreCache(Path(cache_dir) / "cache.sqlite")
    if enricher.summaries:
        card["summaries"] = _summaries(records, enricher, cache, progress)
    if enricher.assw:
        card["assw"] = _assw(records, enricher, cache, progress)
    return card


def _summaries(
    records: list[dict[str, Any]], enricher: Enricher, cache: ScoreCache, progress: bool
) -> dict[str, Any]:
    """Every non-empty review's judgment summary written into its record (an empty review gets
    None); the data card's entry."""
    # an empty review is never rewritten (a model would invent judgments): no summary
    reviews = [r for record in records for r in record["reviews"] if r["text"].strip()]
    # each review's rewrite gets room by its length (one batch run per budget)
    groups: dict[GenerationSettings, list[int]] = {}
    for index, review in enumerate(reviews):
        groups.setdefault(rewrite_settings(review["text"]), []).append(index)
    replies: list[str] = [""] * len(reviews)
    computed = 0
    for settings, indexes in sorted(groups.items(), key=lambda g: g[0].max_new_tokens):
        done, count = _run_cached(
            [preprocess_messages(reviews[i]["text"]) for i in indexes],
            enricher,
            settings,
            cache,
            batch_size=enricher.batch_size,
            desc=f"judgment summaries ({settings.max_new_tokens} new tokens)",
            progress=progress,
        )
        computed += count
        for index, reply in zip(indexes, done, strict=True):
            replies[index] = reply
    without_lines = 0
    at_limit = []
    for review, reply in zip(reviews, replies, strict=True):
        rewrite = Preprocessed.from_reply(reply)
        review["summary"] = rewrite.judgments
        without_lines += rewrite.n_judgment_lines == 0
        if rewrite.hit_limit:
            at_limit.append(review.get("id"))
    empty = 0
    for record in records:
        for review in record["reviews"]:
            if not review["text"].strip():
                review["summary"] = None
                empty += 1
    return {
        "reviews": len(reviews),
        "computed": computed,
        "reused_from_cache": len(reviews) - computed,
        "without_judgment_lines": without_lines,
        "empty_reviews_not_rewritten": empty,
        "budget": REWRITE_BUDGET,
        # rewrites that stopped at their token limit: their last judgments may be lost
        "at_token_limit": len(at_limit),
        "at_token_limit_reviews": at_limit,
    }


def _assw(
    records: list[dict[str, Any]], enricher: Enricher, cache: ScoreCache, progress: bool
) -> dict[str, Any]:
    """Each paper's author-stated strengths and weaknesses written into its record where it
    has a text; the data card's entry."""
    with_text = [r for r in records if (r.get("paper_text") or "").strip()]
    fit = enricher.fit_text or (lambda text: text)
    inputs = [fit(r["paper_text"]) for r in with_text]
    replies, computed = _run_cached(
        [assw_messages(text) for text in inputs],
        enricher,
        ASSW_SETTINGS,
        cache,
        batch_size=max(1, enricher.batch_size // 4),
        desc="ASSW summaries",
        progress=progress,
    )
    for record, reply in zip(with_text, replies, strict=True):
        record["assw"] = reply.strip()
    assw_at_limit = [r["id"] for r, reply in zip(with_text, replies) if hit_limit(reply)]
    return {
        "papers": len(with_text),
        "texts_shortened_to_fit": sum(
            len(text) < len(r["paper_text"]) for r, text in zip(with_text, inputs)
        ),
        "computed": computed,
        "reused_from_cache": len(with_text) - computed,
        "papers_without_text": [
            r["id"] for r in records if not (r.get("paper_text") or "").strip()
        ],
        "at_token_limit": len(assw_at_limit),
        "at_token_limit_papers": assw_at_limit,
    }
