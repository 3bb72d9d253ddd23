"""Training data for a fine-tuned evaluation LM: the GEM paper's App. E recipe.

The GEM paper (ICLR 2025, App. E.1) fine-tunes its evaluation LM on the prediction task itself:
for each training paper it picks three reviews r1, r2, r3 at random, with their judgment
rewrites r̂1, r̂2, r̂3 (App. C.1), and writes nine prompt/target pairs for GEM and nine for
GEM-S, ``gen(metric, x, y)`` being the full App. C.2 prediction prompt with first-reviewer
judgments ``x`` (``Null``: the marginal prompt) and target judgments ``y``.

The appendix's list names only five ``gen`` calls, and repeats one (``gen(Null, r̂3)`` twice), so
the nine pairs are not spelled out. This builder uses the reading that gives nine: **the six
ordered conditional pairs** ``gen(r̂i, r̂j)`` for ``i != j`` **and the three marginals**
``gen(Null, r̂i)``; the appendix's five calls are all among them. So every conditional and
marginal probability GEM takes between two of a paper's reviews is trained on.

Each pair is exactly the request GEM scores (:func:`scorers.pmi.prediction_messages`
rendered by :func:`scorers.lm.chat.build_scoring_request`, content tokenised as plain text):
synopsis "Not available" for GEM, the paper's abstract for GEM-S; first-reviewer slot the
reference judgments (conditional) or "Not available" (marginal); the assistant turn forced to the
target judgments. ``labels`` are -100 on every context token and equal the input ids on the
target span (the judgments and the end-of-turn token, the span GEM sums), so the loss is on the
assistant turn only.

Failure modes (all reported in :class:`FinetuneData`, none silent): a paper with fewer than
``reviews_per_paper`` reviews that have a text and a judgment summary with at least one judgment
line is left out (``skipped_papers``); a paper without an abstract gets only its GEM pairs
(``gem_only_papers``); a pair longer than ``max_length`` tokens is left out (``too_long``).
Records with no summaries at all raise :class:`FinetuneDataError` (write them first with
``gem-tasks data build --summaries`` or use a release that has them).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from scorers.data.records import PaperRecord, ReviewRecord
from scorers.errors import GemTasksError
from scorers.lm.chat import build_scoring_request
from scorers.pmi import NOT_AVAILABLE, prediction_messages
from scorers.text.judgments import Preprocessed

__all__ = [
    "DATA_FILE_STEM",
    "FINETUNE_METRICS",
    "HELDOUT_FILE",
    "IGNORE_INDEX",
    "MANIFEST_FILE",
    "FinetuneData",
    "FinetuneDataError",
    "build_finetune_data",
    "chat_template_hash",
    "load_finetune_data",
    "record_dict",
    "save_finetune_data",
    "training_pairs",
]

IGNORE_INDEX = -100
"""Label of a token the loss ignores (every context token)."""

FINETUNE_METRICS = ("gem", "gem_s")
"""The metrics App. E writes pairs for: GEM (synopsis "Not available") and GEM-S (abstract)."""

DATA_FILE_STEM = "train"
MANIFEST_FILE = "manifest.json"
HELDOUT_FILE = "heldout_records.jsonl"

Metric = Literal["gem", "gem_s"]


class FinetuneDataError(GemTasksError, ValueError):
    """The records cannot give App. E training data (no summaries, no eligible paper, ...)."""


def training_pairs(reviews: int = 3) -> list[tuple[int | None, int]]:
    """The (first-reviewer index or None for the marginal, target index) pairs of one paper:
    every ordered conditional pair ``i != j``, then every marginal. Nine for three reviews."""
    conditional = [(i, j) for i in range(reviews) for j in range(reviews) if i != j]
    return [*conditional, *((None, j) for j in range(reviews))]


def chat_template_hash(tokenizer: Any) -> str:
    """sha256 (16 hex digits) of the tokenizer's chat template: the data is rendered with it, so
    a model with another template must not be trained on it."""
    template = getattr(tokenizer, "chat_template", None) or ""
    if not isinstance(template, str):
        template = json.dumps(template, sort_keys=True)
    return hashlib.sha256(template.encode()).hexdigest()[:16]


@dataclass
class FinetuneData:
    """The rows of the App. E dataset and what was left out, and why."""

    rows: list[dict[str, Any]]
    training_papers: list[str]
    """Papers with at least one row: exclude them from validation."""
    skipped_papers: dict[str, str] = field(default_factory=dict)
    gem_only_papers: list[str] = field(default_factory=list)
    """Papers without an abstract: GEM pairs only (GEM-S needs the abstract)."""
    too_long: list[str] = field(default_factory=list)
    """Rows left out for exceeding ``max_length`` (``paper/metric/first->target``)."""
    settings: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        by_metric = {m: sum(1 for r in self.rows if r["metric"] == m) for m in FINETUNE_METRICS}
        return {
            "rows": len(self.rows),
            **{f"{m}_rows": n for m, n in by_metric.items()},
            "training_papers": len(self.training_papers),
            "skipped_papers": len(self.skipped_papers),
            "gem_only_papers": len(self.gem_only_papers),
            "too_long_rows": len(self.too_long),
        }

    def manifest(self) -> dict[str, Any]:
        return {
            "recipe": "GEM paper App. E: per paper 6 ordered conditional + 3 marginal pairs "
            "per metric (gem: synopsis 'Not available'; gem_s: the abstract)",
            "settings": self.settings,
            "counts": self.counts(),
            "training_papers": self.training_papers,
            "skipped_papers": self.skipped_papers,
            "gem_only_papers": self.gem_only_papers,
            "too_long": self.too_long,
        }


def _usable(review: ReviewRecord) -> Preprocessed | None:
    """The review's stored judgment rewrite, if it has a text and at least one judgment line
    (the same normalisation GEM applies to ``dataset_summaries``)."""
    if not review.text.strip() or not review.summary:
        return None
    rewrite = Preprocessed.from_reply(review.summary)
    return rewrite if rewrite.n_judgment_lines else None


def _choose(paper: PaperRecord, usable: list[ReviewRecord], k: int, seed: int) -> list[Any]:
    """``k`` of ``usable``, drawn at random from (seed, paper id, review ids) only."""
    digest = hashlib.sha256(f"finetune:{seed}:{paper.id}".encode()).digest()
    ordered = sorted(usable, key=lambda r: r.id)
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(ordered)
    return ordered[:k]


def _eligible_papers(
    records: Sequence[PaperRecord], reviews_per_paper: int, *, seed: int, skipped: dict[str, str]
) -> list[tuple[PaperRecord, list[tuple[ReviewRecord, Preprocessed]]]]:
    """Each paper with ``reviews_per_paper`` reviews that have a text and a judgment summary,
    with that many of them drawn with ``seed``; the others go into ``skipped`` with why."""
    eligible = []
    for paper in records:
        usable = [(r, p) for r in paper.reviews if (p := _usable(r)) is not None]
        if len(usable) < reviews_per_paper:
            skipped[paper.id] = (
                f"{len(usable)} review(s) with a text and a judgment summary, "
                f"{reviews_per_paper} needed"
            )
            continue
        by_id = dict((r.id, (r, p)) for r, p in usable)
        chosen = _choose(paper, [r for r, _ in usable], reviews_per_paper, seed)
        eligible.append((paper, [by_id[r.id] for r in chosen]))
    return eligible


def _pair_row(
    tokenizer: Any,
    paper: PaperRecord,
    metric: str,
    synopsis: str,
    reviews: list[tuple[ReviewRecord, Preprocessed]],
    first: int | None,
    target: int,
    max_length: int,
) -> tuple[str, dict[str, Any] | None]:
    """One pair's label and training row: the prediction request GEM scores (the ``first``
    review's judgments, or none for a marginal) with the ``target`` review's judgments as the
    completion; the row is None when its tokens exceed ``max_length`` (checked before anything
    is decoded)."""
    judgments = reviews[first][1].judgments.strip() if first is not None else ""
    target_review, target_rewrite = reviews[target]
    first_id = reviews[first][0].id if first is not None else None
    request = build_scoring_request(
        tokenizer,
        prediction_messages(
            synopsis=synopsis or NOT_AVAILABLE, judgments=judgments or NOT_AVAILABLE
        ),
        target_rewrite.judgments.strip(),
    )
    context, target_ids = list(request.context_ids), list(request.target_ids)
    label = f"{paper.id}/{metric}/{first_id or 'Null'}->{target_review.id}"
    if len(context) + len(target_ids) > max_length:
        return label, None
    return label, {
        "paper_id": paper.id,
        "metric": metric,
        "kind": "conditional" if first is not None else "marginal",
        "first_review_id": first_id,
        "target_review_id": target_review.id,
        "prompt": tokenizer.decode(context),
        "completion": tokenizer.decode(target_ids),
        "input_ids": context + target_ids,
        "labels": [IGNORE_INDEX] * len(context) + target_ids,
        "n_target_tokens": len(target_ids),
    }


def _training_papers(
    records: Sequence[PaperRecord],
    papers: int | None,
    reviews_per_paper: int,
    metrics: Sequence[str],
    seed: int,
    skipped: dict[str, str],
) -> list[tuple[PaperRecord, list[tuple[ReviewRecord, Preprocessed]]]]:
    """:func:`build_finetune_data`'s settings checked, and the papers it trains on with their
    drawn reviews (``papers`` of the eligible ones drawn with ``seed``); papers left out go into
    ``skipped`` with why."""
    unknown = [m for m in metrics if m not in FINETUNE_METRICS]
    if unknown or not metrics:
        raise FinetuneDataError(f"metrics must be among {FINETUNE_METRICS}, got {list(metrics)}")
    if reviews_per_paper < 2:
        raise FinetuneDataError("reviews_per_paper must be at least 2 (a conditional needs two)")
    if not any(r.summary for p in records for r in p.reviews):
        raise FinetuneDataError(
            "no review has a judgment summary: App. E trains on judgment rewrites (write them "
            "with `gem-tasks data build --summaries`, or use a release that has them)"
        )
    eligible = _eligible_papers(records, reviews_per_paper, seed=seed, skipped=skipped)
    if not eligible:
        raise FinetuneDataError(
            f"no paper has {reviews_per_paper} reviews with judgment summaries "
            f"({len(skipped)} skipped)"
        )
    if papers is None:
        return eligible
    if papers < 1:
        raise FinetuneDataError("papers must be at least 1")
    order = sorted(eligible, key=lambda e: e[0].id)
    random.Random(seed).shuffle(order)
    chosen_ids = {paper.id for paper, _ in order[:papers]}
    return [e for e in eligible if e[0].id in chosen_ids]


def build_finetune_data(
    records: Sequence[PaperRecord],
    tokenizer: Any,
    *,
    papers: int | None = None,
    reviews_per_paper: int = 3,
    metrics: Sequence[str] = FINETUNE_METRICS,
    max_length: int = 4096,
    seed: int = 42,
) -> FinetuneData:
    """The App. E rows of ``records``, rendered with ``tokenizer``'s chat template.

    Args:
        records: canonical records whose reviews carry judgment summaries (``summary``).
        tokenizer: the tokenizer (with chat template) of the model to fine-tune.
        papers: use this many eligible papers, drawn at random with ``seed`` (default: all).
        reviews_per_paper: reviews drawn per paper (default 3, App. E); the pairs are the
            ordered conditionals and the marginals among them (:func:`training_pairs`).
        metrics: ``gem`` and/or ``gem_s`` (default both).
        max_length: rows with more tokens are left out and listed (default 4096, App. E's max
            sequence length).
        seed: the draw of papers and reviews (default 42, App. E's seed).

    Returns:
        :class:`FinetuneData`; each row holds ``paper_id``, ``metric``, ``kind``
        (``conditional``/``marginal``), ``first_review_id`` (None for a marginal),
        ``target_review_id``, ``prompt`` and ``completion`` (decoded, for reading),
        ``input_ids``, ``labels`` and ``n_target_tokens``.

    Raises:
        FinetuneDataError: unknown metric, ``reviews_per_paper`` below 2, no review with a
            summary in any record, or no eligible paper.
    """
    skipped: dict[str, str] = {}
    eligible = _training_papers(records, papers, reviews_per_paper, metrics, seed, skipped)

    rows: list[dict[str, Any]] = []
    too_long: list[str] = []
    gem_only: list[str] = []
    used: list[str] = []
    for paper, reviews in eligible:
        paper_metrics = list(metrics)
        if "gem_s" in paper_metrics and not paper.abstract.strip():
            paper_metrics.remove("gem_s")
            gem_only.append(paper.id)
        before = len(rows)
        for metric in paper_metrics:
            synopsis = paper.abstract.strip() if metric == "gem_s" else NOT_AVAILABLE
            for first, target in training_pairs(len(reviews)):
                label, row = _pair_row(
                    tokenizer, paper, metric, synopsis, reviews, first, target, max_length
                )
                if row is None:
                    too_long.append(label)
                else:
                    rows.append(row)
        if len(rows) > before:
            used.append(paper.id)
        else:
            skipped[paper.id] = "every pair exceeds max_length"
    settings = {
        "tokenizer": str(getattr(tokenizer, "name_or_path", "")),
        "chat_template_sha": chat_template_hash(tokenizer),
        "papers": papers,
        "reviews_per_paper": reviews_per_paper,
        "metrics": list(metrics),
        "max_length": max_length,
        "seed": seed,
    }
    return FinetuneData(
        rows=rows,
        training_papers=used,
        skipped_papers=skipped,
        gem_only_papers=gem_only,
        too_long=too_long,
        settings=settings,
    )


def record_dict(record: PaperRecord) -> dict[str, Any]:
    """A record as its canonical JSON object (the inverse of
    :func:`scorers.data.records.parse_record`)."""
    row = asdict(record)
    row["reviews"] = [
        {**{k: v for k, v in r.items() if k != "extra"}, **r["extra"]} for r in row["reviews"]
    ]
    return {k: v for k, v in row.items() if v is not None}


def save_finetune_data(
    data: FinetuneData,
    out: str | Path,
    *,
    records: Sequence[PaperRecord] | None = None,
    file_format: Literal["jsonl", "parquet"] = "jsonl",
) -> dict[str, Path]:
    """Write ``train.jsonl`` (or ``train.parquet``, through ``datasets``), ``manifest.json``
    (settings, counts, the training papers and everything left out) and, given the ``records``
    the data was built from, ``heldout_records.jsonl``: the canonical records of every paper not
    trained on, for validation (``gem_tasks/robustness -T dataset=...``)."""
    from datasets import Dataset

    if file_format not in ("jsonl", "parquet"):
        raise ValueError(f"file_format must be 'jsonl' or 'parquet', got {file_format!r}")
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    dataset = Dataset.from_list(data.rows)
    paths = {"data": folder / f"{DATA_FILE_STEM}.{file_format}"}
    if file_format == "jsonl":
        dataset.to_json(str(paths["data"]), lines=True, force_ascii=False)
    else:
        dataset.to_parquet(str(paths["data"]))
    manifest = data.manifest()
    if records is not None:
        trained = set(data.training_papers)
        heldout = [r for r in records if r.id not in trained]
        paths["heldout"] = folder / HELDOUT_FILE
        with paths["heldout"].open("w", encoding="utf-8") as handle:
            for record in heldout:
                handle.write(json.dumps(record_dict(record), ensure_ascii=False) + "\n")
        manifest["heldout_papers"] = len(heldout)
    paths["manifest"] = folder / MANIFEST_FILE
    paths["manifest"].write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return paths


def load_finetune_data(folder: str | Path) -> tuple[Any, dict[str, Any]]:
    """The ``datasets.Dataset`` and the manifest written by :func:`save_finetune_data`;
    :class:`FinetuneDataError` when the folder holds neither a data file nor a manifest."""
    from datasets import load_dataset

    folder = Path(folder)
    manifest_path = folder / MANIFEST_FILE
    if not manifest_path.is_file():
        raise FinetuneDataError(f"{folder}: no {MANIFEST_FILE} (write it with finetune data)")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    for kind, builder in (("jsonl", "json"), ("parquet", "parquet")):
        path = folder / f"{DATA_FILE_STEM}.{kind}"
        if path.is_file():
            dataset = load_dataset(builder, data_files=str(path), split="train")
            return dataset, manifest
    raise FinetuneDataError(f"{folder}: no {DATA_FILE_STEM}.jsonl or {DATA_FILE_STEM}.parquet")
