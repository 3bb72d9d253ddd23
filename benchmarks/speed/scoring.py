"""Scoring speed: the reference-style computation against our backends, on one workload, in one
process.

Workload: GEM and GEM-S prediction prompts (conditional and marginal) built from the ICLR 2023
judgment summaries in ``data/iclr2023_gem`` (``gem-tasks data fetch iclr2023-gem``; the bundled
demo when absent); GEM-S uses ICLR 2020 abstracts from ``data/iclr2020_gppm`` as synopses
(length-realistic stand-ins; the 2023 release has no abstracts). Each (candidate, reference)
pair is two requests.

Backends, side by side, after a check that each returns the baseline's log-probabilities within
the stated tolerance:

- ``baseline``: the authors' notebook computation: batch 1, one full forward pass per request,
  full-vocabulary log-softmax over every position, gather;
- ``hf``: our transformers backend (shared prompt prefixes computed once and reused through the
  KV cache, token-budget batches, projection at target positions only);
- ``hf-no-reuse``: the same without prefix reuse (an ablation);
- ``vllm``: our in-process vLLM engine, where vLLM is importable (the CPU build here).

The papers are split into ``--rounds`` groups (default 4) and the backends take turns on each
group, the order rotated from round to round, so that a drift in the machine's speed (a shared
or throttling CPU) falls on every backend alike; the per-round speed-ups show the spread.

Then the cost of m = 1, 2, 4 candidate models on the same references through the cache
(forward passes and tokens computed; marginals are paid once) and the hit rate of a re-run.

    python -m benchmarks.speed.scoring --pairs 40

``--export-workload FILE`` writes the requests' token ids instead of timing them, for
``benchmarks/speed/scoring_gpu.py`` (the 8B-shaped GPU run); the file is derived from the review
data: do not commit it.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import random
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import torch

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DATA
from benchmarks.speed.reference import baseline_logprobs
from scorers.lm import load_evaluation_lm
from scorers.lm.base import ScoringRequest
from scorers.lm.cache import CachedEvaluationLM, ScoreCache
from scorers.lm.chat import build_scoring_request
from scorers.lm.hf import HFEvaluationLM
from scorers.lm.hf.prefix_tree import scoring_plan, tokens_computed
from scorers.pmi import NOT_AVAILABLE, prediction_messages

HERE = Path(__file__).resolve().parent
TOLERANCE_PER_TOKEN = 3e-5  # fp32 vs fp32 with other kernels (README, "Agreement between backends")


class PeakRSS:
    """Peak resident memory of this process (and its children) while the block runs."""

    def __enter__(self) -> PeakRSS:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        process = psutil.Process()
        while not self._stop.is_set():
            rss = process.memory_info().rss + sum(
                c.memory_info().rss for c in process.children(recursive=True)
            )
            self.peak = max(self.peak, rss)
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def workload_files() -> list[Path]:
    from gem_tasks.tasks.samples import DEMO_DATASET

    """The files :func:`load_workload` reads: the fetched review data, or the bundled demo."""
    fetched = [
        DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl",
        DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl",
    ]
    return fetched if all(path.exists() for path in fetched) else [Path(DEMO_DATASET)]


def load_workload(pairs: int, seed: int) -> tuple[list[tuple[str, str, str]], str]:
    """(synopsis, candidate judgments, reference judgments) triples, paper by paper as GEM-bench
    scores them: each paper's first review is the candidate, scored against every other review,
    with GEM (synopsis "Not available") and GEM-S (an abstract)."""
    rng = random.Random(seed)
    gem_file = DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"
    abstracts_file = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
    if gem_file.exists() and abstracts_file.exists():
        papers = [json.loads(line) for line in gem_file.open()]
        summaries = [[r["review_summary"] for r in p["reviews"]] for p in papers]
        abstracts = [json.loads(line)["abstract"] for line in abstracts_file.open()]
        source = "iclr2023_gem summaries + iclr2020 abstracts"
    else:
        from gem_tasks.tasks.samples import DEMO_DATASET
        from scorers.data.records import load_records

        records = load_records(DEMO_DATASET)
        summaries = [[r.summary for r in p.reviews] for p in records]
        abstracts = [p.abstract for p in records]
        source = "bundled demo"
    triples: list[tuple[str, str, str]] = []
    paper = 0
    while len(triples) < pairs:
        candidate, *references = summaries[paper % len(summaries)]
        for synopsis in (NOT_AVAILABLE, rng.choice(abstracts)):
            triples.extend((synopsis, candidate, reference) for reference in references)
        paper += 1
    return triples[:pairs], source


def build_requests(tokenizer: object, triples: list[tuple[str, str, str]]) -> list[ScoringRequest]:
    requests = []
    for synopsis, x, y in triples:
        for judgments in (x, NOT_AVAILABLE):
            messages = prediction_messages(synopsis=synopsis, judgments=judgments.strip())
            requests.append(build_scoring_request(tokenizer, messages, y.strip()))
    return requests


def paper_groups(triples: list[tuple[str, str, str]], rounds: int) -> list[list[int]]:
    """Request indices split into ``rounds`` contiguous groups of whole papers (a paper's
    triples share its candidate), as even as the papers allow."""
    papers: list[list[int]] = []
    previous = None
    for t, (_, candidate, _) in enumerate(triples):
        if candidate != previous:
            papers.append([])
            previous = candidate
        papers[-1].extend((2 * t, 2 * t + 1))  # build_requests: two requests per triple
    rounds = max(1, min(rounds, len(papers)))
    groups: list[list[int]] = [[] for _ in range(rounds)]
    for p, indices in enumerate(papers):
        groups[p * rounds // len(papers)].extend(indices)
    return groups


def interleaved(
    runs: dict[str, Callable[[list[ScoringRequest]], list[float]]],
    requests: list[ScoringRequest],
    groups: list[list[int]],
    n_pairs: int,
) -> list[dict]:
    """Every backend on every group of papers, the order rotated from group to group, so a
    drift in the machine's speed during the run falls on all backends alike."""
    names = list(runs)
    seconds = {n: [] for n in names}
    totals: dict[str, list[float]] = {n: [0.0] * len(requests) for n in names}
    peaks = {n: 0 for n in names}
    for g, group in enumerate(groups):
        batch = [requests[i] for i in group]
        shift = g % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            with PeakRSS() as memory:
                started = time.perf_counter()
                got = runs[name](batch)
                seconds[name].append(time.perf_counter() - started)
            peaks[name] = max(peaks[name], memory.peak)
            for i, total in zip(group, got):
                totals[name][i] = total
    tokens = sum(r.length for r in requests)
    return [
        {
            "backend": name,
            "seconds": sum(seconds[name]),
            "round_seconds": seconds[name],
            "pairs_per_s": n_pairs / sum(seconds[name]),
            "tokens_per_s": tokens / sum(seconds[name]),
            "peak_rss_gb": peaks[name] / 2**30,
            "totals": totals[name],
        }
        for name in names
    ]


