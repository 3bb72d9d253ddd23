"""The pass projection counts the requests the metrics really build, and projects by hand-checkable
arithmetic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import HAND_SHAPE, load_benchmark
from scorers.lm.base import ScoringRequest


def test_run_tokens_of_one_plan_and_of_separate_calls_by_hand():
    pass_tokens = load_benchmark("speed.pass_tokens")
    prefix = tuple(range(1000, 1070))  # 70 tokens: past the 64-token minimum of a shared prefix
    a = ScoringRequest(prefix + (1, 2, 3, 4, 5), (6, 7, 8))
    b = ScoringRequest(prefix + (9, 10, 11, 12, 13), (14, 15, 16))
    shape = HAND_SHAPE
    together = pass_tokens.count([[a, b]], shape)
    apart = pass_tokens.count([[a], [b]], shape)
    for counts in (together, apart):
        assert counts["requests"] == 2
        assert counts["prompt_tokens"] == 156
        assert counts["target_tokens"] == 6
        # the whole pass as one plan: the 70-token prefix once, then each 8-token suffix
        assert counts["run_tokens_whole_pass_plan"] == 70 + 8 + 8
    assert together["calls"] == 1 and apart["calls"] == 2
    assert together["run_tokens_per_call_plans"] == 86
    assert apart["run_tokens_per_call_plans"] == 156  # a call of one request shares nothing
    # without sharing, ours differs from the reference only by projecting the vocabulary at the
    # 3 target positions instead of all 78: 2 requests x 75 positions x 2 * 4 * 10
    assert apart["flops_8b_reference"] - apart["flops_8b_ours_per_call_plans"] == 2 * 75 * 80
    assert together["flops_8b_ours_whole_pass_plan"] < together["flops_8b_reference"]


def test_projection_divides_each_paths_work_by_its_measured_rate():
    pass_tokens = load_benchmark("speed.pass_tokens")
    counts = {
        "prompt_tokens": 3000,
        "flops_8b_reference": 4e12,
        "flops_8b_ours_per_call_plans": 3e12,
        "flops_8b_ours_whole_pass_plan": 2e12,
    }
    rates = {
        "results": {
            "baseline": {"tokens_per_s": 1000.0, "achieved_tflops": 2.0, "seconds": 5.0},
            "ours": {"tokens_per_s": 1500.0, "achieved_tflops": 1.0, "seconds": 4.0},
        }
    }
    rows = pass_tokens.project(counts, rates, {"prompt_tokens": 5000, "run_tokens": 2000})
    assert rows["baseline"]["from_flops_s"] == pytest.approx(2.0)
    assert rows["baseline"]["from_tokens_per_s_s"] == pytest.approx(3.0)
    assert rows["ours"]["from_flops_per_call_plans_s"] == pytest.approx(3.0)
    assert rows["ours"]["from_flops_whole_pass_plan_s"] == pytest.approx(2.0)
    assert rows["ours"]["from_tokens_per_s_s"] == pytest.approx(2.0)
    assert rows["ours"]["measured_run_tokens_per_s"] == pytest.approx(500.0)


def _records(path: Path) -> Path:
    rows = [
        {
            "id": f"paper{p}",
            "venue": "ICLR 2026",
            "title": f"Paper {p}",
            "abstract": f"We study problem {p} with a new method and report its results.",
            "reviews": [
                {
                    "id": f"r{p}{k}",
                    "text": f"Review {k} of paper {p}. The method is clear but the evaluation "
                    f"is narrow; the baselines are weak and the ablation {k} is missing. " * 3,
                    "rating": 6,
                }
                for k in range(3)
            ],
        }
        for p in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.slow  # loads the embedded model's tokenizer
def test_a_pass_is_counted_from_the_metrics_own_requests(tmp_path: Path):
    pass_tokens = load_benchmark("speed.pass_tokens")
    records = _records(tmp_path / "records.jsonl")
    review = "The paper proposes a method. The experiments are thin and the writing is unclear."
    rewrites = tmp_path / "rewrites.jsonl"
    # a rewrite as long as its review: the stand-ins keep each review's length (ratio 1)
    rewrites.write_text(json.dumps({"reviews": [{"review": review, "review_summary": review}]}))
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps({"requests": [{"context": [1, 2, 3], "target": [4]}]}))
    rates = tmp_path / "scoring_gpu.json"
    rates.write_text(
        json.dumps(
            {
                "results": {
                    "baseline": {"tokens_per_s": 100.0, "achieved_tflops": 1.0, "seconds": 1.0},
                    "ours": {"tokens_per_s": 200.0, "achieved_tflops": 1.0, "seconds": 0.5},
                }
            }
        )
    )
    out = tmp_path / "results" / "pass_tokens.json"
    report = pass_tokens.main(
        [
            *("--data", str(records), "--papers", "2", "--references", "2"),
            *("--pass", "gem,gem_s", "--pass", "gem,gem_s,gem_s_assw"),
            *("--rewrites", str(rewrites), "--rates", str(rates), "--workload", str(workload)),
            *("--out", str(out)),
        ]
    )
    assert json.loads(out.read_text()) == report
    assert (out.parent / "manifest.json").is_file()
    assert report["rewrite_length"]["ratio"] == 1.0
    two, three = report["passes"]["gem,gem_s"], report["passes"]["gem,gem_s,gem_s_assw"]
    # per paper and metric: each of 2 references after the candidate and after "not available"
    assert two["requests"] == 2 * 2 * 2 * 2 and two["calls"] == 2 * 2
    assert three["requests"] == 2 * 3 * 2 * 2 and three["calls"] == 2 * 3
    assert two["unscored"] == {} and three["unscored"] == {}
    # every review (candidate and references) of every paper is rewritten, once per metric
    assert two["rewrites_asked"] == 2 * 3 * 2
    for entry in (two, three):
        assert entry["run_tokens_whole_pass_plan"] <= entry["run_tokens_per_call_plans"]
        assert entry["run_tokens_per_call_plans"] < entry["prompt_tokens"]
        assert entry["target_tokens"] < entry["prompt_tokens"]
    # the ASSW pass adds a synopsis of the summary's token limit to each of its requests
    gem_s_assw_requests = three["requests"] - two["requests"]
    assert three["prompt_tokens"] - two["prompt_tokens"] > gem_s_assw_requests * 512
    rows = three["projections"][str(rates)]  # outside the repository: named as given
    assert rows["ours"]["from_tokens_per_s_s"] == pytest.approx(three["prompt_tokens"] / 200.0)


def test_an_unknown_metric_stops_before_counting(tmp_path: Path, capsys):
    pass_tokens = load_benchmark("speed.pass_tokens")
    records = _records(tmp_path / "records.jsonl")
    with pytest.raises(SystemExit) as stopped:
        pass_tokens.main(["--data", str(records), "--pass", "gem,nope", "--rewrites", str(records)])
    assert stopped.value.code == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err
