"""Packed scoring forwards (scorers/lm/hf/packed.py, packed_decoder.py) compute what
transformers' forward computes."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest
import torch

from conftest import plain_varlen_attention
from scorers.lm.base import ScoringRequest
from scorers.lm.hf import HFEvaluationLM, packed_attention
from scorers.lm.hf import packed_decoder as packed
from scorers.lm.hf.packed import PackedForwards
from scorers.lm.hf.packed_attention import PackedBatch

TOKENS = SimpleNamespace(pad_token_id=0, eos_token_id=0)
VOCAB = 300


def small_model(kind: str = "llama", layers: int = 2, **overrides):
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    shape = dict(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
    )
    shape.update(overrides)
    if kind == "qwen2":  # biases on the query, key and value projections
        return Qwen2ForCausalLM(Qwen2Config(**shape)).eval()
    rope = {
        "rope_type": "llama3",
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 64,
    }
    return LlamaForCausalLM(LlamaConfig(**shape, rope_scaling=rope, rope_theta=5e5)).eval()


def workload() -> list[ScoringRequest]:
    """Four 'papers': a shared 80-token system prompt, a synopsis per paper, three requests
    each of different lengths; and one short request sharing nothing."""
    rng = random.Random(0)
    system = [rng.randrange(VOCAB) for _ in range(80)]
    requests = []
    for paper in range(4):
        synopsis = [rng.randrange(VOCAB) for _ in range(70 + 10 * paper)]
        for _ in range(3):
            tail = [rng.randrange(VOCAB) for _ in range(rng.randrange(5, 40))]
            target = tuple(rng.randrange(VOCAB) for _ in range(rng.randrange(1, 20)))
            requests.append(ScoringRequest(tuple(system + synopsis + tail), target))
    requests.append(ScoringRequest(tuple(rng.randrange(VOCAB) for _ in range(7)), (5,)))
    return requests


def totals(lm: HFEvaluationLM, requests: list[ScoringRequest]) -> list[float]:
    return [r.total for r in lm.target_logprobs(requests)]


reference_varlen = plain_varlen_attention()
"""FlashAttention's variable-length causal forward, computed plainly (conftest)."""


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("budget", [1, 4096])
def test_packed_scores_equal_transformers(kind, budget):
    model = small_model(kind)
    requests = workload()
    expected = totals(HFEvaluationLM(model, TOKENS, identity="t", prefix_reuse=False), requests)
    padded = HFEvaluationLM(model, TOKENS, identity="t", max_batch_tokens=budget)
    ours = HFEvaluationLM(model, TOKENS, identity="t", max_batch_tokens=budget, packed=True)
    assert (
        isinstance(ours.forwards, PackedForwards) and not ours.forwards.flash
    )  # a CPU: masked attention
    got = totals(ours, requests)
    assert got == pytest.approx(expected, abs=1e-4)
    assert totals(padded, requests) == pytest.approx(expected, abs=1e-4)
    # the products ran the real tokens only; attention's layout is padded as before
    assert ours.stats["padded_tokens"] == ours.stats["tokens"] == padded.stats["tokens"]
    if budget > 1:
        assert padded.stats["padded_tokens"] > padded.stats["tokens"]
        assert ours.stats["attention_tokens"] > ours.stats["tokens"]


