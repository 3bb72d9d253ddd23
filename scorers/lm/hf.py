"""Transformers implementation of the evaluation-LM protocol (CPU or GPU)."""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scorers.lm.base import (
    ChatMessage,
    GenerationSettings,
    LogprobResult,
    Reply,
    ScoringRequest,
)
from scorers.lm.budget import least_padding_batches, token_budget_batches
from scorers.lm.cache_argument import cache_kwargs, returned_cache
from scorers.lm.chat import generation_prompts
from scorers.lm.prefix_tree import DEFAULT_MIN_SHARED, PrefixNode, scoring_plan
from scorers.lm.transfer import to_device

__all__ = ["HFEvaluationLM"]

DEFAULT_FORWARD_COST = 512
"""What one more scoring forward costs, in padded tokens (:func:`least_padding_batches`)."""

DEFAULT_PACKED_FORWARD_COST = 4096
"""The same for packed forwards (``packed``), where padding costs attention at most, so fuller
forwards pay (``benchmarks/speed/scoring_gpu.py``)."""

PrefixCache = tuple[tuple[Any, Any], ...]
"""A computed prefix's keys and values: per layer ``(keys, values)``, each of shape ``[1, key/value
heads, prefix length, head dimension]``."""

_DTYPES = ("float32", "bfloat16", "float16")


