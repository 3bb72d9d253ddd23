"""Adapters from the summarisation and question-answering datasets of the Scoring Rules paper
(§5, Tables 3-5) into canonical records (:mod:`scorers.data.records`), each in its domain.

- SummEval (Fabbri et al., TACL 2021; MIT): CNN/DailyMail articles, 11 human reference
  summaries each, 16 systems' summaries with expert ratings of coherence, consistency, fluency
  and relevance (1-5, the mean of three experts). Read from either the file that
  ``gem-tasks data fetch summeval`` writes (one article per line: ``doc_id, source, references,
  systems: {id: {summary, expert_avg}}``) or the original release
  ``model_annotations.aligned.paired.jsonl`` (one line per article and system: ``id, model_id,
  decoded, references, text, expert_annotations: [{dimension: score}]``).
- SPACE (Angelidis et al., TACL 2021; MIT): opinion summaries of hotels, three human summaries per
  aspect (``entity_id, summaries: {aspect: [3]}``), no input reviews: one record per hotel and
  aspect, no synopsis.
- LFQA-E (long-form QA evaluation), as published (``id, question, context, type, reference,
  response_a, response_b, compare_type, label``) or in its earlier layout (``id, question,
  Concise_Reference``, two answers such as ``student_answer_a`` and ``<a>_vs_<b>`` naming the
  one a human preferred): the reference answer, and the two answers as candidates rated by the
  preference (a tie, label ``same``, rates both 1/2).

:func:`summary_records` reads any of them by its shape, so a task's ``dataset`` takes the file as
it is. Nothing is dropped: a row of an unknown shape, or missing a field, raises ``RecordError``
naming the file and line.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from statistics import fmean
from typing import Any

from scorers.data.records import PaperRecord, RecordError, parse_record, read_jsonl

__all__ = [
    "SUMMEVAL_DIMENSIONS",
    "load_judgment_records",
    "lfqa_e_records",
    "space_records",
    "summary_records",
    "summeval_records",
]

SUMMEVAL_DIMENSIONS = ("coherence", "consistency", "fluency", "relevance")


def _rows(path: Path) -> list[tuple[str, Any]]:
    if not path.exists():
        raise RecordError(f"{path}: file not found")
    if path.suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RecordError(f"{path}: not valid JSON ({exc.msg})") from None
        if not isinstance(data, list):
            raise RecordError(f"{path}: expected a JSON list of records")
        return [(f"{path}[{i}]", row) for i, row in enumerate(data)]
    return list(read_jsonl(path))


def _require(row: Any, keys: tuple[str, ...], where: str) -> dict[str, Any]:
    if not isinstance(row, dict):
        raise RecordError(f"{where}: expected an object")
    missing = [k for k in keys if row.get(k) is None]
    if missing:
        raise RecordError(f"{where}: missing field(s) {missing}")
    return row


def _summeval_record(
    doc_id: str, article: str, references: list[str], systems: dict[str, tuple[str, dict]], where
) -> PaperRecord:
    return parse_record(
        {
            "id": doc_id,
            "venue": "SummEval (CNN/DailyMail)",
            "title": "",
            "abstract": article,  # θ of the "-S" metrics: the article
            "paper_text": article,
            "domain": "summarization",
            "group": "summeval",
            "ground_truth": True,  # gold summaries, not peers
            "reviews": [{"id": f"ref{k}", "text": text} for k, text in enumerate(references)],
            "candidates": [
                {"id": system, "text": summary, "ratings": ratings}
                for system, (summary, ratings) in sorted(systems.items())
            ],
        },
        where=where,
    )


def summeval_records(path: str | Path) -> list[PaperRecord]:
    """SummEval's articles as summarisation records (references: the human summaries;
    candidates: the systems' summaries with their experts' mean ratings per dimension), from
    the fetched file or the original release (detected by its fields)."""
    return _summeval(_rows(Path(path)))


def _summeval(rows: list[tuple[str, Any]]) -> list[PaperRecord]:
    if rows and isinstance(rows[0][1], dict) and "systems" in rows[0][1]:
        return [
            _summeval_record(
                str(row["doc_id"]),
                row["source"],
                list(row["references"]),
                {
                    system: (entry["summary"], dict(entry.get("expert_avg") or {}))
                    for system, entry in row["systems"].items()
                },
                where,
            )
            for where, row in (
                (w, _require(r, ("doc_id", "source", "references", "systems"), w)) for w, r in rows
            )
        ]
    # the original release: one line per (article, system)
    articles: dict[str, dict[str, Any]] = {}
    systems: dict[str, dict[str, tuple[str, dict]]] = defaultdict(dict)
    first_line: dict[str, str] = {}
    for where, raw in rows:
        row = _require(
            raw, ("id", "model_id", "decoded", "references", "text", "expert_annotations"), where
        )
        doc = str(row["id"])
        first_line.setdefault(doc, where)
        articles.setdefault(doc, {"text": row["text"], "references": list(row["references"])})
        ratings = {
            dim: fmean(a[dim] for a in row["expert_annotations"])
            for dim in SUMMEVAL_DIMENSIONS
            if row["expert_annotations"] and all(dim in a for a in row["expert_annotations"])
        }
        if str(row["model_id"]) in systems[doc]:
            raise RecordError(f"{where}: system {row['model_id']!r} twice for article {doc!r}")
        systems[doc][str(row["model_id"])] = (row["decoded"], ratings)
    return [
        _summeval_record(doc, a["text"], a["references"], systems[doc], first_line[doc])
        for doc, a in articles.items()
    ]


def space_records(path: str | Path) -> list[PaperRecord]:
    """SPACE's human summaries as opinion-summarisation records, one per hotel and aspect: the
    three summaries are the human reports (one held out as the candidate, the others the
    references); there is no input text, so no synopsis; the title is the aspect."""
    return _space(_rows(Path(path)))


def _space(rows: list[tuple[str, Any]]) -> list[PaperRecord]:
    records = []
    for where, raw in rows:
        row = _require(raw, ("entity_id", "summaries"), where)
        for aspect, summaries in sorted(row["summaries"].items()):
            records.append(
                parse_record(
                    {
                        "id": f"{row['entity_id']}-{aspect}",
                        "venue": "SPACE",
                        "title": aspect,  # what the summaries are about
                        "abstract": "",
                        "domain": "opinion_summarization",
                        "group": "space",
                        "ground_truth": True,  # gold summaries, not peers
                        # the hotel: its other aspects are never this item's negatives
                        "entity": str(row["entity_id"]),
                        "reviews": [
                            {"id": f"{row['entity_id']}-{aspect}-s{k}", "text": text}
                            for k, text in enumerate(summaries)
                        ],
                    },
                    where=f"{where} ({aspect})",
                )
            )
    return records


def lfqa_e_records(path: str | Path) -> list[PaperRecord]:
    """LFQA-E's records as QA records: the question is θ, the reference answer the one human
    report, and the two compared answers candidates rated by the human preference (1 for the
    preferred answer, 0 for the other, 1/2 each for a tie). The published layout names them
    ``response_a``/``response_b`` and the preference ``label``, its topic ``type`` the group;
    the earlier layout names them in its ``<a>_vs_<b>`` key (record ``<id>:<a>_vs_<b>``). A
    question is compared in several pairs, one record each, the question their entity."""
    return _lfqa_e(_rows(Path(path)))


def _lfqa_e(rows: list[tuple[str, Any]]) -> list[PaperRecord]:
    records = []
    for where, raw in rows:
        if isinstance(raw, dict) and "response_a" in raw:
            records.append(_lfqa_e_unified(raw, where))
            continue
        row = _require(raw, ("id", "question", "Concise_Reference"), where)
        comparisons = [k for k in row if "_vs_" in k]
        if len(comparisons) != 1:
            raise RecordError(f"{where}: expected one '<a>_vs_<b>' preference, got {comparisons}")
        key = comparisons[0]
        sides = key.split("_vs_")
        _require(row, tuple(sides), where)
        preferred = row[key]
        if preferred not in sides:
            raise RecordError(f"{where}: preference {preferred!r} names neither of {sides}")
        records.append(
            _lfqa_e_record(
                record_id=f"{row['id']}:{key}",
                # its other pairs are about the same question: never its negatives
                entity=str(row["id"]),
                question=row["question"],
                reference=row["Concise_Reference"],
                reference_id=f"{row['id']}-ref",
                answers={side: row[side] for side in sides},
                preferred=preferred,
                group=row.get("category") or row.get("topic"),
                where=where,
            )
        )
    return records


def _lfqa_e_unified(raw: Any, where: str) -> PaperRecord:
    """A record of LFQA-E's published benchmark (``id, question, context, type, reference,
    response_a, response_b, compare_type, label``; the label ``response_a``, ``response_b`` or
    ``same``: a tie, both answers rated 1/2)."""
    row = _require(raw, ("id", "question", "reference", "response_a", "response_b", "label"), where)
    label = row["label"]
    if label not in ("response_a", "response_b", "same"):
        raise RecordError(f"{where}: label {label!r} is none of response_a, response_b, same")
    context = str(row.get("context") or "").strip()
    question = row["question"] + (f"\n\n{context}" if context else "")
    return _lfqa_e_record(
        record_id=str(row["id"]),
        # a question is compared in several pairs, each its own record: never its negatives
        entity=question,
        question=question,
        reference=row["reference"],
        reference_id=f"{row['id']}-ref",
        answers={"response_a": row["response_a"], "response_b": row["response_b"]},
        preferred=None if label == "same" else label,
        group=row.get("type"),
        where=where,
    )


def _lfqa_e_record(
    *,
    record_id: str,
    entity: str,
    question: str,
    reference: str,
    reference_id: str,
    answers: dict[str, str],
    preferred: str | None,
    group: Any,
    where: str,
) -> PaperRecord:
    """One compared pair as a QA record: the question θ, the reference answer the one human
    report (ground truth), the two answers candidates rated ``preferred`` 1 and 0 (1/2 each for
    a tie: ``preferred`` None)."""
    return parse_record(
        {
            "id": record_id,
            "entity": entity,
            "venue": "LFQA-E",
            "title": "",
            "abstract": question,
            "domain": "qa",
            # negatives within the question's topic category where the data names one (the
            # paper's grouping), else the whole set is one group
            "group": str(group or "lfqa_e"),
            "ground_truth": True,  # the reference answer
            "reviews": [{"id": reference_id, "text": reference}],
            "candidates": [
                {
                    "id": side,
                    "text": text,
                    "ratings": {
                        "preferred": 0.5 if preferred is None else float(preferred == side)
                    },
                }
                for side, text in answers.items()
            ],
        },
        where=where,
    )


def _converter(rows: list[tuple[str, Any]]):
    """The converter for rows of SummEval, SPACE or LFQA-E (by the first row's fields), or
    None for rows of another shape."""
    first = rows[0][1] if rows and isinstance(rows[0][1], dict) else {}
    if "systems" in first or "model_id" in first:
        return _summeval
    if "entity_id" in first:
        return _space
    if "Concise_Reference" in first or {"reference", "response_a", "response_b"} <= set(first):
        return _lfqa_e
    return None


def summary_records(path: str | Path) -> list[PaperRecord]:
    """Any of the three files, recognised by its first row's fields."""
    path = Path(path)
    rows = _rows(path)
    if not rows:
        raise RecordError(f"{path}: no records")
    convert = _converter(rows)
    if convert is None:
        first = rows[0][1] if isinstance(rows[0][1], dict) else {}
        raise RecordError(
            f"{rows[0][0]}: not a SummEval, SPACE or LFQA-E row (fields {sorted(first)[:8]})"
        )
    return convert(rows)


def load_judgment_records(source: str | Path) -> list[PaperRecord]:
    """Records from canonical or generic JSONL/parquet (:func:`load_records`), or from a
    SummEval, SPACE or LFQA-E file as it is (recognised by its first row's fields; the file is
    read once)."""
    from scorers.data.records import load_records

    path = Path(str(source))
    if path.is_file() and path.suffix in (".jsonl", ".json"):
        if _converter(_first_row(path)) is not None:
            return summary_records(path)
    return load_records(source)


def _first_row(path: Path) -> list[tuple[str, Any]]:
    """The first record of a JSONL file (read up to its first non-blank line), or every record
    of a JSON list (LFQA-E's files are small); [] when the first line is not JSON (the loader
    of record then names the error)."""
    if path.suffix == ".json":
        return _rows(path)
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    return [(f"{path}:{number}", json.loads(line))]
                except json.JSONDecodeError:
                    return []
    return []
