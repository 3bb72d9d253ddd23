"""The decoding loop (scorers.lm.hf.decoding), its preallocated cache, the grouped-query attention
it runs on, and the concurrency that fills its batches."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from scorers.lm.base import GenerationSettings
from scorers.lm.batching import BatchingEvaluationLM
from scorers.lm.hf.decoding import decode, stop_token_ids
from scorers.lm.threads import run_blocking

NEVER = 49151  # a stop token neither path produces here: both run to max_new_tokens
PROMPTS = [
    [1, 9690, 198, 2683, 359, 253, 5356, 5646, 30, 2],
    [1, 4093, 198, 19161, 260, 3264, 28, 2, 198],
    [1, 9690, 198, 2683, 359, 253, 5356, 5646, 30, 2, 198, 1, 4093, 198, 4941],
]


def hf_greedy(model, prompt, new, penalty=1.0):
    """transformers' generate on one unpadded prompt: the reference."""
    ids = torch.tensor([prompt])
    with torch.inference_mode():
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new,
            eos_token_id=NEVER,
            do_sample=False,
            repetition_penalty=penalty,
            pad_token_id=0,
        )
    return out[0, len(prompt) :].tolist()


@pytest.mark.slow
@pytest.mark.parametrize("penalty", [1.0, 1.1])
def test_greedy_equals_transformers_generate_for_each_row(tiny_model, penalty):
    replies = decode(
        tiny_model, PROMPTS, max_new_tokens=12, stop_ids={NEVER}, pad_id=0,
        repetition_penalty=penalty,
    )  # fmt: skip
    for prompt, reply in zip(PROMPTS, replies, strict=True):
        assert len(reply) == 12
        assert reply == hf_greedy(tiny_model, prompt, 12, penalty)


@pytest.mark.slow
def test_embedded_model_batched_replies_equal_single_row_replies(embedded_lm):
    backend = embedded_lm.backend
    conversations = [
        [{"role": "user", "content": "Name three colours."}],
        [{"role": "user", "content": "What is the capital of France? Answer in one sentence."}],
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}],
    ]
    settings = GenerationSettings(max_new_tokens=24, temperature=0.0, repetition_penalty=1.1)
    together = backend.generate(conversations, settings)
    alone = [backend.generate([c], settings)[0] for c in conversations]
    assert together == alone
    assert all(together)
    # and the same as transformers' generate, row by row (the path it replaced)
    from scorers.lm.chat import generation_prompts

    prompts = generation_prompts(backend.tokenizer, conversations, "")
    for prompt, text in zip(prompts, together, strict=True):
        reference = backend._generate_with_transformers([prompt], settings)[0]
        assert text == backend.tokenizer.decode(reference, skip_special_tokens=True).strip()


@pytest.mark.slow
def test_finished_rows_leave_the_batch_and_stop_tokens_are_not_returned(tiny_model):
    common = {"max_new_tokens": 10, "pad_id": 0, "repetition_penalty": 2.0}
    free = decode(tiny_model, PROMPTS, stop_ids={NEVER}, **common)
    # stop the second row at the first token it had not produced before (from its 2nd on)
    cut = next(k for k in range(1, 10) if free[1][k] not in free[1][:k])
    stop = free[1][cut]
    stats = Counter()
    stopped = decode(tiny_model, PROMPTS, stop_ids={stop}, stats=stats, **common)
    assert stopped[1] == free[1][:cut]
    for row in (0, 2):  # the other rows are unchanged up to their own first stop token
        expected = free[row][: free[row].index(stop)] if stop in free[row] else free[row]
        assert stopped[row] == expected
    assert stats["generated_tokens"] == sum(len(r) for r in stopped)
    assert stats["prefill_tokens"] == sum(len(p) for p in PROMPTS)
    # one forward per step after the prefill, until the last row stops (at its stop token, or
    # with its 10th token, which needs no forward after it)
    longest = max(len(r) for r in stopped)
    assert stats["decode_steps"] == (9 if longest == 10 else longest)


