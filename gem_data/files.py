"""Files a fetch or a build writes: all or nothing (a temporary file in the same folder, renamed
into place), so that an interrupted write never leaves a half file under the final name."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_bytes", "atomic_write_json", "atomic_write_text", "read_json"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename (all or nothing). The
    file gets the permissions any new file gets (0666 less the umask, e.g. 0644): a dataset
    folder is meant to be shared, and the temporary file's private 0600 must not stay."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o666 & ~_umask())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, value: Any) -> None:
    """:func:`atomic_write_bytes` for a JSON document."""
    atomic_write_text(path, json.dumps(value, ensure_ascii=False, indent=1) + "\n")


def read_json(path: Path) -> Any | None:
    """The JSON document at ``path``; None when it is missing or unreadable (then it is redone)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
