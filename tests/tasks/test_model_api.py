"""The ``smollm2/embedded`` provider's model args (``-M dtype=... -M device=...``)."""

from __future__ import annotations

import pytest

from gem_tasks.model_api import EmbeddedSmolLM2
from scorers.lm import load_evaluation_lm


def test_unknown_model_arg_is_named():
    with pytest.raises(ValueError, match=r"unknown model args \['temprature'\]"):
        EmbeddedSmolLM2("embedded", temprature=0.5)


def test_unknown_model_name():
    with pytest.raises(ValueError, match="unknown embedded model 'other'"):
        EmbeddedSmolLM2("other")


@pytest.mark.slow
def test_dtype_and_device_reach_the_backend():
    model = EmbeddedSmolLM2("embedded", dtype="float32", device="cpu")
    assert model._lm is load_evaluation_lm("embedded", dtype="float32", device="cpu")
    assert model._lm.identity.endswith(":float32")
    parameter = next(model._lm.backend.model.parameters())
    assert (str(parameter.dtype), parameter.device.type) == ("torch.float32", "cpu")
