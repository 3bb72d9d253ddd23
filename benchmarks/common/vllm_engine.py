"""The in-process vLLM engine the speed benchmarks measure: the embedded SmolLM2 in float32,
eager (no graph capture), on every core."""

from __future__ import annotations

from typing import Any

__all__ = ["embedded_vllm_engine"]


def embedded_vllm_engine(*, kv_cache_memory_bytes: int) -> Any:
    """A :class:`~scorers.lm.vllm.VLLMEngineLM` on the embedded model (4,096-token context),
    its key/value cache sized for the workload (too small a cache makes vLLM run fewer
    requests at once, which the timing would then measure)."""
    from scorers.lm.embedded import materialize_embedded
    from scorers.lm.vllm import VLLMEngineLM

    return VLLMEngineLM(
        str(materialize_embedded()),
        dtype="float32",
        max_model_len=4096,
        kv_cache_memory_bytes=kv_cache_memory_bytes,
        enforce_eager=True,
    )
