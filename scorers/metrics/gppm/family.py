"""GPPM and GSPPM (Lu, Xu, Zhang, Kong & Schoenebeck, "Eliciting Informative Text Evaluations with
Large Language Models", §4-5, App. D): a review is paid by how well it predicts a peer's review.

- ``gppm_token`` / ``gsppm_token`` (TOKEN-PREPROCESS, §5.1, App. D.2): the evaluation LM's summed
  log-probability of the reference's judgment rewrite after the candidate's,
  ``log P(ŷ | x̂, θ)``, with θ the placeholder "Not given" (GPPM; the authors' code spelling, an
  option, recorded in the signature) or the paper's abstract (GSPPM). The conditional term alone,
  as the paper defines the mechanism; the marginal and the PMI (= GEM / GEM-S) are kept in the
  terms. Computed by the GEM family itself (its rewrite, request builder and cache), with the
  synopsis slot holding θ; so ``gppm_token − gem = marginal`` per reference, exactly.
- ``gppm_cluster`` (CLUSTER, App. C; :mod:`.cluster`): judgments are embedded and clustered
  (K-means, 30 clusters) on a dataset of past reports (option ``fit_on``, canonical records;
  their stored judgment summaries, else the preprocessor's rewrites), and a report becomes "has a
  judgment in cluster c"; the score is Σ_c log P(reference has c | candidate has c), in nats,
  from smoothed same-paper pair frequencies. Fit on other papers than those scored (another
  year): a fit set holding the scored papers has seen their reviews.
- ``gppm_judgment`` / ``gsppm_judgment`` (JUDGMENT, §5.2, App. D.3): an LLM (model role
  ``oracle``, else the evaluation LM) reads the candidate's judgments and the reference's judgment
  lines, numbered, and gives each a score in −3..3 (a log2 likelihood ratio); the scores are
  summed, in bits, with the GPPM authors' own line parser: a line without a readable score counts
  0 and the numbers of scored and unscored lines go in the terms. A reply with no readable score
  on any line is not read as 0 bits: it is asked once more (another seed), then the reference is
  left out with the reply quoted (version 2; version 1 scored it 0). One call per reference, of at
  most ``max_tokens`` new tokens (default 2,000, the authors' limit; in the signature): a local
  oracle that rambles after its scored lines can be capped without changing what it scored.

A sample's value is the mean over its references (the paper uses one peer per sample; the
robustness task with ``references=1`` is its K-sample protocol).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from scorers.domains import template
from scorers.errors import MetricError, Unscored
from scorers.lm.asking import ReplyError, ask_many
from scorers.lm.base import GenerationSettings, hit_limit
from scorers.lm.embedding import DEFAULT_EMBEDDER
from scorers.options import SummariesOptions, option
from scorers.oracle import NOT_GIVEN, ORACLE_ROLE, gppm_line_scores, likelihood_messages
from scorers.per_reference import no_usable_reference
from scorers.registry import Metric, MetricSpec, metric_spec
from scorers.resources import Resources
from scorers.signature import Signature, prompt_hashes
from scorers.text.judgments import (
    REWRITE_BUDGET,
    judgment_statements,
    lines_not_statements,
    rewrite_budget,
    rewrite_reviews,
)
from scorers.types import CANDIDATE_IS_JUDGMENTS, Item, Result, note_limits

GPPM_VERSION = 2
"""Token and cluster scores. 2: judgment rewrites get room by the review's length (1: 256 new
tokens for every review)."""
JUDGMENT_VERSION = 3
"""GPPM/GSPPM judgment: version 2 leaves out a reference whose reply has no readable score
(version 1 scored it 0 bits); version 3 fills the synopsis slot with "Not given" as the authors'
code does (2: "Not Provided", as App. D.3 prints it) and rewrites with room by length."""
GPPM_PLACEHOLDER = NOT_GIVEN
"""The synopsis slot of GPPM (no abstract): "Not given", the authors' code spelling for both the
token and the judgment score (``experiments/new_direct.py``; the paper prints "Not Provided";
GEM's code "Not available")."""

SOURCE = "GPPM paper (Lu, Xu, Zhang, Kong & Schoenebeck), §4-5, App. D.1-D.3"
JUDGMENT_SETTINGS_TOKENS = 2000


@dataclass(frozen=True)
class GppmOptions(SummariesOptions):
    """GSPPM (token)'s options, and what every GPPM score takes."""


@dataclass(frozen=True)
class GppmTokenOptions(GppmOptions):
    placeholder: str = option(
        GPPM_PLACEHOLDER, "the text in the synopsis slot, where GPPM gives no abstract"
    )


@dataclass(frozen=True)
class JudgmentOptions(GppmOptions):
    max_tokens: int = option(
        JUDGMENT_SETTINGS_TOKENS, "the most new tokens of one oracle reply", minimum=1
    )


@dataclass(frozen=True)
class ClusterOptions(GppmOptions):
    fit_on: str | Path | None = option(
        None, "canonical records of past reports whose judgments are clustered (required)"
    )
    n_clusters: int = option(30, "the clusters fitted (App. C)", minimum=1)
    seed: int = option(100, "the clustering's random seed")
    embedder: str = option(DEFAULT_EMBEDDER, "the sentence-embedding model of the judgments")


@dataclass(frozen=True)
class GppmSignature(Signature):
    evaluation_lm: str = ""
    preprocessor: str = "none"
    oracle: str = "none"
    synopsis: str = ""
    rewrite_budget: str = "none"
    """The judgment rewrites' new-token budget (``scorers.text.judgments.REWRITE_BUDGET``)."""
    prompts: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgmentSignature(GppmSignature):
    max_tokens: int = 0
    """The most new tokens of one oracle reply."""


class GppmToken(Metric):
    """TOKEN-PREPROCESS: the mean over references of ``log P(ŷ | x̂, θ)``."""

    options: GppmOptions

    def __init__(self, spec: MetricSpec, *, with_abstract: bool, **options: Any) -> None:
        super().__init__(spec, **options)
        self.with_abstract = with_abstract

    async def compute(self, item: Item, resources: Resources) -> Result:
        placeholder = None
        if isinstance(self.options, GppmTokenOptions) and not self.with_abstract:
            placeholder = self.options.placeholder
        # GEM-S with the abstract (GSPPM; a paper without one is unscored there), or with the
        # placeholder in the synopsis slot (GPPM)
        gem_s = metric_spec("gem_s").factory(
            dataset_summaries=self.options.dataset_summaries, synopsis_text=placeholder
        )
        result = await gem_s.ascore(item, resources)
        gem = result.signature.as_dict() if result.signature else {}
        signature = GppmSignature(
            metric=self.name,
            family="gppm",
            version=GPPM_VERSION,
            evaluation_lm=str(gem.get("evaluation_lm", "")),
            preprocessor=str(gem.get("preprocessor", "none")),
            synopsis="abstract" if self.with_abstract else f"placeholder {placeholder!r}",
            rewrite_budget=str(gem.get("rewrite_budget", "none")),
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
            # a conditional and a marginal per reference (the PMI is kept in the metadata)
            details={
                **result.details,
                "pmi": result.value,
                "logprob_requests": 2 * len(conditionals),
            },
            signature=signature,
        )


class _Judgments(NamedTuple):
    candidate: str
    """The candidate's judgment rewrite ("" for an empty candidate)."""
    references: list[tuple[str, list[str]]]
    """Each usable reference's id and judgment lines."""
    skipped: dict[str, str]
    """The references left out: id -> why."""
    writer: str | None
    """Who rewrote (None: no rewrite was needed)."""
    not_statements: dict[str, int]
    """Per usable reference, the non-blank lines of its rewrite that are not judgment lines
    (left out of its judgments; only references with some)."""
    hits: dict[str, int]
    """The rewrites that stopped at their token limit (what -> limit)."""


async def _judgments(item: Item, resources: Resources, *, use_summaries: bool) -> _Judgments:
    """The candidate's judgment rewrite and the references' judgment lines. Stored summaries
    stand in with ``use_summaries``; one batched preprocessor call rewrites the rest (the
    preprocessor, perhaps the evaluation LM, is loaded only then)."""
    todo: list[tuple[str, str]] = []
    candidate: str | None = None
    if not item.candidate.strip():
        candidate = ""
    elif CANDIDATE_IS_JUDGMENTS in item.flags:
        candidate = item.candidate
    elif use_summaries and item.candidate_summary:
        candidate = item.candidate_summary
    else:
        todo.append(("candidate", item.candidate))
    for review in item.references:
        if review.text.strip() and not (use_summaries and review.summary):
            todo.append((review.id, review.text))
    rewrites: dict[str, str] = {}
    hits: dict[str, int] = {}
    writer = None
    if todo:
        preprocessor = resources.generator("preprocessor")
        writer = preprocessor.identity
        done = await rewrite_reviews(preprocessor, [text for _, text in todo], domain=item.domain)
        for (key, text), rewrite in zip(todo, done, strict=True):
            rewrites[key] = rewrite.judgments
            if rewrite.hit_limit:
                what = "the candidate" if key == "candidate" else f"reference {key}"
                hits[f"rewrite of {what}"] = rewrite_budget(text)
    skipped: dict[str, str] = {}
    references: list[tuple[str, list[str]]] = []
    not_statements: dict[str, int] = {}
    for review in item.references:
        if not review.text.strip():
            skipped[review.id] = "empty reference text"
            continue
        judgments = rewrites.get(review.id) or review.summary or ""
        lines = judgment_statements(judgments, domain=item.domain)
        if not lines:
            skipped[review.id] = "its preprocessing produced no judgment lines"
            continue
        references.append((review.id, lines))
        if dropped := lines_not_statements(judgments, domain=item.domain):
            not_statements[review.id] = dropped
    return _Judgments(
        rewrites["candidate"] if candidate is None else candidate,
        references,
        skipped,
        writer,
        not_statements,
        hits,
    )


class GppmJudgment(Metric):
    """JUDGMENT: the summed 7-point scores of the reference's judgments, in bits."""

    options: JudgmentOptions

    def __init__(self, spec: MetricSpec, *, with_abstract: bool, **options: Any) -> None:
        super().__init__(spec, **options)
        self.with_abstract = with_abstract

    async def compute(self, item: Item, resources: Resources) -> Result:
        use_summaries = self.options.dataset_summaries
        oracle = resources.generator(ORACLE_ROLE)

        def signature_by(writer: str | None) -> JudgmentSignature:
            return self._signature(writer, oracle.identity, item.domain)

        if self.with_abstract and not item.paper.has_abstract:
            reason = f"no abstract ({item.paper.abstract_problem})"
            raise Unscored(
                reason,
                explanation=f"unscored: GSPPM conditions on the paper's abstract, and this paper "
                f"has {reason}",
                signature=signature_by(None),
            )
        candidate_judgments, asked, skipped, writer, not_statements, hits = await _judgments(
            item, resources, use_summaries=use_summaries
        )
        synopsis = item.paper.abstract if self.with_abstract else None
        signature = signature_by(writer)
        if not asked:
            raise Unscored(
                no_usable_reference(skipped), details=note_limits({}, hits), signature=signature
            )
        has_judgments = bool(judgment_statements(candidate_judgments, domain=item.domain))
        settings = GenerationSettings(max_new_tokens=self.options.max_tokens, temperature=0.0)
        if has_judgments:  # a reply with no score on any line is asked once more (another seed)
            answers = await ask_many(
                oracle,
                [
                    likelihood_messages(
                        candidate_judgments, lines, synopsis=synopsis, domain=item.domain
                    )
                    for _, lines in asked
                ],
                _line_scores,
                settings=settings,
            )
            line_scores, replies, calls = answers.values, answers.replies, answers.item_calls
        else:  # an empty candidate reveals nothing: every judgment scores 0, nothing is asked
            line_scores, replies, calls = [[]] * len(asked), [""] * len(asked), [0] * len(asked)
        terms, unreadable = _reference_terms(
            asked, line_scores, replies, calls, hits, settings.max_new_tokens
        )
        details = {
            "skipped_references": {**skipped, **unreadable},
            "flags": [] if has_judgments else ["empty_candidate"],
            "oracle_calls": sum(calls),
            **({"lines_not_statements": not_statements} if not_statements else {}),
        }
        if not terms:
            raise Unscored(
                no_usable_reference({**skipped, **unreadable}),
                details=note_limits(details, hits),
                signature=signature,
            )
        value = sum(t["bits"] for t in terms) / len(terms)
        return Result(
            value=value,
            explanation=f"mean summed 7-point score over {len(terms)} reference(s): "
            f"{value:.2f} bits",
            terms=terms,
            details=details,
            signature=signature,
        ).note_limits(hits)

    def _signature(self, writer: str | None, oracle: str, domain: str) -> JudgmentSignature:
        """The signature of a judgment score whose rewrites ``writer`` wrote (None: the
        dataset's summaries) and whose 7-point answers ``oracle`` gave, in ``domain``'s
        wording."""
        return JudgmentSignature(
            metric=self.name,
            family="gppm",
            version=JUDGMENT_VERSION,
            max_tokens=self.options.max_tokens,
            preprocessor=writer or "dataset summaries",
            oracle=oracle,
            synopsis="abstract" if self.with_abstract else f"placeholder {NOT_GIVEN!r}",
            rewrite_budget=REWRITE_BUDGET,
            prompts=prompt_hashes(  # in the item's domain wording
                [
                    template(domain, name)
                    for name in (
                        "gppm/judgment_system",
                        "gppm/judgment_user",
                        "gem/preprocess_system",
                        "gem/preprocess_user",
                    )
                ]
            ),
        )


def _reference_terms(
    asked: list[tuple[str, list[str]]],
    line_scores: list[list[int | None] | None],
    replies: list[str],
    calls: list[int],
    hits: dict[str, int],
    max_new_tokens: int,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One term per reference whose 7-point reply could be read (its summed bits), and the
    references whose reply could not (id -> why); a reply that hit ``max_new_tokens`` is noted
    in ``hits`` (its last lines may be lost: the authors' parser counts them 0)."""
    terms: list[dict[str, Any]] = []
    unreadable: dict[str, str] = {}
    for (reference_id, lines), scores, reply, n_calls in zip(
        asked, line_scores, replies, calls, strict=True
    ):
        if hit_limit(reply):
            hits[f"oracle reply for reference {reference_id}"] = max_new_tokens
        if scores is None:
            unreadable[reference_id] = (
                f"unreadable oracle reply after {n_calls} call(s): no line with a score "
                f"(SCORE=k, k in -3..3); reply: {reply[:200]!r}"
            )
            continue
        found = [s for s in scores if s is not None]
        terms.append(
            {
                "reference_id": reference_id,
                "bits": float(sum(found)),
                "target_judgments": len(lines),
                "scored_lines": len(found),
                "unscored_lines": len(scores) - len(found),
                "oracle_calls": n_calls,
            }
        )
    return terms, unreadable


def _line_scores(reply: str) -> list[int | None]:
    """The authors' per-line scores of ``reply`` (an unscored line is None, counted 0); a reply
    with a score on no line at all is unreadable (:class:`ReplyError`), not 0 bits."""
    scores = gppm_line_scores(reply)
    if not any(score is not None for score in scores):
        raise ReplyError("no line with a score")
    return scores


@dataclass(frozen=True)
class ClusterSignature(Signature):
    fit_on: str = ""
    """The fit set: its file name and a hash of its content."""
    n_clusters: int = 0
    seed: int = 0
    embedder: str = ""
    preprocessor: str = "none"
    rewrite_budget: str = "none"
    prompts: dict[str, str] = field(default_factory=dict)


_fitted: dict[tuple, Any] = {}
"""Fitted cluster models by (fit_on, n_clusters, seed, embedder), shared in the process."""
_fitting: dict[tuple, asyncio.Task] = {}
"""Fits under way, by (key, event loop): the samples scored concurrently await one fit."""


class GppmCluster(Metric):
    """CLUSTER (App. C): Σ_c log P(reference's cluster indicator | candidate's)."""

    options: ClusterOptions

    def __init__(self, spec: MetricSpec, **options: Any) -> None:
        super().__init__(spec, **options)
        if not self.options.fit_on:
            raise MetricError(
                "gppm_cluster needs fit_on: canonical records of past reports to cluster (e.g. "
                "-S fit_on=iclr2019.jsonl, or scorer_options={gppm_cluster: {fit_on: ...}})"
            )

    def _key(self) -> tuple:
        o = self.options
        return (str(o.fit_on), o.n_clusters, o.seed, o.embedder)

    async def _model(self, resources: Resources) -> Any:
        """The fitted cluster model and who wrote the fit set's judgments: fitted once per
        process and key; samples that ask while the fit runs wait for that one fit (a failed
        fit is retried by the next sample that asks)."""
        key = self._key()
        if key in _fitted:
            return _fitted[key]
        loop = asyncio.get_running_loop()
        task = _fitting.get((key, loop))
        if task is None:
            task = loop.create_task(self._fit(resources, key))
            _fitting[(key, loop)] = task
            task.add_done_callback(lambda _: _fitting.pop((key, loop), None))
        fitted = await asyncio.shield(task)
        _fitted[key] = fitted
        return fitted

    async def _fit(self, resources: Resources, key: tuple) -> tuple[Any, str]:
        from scorers.data.records import load_records
        from scorers.lm.loading import file_fingerprint
        from scorers.lm.threads import run_blocking
        from scorers.metrics.gppm.cluster import fit_cluster_model

        records = await run_blocking(load_records, key[0])
        path = Path(key[0])
        source = f"{path.name}:{file_fingerprint(path)}" if path.is_file() else key[0]
        todo = [r.text for p in records for r in p.reviews if r.text.strip() and not r.summary]
        rewritten: dict[str, str] = {}
        writer = "dataset summaries"
        at_limit = 0
        if todo:
            preprocessor = resources.generator("preprocessor")
            done = await rewrite_reviews(preprocessor, todo)
            rewritten = {text: rewrite.judgments for text, rewrite in zip(todo, done, strict=True)}
            at_limit = sum(bool(rewrite.hit_limit) for rewrite in done)
            writer = preprocessor.identity
        reports = [
            [
                judgment_statements(r.summary or rewritten.get(r.text, ""))
                for r in paper.reviews
                if r.text.strip()
            ]
            for paper in records
        ]
        embedder = resources.embedder(key[3])
        model = await run_blocking(
            fit_cluster_model,
            reports,
            embedder.encode,
            embedder=embedder.identity,
            source=source,
            n_clusters=key[1],
            seed=key[2],
        )
        return model, writer, at_limit

    async def compute(self, item: Item, resources: Resources) -> Result:
        from scorers.lm.threads import run_blocking

        model, fit_writer, fit_at_limit = await self._model(resources)
        use_summaries = self.options.dataset_summaries
        candidate_judgments, references, skipped, writer, not_statements, hits = await _judgments(
            item, resources, use_summaries=use_summaries
        )
        signature = ClusterSignature(
            metric=self.name,
            family="gppm",
            version=GPPM_VERSION,
            fit_on=model.source,
            n_clusters=model.n_clusters,
            seed=self.options.seed,
            embedder=model.embedder,
            preprocessor=writer or fit_writer,
            rewrite_budget=REWRITE_BUDGET,
            prompts=prompt_hashes(["gem/preprocess_system", "gem/preprocess_user"]),
        )
        if not references:
            raise Unscored(
                no_usable_reference(skipped), details=note_limits({}, hits), signature=signature
            )
        embedder = resources.embedder(self.options.embedder)
        candidate_lines = judgment_statements(candidate_judgments)
        if dropped := lines_not_statements(candidate_judgments):
            not_statements = {"candidate": dropped, **not_statements}
        texts = candidate_lines + [line for _, lines in references for line in lines]
        embeddings = await run_blocking(embedder.encode, texts)
        candidate_vector = model.vector(embeddings[: len(candidate_lines)])
        terms = []
        start = len(candidate_lines)
        for reference_id, lines in references:
            vector = model.vector(embeddings[start : start + len(lines)])
            start += len(lines)
            terms.append(
                {
                    "reference_id": reference_id,
                    "score": model.table.score(candidate_vector, vector),
                    "clusters": [c for c, present in enumerate(vector) if present],
                }
            )
        value = sum(t["score"] for t in terms) / len(terms)
        return Result(
            value=value,
            explanation=f"mean Σ_c log P(reference cluster | candidate cluster) over "
            f"{len(terms)} reference(s): {value:.3f} nats",
            terms=terms,
            details={
                "skipped_references": skipped,
                "candidate_clusters": [c for c, present in enumerate(candidate_vector) if present],
                "fit_judgments": model.judgments,
                "fit_pairs": model.table.pairs,
                # the fit set's rewrites (by the preprocessor) that stopped at their limit
                "fit_rewrites_at_limit": fit_at_limit,
                # an empty review has a judgment in no cluster: scored as such, and said
                "flags": [] if item.candidate.strip() else ["empty_candidate"],
                **({"lines_not_statements": not_statements} if not_statements else {}),
            },
            signature=signature,
        ).note_limits(hits)
