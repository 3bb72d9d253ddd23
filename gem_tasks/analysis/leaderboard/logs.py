"""Reading gem_tasks/iclr Inspect logs for the leaderboard: one row per log, scorer, sample and
epoch, from the logs' headers and sample summaries (no transcripts are loaded)."""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from inspect_ai.log import (
    EvalLog,
    list_eval_logs,
    read_eval_log,
    read_eval_log_sample,
    read_eval_log_sample_summaries,
)
from tqdm import tqdm

from scorers.data.candidates import MEMBERS
from scorers.errors import UnknownMetricError
from scorers.registry import PER_ITEM_MEAN, MetricSpec, list_metrics, metric_spec
from scorers.signature import INFORMATIONAL, comparable

__all__ = [
    "BASELINE_PREFIX",
    "HUMAN_LABEL",
    "ICLR_TASK",
    "LEADERBOARD_TASKS",
    "REVIEW_QUALITY_TASK",
    "headline_kind",
    "headline_name",
    "higher_is_better",
    "as_float",
    "is_reference_row",
    "metric_name",
    "metric_order",
    "metric_spec_or_none",
    "nothing_to_rank",
    "read_scores",
    "signature_differences",
    "task_matches",
]

HUMAN_LABEL = "human (held-out review)"
"""Row label of the human baseline (``-T candidate=human``: the held-out human review)."""

ICLR_TASK = "gem_tasks/iclr"
REVIEW_QUALITY_TASK = "gem_tasks/review_quality"
LEADERBOARD_TASKS = (
    ICLR_TASK,
    REVIEW_QUALITY_TASK,
    "gem_tasks/summeval",
    "gem_tasks/space",
    "gem_tasks/judgments",
)
"""The tasks whose logs the leaderboard ranks by default: GRE-bench's reviews (GEM and the
baselines), Beyond Rating's structured reviews, and the other domains' judgment tasks. The same
metric computed on two tasks' reports lands in separate signature groups (their signatures gain
``task``)."""

RATING_PREFIX = "rating_"
"""Metric name prefix of the human ratings that travel with rated candidates (SummEval's expert
ratings): ``rating_<dimension>`` and ``rating_mean`` (the mean over the dimensions), shown as
leaderboard rows beside the metrics, so ``--against rating_mean`` ranks the metrics by how well
they order the rated systems."""

_SLIM_SAMPLE = {"events", "messages", "store", "attachments"}
_THINNED = "Key removed from summary (> 1k)"
"""What a log's sample summary holds in place of a metadata value over 1k characters."""


def _headline_fields(signature: Any, scorer: str) -> tuple[str, ...]:
    """The result-metadata fields a score's corpus headline is computed from (none for a metric
    whose headline is the mean, or one the registry does not know)."""
    metric = signature.get("metric") if isinstance(signature, Mapping) else None
    spec = _spec(str(metric or scorer))
    return spec.headline.fields if spec is not None and spec.headline is not None else ()


# -- reading the logs ----------------------------------------------------------------------------


def log_paths(sources: Sequence[str | Path]) -> list[str]:
    """The log files named by ``sources`` (files, or folders searched for logs); a missing
    source raises ``FileNotFoundError``."""
    paths: list[str] = []
    for source in sources:
        source = Path(source)
        if source.is_dir():
            paths += [info.name for info in list_eval_logs(str(source))]
        elif source.exists():
            paths.append(str(source))
        else:
            raise FileNotFoundError(f"{source}: no such log file or folder")
    return paths


def _display_path(path: str) -> str:
    return path.removeprefix("file://")


def _canonical(signature: Mapping[str, Any]) -> str:
    """The fields of a signature that decide comparability (not its ``id`` nor the package
    version) as canonical JSON: the group key."""
    return json.dumps(comparable(signature), sort_keys=True)


