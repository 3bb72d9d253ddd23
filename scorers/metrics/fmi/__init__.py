"""The Scoring Rules design space (Xu, Lu, Wu, Hartline & Schoenebeck, "Scoring Rules! Statistical
and Strategic Alignment for Text Evaluation Metrics", §4, Tab. 9): twelve cells S = (F, E, R, Π),
each a registered metric named ``fmi_<F>_<E>_<R>``, with aliases for the named methods:
``tvd_mi`` (TV, f-variational, report, oracle; Robertson & Koyejo), ``ctv`` (TV,
f-variational, statement, oracle: the paper's new metric, App. C) and ``gppm_j`` (KL, direct,
statement, oracle: the cell Tab. 9 names GPPM-J, so it sums a reference's statement log-ratios as
GPPM §5.2 defines its JUDGMENT score; the paper states no other rule for this cell).
``fmi_kl_direct_token`` is GEM (§7, cell 1): it returns exactly the ``gem`` metric's number."""

from __future__ import annotations

from scorers.domains import DOMAINS, domains_with
from scorers.metrics.fmi.divergences import DIVERGENCES, FDivergence, RatioOverflow, divergence
from scorers.metrics.fmi.estimators import (
    Estimate,
    direct,
    direct_product,
    f_variational,
    variational_from_critic,
)
from scorers.metrics.fmi.family import (
    SCORING_RULES_VERSION,
    ScoringRuleMetric,
    ScoringRuleSignature,
    cell_options,
)
from scorers.registry import register_metric_class

__all__ = [
    "DIVERGENCES",
    "SCORING_RULES_VERSION",
    "Estimate",
    "FDivergence",
    "RatioOverflow",
    "ScoringRuleMetric",
    "ScoringRuleSignature",
    "direct",
    "direct_product",
    "divergence",
    "f_variational",
    "variational_from_critic",
]

_SOURCE = (
    "Scoring Rules paper (Xu, Lu, Wu, Hartline & Schoenebeck), §4, Tab. 1, Tab. 9, App. C, "
    "App. D.1; 7-point oracle prompt: GPPM paper App. D.3"
)
_ESTIMATORS = {"direct": "direct", "fvar": "f-variational"}
_REPRESENTATIONS = {"token": "token, autoregressive", "report": "report, LLM oracle",
                    "statement": "statement, LLM oracle"}  # fmt: skip
_ALIASES = {
    ("tv", "fvar", "report"): ("tvd_mi",),
    ("tv", "fvar", "statement"): ("ctv",),
    ("kl", "direct", "statement"): ("gppm_j",),
}
_NAMED = {
    ("kl", "direct", "statement"): (
        "GPPM-J (KL-direct, statement, LLM oracle; statements summed)",
        "Scoring Rules cell F=KL, E=direct, R=statement, the paper's GPPM-J (Tab. 9): GPPM's "
        "JUDGMENT score (§5.2), the 7-point log-ratios of a reference's judgments summed (in "
        "nats: k ln 2 each)",
    ),
}
_AGGREGATION = {("kl", "direct", "statement"): "sum"}
"""Statement cells whose statements are summed (GPPM-J); the others average (App. C)."""


def _register(
    name: str, f: str, estimator: str, representation: str, *, aggregation: str = "mean",
    display: str | None = None, aliases: tuple[str, ...] = (), description: str = "",
) -> None:  # fmt: skip
    needs = {"references", "generator"}
    if representation == "token":
        needs.add("logprobs")
    if estimator == "fvar":
        # (TV direct in its product form uses negatives too; it is an option, so the tasks draw
        # them for it only when asked: -T negatives=4)
        needs.add("negatives")
    roles = {"token": ("preprocessor",), "report": ("oracle",),
             "statement": ("oracle", "preprocessor")}[representation]  # fmt: skip
    register_metric_class(
        ScoringRuleMetric,
        fixed={"estimator": estimator, "representation": representation},
        name=name,
        display_name=display
        or f"{f.upper()}-{_ESTIMATORS[estimator]} ({_REPRESENTATIONS[representation]})",
        family="fmi",
        higher_is_better=True,
        needs=frozenset(needs),
        version=SCORING_RULES_VERSION,
        empty_candidate="zero",
        options=cell_options(f, estimator, representation, aggregation),
        roles=roles,
        aliases=aliases,
        description=description
        or f"Scoring Rules cell F={f.upper()}, E={_ESTIMATORS[estimator]}, R={representation}",
        source=_SOURCE,
        domains=_domains(f, estimator, representation),
    )


def _domains(f: str, estimator: str, representation: str) -> frozenset[str]:
    """The domains whose prompts the cell asks: every domain for the token cells (GEM's
    prediction prompt has a version in each); for the oracle cells those that have the oracle's
    question (the binary critic or the 7-point scale) and, for statements, the judgment
    rewrite."""
    if representation == "token":
        return frozenset(DOMAINS)
    binary = estimator == "fvar" and f == "tv"
    question = {"report": "fmi/same_item_system", "statement": "fmi/support_system"}
    found = domains_with(question[representation] if binary else "gppm/judgment_system")
    if representation == "statement":
        found &= domains_with("gem/preprocess_system")
    return found


for _representation in ("token", "report", "statement"):
    for _f in ("kl", "tv"):
        for _estimator in ("direct", "fvar"):
            _cell = (_f, _estimator, _representation)
            _display, _description = _NAMED.get(_cell, (None, ""))
            _register(
                f"fmi_{_f}_{_estimator}_{_representation}",
                _f,
                _estimator,
                _representation,
                aggregation=_AGGREGATION.get(_cell, "mean"),
                display=_display,
                description=_description,
                aliases=_ALIASES.get(_cell, ()),
            )
