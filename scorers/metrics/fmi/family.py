"""The Scoring Rules design space as metrics: one cell S = (F, E, R, Π) per registered metric
(Scoring Rules paper §4, Tab. 1, Tab. 9, App. C, App. D.1).

- F (:mod:`.divergences`): ``divergence`` option, any of the five f-divergences of Tab. 8 for the
  f-variational cells; KL or TV for the direct cells (as in the paper).
- E (:mod:`.estimators`): ``direct`` or ``fvar``; Eq. 7 over the item's positive references
  (``Item.references``) and, for ``fvar``, its negative references (``Item.negatives``: reviews
  of other papers, drawn once per paper by :mod:`scorers.data.negatives`).
- R and Π: ``token`` with autoregression (the evaluation LM's PMI between judgment rewrites, the
  GEM family's own computation: ``log r̂ = PMI``), ``report`` or ``statement`` with the LLM oracle
  (model role ``oracle``, else the evaluation LM; the binary questions in :mod:`.oracle`, the
  7-point question shared with GPPM in :mod:`scorers.oracle`). The likelihood-style oracle
  (GPPM's 7-point judgment, ``log r̂ = k ln 2``) serves every cell except TV f-variational, where
  the oracle's binary answer is the critic itself (±½): "same item?" at report level (TVD-MI),
  "does the candidate support this statement?" per statement (the paper's new metric).
  Statements (:mod:`.statements`) are the references' App. C.1 judgment lines by default; the
  candidate is always the raw review (App. C).

Options:
    divergence: ``kl`` or ``tv`` (direct cells), or any of ``kl``, ``tv``, ``reverse_kl``,
        ``pearson``, ``hellinger`` (f-variational cells).
    aggregation: how the statements of one reference combine (statement cells, 7-point
        oracle): ``sum`` of their log-ratios in the KL direct cell, which the paper's Tab. 9
        names GPPM-J (GPPM §5.2 sums the judgments: ``log r̂(x, y) = Σ_k k_k ln 2``, the
        log-ratio of the whole reference when its statements are independent given the
        candidate; alias ``gppm_j``), ``mean`` in the KL f-variational and TV direct cells (the
        paper's only stated rule, App. C Eq. 6; a sum would make their ``exp(log r̂)`` terms
        explode as 8^K). The TV f-variational cell (``ctv``) always averages its ±½ critics
        (App. C Eq. 6). The signature's ``aggregation`` says which, with its source.
    statements: ``judgments`` (default) or ``llm`` (statement cells).
    tv_direct_form: ``joint`` (default: ``½|1 − 1/r̂|`` on the positives) or ``product``
        (``½|r̂ − 1|`` on the negatives), TV direct cells.
    dataset_summaries: use stored judgment rewrites instead of rewriting again (token and
        statement cells), as in the GEM family.
    synopsis: ``none`` (default: the 7-point prompt's abstract slot holds the placeholder "Not
        given", the GPPM authors' code spelling; Scoring Rules A6) or ``abstract`` (the GSPPM
        variant; a paper without a real abstract is then unscored), likelihood-oracle cells.
    max_tokens: the most new tokens of one 7-point reply (default 2,000, the GPPM authors'
        limit; likelihood-oracle cells). A reply cut off before its last ``<SCORE=k>`` line is
        unreadable, so a lower limit only bounds what an oracle that never ends costs (a 135M
        model repeats itself to the limit); it is in the signature.

Statements come from judgment rewrites (room by the review's length, as in the GEM family) or an
LLM decomposition; one that stops at its token limit is named in ``generations_at_limit``.

Failure modes (each an unscored result with its reason, never a default value): no usable
positive reference; an f-variational cell without negatives; ``synopsis=abstract`` on a paper
without a real abstract; an oracle reply unreadable twice (quoted); a ratio that overflows
float64 (e.g. NWJ's exp(PMI) above 709 nats); a reference with no statement is left out with its
reason. An unreachable model raises.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from scorers.domains import template
from scorers.errors import Unscored
from scorers.lm.answers import YES_NO_SETTINGS
from scorers.lm.asking import ask_many
from scorers.lm.base import hit_limit
from scorers.metrics.fmi import estimators
from scorers.metrics.fmi.divergences import DIVERGENCES, RatioOverflow, divergence
from scorers.metrics.fmi.oracle import parse_critic, same_item_messages, support_messages
from scorers.metrics.fmi.statements import DECOMPOSE_SETTINGS, claim_lines, decompose_messages
from scorers.options import MetricOptions, SummariesOptions, option
from scorers.oracle import (
    NOT_GIVEN,
    ORACLE_ROLE,
    ORACLE_SETTINGS,
    likelihood_messages,
    log_ratio,
    parse_likelihood,
)
from scorers.per_reference import no_usable_reference
from scorers.registry import Metric, MetricSpec, get_metric
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.text.judgments import (
    REWRITE_BUDGET,
    Preprocessed,
    judgment_statements,
    lines_not_statements,
    rewrite_budget,
    rewrite_reviews,
)
from scorers.types import AT_TOKEN_LIMIT, Item, Result, Review, note_limits

__all__ = [
    "SCORING_RULES_VERSION",
    "ScoringRuleMetric",
    "ScoringRuleSignature",
    "cell_options",
]

SCORING_RULES_VERSION = 3
"""Comparability version of the Scoring Rules family (bump only when its numbers change). 3:
judgment rewrites get room by the review's length (the token and statement cells), the 7-point
prompt's placeholder is the authors' code's "Not given" (was "Not Provided"), and the KL direct
statement cell (GPPM-J) sums its statements (was the mean)."""

AGGREGATIONS = {
    "sum": "sum (GPPM §5.2: the cell Tab. 9 names GPPM-J)",
    "mean": "mean (Scoring Rules App. C, Eq. 6)",
}
"""How a statement cell combines one reference's statements, as its signature records it."""

