"""GRE-bench in lm-evaluation-harness: the functions the task configs call.

The model under test writes a review of each paper with the GEM paper's App. C.3 prompt
(``generate_until``). The reviews of the whole run are then scored in one batch by the harness-free
core (:mod:`scorers`): a filter (:func:`score_reviews`) sees every response with its document,
builds the same :class:`~scorers.types.Item` the Inspect task builds
(:func:`scorers.data.paper_docs.item_from_document`) and scores all of them concurrently, so the
evaluation LM batches requests across papers and shares the one sqlite cache with Inspect runs.
:func:`process_results` then reads each sample's numbers back, so ``--log_samples`` holds every
per-sample value, unscored reason and signature.

Options come from the task config's ``metadata`` and lm_eval's ``--metadata`` JSON (which also
carries lm_eval's own model arguments; keys that are not ours are left alone, but a near-miss of
one of ours is an error): ``dataset`` (canonical records: path or Hub id; default the bundled demo),
``references`` (2), ``seed`` (0), ``max_paper_tokens`` (12000), ``candidate`` (``model``, or
``human``: the held-out human review replaces the model's answer, the human baseline),
``scorers`` (the config's metric list), ``scorer_lm`` (``embedded``), ``scorer_lm_args``,
``dataset_summaries`` (false), ``scorer_options``, ``cache_dir``, ``negatives``; all with the
meanings of the Inspect task ``gem_tasks/iclr``.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

from scorers.data.candidates import Candidate
from scorers.data.paper_docs import item_from_document
from scorers.data.task_data import report_prompt
from scorers.registry import resolve_metric_names
from scorers.resources import Resources
from scorers.settings import ScoringSettings
from scorers.types import Result

__all__ = [
    "DEFAULT_SCORERS",
    "HarnessOptions",
    "load_docs",
    "process_results",
    "score_reviews",
    "total",
]

DEFAULT_SCORERS = "gem,gem_raw,gem_s,bleu,rouge_l,bertscore,bartscore_f1"
"""The metrics of ``gre_bench_iclr``: GEM, GEM-raw, GEM-S and the GEM paper's cheap baselines."""


@dataclass(frozen=True)
class HarnessOptions(ScoringSettings):
    """The task options (see the module doc), validated: the scoring settings every harness
    takes (:class:`scorers.settings.ScoringSettings`) and the task's own."""

    scorers: str = DEFAULT_SCORERS
    dataset_summaries: bool = False
    dataset: str | None = None
    references: int = 2
    seed: int = 0
    max_paper_tokens: int = 12000
    candidate: str = "model"

    def __post_init__(self) -> None:
        Candidate.parse(self.candidate, allowed=("model", "human"))
        resolve_metric_names(self.scorers)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> HarnessOptions:
        """Our options out of lm_eval's metadata (which also holds the model's arguments and
        lm_eval's own keys); a key within a typo of one of ours is a ``ValueError``."""
        ours = {f.name for f in fields(cls)}
        for key in metadata:
            if key not in ours:
                close = difflib.get_close_matches(key, ours, n=1, cutoff=0.85)
                if close:
                    raise ValueError(
                        f"unknown GRE-bench option {key!r}: did you mean {close[0]!r}?"
                    )
        return cls(**{k: v for k, v in metadata.items() if k in ours})

    def metrics(self) -> dict[str, Any]:
        """The core metrics asked for, each built with the options it has (settings checked
        when the documents were loaded)."""
        return dict(self.plan(checked=False).metrics)


def load_docs(**metadata: Any) -> Any:
    """``custom_dataset`` of the task configs: one document per paper of the dataset (split
    ``test``), holding the prompt's two turns, the scoring document as JSON and the options."""
    from datasets import Dataset, DatasetDict

    from gem_tasks.tasks.samples import DEMO_DATASET

    options = HarnessOptions.from_metadata(metadata)
    # a bad scorer name, option, evaluation LM or server stops the run before lm_eval asks the
    # model under test for anything
    plan = options.plan()
    data = options.load(
        DEMO_DATASET if options.dataset is None else options.dataset,
        plan,
        domains=frozenset({"peer_review"}),
    )
    rows = []
    for record in data.records:
        text, document = data.document(
            record,
            references=options.references,
            seed=options.seed,
            max_paper_tokens=options.max_paper_tokens,
        )
        system_prompt, user_prompt = report_prompt(record, text)
        rows.append(
            {
                "paper_id": record.id,
                "system_prompt": system_prompt,
                "user_prompt": user_prompt,
                "held_out_review": document["held_out"]["text"],
                "document": json.dumps(document, ensure_ascii=False),
                "options": json.dumps(asdict(options), sort_keys=True),
            }
        )
    return DatasetDict({"test": Dataset.from_list(rows)})


def _result_row(result: Result) -> dict[str, Any]:
    return {"value": result.value, **result.metadata(), "explanation": result.explanation}


async def _score_all(
    metrics: Mapping[str, Any], items: Sequence[Any], resources: Resources
) -> list[dict[str, dict[str, Any]]]:
    rows: list[dict[str, dict[str, Any]]] = [{} for _ in items]
    for name, metric in metrics.items():
        results = await asyncio.gather(*(metric.ascore(item, resources) for item in items))
        for row, result in zip(rows, results, strict=True):
            row[name] = _result_row(result)
    return rows


def score_reviews(resps: Sequence[Sequence[str]], docs: Sequence[Mapping[str, Any]]) -> list:
    """lm_eval filter: every document's response(s) scored in one batch. Each response becomes
    the JSON text of ``{"candidate_source", "candidate", "scores": {metric: {"value",
    "unscored_reason", "signature", ...}}}`` (text, because lm_eval logs filtered responses as
    strings)."""
    if not docs:
        return []
    options = HarnessOptions(**json.loads(docs[0]["options"]))
    metrics = options.metrics()
    where: list[tuple[int, int]] = []
    items = []
    for i, (responses, doc) in enumerate(zip(resps, docs, strict=True)):
        document = json.loads(doc["document"])
        for j, response in enumerate(responses):
            text = doc["held_out_review"] if options.candidate == "human" else response
            items.append(item_from_document(document, candidate=text))
            where.append((i, j))
    scored = asyncio.run(_score_all(metrics, items, options.resources()))
    out: list[list[str]] = [[""] * len(r) for r in resps]
    for (i, j), item, scores in zip(where, items, scored, strict=True):
        out[i][j] = json.dumps(
            {"candidate_source": options.candidate, "candidate": item.candidate, "scores": scores},
            ensure_ascii=False,
        )
    return out


def process_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """One sample's numbers: ``<metric>`` (NaN when unscored; the aggregation is ``nanmean``)
    and ``<metric>_unscored`` (1 when unscored, summed over the run)."""
    (text,) = results
    scored = json.loads(text)
    out: dict[str, float] = {}
    for name, row in scored["scores"].items():
        value = row["value"]
        out[name] = math.nan if value is None else float(value)
        out[f"{name}_unscored"] = 0.0 if value is not None else 1.0
    return out


def total(values: Sequence[float]) -> float:
    """Aggregation: the sum (the number of unscored samples of a metric)."""
    return float(sum(values))
