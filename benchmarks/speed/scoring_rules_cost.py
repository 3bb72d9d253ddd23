"""Cost of each Scoring Rules cell and GPPM variant per sample: oracle calls, log-probability
requests, seconds, unscored samples (Scoring Rules paper §12 "Cost per item"; issue: cost).

Every metric scores the same items (the held-out human review of each paper as candidate, its
reference reviews as positives, ``--negatives`` reviews of other papers as negatives) with the
evaluation LM also serving as oracle and preprocessor. Each metric gets its own empty cache, so
its time includes the rewrites and decompositions it needs, which a second model scored against
the same references would not pay again (they are cached; ``tests/metrics/fmi/test_fmi.py``
checks that a second model pays only for its own questions).

    python -m benchmarks.speed.scoring_rules_cost --papers 4 \
        --metric-options '{"gppm_cluster": {"fit_on": "gem_tasks/tasks/data/demo_iclr.jsonl"}}'
    python -m benchmarks.speed.scoring_rules_cost --papers 2 --scorer-lm hf/<folder of a tiny model>

Writes a JSON file and prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from benchmarks.common.machine import describe_machine
from benchmarks.common.manifest import Run
from benchmarks.common.paths import DEMO
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.data.negatives import draw_negatives
from scorers.data.records import load_records, split_reviews
from scorers.lm.loading import DTYPES
from scorers.registry import list_metrics

HERE = Path(__file__).resolve().parent


def items_from(
    path: Path, *, papers: int, references: int, negatives: int, seed: int
) -> list[Item]:
    records = load_records(path)
    out = []
    for record in records[:papers]:
        split = split_reviews(record, references=references, seed=seed)
        drawn = draw_negatives(record, records, k=negatives, seed=seed)
        out.append(
            Item(
                Paper(record.id, record.title, record.abstract, record.paper_text, record.assw),
                split.held_out.text,
                tuple(Review(r.id, r.text, r.summary) for r in split.references),
                tuple(Review(n.id, n.review.text, n.review.summary) for n in drawn),
            )
        )
    return out


def measure(
    name: str, items: list[Item], *, scorer_lm: str, lm_args: dict, options: dict | None = None
) -> dict:
    with tempfile.TemporaryDirectory() as cache:
        resources = Resources(
            evaluation_lm=scorer_lm, evaluation_lm_options=lm_args, cache_dir=cache
        )
        resources.lm()  # loading is not part of the cost per sample
        metric = get_metric(name, **(options or {}))

        async def run() -> list:
            return list(await asyncio.gather(*(metric.ascore(i, resources) for i in items)))

        started = time.perf_counter()
        results = asyncio.run(run())
        seconds = time.perf_counter() - started
    scored = [r for r in results if r.value is not None]
    return {
        "metric": name,
        "options": options or {},
        "samples": len(items),
        "scored": len(scored),
        "unscored_reasons": sorted({r.reason for r in results if r.reason})[:3],
        "oracle_calls_per_sample": sum(r.details.get("oracle_calls", 0) for r in results)
        / len(items),
        "logprob_requests_per_sample": sum(r.details.get("logprob_requests", 0) for r in results)
        / len(items),
        "seconds_per_sample": seconds / len(items),
        "mean": sum(r.value for r in scored) / len(scored) if scored else None,
    }


SETTINGS = ("data", "papers", "references", "negatives", "scorer_lm", "dtype", "machine")
"""What two runs must share for their rows to stand in one table."""


def kept_rows(earlier: dict, report: dict, measuring: list[str]) -> list[dict]:
    """The rows of ``earlier`` (a previous output) for metrics not in ``measuring``.

    Raises:
        SystemExit: ``earlier`` was measured with other settings or on another machine.
    """
    differ = [key for key in SETTINGS if earlier.get(key) != report.get(key)]
    if differ:
        raise SystemExit(f"--keep: the earlier output differs in {differ}; use another --out")
    return [row for row in earlier.get("rows", []) if row["metric"] not in measuring]


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEMO)
    parser.add_argument("--papers", type=int, default=4)
    parser.add_argument("--references", type=int, default=1)
    parser.add_argument("--negatives", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scorer-lm", default="embedded")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    parser.add_argument("--metrics", nargs="*", help="default: every fmi/gppm metric")
    parser.add_argument(
        "--metric-options",
        type=json.loads,
        default={},
        help='per-metric options as JSON, e.g. \'{"gppm_cluster": {"fit_on": "papers.jsonl"}}\'',
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=HERE / "results" / "scoring_rules_cost" / "scoring_rules_cost.json",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the rows of metrics not measured now from --out (same settings only)",
    )
    args = parser.parse_args(argv)
    names = args.metrics or [s.name for s in list_metrics() if s.family in ("fmi", "gppm")]
    if unused := sorted(set(args.metric_options) - set(names)):
        # an alias (gppm_j, tvd_mi, ctv) is measured under its cell's name: options given under
        # the alias would be silently unused
        raise SystemExit(f"--metric-options for metrics not measured: {unused}; measured: {names}")
    provenance = Run(args.out.parent, data=[args.data], settings=vars(args))
    items = items_from(
        args.data,
        papers=args.papers,
        references=args.references,
        negatives=args.negatives,
        seed=args.seed,
    )
    report = {
        "data": str(args.data),
        "papers": args.papers,
        "references": args.references,
        "negatives": args.negatives,
        "scorer_lm": args.scorer_lm,
        "dtype": args.dtype,
        "machine": describe_machine(),
        "rows": [],
    }
    rows = report["rows"]
    if args.keep and args.out.exists():
        rows.extend(kept_rows(json.loads(args.out.read_text()), report, names))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in names:
        row = measure(
            name,
            items,
            scorer_lm=args.scorer_lm,
            lm_args={"dtype": args.dtype},
            options=args.metric_options.get(name),
        )
        rows.append(row)
        # written after every metric, so that an interrupted run keeps what it measured
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print(
            f"{name}: {row['seconds_per_sample']:.2f} s/sample, "
            f"{row['oracle_calls_per_sample']:.1f} oracle calls, "
            f"{row['logprob_requests_per_sample']:.1f} log-prob requests, "
            f"{row['scored']}/{row['samples']} scored",
            flush=True,
        )
    print("\n| metric | s/sample | oracle calls | log-prob requests | scored |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        print(
            f"| {row['metric']} | {row['seconds_per_sample']:.2f} | "
            f"{row['oracle_calls_per_sample']:.1f} | {row['logprob_requests_per_sample']:.1f} | "
            f"{row['scored']}/{row['samples']} |"
        )
    provenance.finish()
    return report


if __name__ == "__main__":
    main()
