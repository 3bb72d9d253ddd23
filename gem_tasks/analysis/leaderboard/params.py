"""Model parameter counts for the leaderboard's tables and plots: read from a YAML or CSV file,
looked up by a row's model name."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from gem_tasks.analysis.leaderboard.logs import as_float

__all__ = ["params_for", "read_params"]


def read_params(path: str | Path) -> dict[str, float]:
    """Model -> parameter count in billions from a YAML mapping (``openai/gpt-4o: 200``, or a
    list of ``{model, params}``) or a CSV with columns ``model`` and ``params`` (or its first two
    columns).

    Raises:
        FileNotFoundError: no such file.
        ValueError: the file is not such a mapping or a count is not a positive number.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such parameter file")
    if path.suffix.lower() == ".csv":
        frame = pd.read_csv(path)
        if frame.shape[1] < 2:
            raise ValueError(f"{path}: expected columns model, params")
        model_col = "model" if "model" in frame else frame.columns[0]
        param_col = "params" if "params" in frame else frame.columns[1]
        raw: Any = dict(zip(frame[model_col].astype(str), frame[param_col]))
    else:
        import yaml

        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(raw, list):
            try:
                raw = {str(item["model"]): item["params"] for item in raw}
            except (TypeError, KeyError) as exc:
                raise ValueError(f"{path}: list items need 'model' and 'params'") from exc
    if not isinstance(raw, Mapping) or not raw:
        raise ValueError(f"{path}: expected a mapping of model to parameters (billions)")
    params: dict[str, float] = {}
    for model, value in raw.items():
        number = as_float(value)
        if number is None or not math.isfinite(number) or number <= 0:
            raise ValueError(f"{path}: parameters of {model!r} must be a positive number")
        params[str(model)] = number
    return params


def params_for(model: str, params: Mapping[str, float]) -> float | None:
    """The parameter count of a leaderboard row: by its full name, else by the name after the
    provider prefix (``openai/gpt-4o`` finds ``gpt-4o``); a ``[signature k]`` suffix is
    ignored."""
    name = model.split(" [signature ")[0]
    for candidate in (name, name.split("/", 1)[-1], name.rsplit("/", 1)[-1]):
        if candidate in params:
            return params[candidate]
    return None
