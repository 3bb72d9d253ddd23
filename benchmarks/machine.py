"""The machine a benchmark ran on, for the JSON it writes (timings mean little without it)."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_description() -> str | None:
    """The CPU's model name, family and whether it has AVX-512 and AVX-512 BF16 (Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in text.split("\n\n")[0].splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    flags = set(fields.get("flags", "").split())
    return (
        f"{fields.get('model name', '?')} (family {fields.get('cpu family', '?')}, "
        f"model {fields.get('model', '?')}; avx512f {'avx512f' in flags}, "
        f"avx512_bf16 {'avx512_bf16' in flags}, amx_bf16 {'amx_bf16' in flags})"
    )


def describe_machine() -> dict:
    """Platform, CPU and core count."""
    return {
        "platform": platform.platform(),
        "cpu": cpu_description(),
        "cpus": os.cpu_count(),
    }


def provenance(*, data: list[str | Path] | None = None) -> dict:
    """Where a result came from: the commit (and whether the tree had uncommitted changes), the
    command line, the machine, the time, and the data files read (path and size)."""
    import datetime
    import subprocess
    import sys

    def git(*args: str) -> str | None:
        try:
            run = subprocess.run(
                ["git", *args], capture_output=True, text=True, cwd=Path(__file__).parent
            )
        except OSError:
            return None
        return run.stdout.strip() if run.returncode == 0 else None

    return {
        "commit": git("rev-parse", "HEAD"),
        "uncommitted_changes": bool(git("status", "--porcelain", "--untracked-files=no")),
        "command": " ".join(["python", *sys.argv]),
        "machine": describe_machine(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "data": [
            {"path": str(p), "bytes": Path(p).stat().st_size if Path(p).exists() else None}
            for p in data or []
        ],
    }