PREPROCESSOR_ROLE = "preprocessor"

Estimator = Literal["direct", "fvar"]
Representation = Literal["token", "report", "statement"]


def cell_options(
    f: str, estimator: Estimator, representation: Representation, aggregation: str
) -> type[MetricOptions]:
    """The options class of the cell (F, E, R): each cell takes the options that change its
    computation and no others (a binary-critic cell has no 7-point reply, so no ``max_tokens``;
    only TV direct has a product form)."""
    binary = representation != "token" and estimator == "fvar" and f == "tv"
    allowed = ("kl", "tv") if estimator == "direct" else tuple(DIVERGENCES)
    fields: list[tuple[str, Any, Any]] = [
        (
            "divergence",
            Literal[allowed],  # type: ignore[valid-type]
            option(f, "the f-divergence F of the cell"),
        )
    ]
    if representation == "statement":
        fields.append(
            (
                "statements",
                Literal["judgments", "llm"],
                option(
                    "judgments",
                    "`judgments`: a review's statements are the lines of its judgment rewrite; "
                    "`llm`: the preprocessor decomposes it into claims",
                ),
            )
        )
        if not binary:
            fields.append(
                (
                    "aggregation",
                    Literal["mean", "sum"],
                    option(aggregation, "how a reference's statements are combined"),
                )
            )
    if representation != "token" and not binary:
        fields += [
            (
                "synopsis",
                Literal["none", "abstract"],
                option("none", "whether the 7-point oracle also reads the paper's abstract"),
            ),
            (
                "max_tokens",
                int,
                option(
                    ORACLE_SETTINGS.max_new_tokens,
                    "the most new tokens of one 7-point reply",
                    minimum=1,
                ),
            ),
        ]
    if f == "tv" and estimator == "direct":
        fields.append(
            (
                "tv_direct_form",
                Literal["joint", "product"],
                option(
                    "joint",
                    "`joint`: TV direct over the joint form; `product`: against negatives "
                    "(reviews of other papers)",
                ),
            )
        )
    name = f"{f.capitalize()}{estimator.capitalize()}{representation.capitalize()}Options"
    rewrites = representation in ("token", "statement")  # these take dataset_summaries
    base = SummariesOptions if rewrites else MetricOptions
    return dataclasses.make_dataclass(
        name, fields, bases=(base,), frozen=True, namespace={"__module__": __name__}
    )


