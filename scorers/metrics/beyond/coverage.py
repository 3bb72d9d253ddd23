"""Content faithfulness: summary coverage (Beyond Rating §4.2).

The paper text (else title and abstract) is cut into windows of ``chunk_tokens`` tokens that
overlap by ``overlap`` tokens (512 and 128 in the paper; starts 0, 384, 768, ..., the last
window reaching the end), with the embedder's own tokenizer so that every chunk fits it; each
chunk and the review's summary are embedded, and (Eq. 1, reconstructed: the reported values,
4.19-4.66 for models and 4.21 for humans, are sums of five cosines, not a mean)::

    Coverage = Σ_{i ∈ top-k} cos(e_summary, e_chunk_i),   k = 5

When the paper has fewer than k chunks (a title and abstract make one), the value is
k × the mean of the cosines it has, so that the scale holds, and the details flag it
(``fewer_chunks_than_k``). The chunk size is capped at the embedder's limit (510 text tokens
for all-MiniLM-L6-v2; recorded in the signature). A review without a summary is unscored; an
over-long summary is cut to the embedder's limit and flagged. No LLM call (a free-form review
is first sorted into sections by the preprocessor, like every Beyond Rating metric).
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scorers.errors import Unscored
from scorers.lm.embedding import Embedder
from scorers.lm.threads import run_blocking
from scorers.metrics.beyond.common import ChunkOptions
from scorers.metrics.beyond.family import BeyondMetric
from scorers.resources import Resources
from scorers.types import Item

__all__ = ["ChunkingEmbedder", "CoverageMetric", "chunk_windows", "coverage", "paper_chunks"]


@runtime_checkable
class ChunkingEmbedder(Embedder, Protocol):
    """An embedder that can also count and cut text in its own tokens."""

    @property
    def max_tokens(self) -> int: ...

    def tokenize(self, text: str) -> list[int]: ...

    def detokenize(self, ids: list[int]) -> str: ...


def chunk_windows(n_tokens: int, *, size: int = 512, overlap: int = 128) -> list[tuple[int, int]]:
    """[start, end) token windows of ``size`` overlapping by ``overlap``, starts 0, stride,
    2·stride, ..., stopping after the first window that reaches the end (one window when the
    text fits; none when it is empty)."""
    if size <= 0 or not 0 <= overlap < size:
        raise ValueError(f"need size > 0 and 0 <= overlap < size, got {size}, {overlap}")
    if n_tokens <= 0:
        return []
    stride = size - overlap
    windows, start = [], 0
    while True:
        end = min(start + size, n_tokens)
        windows.append((start, end))
        if end >= n_tokens:
            return windows
        start += stride


def coverage(similarities: np.ndarray | list[float], k: int = 5) -> tuple[float, bool]:
    """(Σ of the top-``k`` similarities, or k × their mean when there are fewer than k; whether
    there were fewer)."""
    values = np.sort(np.asarray(similarities, dtype=np.float64))[::-1]
    if values.size == 0:
        raise ValueError("no chunk to compare with")
    if values.size < k:
        return float(k * values.mean()), True
    return float(values[:k].sum()), False


def paper_chunks(
    item: Item, embedder: ChunkingEmbedder, *, size: int, overlap: int
) -> tuple[list[str], str]:
    """The paper's chunks (its text, else its abstract with a real title) and which source was
    used; a paper with neither text nor a real abstract is :class:`Unscored`."""
    try:
        text, source = item.paper.content()
    except ValueError as missing:
        raise Unscored(f"nothing to compare with: {missing}") from None
    ids = embedder.tokenize(text)
    return [
        embedder.detokenize(ids[a:b])
        for a, b in chunk_windows(len(ids), size=size, overlap=overlap)
    ], source


class CoverageMetric(BeyondMetric):
    options: ChunkOptions

    uses_embedder = True  # (a free-form review is sorted into sections first: details say so)
    choices = {
        "coverage": "sum of the top-k chunk cosines (Eq. 1, reconstructed); k x mean when the "
        "paper has fewer than k chunks",
        "chunk_tokenizer": "the embedder's",
    }

    def option_choices(self) -> dict[str, str]:
        return {**super().option_choices(), "chunk_tokens_cap": "the embedder's input limit"}

    async def measure(
        self, item: Item, resources: Resources, details: dict[str, Any]
    ) -> tuple[float, str]:
        fields = await self.candidate_fields(item, resources, details)
        summary = fields.fields["summary"]
        if summary is None:
            raise Unscored("the review has no summary section")
        if not summary.strip():
            raise Unscored("the review's summary is empty")
        embedder = resources.embedder(self.options.embedder)
        if not isinstance(embedder, ChunkingEmbedder):
            raise Unscored(f"embedder {embedder.identity} cannot cut text into tokens")
        size = min(self.options.chunk_tokens, embedder.max_tokens)
        overlap = self.options.overlap
        chunks, source = paper_chunks(item, embedder, size=size, overlap=overlap)
        summary_tokens = len(embedder.tokenize(summary))
        if summary_tokens > embedder.max_tokens:
            details.setdefault("flags", []).append("summary_cut_to_embedder_limit")

        def embed() -> tuple[np.ndarray, np.ndarray]:
            return (
                embedder.encode(chunks, max_tokens=size),
                embedder.encode([summary.strip()], max_tokens=embedder.max_tokens),
            )

        chunk_vectors, summary_vector = await run_blocking(embed)
        similarities = chunk_vectors @ summary_vector[0]
        value, fewer = coverage(similarities, self.options.k)
        if fewer:
            details.setdefault("flags", []).append("fewer_chunks_than_k")
        details.update(
            {
                "paper_source": source,
                "chunks": len(chunks),
                "chunk_tokens": size,
                "top_similarities": [round(float(s), 6) for s in np.sort(similarities)[::-1][:5]],
            }
        )
        if not math.isfinite(value):
            raise Unscored("the coverage is not finite")
        return value, f"summary coverage {value:.3f} over {len(chunks)} chunk(s) of the {source}"
