"""gem-tasks: Inspect AI tasks and MI-based scorers for benchmarking LLM judgments with no gold
standard (GRE-bench: peer review of conference papers scored with GEM / GEM-S)."""

from gem_tasks.iclr import iclr
from gem_tasks.mi_scorers import gem, gem_raw, gem_s, gem_s_assw

__all__ = ["gem", "gem_raw", "gem_s", "gem_s_assw", "iclr"]
