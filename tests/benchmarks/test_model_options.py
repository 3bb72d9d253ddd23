"""The experiments' shared model options: the dtype choices are the loader's, nothing given
means nothing passed (the backend's defaults), and what is given reaches the loader and Inspect."""

from __future__ import annotations

import argparse

import pytest

from conftest import load_benchmark

model_options = load_benchmark("common.model_options")


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    model_options.add_model_options(parser, dtype_used_as="as the test's model")
    return parser.parse_args(list(argv))


def test_nothing_given_passes_nothing():
    args = parsed()
    assert model_options.lm_args(args) == {}
    assert model_options.model_options(args) == {}


def test_what_is_given_reaches_the_loader_and_inspect():
    args = parsed("--dtype", "bfloat16", "--device", "cuda:0", "--max-connections", "64")
    assert model_options.lm_args(args) == {"dtype": "bfloat16", "device": "cuda:0"}
    assert model_options.model_options(args) == {
        "model_args": {"dtype": "bfloat16", "device": "cuda:0"},
        "max_connections": 64,
    }
    only_batch = parsed("--max-connections", "8")
    assert model_options.model_options(only_batch) == {"max_connections": 8}


def test_the_dtype_choices_are_the_loaders(capsys):
    from scorers.lm.loading import DTYPES

    for dtype in DTYPES:
        assert parsed("--dtype", dtype).dtype == dtype
    with pytest.raises(SystemExit):
        parsed("--dtype", "int8")
    assert "invalid choice: 'int8'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "script",
    [
        "experiments.decisions_iclr.run",
        "experiments.beyond_rating_iclr2020.run",
        "experiments.validation_iclr2020.run",
        "experiments.validation_iclr2023.run",
        "experiments.gaming.run",
        "speed.scoring_rules_cost",
    ],
)
def test_every_script_refuses_a_dtype_the_loader_does_not_know(script, capsys):
    """Refused on the command line, before any work, as the loader would refuse it later."""
    with pytest.raises(SystemExit):
        load_benchmark(script).main(["--dtype", "int8"])
    assert "invalid choice: 'int8'" in capsys.readouterr().err


def test_the_finetune_command_refuses_a_dtype_the_loader_does_not_know(tmp_path, capsys):
    from gem_tasks.cli import main

    with pytest.raises(SystemExit):
        main(["finetune", "train", str(tmp_path), "--out", str(tmp_path / "o"), "--dtype", "int8"])
    assert "invalid choice: 'int8'" in capsys.readouterr().err
