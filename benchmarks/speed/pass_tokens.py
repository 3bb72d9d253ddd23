"""The tokens of a named scoring pass, counted from its data, and the pass's time projected from
measured scoring rates.

A pass is a dataset's first N papers, the metrics scored and the number of references. Each
paper's held-out human review stands in for the model's review (the human row of the
leaderboard: a review of a real reviewer's length). The metrics' own code builds every scoring
request (``Metric.ascore`` on the task's items, through the project's prompts and chat
rendering), so the prompts, targets and shared prefixes are the real ones; an evaluation LM that
records the requests instead of running a model answers them. What a model would write is not in
the data and stands in by its length:

* a judgment rewrite (GEM, GEM-S): the review's own words as judgment lines, as many tokens as the
  ratio of judgment-rewrite tokens to review tokens in a file of stored rewrites (by default the
  GEM authors' GPT-4o rewrites of ICLR 2023 reviews) gives, never more than the rewrite's token
  budget (``scorers.text.judgments.rewrite_budget``);
* an ASSW summary (GEM-S (ASSW)), which needs the paper's text that the ICLR 2026 records do not
  hold: the summary's token limit (``ASSW_SETTINGS.max_new_tokens``, an upper bound), from the
  paper's abstract and reviews.

For each pass the script counts the requests, prompt tokens (context and target: the "logical"
tokens a rate in tokens/s counts), target tokens and the tokens prefix reuse actually runs, two
ways: one plan per scoring call (a sample's metric, as the backend sees it when no other sample's
calls are merged with it) and one plan over the whole pass (as the speed benchmark's workload is
run); and the model FLOPs of both at the Llama-3.1-8B shape (``benchmarks.speed.scoring_gpu``).
Then, for every path of a ``scoring_gpu`` result, the pass's time from that path's achieved
TFLOP/s on its own workload (both plans), beside the time from its tokens/s alone.

The tokenizer is the evaluation LM's where it is available; the Llama-3.1-8B tokenizer is not
bundled, so the default is the embedded SmolLM2-135M's (said in the result).

    python -m benchmarks.speed.pass_tokens --data data/iclr2026/iclr2026_records.jsonl \\
        --papers 300 --pass gem,gem_s --pass gem,gem_s,gem_s_assw \\
        --rewrites data/iclr2023_gem/iclr2023_reviews.jsonl \\
        --rates benchmarks/speed/results/scoring_gpu_h100/scoring_gpu.json \\
        --out benchmarks/speed/results/pass_tokens/pass_tokens.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from benchmarks.common.manifest import Run, portable
from scorers.data.paper_docs import item_from_document, paper_document
from scorers.data.records import load_records
from scorers.domains import domain as get_domain
from scorers.errors import GemTasksError
from scorers.lm.base import LogprobResult, ScoringRequest
from scorers.lm.chat import encode_text
from scorers.lm.hf.prefix_tree import DEFAULT_MIN_SHARED
from scorers.registry import get_metric
from scorers.resources import Resources
from scorers.text.judgments import ASSW_SETTINGS, preprocess_messages, rewrite_budget
from scorers.types import Item

LLAMA_31_MAX_LENGTH = 131072
"""Llama-3.1-8B's context length: the recording LM's limit, so that no reference is left out as
too long for the 135M model's 8,192 tokens."""
WORDS_PER_LINE = 12


def rewrite_ratio(path: Path, tokenizer: Any) -> dict[str, float]:
    """Tokens of the stored judgment rewrites over tokens of their reviews, summed over every
    review of ``path`` (``{"reviews": [{"review", "review_summary"}]}`` per line)."""
    review_tokens = summary_tokens = reviews = 0
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        for review in json.loads(line)["reviews"]:
            if not (review.get("review") or "").strip() or not review.get("review_summary"):
                continue
            reviews += 1
            review_tokens += len(encode_text(tokenizer, review["review"]))
            summary_tokens += len(encode_text(tokenizer, review["review_summary"]))
    if not reviews:
        raise SystemExit(f"{path}: no review with a stored rewrite")
    return {
        "reviews": reviews,
        "review_tokens": review_tokens,
        "rewrite_tokens": summary_tokens,
        "ratio": summary_tokens / review_tokens,
    }


