"""The metric registry: the one seam every metric family plugs into.

A family is one folder of ``scorers/metrics/`` whose ``__init__`` calls :func:`register_metric`
once per metric it offers. The folders are discovered on first use, so tasks, the robustness
pairing, the leaderboard and the report pick a new family up with no other edit.

A metric is an object with ``spec`` (its :class:`MetricSpec`), ``options`` and
``async ascore(item, resources) -> Result``; :meth:`Metric.score` is the plain-Python call::

    from scorers import Item, Paper, Resources, Review, get_metric

    result = get_metric("gem_s").score(item, Resources(evaluation_lm="embedded"))
"""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scorers.errors import MetricError, UnknownMetricError, Unscored
from scorers.options import MetricOptions, NoOptions
from scorers.registries import Registry
from scorers.types import Result

if TYPE_CHECKING:
    from scorers.corpus import CorpusStatistic
    from scorers.resources import Resources
    from scorers.types import Item

__all__ = [
    "CORPUS_STATISTIC",
    "EMPTY_CANDIDATE",
    "METRICS",
    "NEEDS",
    "PER_ITEM_MEAN",
    "Metric",
    "MetricSpec",
    "get_metric",
    "list_metrics",
    "metric_spec",
    "refuse_out_of_domain",
    "register_metric",
    "register_metric_class",
    "resolve_metric_names",
]

NEEDS = frozenset(
    {
        "logprobs",  # teacher-forced log-probabilities of the evaluation LM
        "generator",  # generated text (rewrites, judges): a model role or the evaluation LM
        "embedder",  # a sentence-embedding model
        "negatives",  # reviews of other papers
        "abstract",  # the paper's abstract (a synopsis)
        "paper_text",  # the paper's full text (or its ASSW)
        "paper_content",  # the paper's full text, else its abstract (what a review is read against)
        "references",  # human reference reviews
        "decision",  # the venue's accept/reject decision of the paper
        "rating_scale",  # ratings on a known scale (a record's rating_scale, or its venue's)
    }
)
"""What a family may declare it needs."""

ALL_NAMES_HINT = "`gem-tasks metrics` lists every registered name"
"""Where an error about a metric's name sends the reader."""

EMPTY_CANDIDATE = {
    "zero": "scored 0 (it reveals nothing), flagged empty_candidate",
    "flagged": "scored as the metric defines it for a review with no content, flagged "
    "empty_candidate",
    "unscored": "unscored, with the reason",
}
"""What a metric may give an empty or whitespace-only candidate."""


