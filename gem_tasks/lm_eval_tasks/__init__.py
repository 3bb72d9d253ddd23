"""GRE-bench as lm-evaluation-harness tasks (``gre_bench_iclr``), scored by the same core as the
Inspect tasks. The configs live in :data:`CONFIG_PATH`::

    lm_eval --model hf --model_args pretrained=<model> --tasks gre_bench_iclr \\
        --include_path "$(gem-tasks lm-eval-path)" --apply_chat_template --log_samples \\
        --output_path results/

From Python, :func:`task_manager` gives an ``lm_eval.tasks.TaskManager`` that knows them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["CONFIG_PATH", "task_manager"]

CONFIG_PATH = Path(__file__).parent / "configs"
"""The folder to pass to ``lm_eval --include_path``."""


def task_manager(**kwargs: Any) -> Any:
    """An ``lm_eval.tasks.TaskManager`` with the GRE-bench configs included (needs the
    ``[lm-eval]`` extra)."""
    try:
        from lm_eval.tasks import TaskManager
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "lm-evaluation-harness is not installed: pip install 'gem-tasks[lm-eval]'"
        ) from exc
    return TaskManager(include_path=str(CONFIG_PATH), **kwargs)