def test_packed_by_default_on_a_gpu_only():
    """On a CPU a forward runs one row (nothing to pack): transformers' forward by default."""
    model = small_model()
    assert not isinstance(HFEvaluationLM(model, TOKENS, identity="t").forwards, PackedForwards)
    forced = HFEvaluationLM(model, TOKENS, identity="t", packed=True)
    assert isinstance(forced.forwards, PackedForwards)
    assert (
        forced.options.forward_cost_tokens == 4096
    )  # fuller forwards: padding costs attention only
    gelu = small_model(hidden_act="gelu")
    assert not HFEvaluationLM(gelu, TOKENS, identity="t", packed=None).options.packed


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_fused_projections_score_the_same_and_hold_no_weight_twice(kind):
    """Query/key/value (with Qwen2's biases) and gate/up as one product each: the same scores
    as three and two products; the model's own projections become views of the fused weights,
    so its parameters take the same memory and its own forward gives the same logits."""
    model = small_model(kind)
    requests = workload()
    ids = torch.tensor([list(requests[0].context_ids)])
    with torch.inference_mode():
        before = model(ids).logits

    def held_bytes():  # the memory behind the model's parameters, each storage once
        storages = {p.untyped_storage().data_ptr(): p.untyped_storage() for p in model.parameters()}
        return sum(storage.nbytes() for storage in storages.values())

    storage_bytes = held_bytes()
    plain = HFEvaluationLM(model, TOKENS, identity="t", max_batch_tokens=4096, packed=True)
    expected = totals(plain, requests)
    fused = HFEvaluationLM(
        model, TOKENS, identity="t", max_batch_tokens=4096, packed=True, fuse_projections=True
    )
    assert totals(fused, requests) == pytest.approx(expected, abs=1e-5)
    layer = model.model.layers[0]
    weights = fused.forwards.decoder.layers[0]
    attention = layer.self_attn
    assert attention.k_proj.weight.data_ptr() == weights.qkv.data_ptr() + (
        attention.q_proj.weight.numel() * weights.qkv.element_size()
    )
    assert (weights.qkv_bias is not None) == (kind == "qwen2")
    assert layer.mlp.up_proj.weight.untyped_storage().data_ptr() == (
        weights.gate_up.untyped_storage().data_ptr()
    )
    assert held_bytes() == storage_bytes
    with torch.inference_mode():
        assert torch.equal(model(ids).logits, before)
    # a second backend on the same model reuses the fused weights
    again = HFEvaluationLM(model, TOKENS, identity="t", packed=True, fuse_projections=True)
    assert again.forwards.decoder.layers[0].qkv is weights.qkv
    # cast since: fused anew from the tensors the projections now hold
    model.double()
    cast = HFEvaluationLM(model, TOKENS, identity="t", packed=True, fuse_projections=True)
    recast = cast.forwards.decoder.layers[0]
    assert recast.qkv.dtype == torch.float64 and recast.q.data_ptr() == recast.qkv.data_ptr()
    assert layer.self_attn.q_proj.weight.data_ptr() == recast.qkv.data_ptr()
    with pytest.raises(ValueError, match="fuse_projections applies to packed forwards"):
        HFEvaluationLM(model, TOKENS, identity="t", packed=False, fuse_projections=True)


def test_grouped_and_repeated_heads_agree():
    model = small_model()
    requests = workload()
    runs = [
        totals(
            HFEvaluationLM(
                model, TOKENS, identity="t", max_batch_tokens=4096, packed=True, gqa_on_gpu=grouped
            ),
            requests,
        )
        for grouped in (False, True)
    ]
    assert runs[0] == pytest.approx(runs[1], abs=1e-5)


def test_flash_layout_through_a_reference_kernel(monkeypatch):
    """The flash path's packing (prefix then new keys row after row, cumulative lengths, the
    caches it keeps) checked on a CPU with a reference kernel in place of FlashAttention."""
    monkeypatch.setattr(packed, "flash_available", lambda model: True)
    monkeypatch.setattr(packed_attention, "_flash_varlen", reference_varlen)
    model = small_model()
    requests = workload()
    expected = totals(HFEvaluationLM(model, TOKENS, identity="t", prefix_reuse=False), requests)
    ours = HFEvaluationLM(
        model, TOKENS, identity="t", max_batch_tokens=4096, packed=True, packed_attention="flash"
    )
    assert ours.forwards.flash
    assert totals(ours, requests) == pytest.approx(expected, abs=1e-4)
    # no padding anywhere: not in the products, not in attention, not in the prefixes
    stats = ours.stats
    assert stats["padded_tokens"] == stats["attention_tokens"] == stats["tokens"]
    assert stats["padded_prefix_tokens"] == 0


