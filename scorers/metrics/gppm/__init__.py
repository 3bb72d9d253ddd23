"""GPPM and GSPPM (Lu, Xu, Zhang, Kong & Schoenebeck, "Eliciting Informative Text Evaluations with
Large Language Models", §4-5, App. D): a review is paid by how well it predicts a peer's review.

- ``gppm_token`` / ``gsppm_token`` (TOKEN-PREPROCESS, §5.1, App. D.2): the evaluation LM's summed
  log-probability of the reference's judgment rewrite after the candidate's,
  ``log P(ŷ | x̂, θ)``, with θ the placeholder "Not given" (GPPM; the authors' code spelling, an
  option, recorded in the signature) or the paper's abstract (GSPPM). The conditional term alone,
  as the paper defines the mechanism; the marginal and the PMI (= GEM / GEM-S) are kept in the
  terms. Computed by the GEM family itself (its rewrite, request builder and cache), with the
  synopsis slot holding θ; so ``gppm_token − gem = marginal`` per reference, exactly.
- ``gppm_judgment`` / ``gsppm_judgment`` (JUDGMENT, §5.2, App. D.3): an LLM (model role
  ``oracle``, else the evaluation LM) reads the candidate's judgments and the reference's judgment
  lines, numbered, and gives each a score in −3..3 (a log2 likelihood ratio); the scores are
  summed, in bits, with the GPPM authors' own line parser: a line without a readable score counts
  0 and the numbers of scored and unscored lines go in the terms. One call per reference.

A sample's value is the mean over its references (the paper uses one peer per sample; the
robustness task with ``references=1`` is its K-sample protocol).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from scorers.registry import Metric, MetricSpec, get_metric, register_metric_class
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.text.judgments import Preprocessed
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Result

from ..fmi.oracle import ORACLE_ROLE, gppm_line_scores, likelihood_messages
from ..fmi.statements import judgment_statements

__all__ = ["GPPM_PLACEHOLDER", "GPPM_VERSION", "GppmJudgment", "GppmSignature", "GppmToken"]

GPPM_VERSION = 1
GPPM_PLACEHOLDER = "Not given"
"""The synopsis slot of GPPM (no abstract): the authors' code spelling (the paper prints "Not
Provided"; GEM's code "Not available")."""

_SOURCE = "GPPM paper (Lu, Xu, Zhang, Kong & Schoenebeck), §4-5, App. D.1-D.3"
JUDGMENT_SETTINGS_TOKENS = 2000


@dataclass(frozen=True)
class GppmSignature(Signature):
    evaluation_lm: str = ""
    preprocessor: str = "none"
    oracle: str = "none"
    synopsis: str = ""
    prompts: dict[str, str] = field(default_factory=dict)


class GppmToken(Metric):
    """TOKEN-PREPROCESS: the mean over references of ``log P(ŷ | x̂, θ)``."""

    def __init__(self, spec: MetricSpec, *, with_abstract: bool, **options: Any) -> None:
        super().__init__(spec, **options)
        self.with_abstract = with_abstract

    async def ascore(self, item: Item, resources: Resources) -> Result:
        synopsis = item.paper.abstract if self.with_abstract else self.options["placeholder"]
        gem_s = get_metric("gem_s", dataset_summaries=bool(self.options["dataset_summaries"]))
        with_synopsis = replace(item, paper=replace(item.paper, abstract=synopsis))
        result = await gem_s.ascore(with_synopsis, resources)
        gem = result.signature.as_dict() if result.signature else {}
        signature = GppmSignature(
            metric=self.name,
            family="gppm",
            version=GPPM_VERSION,
            evaluation_lm=str(gem.get("evaluation_lm", "")),
            preprocessor=str(gem.get("preprocessor", "none")),
            synopsis="abstract" if self.with_abstract else f"placeholder {synopsis!r}",
            prompts=dict(gem.get("prompts", {})),
        )
        if result.value is None:
            return replace(result, signature=signature)
        conditionals = [float(t["conditional"]) for t in result.terms]
        value = sum(conditionals) / len(conditionals)
        return Result(
            value=value,
            explanation=f"mean log P(ŷ | x̂, θ) over {len(conditionals)} reference(s): "
            f"{value:.3f} nats (PMI = {result.value:.3f})",
            terms=result.terms,
            details={**result.details, "pmi": result.value},
            signature=signature,
        )