def stand_in(source: str, tokens: int, tokenizer: Any, *, line_start: str = "- ") -> str:
    """Lines that begin with ``line_start`` and go on with ``source``'s words (cycled when it is
    short), cut to ``tokens`` tokens."""
    words = source.split() or ["judgment"]
    lines: list[str] = []
    used = index = 0
    while used <= tokens:
        line = line_start + " ".join(words[(index + k) % len(words)] for k in range(WORDS_PER_LINE))
        index += WORDS_PER_LINE
        lines.append(line)
        used += len(encode_text(tokenizer, line + "\n"))
    ids = encode_text(tokenizer, "\n".join(lines))
    return tokenizer.decode(ids[:tokens]).rstrip()


class StandInRewriter:
    """The preprocessor role: each rewrite conversation answered with the stand-in rewrite of the
    review it was rendered from (looked up by the prompt ``preprocess_messages`` renders)."""

    identity = "stand-in rewrites"

    def __init__(self, rewrites: dict[tuple[str, str], str]) -> None:
        """``rewrites``: stand-in replies by (review text, domain)."""
        self.replies = {
            preprocess_messages(text, domain=domain)[-1]["content"]: reply
            for (text, domain), reply in rewrites.items()
        }
        self.asked: Counter[str] = Counter()

    async def generate(self, conversations: Sequence[Sequence[dict]], settings: Any) -> list[str]:
        replies = []
        for conversation in conversations:
            reply = self.replies.get(str(conversation[-1]["content"]))
            if reply is None:
                raise RuntimeError("a rewrite was asked for a text the pass does not hold")
            self.asked["rewrite"] += 1
            replies.append(reply)
        return replies


@dataclass
class RecordingLM:
    """An evaluation LM that records each scoring call's requests and answers them with
    placeholder log-probabilities (the counts never read them)."""

    tokenizer: Any
    identity: str
    max_length: int = LLAMA_31_MAX_LENGTH
    calls: list[list[ScoringRequest]] = field(default_factory=list)

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        self.calls.append(list(requests))
        return [LogprobResult(-1.0 * len(r.target_ids), len(r.target_ids)) for r in requests]

    def generate(self, conversations: Any, settings: Any) -> list[str]:
        raise RuntimeError("the pass's generations stand in through the preprocessor role")


def pass_items(path: Path, papers: int, references: int, seed: int) -> list[Item]:
    """The first ``papers`` papers of ``path`` as the ``iclr`` task builds them, each with its
    held-out human review as the candidate."""
    items = []
    for paper in load_records(path)[:papers]:
        _, document = paper_document(
            paper, references=references, seed=seed, max_paper_tokens=12000
        )
        items.append(item_from_document(document, candidate=document["held_out"]["text"]))
    return items


def with_assw(items: list[Item], tokenizer: Any) -> list[Item]:
    """Each item with a stand-in ASSW summary of the summary's token limit (where it has none)."""
    tokens = ASSW_SETTINGS.max_new_tokens
    return [
        item
        if (item.paper.assw or "").strip()
        else replace(
            item,
            paper=replace(
                item.paper,
                assw=stand_in(
                    " ".join([item.paper.abstract, *(r.text for r in item.references)]),
                    tokens,
                    tokenizer,
                ),
            ),
        )
        for item in items
    ]


def rewrites_for(items: list[Item], ratio: float, tokenizer: Any) -> dict[tuple[str, str], str]:
    """Every review's stand-in rewrite: ``ratio`` of its tokens, within its rewrite budget, as
    judgment lines that begin with the domain's statement prefix ("The reviewer")."""
    rewrites = {}
    for item in items:
        start = get_domain(item.domain).statement_prefix + " "
        for text in [item.candidate, *(r.text for r in item.references)]:
            if text.strip() and (text, item.domain) not in rewrites:
                tokens = len(encode_text(tokenizer, text))
                length = max(1, min(rewrite_budget(text), round(ratio * tokens)))
                rewrites[text, item.domain] = stand_in(text, length, tokenizer, line_start=start)
    return rewrites