class HFEvaluationLM:
    """A causal LM loaded through transformers.

    Scoring computes each prompt prefix shared by several requests once (system prompt and
    synopsis across a paper's pairs, a candidate's judgments across its references) and reuses
    its keys and values; sibling prefixes are extended together and the remaining suffixes run
    in length-sorted, token-budget batches; the output projection is applied only at target
    positions, in row chunks and (on a CPU) vocabulary slices, so memory is O(target tokens x
    vocabulary) at most and never batch x sequence x vocabulary. Results do not depend on prefix
    reuse, batching, slicing, packing or padding side beyond floating-point summation order.

    ``packed`` (default: on a GPU, for the Llama-family decoders
    :func:`~scorers.lm.packed.packed_support` accepts) runs each scoring forward's rows
    concatenated without padding through every matrix product, attention by FlashAttention's
    variable-length kernel in bfloat16/float16 on a GPU (``packed_attention="auto"``) or under a
    mask (``"masked"``): 2.58x the reference computation on the 8B workload on an H100 against
    2.02x padded, 2.86x (51% MFU) with ``compile_layers=True``
    (``benchmarks/speed/results/scoring_gpu_h100/``). ``packed=True`` on a model it does not
    cover raises ``ValueError`` with the reason; ``packed=False`` keeps transformers' forward.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        identity: str,
        max_batch_tokens: int | None = None,
        generation_batch_tokens: int = 65536,
        fast_decoding: bool = True,
        projection_chunk: int = 1024,
        vocab_chunk: int | None = None,
        padding_side: str = "right",
        prefix_reuse: bool = True,
        min_shared_prefix: int = DEFAULT_MIN_SHARED,
        forward_cost_tokens: int | None = None,
        compile_layers: bool = False,
        gqa_on_gpu: bool = False,
        packed: bool | None = None,
        packed_attention: str = "auto",
    ) -> None:
        if padding_side not in ("left", "right"):
            raise ValueError("padding_side must be 'left' or 'right'")
        from scorers.lm.attention import use_gqa_attention

        self._model = model.eval()
        # masked grouped-query attention without repeated key/value heads on a CPU (identical
        # outputs, scorers/lm/attention.py)
        self.gqa_attention = use_gqa_attention(self._model, any_device=gqa_on_gpu)
        self._tokenizer = tokenizer
        self._identity = identity
        on_cpu = next(model.parameters()).device.type == "cpu"
        if max_batch_tokens is None:
            # a CPU is compute-bound at one row: padding would only add work
            max_batch_tokens = 1 if on_cpu else 16384
        self.max_batch_tokens = max_batch_tokens
        if packed is None:
            from scorers.lm.packed import packed_support

            packed = not on_cpu and packed_support(model) is None
        if forward_cost_tokens is None:
            forward_cost_tokens = DEFAULT_PACKED_FORWARD_COST if packed else DEFAULT_FORWARD_COST
        # scoring batches minimise padded tokens + this per forward (scorers/lm/budget.py)
        self.forward_cost_tokens = forward_cost_tokens
        # decoding one token at a time reads every weight per step: batching pays even on a CPU
        # (benchmarks/generation.py); the budget bounds the key/value memory of one batch
        self.generation_batch_tokens = generation_batch_tokens
        self.fast_decoding = fast_decoding and supports_prefix_reuse(model.config)
        self.generation_stats: Counter[str] = Counter()
        """Generation work so far: ``prefill_tokens``, ``decode_steps``, ``generated_tokens``."""
        self.projection_chunk = projection_chunk
        if vocab_chunk is None:
            # a CPU holds [rows x 1024] logits at a time instead of [rows x vocabulary]; on a GPU
            # the whole vocabulary in one product avoids many small kernels
            vocab_chunk = 1024 if on_cpu else 0
        self.vocab_chunk = vocab_chunk
        self.padding_side = padding_side
        self.prefix_reuse = prefix_reuse and supports_prefix_reuse(model.config)
        self.min_shared_prefix = min_shared_prefix
        self._lock = threading.Lock()
        self.stats: Counter[str] = Counter()
        """Scoring forwards run so far: ``forwards``, ``rows``, ``tokens`` (real),
        ``padded_tokens`` (the tokens the matrix products ran: rows x width, or the real
        tokens when packed), ``attention_tokens`` (rows x width, the padded layout attention
        runs on) and ``padded_prefix_tokens`` (cached positions padded so that rows on shorter
        prefixes share a forward)."""
        self._pad_id = self._pick_pad_id()
        self._packed = None
        if packed:
            # rows concatenated without padding through every matrix product (scorers/lm/packed.py)
            from scorers.lm.packed import PackedDecoder

            self._packed = PackedDecoder(
                self._model,
                compile=compile_layers,
                grouped=self.gqa_attention,
                attention=packed_attention,
            )
        elif compile_layers:
            compile_decoder_layers(self._model)
        from scorers.lm.decoding import stop_token_ids

        self._stop_ids = stop_token_ids(model, tokenizer)

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_pretrained(
        cls,
        name_or_path: str | Path,
        *,
        dtype: str | None = None,
        device: str | None = None,
        gguf_file: str | None = None,
        revision: str | None = None,
        identity: str | None = None,
        adapter: str | Path | None = None,
        **options: Any,
    ) -> HFEvaluationLM:
        """Load a model and tokenizer from a local folder or hub id.

        ``dtype`` defaults to float32 on CPU (the reproducible reference) and bfloat16 on GPU.
        ``adapter`` is the folder of a LoRA adapter trained on this base model (``gem-tasks
        finetune train``, GEM paper App. E); it is loaded with peft and merged into the weights
        (the same function, computed at the base's cost), and its content fingerprint is added
        to the identity (``...+lora@<hash>:<dtype>``), so its scores never share cache entries
        or signature groups with the base model's or another adapter's. An adapter folder
        without a LoRA adapter raises :class:`~scorers.lm.adapter.AdapterError`; a missing peft
        raises ``ImportError`` with the install command; an adapter trained on another base
        fails in peft when its shapes do not match.
        """
        from scorers.lm.loading import load_pretrained, resolve_device_dtype

        if dtype is not None and dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
        device, dtype = resolve_device_dtype(device, dtype)
        load_args: dict[str, Any] = {"revision": revision} if revision else {}
        if gguf_file:
            load_args["gguf_file"] = gguf_file
        model, tokenizer = load_pretrained(name_or_path, dtype=dtype, device=device, **load_args)
        if identity is None:
            commit = getattr(model.config, "_commit_hash", None) or revision or "local"
            identity = f"hf/{name_or_path}@{commit}"
        identity = identity.removesuffix(f":{dtype}")
        if adapter is not None:
            from scorers.lm.adapter import adapter_identity

            model = _merge_adapter(model, adapter)
            identity = adapter_identity(identity, adapter)
        return cls(model, tokenizer, identity=f"{identity}:{dtype}", **options)

    # -- protocol -----------------------------------------------------------------------------
    @property
    def identity(self) -> str:
        return self._identity

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    @property
    def model(self) -> Any:
        return self._model

    @property
    def max_length(self) -> int | None:
        value = getattr(self._model.config, "max_position_embeddings", None)
        return int(value) if value else None

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        """Summed target log-probabilities. Shared prompt prefixes are computed once (when
        ``prefix_reuse`` is on), the remaining suffixes in token-budget batches."""
        plan, sequences = scoring_plan(
            requests, min_shared=self.min_shared_prefix, reuse=self.prefix_reuse
        )
        import torch

        pieces: list[tuple[list[int], Any]] = []
        with self._lock:
            self._run_level([plan], [None], requests, sequences, pieces)
        owners = [index for rows, _ in pieces for index in rows]
        counts = Counter(owners)
        missing = [i for i, r in enumerate(requests) if counts[i] != len(r.target_ids)]
        if missing:  # the plan covers every request once; this guards the invariant
            raise RuntimeError(f"scoring plan left requests {missing[:5]} unscored")
        sums = torch.zeros(len(requests), dtype=torch.float64)
        if pieces:
            values = torch.cat([logprobs.double() for _, logprobs in pieces]).cpu()
            sums.index_add_(0, torch.tensor(owners, dtype=torch.long), values)
        return [
            LogprobResult(total=float(sums[i]), n_tokens=len(r.target_ids))
            for i, r in enumerate(requests)
        ]

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        """Greedy (temperature 0) or sampled assistant replies, one per conversation, each
        saying whether it stopped at ``max_new_tokens`` (:class:`~scorers.lm.base.Reply`).

        Conversations run in length-sorted batches of at most ``generation_batch_tokens``
        (rows x (longest prompt + ``max_new_tokens``)) through :func:`scorers.lm.decoding.decode`
        (prefill without padding on a CPU, a key/value cache allocated once, finished rows
        leaving the batch); models with sliding-window or non-attention layers use
        transformers' ``generate`` instead.
        """
        prompts = generation_prompts(self._tokenizer, conversations, settings.prefill)
        outputs: list[Reply] = [Reply("", hit_limit=False)] * len(prompts)
        lengths = [len(p) + settings.max_new_tokens for p in prompts]
        run = self._decode if self.fast_decoding else self._generate_with_transformers
        with self._lock:
            for batch in token_budget_batches(lengths, self.generation_batch_tokens):
                replies = run([prompts[i] for i in batch], settings)
                for index, tokens in zip(batch, replies, strict=True):
                    reply = self._tokenizer.decode(tokens, skip_special_tokens=True)
                    outputs[index] = Reply(
                        (settings.prefill + reply).strip(),
                        # the replies come without their stop token: one that never stopped
                        # has all its max_new_tokens
                        hit_limit=len(tokens) >= settings.max_new_tokens,
                    )
        return list(outputs)

    def _decode(self, prompts: list[list[int]], settings: GenerationSettings) -> list[list[int]]:
        from scorers.lm.decoding import decode

        return decode(
            self._model,
            prompts,
            max_new_tokens=settings.max_new_tokens,
            stop_ids=self._stop_ids,
            pad_id=self._pad_id,
            temperature=settings.temperature,
            repetition_penalty=settings.repetition_penalty,
            seed=settings.seed,
            prefill_batch_tokens=self.max_batch_tokens,
            stats=self.generation_stats,
        )

    def _generate_with_transformers(
        self, prompts: list[list[int]], settings: GenerationSettings
    ) -> list[list[int]]:
        """transformers' ``generate`` on one left-padded batch (its default growing cache and
        sampling settings): the path for models :func:`decode` does not cover, and the
        baseline of ``benchmarks/generation.py``."""
        import torch

        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, ids in enumerate(prompts):
            input_ids[row, width - len(ids) :] = torch.tensor(ids)
            attention[row, width - len(ids) :] = 1
        sampling: dict[str, Any] = {"do_sample": False}
        if settings.temperature > 0:
            torch.manual_seed(settings.seed)
            sampling = {"do_sample": True, "temperature": settings.temperature}
        with torch.inference_mode():
            generated = self._model.generate(
                input_ids=input_ids.to(self._device),
                attention_mask=attention.to(self._device),
                max_new_tokens=settings.max_new_tokens,
                repetition_penalty=settings.repetition_penalty,
                pad_token_id=self._pad_id,
                **sampling,
            )
        replies = []
        for row in range(len(prompts)):
            tokens = generated[row, width:].tolist()
            cut = next((i for i, t in enumerate(tokens) if t in self._stop_ids), len(tokens))
            replies.append(tokens[:cut])
        return replies

    # -- internals ----------------------------------------------------------------------------
    @property
    def _device(self) -> Any:
        return next(self._model.parameters()).device

    def _pick_pad_id(self) -> int:
        for candidate in (self._tokenizer.pad_token_id, self._tokenizer.eos_token_id, 0):
            if candidate is not None:
                return int(candidate)
        return 0

    def _run_level(
        self,
        nodes: Sequence[PrefixNode],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
        results: list[tuple[list[int], Any]],
    ) -> None:
        """Score the leaves of ``nodes`` (prefixes of one depth of the tree, each on top of its
        own cached keys and values in ``caches``) together in token-budget batches, whatever
        node they hang from; then extend all their children together, batch by batch, and
        recurse into each batch of extended children. Rows of one forward may sit on prefixes
        of different lengths: the cached prefixes are left-padded to the longest and masked
        (:meth:`_stacked_cache`), so small nodes (a paper's two or three requests) still share
        full forwards."""
        leaves = [(n, leaf) for n, node in enumerate(nodes) for leaf in node.leaves]
        lengths = [len(sequences[leaf]) - nodes[n].depth for n, leaf in leaves]
        score = self._score_packed if self._packed is not None else self._score_suffixes
        for batch in self._batches(lengths):
            rows = [leaves[b][1] for b in batch]
            score(
                rows,
                [caches[leaves[b][0]] for b in batch],
                requests,
                sequences,
                results,
            )
        children = [(n, child) for n, node in enumerate(nodes) for child in node.children]
        widths = [child.depth - child.start for _, child in children]
        for batch in self._batches(widths):
            group = [children[b] for b in batch]
            extended = self._extend_prefixes(
                [caches[n] for n, _ in group],
                [sequences[child.source][child.start : child.depth] for _, child in group],
            )
            self._run_level([child for _, child in group], extended, requests, sequences, results)

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        return least_padding_batches(
            lengths, self.max_batch_tokens, forward_cost=self.forward_cost_tokens
        )

    def _extend_prefixes(
        self, caches: Sequence[PrefixCache | None], extensions: Sequence[Sequence[int]]
    ) -> list[PrefixCache]:
        """Keys and values of each ``caches[i]``'s prefix extended by ``extensions[i]`` (one
        forward, the cached prefixes left-padded to the longest, the extensions right-padded;
        each result is a view trimmed to its own prefix and extension)."""
        if self._packed is not None:
            return self._extend_packed(caches, extensions)
        import torch

        rows = len(extensions)
        past, prefix_lengths, longest = _stacked_cache(caches)
        input_ids, attention, _ = self._padded_rows(
            extensions, prefix_lengths=prefix_lengths, longest=longest, left=False
        )
        width = input_ids.shape[1]
        device = self._device
        uniform = rows == 1 or len(set(map(len, extensions))) == 1
        one_prefix = len(set(prefix_lengths)) == 1
        position_ids = torch.tensor(prefix_lengths)[:, None] + torch.arange(width)[None]
        with torch.inference_mode():
            output = self._model.get_decoder()(
                input_ids=to_device(input_ids, device),
                # no padding anywhere: let the model build its own causal mask
                attention_mask=None if uniform and one_prefix else to_device(attention, device),
                position_ids=to_device(position_ids, device),
                use_cache=True,
                **cache_kwargs(
                    self._model.get_decoder(),
                    past if past is not None else _empty_cache(self._model.config),
                ),
            )
        layers = returned_cache(output).layers
        return [
            tuple(
                (
                    layer.keys[row : row + 1, :, longest - prefix : longest + len(tokens)],
                    layer.values[row : row + 1, :, longest - prefix : longest + len(tokens)],
                )
                for layer in layers
            )
            for row, (tokens, prefix) in enumerate(zip(extensions, prefix_lengths, strict=True))
        ]

    def _padded_rows(
        self,
        rows: Sequence[Sequence[int]],
        *,
        prefix_lengths: Sequence[int],
        longest: int,
        left: bool,
    ) -> tuple[Any, Any, list[int]]:
        """One forward's input: ``rows`` padded to the longest (on the left or the right), the
        attention mask over the ``longest`` cached positions (row ``r``'s own
        ``prefix_lengths[r]`` at their end, see :func:`_stacked_cache`) followed by them, and
        each row's offset. The forward is counted in ``stats``."""
        import torch

        width = max(len(tokens) for tokens in rows)
        input_ids = torch.full((len(rows), width), self._pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), longest + width), dtype=torch.long)
        offsets = []
        for row, (tokens, prefix) in enumerate(zip(rows, prefix_lengths, strict=True)):
            attention[row, longest - prefix : longest] = 1
            offset = width - len(tokens) if left else 0
            input_ids[row, offset : offset + len(tokens)] = torch.tensor(list(tokens))
            attention[row, longest + offset : longest + offset + len(tokens)] = 1
            offsets.append(offset)
        self._count_forward(rows, prefix_lengths, longest, packed=False)
        return input_ids, attention, offsets

    def _count_forward(
        self,
        rows: Sequence[Sequence[int]],
        prefix_lengths: Sequence[int],
        longest: int,
        *,
        packed: bool,
        flash: bool = False,
    ) -> None:
        """Count one forward in ``stats``: packed, its matrix products run the real tokens only;
        with ``flash`` attention too, and no prefix is padded."""
        tokens = sum(len(row) for row in rows)
        padded = len(rows) * max(len(row) for row in rows)
        self.stats["forwards"] += 1
        self.stats["rows"] += len(rows)
        self.stats["tokens"] += tokens
        self.stats["padded_tokens"] += tokens if packed else padded
        self.stats["attention_tokens"] += tokens if flash else padded
        if not flash:
            self.stats["padded_prefix_tokens"] += len(rows) * longest - sum(prefix_lengths)

    def _packed_input(
        self,
        rows: Sequence[Sequence[int]],
        caches: Sequence[PrefixCache | None],
    ) -> tuple[Any, Any]:
        """A packed forward's token ids (on the device) and layout; ``caches`` are the rows'
        prefixes in the packed decoder's own layout (:data:`scorers.lm.packed.RowCache`)."""
        import torch

        prefix_lengths = _packed_prefix_lengths(caches)
        batch = self._packed.batch([len(row) for row in rows], prefix_lengths)
        self._count_forward(
            rows, prefix_lengths, batch.longest, packed=True, flash=self._packed.flash
        )
        ids = torch.tensor([token for row in rows for token in row], dtype=torch.long)
        return to_device(ids, self._device), batch

    def _extend_packed(
        self, caches: Sequence[PrefixCache | None], extensions: Sequence[Sequence[int]]
    ) -> list[PrefixCache]:
        """:meth:`_extend_prefixes` in one packed forward (``packed=True``): each row's cache in
        the packed decoder's layout."""
        import torch

        input_ids, batch = self._packed_input(extensions, caches)
        with torch.inference_mode():
            _, rows = self._packed.forward(input_ids, batch, caches, keep_cache=True)
        return rows

    def _score_packed(
        self,
        rows: Sequence[int],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
        results: list[tuple[list[int], Any]],
    ) -> None:
        """:meth:`_score_suffixes` in one packed forward (``packed=True``)."""
        import torch

        depths = _packed_prefix_lengths(caches)
        suffixes = [sequences[i][depth:] for i, depth in zip(rows, depths, strict=True)]
        input_ids, batch = self._packed_input(suffixes, caches)
        owners: list[int] = []
        positions: list[int] = []
        target_tokens: list[int] = []
        for index, start, depth in zip(rows, batch.starts, depths, strict=True):
            request = requests[index]
            # the hidden state at position p predicts the token at p + 1
            first = start + len(request.context_ids) - depth - 1
            positions.extend(range(first, first + len(request.target_ids)))
            owners.extend([index] * len(request.target_ids))
            target_tokens.extend(request.target_ids)
        device = self._device
        with torch.inference_mode():
            hidden, _ = self._packed.forward(input_ids, batch, caches, keep_cache=False)
            selected = hidden[to_device(torch.tensor(positions), device)]
            token_logprobs = torch.cat(
                list(self._project(selected, to_device(torch.tensor(target_tokens), device)))
            )
        results.append((owners, token_logprobs))

    def _score_suffixes(
        self,
        rows: Sequence[int],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
        results: list[tuple[list[int], Any]],
    ) -> None:
        """Score requests ``rows`` in one batch, request ``rows[i]``'s first tokens being in
        ``caches[i]`` (its node's whole prefix): appends to ``results`` each target token's
        request and the tensor of their log-probabilities (left on the device)."""
        import torch

        device = self._device
        past, depths, longest = _stacked_cache(caches)
        input_ids, attention, offsets = self._padded_rows(
            [sequences[i][depth:] for i, depth in zip(rows, depths, strict=True)],
            prefix_lengths=depths,
            longest=longest,
            left=self.padding_side == "left",
        )
        hidden_rows: list[int] = []
        hidden_cols: list[int] = []
        target_tokens: list[int] = []
        for row, (index, offset, depth) in enumerate(zip(rows, offsets, depths, strict=True)):
            request = requests[index]
            # the hidden state at position p predicts the token at p + 1
            first = offset + len(request.context_ids) - depth
            hidden_cols.extend(range(first - 1, first - 1 + len(request.target_ids)))
            hidden_rows.extend([row] * len(request.target_ids))
            target_tokens.extend(request.target_ids)
        position_ids = torch.tensor(depths)[:, None] + (
            attention[:, longest:].cumsum(dim=1) - 1
        ).clamp(min=0)
        with torch.inference_mode():
            hidden = self._model.get_decoder()(
                input_ids=to_device(input_ids, device),
                attention_mask=to_device(attention, device),
                position_ids=to_device(position_ids, device),
                use_cache=past is not None,
                **cache_kwargs(self._model.get_decoder(), past),
            ).last_hidden_state
            selected = hidden[
                to_device(torch.tensor(hidden_rows), device),
                to_device(torch.tensor(hidden_cols), device),
            ]
            token_logprobs = torch.cat(
                list(self._project(selected, to_device(torch.tensor(target_tokens), device)))
            )
        # summed on the host when the whole call is done: no wait between forwards
        results.append(([rows[row] for row in hidden_rows], token_logprobs))

    def _project(self, hidden: Any, tokens: Any) -> Iterator[Any]:
        """Log-probability of each token under the output head, in row chunks; within a row
        chunk the log-normaliser accumulates over vocabulary slices of ``vocab_chunk`` rows of
        the head (a running maximum keeps it exact), so no [rows x vocabulary] tensor is held
        when slicing."""
        import torch

        head = self._model.get_output_embeddings()
        config = self._model.config
        softcap = getattr(config, "final_logit_softcapping", None)
        scale = getattr(config, "logit_scale", None)

        def transform(logits: Any) -> Any:
            logits = logits.float()
            if scale:
                logits = logits * scale
            if softcap:
                logits = torch.tanh(logits / softcap) * softcap
            return logits

        sliceable = isinstance(head, torch.nn.Linear)  # else: one product through the module
        for start in range(0, hidden.shape[0], self.projection_chunk):
            rows = hidden[start : start + self.projection_chunk]
            chunk_tokens = tokens[start : start + self.projection_chunk]
            if sliceable:
                step = self.vocab_chunk or head.weight.shape[0]
                yield _sliced_logprobs(rows, chunk_tokens, head, step, transform)
                continue
            logits = transform(head(rows))
            picked = logits.gather(1, chunk_tokens[:, None]).squeeze(1)
            yield picked - torch.logsumexp(logits, dim=-1)