def timed(name: str, run, requests: list[ScoringRequest], n_pairs: int) -> dict:
    return interleaved({name: run}, requests, [list(range(len(requests)))], n_pairs)[0]


def check_agreement(name: str, totals: list[float], reference: list[float], requests) -> float:
    worst = 0.0
    for got, want, request in zip(totals, reference, requests):
        allowed = TOLERANCE_PER_TOKEN * len(request.target_ids) + 1e-4
        if abs(got - want) > allowed:
            raise SystemExit(f"{name} disagrees with the baseline: {got} vs {want} (> {allowed})")
        worst = max(worst, abs(got - want))
    return worst


def candidate_cost(lm: object, triples: list[tuple[str, str, str]], models: int) -> dict:
    """Requests and tokens computed for ``models`` candidate models on the same references."""
    with tempfile.TemporaryDirectory() as folder:
        cached = CachedEvaluationLM(lm, ScoreCache(Path(folder) / "c.sqlite"))
        for m in range(models):
            # model m's review of paper i: another review's judgments, so candidates differ
            shifted = [(s, f"{x}\n(model {m})", y) for s, x, y in triples]
            cached.target_logprobs(build_requests(lm.tokenizer, shifted))
        computed = dict(cached.computed)
        stats = cached.cache.stats
        hits, misses = stats["logprob_hit"], stats["logprob_miss"]
        started = time.perf_counter()
        for m in range(models):
            shifted = [(s, f"{x}\n(model {m})", y) for s, x, y in triples]
            cached.target_logprobs(build_requests(lm.tokenizer, shifted))
        rerun_seconds = time.perf_counter() - started
        rerun_hits, rerun_misses = stats["logprob_hit"] - hits, stats["logprob_miss"] - misses
        return {
            "models": models,
            "forward_requests": computed.get("logprob_requests", 0),
            "tokens_computed": computed.get("logprob_tokens", 0),
            "naive_requests": 2 * len(triples) * models,
            "rerun_hit_rate": rerun_hits / max(1, rerun_hits + rerun_misses),
            "rerun_seconds": rerun_seconds,
            "rerun_new_requests": cached.computed.get("logprob_requests", 0)
            - computed.get("logprob_requests", 0),
        }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--rounds",
        type=int,
        default=4,
        help="groups of papers; the backends take turns on each (default 4)",
    )
    parser.add_argument("--no-vllm", action="store_true")
    parser.add_argument(
        "--cost-models",
        type=int,
        nargs="+",
        default=[1, 2, 4],
        help="numbers of candidate models whose scoring cost on shared references is counted "
        "(default 1 2 4)",
    )
    parser.add_argument(
        "--out", type=Path, default=HERE / "results" / "scoring_cpu" / "scoring_cpu.json"
    )
    parser.add_argument(
        "--export-workload", type=Path, help="only write the requests' token ids to this file"
    )
    args = parser.parse_args(argv)
    if any(m < 1 for m in args.cost_models):
        parser.error(f"--cost-models must be positive numbers, got {args.cost_models}")
    provenance = (
        None
        if args.export_workload
        else Run(args.out.parent, data=workload_files(), settings=vars(args))
    )
    torch.manual_seed(args.seed)
    lm = load_evaluation_lm("embedded").backend  # the transformers backend itself
    triples, source = load_workload(args.pairs, args.seed)
    requests = build_requests(lm.tokenizer, triples)
    print(
        f"workload: {args.pairs} pairs ({len(requests)} requests, "
        f"{sum(r.length for r in requests)} tokens) from {source}; torch threads "
        f"{torch.get_num_threads()}"
    )

    if args.export_workload:
        rows = [{"context": r.context_ids, "target": r.target_ids} for r in requests]
        args.export_workload.parent.mkdir(parents=True, exist_ok=True)
        args.export_workload.write_text(json.dumps({"source": source, "requests": rows}))
        print(f"wrote {len(rows)} requests to {args.export_workload}")
        return {"source": source, "exported": len(rows)}
    lengths = [r.length for r in requests]
    groups = paper_groups(triples, args.rounds)
    planned = 0
    for group in groups:  # each round is one call, planned on its own
        plan, _ = scoring_plan(
            [requests[i] for i in group], min_shared=lm.options.min_shared_prefix
        )
        planned += tokens_computed(plan, [lengths[i] for i in group])
    print(
        f"prefix reuse: {planned} of {sum(lengths)} tokens run through the model "
        f"({len(groups)} rounds of whole papers, the backends taking turns)"
    )

    no_reuse = HFEvaluationLM(
        lm.model,
        lm.tokenizer,
        identity="ablation",
        prefix_reuse=False,
        max_batch_tokens=lm.options.max_batch_tokens,
    )
    results = interleaved(
        {
            "baseline": lambda rs: baseline_logprobs(lm.model, rs),
            "hf": lambda rs: [r.total for r in lm.target_logprobs(rs)],
            "hf-no-reuse": lambda rs: [r.total for r in no_reuse.target_logprobs(rs)],
        },
        requests,
        groups,
        args.pairs,
    )
    reference = results[0]["totals"]
    for run in results[1:]:
        run["max_abs_diff"] = check_agreement(run["backend"], run["totals"], reference, requests)
        ratios = [b / o for b, o in zip(results[0]["round_seconds"], run["round_seconds"])]
        run["round_speedups"] = ratios
    if not args.no_vllm and importlib.util.find_spec("vllm") is not None:
        from benchmarks.common.vllm_engine import embedded_vllm_engine

        engine = embedded_vllm_engine(kv_cache_memory_bytes=1 << 30)
        engine.target_logprobs(requests[:2])  # warm-up
        run = timed(
            "vllm", lambda rs: [r.total for r in engine.target_logprobs(rs)], requests, args.pairs
        )
        run["max_abs_diff"] = check_agreement("vllm", run["totals"], reference, requests)
        results.append(run)
        engine.close()

    base = results[0]["pairs_per_s"]
    print(
        f"\n{'backend':12} {'pairs/s':>9} {'tokens/s':>10} {'x baseline':>11} "
        f"{'peak RSS GB':>12} {'max |diff|':>11}"
    )
    for r in results:
        spread = r.get("round_speedups")
        print(
            f"{r['backend']:12} {r['pairs_per_s']:9.3f} {r['tokens_per_s']:10.0f} "
            f"{r['pairs_per_s'] / base:11.2f} {r['peak_rss_gb']:12.2f} "
            f"{r.get('max_abs_diff', 0.0):11.1e}"
            + (f"   rounds {min(spread):.2f}-{max(spread):.2f}x" if spread else "")
        )

    costs = [candidate_cost(lm, triples, m) for m in args.cost_models]
    print(
        f"\n{'models':>6} {'requests':>9} {'naive':>6} {'tokens':>8} {'re-run hits':>12} "
        f"{'re-run s':>9}"
    )
    for c in costs:
        print(
            f"{c['models']:6} {c['forward_requests']:9} {c['naive_requests']:6} "
            f"{c['tokens_computed']:8} {c['rerun_hit_rate']:12.0%} {c['rerun_seconds']:9.3f}"
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for r in results:
        r.pop("totals")
    report = {
        "source": source,
        "pairs": args.pairs,
        "tokens": sum(lengths),
        "tokens_planned": planned,
        "torch_threads": torch.get_num_threads(),
        "rounds": len(groups),
        "backends": results,
        "candidate_cost": costs,
    }
    args.out.write_text(json.dumps(report, indent=2))
    provenance.finish()
    return report


if __name__ == "__main__":
    main()
