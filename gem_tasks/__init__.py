"""gem-tasks: Inspect AI tasks and scorers for benchmarking LLM judgments with no gold standard
(GRE-bench: peer review of conference papers scored with GEM / GEM-S and the metrics of the
related method papers). The harness-independent core is the ``scorers`` package.

The names below are imported when first used (PEP 562), so that the ``gem-tasks`` command line,
which needs none of them, starts without importing Inspect."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gem_tasks.tasks.iclr import iclr

_SCORERS = ("gem", "gem_raw", "gem_s", "gem_s_assw")

__all__ = [*_SCORERS, "iclr"]


def __getattr__(name: str) -> Any:
    if name in _SCORERS:
        from gem_tasks.scoring.adapter import SCORERS

        return SCORERS[name]
    if name == "iclr":
        from gem_tasks.tasks.iclr import iclr

        return iclr
    raise AttributeError(f"module 'gem_tasks' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