def _sliced_logprobs(rows: Any, tokens: Any, head: Any, step: int, transform: Any) -> Any:
    """``log softmax(head(rows))[tokens]`` computed over vocabulary slices of ``step`` entries
    with a running maximum (exact up to summation order)."""
    import torch

    count = rows.shape[0]
    picked = torch.zeros(count, dtype=torch.float32, device=rows.device)
    running_max = torch.full((count,), float("-inf"), device=rows.device)
    running_sum = torch.zeros(count, device=rows.device)
    for low in range(0, head.weight.shape[0], step):
        bias = head.bias[low : low + step] if head.bias is not None else None
        logits = transform(torch.nn.functional.linear(rows, head.weight[low : low + step], bias))
        inside = (tokens >= low) & (tokens < low + logits.shape[1])
        # gather and select rather than index the rows inside: no wait for the device
        local = (tokens - low).clamp(0, logits.shape[1] - 1)
        picked = torch.where(inside, logits.gather(1, local[:, None]).squeeze(1), picked)
        new_max = torch.maximum(running_max, logits.amax(dim=1))
        finite = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
        running_sum = running_sum * torch.exp(running_max - finite) + logits.sub_(
            finite[:, None]
        ).exp_().sum(dim=1)
        running_max = new_max
    finite = torch.where(torch.isfinite(running_max), running_max, torch.zeros_like(running_max))
    return picked - (running_sum.log() + finite)