def record_pass(
    items: list[Item], metrics: Sequence[str], lm: RecordingLM, rewriter: StandInRewriter
) -> dict[str, Any]:
    """Score every item under every metric through the recording LM (one call at a time, a
    fresh score cache); the unscored results' reasons counted."""
    unscored: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="pass-tokens-") as cache:
        resources = Resources(
            evaluation_lm=lm, cache_dir=cache, generators={"preprocessor": rewriter}
        )
        for name in metrics:
            metric = get_metric(name)
            for item in items:
                result = asyncio.run(metric.ascore(item, resources))
                if result.value is None:
                    unscored[f"{name}: {result.reason}"] += 1
        resources.cache.close()
    return {"unscored": dict(unscored)}


def count(calls: list[list[ScoringRequest]], shape: dict[str, Any]) -> dict[str, Any]:
    """Requests, logical, target and run tokens, and 8B-shape FLOPs of recorded calls."""
    from benchmarks.speed.scoring_gpu import baseline_flops, planned_work

    requests = [r for call in calls for r in call]
    whole_run, whole_flops = planned_work(shape, requests, DEFAULT_MIN_SHARED)
    per_call = [planned_work(shape, call, DEFAULT_MIN_SHARED) for call in calls]
    return {
        "calls": len(calls),
        "requests": len(requests),
        "prompt_tokens": sum(r.length for r in requests),
        "target_tokens": sum(len(r.target_ids) for r in requests),
        "run_tokens_per_call_plans": sum(tokens for tokens, _ in per_call),
        "run_tokens_whole_pass_plan": whole_run,
        "flops_8b_reference": baseline_flops(shape, requests),
        "flops_8b_ours_per_call_plans": sum(flops for _, flops in per_call),
        "flops_8b_ours_whole_pass_plan": whole_flops,
    }


def workload_run_tokens(path: Path, shape: dict[str, Any]) -> dict[str, int]:
    """Logical and run tokens of a ``scoring_gpu`` workload (run as one plan, as it is timed)."""
    from benchmarks.speed.scoring_gpu import planned_work

    rows = json.loads(path.read_text())["requests"]
    requests = [ScoringRequest(tuple(r["context"]), tuple(r["target"])) for r in rows]
    return {
        "prompt_tokens": sum(r.length for r in requests),
        "run_tokens": planned_work(shape, requests, DEFAULT_MIN_SHARED)[0],
    }


def project(counts: dict[str, Any], rates: dict[str, Any], workload: dict[str, int]) -> dict:
    """Each measured path's time for the pass: its FLOPs at the path's achieved TFLOP/s (both
    plans of ours; the reference's own FLOPs), and the prompt tokens at its tokens/s alone."""
    out: dict[str, Any] = {}
    for label, r in rates["results"].items():
        flops_per_s = r["achieved_tflops"] * 1e12
        row: dict[str, Any] = {
            "measured_tokens_per_s": r["tokens_per_s"],
            "measured_run_tokens_per_s": (
                workload["run_tokens"] / r["seconds"] if label != "baseline" else r["tokens_per_s"]
            ),
            "achieved_tflops": r["achieved_tflops"],
            "from_tokens_per_s_s": counts["prompt_tokens"] / r["tokens_per_s"],
        }
        if label == "baseline":
            row["from_flops_s"] = counts["flops_8b_reference"] / flops_per_s
        else:
            row["from_flops_per_call_plans_s"] = (
                counts["flops_8b_ours_per_call_plans"] / flops_per_s
            )
            row["from_flops_whole_pass_plan_s"] = (
                counts["flops_8b_ours_whole_pass_plan"] / flops_per_s
            )
        out[label] = row
    return out


