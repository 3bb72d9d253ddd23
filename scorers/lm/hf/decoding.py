"""Batched decoding for transformers causal LMs: the generation loop of the ``hf`` and
``embedded`` evaluation LMs (judgment rewrites, ASSW, LLM perturbations, judges) and of the
``smollm2/embedded`` model under test.

What it does, and why (measured on 2 CPU cores with SmolLM2-135M, ``benchmarks/generation.py``):

- **Prefill in token-budget groups, left-padded** (row by row on a CPU, where padding only adds
  work: ten ~1,100-token review prompts took 25-29 s one by one and 42-45 s as one padded batch),
  then every row's keys and values go into one left-aligned buffer sized for the longest prompt
  plus ``max_new_tokens`` (:func:`scorers.lm.hf.kv_cache.cache_holding`), so each decoding step
  writes in place instead of growing the cache by concatenation.
- **Shared prompt prefixes prefilled once** (row-by-row prefill): prompts that start with the
  same tokens (one system prompt and instructions for every judgment rewrite; one candidate
  review before each of its reference statements in an oracle's questions) are arranged by
  :func:`scorers.lm.hf.prefix_tree.plan_prefix_tree`, the planner of the scoring path; each shared
  prefix runs once and every prompt below it runs only its own suffix on top of a copy of the
  prefix's keys and values.
- **One decoding step for all rows**: each step reads every weight once for the whole batch.
- **Finished rows leave the batch** (end-of-turn or ``max_new_tokens``), so a batch whose replies
  have different lengths stops paying for the short ones.

Greedy decoding picks the arg-max after the repetition penalty (transformers' definition, applied
to each row's own prompt and generated tokens, never to padding); sampling draws from
``softmax(logits / temperature)`` with a generator seeded by ``seed`` (no top-k or top-p).
A row's greedy reply does not depend on the other rows beyond floating-point differences of
batched matrix products; ``benchmarks/generation.py`` compares them with transformers'
``generate`` before reporting any speed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import torch

from scorers.lm.hf.budget import token_budget_batches
from scorers.lm.hf.cache_argument import cache_kwargs
from scorers.lm.hf.kv_cache import cache_holding
from scorers.lm.hf.prefix_tree import DEFAULT_MIN_SHARED, forward_segments, plan_prefix_tree

__all__ = ["decode", "stop_token_ids"]


def stop_token_ids(model: Any, tokenizer: Any) -> set[int]:
    """The ids that end a reply: the model's generation config ``eos_token_id`` (an id or a
    list), else the tokenizer's end-of-sequence token.

    Raises:
        ValueError: neither names one (a reply could never end before ``max_new_tokens``).
    """
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if configured is None:
        configured = getattr(tokenizer, "eos_token_id", None)
    ids = {configured} if isinstance(configured, int) else set(configured or ())
    if not ids:
        raise ValueError("the model names no end-of-sequence token to stop generation at")
    return {int(i) for i in ids}


@torch.inference_mode()
def decode(
    model: Any,
    prompts: Sequence[Sequence[int]],
    *,
    max_new_tokens: int,
    stop_ids: Iterable[int],
    pad_id: int,
    temperature: float = 0.0,
    repetition_penalty: float = 1.0,
    seed: int = 0,
    prefill_batch_tokens: int = 1,
    share_prefixes: bool = True,
    min_shared: int = DEFAULT_MIN_SHARED,
    stats: Counter[str] | None = None,
) -> list[list[int]]:
    """Generate up to ``max_new_tokens`` tokens after each prompt; all prompts decode together.

    Args:
        model: a transformers causal LM whose layers all use full attention.
        prompts: token ids, each non-empty (the chat template applied).
        max_new_tokens: the most tokens generated per prompt (>= 0).
        stop_ids: token ids that end a reply (not included in it).
        pad_id: the id placed left of shorter prompts (masked out, never attended to).
        temperature: 0 for greedy decoding, else the sampling temperature.
        repetition_penalty: transformers' repetition penalty (1.0 = none).
        seed: seeds the sampling generator (unused when greedy).
        prefill_batch_tokens: padded-token budget of one prefill forward (1 = row by row).
        share_prefixes: with the row-by-row prefill, run prompt prefixes shared by two or more
            prompts once (at least ``min_shared`` tokens each); the padded-batch prefill does
            not share.
        min_shared: the shortest shared prefix worth a forward call of its own.
        stats: a counter that receives ``prefill_tokens`` (prompt tokens),
            ``prefill_tokens_computed`` (those run through the model: fewer when prefixes are
            shared), ``decode_steps`` and ``generated_tokens``.

    Returns:
        The generated ids of each prompt, in order, without the stop token.

    Raises:
        ValueError: an empty prompt, a negative ``max_new_tokens`` or ``temperature``, or a
            repetition penalty <= 0.
    """
    _check_arguments(prompts, max_new_tokens, temperature, repetition_penalty)
    if not prompts or max_new_tokens == 0:
        return [[] for _ in prompts]
    stats = stats if stats is not None else Counter()
    device = next(model.parameters()).device
    lengths = torch.tensor([len(p) for p in prompts], device=device)
    width = int(lengths.max())
    capacity = width + max_new_tokens

    if prefill_batch_tokens == 1 and share_prefixes:
        buffers, logits, computed = _prefill_shared(model, prompts, width, capacity, min_shared)
    else:
        buffers, logits = _prefill(model, prompts, width, capacity, pad_id, prefill_batch_tokens)
        computed = int(lengths.sum())
    stats["prefill_tokens"] += int(lengths.sum())
    stats["prefill_tokens_computed"] += computed
    cache = cache_holding(model.config, buffers, width)

    seen, attention = _seen_and_attention(prompts, width, capacity, device)
    stops = torch.tensor(sorted(set(stop_ids)), device=device)
    generator = None
    if temperature > 0:
        generator = torch.Generator(device=device).manual_seed(seed)

    def choose(logits: torch.Tensor, history: torch.Tensor) -> torch.Tensor:
        return _choose(logits, history, repetition_penalty, temperature, generator)

    return _steps(
        model, logits, cache, seen, attention, lengths, width, max_new_tokens, stops, choose, stats
    )


def _steps(
    model: Any,
    logits: torch.Tensor,
    cache: Any,
    seen: torch.Tensor,
    attention: torch.Tensor,
    lengths: torch.Tensor,
    width: int,
    max_new_tokens: int,
    stops: torch.Tensor,
    choose: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    stats: Counter[str],
) -> list[list[int]]:
    """:func:`decode`'s steps after the prefill: each step chooses every active row's token
    from ``logits``, records it (a stop token ends the row, which leaves the batch and the
    cache), and runs the one-token forward of the rows left."""
    outputs: list[list[int]] = [[] for _ in range(len(lengths))]
    active = torch.arange(len(lengths), device=lengths.device)  # original index of each row
    for step in range(max_new_tokens):
        chosen = choose(logits, seen[:, : width + step])
        stopped = torch.isin(chosen, stops)
        for index, token, stop in zip(active.tolist(), chosen.tolist(), stopped.tolist()):
            if not stop:
                outputs[index].append(token)
        stats["generated_tokens"] += int((~stopped).sum())
        if step + 1 == max_new_tokens:
            break
        keep = ~stopped
        if not bool(keep.any()):
            break
        if not bool(keep.all()):
            kept = keep.nonzero().squeeze(1)
            active, chosen = active[kept], chosen[kept]
            seen, attention, lengths = seen[kept], attention[kept], lengths[kept]
            cache.batch_select_indices(kept)
        column = width + step
        seen[:, column] = chosen
        attention[:, column] = 1
        out = model(
            input_ids=chosen[:, None],
            attention_mask=attention[:, : column + 1],
            position_ids=(lengths + step)[:, None],
            **cache_kwargs(model, cache),
            use_cache=True,
        )
        logits = out.logits[:, -1]
        stats["decode_steps"] += 1
    return outputs


def _check_arguments(
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float,
    repetition_penalty: float,
) -> None:
    """:func:`decode`'s argument checks (its Raises)."""
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if repetition_penalty <= 0:
        raise ValueError(f"repetition_penalty must be > 0, got {repetition_penalty}")
    if any(len(p) == 0 for p in prompts):
        raise ValueError("cannot generate from an empty prompt")


