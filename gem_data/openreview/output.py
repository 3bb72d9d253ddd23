"""Writing a built dataset: canonical records as JSONL and parquet, and its data card.

Every file is written to a temporary name in the same folder and renamed into place, so an
interrupted write never leaves a half file under the final name. The records are validated with
:func:`scorers.data.records.parse_record` before anything is written, so the folder always loads
with :func:`scorers.data.records.load_records`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gem_data.files import atomic_write_bytes, atomic_write_json, atomic_write_text
from gem_data.openreview.forms import FIELD_NAMES, SCORE_NAMES
from scorers.data.records import PaperRecord, parse_record

__all__ = [
    "record_row",
    "render_card",
    "write_dataset",
]

RECORDS_NAME = "records"
REVIEW_EXTRAS = ("rating_label", "confidence_label")
"""String extras every written review carries (None where absent)."""
PAPER_EXTRAS = {
    "decision": "string",
    "official_ratings": "floats",
    "decision_raw": "string",
    "conference": "string",
    "year": "int",
}
"""Optional paper fields written beside the canonical ones (None where absent). The loader
(:func:`scorers.data.records.load_records`) reads ``decision`` and ``official_ratings`` into
``PaperRecord``; the others are in records.jsonl / records.parquet for analyses (per-venue
splits)."""


def record_row(record: PaperRecord, paper_extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The canonical row of a record, every key present (None where absent), so JSONL and
    parquet rows have one shape; ``paper_extra`` gives the :data:`PAPER_EXTRAS` values.

    Review extras written: ``rating_label``, ``confidence_label``, ``rating_raw`` (the rating
    on the form's own scale), ``rating_scale``, ``scores`` (the form's 1-4 sub-scores),
    ``fields`` (the structured text fields the form has, "" when left empty; a key the form
    lacks is absent in JSONL and null in parquet) and ``needs_split``.
    """
    extra = paper_extra or {}
    return {
        "id": record.id,
        "venue": record.venue,
        "title": record.title,
        "abstract": record.abstract,
        "paper_text": record.paper_text,
        "assw": record.assw,
        # the scale the ratings are on (scorers.scales): the builder's mapped ratings are on
        # ICLR's ("iclr"), canonical records keep theirs
        "rating_scale": record.rating_scale,
        **{key: _EXTRA_TYPES[kind](extra.get(key)) for key, kind in PAPER_EXTRAS.items()},
        "reviews": [
            {
                "id": review.id,
                "text": review.text,
                "summary": review.summary,
                "rating": review.rating,
                "confidence": review.confidence,
                **{key: _optional_str(review.extra.get(key)) for key in REVIEW_EXTRAS},
                "rating_raw": _optional_float(review.extra.get("rating_raw")),
                "rating_scale": _optional_str(review.extra.get("rating_scale")),
                "scores": _known(review.extra.get("scores"), SCORE_NAMES, _optional_float),
                "fields": _known(review.extra.get("fields"), FIELD_NAMES, _optional_str),
                "needs_split": _optional_bool(review.extra.get("needs_split")),
            }
            for review in record.reviews
        ],
    }


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _optional_float(value: Any) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _optional_int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _optional_bool(value: Any) -> bool | None:
    return None if value is None else bool(value)


def _optional_floats(value: Any) -> list[float] | None:
    return None if value is None else [float(v) for v in value]


_EXTRA_TYPES = {"string": _optional_str, "int": _optional_int, "floats": _optional_floats}


def _known(value: Any, names: Sequence[str], convert: Any) -> dict[str, Any] | None:
    """The entries of a mapping whose keys are in ``names``, converted (None if no mapping)."""
    if not isinstance(value, Mapping):
        return None
    return {key: convert(value[key]) for key in names if key in value}


def _parquet_bytes(rows: Sequence[Mapping[str, Any]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    review = pa.struct(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("summary", pa.string()),
            ("rating", pa.float64()),
            ("confidence", pa.float64()),
            *[(key, pa.string()) for key in REVIEW_EXTRAS],
            ("rating_raw", pa.float64()),
            ("rating_scale", pa.string()),
            ("scores", pa.struct([(name, pa.float64()) for name in SCORE_NAMES])),
            ("fields", pa.struct([(name, pa.string()) for name in FIELD_NAMES])),
            ("needs_split", pa.bool_()),
        ]
    )
    kinds = {"string": pa.string(), "int": pa.int64(), "floats": pa.list_(pa.float64())}
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("venue", pa.string()),
            ("title", pa.string()),
            ("abstract", pa.string()),
            ("paper_text", pa.string()),
            ("assw", pa.string()),
            *[(key, kinds[kind]) for key, kind in PAPER_EXTRAS.items()],
            ("reviews", pa.list_(review)),
        ]
    )
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(list(rows), schema=schema), sink)
    return sink.getvalue().to_pybytes()


def write_dataset(
    records: Sequence[Mapping[str, Any]], out: Path, card: Mapping[str, Any]
) -> dict[str, Path]:
    """Validate ``records`` (canonical dicts) and write ``records.jsonl``, ``records.parquet``,
    ``data_card.json`` and ``data_card.md`` into ``out``; returns their paths by kind.

    Raises :class:`scorers.data.records.RecordError` (before writing) if a record is not canonical,
    and ``ValueError`` when there is no record.
    """
    if not records:
        raise ValueError(f"no paper passed the filters: nothing written to {out}")
    parsed = [parse_record(dict(r), where=f"built record #{i}") for i, r in enumerate(records)]
    rows = [record_row(p, raw) for p, raw in zip(parsed, records)]
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "jsonl": out / f"{RECORDS_NAME}.jsonl",
        "parquet": out / f"{RECORDS_NAME}.parquet",
        "card_json": out / "data_card.json",
        "card_markdown": out / "data_card.md",
    }
    jsonl = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write_text(paths["jsonl"], jsonl)
    atomic_write_bytes(paths["parquet"], _parquet_bytes(rows))
    atomic_write_json(paths["card_json"], card)
    atomic_write_text(paths["card_markdown"], render_card(card))
    return paths


def _cell(value: Any) -> str:
    if isinstance(value, Mapping | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render_card(card: Mapping[str, Any], *, max_listed: int = 50) -> str:
    """The data card as markdown: one section per top-level key of ``card``; lists of failures
    are shown up to ``max_listed`` entries (all of them are in data_card.json)."""
    lines = [f"# Data card: {card.get('name', 'dataset')}", ""]
    for key, value in card.items():
        if key == "name":
            continue
        lines += [f"## {key.replace('_', ' ').capitalize()}", ""]
        if isinstance(value, Mapping):
            lines += ["| field | value |", "| --- | --- |"]
            lines += [f"| {k} | {_cell(v)} |" for k, v in value.items()]
        elif isinstance(value, list):
            if not value:
                lines.append("none")
            for item in value[:max_listed]:
                lines.append(f"- {_cell(item)}")
            if len(value) > max_listed:
                lines.append(f"- ... and {len(value) - max_listed} more (see data_card.json)")
        else:
            lines.append(str(value))
        lines.append("")
    return "\n".join(lines)
