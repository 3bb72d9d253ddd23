"""The machine a benchmark ran on, for the JSON it writes (timings mean little without it)."""

from __future__ import annotations

import os
import platform
import sys
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


def gpu_description() -> dict | None:
    """The GPU the run used (name, memory, compute capability, CUDA version), when torch is
    already imported and sees one; None otherwise (this never imports torch itself)."""
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_available():
        return None
    properties = torch.cuda.get_device_properties(0)
    return {
        "name": properties.name,
        "memory_gib": round(properties.total_memory / 2**30, 1),
        "capability": f"{properties.major}.{properties.minor}",
        "count": torch.cuda.device_count(),
        "cuda": torch.version.cuda,
    }


def describe_machine() -> dict:
    """Platform, CPU and core count, and the GPU where one was used."""
    machine = {
        "platform": platform.platform(),
        "cpu": cpu_description(),
        "cpus": os.cpu_count(),
    }
    gpu = gpu_description()
    if gpu is not None:
        machine["gpu"] = gpu
    return machine
