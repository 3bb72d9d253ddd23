"""The transformers backend against a naive reference computation."""

from __future__ import annotations

import os

import pytest
import torch

from scorers.lm.base import GenerationSettings, ScoringRequest
from scorers.lm.hf import HFEvaluationLM
from scorers.lm.hf.budget import least_padding_batches, token_budget_batches


def naive_logprob(model, request: ScoringRequest) -> float:
    """One full forward pass, full-vocabulary log-softmax, gather (the authors' notebook)."""
    ids = torch.tensor([list(request.context_ids) + list(request.target_ids)])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].double(), dim=-1)
    start = len(request.context_ids)
    return sum(
        float(logprobs[p - 1, ids[0, p]]) for p in range(start, start + len(request.target_ids))
    )


def make_requests(n: int = 6) -> list[ScoringRequest]:
    generator = torch.Generator().manual_seed(1)
    requests = []
    for i in range(n):
        context = torch.randint(3, 49152, (5 + 7 * i,), generator=generator).tolist()
        target = torch.randint(3, 49152, (3 + 4 * (n - i),), generator=generator).tolist()
        requests.append(ScoringRequest(tuple(context), tuple(target)))
    return requests


@pytest.mark.slow
def test_summed_logprob_matches_naive_reference(tiny_lm, tiny_model):
    requests = make_requests()
    results = tiny_lm.target_logprobs(requests)
    for request, result in zip(requests, results):
        assert result.n_tokens == len(request.target_ids)
        assert result.total == pytest.approx(naive_logprob(tiny_model, request), abs=1e-4)


@pytest.mark.slow
def test_batched_equals_unbatched_and_padding_side_is_irrelevant(tiny_model, tokenizer):
    requests = make_requests()
    one_at_a_time = HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch_tokens=1)
    batched_right = HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch_tokens=10**6)
    batched_left = HFEvaluationLM(
        tiny_model, tokenizer, identity="t", max_batch_tokens=10**6, padding_side="left"
    )
    chunked = HFEvaluationLM(tiny_model, tokenizer, identity="t", projection_chunk=5)
    whole_vocab = HFEvaluationLM(tiny_model, tokenizer, identity="t", vocab_chunk=0)
    odd_slices = HFEvaluationLM(tiny_model, tokenizer, identity="t", vocab_chunk=1000)
    assert one_at_a_time.options.vocab_chunk == 1024  # the CPU default slices the head
    reference = [r.total for r in one_at_a_time.target_logprobs(requests)]
    for backend in (batched_right, batched_left, chunked, whole_vocab, odd_slices):
        got = [r.total for r in backend.target_logprobs(requests)]
        assert got == pytest.approx(reference, abs=1e-4)


@pytest.mark.parametrize("step", [1, 3, 4, 10])
def test_sliced_projection_equals_full_log_softmax(step):
    """Vocabulary slices with a running maximum give the full log-softmax, with a bias, a
    logit scale and soft-capping applied per slice, a masked (-inf) entry, huge logits, and a
    target in the last (short) slice."""
    from scorers.lm.hf.projection import sliced_logprobs

    generator = torch.Generator().manual_seed(0)
    head = torch.nn.Linear(6, 10)
    with torch.no_grad():
        head.weight.copy_(torch.randn(10, 6, generator=generator) * 30)
        head.bias.copy_(torch.randn(10, generator=generator))
        head.bias[2] = float("-inf")

    def transform(logits):
        return torch.tanh(logits * 0.5 / 40.0) * 40.0

    rows = torch.randn(5, 6, generator=generator)
    tokens = torch.tensor([0, 9, 3, 7, 9])
    with torch.no_grad():
        want = torch.log_softmax(transform(head(rows)).double(), dim=-1)[range(5), tokens]
        got = sliced_logprobs(rows, tokens, head, step, transform)
    assert torch.isfinite(got).all()
    assert got.double().tolist() == pytest.approx(want.tolist(), abs=1e-5)


@pytest.mark.slow
def test_results_come_back_in_request_order(tiny_lm):
    requests = make_requests()
    forward = tiny_lm.target_logprobs(requests)
    backward = tiny_lm.target_logprobs(requests[::-1])
    assert [r.total for r in backward] == pytest.approx([r.total for r in forward][::-1], abs=1e-5)


