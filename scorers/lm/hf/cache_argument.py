"""The KV-cache argument of a transformers model's forward, by the name the installed version
gives it.

transformers before 5.24 names the argument and the output field ``past_key_values``; 5.24
renames both ``cache`` and warns on the old name (to be removed in 5.40). Every forward the
transformers backend makes passes its cache through :func:`cache_kwargs` and reads the one it
returns with :func:`returned_cache`, so no call of ours raises the deprecation on either side
of the rename.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = ["cache_kwargs", "returned_cache"]


@functools.cache
def _argument(forward: Any) -> str:
    parameters = inspect.signature(forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def cache_kwargs(module: Any, cache: Any) -> dict[str, Any]:
    """``{name: cache}`` for ``module``'s forward, ``name`` being the argument its signature
    has: ``cache`` (transformers 5.24 on), else ``past_key_values``. A wrapper that forwards
    ``**kwargs`` (a PEFT model, a compiled module) is looked through to the model it wraps."""
    for unwrap in ("_orig_mod", "get_base_model"):
        inner = getattr(module, unwrap, None)
        if inner is not None:
            module = inner() if callable(inner) and unwrap == "get_base_model" else inner
    return {_argument(type(module).forward): cache}


def returned_cache(output: Any) -> Any:
    """The cache a forward returned: its ``cache`` field where the output has one (5.24 on),
    else ``past_key_values``."""
    fields = getattr(output, "__dataclass_fields__", None) or {}
    return output.cache if "cache" in fields else output.past_key_values
