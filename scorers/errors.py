"""The error classes of gem-tasks: one root, :class:`GemTasksError`, so a caller can catch
everything the core raises on purpose; each also derives from the builtin it refines."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorers.signature import Signature

__all__ = [
    "EvaluationLMError",
    "GemTasksError",
    "MetricError",
    "SettingError",
    "UnknownMetricError",
    "Unscored",
    "did_you_mean",
]


class GemTasksError(Exception):
    """Root of every error gem-tasks raises on purpose."""


class SettingError(GemTasksError, ValueError):
    """A setting of a run is wrong (the evaluation LM, a path, a URL, a metric's name or option,
    a role): found when the run is set up, before any sample is generated. Its message is one
    line that names the setting and what to do; a harness shows it without a traceback."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the choice closest to ``name``, or ``""`` when none is
    close: the suffix of an error about an unknown name."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


class EvaluationLMError(GemTasksError, RuntimeError):
    """The evaluation LM could not answer (server unreachable, bad model name, prompt too long)."""


class MetricError(SettingError):
    """A metric was asked for with options it does not have, or cannot run with the resources
    given."""


class UnknownMetricError(MetricError, KeyError):
    """No metric is registered under that name."""

    def __str__(self) -> str:  # KeyError quotes its message; say it plainly
        return str(self.args[0]) if self.args else ""


class Unscored(GemTasksError):
    """This item cannot be scored by this metric (bad or missing input, a text that does not fit
    the model), for ``reason``: not a failure of the machinery. A metric raises it from anywhere
    in its computation; :meth:`scorers.registry.Metric.ascore` turns it into the unscored
    :class:`~scorers.types.Result` a harness logs, so no family writes that conversion itself.

    Args:
        reason: why, in a few words (the result's ``reason``; never empty).
        explanation: the result's explanation (default ``"unscored: <reason>"``).
        details: the result's details (what was computed before the item was given up).
        signature: the result's signature (a metric may attach it where it catches the error on
            its way out, once the signature is known).
        terms: the result's per-reference terms computed before the item was given up.
    """

    def __init__(
        self,
        reason: str,
        *,
        explanation: str | None = None,
        details: dict[str, Any] | None = None,
        signature: Signature | None = None,
        terms: list[dict[str, Any]] | None = None,
    ) -> None:
        if not reason.strip():
            raise ValueError("an unscored item needs its reason")
        super().__init__(reason)
        self.reason = reason
        self.explanation = explanation or f"unscored: {reason}"
        self.details = dict(details or {})
        self.signature = signature
        self.terms = list(terms or [])
