"""What a metric family may use: the evaluation LM, a text generator per model role, and the one
sqlite cache. Everything is loaded lazily and shared within the process, so a family that needs
no language model never loads one.

Args (of :class:`Resources`):
    evaluation_lm: evaluation-LM spec (``embedded``, ``hf/<model>``, ``vllm/<model>``; default
        the embedded SmolLM2), or an already loaded :class:`~scorers.lm.base.EvaluationLM`
        (it is put behind the cache).
    evaluation_lm_options: backend options (``dtype``, ``base_url``, vLLM engine arguments).
    cache_dir: folder of the sqlite cache (default ``$GEM_TASKS_CACHE_DIR`` or ~/.cache).
    generators: text generators bound to model roles (``preprocessor``, ``judge``, ...); a role
        without one falls back to the evaluation LM.
    embedders: sentence embedders by name (otherwise loaded on first use).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scorers.errors import MetricError
from scorers.lm import EvaluationLM, load_evaluation_lm
from scorers.lm.cache import CachedEvaluationLM, ScoreCache, default_cache_dir
from scorers.lm.embedding import DEFAULT_EMBEDDER, Embedder, load_embedder
from scorers.lm.generation import LocalGenerator, TextGenerator
from scorers.lm.loading import shared

__all__ = ["Resources", "cached_evaluation_lm"]


def _score_cache(path: str) -> ScoreCache:
    return shared(("score_cache", path), lambda: ScoreCache(Path(path)))


def cached_evaluation_lm(
    spec: str, cache_dir: str | Path | None = None, options: Mapping[str, Any] | None = None
) -> CachedEvaluationLM:
    """The evaluation LM for ``spec`` with backend ``options`` behind the on-disk cache: one
    instance per (spec, cache file, options) per process."""
    folder = Path(cache_dir) if cache_dir else default_cache_dir()
    path = str(folder / "cache.sqlite")
    options = dict(options or {})
    return shared(
        ("cached_evaluation_lm", spec, path, json.dumps(options, sort_keys=True)),
        lambda: CachedEvaluationLM(load_evaluation_lm(spec, **options), _score_cache(path)),
    )


class Resources:
    """The evaluation LM, role generators and cache a metric may use (see the module doc)."""

    def __init__(
        self,
        *,
        evaluation_lm: str | EvaluationLM = "embedded",
        evaluation_lm_options: Mapping[str, Any] | None = None,
        cache_dir: str | Path | None = None,
        generators: Mapping[str, TextGenerator] | None = None,
        embedders: Mapping[str, Embedder] | None = None,
    ) -> None:
        self.evaluation_lm_spec = evaluation_lm if isinstance(evaluation_lm, str) else None
        self._given_lm = None if isinstance(evaluation_lm, str) else evaluation_lm
        self.evaluation_lm_options = dict(evaluation_lm_options or {})
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.generators = dict(generators or {})
        self.embedders = dict(embedders or {})
        self._models: dict[str, TextGenerator] = {}

    @property
    def cache(self) -> ScoreCache:
        return _score_cache(str(self.cache_dir / "cache.sqlite"))

    def lm(self) -> CachedEvaluationLM:
        """The evaluation LM (loaded on first use, shared in the process)."""
        if self._given_lm is not None:
            if not isinstance(self._given_lm, CachedEvaluationLM):
                self._given_lm = CachedEvaluationLM(self._given_lm, self.cache)
            return self._given_lm
        assert self.evaluation_lm_spec is not None
        return cached_evaluation_lm(
            self.evaluation_lm_spec, self.cache_dir, self.evaluation_lm_options
        )

    def generator(self, role: str) -> TextGenerator:
        """The generator bound to ``role``, else the evaluation LM's."""
        bound = self.generators.get(role)
        return bound if bound is not None else LocalGenerator(self.lm())

    def embedder(self, name: str = DEFAULT_EMBEDDER) -> Embedder:
        """The sentence embedder ``name`` (one given to these resources, else loaded once per
        process; see :mod:`scorers.lm.embedding`)."""
        if name in self.embedders:
            return self.embedders[name]
        return load_embedder(name)

    def has_role(self, role: str) -> bool:
        """Whether a model is bound to ``role`` (not the evaluation LM's fallback)."""
        return role in self.generators

    def bind_model(self, name: str, generator: TextGenerator) -> None:
        """Bind a harness model asked for by name (see :meth:`scorers.registry.Metric.models`)."""
        self._models[name] = generator

    def model(self, name: str) -> TextGenerator:
        """The generator of the harness model ``name``; one the harness did not bind is a
        :class:`~scorers.errors.MetricError` (there is no fallback: the metric asked for that
        model, and another one would give another number)."""
        if name not in self._models:
            raise MetricError(
                f"model {name!r} is not bound: the harness binds the models a metric names "
                "(Inspect does it for every scorer; plain Python: Resources.bind_model)"
            )
        return self._models[name]