@pytest.mark.slow
def test_sampling_is_seeded_and_arguments_are_checked(tiny_model):
    def sample(seed):
        return decode(
            tiny_model, PROMPTS, max_new_tokens=8, stop_ids={-1}, pad_id=0,
            temperature=1.5, seed=seed,
        )  # fmt: skip

    assert sample(3) == sample(3)
    assert sample(3) != sample(4)
    assert decode(tiny_model, PROMPTS, max_new_tokens=0, stop_ids={2}, pad_id=0) == [[], [], []]
    assert decode(tiny_model, [], max_new_tokens=5, stop_ids={2}, pad_id=0) == []
    with pytest.raises(ValueError, match="empty prompt"):
        decode(tiny_model, [[1, 2], []], max_new_tokens=5, stop_ids={2}, pad_id=0)
    with pytest.raises(ValueError, match="temperature"):
        decode(tiny_model, PROMPTS, max_new_tokens=5, stop_ids={2}, pad_id=0, temperature=-1)
    with pytest.raises(ValueError, match="repetition_penalty"):
        decode(tiny_model, PROMPTS, max_new_tokens=5, stop_ids={2}, pad_id=0,
               repetition_penalty=0)  # fmt: skip


@pytest.mark.slow
def test_prefill_groups_give_the_same_replies(tiny_model):
    one_by_one = decode(tiny_model, PROMPTS, max_new_tokens=8, stop_ids={-1}, pad_id=0)
    padded = decode(
        tiny_model, PROMPTS, max_new_tokens=8, stop_ids={-1}, pad_id=0,
        prefill_batch_tokens=10**6,
    )  # fmt: skip
    assert padded == one_by_one


@pytest.mark.slow
def test_stop_token_ids_come_from_the_generation_config(tiny_model, tokenizer):
    tiny_model.generation_config.eos_token_id = [2, 7]
    try:
        assert stop_token_ids(tiny_model, tokenizer) == {2, 7}
        tiny_model.generation_config.eos_token_id = None
        assert stop_token_ids(tiny_model, tokenizer) == {tokenizer.eos_token_id}
    finally:
        tiny_model.generation_config.eos_token_id = None


def test_preallocated_layer_refuses_to_overflow():
    from scorers.lm.hf.kv_cache import PreallocatedLayer

    keys = torch.zeros(1, 2, 4, 8)
    layer = PreallocatedLayer.holding(keys.clone(), keys.clone(), 3)
    out_keys, _ = layer.update(torch.ones(1, 2, 1, 8), torch.ones(1, 2, 1, 8))
    assert out_keys.shape == (1, 2, 4, 8) and float(out_keys[0, 0, 3].sum()) == 8.0
    with pytest.raises(RuntimeError, match="overflowed"):
        layer.update(torch.ones(1, 2, 1, 8), torch.ones(1, 2, 1, 8))
    with pytest.raises(ValueError, match="cannot hold"):
        PreallocatedLayer.holding(keys, keys, 5)