class GppmJudgment(Metric):
    """JUDGMENT: the summed 7-point scores of the reference's judgments, in bits."""

    def __init__(self, spec: MetricSpec, *, with_abstract: bool, **options: Any) -> None:
        super().__init__(spec, **options)
        self.with_abstract = with_abstract

    async def ascore(self, item: Item, resources: Resources) -> Result:
        from scorers.lm.base import GenerationSettings
        from scorers.text.judgments import PREPROCESS_SETTINGS, preprocess_messages

        use_summaries = bool(self.options["dataset_summaries"])
        preprocessor = resources.generator("preprocessor")
        oracle = resources.generator(ORACLE_ROLE)
        todo: list[tuple[str, str]] = []
        candidate = item.candidate
        candidate_judgments: str | None = None
        if not candidate.strip():
            candidate_judgments = ""
        elif CANDIDATE_IS_JUDGMENTS in item.flags:
            candidate_judgments = candidate
        elif use_summaries and item.candidate_summary:
            candidate_judgments = item.candidate_summary
        else:
            todo.append(("candidate", candidate))
        for review in item.references:
            if review.text.strip() and not (use_summaries and review.summary):
                todo.append((review.id, review.text))
        rewrites: dict[str, str] = {}
        if todo:
            replies = await preprocessor.generate(
                [preprocess_messages(text) for _, text in todo], PREPROCESS_SETTINGS
            )
            rewrites = {
                key: Preprocessed.from_reply(reply).judgments
                for (key, _), reply in zip(todo, replies, strict=True)
            }
        if candidate_judgments is None:
            candidate_judgments = rewrites["candidate"]
        synopsis = item.paper.abstract if self.with_abstract else None
        signature = GppmSignature(
            metric=self.name,
            family="gppm",
            version=GPPM_VERSION,
            preprocessor=preprocessor.identity if todo else "dataset summaries",
            oracle=oracle.identity,
            synopsis="abstract" if self.with_abstract else "placeholder 'Not Provided'",
            prompts=prompt_hashes(
                [
                    "fmi/likelihood_system",
                    "fmi/likelihood_user",
                    "gem/preprocess_system",
                    "gem/preprocess_user",
                ]
            ),
        )
        skipped: dict[str, str] = {}
        asked: list[tuple[str, list[str]]] = []
        for review in item.references:
            if not review.text.strip():
                skipped[review.id] = "empty reference text"
                continue
            lines = judgment_statements(rewrites.get(review.id) or review.summary or "")
            if not lines:
                skipped[review.id] = "its preprocessing produced no judgment lines"
                continue
            asked.append((review.id, lines))
        if not asked:
            return Result.no_usable_reference(skipped, signature=signature)
        has_judgments = bool(judgment_statements(candidate_judgments))
        settings = GenerationSettings(max_new_tokens=JUDGMENT_SETTINGS_TOKENS, temperature=0.0)
        terms: list[dict[str, Any]] = []
        if has_judgments:
            questions = [
                likelihood_messages(candidate_judgments, lines, synopsis=synopsis)
                for _, lines in asked
            ]
            replies = await oracle.generate(questions, settings)
        else:  # an empty candidate reveals nothing: every judgment scores 0, nothing is asked
            replies = [""] * len(asked)
        for (reference_id, lines), reply in zip(asked, replies, strict=True):
            scores = gppm_line_scores(reply)
            found = [s for s in scores if s is not None]
            terms.append(
                {
                    "reference_id": reference_id,
                    "bits": float(sum(found)),
                    "target_judgments": len(lines),
                    "scored_lines": len(found),
                    "unscored_lines": len(scores) - len(found),
                    "oracle_calls": 1 if has_judgments else 0,
                }
            )
        value = sum(t["bits"] for t in terms) / len(terms)
        return Result(
            value=value,
            explanation=f"mean summed 7-point score over {len(terms)} reference(s): "
            f"{value:.2f} bits",
            terms=terms,
            details={
                "skipped_references": skipped,
                "flags": [] if has_judgments else ["empty_candidate"],
                "oracle_calls": sum(t["oracle_calls"] for t in terms),
            },
            signature=signature,
        )


for _name, _class, _with_abstract, _display, _needs in (
    ("gppm_token", GppmToken, False, "GPPM (token)", {"logprobs"}),
    ("gsppm_token", GppmToken, True, "GSPPM (token)", {"logprobs", "abstract"}),
    ("gppm_judgment", GppmJudgment, False, "GPPM (judgment)", set()),
    ("gsppm_judgment", GppmJudgment, True, "GSPPM (judgment)", {"abstract"}),
):
    _defaults: dict[str, Any] = {"dataset_summaries": False}
    if _class is GppmToken and not _with_abstract:
        _defaults["placeholder"] = GPPM_PLACEHOLDER
    register_metric_class(
        _class,
        fixed={"with_abstract": _with_abstract},
        name=_name,
        display_name=_display,
        family="gppm",
        higher_is_better=True,
        needs=frozenset({"references", "generator", *_needs}),
        version=GPPM_VERSION,
        defaults=_defaults,
        roles=("preprocessor",) if _class is GppmToken else ("preprocessor", ORACLE_ROLE),
        description="log P(reference judgments | candidate judgments"
        + (", abstract)" if _with_abstract else ")")
        if _class is GppmToken
        else "summed 7-point likelihood-shift scores of the reference's judgments (bits)",
        source=_SOURCE,
    )
