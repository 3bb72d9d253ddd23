"""Inspect metrics: 90% confidence bounds of the mean (the GEM paper's plots use 90% intervals;
Wilson's for a proportion),
paired before/after statistics of the robustness task, and correlation with human grades."""

from __future__ import annotations

import math
from collections.abc import Callable

from inspect_ai.scorer import Metric, SampleScore, metric

from scorers.corpus import bootstrap_interval
from scorers.data.candidates import MEMBERS
from scorers.errors import UnknownMetricError
from scorers.registry import metric_spec
from scorers.types import AT_TOKEN_LIMIT
from scorers.validation import statistics
from scorers.validation.statistics import mean_confidence_interval, proportion_interval

__all__ = [
    "at_token_limit",
    "ci90_lower",
    "ci90_upper",
    "largest_share",
    "mean_paired_difference",
    "paired_p",
    "preference_agreement",
    "rating_spearman",
    "signed_rank_p",
    "smd",
    "smd_ci95_lower",
    "smd_ci95_upper",
    "smd_paired_ci95_lower",
    "smd_paired_ci95_upper",
    "spearman_p",
    "spearman_rho",
    "verdict",
]


def _values(scores: list[SampleScore]) -> list[float]:
    return [float(s.score.as_float()) for s in scores]


def _interval(scores: list[SampleScore], proportion: bool) -> tuple[float, float]:
    values = _values(scores)
    if proportion:
        return proportion_interval(values, level=0.90)
    return mean_confidence_interval(values, level=0.90)


@metric
def ci90_lower(proportion: bool = False) -> Metric:
    """Lower end of the 90% confidence interval of the mean score: Student's t, or for a
    proportion (0/1 values) Wilson's, which stays inside [0, 1]."""

    def compute(scores: list[SampleScore]) -> float:
        return _interval(scores, proportion)[0]

    return compute


@metric
def ci90_upper(proportion: bool = False) -> Metric:
    """Upper end of the 90% confidence interval of the mean score (see :func:`ci90_lower`)."""

    def compute(scores: list[SampleScore]) -> float:
        return _interval(scores, proportion)[1]

    return compute


def at_limit(metadata: dict | None) -> bool:
    """Whether a score's metadata names a generated text that stopped at its token limit (its
    own, or either side's of a paired score)."""
    metadata = metadata or {}
    sides = [metadata, metadata.get("before") or {}, metadata.get("after") or {}]
    return any(isinstance(side, dict) and side.get(AT_TOKEN_LIMIT) for side in sides)