@pytest.mark.slow
def test_gqa_attention_with_a_padding_mask_is_bitwise_identical(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    from scorers.lm.hf.attention import GQA_SDPA, GQA_SDPA_ANY_DEVICE, use_gqa_attention

    torch.manual_seed(1)
    config = LlamaConfig(
        vocab_size=500, hidden_size=64, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=8, num_key_value_heads=2, attn_implementation="sdpa",
    )  # fmt: skip
    model = LlamaForCausalLM(config).eval()
    ids = torch.randint(3, 500, (3, 40))
    mask = torch.ones_like(ids)
    mask[0, :11] = 0
    mask[2, :3] = 0
    with torch.inference_mode():
        before = model(input_ids=ids, attention_mask=mask).logits
        assert use_gqa_attention(model)
        assert model.config._attn_implementation == GQA_SDPA
        after = model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(before, after)
    mha = LlamaForCausalLM(LlamaConfig(**{**config.to_dict(), "num_key_value_heads": 8}))
    assert not use_gqa_attention(mha)  # nothing to gain without grouped heads
    # the opt-in for every device (a GPU's kernels are measured by the GPU benchmark): the
    # same function wherever it is allowed
    model.set_attn_implementation("sdpa")
    assert use_gqa_attention(model, any_device=True)
    assert model.config._attn_implementation == GQA_SDPA_ANY_DEVICE
    with torch.inference_mode():
        assert torch.equal(before, model(input_ids=ids, attention_mask=mask).logits)


class SlowBackend:
    identity, tokenizer, max_length = "slow", None, None

    def __init__(self) -> None:
        self.batches: list[int] = []

    def generate(self, conversations, settings):
        self.batches.append(len(conversations))
        time.sleep(0.05)
        return [c[0]["content"] for c in conversations]


def test_callers_arriving_together_share_one_batch():
    backend = SlowBackend()
    lm = BatchingEvaluationLM(backend, settle_s=0.05, max_gather_s=1.0)
    settings = GenerationSettings(max_new_tokens=4)

    def call(i):
        time.sleep(0.002 * i)  # staggered by milliseconds, as samples reach the model
        return lm.generate([[{"role": "user", "content": str(i)}]], settings)

    with ThreadPoolExecutor(10) as pool:
        results = list(pool.map(call, range(10)))
    assert results == [[str(i)] for i in range(10)]
    assert backend.batches == [10]
    with pytest.raises(ValueError):
        BatchingEvaluationLM(backend, settle_s=-1)


def test_many_blocking_calls_can_wait_at_once():
    # asyncio.to_thread's default executor has min(32, cores + 4) threads: on a small machine
    # the 40 waiters below would never all meet at the barrier
    barrier = threading.Barrier(40, timeout=10)

    async def main():
        return await asyncio.gather(*(run_blocking(barrier.wait) for _ in range(40)))

    assert sorted(asyncio.run(main())) == list(range(40))


@pytest.mark.slow
def test_shared_prefixes_are_prefilled_once_with_the_same_replies(tiny_model, embedded_lm):
    """Nested shared prefixes (one system prompt for all; one candidate for several statements,
    as in an oracle's questions) run once; replies equal the unshared prefill's."""
    system = list(range(1000, 1080))  # 80 tokens every prompt starts with
    candidate_a, candidate_b = list(range(2000, 2100)), list(range(3000, 3070))
    prompts = [
        system + candidate_a + [5, 6, 7],
        system + candidate_a + [8, 9],
        system + candidate_a + [10],
        system + candidate_b + [11, 12],
        system + candidate_b + [13],
        system + [14, 15, 16],
        [17, 18],  # shares nothing
        system + candidate_a + [5, 6, 7],  # a duplicate of the first
    ]
    common = {"max_new_tokens": 12, "stop_ids": {-1}, "pad_id": 0}
    for model in (tiny_model, embedded_lm.backend.model):
        plain_stats, shared_stats = Counter(), Counter()
        plain = decode(model, prompts, share_prefixes=False, stats=plain_stats, **common)
        shared = decode(model, prompts, stats=shared_stats, **common)
        assert shared == plain
        total = sum(len(p) for p in prompts)
        assert plain_stats["prefill_tokens_computed"] == plain_stats["prefill_tokens"] == total
        # run once each: the system prompt (80), candidate a (100) and b (70), then the suffixes
        # (3, 2, 1, 2, 1, 3, the unshared 2, and the duplicate's 3: what it shares beyond
        # candidate a is shorter than min_shared, 64 tokens, so it is not a prefix of its own)
        assert shared_stats["prefill_tokens"] == total
        assert shared_stats["prefill_tokens_computed"] == 80 + 100 + 70 + 17
    # the logits of the first step, not only the greedy tokens, agree
    import torch

    from scorers.lm.hf.decoding import _prefill, _prefill_shared

    width = max(len(p) for p in prompts)
    model = embedded_lm.backend.model
    with torch.inference_mode():
        buffers, logits = _prefill(model, prompts, width, width + 1, 0, 1)
        shared_buffers, shared_logits, _ = _prefill_shared(model, prompts, width, width + 1, 64)
    torch.testing.assert_close(shared_logits, logits, atol=2e-4, rtol=1e-4)
    for (keys, values), (shared_keys, shared_values) in zip(buffers, shared_buffers, strict=True):
        torch.testing.assert_close(shared_keys, keys, atol=2e-4, rtol=1e-4)
        torch.testing.assert_close(shared_values, values, atol=2e-4, rtol=1e-4)