@dataclass(frozen=True)
class MetricSpec:
    """A registered metric.

    ``factory(**options)`` builds the metric with its ``options`` class
    (:class:`~scorers.options.MetricOptions`) made from the caller's options over the
    defaults; an unknown option or a bad value is a :class:`~scorers.errors.MetricError`
    naming the valid ones. ``roles`` are the
    model roles the metric may generate with (each falls back to the evaluation LM).
    ``version`` is the family's comparability version (see :mod:`scorers.signature`).
    """

    name: str
    display_name: str
    family: str
    higher_is_better: bool
    needs: frozenset[str]
    version: int
    factory: Callable[..., Metric]
    options: type[MetricOptions] = NoOptions
    """The metric's options: a frozen dataclass of typed, documented fields."""
    roles: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    description: str = ""
    source: str = ""
    """Where the metric comes from (paper and section)."""
    empty_candidate: str = ""
    """What an empty or whitespace-only candidate gets (one of :data:`EMPTY_CANDIDATE`): the
    contract test holds every metric to its declaration."""
    headline: CorpusStatistic | None = None
    """The metric's headline number when it is a corpus statistic (balanced accuracy, an AUC, a
    KL divergence of pooled counts: :mod:`scorers.corpus`); None when the headline is the mean
    of the per-item values. Harnesses report the headline first, under its name, and rank by it
    (:attr:`headline_name`)."""
    corpus: Mapping[str, Callable[[list[dict[str, Any]]], float]] = field(default_factory=dict)
    """Further corpus-level numbers of a run, reported beside the headline: name -> function of
    the scored samples' result metadata (:meth:`~scorers.types.Result.metadata`, one dict per
    sample) -> one float (a Wilson interval's end, the share of reviews a detector flags). One
    name means one function in every family."""
    proportion: bool = False
    """Whether each item's value is a 0/1 indicator, so that the headline mean is a proportion
    (decision accuracy, FPR, FNR): its interval is then the Wilson interval
    (:func:`scorers.validation.statistics.proportion_interval`), inside [0, 1], not Student's."""
    domains: frozenset[str] = frozenset({"peer_review"})
    """The judgment domains the metric applies to (:mod:`scorers.domains`): peer review by
    default; a metric whose prompts and reading exist in another domain's wording lists it. A
    task refuses a metric outside its data's domain (:func:`refuse_out_of_domain`)."""

    def __post_init__(self) -> None:
        from scorers.domains import DOMAINS

        if not (isinstance(self.options, type) and issubclass(self.options, MetricOptions)):
            raise MetricError(
                f"metric {self.name!r}: options must be a MetricOptions dataclass, got "
                f"{self.options!r}"
            )
        strange = set(self.domains) - set(DOMAINS)
        if strange or not self.domains:
            raise MetricError(f"metric {self.name!r}: unknown domains {sorted(strange)}")
        object.__setattr__(self, "domains", frozenset(self.domains))
        unknown = set(self.needs) - NEEDS
        if unknown:
            raise MetricError(f"metric {self.name!r}: unknown needs {sorted(unknown)}")
        if self.headline is not None and self.headline.name in self.corpus:
            raise MetricError(
                f"metric {self.name!r}: {self.headline.name!r} is its headline and a further "
                "corpus number"
            )
        if self.proportion and self.headline is not None:
            raise MetricError(
                f"metric {self.name!r}: a proportion's headline is the mean of its indicators"
            )
        if self.empty_candidate not in EMPTY_CANDIDATE:
            raise MetricError(
                f"metric {self.name!r}: empty_candidate must say what an empty review gets, one "
                f"of {sorted(EMPTY_CANDIDATE)}; got {self.empty_candidate!r}"
            )

    @property
    def defaults(self) -> dict[str, Any]:
        """Every option's default (:meth:`MetricOptions.option_defaults`)."""
        return self.options.option_defaults()

    @property
    def headline_name(self) -> str:
        """The name the headline is reported under: ``mean`` for a per-item mean, else the
        corpus statistic's name (``balanced_accuracy``, ``auc``, ``corpus_kl``)."""
        return "mean" if self.headline is None else self.headline.name

    @property
    def headline_kind(self) -> str:
        """``per-item mean`` or ``corpus statistic``."""
        return PER_ITEM_MEAN if self.headline is None else CORPUS_STATISTIC


PER_ITEM_MEAN = "per-item mean"
CORPUS_STATISTIC = "corpus statistic"


