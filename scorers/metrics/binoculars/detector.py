"""The Binoculars score (Hans et al., 2024, "Spotting LLMs with Binoculars"): a zero-shot
machine-text detector built from two causal LMs that share one tokenizer, an *observer* and a
*performer*.

This replicates the reference code, ahans30/Binoculars (BSD-3), ``binoculars/detector.py`` and
``binoculars/metrics.py``, which produced the published thresholds. For a text of T tokens
(tokenised with no special tokens added, cut to the first ``max_tokens`` = 512):

- ``ppl`` = mean over the T-1 shifted positions t (those whose next token is a real token, by the
  attention mask) of the cross-entropy ``-log_softmax(performer logits[t])[token[t+1]]``. The
  reference code takes the **performer** here; the Hans et al. paper (and Beyond Rating App. E)
  say the observer (ahans30/Binoculars issue #27): ``ppl_model="observer"`` follows the papers.
- ``x_ppl`` = mean over the positions t whose *input* token is not the padding id (all T of them,
  the last one included, whose prediction has no next token to score) of
  ``-sum_v softmax(observer logits[t])_v * log_softmax(performer logits[t])_v``. So ``x_ppl``
  averages T terms while ``ppl`` averages T-1, and a text token equal to the padding id (the EOS
  token where the tokenizer has no pad token) is left out of ``x_ppl`` but not of ``ppl``: both
  exactly as the reference computes them.
- ``B = ppl / x_ppl`` (both already are logs). Higher is more human-like; the reference flags
  ``B < 0.9015310749276843`` (its "accuracy" threshold, calibrated on Falcon-7B / Falcon-7B-instruct
  in bfloat16) as machine-generated.

Differences from the reference, none of which changes the definition: per-position terms are
computed from the logits in float32 (the reference stays in the model's dtype, bfloat16 there)
and reduced over positions in float64; rows are padded on the right by us (a padded batch gives
the one-by-one scores); when observer and performer are the same model it runs once.

Models are given by spec: ``embedded`` (the packaged SmolLM2-135M-Instruct, offline), a local
transformers folder, or a hub id (which needs the network). Each model is loaded once per process
through the project's one loader and store (:mod:`scorers.lm.loading`); scores go through the
one score cache (:meth:`Binoculars.score_cached`).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorers.errors import EvaluationLMError, MetricError
from scorers.lm.backends import in_process_model
from scorers.lm.cache import ScoreCache, partition_cached
from scorers.lm.embedded import locate
from scorers.lm.loading import load_pretrained, resolve_device_dtype, shared

__all__ = [
    "ACCURACY_THRESHOLD",
    "CALIBRATED_PAIR",
    "DEFAULT_OBSERVER",
    "DEFAULT_PERFORMER",
    "LOW_FPR_THRESHOLD",
    "PPL_MODELS",
    "Binoculars",
    "BinocularsScore",
    "LoadedCausalLM",
    "binoculars_terms",
    "is_calibrated",
    "load_binoculars",
    "load_causal_lm",
]

DEFAULT_OBSERVER = "tiiuae/falcon-7b"
DEFAULT_PERFORMER = "tiiuae/falcon-7b-instruct"
CALIBRATED_PAIR = (DEFAULT_OBSERVER, DEFAULT_PERFORMER)
"""The (observer, performer) pair the reference thresholds were selected with (in bfloat16)."""
ACCURACY_THRESHOLD = 0.9015310749276843
"""The reference's ``BINOCULARS_ACCURACY_THRESHOLD`` ("optimized for f1-score"); Beyond Rating's
0.9015."""
LOW_FPR_THRESHOLD = 0.8536432310785527
"""The reference's ``BINOCULARS_FPR_THRESHOLD`` (low false-positive rate, 0.01%)."""
PPL_MODELS = ("performer", "observer")


def is_calibrated(observer: str, performer: str, threshold: float, ppl_model: str) -> bool:
    """Whether ``threshold`` is one the reference selected for exactly this setup: the Falcon-7B
    pair (by hub id) with the performer's perplexity. Any other pair, or ``ppl_model="observer"``
    (which shifts the scores), makes the threshold uncalibrated."""
    return (
        (_spec_name(observer), _spec_name(performer)) == CALIBRATED_PAIR
        and ppl_model == "performer"
        and threshold in (ACCURACY_THRESHOLD, LOW_FPR_THRESHOLD)
    )


