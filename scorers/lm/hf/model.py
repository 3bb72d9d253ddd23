"""The transformers evaluation LM: the protocol of :mod:`scorers.lm.base` on a model loaded
through transformers (CPU or GPU): scoring walks the prefix tree with one of two forward layouts,
generation runs the batched decoding loop."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from scorers.lm.base import (
    BackendLM,
    ChatMessage,
    GenerationSettings,
    LogprobResult,
    Reply,
    ScoringRequest,
)
from scorers.lm.chat import generation_prompts
from scorers.lm.hf.attention import use_gqa_attention
from scorers.lm.hf.budget import least_padding_batches, token_budget_batches
from scorers.lm.hf.decoding import stop_token_ids
from scorers.lm.hf.forwards import Forwards, PrefixCache, ScoredTokens
from scorers.lm.hf.options import HFOptions
from scorers.lm.hf.packed import PackedForwards
from scorers.lm.hf.padded import PaddedForwards, compile_decoder_layers
from scorers.lm.hf.prefix_tree import PrefixNode, scoring_plan
from scorers.lm.hf.projection import TargetProjection
from scorers.lm.loading import DTYPES

__all__ = ["HFEvaluationLM"]


class HFEvaluationLM(BackendLM):
    """A causal LM loaded through transformers.

    Scoring computes each prompt prefix shared by several requests once (system prompt and
    synopsis across a paper's pairs, a candidate's judgments across its references) and reuses
    its keys and values; sibling prefixes are extended together and the remaining suffixes run
    in length-sorted, token-budget batches; the output projection is applied only at target
    positions, in row chunks and (on a CPU) vocabulary slices
    (:class:`~scorers.lm.hf.projection.TargetProjection`), so memory is O(target tokens x
    vocabulary) at most and never batch x sequence x vocabulary. Results do not depend on prefix
    reuse, batching, slicing, packing or padding side beyond floating-point summation order.

    The forwards run in one of two layouts with the same methods
    (:class:`~scorers.lm.hf.forwards.Forwards`): padded rows through transformers' decoder
    (:class:`~scorers.lm.hf.padded.PaddedForwards`), or packed rows
    (:class:`~scorers.lm.hf.packed.PackedForwards`, default on a GPU for the Llama-family
    decoders :func:`~scorers.lm.hf.packed_decoder.packed_support` accepts): each forward's rows
    concatenated without padding through every matrix product, attention by FlashAttention's
    variable-length kernel in bfloat16/float16 on a GPU (``packed_attention="auto"``) or under a
    mask (``"masked"``): 2.58x the reference computation on the 8B workload on an H100 against
    2.02x padded, 2.86x (51% MFU) with ``compile_layers=True``
    (``benchmarks/speed/results/scoring_gpu_h100/``).

    Args:
        model: a causal LM (``AutoModelForCausalLM``), on the device it will run on.
        tokenizer: its tokenizer, with a chat template for generation.
        identity: the name its scores are cached and grouped under (a model fingerprint and its
            dtype, as :meth:`from_pretrained` makes it).
        **settings: the fields of :class:`~scorers.lm.hf.options.HFOptions`, resolved for the
            model and device into :attr:`options`.

    Raises:
        TypeError: a setting :class:`~scorers.lm.hf.options.HFOptions` does not have.
        ValueError: a setting out of range, or ``packed=True`` for a model packed forwards do
            not cover (the reason is given).
    """

    def __init__(self, model: Any, tokenizer: Any, *, identity: str, **settings: Any) -> None:
        self.options = HFOptions(**settings).resolved(model)
        options = self.options
        self._model = model.eval()
        # masked grouped-query attention without repeated key/value heads on a CPU (identical
        # outputs, scorers/lm/hf/attention.py)
        self.gqa_attention = use_gqa_attention(self._model, any_device=options.gqa_on_gpu)
        self._tokenizer = tokenizer
        self._identity = identity
        self.generation_stats: Counter[str] = Counter()
        """Generation work so far: ``prefill_tokens``, ``decode_steps``, ``generated_tokens``."""
        self.stats: Counter[str] = Counter()
        """Scoring forwards run so far (:func:`~scorers.lm.hf.forwards.count_forward`)."""
        self._lock = threading.Lock()
        self._pad_id = self._pick_pad_id()
        project = TargetProjection(
            self._model,
            projection_chunk=options.projection_chunk,
            vocab_chunk=options.vocab_chunk,
        )
        self.forwards: Forwards
        if options.packed:
            self.forwards = PackedForwards(
                self._model,
                project=project,
                stats=self.stats,
                compile=options.compile_layers,
                grouped=self.gqa_attention,
                attention=options.packed_attention,
                fuse=options.fuse_projections,
                rotary=options.packed_rotary,
            )
        else:
            if options.compile_layers:
                compile_decoder_layers(self._model)
            self.forwards = PaddedForwards(
                self._model,
                pad_id=self._pad_id,
                left=options.padding_side == "left",
                project=project,
                stats=self.stats,
            )
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

        if dtype is not None and dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
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
            requests, min_shared=self.options.min_shared_prefix, reuse=self.options.prefix_reuse
        )
        pieces: list[ScoredTokens] = []
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
        (rows x (longest prompt + ``max_new_tokens``)) through :func:`scorers.lm.hf.decoding.decode`
        (prefill without padding on a CPU, a key/value cache allocated once, finished rows
        leaving the batch); models with sliding-window or non-attention layers use
        transformers' ``generate`` instead.
        """
        prompts = generation_prompts(self._tokenizer, conversations, settings.prefill)
        outputs: list[Reply] = [Reply("", hit_limit=False)] * len(prompts)
        lengths = [len(p) + settings.max_new_tokens for p in prompts]
        run = self._decode if self.options.fast_decoding else self._generate_with_transformers
        with self._lock:
            for batch in token_budget_batches(lengths, self.options.generation_batch_tokens):
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
        from scorers.lm.hf.decoding import decode  # looked up at call time: replaceable

        return decode(
            self._model,
            prompts,
            max_new_tokens=settings.max_new_tokens,
            stop_ids=self._stop_ids,
            pad_id=self._pad_id,
            temperature=settings.temperature,
            repetition_penalty=settings.repetition_penalty,
            seed=settings.seed,
            prefill_batch_tokens=self.options.max_batch_tokens,
            stats=self.generation_stats,
        )

    def _generate_with_transformers(
        self, prompts: list[list[int]], settings: GenerationSettings
    ) -> list[list[int]]:
        """transformers' ``generate`` on one left-padded batch (its default growing cache and
        sampling settings): the path for models :func:`decode` does not cover, and the
        baseline of ``benchmarks/generation.py``."""
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
        results: list[ScoredTokens],
    ) -> None:
        """Score the leaves of ``nodes`` (prefixes of one depth of the tree, each on top of its
        own cached keys and values in ``caches``) together in token-budget batches, whatever
        node they hang from; then extend all their children together, batch by batch, and
        recurse into each batch of extended children. Rows of one forward may sit on prefixes
        of different lengths (each layout masks what is not a row's own), so small nodes (a
        paper's two or three requests) still share full forwards."""
        leaves = [(n, leaf) for n, node in enumerate(nodes) for leaf in node.leaves]
        lengths = [len(sequences[leaf]) - nodes[n].depth for n, leaf in leaves]
        for batch in self._batches(lengths):
            rows = [leaves[b][1] for b in batch]
            results.append(
                self.forwards.score(
                    rows, [caches[leaves[b][0]] for b in batch], requests, sequences
                )
            )
        children = [(n, child) for n, node in enumerate(nodes) for child in node.children]
        widths = [child.depth - child.start for _, child in children]
        for batch in self._batches(widths):
            group = [children[b] for b in batch]
            extended = self.forwards.extend(
                [caches[n] for n, _ in group],
                [sequences[child.source][child.start : child.depth] for _, child in group],
            )
            self._run_level([child for _, child in group], extended, requests, sequences, results)

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        return least_padding_batches(
            lengths, self.options.max_batch_tokens, forward_cost=self.options.forward_cost_tokens
        )


def _merge_adapter(model: Any, adapter: str | Path) -> Any:
    """``model`` with the LoRA adapter in folder ``adapter`` merged into its weights."""
    from scorers.lm.adapter import adapter_config, peft_install_hint

    adapter_config(adapter)  # a clear error for a folder that is not a LoRA adapter
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ImportError(f"scoring with a LoRA adapter needs peft: {peft_install_hint}") from exc
    return PeftModel.from_pretrained(model, str(adapter)).merge_and_unload().eval()
