"""Can the match judge of Beyond Rating's argumentative alignment tell the same argument from a
different one? A probe of the ``judge`` role on points with a known answer.

Beyond Rating's precision and Max-Recall (§4.3) rest on a binary judge: "do these two review
points make the same argument?". On real reviews the embedded 135M preprocessor rarely gets as
far as points (see ``beyond_rating_iclr2020.py``), so this probe hands the judge points directly:
the judgment lines of the GEM authors' ICLR 2023 release (GPT-4o's rewrite of each review into
one judgment per line, "The reviewer criticizes ..." for a weakness, "The reviewer appreciates
..." for a strength). For each review with two points of a field, three pairs whose answer is
known by construction:

- ``same``: a point against itself (answer Yes; a judge that says No here cannot match anything);
- ``same_review``: two different points of one review (answer No: one reviewer lists distinct
  arguments);
- ``other_paper``: a point against a point of the same field from another paper's review
  (answer No; generic points such as "appreciates the thorough evaluation" can coincide across
  papers, so a few Yes answers here may be right).

Each pair is asked exactly as the metric asks (``match_messages``, ``parse_yes_no``, the same
decoding and one retry), through :class:`scorers.resources.Resources`' judge role (the evaluation
LM unless bound otherwise). Reported per kind: pairs, readable verdicts, the share answered Yes
and the share answered right; and the balanced accuracy over readable verdicts (0.5 = chance,
what a judge that always says Yes or always No gets).

    python -m benchmarks.experiments.beyond_judge_probe.run --reviews 100

Writes ``benchmarks/experiments/beyond_judge_probe/results/{probe.json,probe.md}`` and the
journal of its invocations (``invocations.json``). A stopped run resumes: the pairs are asked in
chunks of ``CHUNK``, each chunk's answers stored in the score cache as it finishes, so a rerun
with the same settings at the same commit reads the chunks already answered from the cache; a
finished run is read back from ``probe.json`` (``--fresh`` starts over). The time reported is the
journal's, summed over the invocations.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
from pathlib import Path
from typing import Any

from benchmarks.common.paths import DATA
from benchmarks.common.resumable import add_fresh_option, journalled_result, start_journal
from scorers.data.sources.gem_release import gem_release_records
from scorers.lm.answers import YES_NO_SETTINGS, parse_yes_no
from scorers.lm.asking import ask_many
from scorers.metrics.beyond.alignment import match_messages
from scorers.metrics.beyond.common import JUDGE_ROLE
from scorers.resources import Resources

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2023_gem" / "iclr2023_reviews.jsonl"
FIELDS = {"weaknesses": "criticizes", "strengths": "appreciates"}
EXPECTED = {"same": True, "same_review": False, "other_paper": False}
CHUNK = 48
"""Pairs asked at a time: each chunk's answers reach the score cache when it finishes."""
ROW = "judge"


def field_points(summary: str | None, field: str) -> list[str]:
    """The judgment lines of one field in a GPT-4o judgment summary (verb after 'The reviewer')."""
    verb = FIELDS[field]
    lines = [line.strip() for line in (summary or "").splitlines()]
    return [line for line in lines if re.match(rf"^The reviewer {verb}\b", line, re.IGNORECASE)]


def probe_pairs(records: list, *, reviews: int, seed: int = 0) -> list[dict[str, Any]]:
    """Three pairs per review with two points of a field (first such review of each paper,
    fields alternating weaknesses/strengths), ``reviews`` reviews in all; the other-paper point
    comes from the next usable paper's review of the same field (wrapping around)."""
    rng = random.Random(seed)
    usable: list[tuple[str, str, list[str]]] = []  # (paper, field, points)
    for index, record in enumerate(records):
        field = list(FIELDS)[index % 2]
        for review in record.reviews:
            points = field_points(review.summary, field)
            if len(points) >= 2:
                usable.append((record.id, field, points))
                break
    if len(usable) < 2:
        raise SystemExit(f"only {len(usable)} review(s) with two points of a field: too few")
    chosen = usable[:reviews]
    pairs = []
    for n, (paper, field, points) in enumerate(chosen):
        first, second = rng.sample(points, 2)
        others = [u for u in usable[n + 1 :] + usable[:n] if u[1] == field and u[0] != paper]
        if not others:
            raise SystemExit(f"no other paper has {field} points to pair with {paper}")
        other = rng.choice(others[0][2])
        for kind, point_b in (("same", first), ("same_review", second), ("other_paper", other)):
            pairs.append({"paper": paper, "field": field, "kind": kind, "a": first, "b": point_b})
    return pairs


