"""Inspect model provider ``smollm2/embedded``: the embedded SmolLM2-135M-Instruct as a model
under test, so the demo runs with no network and no API key.

Model args (``-M``): ``dtype`` (``float32``, ``bfloat16``, ``float16``) and ``device`` (``cpu``,
``cuda``, ...), both passed to the transformers backend; left out, the backend's defaults hold
(a GPU when there is one; float32 on a CPU, bfloat16 on a GPU). Any other model arg is an error
naming it.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from scorers.lm import load_evaluation_lm
from scorers.lm.base import GenerationSettings, hit_limit
from scorers.lm.chat import encode_text, generation_prompt_ids
from scorers.lm.threads import run_blocking

__all__ = ["EmbeddedSmolLM2"]

DEFAULT_MAX_TOKENS = 1024
MAX_CONNECTIONS = 32
MODEL_ARGS = ("dtype", "device")


class EmbeddedSmolLM2(ModelAPI):
    """Generates with the embedded model through transformers (greedy unless a temperature is
    set). Shares the loaded weights with the ``embedded`` evaluation LM loaded with the same
    options (the defaults, or the same ``dtype`` and ``device``)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(
            model_name=model_name,
            base_url=base_url,
            api_key=api_key,
            api_key_vars=[],
            config=config or GenerateConfig(),
        )
        if model_name not in ("embedded", "smollm2"):
            raise ValueError(f"unknown embedded model {model_name!r}: use 'smollm2/embedded'")
        unknown = sorted(set(model_args) - set(MODEL_ARGS))
        if unknown:
            raise ValueError(
                f"unknown model args {unknown} for smollm2/embedded: it takes {list(MODEL_ARGS)}"
            )
        options = {k: str(v) for k, v in model_args.items() if v is not None}
        self._lm = load_evaluation_lm("embedded", **options)

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        # concurrent calls are merged into shared batches (scorers.lm.batching): more of them
        # waiting at once means fuller batches, not more load
        return MAX_CONNECTIONS

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        messages = [{"role": m.role, "content": m.text} for m in input if m.role != "tool"]
        settings = GenerationSettings(
            max_new_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
            temperature=config.temperature or 0.0,
            seed=config.seed or 0,
        )
        text = (await run_blocking(self._lm.generate, [messages], settings))[0]
        tokenizer = self._lm.tokenizer
        input_tokens = len(generation_prompt_ids(tokenizer, messages))
        output_tokens = len(encode_text(tokenizer, text))
        output = ModelOutput.from_content(
            model=self.model_name,
            content=text,
            stop_reason="max_tokens" if hit_limit(text) else "stop",
        )
        output.usage = ModelUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )
        return output


@modelapi(name="smollm2")
def smollm2() -> type[ModelAPI]:
    return EmbeddedSmolLM2
