"""The GEM family (GEM paper §3, App. C): GEM, GEM-raw, GEM-S (abstract), GEM-S (ASSW)."""

from __future__ import annotations

from scorers.domains import DOMAINS
from scorers.metrics.gem.family import (
    GEM_VERSION,
    PREPROCESSOR_ROLE,
    GemMetric,
    GemOptions,
    GemSignature,
    GemSOptions,
)
from scorers.options import MetricOptions, NoOptions
from scorers.pmi import NOT_AVAILABLE, Outcome, Reference, ReferenceTerm, pmi_terms, score_review
from scorers.registry import register_metric_class

__all__ = [
    "GEM_VERSION",
    "NOT_AVAILABLE",
    "GemMetric",
    "GemOptions",
    "GemSOptions",
    "GemSignature",
    "Outcome",
    "Reference",
    "ReferenceTerm",
    "pmi_terms",
    "score_review",
]

_SOURCE = "GEM paper (Xu, Lu, Schoenebeck & Kong, ICLR 2025), §3 and App. C.1-C.4"


def _register(
    name: str,
    display: str,
    *,
    preprocess: bool,
    synopsis: str | None,
    options: type[MetricOptions],
    needs: set[str],
    description: str,
    aliases: tuple[str, ...] = (),
    domains: frozenset[str] = frozenset(DOMAINS),
) -> None:
    register_metric_class(
        GemMetric,
        fixed={"preprocess": preprocess, "fixed_synopsis": synopsis},
        name=name,
        display_name=display,
        family="gem",
        higher_is_better=True,
        needs=frozenset({"logprobs", "references", *needs}),
        version=GEM_VERSION,
        empty_candidate="zero",
        options=options,
        roles=(PREPROCESSOR_ROLE,) if preprocess or synopsis == "assw" else (),
        aliases=aliases,
        description=description,
        source=_SOURCE,
        domains=domains,
    )


_register(
    "gem",
    "GEM",
    preprocess=True,
    synopsis=None,
    options=GemOptions,
    needs={"generator"},
    description="mean PMI between the judgment rewrites of the candidate and of each reference",
)
_register(
    "gem_raw",
    "GEM-raw",
    preprocess=False,
    synopsis=None,
    options=NoOptions,
    needs=set(),
    description="GEM on the raw review texts, without the judgment rewrite",
)
_register(
    "gem_s",
    "GEM-S (abstract)",
    preprocess=True,
    synopsis="abstract",
    options=GemSOptions,
    needs={"generator", "abstract"},
    description="GEM conditioned on the paper's abstract: information beyond the abstract (in "
    "other domains the article or the question)",
    aliases=("gem_s_abstract",),
    domains=frozenset(d for d in DOMAINS if DOMAINS[d].synopsis),
)
_register(
    "gem_s_assw",
    "GEM-S (ASSW)",
    preprocess=True,
    synopsis="assw",
    options=GemOptions,
    needs={"generator", "abstract", "paper_text"},
    description="GEM conditioned on the abstract and the author-stated strengths and weaknesses",
    domains=frozenset({"peer_review"}),
)
