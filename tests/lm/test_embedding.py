"""The sentence-embedding model's own operations (scorers/lm/embedding.py)."""

from __future__ import annotations

import pytest


@pytest.mark.slow
def test_tokenizing_a_long_text_prints_no_length_warning(capfd):
    """Counting the tokens of a text longer than the model reads is what ``tokenize`` is for:
    the tokenizer's 'longer than the specified maximum' warning would reach every user's run."""
    from sentence_transformers import SentenceTransformer

    from scorers.lm.embedding import SentenceTransformerEmbedder, embedded_model_folder

    # a fresh tokenizer: the warning is printed once per tokenizer
    embedder = SentenceTransformerEmbedder(
        SentenceTransformer(str(embedded_model_folder()), device="cpu"), identity="test"
    )
    capfd.readouterr()
    text = "The method is evaluated on three benchmarks. " * 100
    ids = embedder.tokenize(text)
    assert len(ids) > 512  # longer than the model reads
    assert embedder.detokenize(ids[:5]) == "the method is evaluated on"
    assert "longer than the specified maximum" not in capfd.readouterr().err


@pytest.mark.slow
def test_loading_the_embedder_prints_nothing(capfd):
    """A user's run that embeds (BERTScore, GPPM's clusters) shows Inspect's display, not
    transformers' "Loading weights" bar."""
    from scorers.lm.embedding import embedded_model_folder, load_embedder

    capfd.readouterr()
    # by its folder: a name no other test loads, so the model is loaded here, not found loaded
    embedder = load_embedder(str(embedded_model_folder()), device="cpu")
    assert embedder.tokenize("The method is clear.")
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "%|" not in err, err[-2000:]
