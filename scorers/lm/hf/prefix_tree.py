"""Shared-prefix planning for teacher-forced scoring: which token prefixes to compute once.

The requests of one paper share long prefixes: every prediction prompt starts with the system
prompt and the synopsis, and the conditional prompts of one candidate against several references
also share the candidate's judgments. :func:`plan_prefix_tree` arranges requests in a tree whose
inner nodes are prefixes worth computing once (their keys and values then serve every request
below them) and whose leaves are the requests' remaining suffixes. Pure Python, no torch: the
plan is the same on every device; the transformers backend executes it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MIN_SHARED",
    "PrefixNode",
    "forward_segments",
    "plan_prefix_tree",
    "scoring_plan",
    "supports_prefix_reuse",
    "tokens_computed",
]

DEFAULT_MIN_SHARED = 64
"""Shortest extension worth a shared prefix of its own (each costs one extra forward call)."""


@dataclass
class PrefixNode:
    """Tokens ``[start, depth)`` of ``sequences[source]``, computed once on top of the parent's
    keys and values (the root has ``start == depth == 0``); ``leaves`` are the requests scored
    from this node's prefix (their tokens from ``depth`` on), ``children`` the longer shared
    prefixes below it."""

    start: int
    depth: int
    source: int
    leaves: list[int] = field(default_factory=list)
    children: list[PrefixNode] = field(default_factory=list)


def _common_prefix(a: Sequence[int], b: Sequence[int], limit: int) -> int:
    n = 0
    while n < limit and a[n] == b[n]:
        n += 1
    return n


def plan_prefix_tree(
    sequences: Sequence[Sequence[int]],
    reusable: Sequence[int],
    *,
    min_shared: int = DEFAULT_MIN_SHARED,
) -> PrefixNode:
    """A tree covering every request exactly once as a leaf.

    ``reusable[i]`` is how many leading tokens of ``sequences[i]`` may come from a shared prefix
    (for scoring: the context length minus one, since the last context position must be computed
    to predict the first target token). A prefix is shared only by two or more requests and only
    when it extends its parent by at least ``min_shared`` tokens (each shared prefix costs one
    extra forward call). Every request's leaf lies below prefixes it really starts with.
    """
    if len(sequences) != len(reusable):
        raise ValueError("sequences and reusable must have the same length")
    if min_shared < 1:
        raise ValueError("min_shared must be at least 1")
    order = sorted(range(len(sequences)), key=lambda i: tuple(sequences[i]))
    # in sorted order, the longest prefix a request shares with any other is shared with a
    # neighbour; links[k] is what order[k] and order[k + 1] share, capped by both limits
    links = [
        _common_prefix(sequences[a], sequences[b], min(reusable[a], reusable[b], len(sequences[a])))
        for a, b in zip(order, order[1:])
    ]
    root = PrefixNode(start=0, depth=0, source=order[0] if order else -1)
    stack = [(root, 0, len(order))]  # (node, first, end) over positions in ``order``
    while stack:
        node, first, end = stack.pop()
        position = first
        while position < end:
            # a run: the longest stretch whose neighbouring links reach min_shared past depth
            stop = position
            while stop + 1 < end and links[stop] >= node.depth + min_shared:
                stop += 1
            if stop == position:
                node.leaves.append(order[position])
            else:
                shared = min(links[position:stop])
                child = PrefixNode(start=node.depth, depth=shared, source=order[position])
                node.children.append(child)
                stack.append((child, position, stop + 1))
            position = stop + 1
    return root


def scoring_plan(
    requests: Sequence[Any], *, min_shared: int = DEFAULT_MIN_SHARED, reuse: bool = True
) -> tuple[PrefixNode, list[tuple[int, ...]]]:
    """The plan for scoring ``requests`` (anything with ``context_ids`` and ``target_ids``) and
    their whole token sequences: a shared prefix may cover all but the last context token (its
    position predicts the first target token); with ``reuse`` off every request is a leaf of the
    root."""
    sequences = [tuple(r.context_ids) + tuple(r.target_ids) for r in requests]
    reusable = [len(r.context_ids) - 1 if reuse else 0 for r in requests]
    return plan_prefix_tree(sequences, reusable, min_shared=min_shared), sequences


def forward_segments(
    root: PrefixNode, lengths: Sequence[int]
) -> Iterator[tuple[int, int, int | None]]:
    """Every span ``(start, end, request)`` of token positions the plan runs through the model:
    each shared prefix once (``request`` None), then each request's suffix below it."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.depth > node.start:
            yield node.start, node.depth, None
        for index in node.leaves:
            yield node.depth, lengths[index], index
        stack.extend(node.children)


def tokens_computed(root: PrefixNode, lengths: Sequence[int]) -> int:
    """Tokens the plan runs through the model (each shared prefix once, each leaf's suffix)."""
    return sum(end - start for start, end, _ in forward_segments(root, lengths))


def supports_prefix_reuse(config: Any) -> bool:
    """Whether every layer of the model attends over the whole prefix with a plain key/value
    cache (no sliding windows, recurrent or linear-attention layers), so a shared prefix's keys
    and values can be reused as they are."""
    if getattr(config, "sliding_window", None):
        return False
    layer_types = getattr(config, "layer_types", None)
    return not layer_types or all(t == "full_attention" for t in layer_types)