def _merge_adapter(model: Any, adapter: str | Path) -> Any:
    """``model`` with the LoRA adapter in folder ``adapter`` merged into its weights."""
    from scorers.lm.adapter import adapter_config, peft_install_hint

    adapter_config(adapter)  # a clear error for a folder that is not a LoRA adapter
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ImportError(f"scoring with a LoRA adapter needs peft: {peft_install_hint}") from exc
    return PeftModel.from_pretrained(model, str(adapter)).merge_and_unload().eval()


def _empty_cache(config: Any) -> Any:
    """An empty cache with every layer's slot made up front (a cache that grows a slot per
    layer changes shape between layers, and compiled layers would recompile for each)."""
    from transformers import DynamicCache

    return DynamicCache(config=config)


def _packed_prefix_lengths(caches: Sequence[PrefixCache | None]) -> list[int]:
    """Each row's cached prefix length in the packed decoder's token-major layout (0: none)."""
    return [0 if cache is None else int(cache[0][0].shape[0]) for cache in caches]


def _stacked_cache(caches: Sequence[PrefixCache | None]) -> tuple[Any, list[int], int]:
    """:func:`_stacked_layers` as a transformers cache (None: no row has a prefix)."""
    layers, lengths, longest = _stacked_layers(caches)
    if layers is None:
        return None, lengths, longest
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=layers), lengths, longest