class Metric(ABC):
    """Base of every family's metric objects."""

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        self.spec = spec
        self.options: Any = spec.options.build(spec.name, options)
        """The metric's options (its spec's :class:`~scorers.options.MetricOptions` class),
        typed: ``self.options.max_tokens``."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def needs(self) -> frozenset[str]:
        """What this metric, with its options, needs (see :data:`NEEDS`): by default what its
        spec declares; a family whose needs depend on an option says so here."""
        return self.spec.needs

    def models(self) -> tuple[str, ...]:
        """Harness models this metric asks by name, beside its model roles (e.g. the Inspect
        models of a qualified Auto-PRE panel, ``openai/gpt-4o``): a harness binds each one's
        generator in :class:`~scorers.resources.Resources` (:meth:`Resources.bind_model`)."""
        return ()

    def check_settings(self) -> None:
        """Check what this metric's options name that exists outside it (a model, a file)
        before any work, raising :class:`~scorers.errors.SettingError` with one line; nothing by
        default. A family whose options name a model or a file says so here."""
        return None

    def check_dataset(self, identity: Mapping[str, Any] | None) -> None:
        """Check the dataset the run scores (its identity: name, records, content hash,
        :func:`scorers.data.records.dataset_identity`) before any work, raising
        :class:`~scorers.errors.SettingError` with one line; nothing by default. A metric tied to
        one dataset (Auto-PRE's panel, qualified on the dataset it judges) says so here."""
        return None

    @property
    def needs_negatives(self) -> bool:
        """Whether this metric scores against negative references (reviews of other papers):
        the tasks draw them for it."""
        return "negatives" in self.needs

    async def ascore(self, item: Item, resources: Resources) -> Result:
        """Score one item: :meth:`compute`, with an :class:`~scorers.errors.Unscored` it raised
        turned into the unscored result (its reason, explanation, details and signature). Raises
        only for failures of the machinery, e.g. an unreachable server."""
        try:
            return await self.compute(item, resources)
        except Unscored as unscored:
            return Result(
                value=None,
                reason=unscored.reason,
                explanation=unscored.explanation,
                terms=unscored.terms,
                details=unscored.details,
                signature=unscored.signature,
            )

    @abstractmethod
    async def compute(self, item: Item, resources: Resources) -> Result:
        """The family's computation of one item's result. Bad input leaves the item unscored,
        one way only: raise :class:`~scorers.errors.Unscored` with the reason (never a returned
        ``Result(value=None)``)."""

    def score(self, item: Item, resources: Resources) -> Result:
        """:meth:`ascore` from plain (synchronous) Python."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ascore(item, resources))
        raise MetricError("score() was called inside an event loop: await ascore() instead")


METRICS: Registry[MetricSpec] = Registry(
    "metric", error=UnknownMetricError, duplicate=MetricError, hint=ALL_NAMES_HINT, list_known=False
)
"""Every metric by name and alias (filled as the families are discovered: read it through
:func:`metric_spec` and :func:`list_metrics`, which discover them first)."""
_CORPUS: dict[str, object] = {}
_discovered = False
_lock = threading.RLock()


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add ``spec`` to the registry (a family's ``__init__`` calls this once per metric).
    A name or alias registered twice is an error."""
    with _lock:
        numbers: dict[str, object] = dict(spec.corpus)
        if spec.headline is not None:
            numbers[spec.headline.name] = spec.headline
        for key, function in numbers.items():
            if _CORPUS.get(key, function) is not function:
                raise MetricError(
                    f"metric {spec.name!r}: corpus number {key!r} is another family's name for a "
                    "different function"
                )
        METRICS.register(spec.name, spec, aliases=spec.aliases)  # a name twice: MetricError
        _CORPUS.update(numbers)
    return spec


def register_metric_class(
    metric_class: Callable[..., Metric], *, fixed: Mapping[str, Any] | None = None, **fields: Any
) -> MetricSpec:
    """Register a metric whose objects are ``metric_class(spec, **fixed, **options)``; ``fields``
    are the other :class:`MetricSpec` fields. The usual one-line registration of a family."""
    spec: MetricSpec

    def factory(**options: Any) -> Metric:
        return metric_class(spec, **dict(fixed or {}), **options)

    spec = register_metric(MetricSpec(factory=factory, **fields))
    return spec


def _discover() -> None:
    """Import every family folder under ``scorers/metrics`` once."""
    global _discovered
    with _lock:
        if _discovered:
            return
        _discovered = True
        import scorers.metrics as families

        for module in sorted(pkgutil.iter_modules(families.__path__), key=lambda m: m.name):
            if module.ispkg:
                importlib.import_module(f"{families.__name__}.{module.name}")


def metric_spec(name: str) -> MetricSpec:
    """The spec registered under ``name`` or one of its aliases."""
    _discover()
    return METRICS[name]


def get_metric(name: str, **options: Any) -> Metric:
    """A ready metric: ``name`` (or an alias) built with ``options`` over its defaults."""
    spec = metric_spec(name)
    return spec.factory(**options)


def resolve_metric_names(names: str | Sequence[str]) -> list[str]:
    """Registered metric names from ``"a,b"`` or a list (aliases resolved, order kept); an
    unknown name (with the nearest registered one), or none at all, is an
    :class:`~scorers.errors.UnknownMetricError`."""
    wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names)]
    wanted = [n for n in wanted if n]
    out = []
    for name in wanted:
        try:
            out.append(metric_spec(name).name)
        except UnknownMetricError as exc:
            message = str(exc).replace("unknown metric", "unknown scorer", 1)
            raise UnknownMetricError(message) from None
    if not out:
        raise UnknownMetricError(f"no scorer given; {ALL_NAMES_HINT}")
    return out


def refuse_out_of_domain(names: Sequence[str], domain: str, *, where: str) -> None:
    """Raise :class:`MetricError` naming every metric of ``names`` that does not apply to
    ``domain`` (data of one domain scored with another domain's metric would be scored with
    prompts and fields that do not fit it)."""
    wrong = [n for n in names if domain not in metric_spec(n).domains]
    if wrong:
        details = "; ".join(
            f"{n} applies to {', '.join(sorted(metric_spec(n).domains))}" for n in wrong
        )
        raise MetricError(f"{where}: the data is {domain}, and {details}")


def list_metrics() -> list[MetricSpec]:
    """Every registered metric, in registration order of the families (alphabetical folders)."""
    _discover()
    return list(METRICS.values())