def test_token_budget_batches_sorts_and_respects_budget():
    lengths = [10, 3, 7, 3, 20]
    batches = token_budget_batches(lengths, max_batch_tokens=14)
    assert sorted(i for b in batches for i in b) == [0, 1, 2, 3, 4]
    assert batches == [[1, 3], [2], [0], [4]]  # 3+3 fit (2x3=6), 7 with them would be 3x7=21
    for batch in batches:
        assert len(batch) == 1 or max(lengths[i] for i in batch) * len(batch) <= 14


def test_least_padding_batches_weighs_padding_against_forwards():
    """Hand-worked: rows of 1, 1, 1 and 10 tokens. With no forward cost every row is alone (no
    padding); at 5 tokens per forward the three short rows share one (3 + 5) and the long one
    runs alone (10 + 5): 23 beats all four together (40 + 5) and four forwards (33); at 100 per
    forward one batch (140) beats two (213), unless the budget forbids it (4 x 10 > 30)."""
    lengths = [1, 10, 1, 1]
    assert least_padding_batches(lengths, 100, forward_cost=0) == [[0], [2], [3], [1]]
    assert least_padding_batches(lengths, 100, forward_cost=5) == [[0, 2, 3], [1]]
    assert least_padding_batches(lengths, 100, forward_cost=100) == [[0, 2, 3, 1]]
    assert least_padding_batches(lengths, 30, forward_cost=100) == [[0, 2, 3], [1]]
    assert least_padding_batches([50], 10, forward_cost=0) == [[0]]  # a long row alone
    assert least_padding_batches([], 10, forward_cost=3) == []
    with pytest.raises(ValueError, match="forward_cost"):
        least_padding_batches(lengths, 100, forward_cost=-1)


def test_least_padding_batches_never_pad_more_than_greedy_batches():
    import random

    rng = random.Random(0)
    for _ in range(50):
        lengths = [rng.randint(1, 60) for _ in range(rng.randint(1, 40))]
        budget, cost = rng.choice([64, 200, 1000]), rng.choice([0, 8, 64])
        batches = least_padding_batches(lengths, budget, forward_cost=cost)
        assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
        for batch in batches:
            assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= budget

        def cost_of(split, lengths=lengths, cost=cost):
            return sum(len(b) * max(lengths[i] for i in b) + cost for b in split)

        assert cost_of(batches) <= cost_of(token_budget_batches(lengths, budget))


def test_scoring_request_rejects_empty_parts():
    with pytest.raises(ValueError, match="context"):
        ScoringRequest((), (1,))
    with pytest.raises(ValueError, match="target"):
        ScoringRequest((1,), ())


@pytest.mark.slow
def test_generate_prefill_is_part_of_the_reply(tiny_lm):
    settings = GenerationSettings(max_new_tokens=4, prefill="The reviewer")
    replies = tiny_lm.generate([[{"role": "user", "content": "Hello"}]] * 2, settings)
    assert len(replies) == 2
    assert all(r.startswith("The reviewer") for r in replies)
    assert replies[0] == replies[1]  # greedy decoding is deterministic


@pytest.mark.slow
def test_unknown_dtype_is_refused(embedded_folder):
    with pytest.raises(ValueError, match="dtype"):
        HFEvaluationLM.from_pretrained(embedded_folder, dtype="float8")


def paper_requests(tokenizer) -> list[ScoringRequest]:
    """Two papers' GEM requests: one candidate against three references, conditional and
    marginal, so prompts share the system prompt + synopsis and the candidate's judgments."""
    from scorers.lm.chat import build_scoring_request
    from scorers.pmi import NOT_AVAILABLE, prediction_messages

    requests = []
    for paper in range(2):
        synopsis = f"Paper {paper} studies sparse attention for long documents." * (1 + paper)
        candidate = (
            "The reviewer appreciates the clear writing.\nThe reviewer criticizes the baselines."
        )
        for ref in range(3):
            target = f"The reviewer questions result {ref} of paper {paper}." * (ref + 1)
            for judgments in (candidate, NOT_AVAILABLE):
                messages = prediction_messages(synopsis=synopsis, judgments=judgments)
                requests.append(build_scoring_request(tokenizer, messages, target))
    return requests


def count_decoder_tokens(model) -> tuple[list[int], object]:
    seen = [0]

    def hook(module, args, kwargs):
        seen[0] += int(kwargs["input_ids"].numel())

    return seen, model.get_decoder().register_forward_pre_hook(hook, with_kwargs=True)