@dataclass(frozen=True)
class ScoringRuleSignature(Signature):
    """The cell (F, E, R, Π) and everything its number depends on."""

    divergence: str = ""
    estimator: str = ""
    representation: str = ""
    predictor: str = ""
    evaluation_lm: str = ""
    oracle: str = "none"
    preprocessor: str = "none"
    negatives: int = 0
    aggregation: str = "none"
    statements: str = "none"
    rewrite_budget: str = "none"
    """The judgment rewrites' new-token budget (token and statement cells that rewrite)."""
    tv_direct_form: str = "none"
    synopsis: str = "none"
    max_tokens: int = 0
    """The 7-point reply's token limit (likelihood-oracle cells; 0 elsewhere)."""
    prompts: dict[str, str] = field(default_factory=dict)


@dataclass
class _Side:
    """Per-reference quantities of one side (positives or negatives)."""

    values: list[float] = field(default_factory=list)
    terms: list[dict[str, Any]] = field(default_factory=list)


class ScoringRuleMetric(Metric):
    """One (F, E, R, Π) cell (see the module doc)."""

    def __init__(
        self,
        spec: MetricSpec,
        *,
        estimator: Estimator,
        representation: Representation,
        **options: Any,
    ) -> None:
        super().__init__(spec, **options)
        self.estimator = estimator
        self.representation = representation
        name = self.options.divergence
        self.f = divergence(name)
        self.binary_critic = representation != "token" and estimator == "fvar" and name == "tv"
        product_form = getattr(self.options, "tv_direct_form", None) == "product"
        self.uses_negatives = estimator == "fvar" or (
            name == "tv" and estimator == "direct" and product_form
        )

    @property
    def needs(self) -> frozenset[str]:
        """Negatives for the f-variational cells and TV direct in its product form (an
        option); the abstract for ``synopsis=abstract``."""
        needs = set(self.spec.needs) - {"negatives"}
        if self.uses_negatives:
            needs.add("negatives")
        if getattr(self.options, "synopsis", None) == "abstract":
            needs.add("abstract")
        return frozenset(needs)

    # ------------------------------------------------------------------ the cell's quantities

    async def _token_side(
        self, item: Item, resources: Resources, negatives: tuple[Review, ...]
    ) -> tuple[_Side, _Side, dict[str, Any], Signature | None]:
        """log r̂ = PMI for every positive and negative reference, by the GEM family itself."""
        gem = get_metric(
            "gem", dataset_summaries=bool(getattr(self.options, "dataset_summaries", False))
        )
        both = replace(item, references=(*item.references, *negatives))
        result = await gem.ascore(both, resources)
        negative_ids = {r.id for r in negatives}
        positive, negative = _Side(), _Side()
        for term in result.terms:
            side = negative if term["reference_id"] in negative_ids else positive
            side.values.append(float(term["pmi"]))
            side.terms.append(
                {
                    "reference_id": term["reference_id"],
                    "log_ratio": float(term["pmi"]),
                    "conditional": term["conditional"],
                    "marginal": term["marginal"],
                }
            )
        details = {
            "skipped_references": result.details.get("skipped_references", {}),
            "flags": result.details.get("flags", []),
            "logprob_requests": 2 * len(result.terms),
        }
        note_limits(details, result.details.get(AT_TOKEN_LIMIT, {}))
        return positive, negative, details, result.signature

    async def _statements(
        self, references: tuple[Review, ...], resources: Resources, domain: str
    ) -> tuple[dict[str, list[str]], dict[str, str], str, dict[str, int], dict[str, int]]:
        """Each reference's statements (by id), the references left out (id -> why), who
        decomposed them, per reference the non-blank lines of its judgment rewrite that are
        not judgment lines (not "The reviewer ...": a preamble, or a rewrite written as a
        paragraph whose later sentences start "They ..."), which are not statements, and the
        decompositions that stopped at their token limit (what -> limit)."""
        how = getattr(self.options, "statements", "judgments")
        use_summaries = bool(getattr(self.options, "dataset_summaries", False))
        todo = [
            r
            for r in references
            if r.text.strip() and not (how == "judgments" and use_summaries and r.summary)
        ]
        replies: dict[str, str] = {}
        hits: dict[str, int] = {}
        writer = "dataset summaries"
        if todo:  # the generator (perhaps the evaluation LM) is loaded only when needed
            role_generator = resources.generator(PREPROCESSOR_ROLE)
            writer = role_generator.identity
            if how == "judgments":
                rewrites = await rewrite_reviews(
                    role_generator, [r.text for r in todo], domain=domain
                )
                for review, rewrite in zip(todo, rewrites, strict=True):
                    replies[review.id] = rewrite.raw_output
                    if rewrite.hit_limit:
                        hits[f"rewrite of reference {review.id}"] = rewrite_budget(review.text)
            else:
                answers = await role_generator.generate(
                    [decompose_messages(r.text) for r in todo], DECOMPOSE_SETTINGS
                )
                for review, answer in zip(todo, answers, strict=True):
                    replies[review.id] = answer
                    if hit_limit(answer):
                        hits[f"decomposition of reference {review.id}"] = (
                            DECOMPOSE_SETTINGS.max_new_tokens
                        )
        statements: dict[str, list[str]] = {}
        skipped: dict[str, str] = {}
        not_statements: dict[str, int] = {}
        for review in references:
            if not review.text.strip():
                skipped[review.id] = "empty review"
                continue
            if how == "judgments":
                text = replies.get(review.id) or review.summary or ""
                judgments = Preprocessed.from_reply(text, domain=domain).judgments
                found = judgment_statements(judgments, domain=domain)
                if dropped := lines_not_statements(judgments, domain=domain):
                    not_statements[review.id] = dropped
            else:
                found = claim_lines(replies[review.id])
            if found:
                statements[review.id] = found
            else:
                skipped[review.id] = f"its decomposition ({how}) has no statement"
        return statements, skipped, writer, not_statements, hits

    async def _oracle_side(
        self,
        item: Item,
        resources: Resources,
        negatives: tuple[Review, ...],
    ) -> tuple[_Side, _Side, dict[str, Any], str, str]:
        """log r̂ (likelihood oracle) or the critic t (binary oracle) per reference."""
        oracle = resources.generator(ORACLE_ROLE)
        references = (*item.references, *negatives)
        skipped: dict[str, str] = {}
        not_statements: dict[str, int] = {}
        hits: dict[str, int] = {}
        decomposer = "none"
        synopsis = None  # the placeholder
        if getattr(self.options, "synopsis", None) == "abstract":
            if not item.paper.has_abstract:
                reason = f"no abstract ({item.paper.abstract_problem})"
                raise Unscored(reason, details={"synopsis": "none"})
            synopsis = item.paper.abstract
        if self.representation == "statement":
            statements, skipped, decomposer, not_statements, hits = await self._statements(
                references, resources, item.domain
            )
        else:
            statements = {r.id: [r.text] for r in references if r.text.strip()}
            skipped = {r.id: "empty review" for r in references if not r.text.strip()}
        candidate = item.candidate

        async def per_reference(review: Review) -> tuple[float | None, dict[str, Any]]:
            units = statements[review.id]
            if not candidate.strip():  # an empty review reveals nothing; no oracle is asked
                value = -0.5 if self.binary_critic else 0.0
                key = "critic" if self.binary_critic else "log_ratio"
                return value, {
                    "reference_id": review.id,
                    key: value,
                    "statements": len(units),
                    "oracle_calls": 0,
                    "empty_candidate": True,
                }
            if self.binary_critic:
                return await self._critic(oracle, candidate, review.id, units, item.domain)
            return await self._log_ratio(oracle, candidate, review.id, units, synopsis, item.domain)

        usable = [r for r in references if r.id in statements]
        outcomes = await asyncio.gather(*(per_reference(r) for r in usable))
        details = {
            "skipped_references": skipped,
            "oracle_calls": sum(t["oracle_calls"] for _, t in outcomes),
            "flags": [] if candidate.strip() else ["empty_candidate"],
        }
        note_limits(details, hits)
        if not_statements:
            details["lines_not_statements"] = not_statements
        unreadable = [t["reason"] for value, t in outcomes if value is None]
        if unreadable:  # one unreadable answer leaves the item unscored: never a default value
            raise Unscored("; ".join(unreadable), details=details)
        negative_ids = {r.id for r in negatives}
        positive, negative = _Side(), _Side()
        for review, (value, term) in zip(usable, outcomes, strict=True):
            side = negative if review.id in negative_ids else positive
            side.values.append(float(value))
            side.terms.append(term)
        return positive, negative, details, oracle.identity, decomposer

    async def _critic(
        self, oracle: Any, candidate: str, reference: str, units: list[str], domain: str
    ) -> tuple[float | None, dict[str, Any]]:
        """The binary oracle's critic T_Ψ for one reference: the mean of its answers over the
        reference's statements (or its whole text); None with the reason when one answer is
        unreadable."""
        questions = [
            support_messages(candidate, s, domain=domain)
            if self.representation == "statement"
            else same_item_messages(candidate, s, domain=domain)
            for s in units
        ]
        asked = await ask_many(oracle, questions, parse_critic, settings=YES_NO_SETTINGS)
        if asked.failures:
            first = asked.failures[0]
            return None, {
                "reference_id": reference,
                "oracle_calls": asked.calls,
                "reason": f"reference {reference}: unreadable oracle reply: {asked.reasons[first]}",
            }
        critics = [float(v) for v in asked.values if v is not None]
        value = _aggregate(critics, "mean")  # T_Ψ: a mean keeps |T| ≤ ½ (App. C)
        return value, {
            "reference_id": reference,
            "critic": value,
            "answers": critics,
            "statements": len(units),
            "oracle_calls": asked.calls,
        }

    async def _log_ratio(
        self,
        oracle: Any,
        candidate: str,
        reference: str,
        units: list[str],
        synopsis: str | None,
        domain: str,
    ) -> tuple[float | None, dict[str, Any]]:
        """The likelihood oracle's log r̂ for one reference: its 7-point answers, one per
        statement, as log-ratios, aggregated; None with the reason when the reply is
        unreadable."""
        question = likelihood_messages(candidate, units, synopsis=synopsis, domain=domain)
        asked = await ask_many(
            oracle,
            [question],
            lambda reply: parse_likelihood(reply, len(units)),
            settings=replace(ORACLE_SETTINGS, max_new_tokens=self.options.max_tokens),
        )
        [ks] = asked.values
        if ks is None:
            return None, {
                "reference_id": reference,
                "oracle_calls": asked.calls,
                "reason": f"reference {reference}: unreadable oracle reply: {asked.reasons[0]}",
            }
        aggregation = self.options.aggregation if self.representation == "statement" else "mean"
        value = _aggregate([log_ratio(k) for k in ks], aggregation)
        return value, {
            "reference_id": reference,
            "log_ratio": value,
            "scores": list(ks),
            "statements": len(units),
            "oracle_calls": asked.calls,
        }

    # ------------------------------------------------------------------ scoring

    async def compute(self, item: Item, resources: Resources) -> Result:
        negatives = item.negatives if self.uses_negatives else ()
        count = len(negatives)
        signature = self._signature(
            negatives=count, oracle="none", preprocessor="none", domain=item.domain
        )
        if self.uses_negatives and not negatives:
            raise Unscored(
                "no negative references",
                explanation=f"{self.spec.display_name} needs negative references (reviews of "
                "other papers; the tasks draw them with -T negatives=4)",
                signature=signature,
            )
        positive, negative, details, signature = await self._sides(item, resources, negatives)
        terms = [{"side": "positive", **t} for t in positive.terms] + [
            {"side": "negative", **t} for t in negative.terms
        ]
        details["negatives"] = [r.id for r in negatives]
        if not positive.values:
            positives_left_out = {
                k: v
                for k, v in details.get("skipped_references", {}).items()
                if k not in details["negatives"]
            }
            raise Unscored(
                no_usable_reference(positives_left_out), details=details, signature=signature
            )
        if self.uses_negatives and not negative.values:
            raise Unscored(
                "no usable negative reference",
                explanation="unscored: every negative reference was left out "
                f"({details.get('skipped_references')})",
                details=details,
                signature=signature,
            )
        try:
            estimate = self._estimate(positive.values, negative.values)
        except RatioOverflow as overflow:
            raise Unscored(
                f"ratio overflow: {overflow}",
                explanation=f"unscored: {overflow} (a score is never clipped)",
                details=details,
                signature=signature,
                terms=terms,
            ) from overflow
        explanation = (
            f"{self.spec.display_name} = {estimate.value:.4f} from {len(positive.values)} "
            f"positive and {len(negative.values)} negative reference(s)"
        )
        return Result(
            value=estimate.value,
            explanation=explanation,
            terms=terms,
            details=details,
            signature=signature,
        )

    async def _sides(
        self, item: Item, resources: Resources, negatives: tuple[Review, ...]
    ) -> tuple[_Side, _Side, dict[str, Any], ScoringRuleSignature]:
        """The positive and negative references' quantities, the details and the signature of
        who computed them; an item given up on the way is signed with the oracle it asked."""
        count = len(negatives)
        try:
            if self.representation == "token":
                positive, negative, details, gem_signature = await self._token_side(
                    item, resources, negatives
                )
                gem = gem_signature.as_dict() if gem_signature else {}
                signature = self._signature(
                    domain=item.domain,
                    negatives=count,
                    oracle="none",
                    preprocessor=str(gem.get("preprocessor", "none")),
                    evaluation_lm=str(gem.get("evaluation_lm", "")),
                    gem_prompts=gem.get("prompts", {}),
                )
            else:
                positive, negative, details, oracle, decomposer = await self._oracle_side(
                    item, resources, negatives
                )
                signature = self._signature(
                    negatives=count, oracle=oracle, preprocessor=decomposer, domain=item.domain
                )
        except Unscored as unscored:
            unscored.signature = self._signature(
                domain=item.domain,
                negatives=count,
                oracle=resources.generator(ORACLE_ROLE).identity,
                preprocessor="none",
            )
            raise
        return positive, negative, details, signature

    def _estimate(self, positive: list[float], negative: list[float]) -> estimators.Estimate:
        if self.binary_critic:
            return estimators.variational_from_critic(positive, negative)
        if self.estimator == "fvar":
            return estimators.f_variational(self.f, positive, negative)
        if self.uses_negatives:  # TV direct, product form
            return estimators.direct_product(self.f, negative)
        return estimators.direct(self.f, positive)

    def _signature(
        self,
        *,
        negatives: int,
        oracle: str,
        preprocessor: str,
        evaluation_lm: str = "",
        gem_prompts: dict[str, str] | None = None,
        domain: str | None = None,
    ) -> ScoringRuleSignature:
        templates: list[str] = []  # in the domain's wording (its prompt set names them)
        if self.representation != "token":
            if self.binary_critic:
                kind = "support" if self.representation == "statement" else "same_item"
                templates += [f"fmi/{kind}_system", f"fmi/{kind}_user"]
            else:
                templates += ["gppm/judgment_system", "gppm/judgment_user"]
            if self.representation == "statement":
                if getattr(self.options, "statements", "judgments") == "judgments":
                    templates += ["gem/preprocess_system", "gem/preprocess_user"]
            templates = [template(domain, name) for name in templates]
            if (
                self.representation == "statement"
                and getattr(self.options, "statements", None) == "llm"
            ):
                # the generic atomic-claim prompt says nothing of a domain: one for all
                templates += ["fmi/decompose_system", "fmi/decompose_user"]
        hashes = {**prompt_hashes(templates), **(gem_prompts or {})}
        statement_cell = self.representation == "statement"
        likelihood = self.representation != "token" and not self.binary_critic
        aggregation = "none"
        if statement_cell:
            aggregation = AGGREGATIONS[getattr(self.options, "aggregation", "mean")]
        synopsis = "none"
        if likelihood:
            synopsis = (
                "abstract"
                if getattr(self.options, "synopsis", None) == "abstract"
                else f"placeholder {NOT_GIVEN!r}"
            )
        rewrites = self.representation == "token" or (
            statement_cell and getattr(self.options, "statements", "judgments") == "judgments"
        )
        return ScoringRuleSignature(
            metric=self.spec.name,
            family="fmi",
            version=SCORING_RULES_VERSION,
            divergence=self.f.name,
            estimator=self.estimator,
            representation=self.representation,
            predictor="autoregressive" if self.representation == "token" else "oracle",
            evaluation_lm=evaluation_lm,
            oracle=oracle,
            preprocessor=preprocessor,
            negatives=negatives,
            aggregation=aggregation,
            statements=str(getattr(self.options, "statements", "judgments"))
            if statement_cell
            else "none",
            rewrite_budget=REWRITE_BUDGET if rewrites else "none",
            tv_direct_form=str(getattr(self.options, "tv_direct_form", "joint"))
            if self.f.name == "tv" and self.estimator == "direct"
            else "none",
            synopsis=synopsis,
            max_tokens=int(getattr(self.options, "max_tokens", 0)),
            prompts=hashes,
        )


def _aggregate(values: list[float], how: str) -> float:
    total = math.fsum(values)
    return total if how == "sum" else total / len(values)