def _seen_and_attention(
    prompts: Sequence[Sequence[int]], width: int, capacity: int, device: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tokens the repetition penalty has seen (each row's prompt, its left padding filled
    with the row's first token, a duplicate that changes nothing; then what it generates) and
    the attention mask (the prompt's columns), both ``rows x capacity``."""
    rows = len(prompts)
    seen = torch.empty((rows, capacity), dtype=torch.long, device=device)
    attention = torch.zeros((rows, capacity), dtype=torch.long, device=device)
    for row, ids in enumerate(prompts):
        seen[row, : width - len(ids)] = ids[0]
        seen[row, width - len(ids) : width] = torch.tensor(list(ids), device=device)
        attention[row, width - len(ids) : width] = 1
    return seen, attention


def _choose(
    logits: torch.Tensor,
    history: torch.Tensor,
    repetition_penalty: float,
    temperature: float,
    generator: torch.Generator | None,
) -> torch.Tensor:
    """Each row's next token from its last logits: transformers' repetition penalty over the
    tokens in ``history``, then the argmax (greedy, ``generator`` None) or a sample at
    ``temperature``."""
    scores = logits.float()
    if repetition_penalty != 1.0:
        picked = torch.gather(scores, 1, history)
        picked = torch.where(picked < 0, picked * repetition_penalty, picked / repetition_penalty)
        scores = scores.scatter(1, history, picked)
    if generator is None:
        return scores.argmax(dim=-1)
    probabilities = torch.softmax(scores / temperature, dim=-1)
    return torch.multinomial(probabilities, 1, generator=generator).squeeze(1)


def _allocate(
    layers: Sequence[tuple[Any, Any]], row_logits: Any, rows: int, capacity: int
) -> tuple[list[tuple[Any, Any]], Any]:
    """Zeroed per-layer key/value buffers ``[rows, heads, capacity, dim]`` shaped like the
    first prefilled ``layers``, and an empty logits table like ``row_logits``."""
    device = row_logits.device
    logits = torch.empty((rows, row_logits.shape[-1]), dtype=row_logits.dtype, device=device)
    buffers = []
    for keys, values in layers:
        shape = (rows, keys.shape[1], capacity)
        buffers.append(
            (
                torch.zeros((*shape, keys.shape[-1]), dtype=keys.dtype, device=device),
                torch.zeros((*shape, values.shape[-1]), dtype=values.dtype, device=device),
            )
        )
    return buffers, logits


def _prefill_shared(
    model: Any,
    prompts: Sequence[Sequence[int]],
    width: int,
    capacity: int,
    min_shared: int,
) -> tuple[list[tuple[Any, Any]], Any, int]:
    """Row-by-row prefill through a shared-prefix tree: each shared prefix runs once on top of
    its parent's keys and values, each prompt's own suffix (at least its last token, whose
    position gives the next-token logits) on top of its prefix's. Returns the buffers and logits
    of :func:`_prefill` and the number of tokens run."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    root = plan_prefix_tree(prompts, [len(p) - 1 for p in prompts], min_shared=min_shared)
    buffers: list[tuple[Any, Any]] = []
    logits: Any = None

    def run(tokens: Sequence[int], start: int, past: list[tuple[Any, Any]] | None):
        cache = DynamicCache(config=model.config)
        for index, (keys, values) in enumerate(past or ()):
            cache.update(keys, values, index)  # the forward concatenates: ``past`` stays intact
        out = model(
            input_ids=torch.tensor([list(tokens)], device=device),
            attention_mask=torch.ones((1, start + len(tokens)), dtype=torch.long, device=device),
            position_ids=torch.arange(start, start + len(tokens), device=device)[None],
            **cache_kwargs(model, cache),
            use_cache=True,
            logits_to_keep=1,
        )
        return [(layer.keys, layer.values) for layer in cache.layers], out.logits[0, -1]

    stack: list[tuple[Any, list[tuple[Any, Any]] | None]] = [(root, None)]
    while stack:
        node, past = stack.pop()
        if node.depth > node.start:
            past, _ = run(prompts[node.source][node.start : node.depth], node.start, past)
        for index in node.leaves:
            prompt = prompts[index]
            layers, row_logits = run(prompt[node.depth :], node.depth, past)
            if logits is None:
                buffers, logits = _allocate(layers, row_logits, len(prompts), capacity)
            logits[index] = row_logits
            start = width - len(prompt)
            for (keys, values), (row_keys, row_values) in zip(buffers, layers, strict=True):
                keys[index, :, start:width] = row_keys[0]
                values[index, :, start:width] = row_values[0]
        stack.extend((child, past) for child in node.children)
    computed = sum(
        end - start for start, end, _ in forward_segments(root, [len(p) for p in prompts])
    )
    return buffers, logits, computed


def _prefill(
    model: Any,
    prompts: Sequence[Sequence[int]],
    width: int,
    capacity: int,
    pad_id: int,
    budget: int,
) -> tuple[list[tuple[Any, Any]], Any]:
    """Run every prompt, in left-padded token-budget groups; return per-layer key/value buffers
    (``[rows, heads, capacity, dim]``, prompts right-aligned at ``width``) and each row's
    next-token logits."""
    from transformers import DynamicCache

    device = next(model.parameters()).device
    buffers: list[tuple[Any, Any]] = []
    logits: Any = None
    for group in token_budget_batches([len(p) for p in prompts], budget):
        group_width = max(len(prompts[i]) for i in group)
        ids = torch.full((len(group), group_width), pad_id, dtype=torch.long, device=device)
        attention = torch.zeros_like(ids)
        for row, index in enumerate(group):
            prompt = prompts[index]
            ids[row, group_width - len(prompt) :] = torch.tensor(list(prompt), device=device)
            attention[row, group_width - len(prompt) :] = 1
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        cache = DynamicCache(config=model.config)
        out = model(
            input_ids=ids,
            attention_mask=attention,
            position_ids=positions,
            **cache_kwargs(model, cache),
            use_cache=True,
            logits_to_keep=1,
        )
        if logits is None:
            layers = [(layer.keys, layer.values) for layer in cache.layers]
            buffers, logits = _allocate(layers, out.logits[0, -1], len(prompts), capacity)
        index_tensor = torch.tensor(group, device=device)
        logits[index_tensor] = out.logits[:, -1]
        start = width - group_width
        for (keys, values), layer in zip(buffers, cache.layers, strict=True):
            keys[index_tensor, :, start:width] = layer.keys
            values[index_tensor, :, start:width] = layer.values
    return buffers, logits
