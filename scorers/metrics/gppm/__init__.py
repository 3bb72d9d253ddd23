"""The GPPM and GSPPM metrics' registration: the metrics of
:mod:`scorers.metrics.gppm.family` (what each computes), registered by name."""

from __future__ import annotations

from typing import Any

from scorers.domains import DOMAINS, PEER_REVIEW, domains_with
from scorers.lm.embedding import DEFAULT_EMBEDDER
from scorers.metrics.gppm.family import (
    GPPM_PLACEHOLDER,
    GPPM_VERSION,
    JUDGMENT_SETTINGS_TOKENS,
    JUDGMENT_VERSION,
    SOURCE,
    GppmCluster,
    GppmJudgment,
    GppmSignature,
    GppmToken,
    JudgmentSignature,
)
from scorers.oracle import ORACLE_ROLE
from scorers.registry import register_metric_class

__all__ = [
    "GPPM_PLACEHOLDER",
    "GPPM_VERSION",
    "GppmCluster",
    "GppmJudgment",
    "GppmSignature",
    "GppmToken",
    "JUDGMENT_VERSION",
    "JudgmentSignature",
]


register_metric_class(
    GppmCluster,
    name="gppm_cluster",
    display_name="GPPM (cluster)",
    family="gppm",
    higher_is_better=True,
    needs=frozenset({"references", "generator", "embedder"}),
    version=GPPM_VERSION,
    defaults={
        "fit_on": None,
        "n_clusters": 30,
        "seed": 100,
        "embedder": DEFAULT_EMBEDDER,
        "dataset_summaries": False,
    },
    roles=("preprocessor",),
    empty_candidate="flagged",
    description="Σ_c log P(reference's judgment clusters | candidate's), clusters fit on past "
    "reports (App. C)",
    source=SOURCE,
)


def _judgment_domains(with_abstract: bool) -> frozenset[str]:
    """JUDGMENT asks the 7-point oracle on judgment rewrites: the domains that have both
    prompts; GSPPM's also need a synopsis (the abstract, the article, the question)."""
    found = domains_with("gppm/judgment_system") & domains_with("gem/preprocess_system")
    return frozenset(d for d in found if DOMAINS[d].synopsis or not with_abstract)


for _name, _class, _with_abstract, _display, _needs in (
    ("gppm_token", GppmToken, False, "GPPM (token)", {"logprobs"}),
    ("gsppm_token", GppmToken, True, "GSPPM (token)", {"logprobs", "abstract"}),
    ("gppm_judgment", GppmJudgment, False, "GPPM (judgment)", set()),
    ("gsppm_judgment", GppmJudgment, True, "GSPPM (judgment)", {"abstract"}),
):
    _defaults: dict[str, Any] = {"dataset_summaries": False}
    if _class is GppmToken and not _with_abstract:
        _defaults["placeholder"] = GPPM_PLACEHOLDER
    if _class is GppmJudgment:
        _defaults["max_tokens"] = JUDGMENT_SETTINGS_TOKENS
    register_metric_class(
        _class,
        fixed={"with_abstract": _with_abstract},
        name=_name,
        display_name=_display,
        family="gppm",
        higher_is_better=True,
        needs=frozenset({"references", "generator", *_needs}),
        version=JUDGMENT_VERSION if _class is GppmJudgment else GPPM_VERSION,
        empty_candidate="zero" if _class is GppmJudgment else "flagged",
        defaults=_defaults,
        roles=("preprocessor",) if _class is GppmToken else ("preprocessor", ORACLE_ROLE),
        description="log P(reference judgments | candidate judgments"
        + (", abstract)" if _with_abstract else ")")
        if _class is GppmToken
        else "summed 7-point likelihood-shift scores of the reference's judgments (bits)",
        source=SOURCE,
        domains=_judgment_domains(_with_abstract)
        if _class is GppmJudgment
        else frozenset({PEER_REVIEW}),
    )