@pytest.mark.slow
def test_prefix_reuse_gives_the_same_results_with_fewer_tokens(tiny_model, tokenizer):
    from scorers.lm.hf.prefix_tree import plan_prefix_tree, tokens_computed

    requests = paper_requests(tokenizer)
    naive = [naive_logprob(tiny_model, r) for r in requests]
    plain = HFEvaluationLM(tiny_model, tokenizer, identity="t", prefix_reuse=False)
    variants = {
        "one at a time": HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch_tokens=1),
        "batched": HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch_tokens=10**6),
        "left": HFEvaluationLM(
            tiny_model, tokenizer, identity="t", max_batch_tokens=10**6, padding_side="left"
        ),
        "fewest forwards": HFEvaluationLM(
            tiny_model, tokenizer, identity="t", max_batch_tokens=10**6, forward_cost_tokens=10**6
        ),
    }
    assert all(v.options.prefix_reuse for v in variants.values())
    assert not plain.options.prefix_reuse
    assert [r.total for r in plain.target_logprobs(requests)] == pytest.approx(naive, abs=1e-4)
    for name, backend in variants.items():
        got = [r.total for r in backend.target_logprobs(requests)]
        assert got == pytest.approx(naive, abs=1e-4), name

    seen, handle = count_decoder_tokens(tiny_model)
    try:
        variants["one at a time"].target_logprobs(requests)
        shared = seen[0]
        seen[0] = 0
        plain.target_logprobs(requests)
        unshared = seen[0]
    finally:
        handle.remove()
    lengths = [r.length for r in requests]
    plan = plan_prefix_tree(
        [r.context_ids + r.target_ids for r in requests],
        [len(r.context_ids) - 1 for r in requests],
        min_shared=variants["one at a time"].options.min_shared_prefix,
    )
    assert shared == tokens_computed(plan, lengths)
    assert unshared == sum(lengths)  # one row per forward on a CPU: no padding
    # the system prompt alone is ~70 tokens of each of the 12 requests
    assert shared < 0.6 * sum(lengths)


@pytest.mark.slow
@pytest.mark.parametrize("min_shared", [4, 64])
def test_sibling_prefixes_are_extended_together(tiny_model, tokenizer, min_shared):
    """With a token budget, sibling prefixes (the two papers below the system prompt, and
    below each paper's synopsis the candidate's and the "Not available" judgments) run in one
    padded forward; results stay the naive ones and the real tokens computed are the plan's."""
    from scorers.lm.hf.prefix_tree import plan_prefix_tree, tokens_computed

    requests = paper_requests(tokenizer)
    naive = [naive_logprob(tiny_model, r) for r in requests]
    one = HFEvaluationLM(
        tiny_model, tokenizer, identity="t", max_batch_tokens=1, min_shared_prefix=min_shared
    )
    batched = HFEvaluationLM(  # a forward costs more than any padding: fewest forwards
        tiny_model,
        tokenizer,
        identity="t",
        max_batch_tokens=10**6,
        min_shared_prefix=min_shared,
        forward_cost_tokens=10**6,
    )
    plan = plan_prefix_tree(
        [r.context_ids + r.target_ids for r in requests],
        [len(r.context_ids) - 1 for r in requests],
        min_shared=min_shared,
    )
    inner: list[int] = []
    stack = [plan]
    while stack:
        node = stack.pop()
        inner.append(len(node.children))
        stack.extend(node.children)
    if min_shared == 4:
        assert max(inner) >= 2  # the fine-grained tree really has siblings of unequal length
    planned = tokens_computed(plan, [r.length for r in requests])
    for backend in (one, batched):
        got = [r.total for r in backend.target_logprobs(requests)]
        assert got == pytest.approx(naive, abs=1e-4)
        assert backend.stats["tokens"] == planned
    assert one.stats["padded_tokens"] == planned  # one row per forward: no padding
    assert one.stats["forwards"] == len(requests) + sum(inner)  # one per leaf, one per prefix
    # batched, within the budget: one forward for all the leaves of one depth of the tree,
    # whatever node they hang from, and one for all the prefixes extended at that depth
    levels_with_leaves = levels_with_children = 0
    level = [plan]
    while level:
        levels_with_leaves += any(node.leaves for node in level)
        levels_with_children += any(node.children for node in level)
        level = [child for node in level for child in node.children]
    assert batched.stats["forwards"] == levels_with_leaves + levels_with_children
    assert batched.stats["forwards"] < one.stats["forwards"]
    assert batched.stats["padded_tokens"] > planned
    if min_shared == 4:  # cousins of unequal prefix lengths shared a forward
        assert batched.stats["padded_prefix_tokens"] > 0


