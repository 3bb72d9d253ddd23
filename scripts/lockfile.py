"""Reads the test command's lock (requirements/test.lock) and checks an environment against it.

Standard library only: it runs under the interpreter that builds the test environment, before
anything is installed, and under the environment's own interpreter to check it.

    python scripts/lockfile.py entry LOCK NAME     the lock's lines for one package (with hashes)
    python scripts/lockfile.py check LOCK          this interpreter's packages equal the lock's
                                                   (the checkout's own package aside)
    python scripts/lockfile.py diff OLD NEW        the packages whose version differs
"""

from __future__ import annotations

import argparse
import re
import sys
from importlib import metadata
from pathlib import Path

# the project itself is installed from the checkout, not from the lock
PROJECT = "gem-tasks"

_REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+?)(\s*;[^\\]*)?\s*(\\)?$")


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _blocks(text: str) -> list[tuple[str, str, list[str]]]:
    """(name, version, lines) for every pinned requirement of a requirements file."""
    blocks: list[tuple[str, str, list[str]]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        match = _REQUIREMENT.match(line)
        if match:
            current = [line]
            blocks.append((normalize(match.group(1)), match.group(2), current))
        elif line.startswith(" ") and current is not None and line.strip().startswith("--hash"):
            current.append(line)
        elif not line.startswith(" "):
            current = None
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                raise ValueError(f"not a pinned requirement: {stripped!r}")
    return blocks


def read_lock(path: Path) -> dict[str, str]:
    """Package name (normalised) -> pinned version."""
    pins: dict[str, str] = {}
    for name, version, _ in _blocks(path.read_text(encoding="utf-8")):
        if name in pins:
            raise ValueError(f"{path}: {name} is pinned twice")
        pins[name] = version
    return pins


def entry(path: Path, name: str) -> str:
    """The lock's lines for one package, hashes included, as pip's --require-hashes reads them."""
    wanted = normalize(name)
    for found, _, lines in _blocks(path.read_text(encoding="utf-8")):
        if found == wanted:
            return "\n".join(lines).rstrip(" \\") + "\n"
    raise KeyError(f"{path}: no pin for {name}")


def installed() -> dict[str, str]:
    """Package name (normalised) -> version, for this interpreter's environment."""
    found: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            found[normalize(name)] = dist.version
    return found


def differences(expected: dict[str, str], actual: dict[str, str]) -> list[str]:
    """One line per package whose version differs, is missing or is extra (sorted by name)."""
    lines = []
    for name in sorted(set(expected) | set(actual)):
        want, have = expected.get(name), actual.get(name)
        if want == have:
            continue
        lines.append(f"{name}: {want or '-'} -> {have or '-'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lockfile.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_entry = sub.add_parser("entry")
    p_entry.add_argument("lock", type=Path)
    p_entry.add_argument("name")
    p_check = sub.add_parser("check")
    p_check.add_argument("lock", type=Path)
    p_diff = sub.add_parser("diff")
    p_diff.add_argument("old", type=Path)
    p_diff.add_argument("new", type=Path)
    args = parser.parse_args(argv)

    if args.command == "entry":
        sys.stdout.write(entry(args.lock, args.name))
        return 0
    if args.command == "check":
        actual = installed()
        actual.pop(PROJECT, None)
        lines = differences(read_lock(args.lock), actual)
        if lines:
            print(f"the environment differs from {args.lock} (lock -> installed):", file=sys.stderr)
            for line in lines:
                print(f"  {line}", file=sys.stderr)
            return 1
        return 0
    lines = differences(read_lock(args.old), read_lock(args.new))
    print("\n".join(lines) if lines else "no version differs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
