"""The validation workflow end to end: robustness and correlation tasks on the demo data with the
embedded model, the report from the logs they write."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pandas as pd
import pytest
from inspect_ai.log import read_eval_log, write_eval_log
from scipy import stats

from conftest import inspect_eval, write_jsonl
from gem_tasks.analysis.report import read_validation_logs
from gem_tasks.cli import main as cli_main
from scorers.validation.statistics import signed_rank_method

pytestmark = pytest.mark.slow


def eval_log(task: str, args: list[str], folder):
    """``inspect eval <task> <args>``, run in this process (no interpreter start or model load
    per run; the command line itself is tested in test_inspect_eval.py): ``--model``,
    ``--limit``, ``--max-tokens`` and ``-T name=value`` (values read as YAML, as Inspect does)."""
    import yaml
    from inspect_ai import eval as run_eval

    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.robustness import robustness

    tasks = {"gem_tasks/robustness": robustness, "gem_tasks/correlation": correlation}
    params, options, words = {}, {}, iter(args)
    for word in words:
        if word == "-T":
            name, _, value = next(words).partition("=")
            params[name] = yaml.safe_load(value)
        elif word == "--model":
            options["model"] = next(words)
        elif word == "--limit":
            options["limit"] = int(next(words))
        elif word == "--max-tokens":
            options["max_tokens"] = int(next(words))
        else:
            raise ValueError(f"eval_log does not know {word!r}")
    [log] = run_eval(tasks[task](**params), log_dir=str(folder / "logs"), display="none", **options)
    assert log.status == "success", log.error
    [path] = sorted((folder / "logs").glob("*.eval"))
    return read_eval_log(str(path))


def pairs(log, scorer: str) -> tuple[list[float], list[float]]:
    before = [s.scores[scorer].value["before"] for s in log.samples]
    after = [s.scores[scorer].value["after"] for s in log.samples]
    return before, after


@pytest.fixture(scope="module")
def validation_logs(tmp_path_factory):
    root = tmp_path_factory.mktemp("validation")
    deletion = root / "deletion"
    deletion.mkdir()
    deletion_log = eval_log(
        "gem_tasks/robustness",
        [
            "--model",
            "none",
            "--limit",
            "2",
            "-T",
            "perturbation=judgment_deletion",
            "-T",
            "scorers=gem",
            "-T",
            "dataset_summaries=true",
        ],
        deletion,
    )
    replacement = root / "replacement"
    replacement.mkdir()
    replacement_log = eval_log(
        "gem_tasks/robustness",
        [
            "--model",
            "none",
            "--limit",
            "2",
            "-T",
            "perturbation=random_replacement",
            "-T",
            "scorers=gem_raw",
        ],
        replacement,
    )
    gaming = root / "gaming"
    gaming.mkdir()
    gaming_log = eval_log(
        "gem_tasks/robustness",
        [
            "--model",
            "none",
            "--limit",
            "2",
            "-T",
            "perturbation=universal_review",
            "-T",
            "level=judgments",
            "-T",
            "scorers=gem",
            "-T",
            "dataset_summaries=true",
        ],
        gaming,
    )
    return root, deletion_log, replacement_log, gaming_log


@pytest.mark.slow
def test_judgment_deletion_pairs_and_metrics(validation_logs):
    _, log, *_ = validation_logs
    assert log.status == "success"
    for sample in log.samples:
        original = sample.metadata["original"].splitlines()
        assert sample.metadata["perturbed"].splitlines() == original[::2]
        value = sample.scores["gem_paired"].value
        assert math.isfinite(value["before"]) and math.isfinite(value["after"])
    before, after = pairs(log, "gem_paired")
    metrics = {m: v.value for m, v in log.results.scores[0].metrics.items()}
    pooled = math.sqrt((np.var(before, ddof=1) + np.var(after, ddof=1)) / 2)
    assert metrics["smd"] == pytest.approx((np.mean(after) - np.mean(before)) / pooled)
    assert metrics["mean_paired_difference"] == pytest.approx(np.mean(np.subtract(after, before)))
    assert metrics["paired_p"] == pytest.approx(
        stats.ttest_rel(after, before, alternative="less").pvalue
    )
    assert metrics["smd_ci95_lower"] < metrics["smd"] < metrics["smd_ci95_upper"]
    assert metrics["verdict"] == (1.0 if metrics["paired_p"] < 0.05 else 0.0)
    differences = np.subtract(after, before)
    deviations = (differences - differences.mean()) ** 2
    assert metrics["largest_share"] == pytest.approx(deviations.max() / deviations.sum())
    assert metrics["signed_rank_p"] == pytest.approx(
        stats.wilcoxon(
            differences[differences != 0],
            alternative="less",
            method=signed_rank_method(differences),
        ).pvalue
    )


def test_random_replacement_scores_another_papers_review(validation_logs):
    _, _, log, _ = validation_logs
    ids = [s.id for s in log.samples]
    for sample in log.samples:
        assert sample.metadata["other_paper_id"] != sample.id
        assert sample.metadata["perturbed"] == sample.metadata["other_text"]
        before_meta = sample.scores["gem_raw_paired"].metadata["before"]
        assert before_meta["signature"]["metric"] == "gem_raw"
    assert len(set(ids)) == len(ids)
    before, after = pairs(log, "gem_raw_paired")
    assert np.mean(after) < np.mean(before)  # another paper's review shares less information


def test_report_from_the_logs(validation_logs, tmp_path, capsys):
    root, deletion_log, *_ = validation_logs
    assert (
        cli_main(
            [
                "report",
                str(root / "deletion" / "logs"),
                str(root / "replacement" / "logs"),
                "--out",
                str(tmp_path / "report"),
                "--quiet",
            ]
        )
        == 0
    )
    markdown = (tmp_path / "report" / "report.md").read_text()
    assert "| gem |" in markdown and "| gem_raw |" in markdown
    assert "judgment_deletion (degradation)" in markdown
    table = pd.read_csv(tmp_path / "report" / "robustness.csv")
    row = table[(table.scorer == "gem") & (table.perturbation == "judgment_deletion")].iloc[0]
    assert row["smd"] == pytest.approx(deletion_log.results.scores[0].metrics["smd"].value)
    failures = pd.read_csv(tmp_path / "report" / "failures.csv").set_index("scorer")
    assert failures.loc["gem", "tested"] == 1
    assert failures.loc["gem", "degradations_failed"] == int(row["verdict"] < 0.5)
    assert "Tables 4-5" in capsys.readouterr().out


def test_universal_review_is_the_same_for_every_paper(validation_logs):
    *_, gaming_log = validation_logs
    perturbed = {s.metadata["perturbed"] for s in gaming_log.samples}
    assert len(perturbed) == 1  # one review for every paper
    [universal] = perturbed
    assert universal == gaming_log.samples[0].metadata["universal_review"]
    assert all(line.startswith("The reviewer ") for line in universal.splitlines())
    assert gaming_log.eval.metadata["kind"] == "gaming"
    metrics = gaming_log.results.scores[0].metrics
    low, high = metrics["smd_paired_ci95_lower"].value, metrics["smd_paired_ci95_upper"].value
    before, after = pairs(gaming_log, "gem_paired")
    from scorers.validation.statistics import smd_paired_confidence_interval

    assert (low, high) == pytest.approx(smd_paired_confidence_interval(before, after))


def test_report_has_a_gaming_table(validation_logs, tmp_path):
    root, *_, gaming_log = validation_logs
    assert cli_main(["report", str(root), "--out", str(tmp_path / "r"), "--quiet"]) == 0
    markdown = (tmp_path / "r" / "report.md").read_text()
    gaming_part = markdown.split("## Gaming")[1].split("## Failures")[0]
    assert "| scorer | universal_review | gamed |" in gaming_part
    metrics = gaming_log.results.scores[0].metrics
    cell = f"{metrics['smd'].value:.2f} [{metrics['smd_paired_ci95_lower'].value:.2f}, "
    assert cell in gaming_part
    assert "universal_review (" not in markdown.split("## Gaming")[0]  # not in Table 2
    failures = pd.read_csv(tmp_path / "r" / "failures.csv").set_index("scorer")
    assert failures.loc["gem", "gaming"] == 1
    assert failures.loc["gem", "gaming_failed"] == int(metrics["verdict"].value < 0.5)


@pytest.mark.slow
def test_report_keeps_the_newest_of_repeated_measurements(validation_logs, tmp_path):
    root, deletion_log, *_ = validation_logs
    [original] = sorted((root / "deletion" / "logs").glob("*.eval"))
    rerun = deletion_log.model_copy(deep=True)
    rerun.eval.created = "2100-01-01T00:00:00+00:00"  # a later run of the same measurement
    rerun.results.scores[0].metrics["smd"].value = -9.0
    write_eval_log(rerun, str(tmp_path / "rerun.eval"))
    shutil.copy(original, tmp_path / "original.eval")
    robust, _ = read_validation_logs([tmp_path], progress=False)
    assert len(robust) == 1 and robust.iloc[0]["smd"] == -9.0
    [note] = robust.attrs["skipped"]
    assert "original.eval: gem / judgment_deletion" in note and note.endswith("rerun.eval")
    assert "superseded by the newer" in note


def test_report_on_a_missing_folder_is_a_clear_error(tmp_path, capsys):
    assert cli_main(["report", str(tmp_path / "absent"), "--quiet"]) == 2
    assert "no such log file or folder" in capsys.readouterr().err


@pytest.mark.slow
def test_correlation_with_grades_leave_one_out(demo_records, tmp_path):
    rows = []
    for paper in demo_records[:3]:
        reviews = [
            {"id": r.id, "text": r.text, "summary": r.summary, "grade": float(len(r.summary))}
            for r in paper.reviews
        ]
        rows.append(
            {"id": paper.id, "title": paper.title, "abstract": paper.abstract, "reviews": reviews}
        )
    data = write_jsonl(tmp_path / "graded.jsonl", rows)
    log = eval_log(
        "gem_tasks/correlation",
        [
            "--model",
            "none",
            "-T",
            f"dataset={data}",
            "-T",
            "scorers=gem",
            "-T",
            "dataset_summaries=true",
        ],
        tmp_path,
    )
    assert len(log.samples) == 9
    for sample in log.samples:
        refs = sample.scores["gem"].metadata["references"]
        assert {r["reference_id"] for r in refs} == {r["id"] for r in sample.metadata["references"]}
        assert sample.metadata["held_out"]["id"] not in {r["reference_id"] for r in refs}
    values = [s.scores["gem"].value for s in log.samples]
    grades = [s.metadata["grade"] for s in log.samples]
    metrics = log.results.scores[0].metrics
    expected = stats.spearmanr(values, grades)
    assert metrics["spearman_rho"].value == pytest.approx(expected.statistic)
    assert metrics["spearman_p"].value == pytest.approx(expected.pvalue)


@pytest.mark.slow
def test_correlation_needs_grades(tmp_path):
    data = write_jsonl(
        tmp_path / "ungraded.jsonl",
        [{"id": "p", "title": "T", "abstract": "A", "reviews": [{"text": "a"}, {"text": "b"}]}],
    )
    run = inspect_eval(
        ["--model", "none", "-T", f"dataset={data}"], tmp_path, task="gem_tasks/correlation"
    )
    assert run.returncode != 0
    # the message as printed, whatever the terminal's width wrapped
    printed = " ".join((run.stderr + run.stdout).split())
    assert "no review carries a numeric 'grade' grade among its extra fields" in printed


@pytest.mark.slow
def test_llm_perturbation_uses_the_model_under_test(tmp_path):
    log = eval_log(
        "gem_tasks/robustness",
        [
            "--model",
            "smollm2/embedded",
            "--max-tokens",
            "32",
            "--limit",
            "1",
            "-T",
            "perturbation=rephrase",
            "-T",
            "scorers=gem_raw",
        ],
        tmp_path,
    )
    for sample in log.samples:
        assert sample.metadata["llm_outputs"]
        assert sample.metadata["perturbed"].strip()
        assert math.isfinite(sample.scores["gem_raw_paired"].value["after"])
