"""The transformers backends' entries in the backend registry (:mod:`scorers.lm.backends`):
``hf/<model>`` and ``embedded`` built, and the options they take."""

from __future__ import annotations

import dataclasses
from typing import Any

from scorers.lm.backends import keyword_names
from scorers.lm.hf.model import HFEvaluationLM
from scorers.lm.hf.options import HFOptions

__all__ = ["load_embedded", "load_transformers", "option_names"]


def load_transformers(model: str, options: dict[str, Any]) -> HFEvaluationLM:
    """``hf/<model>``: a hub id or a local folder through transformers."""
    return HFEvaluationLM.from_pretrained(model, **options)


def load_embedded(model: str, options: dict[str, Any]) -> HFEvaluationLM:
    """``embedded``: the packaged SmolLM2 GGUF, dequantised once into a local folder."""
    from scorers.lm.embedded import embedded_identity, materialize_embedded

    folder = materialize_embedded()
    return HFEvaluationLM.from_pretrained(folder, identity=embedded_identity(), **options)


def option_names(model: str, options: dict[str, Any]) -> set[str]:
    """The loading keywords of :meth:`HFEvaluationLM.from_pretrained` and every
    :class:`~scorers.lm.hf.options.HFOptions` field."""
    loading = keyword_names(HFEvaluationLM.from_pretrained)
    return loading | {f.name for f in dataclasses.fields(HFOptions)}
