"""The GPPM and GSPPM metrics' registration: the metrics of
:mod:`scorers.metrics.gppm.family` (what each computes), registered by name."""

from __future__ import annotations

from scorers.domains import DOMAINS, PEER_REVIEW, domains_with
from scorers.metrics.gppm.family import (
    GPPM_PLACEHOLDER,
    GPPM_VERSION,
    JUDGMENT_VERSION,
    SOURCE,
    ClusterOptions,
    GppmCluster,
    GppmJudgment,
    GppmOptions,
    GppmSignature,
    GppmToken,
    GppmTokenOptions,
    JudgmentOptions,
    JudgmentSignature,
)
from scorers.oracle import ORACLE_ROLE
from scorers.registry import register_metric_class

__all__ = [
    "GPPM_PLACEHOLDER",
    "GPPM_VERSION",
    "JUDGMENT_VERSION",
    "ClusterOptions",
    "GppmCluster",
    "GppmJudgment",
    "GppmOptions",
    "GppmSignature",
    "GppmToken",
    "GppmTokenOptions",
    "JudgmentOptions",
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
    options=ClusterOptions,
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
    _options: type[GppmOptions] = GppmOptions
    if _class is GppmToken and not _with_abstract:
        _options = GppmTokenOptions
    if _class is GppmJudgment:
        _options = JudgmentOptions
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
        options=_options,
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
