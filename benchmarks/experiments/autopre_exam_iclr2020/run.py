"""Auto-PRE's three qualification exams on real ICLR 2020 reviews, offline: the embedded
SmolLM2-135M under the three pairwise prompt variants (``before``, ``after``, ``expert``) as the
candidate judges; the exam table, the thresholds and the panel.

Data: the GPPM authors' ICLR 2020 papers as canonical records, given with ``--data`` (not shipped
with the package). Each exam paper gives one consistency pair, one pertinence pair, one easy and
one hard self-confidence pair (``gem_tasks/autopre_exam``), every pair judged in both orders by
every judge. Two ways for the local judge to answer (``-T local_answers``): ``generate`` (the
paper's: the reply must start with "one"/"two") and ``forced`` (the more probable of the two first
tokens, teacher-forced; a documented departure for small models).

    python -m benchmarks.experiments.autopre_exam_iclr2020.run --items 50 --answers forced,generate
    # report existing logs only:
    python -m benchmarks.experiments.autopre_exam_iclr2020.run --from-logs DIR

Writes ``benchmarks/experiments/autopre_exam_iclr2020/results/``: ``report.md`` (per answer mode:
per judge P_c, P_p, P_s with the answers used and unparsed, passes, panel and weights, judge calls),
``qualification_<mode>.json`` (``qualification_from_log``), ``timings.json`` and
``invocations.json``; each mode's log goes to ``<out>/logs/<mode>/``. A stopped run resumes with
the same command (each mode keeps its finished samples, :mod:`benchmarks.common.resumable`; a
finished mode is read from its log), ``--answers`` splits it over invocations, and a mode's time
is the journal's sum over them; a resume at another commit or with other settings is refused
(``--fresh`` starts over). ``--judges`` takes real judges in place of the offline variants.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path
from typing import Any

from inspect_ai.log import list_eval_logs, read_eval_log

from benchmarks.common.manifest import Run
from benchmarks.common.paths import DATA, missing_data
from benchmarks.common.resumable import Journal, add_fresh_option, run_row
from gem_tasks.tasks.autopre_exam import autopre_exam, qualification_from_log
from gem_tasks.tasks.autopre_exam.autopre_exam import DEFAULT_JUDGES

HERE = Path(__file__).resolve().parent
DEFAULT_DATA = DATA / "iclr2020_gppm" / "iclr2020_papers.jsonl"
EXAMS = ("consistency", "pertinence", "self_confidence")


def _cell(score: dict[str, Any]) -> str:
    value = "n/a" if score.get("value") is None else f"{score['value']:.3f}"
    return f"{value} ({score['used']} used, {score['unparsed']} unparsed)"


def _confidence_cell(score: dict[str, Any]) -> str:
    def mean(key: str) -> str:
        return "n/a" if score.get(key) is None else f"{score[key]:.2f}"

    verdict = {None: "n/a", 1.0: "pass", 0.0: "fail"}[score.get("value")]
    kind = "−log p" if score.get("mode_prob") else "level"
    return (
        f"{verdict}: easy {mean('easy_mean')} vs hard {mean('hard_mean')} {kind} "
        f"({score.get('easy_used', 0)}+{score.get('hard_used', 0)} used, "
        f"{score['unparsed']} unparsed)"
    )


def first_position_counts(samples: list[Any]) -> dict[str, tuple[int, int]]:
    """judge -> (answers choosing the review shown first, answers read), over every exam pair
    and both orders: a judge that always names one position has P_c = 0 and P_p = 0.5."""
    counts: dict[str, list[int]] = {}
    for sample in samples:
        for score in (sample.scores or {}).values():
            for judge, answer in ((score.metadata or {}).get("judges") or {}).items():
                read = [label for label in answer["labels"] if label in (-1, 1)]
                row = counts.setdefault(judge, [0, 0])
                row[0] += sum(label == -1 for label in read)
                row[1] += len(read)
    return {judge: (first, read) for judge, (first, read) in counts.items()}


def exam_markdown(
    mode: str,
    qualification: dict[str, Any],
    *,
    items: int,
    seconds: float,
    positions: dict[str, tuple[int, int]] | None = None,
) -> str:
    """One answer mode's section: the per-judge exam table (with the share of answers that
    chose the first-shown review, when ``positions`` is given), thresholds, panel, calls."""
    positions = positions or {}
    lines = [
        f"## local_answers = {mode} ({items} exam papers, {seconds:.0f} s)",
        "",
        "| judge | consistency P_c | pertinence P_p | self-confidence P_s | passed | "
        "in panel | weight | chose the first-shown review |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for judge, row in qualification["judges"].items():
        passed = ", ".join(exam for exam in EXAMS if row["passed"][exam]) or "none"
        weight = "" if row["weight"] is None else f"{row['weight']:.3f}"
        first, read = positions.get(judge, (0, 0))
        share = f"{first}/{read} ({first / read:.0%})" if read else "n/a"
        lines.append(
            f"| {judge} | {_cell(row['consistency'])} | {_cell(row['pertinence'])} | "
            f"{_confidence_cell(row['self_confidence'])} | {passed} | "
            f"{'yes' if row['in_panel'] else 'no'} | {weight} | {share} |"
        )
    thresholds = ", ".join(
        f"{exam} {'n/a' if value is None else f'{value:.3f}'}"
        for exam, value in qualification["thresholds"].items()
        if exam != "self_confidence"
    )
    panel = ", ".join(qualification["panel"]) or "empty"
    reason = f" ({qualification['reason']})" if qualification.get("reason") else ""
    lines += [
        "",
        f"Thresholds (mean over candidates; a judge passes strictly above): {thresholds}; "
        "self-confidence is pass/fail by itself (lower mean uncertainty on easy pairs).",
        "",
    ]
    lines += [f"Panel: {panel}{reason}.", ""]
    calls = qualification.get("judge_calls", {})
    if calls:
        lines += ["Judge calls per exam (both orders, retries included):", ""]
        for judge, per in calls.items():
            lines.append(f"- {judge}: " + ", ".join(f"{k} {v}" for k, v in per.items()))
        lines.append("")
    return "\n".join(lines)


def newest_exam_logs(log_dir: Path) -> dict[str, str]:
    """local_answers mode -> the newest successful ``autopre_exam`` log in ``log_dir``."""
    found: dict[str, tuple[str, str]] = {}
    for info in list_eval_logs(str(log_dir)):
        header = read_eval_log(info, header_only=True)
        if header.status != "success" or not header.eval.task.endswith("autopre_exam"):
            continue
        mode = str((header.eval.task_args or {}).get("local_answers", "generate"))
        created = header.eval.created
        if mode not in found or created > found[mode][0]:
            found[mode] = (created, header.location)
    return {mode: location for mode, (_, location) in found.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--items", type=int, default=50)
    parser.add_argument("--answers", default="forced,generate", help="local_answers modes")
    parser.add_argument("--judges", default=DEFAULT_JUDGES, help=f"default: {DEFAULT_JUDGES}")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--from-logs", type=Path, help="report these logs, run nothing")
    add_fresh_option(parser)
    args = parser.parse_args(argv)
    modes = list(dict.fromkeys(m.strip() for m in args.answers.split(",") if m.strip()))
    if unknown := sorted(set(modes) - {"forced", "generate"}):
        parser.error(f"--answers: unknown mode(s) {unknown}; choose from forced, generate")
    provenance = Run(args.out, data=[args.data], settings=vars(args))
    timings: dict[str, float] = {}
    if args.from_logs is None:
        if not args.data.exists():
            raise SystemExit(missing_data(args.data))
        settings = {"data": str(args.data), "items": args.items, "judges": args.judges}
        journal = Journal(provenance, settings=settings, fresh=args.fresh, logs=args.out / "logs")
        for mode in modes:
            run_row(
                journal,
                mode,
                lambda mode=mode: autopre_exam(
                    dataset=str(args.data),
                    judges=args.judges,
                    items=args.items,
                    local_answers=mode,
                ),
                args.out / "logs" / mode,
                model="mockllm/model",
                display="plain",
            )
        timings = {mode: round(journal.seconds(mode), 1) for mode in sorted(journal.rows())}
    logs = newest_exam_logs(args.from_logs or args.out / "logs")
    sections = [
        "# Auto-PRE exams, ICLR 2020"
        + (", SmolLM2-135M under three prompt variants" if args.judges == DEFAULT_JUDGES else ""),
        "",
        f"Made by `{provenance.record['command']}`; every answer is in its Inspect logs "
        "(`<out>/logs`, not committed), `qualification_<mode>.json` holds the full "
        "qualification (`qualification_from_log`).",
        "",
    ]
    for mode, location in sorted(logs.items()):
        log = read_eval_log(location)
        qualification = qualification_from_log(log)
        (args.out / f"qualification_{mode}.json").write_text(json.dumps(qualification, indent=1))
        items = int((log.eval.task_args or {}).get("items", 0))
        seconds = timings.get(mode)
        if seconds is None:  # a log run elsewhere (--from-logs): its own clock
            started, completed = log.stats.started_at, log.stats.completed_at
            seconds = (
                datetime.fromisoformat(completed) - datetime.fromisoformat(started)
            ).total_seconds()
            timings[mode] = seconds
        positions = first_position_counts(log.samples or [])
        sections.append(
            exam_markdown(mode, qualification, items=items, seconds=seconds, positions=positions)
        )
    (args.out / "timings.json").write_text(json.dumps(timings, indent=2) + "\n")
    text = "\n".join(sections)
    (args.out / "report.md").write_text(text)
    print(text)
    provenance.finish()


if __name__ == "__main__":
    main()
