"""Sentence-level BERTScore against a numpy computation with a fake embedder, the authors'
sentence split, and the packaged offline embedding model."""

from __future__ import annotations

import numpy as np
import pytest

from scorers import Item, Paper, Resources, Review, get_metric
from scorers.metrics.embedding import sentences


class FakeEmbedder:
    """Each sentence -> a fixed random unit vector; records the prompt names it was asked for."""

    identity = "fake/embedder"

    def __init__(self) -> None:
        self.vectors: dict[str, np.ndarray] = {}
        self.prompts: list[str | None] = []
        self.rng = np.random.default_rng(0)

    def encode(self, texts, *, prompt_name=None):
        self.prompts.append(prompt_name)
        rows = []
        for text in texts:
            if text not in self.vectors:
                v = self.rng.normal(size=8)
                self.vectors[text] = v / np.linalg.norm(v)
            rows.append(self.vectors[text])
        return np.stack(rows)


def test_the_authors_sentence_split():
    assert sentences("First one. Second?\nThird!  Fourth e.g. here") == [
        "First one.",
        "Second?",
        "Third!",
        "Fourth e.g.",
        "here",
    ]
    assert sentences(" \n ") == []


def test_bertscore_is_the_greedy_cosine_f1_averaged_over_references(tmp_path):
    fake = FakeEmbedder()
    candidate = "A is new. B is weak. C is fine."
    refs = ("A is new. D is odd.", "E is good.")
    item = Item(
        paper=Paper(id="p"),
        candidate=candidate,
        references=(Review("r1", refs[0]), Review("r2", refs[1]), Review("r3", " ")),
    )
    resources = Resources(cache_dir=tmp_path, embedders={"fake/embedder": fake})
    result = get_metric("bertscore", model="fake/embedder").score(item, resources)
    expected = []
    for ref in refs:
        source = np.stack([fake.vectors[s] for s in sentences(candidate)])
        target = np.stack([fake.vectors[s] for s in sentences(ref)])
        cosine = source @ target.T
        p, r = cosine.max(axis=1).mean(), cosine.max(axis=0).mean()
        expected.append(2 * p * r / (p + r))
    assert result.value == pytest.approx(np.mean(expected), abs=1e-6)
    assert [t["reference_id"] for t in result.terms] == ["r1", "r2"]
    assert result.details["skipped_references"] == {"r3": "empty reference text"}
    assert fake.prompts[0] == "s2s_query" and fake.prompts[1] is None  # query prompt: source only
    assert result.signature.as_dict()["embedder"] == "fake/embedder"


@pytest.mark.slow
def test_the_packaged_embedding_model_loads_offline(tmp_path):
    same = "The method is novel. The experiments are too small."
    item = Item(
        paper=Paper(id="p"),
        candidate=same,
        references=(Review("same", same), Review("other", "Cats sleep all day long.")),
    )
    result = get_metric("bertscore").score(item, Resources(cache_dir=tmp_path))
    by_ref = {t["reference_id"]: t["f1"] for t in result.terms}
    assert by_ref["same"] == pytest.approx(1.0, abs=1e-5)
    assert by_ref["other"] < 0.5
    assert result.signature.as_dict()["embedder"] == "embedded/all-MiniLM-L6-v2"
