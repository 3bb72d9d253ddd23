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

from scorers.errors import GemTasksError

__all__ = ["FetchError", "download", "sha256_of"]

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


def _unreachable(url: str, reason: object) -> FetchError:
    host = urllib.parse.urlsplit(url).netloc or url
    return FetchError(
        f"cannot download {url}: {reason}. 'gem-tasks data fetch' needs HTTPS access to {host}; "
        "on a machine without it, fetch on one that has it and copy the output folder, or pass "
        "--mirror with a copy laid out as <owner>/<repository>/<commit>/<path>"
    )


def download(
    url: str, path: Path, *, sha256: str | None = None, progress: object | None = None
) -> str:
    """Download ``url`` to ``path`` and return the file's sha256.

    Args:
        url: what to fetch (http or https).
        path: where the file goes; its folder is created. A complete file already there is kept
            when it matches ``sha256`` (or, with no sha256 known, whenever it exists); a
            ``<path>.part`` left by a stopped download is continued where the server supports
            ranges, else started over.
        sha256: the expected hex digest, or None where the bytes are not known in advance (the
            digest is then returned for the caller to record).
        progress: an object with ``update(n_bytes)`` (a tqdm bar), or None.

    Raises:
        FetchError: the server unreachable, an HTTP error (404: the pinned file is gone), or
            the bytes differ from ``sha256`` (the partial file is removed, so a retry starts
            over).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        digest = sha256_of(path)
        if sha256 is None or digest == sha256:
            return digest
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
            raise FetchError(f"cannot download {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise _unreachable(url, getattr(exc, "reason", exc)) from None
    if response is not None:
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
    digest = sha256_of(part)
    if sha256 is not None and digest != sha256:
        part.unlink()
        raise FetchError(
            f"{url}: sha256 {digest} differs from the pinned {sha256} (the file at the pinned "
            "commit changed, or the download was corrupted); removed, run the command again"
        )
    os.replace(part, path)
    return digest
