"""How many judgment rewrites (GEM App. C.1) stop at their token limit, before and after the
limit grew with the review: the old rule gave every review 256 new tokens; the new one gives a
review room by its length (``scorers.text.judgments.rewrite_budget``).

A sample of real reviews (default: the ICLR 2020 set of ``gem-tasks data fetch iclr2020-gppm``)
is rewritten by the evaluation LM
(default the embedded SmolLM2-135M) exactly as the metrics rewrite them, first under the old
fixed limit, then under the new budgets (greedy decoding: a review whose budget stays 256 gets
the same reply, from the cache). Reported per rule: rewrites, how many stopped at their limit,
and, for the new rule, the same per budget; plus how many of the rewrites that stop at the limit
repeat a line (the 135M often loops until it is cut, which no budget fixes).

    python -m benchmarks.experiments.rewrite_budget.run --reviews 200

Writes ``benchmarks/experiments/rewrite_budget/results/{results.json,summary.md}`` and the
journal of its invocations (``invocations.json``). A stopped run resumes: reviews are rewritten
in chunks of ``CHUNK``, each chunk's rewrites stored in the score cache as it finishes, so a rerun
with the same settings at the same commit reads the chunks already done from the cache (and says
how many); a finished run is read back from ``results.json`` (``--fresh`` starts over).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common.paths import DATA
from benchmarks.common.resumable import add_fresh_option, journalled_result, start_journal
from scorers.data.records import load_records
from scorers.lm.base import hit_limit
from scorers.resources import Resources
from scorers.text.judgments import (
    PREPROCESS_SETTINGS,
    REWRITE_BUDGET,
    Preprocessed,
    preprocess_messages,
    rewrite_budget,
    rewrite_reviews,
)

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
OLD_LIMIT = 256
CHUNK = 25
"""Reviews rewritten at a time: each chunk's rewrites reach the score cache when it finishes."""
ROW = "rewrites"


def sample_reviews(path: Path, n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` non-empty reviews (id, text) drawn with ``seed`` from every paper's reviews."""
    reviews = [
        (r.id, r.text) for paper in load_records(path) for r in paper.reviews if r.text.strip()
    ]
    rng = random.Random(seed)
    return rng.sample(reviews, min(n, len(reviews)))


def repeats_a_line(text: str) -> bool:
    """Whether a non-blank line occurs twice (a model looping until it is cut)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return len(lines) != len(set(lines))


async def measure(texts: list[str], resources: Resources, *, chunk: int = CHUNK) -> dict[str, Any]:
    """Rewrite ``texts`` under the old fixed limit, then under the new budgets, ``chunk`` reviews
    at a time, and count the rewrites that stopped at their limit."""
    generator = resources.generator("preprocessor")
    stats = resources.cache.stats
    before_stats = dict(stats)
    parts = [texts[start : start + chunk] for start in range(0, len(texts), chunk)]
    start = time.perf_counter()
    old = []
    for part in parts:
        messages = [preprocess_messages(t) for t in part]
        old += await generator.generate(messages, PREPROCESS_SETTINGS)
    old_seconds = time.perf_counter() - start
    start = time.perf_counter()
    new = []
    for part in parts:
        new += await rewrite_reviews(generator, part)
    new_seconds = time.perf_counter() - start
    budgets = [rewrite_budget(t) for t in texts]
    old_hits = [bool(hit_limit(reply)) for reply in old]
    new_hits = [bool(rewrite.hit_limit) for rewrite in new]
    per_budget: dict[int, dict[str, int]] = {}
    for budget, was, now in zip(budgets, old_hits, new_hits, strict=True):
        row = per_budget.setdefault(budget, {"reviews": 0, "at_limit_before": 0, "at_limit": 0})
        row["reviews"] += 1
        row["at_limit_before"] += was
        row["at_limit"] += now
    return {
        "generator": generator.identity,
        "before": {
            "rule": f"{OLD_LIMIT} new tokens for every review",
            "rewrites": len(texts),
            "at_limit": sum(old_hits),
            "at_limit_repeating_a_line": sum(
                hit and repeats_a_line(Preprocessed.from_reply(reply).judgments)
                for hit, reply in zip(old_hits, old, strict=True)
            ),
            "seconds": round(old_seconds, 1),
        },
        "after": {
            "rule": REWRITE_BUDGET,
            "rewrites": len(texts),
            "at_limit": sum(new_hits),
            "at_limit_repeating_a_line": sum(
                hit and repeats_a_line(rewrite.judgments)
                for hit, rewrite in zip(new_hits, new, strict=True)
            ),
            "seconds": round(new_seconds, 1),
            "note": "reviews whose budget is 256 are read back from the cache",
        },
        "per_budget": {str(k): v for k, v in sorted(per_budget.items())},
        "budgets": dict(sorted(Counter(budgets).items())),
        # generations read from the score cache rather than computed (the seconds count both)
        "cache": {
            key: stats.get(key, 0) - before_stats.get(key, 0)
            for key in ("generation_hit", "generation_miss")
        },
    }


def summary_markdown(result: dict[str, Any]) -> str:
    before, after = result["before"], result["after"]
    origin = result["provenance"]
    lines = [
        "# Judgment rewrites that stop at their token limit, before and after the budget rule",
        "",
        f"`{origin['command']}` at commit `{(origin['commit'] or '?')[:12]}`"
        + (" (with uncommitted changes)" if origin["uncommitted_changes"] else "")
        + f", {origin['started']}, on {origin['machine']['cpu']} ({origin['machine']['cpus']} "
        f"cores). Rewriter: `{result['generator']}`. Data: {result['reviews']} reviews drawn "
        f"with seed {result['seed']} from `{Path(result['data']).name}`. Generations read "
        f"from the score cache: {result['cache']['generation_hit']} (computed: "
        f"{result['cache']['generation_miss']}; the seconds count both). In all "
        f"{result['seconds']} s over {result['invocations']} invocation(s).",
        "",
        "| rule | rewrites | stopped at the limit | of those, repeating a line | seconds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in (before, after):
        share = row["at_limit"] / row["rewrites"] if row["rewrites"] else 0.0
        lines.append(
            f"| {row['rule']} | {row['rewrites']} | {row['at_limit']} ({share:.0%}) | "
            f"{row['at_limit_repeating_a_line']} | {row['seconds']} |"
        )
    lines += [
        "",
        "Per budget of the new rule:",
        "",
        "| budget (new tokens) | reviews | at the limit, old rule (256) | at the limit, new rule |",
        "| --- | --- | --- | --- |",
    ]
    for budget, row in result["per_budget"].items():
        lines.append(
            f"| {budget} | {row['reviews']} | {row['at_limit_before']} | {row['at_limit']} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--reviews", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--evaluation-lm", default="embedded")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    settings = {"reviews": args.reviews, "seed": args.seed, "evaluation_lm": args.evaluation_lm}
    provenance, journal = start_journal(args, settings, logs=False)

    def rewrites() -> dict[str, Any]:
        drawn = sample_reviews(args.data, args.reviews, args.seed)
        resources = Resources(evaluation_lm=args.evaluation_lm, cache_dir=args.cache_dir)
        result = asyncio.run(measure([text for _, text in drawn], resources))
        return result | {
            "data": str(args.data),
            "reviews": len(drawn),
            "seed": args.seed,
            "review_ids": [review_id for review_id, _ in drawn],
            "provenance": provenance.record,
        }

    result = journalled_result(journal, ROW, args.out / "results.json", rewrites)
    (args.out / "summary.md").write_text(summary_markdown(result))
    print(summary_markdown(result))
    provenance.finish()
    return result


if __name__ == "__main__":
    main()
