"""Shared-prefix plans: every request scored once, below prefixes it really starts with."""

from __future__ import annotations

import pytest

from scorers.lm.hf.prefix_tree import PrefixNode, plan_prefix_tree, tokens_computed


def leaves_with_paths(root: PrefixNode) -> dict[int, list[tuple[int, int, int]]]:
    """Request index -> the (start, depth, source) of every node above its leaf."""
    found: dict[int, list[tuple[int, int, int]]] = {}
    stack = [(root, [])]
    while stack:
        node, path = stack.pop()
        path = [*path, (node.start, node.depth, node.source)]
        for leaf in node.leaves:
            assert leaf not in found, "a request is scored twice"
            found[leaf] = path
        stack.extend((child, path) for child in node.children)
    return found


# one paper: system S (4 tokens) + synopsis (4) + candidate X (5) or placeholder N (2) + reference
S = (1, 2, 3, 4, 5, 6, 7, 8)
X = (20, 21, 22, 23, 24)
N = (30, 31)
Y1, Y2, Y3 = (40, 41, 42), (50, 51, 52, 53), (60, 61)
PAPER = [S + X + Y1, S + N + Y1, S + X + Y2, S + N + Y2, S + X + Y3, S + N + Y3]
CONTEXT = [len(S + X), len(S + N)] * 3  # the target is the reference


def test_a_papers_requests_share_the_prompt_then_the_candidate():
    reusable = [c - 1 for c in CONTEXT]
    root = plan_prefix_tree(PAPER, reusable, min_shared=2)
    assert root.leaves == [] and len(root.children) == 1
    [prompt] = root.children
    assert (prompt.start, prompt.depth) == (0, len(S))
    # the marginals share only one token past S (< min_shared): they are the prompt's leaves
    assert sorted(prompt.leaves) == [1, 3, 5]
    [candidate] = prompt.children
    # the conditionals share S + X up to their last context token
    assert (candidate.start, candidate.depth, sorted(candidate.leaves)) == (8, 12, [0, 2, 4])
    lengths = [len(s) for s in PAPER]
    # S once, X[:4] once, conditionals' last context token + target, marginals' N + target
    assert tokens_computed(root, lengths) == 8 + 4 + (3 + 9) + (6 + 9) == 39
    assert sum(lengths) == 87  # computed without sharing
    finer = plan_prefix_tree(PAPER, reusable, min_shared=1)
    [prompt] = finer.children
    depths = sorted((c.start, c.depth, tuple(sorted(c.leaves))) for c in prompt.children)
    assert depths == [(8, 9, (1, 3, 5)), (8, 12, (0, 2, 4))]
    assert tokens_computed(finer, lengths) == 8 + 4 + 1 + (3 + 9) + (3 + 9) == 37


def test_every_leaf_lies_below_prefixes_it_starts_with():
    reusable = [c - 1 for c in CONTEXT]
    for min_shared in (1, 2, 4, 5, 50):
        root = plan_prefix_tree(PAPER, reusable, min_shared=min_shared)
        found = leaves_with_paths(root)
        assert sorted(found) == list(range(len(PAPER)))
        for index, path in found.items():
            for start, depth, source in path:
                assert depth <= reusable[index]
                assert PAPER[index][start:depth] == PAPER[source][start:depth]
                assert depth == start or depth - start >= min_shared


def test_min_shared_and_reusable_limit_sharing():
    # nothing is shared when the shared part is shorter than min_shared
    root = plan_prefix_tree(PAPER, [c - 1 for c in CONTEXT], min_shared=50)
    assert root.children == [] and sorted(root.leaves) == list(range(6))
    # with reuse switched off (reusable 0) every request is a root leaf
    root = plan_prefix_tree(PAPER, [0] * 6, min_shared=1)
    assert root.children == [] and sorted(root.leaves) == list(range(6))


def test_single_request_identical_requests_and_empty_input():
    root = plan_prefix_tree([(1, 2, 3)], [2])
    assert root.leaves == [0] and root.children == []
    twins = plan_prefix_tree([(1, 2, 3, 4), (1, 2, 3, 4)], [3, 3], min_shared=1)
    [child] = twins.children
    assert (child.start, child.depth, sorted(child.leaves)) == (0, 3, [0, 1])
    assert tokens_computed(twins, [4, 4]) == 3 + 1 + 1
    empty = plan_prefix_tree([], [])
    assert empty.leaves == [] and empty.children == []


def test_bad_arguments():
    with pytest.raises(ValueError, match="same length"):
        plan_prefix_tree([(1, 2)], [1, 1])
    with pytest.raises(ValueError, match="min_shared"):
        plan_prefix_tree([(1, 2)], [1], min_shared=0)


def test_scoring_plan_shares_all_but_the_last_context_token():
    from scorers.lm.base import ScoringRequest
    from scorers.lm.hf.prefix_tree import scoring_plan

    requests = [ScoringRequest((1, 2, 3, 4, 5), (6, 7)), ScoringRequest((1, 2, 3, 4, 5), (8,))]
    plan, sequences = scoring_plan(requests, min_shared=1)
    assert sequences == [(1, 2, 3, 4, 5, 6, 7), (1, 2, 3, 4, 5, 8)]
    (shared,) = plan.children
    assert (shared.start, shared.depth, sorted(shared.leaves)) == (0, 4, [0, 1])
    assert tokens_computed(plan, [7, 6]) == 4 + 3 + 2
    unshared, _ = scoring_plan(requests, min_shared=1, reuse=False)
    assert not unshared.children and sorted(unshared.leaves) == [0, 1]
