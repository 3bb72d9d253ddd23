"""How every task refuses a bad setting: when the task is created, before any sample is
generated, in one line, and with a non-zero exit status.

:func:`checked_settings` wraps a task function (under ``@task``). A ``-T`` name the task does
not have is refused with the nearest parameter (Inspect would only warn and run the task on its
defaults). An error the project raises on purpose while the task is set up (any
:class:`~scorers.errors.GemTasksError`, and a ``ValueError`` raised by the project's own code:
an unknown scorer, an evaluation LM that cannot be found, a dataset file that does not exist)
becomes Inspect's prerequisite error, which ``inspect eval`` prints as its message alone, without
a traceback, and exits with status 1. Any other exception keeps its traceback: it is a bug to
report.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

# Inspect's own error for "fix this before the run can start": its command line prints the
# message without a traceback (inspect_ai._util.error.exception_hook)
from inspect_ai._util.error import PrerequisiteError

from scorers.errors import GemTasksError, SettingError, did_you_mean

__all__ = ["TaskSettingError", "checked_settings", "is_setting_error", "refusal"]

F = TypeVar("F", bound=Callable[..., Any])

_OWN_CODE = tuple(
    str(Path(__file__).resolve().parents[2] / package) + os.sep
    for package in ("gem_tasks", "gem_data", "gem_finetune", "scorers", "prompts")
)
"""The folders of the project's packages (installed side by side, or in one checkout)."""
UNKNOWN_PARAMETERS = "unknown_parameters"
"""The variadic keyword a checked task takes, so that Inspect hands it a misspelled ``-T``."""


class TaskSettingError(PrerequisiteError, SettingError):
    """A task's setting is wrong (raised while the task is created); its message is the line
    ``inspect eval`` prints."""

    def __init__(self, message: str) -> None:
        PrerequisiteError.__init__(self, message)
        SettingError.__init__(self, message)

    def __str__(self) -> str:
        return str(self.message)


def _raised_in_own_code(traceback: TracebackType | None) -> bool:
    last = None
    while traceback is not None:
        last = traceback
        traceback = traceback.tb_next
    if last is None:
        return False
    return str(Path(last.tb_frame.f_code.co_filename).resolve()).startswith(_OWN_CODE)


def is_setting_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one the project raised on purpose about a setting or its data (shown as
    its message alone), rather than a failure to show with its traceback."""
    if isinstance(exc, GemTasksError):
        return True
    return type(exc) is ValueError and _raised_in_own_code(exc.__traceback__)


_REFUSALS: dict[type[BaseException], type[TaskSettingError]] = {}


def refusal(exc: Exception, message: str) -> TaskSettingError:
    """``exc`` as a :class:`TaskSettingError` saying ``message`` that is still an instance of
    ``exc``'s own class, so that a caller catching a ``RecordError`` or a ``MetricError`` from
    a task still catches it."""
    kind = type(exc)
    combined = _REFUSALS.get(kind)
    if combined is None:
        combined = _REFUSALS.setdefault(
            kind, type(kind.__name__, (TaskSettingError, kind), {"__module__": kind.__module__})
        )
    made = combined.__new__(combined)
    made.__dict__.update(exc.__dict__)
    TaskSettingError.__init__(made, message)
    return made


def checked_settings(func: F) -> F:
    """``func`` (a task function) refusing unknown parameters and reporting setting errors as
    Inspect's prerequisite errors (see the module's docstring)."""
    signature = inspect.signature(func)
    names = list(signature.parameters)
    task_name = f"gem_tasks/{func.__name__}"

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for name in kwargs:
            if name not in signature.parameters:
                raise TaskSettingError(
                    f"{task_name} has no parameter {name!r}{did_you_mean(name, names)}; its "
                    f"parameters: {', '.join(names)}"
                )
        try:
            return func(*args, **kwargs)
        except PrerequisiteError:
            raise
        except Exception as exc:
            if not is_setting_error(exc):
                raise
            raise refusal(exc, f"{task_name}: {exc}") from exc

    variadic = inspect.Parameter(UNKNOWN_PARAMETERS, inspect.Parameter.VAR_KEYWORD)
    wrapper.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(), variadic]
    )
    return wrapper  # type: ignore[return-value]
