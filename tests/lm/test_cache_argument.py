"""The KV-cache argument follows the installed transformers: ``cache`` where the model's forward
has it (5.24 on), ``past_key_values`` before; the backend's own forwards raise no deprecation."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pytest

from scorers.lm.hf.cache_argument import cache_kwargs, returned_cache


class Renamed:
    def forward(self, input_ids: Any = None, cache: Any = None, **kwargs: Any) -> None: ...


class Before:
    def forward(self, input_ids: Any = None, past_key_values: Any = None, **kw: Any) -> None: ...


class Peft:  # forwards **kwargs to the model it wraps
    def __init__(self, model: Any) -> None:
        self.model = model

    def forward(self, *args: Any, **kwargs: Any) -> None: ...

    def get_base_model(self) -> Any:
        return self.model


class Compiled:  # torch.compile's wrapper
    def __init__(self, model: Any) -> None:
        self._orig_mod = model

    def forward(self, *args: Any, **kwargs: Any) -> None: ...


@dataclass
class NewOutput:
    logits: Any = None
    cache: Any = None


@dataclass
class OldOutput:
    logits: Any = None
    past_key_values: Any = None


def test_the_argument_is_named_as_the_model_names_it():
    assert cache_kwargs(Renamed(), "kv") == {"cache": "kv"}
    assert cache_kwargs(Before(), "kv") == {"past_key_values": "kv"}
    assert cache_kwargs(Peft(Renamed()), "kv") == {"cache": "kv"}
    assert cache_kwargs(Compiled(Before()), "kv") == {"past_key_values": "kv"}
    assert returned_cache(NewOutput(cache="kv")) == "kv"
    assert returned_cache(OldOutput(past_key_values="kv")) == "kv"


@pytest.mark.slow
def test_the_backends_forwards_raise_no_deprecation(embedded_lm):
    """Scoring (shared prefixes: the cache passed and read back) and generation (the decoding
    loop's cache) on the embedded model, every FutureWarning and DeprecationWarning an error."""
    from scorers.lm.base import GenerationSettings, ScoringRequest

    tok = embedded_lm.tokenizer
    shared = tuple(tok.encode("The reviewers agree that the paper"))
    requests = [
        ScoringRequest(shared, tuple(tok.encode(" is clear."))),
        ScoringRequest(shared, tuple(tok.encode(" needs more experiments."))),
        ScoringRequest(tuple(tok.encode("Another context")), tuple(tok.encode(" here."))),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        warnings.simplefilter("error", DeprecationWarning)
        assert all(r.n_tokens for r in embedded_lm.target_logprobs(requests))
        replies = embedded_lm.generate(
            [[{"role": "user", "content": "Say hi."}]], GenerationSettings(max_new_tokens=4)
        )
    assert replies[0].strip()
