"""Resumable HTTP downloads with a sha256 check: one file from a URL to a path.

A download writes ``<path>.part`` and continues it with an HTTP ``Range`` request when it was
stopped; the file appears under its name only once complete and, where its sha256 is known,
checked. Any network failure is a :class:`FetchError` that names the host and what to do.
"""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from scorers.errors import GemTasksError

__all__ = ["GIT_BLOB", "FetchError", "download", "git_blob_of", "matches", "sha256_of"]

CHUNK = 1 << 16
TIMEOUT_S = 60
USER_AGENT = "gem-tasks-data-fetch"


class FetchError(GemTasksError, RuntimeError):
    """A dataset could not be fetched: the source unreachable, a file missing or changed."""


def sha256_of(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


GIT_BLOB = "git-blob:"
"""The prefix of a pin that is a file's git object id (sha1 of ``blob <size>\\0`` and the
bytes) instead of its sha256: how a file is pinned whose bytes were not at hand but whose
repository tree, which names every file's object id, was."""


def git_blob_of(path: Path) -> str:
    """The git object id of a file's bytes, as ``git hash-object`` computes it."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def matches(path: Path, pin: str) -> bool:
    """Whether the file's bytes are the ones ``pin`` names (a sha256, or ``git-blob:<id>``)."""
    if pin.startswith(GIT_BLOB):
        return git_blob_of(path) == pin.removeprefix(GIT_BLOB)
    return sha256_of(path) == pin


def _unreachable(url: str, reason: object) -> FetchError:
    host = urllib.parse.urlsplit(url).netloc or url
    return FetchError(
        f"cannot download {url}: {reason}. 'gem-tasks data fetch' needs HTTPS access to {host}; "
        "on a machine without it, fetch on one that has it and copy the output folder, or pass "
        "--mirror with a copy laid out as <owner>/<repository>/<commit>/<path>"
    )


def _write(response: Any, part: Path, done: int, url: str, progress: object | None) -> None:
    """The response's bytes into ``part``: appended after its ``done`` bytes where the server
    answered the range (206), else from the start."""
    with response:
        resumed = done and response.status == 206
        mode = "ab" if resumed else "wb"
        if not resumed:
            done = 0
        if progress is not None and done:
            progress.update(done)
        try:
            with part.open(mode) as out:
                for block in iter(lambda: response.read(CHUNK), b""):
                    out.write(block)
                    if progress is not None:
                        progress.update(len(block))
        except (urllib.error.URLError, OSError) as exc:
            raise _unreachable(url, getattr(exc, "reason", exc)) from None


def _verified(part: Path, url: str, sha256: str | None, mirrored: str | None) -> str:
    """``part``'s sha256, once it matches the pin (no pin: whatever it is); a mismatch removes
    it and says whose copy differs (``mirrored``: the source URL a mirror's copy stands for)."""
    digest = sha256_of(part)
    if sha256 is None or matches(part, sha256):
        return digest
    found = f"git-blob:{git_blob_of(part)}" if sha256.startswith(GIT_BLOB) else digest
    part.unlink()
    if mirrored:
        raise FetchError(
            f"{url}: the mirror's copy of {mirrored} is {found}, not the pinned {sha256}: the "
            "mirror holds other bytes than the source at its pinned commit; fix the mirror "
            "or fetch from the source"
        )
    raise FetchError(
        f"{url}: {found} differs from the pinned {sha256} (the file at the pinned commit "
        "changed, or the download was corrupted); removed, run the command again"
    )


def download(
    url: str,
    path: Path,
    *,
    sha256: str | None = None,
    progress: object | None = None,
    source: str | None = None,
) -> str:
    """Download ``url`` to ``path`` and return the file's sha256.

    Args:
        url: what to fetch (http or https).
        path: where the file goes; its folder is created. A complete file already there is kept
            when it matches the pin (or, with none, whenever it exists); a ``<path>.part`` left
            by a stopped download is continued where the server supports ranges, else started
            over.
        sha256: the pin: the expected hex sha256, or ``git-blob:<id>`` (:data:`GIT_BLOB`), or
            None where the bytes are checked otherwise (a digest over several files, which the
            caller checks from the returned sha256).
        progress: an object with ``update(n_bytes)`` (a tqdm bar), or None.
        source: the file's canonical URL when ``url`` is a mirror's copy of it: errors then say
            the mirror's copy is the one that differs or is missing.

    Raises:
        FetchError: the server unreachable, an HTTP error (404: the pinned file is gone, or not
            on the mirror), or the bytes differ from the pin (the partial file is removed).
    """
    mirror = source is not None and source != url
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        if sha256 is None or matches(path, sha256):
            return sha256_of(path)
        path.unlink()  # a file that is not the pinned one: fetch it again
    part = path.with_name(path.name + ".part")
    done = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if done:
        request.add_header("Range", f"bytes={done}-")
    try:
        response = urllib.request.urlopen(request, timeout=TIMEOUT_S)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and done:  # the part is already whole
            response = None
        else:
            where = f" (the mirror has no copy of {source})" if mirror else ""
            raise FetchError(
                f"cannot download {url}: HTTP {exc.code} {exc.reason}{where}"
            ) from None
    except (urllib.error.URLError, OSError) as exc:
        raise _unreachable(url, getattr(exc, "reason", exc)) from None
    if response is not None:
        _write(response, part, done, url, progress)
    digest = _verified(part, url, sha256, source if mirror else None)
    os.replace(part, path)
    return digest
