"""The GEM family as metrics of the registry: GEM, GEM-raw, GEM-S (abstract) and GEM-S (ASSW)
(GEM paper §3, App. C.1-C.4). Everything that decides a GEM number lives here: what is rewritten
into judgments and by whom, when a dataset's stored rewrites stand in, the synopsis, and the
signature; :mod:`scorers.pmi` computes the log-probabilities.

Options:
    dataset_summaries: use the judgment rewrites stored with the data (``Review.summary``, and
        ``Item.candidate_summary`` for the held-out review) instead of rewriting those reviews
        again (GEM, GEM-S). Default False.
    synopsis: ``abstract`` or ``assw`` (``gem_s`` only; ``gem_s_assw`` fixes ``assw``).

Each review's rewrite gets room by its length (``scorers.text.judgments.rewrite_budget``, in the
signature as ``rewrite_budget``); a rewrite or ASSW summary that still stops at its token limit
is named in the result's ``generations_at_limit`` (the value is computed from it as written).

Failure modes: an empty candidate reveals nothing (PMI 0, flagged); an empty, judgment-less or
over-long reference is left out with its reason; with none left, without an abstract GEM-S
needs, or without a synopsis GEM-S (ASSW) needs, the result is unscored with the reason. An
unreachable evaluation LM raises.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from scorers.domains import domain as get_domain
from scorers.domains import template
from scorers.errors import MetricError, Unscored
from scorers.lm.base import hit_limit
from scorers.lm.chat import encode_text
from scorers.lm.threads import run_blocking
from scorers.options import SummariesOptions, option
from scorers.pmi import Reference, score_review
from scorers.registry import Metric, MetricSpec
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.text.judgments import (
    ASSW_SETTINGS,
    REWRITE_BUDGET,
    Preprocessed,
    assw_messages,
    rewrite_budget,
    rewrite_reviews,
)
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Result, note_limits

__all__ = ["GEM_VERSION", "PREPROCESSOR_ROLE", "GemMetric", "GemSignature"]

GEM_VERSION = 2
"""Comparability version of the GEM family (bump only when its numbers change). 2: a review's
judgment rewrite gets room by its length (1: 256 new tokens for every review, which cut 45% of
the GEM authors' own GPT-4o rewrites short)."""

PREPROCESSOR_ROLE = "preprocessor"
"""The model role that writes judgment rewrites and ASSW summaries (else the evaluation LM)."""

Synopsis = Literal["abstract", "assw"]


@dataclass(frozen=True)
class GemOptions(SummariesOptions):
    """GEM's and GEM-S (ASSW)'s options."""


@dataclass(frozen=True)
class GemSOptions(GemOptions):
    """GEM-S's options: also which synopsis conditions the prediction."""

    synopsis: Synopsis = option(
        "abstract",
        "`abstract`: the paper's abstract (in other domains the article or the question); "
        "`assw`: the abstract and the author-stated strengths and weaknesses",
    )


@dataclass(frozen=True)
class GemSignature(Signature):
    """GEM's signature: the evaluation LM (with its precision), who wrote the judgment rewrites,
    the synopsis and the templates rendered."""

    evaluation_lm: str = ""
    preprocessor: str = "none"
    synopsis: str = "none"
    rewrite_budget: str = "none"
    """The new-token budget of a judgment rewrite (``none`` for GEM-raw)."""
    prompts: dict[str, str] = field(default_factory=dict)


class GemMetric(Metric):
    """One of GEM, GEM-raw, GEM-S (abstract or ASSW)."""

    def __init__(
        self,
        spec: MetricSpec,
        *,
        preprocess: bool,
        fixed_synopsis: Synopsis | None,
        synopsis_text: str | None = None,
        **options: Any,
    ) -> None:
        """``synopsis_text`` (GEM-S with ``synopsis=abstract`` only) is a fixed text for the
        synopsis slot instead of the paper's abstract: GPPM's token score puts its placeholder
        there (``scorers.metrics.gppm``). It is not a user option."""
        super().__init__(spec, **options)
        if synopsis_text is not None and not synopsis_text.strip():
            raise MetricError("synopsis_text must not be empty")
        self.synopsis_text = synopsis_text
        synopsis = getattr(self.options, "synopsis", fixed_synopsis)
        self.preprocess = preprocess
        self.synopsis: Synopsis | None = synopsis
        self.metric_name = f"gem_s_{synopsis}" if synopsis == "assw" else spec.name
        self.templates = ["gem/predict_system", "gem/predict_user"]
        if preprocess:
            self.templates += ["gem/preprocess_system", "gem/preprocess_user"]

    async def _rewrite(
        self, item: Item, resources: Resources
    ) -> tuple[Preprocessed | None, list[Reference], str]:
        """The candidate's and the references' judgment rewrites, and who wrote them."""
        use_summaries = bool(getattr(self.options, "dataset_summaries", False))
        candidate = item.candidate
        summary: str | None = None
        if candidate.strip():  # an empty candidate is flagged by the core, never rewritten
            if CANDIDATE_IS_JUDGMENTS in item.flags:
                summary = candidate
            elif use_summaries and item.candidate_summary:
                summary = item.candidate_summary
        todo: list[tuple[str, str]] = []
        if candidate.strip() and summary is None:
            todo.append(("candidate", candidate))
        for review in item.references:
            # an empty reference is never rewritten: the core leaves it out with its reason
            if review.text.strip() and not (use_summaries and review.summary):
                todo.append((review.id, review.text))
        produced: dict[str, Preprocessed] = {}
        writer = "dataset summaries"
        if todo:
            generator = resources.generator(PREPROCESSOR_ROLE)
            rewrites = await rewrite_reviews(
                generator, [text for _, text in todo], domain=item.domain
            )
            produced = {what: rewrite for (what, _), rewrite in zip(todo, rewrites, strict=True)}
            writer = generator.identity + (" (+ dataset summaries)" if use_summaries else "")
        candidate_judgments = (
            Preprocessed.from_reply(summary, domain=item.domain)
            if summary is not None
            else produced.get("candidate")
        )
        references = [
            Reference(
                id=review.id,
                text=review.text,
                preprocessed=None
                if not review.text.strip()
                else produced.get(review.id)
                or Preprocessed.from_reply(review.summary or "", domain=item.domain),
            )
            for review in item.references
        ]
        return candidate_judgments, references, writer

    async def _assw(self, item: Item, resources: Resources) -> tuple[str | None, str, bool]:
        """The paper's ASSW summary (from the data, else written from its text), its source and
        whether the summary a generator wrote stopped at its token limit."""
        if (item.paper.assw or "").strip():
            return item.paper.assw, "dataset", False
        text = item.paper.paper_text or ""
        if not text.strip():  # an empty text is never summarised
            return None, "none", False
        lm = await run_blocking(resources.lm)
        limit = lm.max_length
        if limit is not None:  # leave room for the prompt and the reply in the evaluation LM
            budget = max(256, limit - 1024 - ASSW_SETTINGS.max_new_tokens)
            ids = encode_text(lm.tokenizer, text)
            if len(ids) > budget:
                text = lm.tokenizer.decode(ids[:budget])
        generator = resources.generator(PREPROCESSOR_ROLE)
        [reply] = await generator.generate([assw_messages(text)], ASSW_SETTINGS)
        return reply.strip(), generator.identity, bool(hit_limit(reply))

    async def compute(self, item: Item, resources: Resources) -> Result:
        lm = await run_blocking(resources.lm)
        templates = [template(item.domain, name) for name in self.templates]
        candidate_judgments: Preprocessed | None = None
        references = [Reference(id=r.id, text=r.text) for r in item.references]
        preprocessor: str | None = None
        if self.preprocess:
            candidate_judgments, references, preprocessor = await self._rewrite(item, resources)

        hits: dict[str, int] = {}
        if candidate_judgments is not None and candidate_judgments.hit_limit:
            hits["rewrite of the candidate"] = rewrite_budget(item.candidate)
        for reference in references:
            if reference.preprocessed is not None and reference.preprocessed.hit_limit:
                hits[f"rewrite of reference {reference.id}"] = rewrite_budget(reference.text)

        synopsis_text, synopsis_source = await self._synopsis(
            item, resources, lm.identity, preprocessor, templates, hits
        )

        outcome = await run_blocking(
            score_review,
            lm,
            candidate=item.candidate,
            references=references,
            synopsis=synopsis_text,
            preprocessed_candidate=candidate_judgments,
            preprocess=self.preprocess,
            domain=item.domain,
        )
        details: dict[str, Any] = {
            "skipped_references": dict(outcome.skipped_references),
            "flags": list(outcome.flags),
            "synopsis_source": synopsis_source,
        }
        if self.preprocess:
            details["candidate_judgments"] = (
                candidate_judgments.judgments if candidate_judgments else None
            )
            details["reference_judgments"] = {
                r.id: r.preprocessed.judgments for r in references if r.preprocessed
            }
        terms = [asdict(t) for t in outcome.terms]
        signature = self._signature(lm.identity, preprocessor, templates)
        if outcome.value is None:
            raise Unscored(
                outcome.reason or "",
                explanation=outcome.explanation,
                terms=terms,
                details=note_limits(details, hits),
                signature=signature,
            )
        return Result(
            value=outcome.value,
            reason=outcome.reason,
            explanation=outcome.explanation,
            terms=terms,
            details=details,
            signature=signature,
        ).note_limits(hits)

    async def _synopsis(
        self,
        item: Item,
        resources: Resources,
        evaluation_lm: str,
        preprocessor: str | None,
        templates: list[str],
        hits: dict[str, int],
    ) -> tuple[str | None, str]:
        """The synopsis GEM-S conditions on (None for GEM) and where it came from: the fixed
        text, the abstract, or the abstract and the ASSW summary (whose templates join
        ``templates``, and a summary cut at its token limit joins ``hits``). An item without
        what the synopsis needs is :class:`Unscored`."""
        synopsis_text: str | None = None
        synopsis_source = "none"
        if self.synopsis is not None and self.synopsis_text is not None:
            synopsis_text = self.synopsis_text
            synopsis_source = f"fixed text {self.synopsis_text!r}"
        elif self.synopsis is not None:
            words = get_domain(item.domain)
            if not item.paper.has_abstract:
                what = words.synopsis or "synopsis"
                problem = (item.paper.abstract_problem or "").replace("abstract", what)
                reason = f"no {what} ({problem})"
                raise Unscored(
                    reason,
                    explanation=f"unscored: {self.spec.display_name} conditions on the "
                    f"{words.task_input}'s {what}, and this {words.task_input} has {reason}; it "
                    "would silently be GEM",
                    signature=self._signature(evaluation_lm, preprocessor, templates),
                    details=note_limits({"synopsis_source": "none"}, hits),
                )
            synopsis_text = item.paper.abstract
            synopsis_source = "abstract"
            if self.synopsis == "assw":
                templates += [
                    template(item.domain, "gem/assw_system"),
                    template(item.domain, "gem/assw_user"),
                ]
                assw, source, assw_cut = await self._assw(item, resources)
                if assw_cut:
                    hits["ASSW summary"] = ASSW_SETTINGS.max_new_tokens
                synopsis_source = f"abstract + ASSW ({source})"
                if assw is None:
                    raise Unscored(
                        "no ASSW and no paper text",
                        explanation="GEM-S (ASSW) needs the paper's ASSW summary or its full "
                        "text; this paper has neither",
                        signature=self._signature(evaluation_lm, preprocessor, templates),
                        details=note_limits({"synopsis_source": "none"}, hits),
                    )
                synopsis_text = f"{synopsis_text}\n\n{assw}".strip()
        return synopsis_text, synopsis_source

    def _signature(
        self, evaluation_lm: str, preprocessor: str | None, templates: list[str]
    ) -> GemSignature:
        return GemSignature(
            metric=self.metric_name,
            family="gem",
            version=GEM_VERSION,
            evaluation_lm=evaluation_lm,
            preprocessor=preprocessor or "none",
            synopsis=self.synopsis or "none",
            rewrite_budget=REWRITE_BUDGET if self.preprocess else "none",
            prompts=prompt_hashes(templates),
        )