@metric
def at_token_limit() -> Metric:
    """How many scored samples rest on a generated text that stopped at its token limit (a
    judgment rewrite, an ASSW summary, a decomposition, a perturbation...): the sample's
    ``generations_at_limit`` metadata names them. 0 is what a clean run shows."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(at_limit(s.score.metadata) for s in scores))

    return compute


# -- paired (before/after) scores of the robustness task ----------------------------------------


PAIRED_UNIT = "entity"
"""Sample metadata key of the independent unit of the paired statistics: the input a sample is
about (a paper, a question, an article, a hotel; :func:`scorers.data.negatives.entity_of`)."""


def _pairs(scores: list[SampleScore]) -> tuple[list[float], list[float], list[str]]:
    """(before, after, unit) of every sample: each sample is one distinct text (the datasets
    score a text shared by several systems or pairs once), and its unit is the entity it is
    about (a paper, an article, a question, a hotel). Effect sizes and means count the texts;
    the paired intervals and tests count the units (``statistics.Units``), which are
    independent where the texts of one input are not."""
    before, after, units = [], [], []
    for sample in scores:
        value = sample.score.value
        if not isinstance(value, dict):
            raise ValueError("paired metrics need scores with 'before' and 'after' values")
        meta = sample.sample_metadata or {}
        before.append(float(value["before"]))
        after.append(float(value["after"]))
        units.append(str(meta.get(PAIRED_UNIT) or meta.get("paper_id") or sample.sample_id))
    return before, after, units


def _over_pairs(statistic: Callable[[list[float], list[float], list[str]], float]) -> Metric:
    """An Inspect metric computing ``statistic(before, after, units)`` over the samples' pairs
    (:func:`_pairs`): the one way every paired metric below reads its scores."""

    def compute(scores: list[SampleScore]) -> float:
        return float(statistic(*_pairs(scores)))

    return compute


@metric
def smd() -> Metric:
    """Standardised mean difference d = (μ' − μ) / σ_pooled of after vs before (GEM §4.2),
    over the scored texts, each once: on the papers' scale of item standard deviations."""
    return _over_pairs(lambda before, after, _: statistics.smd(before, after))


@metric
def smd_ci95_lower() -> Metric:
    """Lower end of the two-sample 95% interval of the SMD, n counted in units."""
    return _over_pairs(lambda b, a, u: statistics.smd_confidence_interval(b, a, 0.95, u)[0])


@metric
def smd_ci95_upper() -> Metric:
    """Upper end of the 95% confidence interval of the SMD."""
    return _over_pairs(lambda b, a, u: statistics.smd_confidence_interval(b, a, 0.95, u)[1])


@metric
def smd_paired_ci95_lower() -> Metric:
    """Lower end of the papers' paired 95% interval of the SMD (mean paired difference ± t·SE,
    over σ_pooled; GEM paper App. A.1), the standard error from the units."""
    return _over_pairs(lambda b, a, u: statistics.smd_paired_confidence_interval(b, a, 0.95, u)[0])


@metric
def smd_paired_ci95_upper() -> Metric:
    """Upper end of the papers' paired 95% interval of the SMD."""
    return _over_pairs(lambda b, a, u: statistics.smd_paired_confidence_interval(b, a, 0.95, u)[1])


@metric
def mean_paired_difference() -> Metric:
    """Mean of after − before over the scored texts."""
    return _over_pairs(lambda before, after, _: statistics.mean_difference(before, after))


@metric
def paired_p(alternative: str = "less") -> Metric:
    """One-sided paired t-test p-value over the units: ``less`` tests a decrease, ``greater`` an
    increase."""
    return _over_pairs(lambda b, a, u: statistics.paired_t_test(b, a, alternative, u)[1])


@metric
def largest_share() -> Metric:
    """Share of the spread of the paired differences carried by the most extreme pair
    (``statistics.largest_difference_share``): at 0.5 or more, one paper decides the t-test."""
    return _over_pairs(statistics.largest_difference_share)


@metric
def signed_rank_p(alternative: str = "less") -> Metric:
    """One-sided Wilcoxon signed-rank p-value in the direction of ``paired_p``: a rank test that
    one extreme pair cannot decide (read it where ``largest_share`` is 0.5 or more)."""
    return _over_pairs(lambda b, a, u: statistics.signed_rank_test(b, a, alternative, u)[1])


@metric
def verdict(expected: str = "decrease", alpha: float = 0.05) -> Metric:
    """1.0 when the metric behaves as it should, else 0.0: for a degradation (``decrease``) a
    significant decrease (one-sided p < alpha); for a manipulation (``no_increase``) no
    significant increase."""
    if expected not in ("decrease", "no_increase"):
        raise ValueError(f"expected must be 'decrease' or 'no_increase', got {expected!r}")
    direction = "less" if expected == "decrease" else "greater"
    significant = 1.0 if expected == "decrease" else 0.0

    def behaves(before: list[float], after: list[float], units: list[str]) -> float:
        p = statistics.paired_t_test(before, after, direction, units)[1]
        return significant if p < alpha else 1.0 - significant

    return _over_pairs(behaves)


# -- human-grade correlation ----------------------------------------------------------------------


def _grades(scores: list[SampleScore]) -> tuple[list[float], list[float]]:
    values, grades = [], []
    for sample in scores:
        grade = (sample.sample_metadata or {}).get("grade")
        if grade is None:
            raise ValueError(f"sample {sample.sample_id!r} has no 'grade' in its metadata")
        values.append(float(sample.score.as_float()))
        grades.append(float(grade))
    return values, grades


@metric
def spearman_rho() -> Metric:
    """Spearman's ρ between the scores and the human quality grades."""

    def compute(scores: list[SampleScore]) -> float:
        return statistics.spearman(*_grades(scores))[0]

    return compute


@metric
def spearman_p() -> Metric:
    """Two-sided p-value of Spearman's ρ."""

    def compute(scores: list[SampleScore]) -> float:
        return statistics.spearman(*_grades(scores))[1]

    return compute


@metric
def rating_spearman() -> Metric:
    """Spearman's ρ between the scores and the candidates' human ratings (the sample metadata's
    ``ratings``): first its headline, the mean of the per-dimension ρ
    (``rho_mean_of_dimensions``: the Scoring Rules paper's Table 3 SummEval column, "the mean
    over all dimensions"), then ρ with the mean rating (``rho_mean_rating``) and ρ per rating
    dimension (``rho_<dimension>``). Unscored samples are left out; a dimension with fewer than
    three rated, scored samples is not reported."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = []
        for sample in scores:
            ratings = (sample.sample_metadata or {}).get("ratings")
            if not ratings:
                raise ValueError(f"sample {sample.sample_id!r} has no 'ratings' in its metadata")
            value = sample.score.as_float()
            if math.isfinite(value):
                rows.append((value, ratings))
        per_dimension: dict[str, float] = {}
        dimensions = sorted({d for _, ratings in rows for d in ratings})
        for dimension in dimensions:
            pairs = [(v, r[dimension]) for v, r in rows if dimension in r]
            if len(pairs) >= 3:
                rho = statistics.spearman(*zip(*pairs, strict=True))[0]
                per_dimension[f"rho_{dimension}"] = rho
        out: dict[str, float] = {}
        finite = [v for v in per_dimension.values() if math.isfinite(v)]
        if finite:
            out["rho_mean_of_dimensions"] = sum(finite) / len(finite)
        full = [(v, sum(r.values()) / len(r)) for v, r in rows if set(r) == set(dimensions)]
        if len(full) >= 3:
            out["rho_mean_rating"] = statistics.spearman(*zip(*full, strict=True))[0]
        return {**out, **per_dimension}

    return compute


PREFERENCE = "preferred"
"""The rating dimension of a pairwise human preference (LFQA-E's converter): 1 for the answer
the annotator preferred, 0 for the other."""


def _direction(scorer: str | None) -> float:
    """+1 when higher scores are better for the scorer's metric (the registry's word; an
    unregistered name: higher), -1 when lower ones are."""
    try:
        return 1.0 if metric_spec(str(scorer)).higher_is_better else -1.0
    except UnknownMetricError:
        return 1.0


def _preference_places(scores: list[SampleScore]) -> dict[str, list[tuple[float, float, str]]]:
    """Each compared pair (its record) -> its two places as (the human's rating of that answer,
    the metric's score, the question it is about): from every sample's
    :data:`~scorers.data.candidates.MEMBERS` (one text scored once, in every pair it is in),
    else from the sample itself (one sample per answer of a pair)."""
    by_pair: dict[str, list[tuple[float, float, str]]] = {}
    for sample in scores:
        meta = sample.sample_metadata or {}
        value = float(sample.score.as_float())
        unit = str(meta.get("entity") or meta.get("paper_id") or sample.sample_id)
        places = meta.get(MEMBERS) or [
            {"record": meta.get("paper_id") or sample.sample_id, "ratings": meta.get("ratings")}
        ]
        for place in places:
            ratings = place.get("ratings") or {}
            if PREFERENCE not in ratings:
                raise ValueError(f"sample {sample.sample_id!r} has no '{PREFERENCE}' rating")
            by_pair.setdefault(str(place["record"]), []).append(
                (float(ratings[PREFERENCE]), value, unit)
            )
    return by_pair


@metric
def preference_agreement() -> Metric:
    """How a metric orders the human preference pairs (one record per compared pair, each answer
    scored once however many pairs it is in), in two readings, each with its 95% percentile
    interval over 2,000 bootstrap resamples of the questions (the independent unit: a
    question's pairs share its answers and its reference):

    - ``preference_agreement`` (the headline, this project's): over the pairs the annotator
      ordered, 1 when the preferred answer scores better, 1/2 for a tie of scores, 0 otherwise;
      a pair the annotator judged a tie orders nothing (counted in ``preference_ties``);
    - ``preference_accuracy`` (LFQA-E's published accuracy): over every pair, the annotator's
      ties (``same``) included, 1 when the metric's order states the label (a tie of scores
      states ``same``), else 0.

    ``preference_pairs`` counts the pairs of the first, ``preference_accuracy_pairs`` those of
    the second, ``preference_questions`` the questions. A pair with an unscored side is left out
    of both; a pair with another number of rated answers is an error."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        sign = _direction(scores[0].scorer) if scores else 1.0
        ordered: list[tuple[float, str]] = []
        labelled: list[tuple[float, str]] = []
        ties = 0
        for pair, places in _preference_places(scores).items():
            rated = sorted(r for r, _, _ in places)
            if len(places) != 2 or rated not in ([0.0, 1.0], [0.5, 0.5]):
                if len(places) == 1:  # the other answer was unscored (Inspect leaves it out)
                    continue
                raise ValueError(
                    f"pair {pair!r}: a preference pair needs two answers rated 1 and 0 (or 1/2 "
                    f"and 1/2, a tie), got {rated}"
                )
            (r_a, v_a, unit), (r_b, v_b, _) = places
            if not (math.isfinite(v_a) and math.isfinite(v_b)):
                continue
            a, b = sign * v_a, sign * v_b
            said = "same" if a == b else "a" if a > b else "b"
            label = "same" if r_a == r_b else "a" if r_a > r_b else "b"
            labelled.append((1.0 if said == label else 0.0, unit))
            if label == "same":
                ties += 1
                continue
            preferred, other = (a, b) if label == "a" else (b, a)
            ordered.append((1.0 if preferred > other else 0.5 if preferred == other else 0.0, unit))

        def share(rows: list[tuple[float, str]]) -> tuple[float, float, float]:
            if not rows:
                return math.nan, math.nan, math.nan
            values = [[v] for v, _ in rows]
            low, high = bootstrap_interval(
                lambda r: float(r[:, 0].mean()), values, items=[u for _, u in rows]
            )
            return sum(v for v, _ in rows) / len(rows), low, high

        agreement, a_low, a_high = share(ordered)
        accuracy, c_low, c_high = share(labelled)
        return {
            "preference_agreement": agreement,
            "preference_agreement_ci95_lower": a_low,
            "preference_agreement_ci95_upper": a_high,
            "preference_pairs": float(len(ordered)),
            "preference_ties": float(ties),
            "preference_accuracy": accuracy,
            "preference_accuracy_ci95_lower": c_low,
            "preference_accuracy_ci95_upper": c_high,
            "preference_accuracy_pairs": float(len(labelled)),
            "preference_questions": float(len({u for _, u in labelled})),
        }

    return compute