@pytest.mark.slow
def test_settings_resolve_once_into_options(tiny_model, tokenizer):
    """Every setting lands in one HFOptions; the device-dependent defaults are chosen for a CPU
    and read back as in force; explicit values are kept; bad settings are refused by name."""
    from scorers.lm.hf import HFOptions
    from scorers.lm.hf.padded import PaddedForwards

    lm = HFEvaluationLM(tiny_model, tokenizer, identity="t")
    assert lm.options == HFOptions(
        max_batch_tokens=1, vocab_chunk=1024, packed=False, forward_cost_tokens=512
    )
    assert isinstance(lm.forwards, PaddedForwards)
    chosen = HFEvaluationLM(
        tiny_model, tokenizer, identity="t", max_batch_tokens=64, vocab_chunk=0, padding_side="left"
    ).options
    assert (chosen.max_batch_tokens, chosen.vocab_chunk, chosen.padding_side) == (64, 0, "left")
    with pytest.raises(TypeError, match="max_batch"):
        HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch=64)
    with pytest.raises(ValueError, match="padding_side must be 'left' or 'right', got 'top'"):
        HFOptions(padding_side="top")
    with pytest.raises(ValueError, match="packed_attention must be one of"):
        HFOptions(packed_attention="paged")
    with pytest.raises(ValueError, match="projection_chunk must be at least 1, got 0"):
        HFOptions(projection_chunk=0)
    with pytest.raises(ValueError, match="forward_cost_tokens must not be negative"):
        HFOptions(forward_cost_tokens=-1)


def test_prefix_reuse_is_off_for_sliding_window_models(tokenizer):
    from transformers import MistralConfig, MistralForCausalLM

    config = MistralConfig(
        vocab_size=49152,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        sliding_window=16,
    )
    backend = HFEvaluationLM(MistralForCausalLM(config), tokenizer, identity="m")
    assert not backend.options.prefix_reuse


@pytest.mark.slow
def test_loading_a_model_prints_nothing(tmp_path):
    """A user's run prints Inspect's display and real warnings, not transformers' progress bars:
    materialising the embedded model from its GGUF (the first run on a machine) and loading it
    as an evaluation LM are silent."""
    import subprocess
    import sys

    code = (
        "from scorers.lm import load_evaluation_lm\nload_evaluation_lm('embedded')\nprint('done')\n"
    )
    env = {**os.environ, "GEM_TASKS_CACHE_DIR": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "done"
    for noise in ("de-quantizing", "Loading weights", "Writing model shards", "%|"):
        assert noise not in run.stderr, run.stderr[-2000:]


@pytest.mark.slow
def test_compiled_layers_score_like_eager_layers(tiny_model, tokenizer):
    """compile_layers compiles each layer's norms and MLP (the attention, which indexes the
    cache by its layer, stays eager): the scores are the eager ones up to rounding, and the
    layers share a handful of compiled graphs rather than one per layer."""
    import copy

    from torch._dynamo.utils import counters

    from scorers.lm.hf.padded import compile_decoder_layers

    requests = paper_requests(tokenizer)
    eager = HFEvaluationLM(tiny_model, tokenizer, identity="t", max_batch_tokens=10**6)
    model = copy.deepcopy(tiny_model)
    layers = model.get_decoder().layers
    before = counters["stats"]["unique_graphs"]
    compiled = HFEvaluationLM(
        model, tokenizer, identity="t", max_batch_tokens=10**6, compile_layers=True
    )
    got = [r.total for r in compiled.target_logprobs(requests)]
    assert got == pytest.approx([r.total for r in eager.target_logprobs(requests)], abs=1e-4)
    assert all(layer.self_attn._compiled_call_impl is None for layer in layers)
    assert all(layer.mlp._compiled_call_impl is not None for layer in layers)
    assert 0 < counters["stats"]["unique_graphs"] - before <= 8
    with pytest.raises(ValueError, match="list of layers"):
        compile_decoder_layers(_NoLayers())


class _NoLayers(torch.nn.Module):
    def get_decoder(self):
        return self
