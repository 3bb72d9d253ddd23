"""F of the Scoring Rules design space: the f-divergences, each with its optimal critic T* and the
convex conjugate at that critic f*(T*) (Scoring Rules paper Def. 2.2, §4.1, App. B Tab. 8).

For a density ratio r = P(x, y) / (P(x) P(y)), the f-mutual information is
``I_f = E_{P_X⊗P_Y}[f(r)] = E_{P_XY}[f(r) / r]`` and its variational (Fenchel dual) form is
``I_f = sup_T E_{P_XY}[T] − E_{P_X⊗P_Y}[f*(T)]``, attained at ``T* = f'(r)``. Every function here
takes ``log r`` (a PMI, in nats), works in float64 and raises :class:`RatioOverflow` when a value
is not finite: a score is never clipped.

=============  =============  ==============  ================
f              f(t)           T*(r)           f*(T*(r))
=============  =============  ==============  ================
``tv``         ½|t − 1|       ½ sign(r − 1)   ½ sign(r − 1)
``kl``         t log t        1 + log r       r
``reverse_kl`` −log t         −1/r            −1 + log r
``pearson``    (t − 1)²       2(r − 1)        r² − 1
``hellinger``  (√t − 1)²      1 − 1/√r        √r − 1
=============  =============  ==============  ================

``sign(0) = 0``: at r = 1 exactly the TV critic is 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scorers.errors import GemTasksError

__all__ = ["DIVERGENCES", "FDivergence", "RatioOverflow", "divergence"]


class RatioOverflow(GemTasksError, ArithmeticError):
    """A density-ratio term is not a finite float64 (e.g. exp of a PMI above ~709 nats)."""


def _exp(log_r: float, what: str) -> float:
    try:
        value = math.exp(log_r)
    except OverflowError:
        raise RatioOverflow(
            f"{what}: r = exp({log_r:.6g}) overflows float64 (PMI above ~709.78 nats)"
        ) from None
    return value


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise RatioOverflow(f"{what} is not finite ({value!r})")
    return value


def _sign(x: float) -> float:
    return float((x > 0) - (x < 0))


@dataclass(frozen=True)
class FDivergence:
    """One f-divergence: ``f(t)``, ``critic(log r) = T*(r)`` and
    ``conjugate_at_critic(log r) = f*(T*(r))``."""

    name: str
    display_name: str
    f: Callable[[float], float]
    critic: Callable[[float], float]
    conjugate_at_critic: Callable[[float], float]

    def direct_term(self, log_r: float) -> float:
        """``f(r)/r``, the joint (positive-pair) form of the direct estimator: its mean over
        pairs drawn from P_XY is I_f (for KL, ``log r``; for TV, ``½|1 − 1/r|``)."""
        if self.name == "kl":
            return _finite(float(log_r), "log r")
        if self.name == "tv":  # ½|r − 1|/r = ½|1 − e^{−log r}|
            return _finite(0.5 * abs(1.0 - _exp(-log_r, "TV direct term")), "TV direct term")
        r = _exp(log_r, f"{self.name} direct term")
        if r == 0.0:
            raise RatioOverflow(f"{self.name} direct term: r = exp({log_r:.6g}) underflows to 0")
        return _finite(self.f(r) / r, f"{self.name} direct term")

    def product_term(self, log_r: float) -> float:
        """``f(r)``, the product (negative-pair) form of the direct estimator: its mean over
        pairs drawn from P_X⊗P_Y is I_f."""
        return _finite(self.f(_exp(log_r, f"{self.name} f(r)")), f"{self.name} f(r)")


def _kl_f(t: float) -> float:
    return 0.0 if t == 0.0 else t * math.log(t)


def _reverse_kl_f(t: float) -> float:
    if t <= 0.0:
        raise RatioOverflow("reverse KL: f(t) = −log t at t = 0 is infinite")
    return -math.log(t)


DIVERGENCES: dict[str, FDivergence] = {
    d.name: d
    for d in (
        FDivergence(
            "tv",
            "TV",
            f=lambda t: 0.5 * abs(t - 1.0),
            critic=lambda log_r: 0.5 * _sign(log_r),
            conjugate_at_critic=lambda log_r: 0.5 * _sign(log_r),
        ),
        FDivergence(
            "kl",
            "KL",
            f=_kl_f,
            critic=lambda log_r: _finite(1.0 + log_r, "KL critic"),
            conjugate_at_critic=lambda log_r: _exp(log_r, "KL f*(T*) = r"),
        ),
        FDivergence(
            "reverse_kl",
            "reverse KL",
            f=_reverse_kl_f,
            critic=lambda log_r: -_exp(-log_r, "reverse-KL critic −1/r"),
            conjugate_at_critic=lambda log_r: _finite(-1.0 + log_r, "reverse-KL f*(T*)"),
        ),
        FDivergence(
            "pearson",
            "Pearson χ²",
            f=lambda t: (t - 1.0) ** 2,
            critic=lambda log_r: 2.0 * (_exp(log_r, "Pearson critic") - 1.0),
            conjugate_at_critic=lambda log_r: _finite(
                _exp(log_r, "Pearson f*(T*)") ** 2 - 1.0, "Pearson f*(T*) = r² − 1"
            ),
        ),
        FDivergence(
            "hellinger",
            "squared Hellinger",
            f=lambda t: (math.sqrt(t) - 1.0) ** 2,
            critic=lambda log_r: 1.0 - _exp(-0.5 * log_r, "Hellinger critic"),
            conjugate_at_critic=lambda log_r: _exp(0.5 * log_r, "Hellinger f*(T*)") - 1.0,
        ),
    )
}
"""The five f-divergences of Tab. 8 by name; the paper's experiments use ``kl`` and ``tv``."""


def divergence(name: str) -> FDivergence:
    """The f-divergence ``name`` (a clear error for an unknown one)."""
    if name not in DIVERGENCES:
        raise ValueError(f"unknown f-divergence {name!r}; choose from {list(DIVERGENCES)}")
    return DIVERGENCES[name]