def test_batch_layout_by_hand():
    flash = PackedBatch.build([2, 3], [4, 0], "cpu", flash=True)
    assert flash.positions.tolist() == [4, 5, 0, 1, 2]
    assert flash.cu_queries.tolist() == [0, 2, 5] and flash.cu_keys.tolist() == [0, 6, 9]
    assert flash.cu_queries.dtype == torch.int32 and flash.mask is None
    assert flash.starts == [0, 2] and (flash.width, flash.longest) == (3, 4)
    masked = PackedBatch.build([2, 3], [4, 0], "cpu", flash=False)
    assert masked.index.tolist() == [0, 1, 3, 4, 5]  # rows of width 3
    # row 0 sees its 4 prefix positions and its own tokens causally; row 1 has no prefix
    assert masked.mask.shape == (2, 1, 3, 7)
    assert masked.mask[0, 0, 1].tolist() == [True] * 4 + [True, True, False]
    assert masked.mask[1, 0, 0].tolist() == [False] * 4 + [True, False, False]
    with pytest.raises(ValueError, match="at least one new token"):
        PackedBatch.build([2, 0], [0, 0], "cpu", flash=True)
    with pytest.raises(ValueError, match="one prefix length per row"):
        PackedBatch.build([2], [0, 0], "cpu", flash=False)


def test_unsupported_models_and_settings_are_refused():
    assert packed.packed_support(small_model()) is None
    assert "activation" in packed.packed_support(small_model(hidden_act="gelu"))
    assert "sliding" in packed.packed_support(small_model("qwen2", use_sliding_window=True))
    # MLP biases, which the packed MLP would drop: refused, and the padded path is exact there
    biased = small_model(mlp_bias=True)
    assert "MLP projections with biases" in packed.packed_support(biased)
    with pytest.raises(ValueError, match="MLP projections with biases"):
        HFEvaluationLM(biased, TOKENS, identity="t", packed=True)
    model = small_model(hidden_act="gelu")
    with pytest.raises(ValueError, match="do not cover this model: activation 'gelu'"):
        HFEvaluationLM(model, TOKENS, identity="t", packed=True)
    with pytest.raises(ValueError, match="attention must be one of"):
        packed.PackedDecoder(small_model(), attention="paged")
    with pytest.raises(ValueError, match="CUDA device in bfloat16"):
        packed.PackedDecoder(small_model(), attention="flash")
    assert not packed.flash_available(small_model())


@pytest.mark.slow
def test_compiled_halves_serve_every_layer():
    """Compiled, the two halves of the layer give the same scores, and four layers compile no
    more graphs than the cases they meet (not one per layer)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    limit = torch._dynamo.config.recompile_limit
    model = small_model(layers=4)
    requests = workload()
    expected = totals(HFEvaluationLM(model, TOKENS, identity="t", prefix_reuse=False), requests)
    ours = HFEvaluationLM(
        model, TOKENS, identity="t", max_batch_tokens=4096, packed=True, compile_layers=True
    )
    assert totals(ours, requests) == pytest.approx(expected, abs=1e-4)
    assert 2 <= counters["stats"]["unique_graphs"] <= 6
    # the raised recompilation limit holds during our forwards only
    assert torch._dynamo.config.recompile_limit == limit < packed.COMPILED_RECOMPILE_LIMIT
    # fused projections compile too (the benchmark's fastest candidate on a GPU)
    fused = HFEvaluationLM(
        small_model(layers=4),
        TOKENS,
        identity="t",
        max_batch_tokens=4096,
        packed=True,
        compile_layers=True,
        fuse_projections=True,
    )
    assert totals(fused, requests) == pytest.approx(expected, abs=1e-4)
