"""The evaluation-LM backends' registry: a backend is one :class:`Backend` entry, found by the
first part of a spec (``hf/<model>``: the backend ``hf``) or by a whole spec of its own
(``embedded``).

An entry names its loader and its checks as ``module:function`` strings, imported when first
used, so that parsing a spec or listing the forms imports no model code. Registering a backend
is the one edit a new backend makes outside its module::

    register_backend(Backend(
        name="mine", form="mine/<model>", description="my server",
        loader="my_package.backend:load", options="my_package.backend:option_names",
    ))

after which ``-T scorer_lm=mine/<model>``, ``scorer_lm_args`` checking, the spec error's list
of forms and the docs' backend table all know it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from scorers.errors import SettingError, did_you_mean
from scorers.registries import Registry

__all__ = [
    "Backend",
    "backend",
    "keyword_names",
    "list_backends",
    "parse_spec",
    "register_backend",
    "spec_forms",
]


@dataclass(frozen=True)
class Backend:
    """One evaluation-LM backend.

    Args:
        name: the spec's first part (``hf`` of ``hf/<model>``); unique.
        form: how its specs are written, for errors and docs (``hf/<hub-id-or-path>``).
        description: one line saying what it runs.
        loader: ``module:function``, ``function(model, options) -> EvaluationLM``: the backend
            built (``options``: ``scorer_lm_args``, already checked).
        options: ``module:function``, ``function(model, options) -> set of names``: the
            options the backend takes for this model and these options (a server client takes
            others than an engine).
        check: ``module:function``, ``function(spec, model, options) -> None``: what can be
            known without loading the model (the model found, a server answering), raising
            :class:`~scorers.errors.SettingError` with one line; None: nothing more to check.
        specs: whole specs that name this backend with its one model (``embedded``), each
            parsed as ``(name, model_of_specs)``.
        model_of_specs: the model part such a whole spec stands for.
        any_model: whether ``<name>/<model>`` names a model of this backend (False for a
            backend of whole specs only: ``embedded/other`` is not a spec).
    """

    name: str
    form: str
    description: str
    loader: str
    options: str
    check: str | None = None
    specs: tuple[str, ...] = ()
    model_of_specs: str = ""
    any_model: bool = True

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"a backend's name is one word (no '/'), got {self.name!r}")
        for reference in (self.loader, self.options, self.check):
            if reference is not None and reference.count(":") != 1:
                raise ValueError(f"backend {self.name!r}: {reference!r} is not module:function")
        if self.specs and not self.model_of_specs:
            raise ValueError(f"backend {self.name!r}: whole specs need the model they stand for")

    def load(self, model: str, options: Mapping[str, Any]) -> Any:
        """The backend built for ``model`` with ``options``."""
        return _function(self.loader)(model, dict(options))

    def option_names(self, model: str, options: Mapping[str, Any]) -> frozenset[str]:
        """The options it takes for ``model`` with ``options``."""
        return frozenset(_function(self.options)(model, dict(options)))

    def run_check(self, spec: str, model: str, options: Mapping[str, Any]) -> None:
        """Its own checks of ``spec`` (see ``check``)."""
        if self.check is not None:
            _function(self.check)(spec, model, dict(options))


_BACKENDS: Registry[Backend] = Registry(
    "evaluation-LM backend", error=SettingError, hint=lambda: _forms_sentence(), list_known=False
)
_lock = threading.Lock()


def register_backend(entry: Backend) -> Backend:
    """Add a backend; a name or whole spec registered twice is an error."""
    with _lock:
        taken = {spec for b in _BACKENDS.values() for spec in b.specs}
        if entry.name in _BACKENDS or set(entry.specs) & (taken | set(_BACKENDS)):
            raise ValueError(f"backend {entry.name!r} (or one of its specs) is registered twice")
        _BACKENDS.register(entry.name, entry)
    return entry


def list_backends() -> list[Backend]:
    """Every registered backend, in registration order (the project's own are registered when
    :mod:`scorers.lm` is imported, which importing this module does first)."""
    return list(_BACKENDS.values())


def backend(name: str) -> Backend:
    """The backend registered under ``name``."""
    return _BACKENDS[name]


def spec_forms() -> list[str]:
    """How every backend's specs are written (whole specs first)."""
    forms = []
    for entry in list_backends():
        forms += [*entry.specs, *([entry.form] if entry.any_model else [])]
    return list(dict.fromkeys(forms))


def parse_spec(spec: str) -> tuple[str, str]:
    """Split a backend spec into (backend name, model); an unknown form is a
    :class:`~scorers.errors.SettingError` naming the valid ones (and the nearest)."""
    spec = str(spec).strip()
    entries = list_backends()
    for entry in entries:
        if spec in entry.specs:
            return entry.name, entry.model_of_specs
    name, _, model = spec.partition("/")
    if name in _BACKENDS and model and _BACKENDS[name].any_model:
        return name, model
    known = [s for e in entries for s in e.specs] + [e.name for e in entries]
    hint = did_you_mean(spec if not model else name, known)
    raise SettingError(f"unknown evaluation-LM spec {spec!r}{hint}: {_forms_sentence()}")


IN_PROCESS = ("embedded", "hf")
"""The backends whose model runs in this process through transformers: what a metric that needs
a model's full logits or weights (Binoculars' observer and performer) can be given."""


def in_process_model(spec: str, *, what: str) -> str:
    """The model an in-process spec names, read with the registry's grammar: ``embedded`` (or
    another whole spec of the embedded backend) -> ``"embedded"``; ``hf/<id-or-path>`` -> the id
    or path; a spec of another registered backend (``vllm/...``) is a
    :class:`~scorers.errors.SettingError` naming ``what``; anything else is a Hub id or a local
    folder, as ``hf/`` would name it."""
    spec = str(spec).strip()
    prefix = spec.partition("/")[0]
    if spec in {s for entry in list_backends() for s in entry.specs} or prefix in _BACKENDS:
        name, model = parse_spec(spec)
        if name not in IN_PROCESS:
            forms = [f for f in spec_forms() if f.partition("/")[0] in IN_PROCESS]
            raise SettingError(
                f"{what}: {spec!r} is a {name} spec, and this model runs in this process: give "
                f"{', '.join(repr(f) for f in forms)}, a Hub id or a local folder"
            )
        return "embedded" if name == "embedded" else model
    return spec


def keyword_names(function: Callable[..., Any]) -> set[str]:
    """The names ``function`` takes by keyword (not ``self``/``cls``, nor the model it is
    given): what a backend's ``options`` function lists from its constructor."""
    import inspect

    return {
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in ("self", "cls")
    } - {"model", "name_or_path"}


def _forms_sentence() -> str:
    forms = [f"'{form}'" for form in spec_forms()]
    return "use " + (", ".join(forms[:-1]) + " or " + forms[-1] if len(forms) > 1 else forms[0])


def _function(reference: str) -> Callable[..., Any]:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)
