"""Scoring forwards through transformers' own decoder, on padded rows.

Rows of one forward may sit on cached prefixes of different lengths: the prefixes are
left-padded to the longest and masked (:func:`stacked_layers`), the new tokens padded on the
right (or the left, ``padding_side``), so small prefix-tree nodes still share full forwards.
Works for every decoder transformers runs with a key/value cache; the packed layout
(:mod:`scorers.lm.hf.packed`) is the faster one where it applies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import torch

from scorers.lm.base import ScoringRequest
from scorers.lm.hf.cache_argument import cache_kwargs, returned_cache
from scorers.lm.hf.forwards import PrefixCache, ScoredTokens, count_forward
from scorers.lm.hf.projection import TargetProjection
from scorers.lm.hf.transfer import to_device

__all__ = ["PaddedForwards", "compile_decoder_layers", "stacked_layers"]


class PaddedForwards:
    """:class:`~scorers.lm.hf.forwards.Forwards` through ``model``'s decoder on padded rows.

    A prefix cache here is, per layer, ``(keys, values)`` of shape ``[1, key/value heads,
    prefix length, head dimension]`` (transformers' layout).

    Args:
        model: a causal LM transformers runs with a ``DynamicCache``.
        pad_id: the token id padding positions hold (masked, never attended).
        left: pad scored rows on the left (extensions are always right-padded).
        project: the output head at target positions.
        stats: where forwards are counted (:func:`~scorers.lm.hf.forwards.count_forward`).
    """

    def __init__(
        self,
        model: Any,
        *,
        pad_id: int,
        left: bool,
        project: TargetProjection,
        stats: Counter[str],
    ) -> None:
        self._model = model
        self._decoder = model.get_decoder()
        self._pad_id = pad_id
        self._left = left
        self._project = project
        self._stats = stats

    @property
    def _device(self) -> Any:
        return next(self._model.parameters()).device

    def extend(
        self, caches: Sequence[PrefixCache | None], extensions: Sequence[Sequence[int]]
    ) -> list[PrefixCache]:
        """One forward, the cached prefixes left-padded to the longest, the extensions
        right-padded; each result is a view trimmed to its own prefix and extension."""
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
            output = self._decoder(
                input_ids=to_device(input_ids, device),
                # no padding anywhere: let the model build its own causal mask
                attention_mask=None if uniform and one_prefix else to_device(attention, device),
                position_ids=to_device(position_ids, device),
                use_cache=True,
                **cache_kwargs(
                    self._decoder,
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

    def score(
        self,
        rows: Sequence[int],
        caches: Sequence[PrefixCache | None],
        requests: Sequence[ScoringRequest],
        sequences: Sequence[tuple[int, ...]],
    ) -> ScoredTokens:
        device = self._device
        past, depths, longest = _stacked_cache(caches)
        input_ids, attention, offsets = self._padded_rows(
            [sequences[i][depth:] for i, depth in zip(rows, depths, strict=True)],
            prefix_lengths=depths,
            longest=longest,
            left=self._left,
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
            hidden = self._decoder(
                input_ids=to_device(input_ids, device),
                attention_mask=to_device(attention, device),
                position_ids=to_device(position_ids, device),
                use_cache=past is not None,
                **cache_kwargs(self._decoder, past),
            ).last_hidden_state
            selected = hidden[
                to_device(torch.tensor(hidden_rows), device),
                to_device(torch.tensor(hidden_cols), device),
            ]
            token_logprobs = self._project(selected, to_device(torch.tensor(target_tokens), device))
        return [rows[row] for row in hidden_rows], token_logprobs

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
        ``prefix_lengths[r]`` at their end, see :func:`stacked_layers`) followed by them, and
        each row's offset. The forward is counted in ``stats``."""
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
        count_forward(self._stats, rows, prefix_lengths, longest, packed=False)
        return input_ids, attention, offsets


def _empty_cache(config: Any) -> Any:
    """An empty cache with every layer's slot made up front (a cache that grows a slot per
    layer changes shape between layers, and compiled layers would recompile for each)."""
    from transformers import DynamicCache

    return DynamicCache(config=config)


def _stacked_cache(caches: Sequence[PrefixCache | None]) -> tuple[Any, list[int], int]:
    """:func:`stacked_layers` as a transformers cache (None: no row has a prefix)."""
    layers, lengths, longest = stacked_layers(caches)
    if layers is None:
        return None, lengths, longest
    from transformers import DynamicCache

    return DynamicCache(ddp_cache_data=layers), lengths, longest


def stacked_layers(
    caches: Sequence[PrefixCache | None],
) -> tuple[list[tuple[Any, Any]] | None, list[int], int]:
    """Per layer, the keys and values of a batch whose row ``r`` continues the prefix in
    ``caches[r]`` (None: no prefix; all None: None), its rows' prefix lengths and the longest.
    Shorter prefixes are left-padded (zeros, masked by :meth:`PaddedForwards._padded_rows`), so
    every row's new tokens start at the same cache position; a prefix shared by every row is
    expanded, not copied. Growing the result never touches the tensors it was built from."""
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