def shown(path: Path) -> str:
    """``path`` as the result names it (relative to the repository when it lies inside it)."""
    return str(portable(path.absolute()))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the pass's records (JSON lines)")
    parser.add_argument("--papers", type=int, default=300, help="the first N papers of --data")
    parser.add_argument("--references", type=int, default=2, help="references per paper (k)")
    parser.add_argument("--seed", type=int, default=0, help="the split's seed (the task's)")
    parser.add_argument(
        "--pass",
        dest="passes",
        action="append",
        required=True,
        help="comma-separated metrics of one pass (repeat for several passes)",
    )
    parser.add_argument(
        "--rewrites",
        type=Path,
        required=True,
        help="stored judgment rewrites whose length ratio the stand-ins take "
        "({'reviews': [{'review', 'review_summary'}]} per line)",
    )
    parser.add_argument(
        "--tokenizer",
        default="embedded",
        help="a tokenizer folder, or 'embedded' (SmolLM2-135M's; Llama-3.1-8B's is not bundled)",
    )
    parser.add_argument(
        "--rates",
        type=Path,
        action="append",
        default=[],
        help="a scoring_gpu result whose paths' rates the projection uses (repeatable)",
    )
    parser.add_argument(
        "--workload",
        type=Path,
        default=Path(__file__).resolve().parent / "workloads" / "scoring_200pairs.json",
        help="the workload the --rates were measured on (for its run tokens)",
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    for path in [args.data, args.rewrites, *args.rates, args.workload]:
        if not path.is_file():
            parser.error(f"{path}: no such file")
    for metrics in args.passes:
        for name in metrics.split(","):
            try:
                get_metric(name)  # an unknown metric stops here, before any counting
            except GemTasksError as error:
                parser.error(str(error))
    if args.papers < 1 or args.references < 1:
        parser.error("--papers and --references must be at least 1")
    return args


def load_tokenizer(spec: str) -> tuple[Any, str]:
    from transformers import AutoTokenizer

    if spec == "embedded":
        from scorers.lm.embedded import embedded_identity, materialize_embedded

        return AutoTokenizer.from_pretrained(materialize_embedded()), embedded_identity()
    from scorers.lm.locate import locate_model

    locate_model(spec, what="the tokenizer")  # a folder or Hub id that is not there, said plainly
    return AutoTokenizer.from_pretrained(spec), spec


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    provenance = (
        Run(
            args.out.parent,
            data=[args.data, args.rewrites, *args.rates, args.workload],
            settings={k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        )
        if args.out
        else None
    )
    from benchmarks.speed.scoring_gpu import LLAMA_31_8B

    tokenizer, tokenizer_identity = load_tokenizer(args.tokenizer)
    ratio = rewrite_ratio(args.rewrites, tokenizer)
    items = pass_items(args.data, args.papers, args.references, args.seed)
    workload = workload_run_tokens(args.workload, LLAMA_31_8B)
    report: dict[str, Any] = {
        "data": shown(args.data),
        "papers": len(items),
        "references": args.references,
        "candidate": "each paper's held-out human review (the human row)",
        "tokenizer": tokenizer_identity,
        "rewrite_length": ratio,
        "assw_stand_in_tokens": ASSW_SETTINGS.max_new_tokens,
        "workload": {"path": shown(args.workload), **workload},
        "passes": {},
    }
    for metrics in args.passes:
        names = metrics.split(",")
        pass_input = with_assw(items, tokenizer) if "gem_s_assw" in names else items
        lm = RecordingLM(tokenizer, identity=f"recording:{tokenizer_identity}")
        rewriter = StandInRewriter(rewrites_for(pass_input, ratio["ratio"], tokenizer))
        recorded = record_pass(pass_input, names, lm, rewriter)
        counts = count(lm.calls, LLAMA_31_8B)
        entry: dict[str, Any] = {**counts, **recorded, "rewrites_asked": rewriter.asked["rewrite"]}
        entry["projections"] = {
            shown(path): project(counts, json.loads(path.read_text()), workload)
            for path in args.rates
        }
        report["passes"][metrics] = entry
        print(
            f"{metrics}: {counts['requests']} requests, {counts['prompt_tokens']:,} prompt tokens "
            f"({counts['target_tokens']:,} targets); run {counts['run_tokens_per_call_plans']:,} "
            f"(per call) / {counts['run_tokens_whole_pass_plan']:,} (whole pass)"
        )
        for path, rows in entry["projections"].items():
            for label, row in rows.items():
                flops_time = row.get("from_flops_s", row.get("from_flops_per_call_plans_s"))
                print(f"  {Path(path).parent.name} {label}: {flops_time:.1f} s")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2))
        provenance.finish()
    return report


if __name__ == "__main__":
    main()