def as_float(value: Any) -> float | None:
    """A number (bool, int, float or numeric string) as float; None for anything else."""
    if isinstance(value, bool | int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


BASELINE_PREFIX = "baseline:"
"""Row label prefix of a baseline rule's log (``-T candidate=baseline:committee``): rows that
state verdicts with no reviewer, read against the models, never counted as one."""


def _entry(log: EvalLog, human: bool) -> str:
    """The row a log's scores belong to: the human baseline, a baseline rule, else the model."""
    if human:
        return HUMAN_LABEL
    candidate = str((log.eval.task_args or {}).get("candidate") or "")
    return candidate if candidate.startswith(BASELINE_PREFIX) else log.eval.model


def is_reference_row(entry: str) -> bool:
    """Whether a row is a reference point rather than a model: the human baseline or a
    baseline rule."""
    return entry.startswith(HUMAN_LABEL) or entry.startswith(BASELINE_PREFIX)


def _is_human(log: EvalLog) -> bool:
    args = log.eval.task_args or {}
    meta = log.eval.metadata or {}
    return args.get("candidate") == "human" or meta.get("candidate") == "human"


def _setup(log: EvalLog) -> str:
    """What else must match for two logs' scores to be paired: dataset, split seed, k."""
    args = log.eval.task_args or {}
    dataset = args.get("dataset") or log.eval.dataset.location or log.eval.dataset.name
    return json.dumps(
        {"dataset": dataset, "seed": args.get("seed"), "references": args.get("references")},
        sort_keys=True,
        default=str,
    )


def _run_config(log: EvalLog) -> str:
    """The model's generation settings and arguments in a log (canonical JSON)."""
    config = log.eval.model_generate_config.model_dump(exclude_none=True)
    return json.dumps({**config, **(log.eval.model_args or {})}, sort_keys=True, default=str)


def _label_configs(frame: pd.DataFrame) -> None:
    """Runs of one model with different generation settings or model arguments are different
    rows: their label gets the settings that set them apart (``openai/gpt-4o (temperature=0.7)``).
    """
    own_rows = ~frame["is_human"] & (frame["entry"] == frame["model"])  # not a system or rule
    for model, sub in frame[own_rows].groupby("model"):
        configs = {c: json.loads(c) for c in sub["run_config"].unique()}
        if len(configs) < 2:
            continue
        shared = set.intersection(
            *({(k, json.dumps(v, sort_keys=True)) for k, v in c.items()} for c in configs.values())
        )
        for key, config in configs.items():
            own = [
                f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
                for k, v in sorted(config.items())
                if (k, json.dumps(v, sort_keys=True)) not in shared
            ]
            label = f"{model} ({', '.join(own) if own else 'default settings'})"
            frame.loc[
                own_rows & (frame["model"] == model) & (frame["run_config"] == key), "entry"
            ] = label


def task_matches(task: str, tasks: Sequence[str]) -> bool:
    """Whether a log's task is one of ``tasks``, namespaced or not (a task run in-process from a
    checkout of this repository, rather than the installed package, is logged without the
    ``gem_tasks/`` prefix)."""
    return any(task == t or task.split("/")[-1] == t.split("/")[-1] for t in tasks)


def _with_task(signature: Any, task: str) -> dict[str, Any] | None:
    """The signature a row is grouped by: a log of another task than ``gem_tasks/iclr`` adds
    its task, so that reviews written for different prompts are never ranked together."""
    if not isinstance(signature, dict):
        return None
    if task_matches(task, (ICLR_TASK,)):
        return signature
    return {**signature, "task": task.split("/")[-1]}


def _read_log(path: str, header: EvalLog, notes: list[str]) -> list[dict[str, Any]]:
    """Score rows of one log (header and sample summaries only; a sample is read in full only
    when its summary dropped an over-long signature)."""
    shown = _display_path(path)
    human = _is_human(header)
    base = {
        "log": shown,
        "created": header.eval.created,
        "model": header.eval.model,
        "entry": _entry(header, human),
        "is_human": human,
        "setup": _setup(header),
        "run_config": _run_config(header),
    }
    if header.status != "success":
        notes.append(f"{shown}: status {header.status}; its finished samples are included")
    names = [s.name for s in (header.results.scores if header.results else [])]
    rows: list[dict[str, Any]] = []
    for summary in read_eval_log_sample_summaries(path):
        for sample in _places(base, summary, rows, header.eval.task):
            rows += _score_rows(path, summary, sample, names, header.eval.task)
    non_numeric = sorted({r["scorer"] for r in rows if r["status"] == "non-numeric"})
    if non_numeric:
        notes.append(f"{shown}: scorer(s) {non_numeric} have non-numeric values; left out")
    rows = [r for r in rows if r["status"] != "non-numeric"]
    if not rows:
        notes.append(f"{shown}: no scores (scored with --no-score? run `inspect score`)")
    return _resolve_signatures(rows, shown, notes)


def _places(
    base: dict[str, Any], summary: Any, rows: list[dict[str, Any]], task: str
) -> list[dict[str, Any]]:
    """The rows one sample stands for: itself; a rated system's report as that system's row
    (its human ratings added to ``rows``); a text several systems or pairs share (one sample,
    :data:`~scorers.data.candidates.MEMBERS`) as the row of every place it appears, each with
    that place's ratings."""
    sample = {**base, "paper": str(summary.id), "epoch": summary.epoch}
    meta = summary.metadata or {}
    system = _existing_candidate(meta)
    if system is None:
        return [sample]
    members = meta.get(MEMBERS) or [
        {"record": meta.get("paper_id") or summary.id, "candidate": system.split(":", 1)[1],
         "ratings": meta.get("ratings")}
    ]  # fmt: skip
    places = []
    for member in members:
        place = {**sample, "entry": f"system:{member['candidate']}", "paper": str(member["record"])}
        rows += _rating_rows(place, {"ratings": member.get("ratings")}, task)
        places.append(place)
    return places


def _score_rows(
    path: str, summary: Any, sample: dict[str, Any], names: list[str], task: str
) -> list[dict[str, Any]]:
    """The score rows of one sample at one place (an error row per scorer for an errored
    sample)."""
    rows: list[dict[str, Any]] = []
    if summary.error:
        for name in dict.fromkeys([*names, *(summary.scores or {})]):
            rows.append(
                {
                    **sample,
                    "scorer": name,
                    "value": math.nan,
                    "status": "error",
                    "sig": None,
                    "details": None,
                }
            )
        return rows
    for name, score in (summary.scores or {}).items():
        if name not in names:
            names.append(name)
        value = as_float(score.value)
        if value is None:
            rows.append({**sample, "scorer": name, "value": None, "status": "non-numeric"})
            continue
        metadata = dict(score.metadata or {})
        signature = metadata.get("signature")
        fields = _headline_fields(signature, name)
        if isinstance(signature, str) or any(
            isinstance(metadata.get(f), str) and metadata[f] == _THINNED for f in fields
        ):  # the summary dropped a value (> 1k) the leaderboard needs: read this sample
            full = read_eval_log_sample(
                path, id=summary.id, epoch=summary.epoch, exclude_fields=_SLIM_SAMPLE
            )
            metadata = dict((full.scores or {})[name].metadata or {})
            signature = metadata.get("signature")
            fields = _headline_fields(signature, name)
        rows.append(
            {
                **sample,
                "scorer": name,
                "value": value,
                "status": "scored" if math.isfinite(value) else "unscored",
                "sig": _with_task(signature, task),
                "details": {f: metadata.get(f) for f in fields} if fields else None,
            }
        )
    return rows


def _existing_candidate(meta: Mapping[str, Any]) -> str | None:
    """``system:<id>`` when the sample's answer is an existing system's report
    (``candidate=system:<id>`` or ``candidates``), else None (the model under test's, or a
    human's)."""
    answer = meta.get("answer")
    source = answer.get("source") if isinstance(answer, Mapping) else None
    return source if isinstance(source, str) and source.startswith("system:") else None


def _rating_rows(
    sample: dict[str, Any], meta: Mapping[str, Any], task: str
) -> list[dict[str, Any]]:
    """The human ratings stored with the sample's candidate, one row per dimension and their
    mean (:data:`RATING_PREFIX`); none when it has none."""
    ratings = meta.get("ratings")
    if not isinstance(ratings, Mapping) or not ratings:
        return []
    values = {str(k): as_float(v) for k, v in ratings.items()}
    numeric = [v for v in values.values() if v is not None]
    if len(numeric) == len(values):
        values["mean"] = sum(numeric) / len(numeric)
    out = []
    for dimension, value in values.items():
        name = f"{RATING_PREFIX}{dimension}"
        signature = {"metric": name, "source": "human ratings stored with the data"}
        out.append(
            {
                **sample,
                "scorer": name,
                "value": math.nan if value is None else value,
                "status": "unscored" if value is None else "scored",
                "sig": _with_task(signature, task),
            }
        )
    return out


def _resolve_signatures(
    rows: list[dict[str, Any]], shown: str, notes: list[str]
) -> list[dict[str, Any]]:
    """Give every row of a (log, scorer) the scorer's signature in that log: the most common one
    among its samples. Samples scored under another signature stay in (Inspect's own metrics
    count them too) and are flagged ``other_signature``; samples without one (errored, or
    unscored before scoring began) take the log's."""
    by_scorer: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_scorer.setdefault(row["scorer"], []).append(row)
    for scorer, group in by_scorer.items():
        counts = Counter(_canonical(r["sig"]) for r in group if r.get("sig"))
        if counts:
            key = counts.most_common(1)[0][0]
        else:
            key = json.dumps({"metric": scorer, "note": "no signature in the log"})
        signature = json.loads(key)
        other, fields = 0, set()
        for row in group:
            own = row.pop("sig", None)
            row["metric"] = signature.get("metric", scorer)
            row["signature"] = key
            row["other_signature"] = bool(own) and _canonical(own) != key
            if row["other_signature"]:
                other += 1
                fields.update(signature_differences(signature, own))
        if other:
            fields = sorted(fields)
            notes.append(
                f"{shown}: {other} sample(s) of scorer {scorer} carry another signature than the "
                f"log's{' (' + ', '.join(fields) + ')' if fields else ''}; counted in "
                "'other_signature' and kept"
            )
    return rows


_SCORE_COLUMNS = [
    "log",
    "created",
    "model",
    "entry",
    "is_human",
    "setup",
    "run_config",
    "paper",
    "epoch",
    "scorer",
    "metric",
    "signature",
    "value",
    "status",
    "other_signature",
    "details",
]


def read_scores(
    sources: Sequence[str | Path],
    *,
    tasks: Sequence[str] = LEADERBOARD_TASKS,
    progress: bool = True,
) -> pd.DataFrame:
    """One row per log, scorer, sample and epoch from the logs under ``sources`` (files or
    folders, searched recursively): the model (``entry`` is the row label, ``HUMAN_LABEL`` for
    the human baseline), paper id, metric, signature (canonical JSON without ``id``), value (NaN
    when unscored or errored), status (``scored``, ``unscored``, ``error``) and, for a metric
    whose headline is a corpus statistic, the result-metadata ``details`` it is computed from.
    Only the logs' headers and sample summaries are read. Runs of one model with different
    generation settings get different labels (see ``_label_configs``). Logs of other tasks and
    logs still running are skipped; ``attrs["notes"]`` says which, and anything else worth knowing.

    ``attrs["logs"]`` lists every log read: its path, status, error message (if any) and how
    many of its rows were scored.

    Raises:
        FileNotFoundError: a source does not exist.
        ValueError: no log of ``tasks`` was found, or the logs hold no score at all (each log's
            status and error are in the message).
    """
    paths = log_paths(sources)
    if not paths:
        raise ValueError(f"no Inspect logs in {', '.join(str(s) for s in sources)}")
    notes: list[str] = []
    rows: list[dict[str, Any]] = []
    logs: list[dict[str, Any]] = []
    for path in tqdm(paths, desc="reading logs", disable=not progress, unit="log"):
        header = read_eval_log(path, header_only=True)
        if not task_matches(header.eval.task, tasks):
            notes.append(f"{_display_path(path)}: task {header.eval.task} skipped")
            continue
        if header.status == "started":
            notes.append(f"{_display_path(path)}: still running (status started), skipped")
            continue
        found = _read_log(path, header, notes)
        rows += found
        logs.append(
            {
                "log": _display_path(path),
                "status": header.status,
                "error": header.error.message if header.error else None,
                "rows": len(found),
                "scored": sum(r["status"] == "scored" for r in found),
            }
        )
    if not logs:
        raise ValueError(
            f"no logs of task {', '.join(tasks)} in {', '.join(str(s) for s in sources)} "
            f"({len(paths)} other log(s) skipped)"
        )
    if not rows:
        raise ValueError(nothing_to_rank(logs))
    frame = pd.DataFrame(rows, columns=_SCORE_COLUMNS)
    frame["value"] = frame["value"].astype(float)
    _label_configs(frame)
    frame.attrs["notes"] = notes
    frame.attrs["logs"] = logs
    return frame


def nothing_to_rank(logs: Sequence[Mapping[str, Any]]) -> str:
    """Why there is nothing to rank: each log's status, error and rows (none of them scored)."""
    lines = [
        f"{log['log']}: status {log['status']}"
        + (f", error: {log['error']}" if log.get("error") else "")
        + f", {log['rows']} sample score(s), {log['scored']} scored"
        for log in logs
    ]
    return (
        "nothing to rank: no log holds a scored sample (an interrupted or failed run? resume it "
        "with `inspect eval-retry`, or score it with `inspect score`):\n  " + "\n  ".join(lines)
    )


def metric_spec_or_none(metric: str) -> MetricSpec | None:
    """The registry's spec of ``metric`` (None for a name it does not know, e.g. a human rating
    row or a metric of a newer version of the package)."""
    return _spec(metric)


def _spec(metric: str) -> MetricSpec | None:
    try:
        return metric_spec(metric)
    except UnknownMetricError:
        return None


def metric_name(metric: str) -> str:
    """Display name of a signature's ``metric`` from the registry (``gem_s_abstract``, the name
    older logs carry, -> ``GEM-S (abstract)``); an unregistered name is shown as it is."""
    spec = _spec(metric)
    return spec.display_name if spec else metric


def metric_order(metric: str) -> tuple[int, str]:
    """Sort key: registry order, unregistered metrics last."""
    names = [spec.name for spec in list_metrics()]
    spec = _spec(metric)
    return (names.index(spec.name) if spec else len(names), metric)


def headline_name(metric: str) -> str:
    """The name of the metric's headline from the registry: ``mean`` for a per-item mean (and
    for an unregistered metric), else the corpus statistic's (``balanced_accuracy``)."""
    spec = _spec(metric)
    return spec.headline_name if spec else "mean"


def headline_kind(metric: str) -> str:
    """``per-item mean`` or ``corpus statistic`` (an unregistered metric: a per-item mean)."""
    spec = _spec(metric)
    return spec.headline_kind if spec else PER_ITEM_MEAN


def is_proportion(metric: str) -> bool:
    """Whether the metric's per-paper values are 0/1 indicators (its mean a rate, its interval
    Wilson's); an unregistered metric is not."""
    spec = _spec(metric)
    return bool(spec and spec.proportion)


def higher_is_better(metric: str) -> bool:
    """The metric's direction from the registry (an unregistered metric: higher is better)."""
    spec = _spec(metric)
    return spec.higher_is_better if spec else True


def signature_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Dotted names of the fields in which two signatures differ (``id`` and the package version
    ignored; the prompts compared template by template, e.g. ``prompts.gem/predict_user``)."""
    fields: list[str] = []
    for key in sorted((set(a) | set(b)) - set(INFORMATIONAL)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, Mapping) and isinstance(y, Mapping):
            fields += [f"{key}.{sub}" for sub in signature_differences(x, y)]
        elif x != y:
            fields.append(key)
    return fields
