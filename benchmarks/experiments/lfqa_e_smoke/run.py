"""LFQA-E through the whole path, as a smoke run: the published file read as it is, both answers
of every annotated pair scored against the question's reference answer (ground truth, none held
out) by the judgments task with the embedded SmolLM2-135M, and each metric's preference agreement
(the share of pairs whose preferred answer it scores better, ties one half) and LFQA-E's
published accuracy (over every pair, 'same' included), each with its bootstrap interval over the
questions; then random replacement of the answers by the robustness task (another question's
answer: a degradation every metric should penalise), its paired test over the questions. Each
distinct answer is scored once, however many pairs it is in.

    python -m benchmarks.experiments.lfqa_e_smoke.run --data <lfqa_e file>

The public sample holds 12 pairs of 2 questions (8 distinct answers, each in 3 pairs): the
numbers show the path working, and say nothing about a metric. Writes ``results.json``,
``results.md`` and ``manifest.json`` to ``--out``; the logs go to ``--out/logs`` (not committed).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log

from benchmarks.common.paths import DATA
from benchmarks.common.resumable import add_fresh_option, run_row, start_journal
from gem_tasks.tasks.judgments import judgments
from gem_tasks.tasks.robustness import robustness
from scorers.registry import resolve_metric_names

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "lfqa_e" / "lfqa_e_en_sample.json"
SCORERS = "gem_raw,rouge_l,bleu"


def _metrics(score: Any) -> dict[str, float]:
    return {k: float(v.value) for k, v in score.metrics.items()}


def agreement_rows(log: Any) -> dict[str, dict[str, float]]:
    """Per metric: its preference agreement, the interval's ends and the number of pairs."""
    return {score.name: _metrics(score) for score in log.results.scores}


def replacement_rows(log: Any) -> dict[str, dict[str, float]]:
    """Per metric: the SMD of random replacement with its paired interval, the one-sided p and
    the verdict (1: penalised), and how many pairs were scored."""
    out = {}
    for score in log.results.scores:
        values = _metrics(score)
        out[score.name.removesuffix("_paired")] = {
            key: values.get(key, float("nan"))
            for key in ("smd", "smd_paired_ci95_lower", "smd_paired_ci95_upper", "paired_p",
                        "verdict")
        } | {"pairs": float(score.scored_samples or 0)}  # fmt: skip
    return out


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "# LFQA-E smoke run (12 public pairs; the numbers mean nothing about a metric)",
        "",
        "| metric | preference agreement [95% CI] | pairs | LFQA-E's accuracy [95% CI] | pairs "
        "| random replacement SMD [paired 95% CI] | p | penalised |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    nan = float("nan")
    for metric, row in result["agreement"].items():
        swap = result["replacement"].get(metric, {})
        smd = (
            f"{swap.get('smd', nan):.2f} [{swap.get('smd_paired_ci95_lower', nan):.2f}, "
            f"{swap.get('smd_paired_ci95_upper', nan):.2f}]"
        )
        lines.append(
            f"| {metric} | {row['preference_agreement']:.3f} "
            f"[{row['preference_agreement_ci95_lower']:.3f}, "
            f"{row['preference_agreement_ci95_upper']:.3f}] | {row['preference_pairs']:.0f} | "
            f"{row.get('preference_accuracy', nan):.3f} "
            f"[{row.get('preference_accuracy_ci95_lower', nan):.3f}, "
            f"{row.get('preference_accuracy_ci95_upper', nan):.3f}] | "
            f"{row.get('preference_accuracy_pairs', nan):.0f} | "
            f"{smd} | {swap.get('paired_p', nan):.3g} | "
            f"{'yes' if swap.get('verdict') == 1.0 else 'no'} |"
        )
    lines += [
        "",
        f"Seconds: {result['seconds']}. Evaluation LM: the embedded SmolLM2-135M; every distinct "
        "answer is scored once against its question's reference answer; intervals and the "
        "paired test are over the questions. Preference agreement leaves out the pairs the "
        "annotators judged the same and counts a tie of scores one half; LFQA-E's accuracy is "
        "the share of all pairs whose label the metric's order states (a tie of scores states "
        "'same').",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="an LFQA-E file")
    parser.add_argument("--scorers", default=SCORERS, help=f"default {SCORERS}")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    resolve_metric_names(args.scorers)  # an unknown name fails before any work
    # each of the two runs resumes from its log in a later invocation (same commit and settings)
    provenance, journal = start_journal(args, {"scorers": args.scorers})
    agreement = read_eval_log(
        run_row(
            journal,
            "agreement",
            lambda: judgments(dataset=str(args.data), candidate="candidates", scorers=args.scorers),
            args.out / "logs" / "agreement",
            model="none",
            display="plain",
        )
    )
    replacement = read_eval_log(
        run_row(
            journal,
            "replacement",
            lambda: robustness(
                dataset=str(args.data),
                perturbation="random_replacement",
                scorers=args.scorers,
                references=1,
            ),
            args.out / "logs" / "replacement",
            model="none",
            display="plain",
        )
    )
    result = {
        "agreement": agreement_rows(agreement),
        "replacement": replacement_rows(replacement),
        "samples": {"agreement": len(agreement.samples), "replacement": len(replacement.samples)},
        "seconds": round(sum(journal.seconds(row) for row in journal.rows()), 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    text = markdown(result)
    (args.out / "results.md").write_text(text)
    print(text)
    provenance.finish()
    return result


if __name__ == "__main__":
    main()
