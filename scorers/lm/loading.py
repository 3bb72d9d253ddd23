"""Loading models, once: the one loader of transformers causal LMs (a local folder, a hub id, the
embedded model) and the one in-process store of loaded models.

- :func:`shared` keeps what was built under a key that identifies it (an evaluation LM by spec
  and options, a Binoculars model by path, dtype and device, an embedder by name) for the life
  of the process, building each once even when threads ask at the same time.
- :func:`load_pretrained` loads a tokenizer and a causal LM in eval mode on a device, quietly:
  transformers' progress bars and info messages are for its own users, not ours (a user's run
  prints Inspect's display, our progress and real warnings).
- :func:`file_fingerprint` names a weights file by its bytes (the start of an identity).
- :func:`scorers.lm.embedded.locate` turns a model spec (``embedded``, a local folder, a hub
  id) into what to load and the start of its identity.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from scorers.errors import MetricError

__all__ = [
    "DTYPES",
    "file_fingerprint",
    "load_pretrained",
    "quiet_transformers",
    "resolve_device_dtype",
    "shared",
]

T = TypeVar("T")

DTYPES = ("float32", "bfloat16", "float16")

_store: dict[tuple[Any, ...], Any] = {}
_building: dict[tuple[Any, ...], threading.Lock] = {}
_lock = threading.Lock()


def shared(key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """What ``build()`` returns, built once per process for ``key`` (a tuple naming what is
    built: its kind first, then what identifies it). Concurrent callers of one key wait for the
    one build; a failed build stores nothing (the next caller tries again)."""
    with _lock:
        if key in _store:
            return _store[key]
        building = _building.setdefault(key, threading.Lock())
    with building:
        with _lock:
            if key in _store:
                return _store[key]
        value = build()
        with _lock:
            _store[key] = value
            _building.pop(key, None)
        return value


def resolve_device_dtype(device: str | None, dtype: str | None) -> tuple[str, str]:
    """``device`` ``None``/``auto``: a GPU when there is one; ``dtype`` ``None``/``auto``:
    float32 on a CPU (the reproducible reference), bfloat16 on a GPU. Another dtype than
    :data:`DTYPES` is a :class:`~scorers.errors.MetricError`."""
    import torch

    if device in (None, "auto"):
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype in (None, "auto"):
        dtype = "float32" if device == "cpu" else "bfloat16"
    if dtype not in DTYPES:
        raise MetricError(f"dtype must be 'auto' or one of {DTYPES}, got {dtype!r}")
    return str(device), str(dtype)


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' progress bars and below-warning messages off while loading (restored),
    including the GGUF reader's own bar, which ignores transformers' switch."""
    import functools

    from transformers import modeling_gguf_pytorch_utils as gguf_reader
    from transformers.utils import logging

    verbosity = logging.get_verbosity()
    bars = logging.is_progress_bar_enabled()
    gguf_bar = gguf_reader.tqdm
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    gguf_reader.tqdm = functools.partial(gguf_bar, disable=True)
    try:
        yield
    finally:
        gguf_reader.tqdm = gguf_bar
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def load_pretrained(
    name_or_path: str | Path, *, dtype: str, device: str, what: str = "model", **load_args: Any
) -> tuple[Any, Any]:
    """(model, tokenizer) of a transformers causal LM in eval mode on ``device`` at ``dtype``
    (``load_args``: ``revision``, ``gguf_file``), loaded quietly; ``what`` names the model in
    the :class:`~scorers.errors.SettingError` of weights that cannot be found."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from scorers.lm.locate import locate_model

    # where the weights come from, or which of four reasons they cannot (a missing folder, an
    # offline Hub, a name the Hub lacks, a Hub that does not answer), before transformers' own
    # retries and messages
    locate_model(str(name_or_path), revision=load_args.get("revision"), what=what)
    with quiet_transformers():
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), **load_args)
        model = AutoModelForCausalLM.from_pretrained(
            str(name_or_path), dtype=getattr(torch, dtype), **load_args
        )
    return model.to(device).eval(), tokenizer


def file_fingerprint(path: Path) -> str:
    """sha256 (first 16 hex digits) of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]