@dataclass(frozen=True)
class BinocularsScore:
    """One text's Binoculars score and its parts."""

    score: float
    """``ppl / x_ppl``."""
    ppl: float
    x_ppl: float
    tokens: int
    """Tokens scored (after the cut to ``max_tokens``)."""
    length: int
    """Tokens of the whole text."""

    @property
    def truncated(self) -> bool:
        return self.length > self.tokens


def binoculars_terms(
    observer_logits: Any,
    performer_logits: Any,
    input_ids: Any,
    attention_mask: Any,
    pad_token_id: int,
    *,
    ppl_model: str = "performer",
) -> tuple[np.ndarray, np.ndarray]:
    """``(ppl, x_ppl)`` per row of a batch, float64 arrays, from logits ``[B, T, V]`` and the
    batch's ``input_ids`` / ``attention_mask`` ``[B, T]`` (see the module doc for the exact
    definition). Rows are reduced one at a time, so the float32 temporaries are ``T x V``."""
    import torch

    if ppl_model not in PPL_MODELS:
        raise ValueError(f"ppl_model must be one of {PPL_MODELS}, got {ppl_model!r}")
    if observer_logits.shape != performer_logits.shape:
        raise MetricError(
            f"observer and performer logits differ in shape: {tuple(observer_logits.shape)} vs "
            f"{tuple(performer_logits.shape)} (their vocabularies must match)"
        )
    rows = input_ids.shape[0]
    ppl = np.empty(rows, dtype=np.float64)
    x_ppl = np.empty(rows, dtype=np.float64)
    for b in range(rows):
        ids = input_ids[b]
        performer_log = torch.log_softmax(performer_logits[b].float(), dim=-1)
        observer_prob = torch.softmax(observer_logits[b].float(), dim=-1)
        # x_ppl: every position whose input token is not the padding id (the reference's mask)
        cross = -(observer_prob * performer_log).sum(dim=-1).double()
        keep = ids != pad_token_id
        x_ppl[b] = float(cross[keep].sum() / keep.sum())
        del observer_prob
        # ppl: the next token's cross-entropy where that token is attended to (shifted mask)
        if ppl_model == "performer":
            ppl_log = performer_log[:-1]
        else:
            ppl_log = torch.log_softmax(observer_logits[b, :-1].float(), dim=-1)
        nll = -ppl_log.gather(-1, ids[1:].unsqueeze(-1)).squeeze(-1).double()
        scored = attention_mask[b, 1:].bool()
        ppl[b] = float(nll[scored].sum() / scored.sum())
    return ppl, x_ppl