def _stacked_layers(
    caches: Sequence[PrefixCache | None],
) -> tuple[list[tuple[Any, Any]] | None, list[int], int]:
    """Per layer, the keys and values of a batch whose row ``r`` continues the prefix in
    ``caches[r]`` (None: no prefix; all None: None), its rows' prefix lengths and the longest.
    Shorter prefixes are left-padded (zeros, masked by :meth:`HFEvaluationLM._padded_rows` and
    :class:`~scorers.lm.packed.PackedBatch`), so every row's new tokens start at the same cache
    position; a prefix shared by every row is expanded, not copied. Growing the result never
    touches the tensors it was built from."""
    lengths = [0 if cache is None else int(cache[0][0].shape[2]) for cache in caches]
    longest = max(lengths, default=0)
    if longest == 0:
        return None, lengths, 0
    rows = len(caches)
    first = next(cache for cache in caches if cache is not None)
    if all(cache is first for cache in caches):
        layers = [
            (keys.expand(rows, -1, -1, -1), values.expand(rows, -1, -1, -1))
            for keys, values in first
        ]
        return layers, lengths, longest
    import torch

    # rows sharing one prefix are filled by one copy per layer
    groups: dict[int, list[int]] = {}
    for row, cache in enumerate(caches):
        if cache is not None:
            groups.setdefault(id(cache), []).append(row)
    layers = []
    for layer, pair in enumerate(first):
        stacked = []
        for slot, part in enumerate(pair):  # keys, then values
            padded = part.new_zeros((rows, part.shape[1], longest, part.shape[3]))
            for members in groups.values():
                tensor = caches[members[0]][layer][slot]
                length = tensor.shape[2]
                if len(members) == 1:
                    padded[members[0], :, longest - length :] = tensor[0]
                else:
                    index = to_device(torch.tensor(members), padded.device)
                    padded[index, :, longest - length :] = tensor.expand(len(members), -1, -1, -1)
            stacked.append(padded)
        layers.append(tuple(stacked))
    return layers, lengths, longest


