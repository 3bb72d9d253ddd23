"""LoRA adapters on an evaluation LM: reading a saved PEFT adapter folder and naming its weights.

The GEM paper fine-tunes its evaluation LM with LoRA (GEM paper App. E); a score computed with an
adapter is a score of a different model. :func:`adapter_fingerprint` hashes the adapter's
configuration and weights, and every backend puts it into its identity (``...+lora@<hash>``), so
the score cache and the score signature keep the base model, and each adapter, apart.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from scorers.errors import GemTasksError

__all__ = [
    "ADAPTER_CONFIG",
    "AdapterError",
    "adapter_config",
    "adapter_fingerprint",
    "adapter_identity",
    "peft_install_hint",
]

ADAPTER_CONFIG = "adapter_config.json"
_WEIGHT_FILES = ("adapter_model.safetensors", "adapter_model.bin")
peft_install_hint = "pip install 'gem-tasks[finetune]' (or: pip install peft)"


class AdapterError(GemTasksError, ValueError):
    """An adapter folder is missing, incomplete or not a LoRA adapter."""


def _folder(adapter: str | Path) -> Path:
    folder = Path(adapter)
    if not folder.is_dir():
        raise AdapterError(f"adapter folder {folder} does not exist")
    if not (folder / ADAPTER_CONFIG).is_file():
        raise AdapterError(
            f"{folder} holds no {ADAPTER_CONFIG}: pass the folder a PEFT adapter was saved to "
            "(gem-tasks finetune train writes it to <out>/adapter)"
        )
    if not any((folder / name).is_file() for name in _WEIGHT_FILES):
        raise AdapterError(f"{folder} holds no adapter weights ({' or '.join(_WEIGHT_FILES)})")
    return folder


def adapter_config(adapter: str | Path) -> dict[str, Any]:
    """The adapter's ``adapter_config.json``; :class:`AdapterError` if it is not a LoRA adapter."""
    folder = _folder(adapter)
    config = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    if config.get("peft_type", "LORA") != "LORA":
        raise AdapterError(f"{folder}: peft_type {config.get('peft_type')!r} is not LORA")
    return config


def adapter_fingerprint(adapter: str | Path) -> str:
    """sha256 (first 16 hex digits) of the adapter's configuration and weight files' bytes.

    The folder's path and file times do not enter it: the same adapter copied elsewhere has the
    same fingerprint, a retrained one a different one.
    """
    folder = _folder(adapter)
    digest = hashlib.sha256()
    for name in (ADAPTER_CONFIG, *_WEIGHT_FILES):
        path = folder / name
        if not path.is_file():
            continue
        digest.update(name.encode() + b"\x00")
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\x00")
    return digest.hexdigest()[:16]


def adapter_identity(base_identity: str, adapter: str | Path) -> str:
    """``base_identity`` with the adapter's fingerprint appended (``<base>+lora@<hash>``)."""
    return f"{base_identity}+lora@{adapter_fingerprint(adapter)}"