class Binoculars:
    """An observer and a performer over one tokenizer (see the module doc).

    ``observer`` and ``performer`` are transformers causal LMs (the same object may be both;
    it then runs once per batch); ``tokenizer`` is theirs. Their output vocabularies must match
    and cover the tokenizer. ``batch_size`` rows are scored per forward, right-padded, sorted by
    length; results do not depend on it beyond float rounding. Thread-safe (one forward at a time).
    """

    def __init__(
        self,
        observer: Any,
        performer: Any,
        tokenizer: Any,
        *,
        observer_identity: str = "observer",
        performer_identity: str = "performer",
        max_tokens: int = 512,
        ppl_model: str = "performer",
        batch_size: int = 8,
    ) -> None:
        if ppl_model not in PPL_MODELS:
            raise MetricError(f"ppl_model must be one of {PPL_MODELS}, got {ppl_model!r}")
        if not isinstance(max_tokens, int) or max_tokens < 2:
            raise MetricError(f"max_tokens must be an integer of at least 2, got {max_tokens!r}")
        if batch_size < 1:
            raise MetricError(f"batch_size must be at least 1, got {batch_size!r}")
        observer_vocab = _output_vocab(observer)
        performer_vocab = _output_vocab(performer)
        if observer_vocab != performer_vocab:
            raise MetricError(
                f"Binoculars needs observer and performer with one vocabulary: {observer_identity} "
                f"has {observer_vocab} output tokens, {performer_identity} has {performer_vocab}"
            )
        if len(tokenizer) > observer_vocab:
            raise MetricError(
                f"the tokenizer has {len(tokenizer)} tokens, more than the models' vocabulary of "
                f"{observer_vocab}"
            )
        self.observer = observer.eval()
        self.performer = performer.eval()
        self.tokenizer = tokenizer
        self.observer_identity = observer_identity
        self.performer_identity = performer_identity
        self.max_tokens = max_tokens
        self.ppl_model = ppl_model
        self.batch_size = batch_size
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = pad if pad is not None else tokenizer.eos_token_id
        if self.pad_token_id is None:
            raise MetricError("the tokenizer has neither a pad nor an EOS token")
        self._lock = threading.Lock()

    def encode(self, text: str) -> list[int]:
        """All token ids of ``text`` (no special tokens added, not cut)."""
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        """Tokens of each whole text (before the cut to ``max_tokens``)."""
        return [len(self.encode(t)) for t in texts]

    def _rows(self, texts: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
        """Each text's token ids, whole and cut to ``max_tokens``; a text of fewer than 2
        tokens is a ValueError (``ppl`` has no position to average over)."""
        encoded = [self.encode(t) for t in texts]
        short = [i for i, ids in enumerate(encoded) if len(ids) < 2]
        if short:
            raise ValueError(
                f"text(s) {short} have fewer than 2 tokens; Binoculars needs at least 2"
            )
        return encoded, [ids[: self.max_tokens] for ids in encoded]

    def score(self, texts: Sequence[str]) -> list[BinocularsScore]:
        """The Binoculars score of each text (see :meth:`_rows` for what is refused)."""
        encoded, cut = self._rows(texts)
        values = self.score_ids(cut)
        return [
            BinocularsScore(score=p / x, ppl=p, x_ppl=x, tokens=len(ids), length=len(full))
            for (p, x), ids, full in zip(values, cut, encoded)
        ]

    def score_cached(self, texts: Sequence[str], cache: ScoreCache) -> list[BinocularsScore]:
        """:meth:`score` through the score cache: each text's ``(ppl, x_ppl)`` is stored under
        (observer, performer, ``ppl_model``, the token ids scored), so a rerun, or the same
        text in another model's run, computes nothing."""
        encoded, cut = self._rows(texts)
        keys = [
            cache.value_key(
                "binoculars",
                self.observer_identity,
                self.performer_identity,
                self.ppl_model,
                json.dumps(ids),
            )
            for ids in cut
        ]
        found, missing = partition_cached(keys, cut, lambda key: _pair(cache.get_value(key)))
        if missing:
            computed = self.score_ids(list(missing.values()))
            for key, value in zip(missing, computed, strict=True):
                cache.put_value(key, list(value))
                found[key] = value
        return [
            BinocularsScore(
                score=found[key][0] / found[key][1],
                ppl=found[key][0],
                x_ppl=found[key][1],
                tokens=len(ids),
                length=len(full),
            )
            for key, ids, full in zip(keys, cut, encoded)
        ]

    def score_ids(self, rows: Sequence[Sequence[int]]) -> list[tuple[float, float]]:
        """``(ppl, x_ppl)`` for rows of token ids, as given (no cut)."""
        import torch

        order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
        out: list[tuple[float, float]] = [(math.nan, math.nan)] * len(rows)
        device = next(self.observer.parameters()).device
        for start in range(0, len(order), self.batch_size):
            chunk = order[start : start + self.batch_size]
            width = max(len(rows[i]) for i in chunk)
            input_ids = torch.full((len(chunk), width), self.pad_token_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, i in enumerate(chunk):
                input_ids[r, : len(rows[i])] = torch.tensor(list(rows[i]), dtype=torch.long)
                attention[r, : len(rows[i])] = 1
            input_ids, attention = input_ids.to(device), attention.to(device)
            with self._lock, torch.inference_mode():
                observer_logits = self._logits(self.observer, input_ids, attention)
                if self.performer is self.observer:
                    performer_logits = observer_logits
                else:
                    performer_logits = self._logits(self.performer, input_ids, attention)
                ppl, x_ppl = binoculars_terms(
                    observer_logits,
                    performer_logits,
                    input_ids,
                    attention,
                    self.pad_token_id,
                    ppl_model=self.ppl_model,
                )
            for r, i in enumerate(chunk):
                out[i] = (float(ppl[r]), float(x_ppl[r]))
        return out

    @staticmethod
    def _logits(model: Any, input_ids: Any, attention: Any) -> Any:
        model_device = next(model.parameters()).device
        logits = model(
            input_ids=input_ids.to(model_device),
            attention_mask=attention.to(model_device),
            use_cache=False,
        ).logits
        return logits.to(input_ids.device)


def _output_vocab(model: Any) -> int:
    head = model.get_output_embeddings()
    if head is not None and getattr(head, "weight", None) is not None:
        return int(head.weight.shape[0])
    return int(model.config.vocab_size)


# -- loading ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedCausalLM:
    """A causal LM loaded for Binoculars, with its tokenizer and identity (``...:<dtype>``)."""

    spec: str
    model: Any
    tokenizer: Any
    identity: str
    dtype: str
    device: str


def _spec_name(spec: str) -> str:
    """The model a Binoculars spec names (:func:`scorers.lm.backends.in_process_model`)."""
    return in_process_model(spec, what="the Binoculars model")


def load_causal_lm(
    spec: str, *, dtype: str | None = None, device: str | None = None
) -> LoadedCausalLM:
    """The model ``spec`` (``embedded``, a local transformers folder, or a hub id, optionally
    written ``hf/<id>``) in eval mode, loaded once per process for each (spec, dtype, device)
    through the project's one loader and store (:mod:`scorers.lm.loading`). ``dtype``
    ``None``/``"auto"`` is float32 on a CPU and bfloat16 on a GPU."""
    device, dtype = resolve_device_dtype(device, dtype)
    name = _spec_name(spec)
    return shared(("binoculars_model", name, dtype, device), lambda: _load(name, dtype, device))


def _load(name: str, dtype: str, device: str) -> LoadedCausalLM:
    path, identity = locate(name)
    try:
        model, tokenizer = load_pretrained(
            path, dtype=dtype, device=device, what="the Binoculars model"
        )
    except OSError as exc:
        raise EvaluationLMError(
            f"could not load the Binoculars model {name!r}: give 'embedded', a local "
            f"transformers folder, or a hub id (hub ids need the network or a filled HF cache): "
            f"{exc}"
        ) from exc
    if not identity:
        identity = f"{name}@{getattr(model.config, '_commit_hash', None) or 'unknown'}"
    return LoadedCausalLM(
        spec=name,
        model=model,
        tokenizer=tokenizer,
        identity=f"{identity}:{dtype}",
        dtype=dtype,
        device=device,
    )


def load_binoculars(
    observer: str = DEFAULT_OBSERVER,
    performer: str = DEFAULT_PERFORMER,
    *,
    dtype: str | None = None,
    device: str | None = None,
    max_tokens: int = 512,
    ppl_model: str = "performer",
) -> Binoculars:
    """A :class:`Binoculars` pair from two model specs (see :func:`load_causal_lm`); the
    tokenizer is the observer's, as in the reference, and the two tokenizers' vocabularies must
    be identical (the reference's ``assert_tokenizer_consistency``). One pair per process for
    each set of arguments; each model is loaded once even when it is in several pairs."""
    device, dtype = resolve_device_dtype(device, dtype)
    key = (_spec_name(observer), _spec_name(performer), dtype, device, max_tokens, ppl_model)

    def build() -> Binoculars:
        seen = load_causal_lm(observer, dtype=dtype, device=device)
        acts = load_causal_lm(performer, dtype=dtype, device=device)
        if seen is not acts and seen.tokenizer.get_vocab() != acts.tokenizer.get_vocab():
            raise MetricError(
                f"Binoculars needs one tokenizer: the vocabularies of {seen.identity} and "
                f"{acts.identity} differ"
            )
        return Binoculars(
            seen.model,
            acts.model,
            seen.tokenizer,
            observer_identity=seen.identity,
            performer_identity=acts.identity,
            max_tokens=max_tokens,
            ppl_model=ppl_model,
        )

    return shared(("binoculars_pair", *key), build)


def _pair(stored: Any) -> tuple[float, float] | None:
    """A cached ``(ppl, x_ppl)``; None (a miss, recomputed) for anything else a damaged or
    foreign entry may hold."""
    if not isinstance(stored, list | tuple) or len(stored) != 2:
        return None
    try:
        return float(stored[0]), float(stored[1])
    except (TypeError, ValueError):
        return None
