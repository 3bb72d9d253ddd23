"""Host-to-device copies that do not wait for the work already queued on a GPU."""

from __future__ import annotations

from typing import Any

__all__ = ["to_device"]


def to_device(tensor: Any, device: Any) -> Any:
    """``tensor`` on ``device``; to a GPU through pinned memory without waiting for the work
    already queued (a plain copy from pageable memory would wait for it)."""
    if getattr(device, "type", str(device)) != "cuda":
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
