"""Build a GRE-bench dataset from OpenReview for any ICLR (2018-) or NeurIPS (2021-) year.

The GEM data setup: every submission with its official reviews is listed; withdrawn and
desk-rejected papers are skipped (and counted); each review is normalised into the ICLR 2023
four-section text with the year's form (:mod:`gem_data.openreview.forms`; a review whose
fields fit another year's form better is read with that one), its rating stored on the form's
own scale where the decision metrics know it (every ICLR year; NeurIPS mapped onto the ICLR
2024/25 scale: :func:`~gem_data.openreview.forms.stored_ratings`), with its raw value,
label and scale, the sub-scores and the structured fields; the Beyond Rating quality filters run
if asked for (minimum confidence, then the review count, then the maximum rating variance:
:mod:`gem_data.openreview.filters`); papers with at least ``min_reviews``
surviving reviews are eligible; ``papers`` of them are sampled with ``seed`` and
``reviews_per_paper`` reviews of each (:mod:`gem_data.openreview.sampling`); the paper
text comes from the PDF (:mod:`gem_data.openreview.pdf`). The result is canonical
records as ``records.jsonl`` + ``records.parquet`` and a data card, in one folder
that :func:`scorers.data.records.load_records` reads.

Resumable: the submission listing and each paper's fetched text are cached under
``<out>/cache/`` as soon as they arrive, each written to a temporary file and renamed, so an
interrupted build re-run with the same command fetches only what is missing and never reads a
half-written entry. Failed PDFs are recorded per paper (and kept, without text) rather than
dropped; ``retry_failed`` fetches them again.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from gem_data.files import atomic_write_json, read_json
from gem_data.openreview.client import (
    API_URLS,
    NotesClient,
    api_version_for,
    details_key,
    make_client,
    note_to_dict,
    submission_invitations,
    venue_conference,
    venue_label,
    venue_year,
)
from gem_data.openreview.enrich import Enricher, enrich_records
from gem_data.openreview.errors import RateLimited, Unreachable, VenueNotFound
from gem_data.openreview.filters import BEYOND_RATING_FILTERS, apply_quality_filters
from gem_data.openreview.forms import (
    RATING_SCALES,
    SECTION_HEADERS,
    TARGET_SCALE,
    NormalisedReview,
    ReviewForm,
    detect_form,
    form_for_venue,
    normalise_review,
    stored_ratings,
)
from gem_data.openreview.output import write_dataset
from gem_data.openreview.pdf import PdfError, pdf_to_text, strip_back_matter
from gem_data.openreview.ratelimit import call_with_backoff
from gem_data.openreview.sampling import select_papers, select_reviews
from gem_data.openreview.submissions import (
    ACTIVE,
    DESK_REJECTED,
    WITHDRAWN,
    Submission,
    compact_note,
    parse_submission,
)

__all__ = [
    "BEYOND_RATING_FILTERS",
    "LICENCE_NOTES",
    "BuildConfig",
    "BuildResult",
    "build_dataset",
    "package_version",
]

LISTING_FORMAT = 1

LICENCE_NOTES = (
    "Submissions and reviews are public OpenReview content, fetched without an account through "
    "the public API. API v2 notes state a licence per submission (counted in note_licences); "
    "v1 notes state none, and OpenReview's terms of use apply. Check both before redistributing "
    "this dataset. paper_text is machine-extracted from the authors' PDFs, which stay under "
    "their authors' copyright or licence."
)


@dataclass(frozen=True)
class BuildConfig:
    """What to build (the CLI's ``gem-tasks data build`` options)."""

    venue: str
    out: Path
    min_reviews: int = 3
    reviews_per_paper: int | None = 3
    papers: int | None = None
    seed: int = 0
    pdf: bool = True
    strip_references: bool = False
    api_version: int | None = None
    """1 or 2; None picks by year (API v1 up to 2023)."""
    refresh_listing: bool = False
    """Fetch the submission listing again instead of reusing the cached one."""
    retry_failed: bool = False
    """Fetch again the PDFs that failed in an earlier run."""
    min_confidence: float | None = None
    """Keep only reviews with at least this confidence (before ``min_reviews``); None: off."""
    max_rating_variance: float | None = None
    """Drop papers whose surviving reviews' mapped ratings have a population variance above
    this (after ``min_reviews``; a paper exactly at it is kept); None: off."""
    filter_preset: str | None = None
    """The preset the filter options came from (``beyond-rating``), for the data card only."""

    @classmethod
    def beyond_rating(cls, venue: str, out: Path, **options: Any) -> BuildConfig:
        """A config with the Beyond Rating filters (:data:`BEYOND_RATING_FILTERS`); ``options``
        set the rest and may override them."""
        return cls(
            venue=venue,
            out=out,
            **{**BEYOND_RATING_FILTERS, "filter_preset": "beyond-rating", **options},
        )


@dataclass
class BuildResult:
    """The records written, the data card, the paths of the files, and what this run fetched."""

    records: list[dict[str, Any]]
    card: dict[str, Any]
    paths: dict[str, Path]
    fetched_papers: list[str] = field(default_factory=list)


def package_version() -> str:
    """The installed gem-tasks version ("unknown" from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gem-tasks")
    except PackageNotFoundError:
        return "unknown"


def _safe_name(paper_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", paper_id)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _listing(
    config: BuildConfig,
    api_version: int,
    get_client: Callable[[], NotesClient],
    retry: Callable[..., Any],
    cache: Path,
) -> dict[str, Any]:
    path = cache / "listing.json"
    cached = read_json(path)
    if (
        not config.refresh_listing
        and isinstance(cached, dict)
        and cached.get("format") == LISTING_FORMAT
        and cached.get("venue") == config.venue
        and cached.get("api_version") == api_version
    ):
        return cached
    client = get_client()
    url = API_URLS[api_version]
    tried = []
    for invitation in submission_invitations(config.venue, api_version):
        tried.append(invitation)
        notes = retry(
            lambda inv=invitation: client.get_all_notes(
                invitation=inv, details=details_key(api_version)
            ),
            what=f"listing {invitation} at {url}",
        )
        if notes:
            listing = {
                "format": LISTING_FORMAT,
                "venue": config.venue,
                "api_version": api_version,
                "api_url": url,
                "invitation": invitation,
                "fetched_at": _now(),
                "notes": [compact_note(note_to_dict(n)) for n in notes],
            }
            atomic_write_json(path, listing)
            return listing
    raise VenueNotFound(config.venue, tried, url)


def _fetch_text(
    client: NotesClient, paper: Submission, retry: Callable[..., Any]
) -> dict[str, Any]:
    """The cache entry for one paper's PDF: its text, or why there is none."""
    if paper.pdf is None:
        return {"status": "missing", "error": "the submission has no PDF"}
    try:
        data = retry(lambda: client.get_pdf(paper.id), what=f"PDF of paper {paper.id}")
    except (RateLimited, Unreachable):
        raise  # not the paper's fault: stop, a re-run resumes here
    except Exception as exc:  # the server refused this PDF (404, 403, ...): record it
        return {"status": "failed", "error": f"download failed: {type(exc).__name__}: {exc}"}
    try:
        extracted = pdf_to_text(data)
    except PdfError as exc:
        return {"status": "failed", "error": f"extraction failed: {exc}"}
    return {"status": "ok", "n_pages": extracted.n_pages, "text": extracted.text}


def _cached_text(folder: Path, paper_id: str) -> dict[str, Any] | None:
    entry = read_json(folder / f"{_safe_name(paper_id)}.json")
    if (
        isinstance(entry, dict)
        and entry.get("id") == paper_id
        and isinstance(entry.get("pdf"), dict)
        and entry["pdf"].get("status") in ("ok", "missing", "failed")
    ):
        return entry["pdf"]
    return None


def _paper_texts(
    papers: list[Submission],
    folder: Path,
    get_client: Callable[[], NotesClient],
    retry: Callable[..., Any],
    *,
    retry_failed: bool,
    progress: bool,
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each paper's PDF result, from ``folder`` where cached, else fetched and cached at once
    (write-then-rename); returns the results by paper id and the ids fetched in this call."""
    from tqdm.auto import tqdm

    texts: dict[str, dict[str, Any]] = {}
    todo = []
    for paper in papers:
        cached = _cached_text(folder, paper.id)
        if cached is not None and not (retry_failed and cached["status"] == "failed"):
            texts[paper.id] = cached
        else:
            todo.append(paper)
    for paper in tqdm(todo, desc="papers", unit="paper", disable=not progress):
        result = _fetch_text(get_client(), paper, retry)
        atomic_write_json(
            folder / f"{_safe_name(paper.id)}.json",
            {"id": paper.id, "fetched_at": _now(), "pdf": result},
        )
        texts[paper.id] = result
    return texts, [paper.id for paper in todo]


def _record(
    paper: Submission,
    reviews: list[tuple[str, NormalisedReview]],
    paper_text: str | None,
    venue_id: str,
) -> dict[str, Any]:
    """The canonical record of a paper and its chosen reviews (with the optional paper fields
    decision, decision_raw, conference and year)."""
    scale, ratings = stored_ratings([review for _, review in reviews])
    return {
        "id": paper.id,
        "venue": venue_label(venue_id),
        "rating_scale": scale,  # the form's own values where scorers.scales has the scale
        "title": paper.title,
        "abstract": paper.abstract,
        "paper_text": paper_text,
        "assw": None,
        "decision": paper.decision,
        "decision_raw": paper.decision_raw,
        "conference": venue_conference(venue_id),
        "year": venue_year(venue_id),
        "reviews": [
            {
                "id": review_id,
                "text": review.text,
                "summary": None,
                "rating": rating,
                "confidence": review.confidence,
                **review.extras(),
            }
            for (review_id, review), rating in zip(reviews, ratings, strict=True)
        ],
    }


def _form_card(form: ReviewForm) -> dict[str, Any]:
    return {
        "form": form.name,
        **{
            header: [part.field for part in parts] or "(empty)"
            for header, parts in zip(SECTION_HEADERS, form.sections)
        },
        "rating": list(form.rating) or "(none)",
        "confidence": list(form.confidence) or "(none)",
        "rating_scale": form.rating_scale.name,
        "scores": list(form.scores) or "(none)",
        "fields": {name: source for name, source in form.fields} or "(none)",
        "needs_split": form.needs_split,
    }


def _rating_card(reviews: list[NormalisedReview]) -> dict[str, Any]:
    """Which rating scales the reviews were on, how each maps, and what did not map."""
    used = Counter(r.rating_scale for r in reviews if r.rating_raw is not None)
    tables = {
        scale.name: (
            {f"{raw:g}": mapped for raw, mapped in scale.table.items()}
            if scale.table is not None
            else "kept as is"
        )
        for scale in RATING_SCALES
        if scale.name in used
    }
    return {
        "target_scale": list(TARGET_SCALE),
        "rule": "Beyond Rating D2 (documented choice): each form's rating onto the ICLR 2024/25 "
        "scale by label; the review keeps rating_raw, rating_label and rating_scale",
        "reviews_by_scale": dict(used),
        "tables": tables,
        "descriptions": {s.name: s.description for s in RATING_SCALES if s.name in used},
        "reviews_without_rating": sum(1 for r in reviews if r.rating_raw is None),
        "ratings_outside_scale": sum(
            1 for r in reviews if r.rating_raw is not None and r.rating is None
        ),
    }


def _filters_card(config: BuildConfig, report: dict[str, Any]) -> dict[str, Any]:
    return {
        "preset": config.filter_preset,
        "rule": "Beyond Rating D5: empty reviews -> min_confidence (reviews) -> min_reviews "
        "(papers) -> max_rating_variance (papers), each on the reviews the step before left; "
        "a step with threshold null is off",
        "variance": "population variance (ddof=0) of the mapped ratings; a paper exactly at the "
        "maximum is kept; unrated reviews are left out",
        **report,
    }


def build_dataset(
    config: BuildConfig,
    *,
    client: NotesClient | None = None,
    enricher: Enricher | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_retries: int = 6,
    progress: bool = True,
) -> BuildResult:
    """Build (or resume building) the dataset described by ``config`` into ``config.out``.

    ``client`` defaults to a guest ``openreview-py`` client for the venue's API; pass any
    :class:`~gem_data.openreview.client.NotesClient` to serve recorded responses.
    ``sleep`` is what rate-limit backoff waits with. Raises :class:`VenueNotFound` when no
    invitation id lists submissions, :class:`Unreachable` without network,
    :class:`RateLimited` when the retries run out, ``ValueError`` for a bad option or when no
    paper passes the filters.
    """
    if config.min_reviews < 1:
        raise ValueError(f"min_reviews must be at least 1, got {config.min_reviews}")
    form = form_for_venue(config.venue)
    api_version = config.api_version or api_version_for(config.venue)
    if api_version not in API_URLS:
        raise ValueError(f"api_version must be 1 or 2, got {api_version}")
    out = Path(config.out)
    cache = out / "cache"
    clients: list[NotesClient] = [client] if client is not None else []

    def get_client() -> NotesClient:
        if not clients:
            clients.append(make_client(api_version))
        return clients[0]

    def retry(call: Callable[[], Any], *, what: str) -> Any:
        return call_with_backoff(call, what=what, sleep=sleep, max_retries=max_retries)

    listing = _listing(config, api_version, get_client, retry, cache)
    submissions = [parse_submission(note) for note in listing["notes"]]
    active = [s for s in submissions if s.status == ACTIVE]

    reviews, eligible = _filtered_reviews(config, form, submissions, active)
    normalised = reviews.normalised
    selected = select_papers(eligible, config.papers, seed=config.seed)
    by_id = {p.id: p for p in active}

    texts: dict[str, dict[str, Any]] = {}
    fetched: list[str] = []
    if config.pdf:
        texts, fetched = _paper_texts(
            [by_id[pid] for pid in selected],
            cache / "papers",
            get_client,
            retry,
            retry_failed=config.retry_failed,
            progress=progress,
        )

    records, failures, stripped = _selected_records(config, selected, by_id, normalised, texts)
    card = _data_card(
        config,
        listing=listing,
        api_version=api_version,
        form=form,
        submissions=submissions,
        active=active,
        eligible=eligible,
        selected=selected,
        records=records,
        reviews=reviews,
        pdfs=_Pdfs(texts, fetched, failures, stripped),
    )
    if enricher is not None:
        card["enrichments"] = enrich_records(records, enricher, cache_dir=cache, progress=progress)
    paths = write_dataset(records, out, card)
    return BuildResult(records=records, card=card, paths=paths, fetched_papers=fetched)


class _Reviews(NamedTuple):
    """The official reviews of the active papers as normalised and filtered."""

    normalised: dict[str, list[tuple[str, NormalisedReview]]]
    all_reviews: list[NormalisedReview]
    empty: int
    forms_used: Counter[str]
    filter_report: dict[str, Any]


def _filtered_reviews(
    config: BuildConfig, form: Any, submissions: list[Any], active: list[Any]
) -> tuple[_Reviews, list[str]]:
    """The active papers' official reviews normalised and through the quality filters, and the
    ids of the papers that pass them (none is a ``ValueError`` saying what to relax)."""
    normalised, empty_reviews, forms_used = _normalised_reviews(active, form)
    all_reviews = [review for reviews in normalised.values() for _, review in reviews]
    normalised, filter_report = apply_quality_filters(
        normalised,
        confidence=lambda item: item[1].confidence,
        rating=lambda item: item[1].rating,
        min_confidence=config.min_confidence,
        min_reviews=config.min_reviews,
        max_rating_variance=config.max_rating_variance,
    )
    eligible = [p.id for p in active if p.id in normalised]
    if not eligible:
        raise ValueError(
            f"no paper of {config.venue} passes the filters (at least {config.min_reviews} "
            f"non-empty official reviews, min_confidence={config.min_confidence}, "
            f"max_rating_variance={config.max_rating_variance}; {len(submissions)} submissions "
            f"listed, {len(active)} neither withdrawn nor desk-rejected); lower --min-reviews, "
            "relax the filters or check the venue id"
        )
    return _Reviews(normalised, all_reviews, empty_reviews, forms_used, filter_report), eligible


class _Pdfs(NamedTuple):
    """The selected papers' texts: by paper id, fetched this run, failures, references cut."""

    texts: dict[str, dict[str, Any]]
    fetched: list[str]
    failures: list[dict[str, Any]]
    stripped: int


def _normalised_reviews(
    active: list[Any], form: Any
) -> tuple[dict[str, list[tuple[str, NormalisedReview]]], int, Counter[str]]:
    """Each active paper's non-empty official reviews, normalised in the venue's ``form`` (the
    form each review was written in detected), with how many were empty and the forms used."""
    normalised: dict[str, list[tuple[str, NormalisedReview]]] = {}
    empty_reviews = 0
    forms_used: Counter[str] = Counter()
    for paper in active:
        reviews = [
            (r.id, normalise_review(r.content, detect_form(r.content, form))) for r in paper.reviews
        ]
        forms_used.update(review.form for _, review in reviews)
        kept = [(rid, review) for rid, review in reviews if not review.empty]
        empty_reviews += len(reviews) - len(kept)
        normalised[paper.id] = kept
    return normalised, empty_reviews, forms_used


def _selected_records(
    config: BuildConfig,
    selected: list[str],
    by_id: dict[str, Any],
    normalised: dict[str, list[tuple[str, NormalisedReview]]],
    texts: dict[str, dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """The records of the ``selected`` papers with their drawn reviews and texts, the papers
    whose PDF is missing or failed, and how many texts had their back matter cut."""
    records = []
    failures = []
    stripped = 0
    for paper_id in selected:
        paper = by_id[paper_id]
        reviews = normalised[paper_id]
        chosen = select_reviews(
            paper_id, [rid for rid, _ in reviews], config.reviews_per_paper, seed=config.seed
        )
        pdf = texts.get(paper_id, {"status": "disabled"})
        text = pdf.get("text")
        if pdf["status"] in ("missing", "failed"):
            failures.append({"paper_id": paper_id, "status": pdf["status"], "error": pdf["error"]})
        if text and config.strip_references:
            text, heading = strip_back_matter(text)
            stripped += heading is not None
        records.append(_record(paper, [reviews[i] for i in chosen], text, config.venue))
    return records, failures, stripped


def _data_card(
    config: BuildConfig,
    *,
    listing: dict[str, Any],
    api_version: int,
    form: Any,
    submissions: list[Any],
    active: list[Any],
    eligible: list[str],
    selected: list[str],
    records: list[dict[str, Any]],
    reviews: _Reviews,
    pdfs: _Pdfs,
) -> dict[str, Any]:
    """The data card of a build: where the data came from, the filters, the counts, the review
    form, the rating scale, the decisions, the PDF extraction and the licences."""
    label = venue_label(config.venue)
    by_id = {p.id: p for p in active}
    statuses = Counter(s.status for s in submissions)
    texts, fetched, failures, stripped = pdfs
    filter_report = reviews.filter_report
    pdf_counts = Counter(texts.get(pid, {"status": "disabled"})["status"] for pid in selected)
    return {
        "name": f"GRE-bench {label} (OpenReview)",
        "source": {
            "venue_id": config.venue,
            "venue": label,
            "api_version": api_version,
            "api_url": listing["api_url"],
            "submission_invitation": listing["invitation"],
            "listing_fetched_at": listing["fetched_at"],
            "built_at": _now(),
            "builder": f"gem-tasks {package_version()} (gem_data.openreview)",
        },
        "filters": {
            **{k: v for k, v in asdict(config).items() if k not in ("out", "venue")},
            "skipped": "withdrawn and desk-rejected submissions; reviews whose every section is "
            "empty; reviews below min_confidence (if set); papers with fewer than min_reviews "
            "surviving official reviews; papers above max_rating_variance (if set)",
        },
        "counts": {
            "submissions_listed": len(submissions),
            "withdrawn": statuses[WITHDRAWN],
            "desk_rejected": statuses[DESK_REJECTED],
            "active": len(active),
            "official_reviews_of_active_papers": sum(len(p.reviews) for p in active),
            "empty_reviews_skipped": reviews.empty,
            "papers_below_min_reviews": filter_report["min_reviews"]["papers_removed"],
            "eligible_papers": len(eligible),
            "papers": len(records),
            "reviews": sum(len(r["reviews"]) for r in records),
        },
        "review_form": {**_form_card(form), "forms_used": dict(reviews.forms_used)},
        "quality_filters": _filters_card(config, filter_report),
        "rating_scale": _rating_card(reviews.all_reviews),
        "decisions": {
            "of_selected_papers": dict(
                Counter(by_id[pid].decision or "(unknown)" for pid in selected)
            ),
            "cleaning": "Beyond Rating D4: decision note (else venue string) with HTML, case "
            "and junk normalised; the raw text is kept per paper as decision_raw",
            "note": "public OpenReview data over-represents accepted papers where rejected "
            "ones are public only by opt-in (NeurIPS: about 95% of public papers accepted)",
        },
        "pdf_extraction": {
            "library": _pdf_library(),
            "enabled": config.pdf,
            "ok": pdf_counts["ok"],
            "missing": pdf_counts["missing"],
            "failed": pdf_counts["failed"],
            "references_stripped": stripped,
            "fetched_this_run": len(fetched),
            "reused_from_cache": len(texts) - len(fetched),
        },
        "extraction_failures": failures,
        "note_licences": dict(Counter(by_id[pid].license or "(none stated)" for pid in selected)),
        "licence_notes": LICENCE_NOTES,
    }


def _pdf_library() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"pypdfium2 {version('pypdfium2')}"
    except PackageNotFoundError:
        return "pypdfium2 (not installed)"
