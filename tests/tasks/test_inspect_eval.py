"""End to end through Inspect: `inspect eval gem_tasks/iclr` on the demo data, embedded model."""

from __future__ import annotations

import math

import pytest

from conftest import inspect_eval, only_log, write_jsonl


@pytest.mark.slow
def test_model_review_end_to_end(tmp_path):
    run = inspect_eval(
        [
            "--model",
            "smollm2/embedded",
            "--limit",
            "2",
            "--max-tokens",
            "48",
            "-T",
            "dataset_summaries=true",
        ],
        tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    log = only_log(tmp_path)
    assert log.status == "success"
    assert log.eval.task == "gem_tasks/iclr"
    assert len(log.samples) == 2
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert set(metrics) == {"gem", "gem_raw", "gem_s"}
    for values in metrics.values():
        assert {"mean", "stderr", "ci90_lower", "ci90_upper"} <= set(values)
    for sample in log.samples:
        assert sample.output.completion.strip()
        for score in sample.scores.values():
            signature = score.metadata["signature"]
            assert signature["metric"] in ("gem", "gem_raw", "gem_s")
            assert (signature["family"], signature["version"]) == ("gem", 2)
            assert score.metadata["signature"]["evaluation_lm"].startswith("embedded/SmolLM2")
            if math.isnan(score.value):  # unscored samples must say why
                assert score.metadata["unscored_reason"]
            else:
                refs = score.metadata["references"]
                assert len(refs) == 2
                assert score.value == pytest.approx(sum(r["pmi"] for r in refs) / 2)
        assert sample.scores["gem_s"].metadata["synopsis_source"] == "abstract"


@pytest.mark.slow
def test_human_baseline_calls_no_model(tmp_path):
    run = inspect_eval(
        [
            "--model",
            "none",
            "--limit",
            "2",
            "-T",
            "candidate=human",
            "-T",
            "dataset_summaries=true",
            "-T",
            "scorers=gem",
        ],
        tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    log = only_log(tmp_path)
    for sample in log.samples:
        assert sample.output.completion == sample.metadata["held_out"]["text"]
        assert sample.output.model == "human"
        assert math.isfinite(sample.scores["gem"].value)
        # the held-out review's own dataset summary stands in for its preprocessing
        assert (
            sample.scores["gem"].metadata["candidate_judgments"]
            == (sample.metadata["held_out"]["summary"])
        )


@pytest.mark.slow
def test_malformed_dataset_fails_with_file_and_record(tmp_path):
    bad = write_jsonl(
        tmp_path / "broken.jsonl",
        [
            {"id": "p1", "title": "T", "abstract": "A", "reviews": [{"text": "r"}, {"text": "s"}]},
            {"id": "p2", "title": "T", "reviews": [{"text": "r"}]},
        ],
    )
    run = inspect_eval(
        ["--model", "none", "-T", f"dataset={bad}", "-T", "candidate=human"], tmp_path
    )
    assert run.returncode != 0
    # one message (Inspect wraps it at the terminal's width), no traceback
    said = (run.stderr + run.stdout).replace("\n", "")
    assert "broken.jsonl:2" in said
    assert "missing required field(s) ['abstract']" in said
    assert "Traceback" not in said
