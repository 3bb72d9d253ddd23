"""How the in-process vLLM engine is started on a CPU and named (no vLLM needed for these)."""

from __future__ import annotations

import os

import pytest

from scorers.lm.vllm import all_cores_for_cpu_engine, engine_identity

VARIABLES = ("VLLM_CPU_OMP_THREADS_BIND", "VLLM_CPU_NUM_OF_RESERVED_CPU")


@pytest.fixture
def clean_environment(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("clean_environment")
def test_cpu_engine_starts_with_no_core_reserved_then_the_environment_is_restored():
    with all_cores_for_cpu_engine(is_cpu=True):
        assert os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] == "0"
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ
    with pytest.raises(RuntimeError), all_cores_for_cpu_engine(is_cpu=True):
        raise RuntimeError("engine start failed")
    assert "VLLM_CPU_NUM_OF_RESERVED_CPU" not in os.environ


@pytest.mark.usefixtures("clean_environment")
def test_gpu_engines_are_left_alone():
    with all_cores_for_cpu_engine(is_cpu=False):
        assert not any(name in os.environ for name in VARIABLES)


@pytest.mark.parametrize("name, value", [(VARIABLES[0], "0-3"), (VARIABLES[1], "2")])
def test_the_users_own_core_settings_win(monkeypatch, clean_environment, name, value):
    monkeypatch.setenv(name, value)
    with all_cores_for_cpu_engine(is_cpu=True):
        assert os.environ[name] == value
        assert all(os.environ.get(other) is None for other in VARIABLES if other != name)
    assert os.environ[name] == value


def test_a_quantised_engine_is_another_evaluation_lm():
    # the identity keys the signature and the score cache: fp8 weights on the fly must not be
    # ranked beside, or reuse the cached scores of, the bf16 model of the same id
    base = "vllm/meta-llama/Llama-3.1-8B-Instruct@abc"
    assert engine_identity(base, "bfloat16", None) == f"{base}:bfloat16"
    assert engine_identity(base, "bfloat16", "fp8") == f"{base}:bfloat16+fp8"
    assert engine_identity(base, "float16", "awq") != engine_identity(base, "float16", None)