def summarise(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per kind: pairs, readable, yes rate and accuracy (over readable verdicts); balanced
    accuracy = mean of the Yes-kind and No-kind accuracies."""
    kinds: dict[str, Any] = {}
    for kind, expected in EXPECTED.items():
        rows = [p for p in pairs if p["kind"] == kind]
        read = [p for p in rows if p["verdict"] is not None]
        kinds[kind] = {
            "pairs": len(rows),
            "readable": len(read),
            "yes_rate": sum(p["verdict"] for p in read) / len(read) if read else None,
            "accuracy": sum(p["verdict"] == expected for p in read) / len(read) if read else None,
        }
    yes_kind = [p for p in pairs if EXPECTED[p["kind"]] and p["verdict"] is not None]
    no_kind = [p for p in pairs if not EXPECTED[p["kind"]] and p["verdict"] is not None]
    balanced = None
    if yes_kind and no_kind:
        true_yes = sum(p["verdict"] for p in yes_kind) / len(yes_kind)
        true_no = sum(not p["verdict"] for p in no_kind) / len(no_kind)
        balanced = (true_yes + true_no) / 2
    return {"kinds": kinds, "balanced_accuracy": balanced}


async def judge_pairs(generator, pairs: list[dict[str, Any]], *, chunk: int = CHUNK) -> int:
    """Ask every pair as the alignment metric does, ``chunk`` pairs at a time; set each pair's
    ``verdict`` (None when unreadable after the retry) and ``reply``; return the generations
    asked for (answers read from the cache included)."""
    calls = 0
    for start in range(0, len(pairs), chunk):
        part = pairs[start : start + chunk]
        asked = await ask_many(
            generator,
            [match_messages(p["a"], p["b"]) for p in part],
            parse_yes_no,
            settings=YES_NO_SETTINGS,
        )
        for pair, value, reply in zip(part, asked.values, asked.replies, strict=True):
            pair["verdict"], pair["reply"] = value, reply
        calls += asked.calls
    return calls


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"# Beyond Rating match-judge probe: {report['judge']}, {report['reviews']} reviews of "
        "the GEM ICLR 2023 release\n",
        "| pair | expected | pairs | readable | answered Yes | right |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for kind, cell in report["summary"]["kinds"].items():

        def pct(x):
            return "-" if x is None else f"{100 * x:.0f}%"

        lines.append(
            f"| {kind} | {'Yes' if EXPECTED[kind] else 'No'} | {cell['pairs']} | "
            f"{cell['readable']} | {pct(cell['yes_rate'])} | {pct(cell['accuracy'])} |"
        )
    balanced = report["summary"]["balanced_accuracy"]
    lines += [
        "",
        "Balanced accuracy over readable verdicts: "
        + ("-" if balanced is None else f"{balanced:.3f}")
        + " (0.5 = chance, also what always-Yes or always-No scores).",
        "",
        f"{report['calls']} generations in {report['seconds']:.0f} s over "
        f"{report['invocations']} invocation(s) "
        f"({report['seconds'] / max(report['calls'], 1):.2f} s per generation on "
        f"{report['machine']['cpu']}, {report['machine']['cpus']} cores).",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, *, resources: Resources | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--reviews", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scorer-lm", default="embedded", help="the judge (evaluation LM spec)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    settings = {"reviews": args.reviews, "seed": args.seed, "scorer_lm": args.scorer_lm}
    provenance, journal = start_journal(args, settings, logs=False)

    def probe() -> dict[str, Any]:
        pairs = probe_pairs(gem_release_records(args.data), reviews=args.reviews, seed=args.seed)
        judge = (resources or Resources(evaluation_lm=args.scorer_lm)).generator(JUDGE_ROLE)
        calls = asyncio.run(judge_pairs(judge, pairs))
        return {
            "judge": judge.identity,
            "reviews": len(pairs) // 3,
            "seed": args.seed,
            "calls": calls,
            "machine": provenance.record["machine"],
            "summary": summarise(pairs),
            "pairs": pairs,
        }

    report = journalled_result(journal, ROW, args.out / "probe.json", probe)
    text = markdown(report)
    (args.out / "probe.md").write_text(text)
    print(text)
    provenance.finish()
    return report


if __name__ == "__main__":
    main()
