"""Manifests for results that predate manifests: what git knows of them, marked as backfilled.

Results committed before ``benchmarks/common/manifest.py`` existed carry no record of the command
line, the machine or the library versions that produced them, and rerunning them costs CPU hours.
This writes their folder a ``manifest.json`` that says so: ``backfilled`` (why, and that this
command wrote it), the script that produced the files, the commit that last wrote each file (from
the git history under the path it had then), the machine where the result itself recorded one,
and every file's SHA-256, so that from now on an edit by hand fails the suite like any other.

Usage (once per folder, from the repository root)::

    python -m benchmarks.common.backfill FOLDER --script SCRIPT --history OLD_FOLDER \
        --reason "..."
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.common.manifest import MANIFEST, command_line, git, now, result_files


def last_commit(path: str) -> dict | None:
    """The commit that last changed ``path`` in the history: hash, date and subject."""
    line = git("log", "-1", "--format=%H%x09%aI%x09%s", "--", path)
    if not line:
        return None
    commit, date, subject = line.split("\t", 2)
    return {"commit": commit, "date": date, "subject": subject}


def recorded_machine(folder: Path) -> dict | None:
    """A machine description a result file recorded itself (the first JSON with one), or None."""
    for path in sorted(folder.rglob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(data, dict):
            for key in ("machine", "provenance"):
                value = data.get(key)
                if isinstance(value, dict):
                    return {"file": str(path.relative_to(folder)), key: value}
    return None


def backfill(
    folder: Path, *, script: str, history: str, reason: str, renamed: dict[str, str] | None = None
) -> Path:
    """Write ``folder/manifest.json`` for results that predate manifests.

    Raises:
        FileExistsError: the folder already has a manifest (a run's own is never overwritten).
        ValueError: a file in the folder has no commit in the history under ``history`` (by its
            name there: ``renamed`` maps a file's name now to its name then).
    """
    folder = Path(folder)
    target = folder / MANIFEST
    if target.exists():
        raise FileExistsError(f"{target} exists: a backfill never replaces a manifest")
    files = result_files(folder)
    written = {}
    for name in files:
        old = (renamed or {}).get(name, name)  # the file's name in the history
        commit = last_commit(f"{history.rstrip('/')}/{old}") or last_commit(str(folder / name))
        if commit is None:
            raise ValueError(f"{folder / name}: no commit wrote it under {history}")
        written[name] = commit
    manifest = {
        "backfilled": {
            "reason": reason,
            "written_by": command_line(),
            "date": now(),
            "unknown": ["command", "versions", "data hashes", "start and end time"],
        },
        "script": script,
        "commit": None,
        "command": None,
        "machine": recorded_machine(folder),
        "written_in": written,
        "files": files,
    }
    target.write_text(json.dumps(manifest, indent=2) + "\n")
    return target


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--script", required=True, help="the script that produced the files")
    parser.add_argument("--history", required=True, help="the folder's path in the git history")
    parser.add_argument("--reason", required=True)
    parser.add_argument(
        "--renamed", action="append", default=[], help="NOW=THEN: a file's name in the history"
    )
    args = parser.parse_args(argv)
    renamed = dict(pair.split("=", 1) for pair in args.renamed)
    path = backfill(
        args.folder,
        script=args.script,
        history=args.history,
        reason=args.reason,
        renamed=renamed,
    )
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