def compile_decoder_layers(model: Any) -> int:
    """Wrap each decoder layer's norms and MLP in ``torch.compile`` with dynamic shapes and
    return how many modules were wrapped.

    On a GPU, an eager transformers layer runs its normalisations, gating and residual
    additions as separate memory-bound kernels: 43% of our scoring pass at the Llama-3.1-8B
    shape on an H200 was such work (``benchmarks/speed/results/``). Compiled, they are fused
    (+11% there). The attention module stays eager: it reads and writes the cache at its own
    layer index, which compiled code specialises on, so each layer would compile anew past
    dynamo's recompilation limit and run eager. Dynamic shapes let one compilation serve every
    batch shape and every layer (a few graphs); the first forwards pay it (seconds). Outputs
    equal the eager layers' up to floating-point rounding (fused kernels keep intermediates in
    float32), like batching and padding; the identity is unchanged.

    Raises:
        ValueError: the model's decoder has no ``layers`` list to compile.
    """
    layers = getattr(model.get_decoder(), "layers", None)
    if not layers:
        raise ValueError(
            f"compile_layers needs a decoder with a list of layers; {type(model).__name__} has none"
        )
    compiled = 0
    for layer in layers:
        for child in layer.children():
            if not hasattr(child, "layer_idx"):  # not the attention (see above)
                child.compile(dynamic=True)
                compiled += 1
    return compiled


def supports_prefix_reuse(config: Any) -> bool:
    """Whether every layer of the model attends over the whole prefix with a plain key/value
    cache (no sliding windows, recurrent or linear-attention layers), so a shared prefix's keys
    and values can be reused as they are."""
    if getattr(config, "sliding_window", None):
        return False
    layer_types = getattr(config, "layer_types", None)
    return not layer_types or all(t == "full_attention" for t in layer_types)


def file_fingerprint(path: Path) -> str:
    """sha256 (first 16 hex digits) of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
