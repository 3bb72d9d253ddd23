"""E of the Scoring Rules design space: the sample-level scores of Tab. 1 with several references
(Scoring Rules paper §4.2, Tab. 1, App. B.2, App. C Eq. 7).

With positive references R⁺ (reviews of the same paper) and negative references R⁻ (reviews of
other papers), a sample's score is ``mean_{y∈R⁺} A⁺(x, y) − mean_{y∈R⁻} A⁻(x, y)``:

- **direct** (density-ratio) estimation, joint form (default): ``A⁺ = f(r)/r``, no negative term
  (KL: ``log r``, i.e. GEM's PMI; TV: ``½|1 − 1/r|``). Product form (``tv_direct_form="product"``
  in the metric; here :func:`direct_product`): ``A⁻ = f(r)`` averaged over the negatives, no
  positive term. The TV direct score is not monotone in r: r = 1/8 scores 3.5, r = 8 scores 0.4375
  (the Scoring Rules paper's §3); it is implemented as the paper defines it, a documented poor cell;
- **f-variational** estimation: ``A⁺ = T*(r)`` and ``A⁻ = f*(T*(r))`` (KL gives NWJ:
  ``1 + log r⁺ − mean r⁻``; TV: ``½ sign(log r⁺) − mean ½ sign(log r⁻)``). With a fixed critic
  that is not optimal the value is a lower bound;
- **critic** (:func:`variational_from_critic`): the oracle's binary answer is the TV critic itself
  (t ∈ {−½, +½}, f*(t) = t on |t| ≤ ½): ``mean t⁺ − mean t⁻``.

Inputs are log density ratios in nats (a PMI, or k·ln 2 for a 7-point judgment k); every result is
float64 and a non-finite term raises :class:`~.divergences.RatioOverflow` (never clipped).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scorers.metrics.fmi.divergences import FDivergence, RatioOverflow

__all__ = [
    "Estimate",
    "direct",
    "direct_product",
    "f_variational",
    "variational_from_critic",
]


@dataclass(frozen=True)
class Estimate:
    """A sample's score and the per-reference terms behind it."""

    value: float
    positive_terms: tuple[float, ...]
    negative_terms: tuple[float, ...] = ()


def _mean(values: Sequence[float], what: str) -> float:
    if not values:
        raise ValueError(f"{what}: no terms to average")
    total = math.fsum(values)
    mean = total / len(values)
    if not math.isfinite(mean):
        raise RatioOverflow(f"{what}: the mean of {len(values)} terms is not finite")
    return mean


def _need(values: Sequence[float], what: str) -> tuple[float, ...]:
    out = tuple(float(v) for v in values)
    if not out:
        raise ValueError(f"{what} needs at least one reference")
    return out


def direct(f: FDivergence, log_r_positive: Sequence[float]) -> Estimate:
    """Direct estimation, joint form: the mean of ``f(r)/r`` over the positive references."""
    log_r = _need(log_r_positive, "direct estimation")
    terms = tuple(f.direct_term(v) for v in log_r)
    return Estimate(_mean(terms, f"{f.name} direct"), terms)


def direct_product(f: FDivergence, log_r_negative: Sequence[float]) -> Estimate:
    """Direct estimation, product form: the mean of ``f(r)`` over the negative references
    (Tab. 1's ``½|r(x, y⁻) − 1|`` for TV)."""
    log_r = _need(log_r_negative, "direct estimation (product form)")
    terms = tuple(f.product_term(v) for v in log_r)
    return Estimate(_mean(terms, f"{f.name} direct (product form)"), (), terms)


def f_variational(
    f: FDivergence, log_r_positive: Sequence[float], log_r_negative: Sequence[float]
) -> Estimate:
    """f-variational estimation with the optimal critic of the estimated ratio:
    ``mean T*(r⁺) − mean f*(T*(r⁻))`` (Eq. 7)."""
    positive = _need(log_r_positive, "f-variational estimation (positives)")
    negative = _need(log_r_negative, "f-variational estimation (negatives)")
    plus = tuple(f.critic(v) for v in positive)
    minus = tuple(f.conjugate_at_critic(v) for v in negative)
    value = _mean(plus, f"{f.name} critic") - _mean(minus, f"{f.name} conjugate")
    if not math.isfinite(value):
        raise RatioOverflow(f"{f.name} f-variational score is not finite")
    return Estimate(value, plus, minus)


def variational_from_critic(
    critic_positive: Sequence[float], critic_negative: Sequence[float]
) -> Estimate:
    """The TV f-variational score from critic values given directly (the LLM oracle's binary
    answers mapped to ±½, or their means over statements): ``mean t⁺ − mean t⁻``. Each value
    must lie in [−½, ½] (the TV constraint ‖T‖∞ ≤ ½)."""
    plus = _need(critic_positive, "the TV critic (positives)")
    minus = _need(critic_negative, "the TV critic (negatives)")
    for t in (*plus, *minus):
        if not -0.5 <= t <= 0.5:
            raise ValueError(f"a TV critic value must lie in [-0.5, 0.5], got {t}")
    return Estimate(_mean(plus, "TV critic") - _mean(minus, "TV critic"), plus, minus)
