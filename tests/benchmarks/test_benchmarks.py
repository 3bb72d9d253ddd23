"""The scoring benchmarks run end to end on small inputs and count what they claim to count."""

from __future__ import annotations

import asyncio
import csv
import json
import math
import sys
from pathlib import Path

import pytest

from conftest import HAND_SHAPE, REPO, accepting_reviewer, load_benchmark, scripted_model


def test_forward_flops_by_hand():
    gpu = load_benchmark("speed.scoring_gpu")
    shape = HAND_SHAPE
    # per token 2 * (q,o: 2*4*4 + k,v: 2*4*2 + mlp: 3*4*8) = 288; two tokens 576; attention
    # 2 * 2 * 4 * (1 + 2) = 48; projection at one position 2 * 4 * 10 = 80
    assert gpu.forward_flops(shape, range(2), 1) == 576 + 48 + 80
    # a suffix on top of a 3-token prefix attends to the prefix as well
    assert gpu.forward_flops(shape, range(3, 4), 0) == 288 + 2 * 2 * 4 * 4


def test_gpu_benchmark_smoke_on_cpu(tmp_path: Path, monkeypatch):
    """The 8B benchmark's logic with a tiny model of the same family: the workload keeps its
    shared prefixes through the id mapping, every path agrees, ours executes fewer FLOPs, a
    variant that fails is recorded and dropped."""
    gpu = load_benchmark("speed.scoring_gpu")
    # a variant refused when its backend is built (a row chunk of 0 rows), and one whose every
    # run fails (its projection raises)
    monkeypatch.setitem(gpu.VARIANTS, "broken", {"projection_chunk": 0})
    monkeypatch.setitem(gpu.VARIANTS, "failing", {"projection_chunk": 7})
    from scorers.lm.hf.projection import TargetProjection

    project = TargetProjection.__call__

    def failing_project(self, hidden, tokens):
        if self.projection_chunk == 7:
            raise RuntimeError("projection failed\nsecond line")
        return project(self, hidden, tokens)

    monkeypatch.setattr(TargetProjection, "__call__", failing_project)
    prompt = list(range(100, 160))
    rows = []
    for paper in range(2):
        synopsis = [200 + paper] * 20
        for reference in range(3):
            target = [300 + 10 * paper + reference] * (5 + reference)
            rows.append({"context": prompt + synopsis + [400 + paper] * 15, "target": target})
            rows.append({"context": prompt + synopsis + [7, 8], "target": target})
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps({"source": "test", "requests": rows}))
    requests = gpu.load_requests(workload, vocab_size=4096)
    assert [r.length for r in requests] == [len(r["context"]) + len(r["target"]) for r in rows]
    assert requests[0].context_ids[:80] == requests[2].context_ids[:80]
    out = tmp_path / "gpu.json"
    report = gpu.main(
        [
            "--workload",
            str(workload),
            "--shape",
            "tiny",
            "--device",
            "cpu",
            "--dtype",
            "float32",
            "--peak-tflops",
            "1",
            "--sweep",
            "100000/0,100000/100000",
            "--variants",
            "gqa,packed,packed_fused,broken,failing",
            "--packed-forward-cost",
            "0",
            "--memory-probe",
            "2048,4096",
            "--out",
            str(out),
        ]
    )
    assert json.loads(out.read_text()) == report
    baseline, ours = report["results"]["baseline"], report["results"]["ours"]
    assert ours["executed_tflop"] < 0.6 * baseline["executed_tflop"]
    assert ours["mfu"] == pytest.approx(ours["achieved_tflops"] / 1.0)
    assert ours["speedup"] == pytest.approx(ours["tokens_per_s"] / baseline["tokens_per_s"])
    # ours: the two papers' prompt + synopsis (80 tokens each) in one forward, then both
    # papers' six suffixes each in one batch (each row on its own paper's prefix); the
    # baseline: one forward per request
    assert (ours["forwards"], baseline["forwards"]) == (2, 12)
    suffixes = 2 * sum(15 + 5 + r + 2 + 5 + r for r in range(3))
    assert ours["tokens_per_forward"] == pytest.approx((2 * 80 + suffixes) / 2)
    # both rates: prompt tokens, and the tokens the plan ran (each paper's prefix once)
    assert ours["run_tokens"] == 2 * 80 + suffixes < report["tokens"]
    assert ours["run_tokens_per_s"] == pytest.approx(ours["run_tokens"] / ours["seconds"])
    assert baseline["run_tokens"] == report["tokens"]
    assert 0 < ours["padding"] < 0.5
    assert ours["padded_prefix_tokens"] == 0  # both papers' prefixes are 79 tokens long
    assert len(ours["rounds_s"]) == 2 and ours["max_abs_diff"] < 1e-3
    assert "projection" not in report  # a pass's time is projected from its data (pass_tokens)
    # variants: a copy with grouped-query attention under masks, timed beside, the same plan
    gqa = report["results"]["ours_gqa"]
    assert gqa["forwards"] == ours["forwards"] and gqa["max_abs_diff"] < 1e-3
    assert gqa["options"] == {"packed": False, "gqa_on_gpu": True}
    assert ours["options"] == {"packed": False}  # the padded path, whatever the default
    # packed forwards: no padding in the products, only in attention's layout; at a forward
    # cost of 0 every row runs alone
    packed = report["results"]["ours_packed"]
    assert packed["max_abs_diff"] < 1e-3 and packed["padding"] == 0
    assert packed["forwards"] == 2 + 12 and packed["attention_padding"] == 0
    assert ours["attention_padding"] == pytest.approx(ours["padding"])
    # fused projections: the same plan and scores, on a copy of the model (it re-points the
    # model's projections at views of the fused weights)
    fused = report["results"]["ours_packed_fused"]
    assert fused["max_abs_diff"] < 1e-3 and fused["forwards"] == packed["forwards"]
    assert gpu.needs_copy(gpu.VARIANTS["packed_fused"])
    assert "ours_broken" not in report["results"] and "ours_failing" not in report["results"]
    assert report["failed"] == {
        "ours_broken": "ValueError: projection_chunk must be at least 1, got 0",
        "ours_failing": "RuntimeError: projection failed",
    }
    assert report["fastest"] in {"ours", "ours_gqa", "ours_packed", "ours_packed_fused"}
    assert "compile" not in report
    # no forward cost: every row alone, no padding; a prohibitive one: the fewest forwards
    sweep = report["budget_sweep"]
    assert sweep["model"] == report["fastest"]
    alone, fewest = sweep["runs"]
    assert (alone["attention_padding"], alone["forwards"]) == (0, 2 + 12)
    assert fewest["forwards"] == 2 and fewest["attention_padding"] > 0
    # the memory probe: one forward of exactly each budget (2,048-token rows)
    probe = report["memory_probe"]
    assert probe["model"] == report["fastest"]
    assert [(r["forwards"], r["tokens_per_forward"]) for r in probe["runs"]] == [
        (1, 2048),
        (1, 4096),
    ]


def test_generation_benchmark_demo_runs_this_tree_as_installed_and_reports_failures(
    tmp_path: Path, monkeypatch
):
    """This checkout's demo runs without PYTHONPATH (a second gem-tasks distribution would hide
    the tasks), another tree's with it first; a failing demo raises with its output."""
    generation = load_benchmark("speed.generation")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("GEM_TASKS_CACHE_DIR", str(tmp_path / "cache"))
    script = "import os, sys; print('PYTHONPATH=' + str(os.environ.get('PYTHONPATH'))); sys.exit(3)"
    monkeypatch.setattr(generation, "DEMO_COMMAND", [sys.executable, "-c", script])
    with pytest.raises(RuntimeError, match=r"(?s)exit 3.*PYTHONPATH=None"):
        generation.run_demo(generation.REPO, tmp_path / "ours")
    other = tmp_path / "baseline-tree"
    other.mkdir()
    with pytest.raises(RuntimeError, match=f"PYTHONPATH={other}"):
        generation.run_demo(other, tmp_path / "baseline")
    assert (tmp_path / "ours" / "cache" / "models").is_symlink()  # the warm model folder


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_cache")
def test_cpu_benchmark_on_the_demo_data(tmp_path: Path, monkeypatch):
    scoring = load_benchmark("speed.scoring")
    monkeypatch.setattr(scoring, "DATA", tmp_path / "absent")  # the bundled demo
    out, workload = tmp_path / "cpu.json", tmp_path / "workload.json"
    exported = scoring.main(["--pairs", "2", "--export-workload", str(workload)])
    assert exported == {"source": "bundled demo", "exported": 4}
    assert not out.exists()
    rows = json.loads(workload.read_text())["requests"]
    assert len(rows) == 4 and all(row["context"] and row["target"] for row in rows)
    args = ["--pairs", "2", "--no-vllm", "--cost-models", "1", "2", "--out", str(out)]
    report = scoring.main(args)
    assert json.loads(out.read_text()) == report
    assert report["source"] == "bundled demo"
    assert [b["backend"] for b in report["backends"]] == ["baseline", "hf", "hf-no-reuse"]
    assert report["tokens_planned"] < report["tokens"]
    costs = {c["models"]: c for c in report["candidate_cost"]}
    assert list(costs) == [1, 2]  # --cost-models (the benchmark's default: 1 2 4)
    # the first demo paper's GEM pairs: its first review against its 2 others (a conditional
    # and a marginal each), the 2 marginals paid once for both models
    assert [costs[m]["forward_requests"] for m in (1, 2)] == [4, 6]
    assert [costs[m]["naive_requests"] for m in (1, 2)] == [4, 8]
    assert all(c["rerun_hit_rate"] == 1.0 and c["rerun_new_requests"] == 0 for c in costs.values())


def test_cpu_benchmark_refuses_a_cost_count_below_one(capsys):
    scoring = load_benchmark("speed.scoring")
    with pytest.raises(SystemExit) as stop:
        scoring.main(["--cost-models", "1", "0"])
    assert stop.value.code == 2
    assert "--cost-models must be positive numbers, got [1, 0]" in capsys.readouterr().err


@pytest.mark.slow
def test_rounds_split_whole_papers_and_rotate_the_backends():
    from scorers.lm.base import ScoringRequest

    scoring = load_benchmark("speed.scoring")
    # three papers (candidates x1, x2, x3), GEM then GEM-S triples, two requests per triple
    triples = [("s", "x1", "a"), ("s", "x1", "b"), ("t", "x1", "a"), ("s", "x2", "c")]
    triples += [("s", "x3", "d"), ("t", "x3", "d")]
    assert scoring.paper_groups(triples, 2) == [list(range(8)), list(range(8, 12))]
    groups = scoring.paper_groups(triples, 10)  # at most one round per paper
    assert groups == [list(range(6)), [6, 7], list(range(8, 12))]
    assert scoring.paper_groups(triples, 1) == [list(range(12))]

    calls = []

    def backend(name):
        def run(batch):
            calls.append(name)
            return [float(r.context_ids[0]) + (name == "b") for r in batch]

        return run

    requests = [ScoringRequest((i,), (0,)) for i in range(12)]
    runs = {name: backend(name) for name in ("a", "b", "c")}
    results = scoring.interleaved(runs, requests, groups, n_pairs=6)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    by_name = {r["backend"]: r for r in results}
    assert by_name["a"]["totals"] == [float(i) for i in range(12)]  # back in request order
    assert by_name["b"]["totals"] == [i + 1.0 for i in range(12)]
    assert all(len(r["round_seconds"]) == 3 for r in results)
    assert by_name["a"]["seconds"] == pytest.approx(sum(by_name["a"]["round_seconds"]))


def test_generation_benchmark_compares_token_by_token():
    compare = load_benchmark("speed.generation").compare

    assert compare([[1, 2, 3], [4, 5]], [[1, 2, 3], [4, 5]]) == []
    assert compare([[1, 2, 3], [4, 5]], [[1, 9, 3], [4, 5, 6]]) == [
        {"row": 0, "first_difference": 1, "lengths": [3, 3]},
        {"row": 1, "first_difference": 2, "lengths": [2, 3]},
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("isolated_cache")
def test_scoring_rules_cost_benchmark_counts_calls(tmp_path: Path, tiny_model, tokenizer):
    """The cost benchmark on two demo papers with the tiny random model as evaluation LM, oracle
    and preprocessor: log-prob requests are exact; a random oracle is unreadable, so its items
    are unscored with that reason after one retry per question."""
    folder = tmp_path / "tiny"
    tiny_model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    cost = load_benchmark("speed.scoring_rules_cost")
    out = tmp_path / "cost.json"
    report = cost.main(
        ["--papers", "2", "--scorer-lm", f"hf/{folder}", "--out", str(out),
         "--metrics", "fmi_kl_fvar_token", "tvd_mi",
         "--metric-options", '{"fmi_kl_fvar_token": {"divergence": "hellinger"}}']
    )  # fmt: skip
    assert json.loads(out.read_text()) == report
    assert report["machine"]["cpus"] >= 1 and report["dtype"] == "float32"
    rows = {r["metric"]: r for r in report["rows"]}
    # 1 positive + 4 negatives, a conditional and a marginal request each
    assert rows["fmi_kl_fvar_token"]["logprob_requests_per_sample"] == 10
    assert rows["fmi_kl_fvar_token"]["scored"] == 2
    assert rows["fmi_kl_fvar_token"]["options"] == {"divergence": "hellinger"}
    assert rows["tvd_mi"]["options"] == {}
    tvd = rows["tvd_mi"]
    assert tvd["scored"] + len(tvd["unscored_reasons"]) >= 1
    assert all("unreadable oracle reply" in reason for reason in tvd["unscored_reasons"])
    assert 5 <= tvd["oracle_calls_per_sample"] <= 10  # 5 questions, at most one retry each
    # --keep: a second run measures one metric again and keeps the other's row
    again = cost.main(
        ["--papers", "2", "--scorer-lm", f"hf/{folder}", "--out", str(out),
         "--metrics", "fmi_kl_fvar_token", "--keep"]
    )  # fmt: skip
    assert [r["metric"] for r in again["rows"]] == ["tvd_mi", "fmi_kl_fvar_token"]
    assert again["rows"][0] == tvd
    with pytest.raises(SystemExit, match="differs in \\['papers'\\]"):
        cost.main(
            ["--papers", "3", "--scorer-lm", f"hf/{folder}", "--out", str(out),
             "--metrics", "fmi_kl_fvar_token", "--keep"]
        )  # fmt: skip


def test_gaming_benchmark_compares_the_universal_review_paper_by_paper():
    """The universal-review comparison reads the paired scores' two sides and the model log's
    scores by paper, and its paired lines use only the papers both sides have."""
    from types import SimpleNamespace

    from scorers.validation.statistics import paired_comparison

    gaming = load_benchmark("experiments.gaming.run")

    def sample(paper, scores):
        return SimpleNamespace(id=paper, scores=scores)

    def paired(before, after):
        return SimpleNamespace(value={"before": before, "after": after})

    human = {"p1": 5.0, "p2": 7.0, "p3": 2.0, "p4": 4.0}
    universal = {"p1": -1.0, "p2": 0.5, "p3": -3.0, "p4": 1.0}
    model = {"p1": 6.0, "p2": 4.0, "p3": 3.5}  # p4 not reviewed
    universal_log = SimpleNamespace(
        samples=[sample(p, {"gem_paired": paired(human[p], universal[p])}) for p in human]
    )
    model_log = SimpleNamespace(
        samples=[sample(p, {"gem": SimpleNamespace(value=v)}) for p, v in model.items()]
    )
    text = gaming.universal_comparison([universal_log], [model_log], ["gem"])
    assert "| human (held-out review) | 4 | 4.500 |" in text
    assert "| SmolLM2-135M's own review | 3 | 4.500 |" in text
    assert "| universal review (same text for every paper) | 4 | -0.625 |" in text
    shared = ["p1", "p2", "p3"]
    expected = paired_comparison([model[p] for p in shared], [human[p] for p in shared], level=0.90)
    assert f"SmolLM2 − human: {expected.mean_difference:+.3f}" in text
    assert expected.mean_difference == pytest.approx((1.0 - 3.0 + 1.5) / 3)
    assert "over 3 papers" in text and "universal − human: -5.125" in text


def test_gaming_benchmark_merges_metrics_added_by_later_runs():
    """A later run that scores other metrics adds their sections without dropping the earlier
    run's; a metric scored twice is read from the newest log; a metric the model log lacks says
    so instead of inventing a row."""
    from types import SimpleNamespace

    gaming = load_benchmark("experiments.gaming.run")

    def log(scores_by_paper):
        return SimpleNamespace(
            samples=[SimpleNamespace(id=p, scores=s) for p, s in scores_by_paper.items()]
        )

    def paired(before, after):
        return SimpleNamespace(value={"before": before, "after": after})

    old = log({"p1": {"gem_paired": paired(1.0, 0.0)}, "p2": {"gem_paired": paired(3.0, 0.0)}})
    new = log(
        {
            "p1": {"gem_paired": paired(9.0, 9.0), "gppm_token_paired": paired(2.0, 1.0)},
            "p2": {"gem_paired": paired(9.0, 9.0), "gppm_token_paired": paired(4.0, 1.0)},
            "p3": None,  # an errored sample holds no scores
        }
    )
    model = log({"p1": {"gem": SimpleNamespace(value=5.0)}})
    assert gaming.paired_scorers([old, new]) == ["gem", "gppm_token"]
    text = gaming.universal_comparison([old, new], [model], ["gem", "gppm_token"])
    gem, gppm = text.split("## gppm_token")
    assert "| human (held-out review) | 2 | 9.000 |" in gem  # the newest log that has gem
    assert "| SmolLM2-135M's own review | 1 | 5.000 |" in gem
    assert "| human (held-out review) | 2 | 3.000 |" in gppm
    assert "| universal review (same text for every paper) | 2 | 1.000 |" in gppm
    assert "SmolLM2-135M's own review | not scored in these runs" in gppm
    assert "universal − human: -2.000" in gppm
    assert "universal − SmolLM2" not in gppm
    only_old = gaming.universal_comparison([old], [], ["gem", "gppm_token"])
    assert "## gppm_token" not in only_old and "| human (held-out review) | 2 | 2.000 |" in only_old


def test_autopre_exam_report_renders_every_judge_row_and_the_panel():
    exam = load_benchmark("experiments.autopre_exam_iclr2020.run")

    def score(value, used, unparsed, **extra):
        return {"value": value, "used": used, "unparsed": unparsed, "reason": None, **extra}

    def judge(c, p, s, in_panel, weight):
        return {
            "consistency": c,
            "pertinence": p,
            "self_confidence": s,
            "passed": {
                "consistency": c["value"] is not None and c["value"] > 0.5,
                "pertinence": p["value"] is not None and p["value"] > 0.25,
                "self_confidence": s["value"] == 1.0,
            },
            "in_panel": in_panel,
            "weight": weight,
        }

    confident = {"mode_prob": 1, "easy_mean": 1.5, "hard_mean": 2.25, "easy_used": 3}
    qualification = {
        "judges": {
            "a@before": judge(
                score(0.75, 4, 0),
                score(0.5, 8, 0),
                score(1.0, 6, 2, **confident, hard_used=3),
                True,
                0.6,
            ),
            "a@after": judge(
                score(None, 0, 4),
                score(0.0, 1, 7),
                score(None, 0, 8, mode_prob=1, easy_mean=None, hard_mean=None),
                False,
                None,
            ),
        },
        "thresholds": {"consistency": 0.5, "pertinence": 0.25, "self_confidence": 1.0},
        "panel": ["a@before"],
        "weights": {"a@before": 0.6},
        "reason": None,
        "judge_calls": {"a@before": {"consistency": 8, "pertinence": 8}},
    }
    from types import SimpleNamespace

    def sample(**labels):
        judges = {judge: {"labels": pair} for judge, pair in labels.items()}
        return SimpleNamespace(scores={"s": SimpleNamespace(metadata={"judges": judges})})

    samples = [
        sample(**{"a@before": [-1, -1], "a@after": [None, None]}),
        sample(**{"a@before": [-1, 1], "a@after": [1, None]}),
        SimpleNamespace(scores=None),  # an errored sample
    ]
    positions = exam.first_position_counts(samples)
    assert positions == {"a@before": (3, 4), "a@after": (0, 1)}
    text = exam.exam_markdown("forced", qualification, items=4, seconds=12.4, positions=positions)
    assert text.startswith("## local_answers = forced (4 exam papers, 12 s)")
    assert (
        "| a@before | 0.750 (4 used, 0 unparsed) | 0.500 (8 used, 0 unparsed) | "
        "pass: easy 1.50 vs hard 2.25 −log p (3+3 used, 2 unparsed) | "
        "consistency, pertinence, self_confidence | yes | 0.600 | 3/4 (75%) |"
    ) in text
    assert (
        "| a@after | n/a (0 used, 4 unparsed) | 0.000 (1 used, 7 unparsed) | "
        "n/a: easy n/a vs hard n/a −log p (0+0 used, 8 unparsed) | none | no |  | 0/1 (0%) |"
    ) in text
    assert "consistency 0.500, pertinence 0.250; self-confidence is pass/fail" in text
    assert "Panel: a@before." in text
    assert "- a@before: consistency 8, pertinence 8" in text
    empty = dict(qualification, panel=[], reason="no candidate passed all three exams")
    assert "Panel: empty (no candidate passed all three exams)." in exam.exam_markdown(
        "generate", empty, items=4, seconds=1.0
    )


def test_gaming_benchmark_counts_the_oracles_yes_answers_by_side():
    """oracle.md: per binary-critic metric and strategy, the share of yes answers on the paper's
    own references and on the negatives, before and after; 7-point answers and sides without
    terms are not counted; a later log of the same strategy replaces an earlier one."""
    from types import SimpleNamespace

    gaming = load_benchmark("experiments.gaming.run")

    def term(side, *answers):
        return {"side": side, "answers": list(answers), "critic": sum(answers) / len(answers)}

    def log(strategy, samples):
        return SimpleNamespace(
            eval=SimpleNamespace(metadata={"perturbation": strategy}),
            samples=[
                SimpleNamespace(id=f"p{i}", scores=scores) for i, scores in enumerate(samples)
            ],
        )

    def paired(before, after, value=None):
        return SimpleNamespace(
            value=value or {"before": 0.0, "after": 0.0},
            metadata={"before": {"references": before}, "after": {"references": after}},
        )

    first = log(
        "oracle_injection",
        [
            {
                "tvd_mi_paired": paired(
                    [term("positive", 0.5), term("negative", -0.5), term("negative", -0.5)],
                    [term("positive", 0.5), term("negative", 0.5), term("negative", -0.5)],
                ),
                # a 7-point cell's answers (log-ratios) are not a binary critic's
                "gppm_j_paired": paired([term("positive", 2.0)], [term("positive", 3.0)]),
            },
            {  # statement level: one answer per statement; an unscored side has no terms
                "tvd_mi_paired": paired(
                    [term("positive", 0.5, -0.5), term("negative", 0.5)],
                    [],
                    value=float("nan"),
                )
            },
        ],
    )
    text = gaming.oracle_answers([first])
    # before: same paper 2 yes of 3 answers, negatives 1 of 3; after: 1 of 1 and 1 of 2
    assert "| tvd_mi | oracle_injection | before | 0.67 (3) | 0.33 (3) | +0.33 |" in text
    assert "| tvd_mi | oracle_injection | after | 1.00 (1) | 0.50 (2) | +0.50 |" in text
    assert "gppm_j" not in text
    rerun = log(
        "oracle_injection",
        [{"tvd_mi_paired": paired([term("positive", -0.5)], [term("negative", 0.5)])}],
    )
    text = gaming.oracle_answers([first, rerun])
    assert "| tvd_mi | oracle_injection | before | 0.00 (1) | n/a (0) | n/a |" in text
    assert text.count("| tvd_mi |") == 2
    assert gaming.oracle_answers([log("shotgun", [{"gem_paired": paired([], [])}])]) == ""


@pytest.mark.slow
def test_beyond_rating_benchmark_runs_rows_over_invocations_and_reads_finished_ones(
    tmp_path: Path,
):
    """The three rows (human, the model's own review, random replacement) on two papers with
    the one metric that needs no model: ``--runs human`` does only that row (the summary then
    refuses to be written without the other two); a later invocation does the other two and
    reads the finished human row from its log without redoing it; times are the journal's, a
    resume with other settings is refused, ``--fresh`` starts over."""
    bench = load_benchmark("experiments.beyond_rating_iclr2020.run")
    from inspect_ai.log import read_eval_log

    from conftest import rated_free_text_papers, write_jsonl

    scripted_model("bench_fixed", lambda conversation, model: "A review with no rating.")

    out = tmp_path / "out"
    data = write_jsonl(tmp_path / "papers.jsonl", rated_free_text_papers(2))
    argv = ["--data", str(data), "--papers", "2", "--out", str(out)]
    argv += ["--scorers", "br_rating_mae", "--model", "bench_fixed/model"]
    with pytest.raises(SystemExit, match=r"no complete log of run\(s\) \['model', 'replacement'\]"):
        bench.main([*argv, "--runs", "human"])
    human_log = bench.finished_log(out / "logs" / "human")
    assert human_log is not None and bench.finished_log(out / "logs" / "model") is None
    summary = bench.main(argv)
    assert bench.finished_log(out / "logs" / "human") == human_log  # read, not redone
    journal = json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [
        ["human"],
        ["model", "replacement"],
    ]
    cells = summary["br_rating_mae"]
    assert set(cells) == {"human", "SmolLM2-135M", "random replacement"}
    # the held-out reviewer's stored rating against the mean of the other two
    human = cells["human"]
    assert human["scored"] == human["n"] == 2 and human["calls_per_review"] == 0
    errors = []
    for sample in read_eval_log(human_log).samples:
        others = [r["rating"] for r in sample.metadata["references"]]
        errors.append(abs(sample.metadata["held_out"]["rating"] - sum(others) / len(others)))
    assert human["mean"] == pytest.approx(sum(errors) / 2) and len(others) == 2
    # the fixed reply and a replaced human review state no rating: unscored with the reason
    for name in ("SmolLM2-135M", "random replacement"):
        assert cells[name]["scored"] == 0 and cells[name]["n"] == 2
        assert any("rating cannot be read" in r for r in cells[name]["unscored_reasons"])
    timings = json.loads((out / "timings.json").read_text())
    assert sorted(timings) == sorted(bench.TIMING_NAMES.values())
    assert all(v >= 0 for v in timings.values())
    assert sorted(p.parent.name for p in (out / "logs").glob("*/*.eval")) == [
        "human",
        "model",
        "replacement",
    ]
    again = bench.main(argv)  # every row finished: all read from their logs
    assert again == summary
    assert json.loads((out / "timings.json").read_text()) == timings
    assert "| br_rating_mae | human | 2 / 2 |" in (out / "summary.md").read_text()
    with pytest.raises(SystemExit, match="settings"):
        bench.main([*argv[:3], "1", *argv[4:]])  # one paper now: not the stopped run's
    fresh = bench.main([*argv, "--fresh", "--runs", "human,model,replacement"])
    assert fresh["br_rating_mae"]["human"]["mean"] == human["mean"]
    assert bench.finished_log(out / "logs" / "human") != human_log
    assert len(json.loads((out / "invocations.json").read_text())["invocations"]) == 1
    with pytest.raises(SystemExit, match="unknown run"):
        bench.main([*argv, "--runs", "humans"])
    # --dtype reaches the scorers' LM (and Binoculars' options), recorded in the task's arguments
    with pytest.raises(SystemExit, match="no complete log"):
        bench.main([*argv, "--fresh", "--runs", "human", "--dtype", "float32"])
    task_args = read_eval_log(bench.finished_log(out / "logs" / "human")).eval.task_args
    assert task_args["scorer_lm_args"] == {"dtype": "float32"}


def test_beyond_judge_probe_pairs_and_scores_a_judge_with_known_answers(tmp_path: Path):
    """Three pairs per review (a point against itself, another point of the same review, a
    point of another paper); a judge that says Yes exactly to identical points scores 1.0
    balanced accuracy, one that always says No 0.5; an unreadable reply is asked again and then
    left unread, not counted as No."""
    probe = load_benchmark("experiments.beyond_judge_probe.run")
    from conftest import write_jsonl
    from scorers.resources import Resources

    def summary(paper: int, k: int) -> str:
        lines = [f"The reviewer criticizes flaw {j} of paper {paper}." for j in range(k)]
        lines += [f"The reviewer appreciates merit {j} of paper {paper}." for j in range(k)]
        return "\n".join(lines)

    rows = [
        {"paper_id": f"p{i}", "reviews": [{"review": "text", "review_summary": summary(i, 2)}]}
        for i in range(4)
    ]
    data = write_jsonl(tmp_path / "release.jsonl", rows)

    class Judge:
        def __init__(self, rule):
            self.rule, self.identity, self.asked = rule, "scripted", 0

        async def generate(self, conversations, settings):
            self.asked += len(conversations)
            out = []
            for conversation in conversations:
                user = conversation[-1]["content"]
                a = user.split("Point A: ")[1].split("\n")[0]
                b = user.split("Point B: ")[1].split("\n")[0]
                out.append(self.rule(a, b, settings.seed))
            return out

    exact = Judge(lambda a, b, seed: "Yes" if a == b else "No.")
    argv = ["--data", str(data), "--reviews", "4", "--out", str(tmp_path / "out")]
    report = probe.main(argv, resources=Resources(generators={"judge": exact}))
    pairs = report["pairs"]
    assert len(pairs) == 12 and report["calls"] == exact.asked == 12
    assert [p["field"] for p in pairs[::3]] == ["weaknesses", "strengths"] * 2
    for p in pairs:
        assert (p["a"] == p["b"]) == (p["kind"] == "same")
        same_paper = p["b"].endswith(f"of paper {p['paper'][1:]}.")
        assert same_paper == (p["kind"] != "other_paper")
        verb = "criticizes" if p["field"] == "weaknesses" else "appreciates"
        assert verb in p["a"] and verb in p["b"]
    assert report["summary"]["balanced_accuracy"] == 1.0
    assert json.loads((tmp_path / "out" / "probe.json").read_text())["calls"] == 12
    assert "| same | Yes | 4 | 4 | 100% | 100% |" in (tmp_path / "out" / "probe.md").read_text()
    # a finished run is read back, not asked again; the journal holds both invocations
    again = probe.main(argv, resources=Resources(generators={"judge": exact}))
    assert exact.asked == 12 and again["summary"] == report["summary"]
    journal = json.loads((tmp_path / "out" / "invocations.json").read_text())
    assert [list(i["rows"]) for i in journal["invocations"]] == [["judge"], []]
    assert again["invocations"] == 1 and again["seconds"] >= 0
    # in chunks: a chunk of 5 pairs asks three times, the answers are the same
    chunked = Judge(exact.rule)
    pairs = probe.probe_pairs(probe.gem_release_records(data), reviews=4)
    calls = asyncio.run(probe.judge_pairs(chunked, pairs, chunk=5))
    assert calls == 12 and [p["verdict"] for p in pairs] == [p["verdict"] for p in report["pairs"]]
    # other settings are refused; --fresh starts over
    with pytest.raises(SystemExit, match="settings"):
        probe.main([*argv, "--seed", "1"], resources=Resources(generators={"judge": exact}))
    argv.append("--fresh")

    never = Judge(lambda a, b, seed: "No")
    report = probe.main(argv, resources=Resources(generators={"judge": never}))
    kinds = report["summary"]["kinds"]
    assert kinds["same"]["accuracy"] == 0.0 and kinds["other_paper"]["accuracy"] == 1.0
    assert report["summary"]["balanced_accuracy"] == 0.5

    mumbles = Judge(lambda a, b, seed: "Both points discuss the paper." if a == b else "No")
    report = probe.main(argv, resources=Resources(generators={"judge": mumbles}))
    same = report["summary"]["kinds"]["same"]
    assert same == {"pairs": 4, "readable": 0, "yes_rate": None, "accuracy": None}
    assert report["calls"] == 12 + 4  # the unreadable ones asked once more
    assert report["summary"]["balanced_accuracy"] is None


def test_rewrite_budget_benchmark_counts_cut_rewrites_under_both_rules(tmp_path: Path):
    """The script that measures how many judgment rewrites stop at their token limit: a scripted
    rewriter cuts every rewrite whose budget is 256 and none above, so the old rule (256 for
    every review) cuts all three reviews and the new one only the short review's."""
    bench = load_benchmark("experiments.rewrite_budget.run")
    from scorers import Resources
    from scorers.lm.base import Reply

    class Rewriter:
        identity = "test/rewriter"

        async def generate(self, conversations, settings):
            text = "The reviewer appreciates it.\nThe reviewer appreciates it."
            return [Reply(text, hit_limit=settings.max_new_tokens == 256) for _ in conversations]

    texts = ["short review", "x" * 3000, "y" * 9000]
    resources = Resources(cache_dir=tmp_path, generators={"preprocessor": Rewriter()})
    result = asyncio.run(bench.measure(texts, resources))
    assert (result["before"]["at_limit"], result["after"]["at_limit"]) == (3, 1)
    assert result["before"]["at_limit_repeating_a_line"] == 3  # the two lines are the same
    assert result["per_budget"] == {
        "256": {"reviews": 1, "at_limit_before": 1, "at_limit": 1},
        "768": {"reviews": 1, "at_limit_before": 1, "at_limit": 0},
        "1024": {"reviews": 1, "at_limit_before": 1, "at_limit": 0},
    }
    # in chunks of two reviews (what a resumed run reads back chunk by chunk): the same counts
    fresh = Resources(cache_dir=tmp_path / "chunked", generators={"preprocessor": Rewriter()})
    chunked = asyncio.run(bench.measure(texts, fresh, chunk=2))
    for part in ("before", "after"):
        assert {**chunked[part], "seconds": 0} == {**result[part], "seconds": 0}
    assert chunked["per_budget"] == result["per_budget"]
    assert not bench.repeats_a_line("a\nb\n\nc") and bench.repeats_a_line("a\nb\na")
    result.update(
        {
            "data": "reviews.jsonl",
            "reviews": 3,
            "seed": 0,
            "seconds": 3.5,
            "invocations": 2,
            "provenance": load_benchmark("common.manifest").Run(tmp_path / "out").record,
        }
    )
    table = bench.summary_markdown(result)
    assert "In all 3.5 s over 2 invocation(s)." in table
    assert "| 256 new tokens for every review | 3 | 3 (100%) | 3 |" in table
    assert "| 1024 | 1 | 1 | 0 |" in table and result["provenance"]["command"]


def test_rewrite_budget_script_writes_its_results_and_manifest(tmp_path: Path, monkeypatch):
    """main end to end with the rewrites stubbed: the results (whose provenance holds paths)
    are written as JSON, and the manifest hashes both files."""
    bench = load_benchmark("experiments.rewrite_budget.run")
    data = tmp_path / "papers.jsonl"
    data.write_text("{}\n")
    row = {"rule": "r", "rewrites": 1, "at_limit": 0, "at_limit_repeating_a_line": 0}

    async def measure(texts, resources):
        return {
            "generator": "test/rewriter",
            "before": {**row, "seconds": 1.0},
            "after": {**row, "seconds": 2.0},
            "per_budget": {},
            "budgets": {},
            "cache": {"generation_hit": 0, "generation_miss": 2},
        }

    monkeypatch.setattr(bench, "sample_reviews", lambda path, n, seed: [("r1", "a review")])
    monkeypatch.setattr(bench, "measure", measure)
    out = tmp_path / "out"
    argv = ["--data", str(data), "--reviews", "1", "--out", str(out)]
    bench.main(argv)
    written = json.loads((out / "results.json").read_text())
    assert written["review_ids"] == ["r1"] and written["invocations"] == 1
    assert written["provenance"]["settings"]["out"] == str(out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["files"]) == {"results.json", "summary.md", "invocations.json"}

    # a finished run is read back, not measured again; other settings are refused
    async def must_not_run(texts, resources):
        raise AssertionError("measured again")

    monkeypatch.setattr(bench, "measure", must_not_run)
    assert bench.main(argv) == written
    journal = json.loads((out / "invocations.json").read_text())
    assert [list(i["rows"]) for i in journal["invocations"]] == [["rewrites"], []]
    with pytest.raises(SystemExit, match="settings"):
        bench.main([*argv[:-2], "--seed", "3", "--out", str(out)])


@pytest.mark.slow
def test_finetune_experiment_writes_every_committed_file_itself(tmp_path: Path):
    """The whole fine-tuning experiment at toy size (one optimizer step, two held-out papers):
    every file of its results folder is written by this run (the copies of the data manifest,
    the adapter's record and the training log included) and equals what it copies."""
    bench = load_benchmark("experiments.finetune_smollm2.run")
    words = "method results baseline ablation dataset".split()
    papers = [
        {
            "paper_id": f"paper{i}",
            "reviews": [
                {
                    "review": f"Review {k} of paper {i}: the {words[(i + k) % 5]} is unclear.",
                    "review_summary": f"The reviewer finds the {words[(i + k) % 5]} of paper "
                    f"{i} unclear.\n\nThe reviewer appreciates the {words[(i + k + 1) % 5]}.",
                }
                for k in range(3)
            ],
        }
        for i in range(8)
    ]
    data = tmp_path / "release.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in papers))
    out = tmp_path / "results"
    args = ["--data", str(data), "--train-papers", "4", "--val-papers", "2", "--max-steps", "1"]
    bench.main([*args, "--loss-papers", "1", "--out", str(out)])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["not_written_by_this_run"] == []
    for source, name in bench.KEPT.items():
        assert name in manifest["files"]
        assert (out / name).read_bytes() == (out / source).read_bytes()
    results = json.loads((out / "results.json").read_text())
    assert set(results["smd"]) == set(bench.STRATEGIES)
    assert results["train"]["steps"] == 1


def test_summaries_robustness_describes_what_the_perturbation_model_did(tmp_path: Path):
    """Per strategy: failures grouped by reason, the median length ratio, chat preambles and
    ultra-concise texts within their cap, counted by hand on four samples."""
    from types import SimpleNamespace

    robustness_run = load_benchmark("experiments.summaries_robustness.run")
    perturbation_rows = robustness_run.perturbation_rows
    write_perturbations = robustness_run.write_perturbations

    original = " ".join(f"w{i}" for i in range(20))  # cap: 2 words

    def sample(perturbed=None, failed=None):
        meta = {"original": original, "perturbed": perturbed}
        if failed:
            meta["perturbation_failed"] = failed
        return SimpleNamespace(metadata=meta)

    log = SimpleNamespace(
        eval=SimpleNamespace(task_args={"perturbation": "ultra_concise"}),
        samples=[
            sample("Here's the summary: w1 w2"),  # 5 words: 0.25, a preamble, over the cap
            sample("w1 w2"),  # 0.1, within the cap
            sample(failed="'ultra_concise' left the text unchanged (the model returned it)"),
            sample(failed="'ultra_concise' left the text unchanged (the model returned it)"),
        ],
    )
    row = perturbation_rows(log, "summeval")
    assert row["samples"] == 4 and row["perturbed"] == 2
    assert row["unscored_perturbation_failed"] == 2
    assert row["why"] == "2x 'ultra_concise' left the text unchanged (the model returned it)"
    assert row["median_length_ratio"] == pytest.approx((0.25 + 0.1) / 2)
    assert row["chat_preamble"] == 1 and row["within_ultra_concise_cap"] == 1
    write_perturbations([row], tmp_path)
    assert "| summeval | ultra_concise | 4 | 2 | 2 |" in (tmp_path / "perturbations.md").read_text()


@pytest.mark.slow
def test_summaries_robustness_perturbs_every_system_of_an_article_and_resumes(tmp_path: Path):
    """One SummEval article is its 16 systems' summaries perturbed (the candidates), one SPACE
    hotel its 7 aspects' held-out summaries; each dataset writes its own results folder, each
    strategy resumes from its log in a later invocation, other settings are refused, and 0 skips
    a dataset."""
    import json

    from inspect_ai.log import read_eval_log

    _resumable = load_benchmark("common.resumable")
    JournalRecord = _resumable.JournalRecord
    ResumeRefused = _resumable.ResumeRefused
    _summaries_robustness = load_benchmark("experiments.summaries_robustness.run")
    main = _summaries_robustness.main
    from gem_tasks.tasks.samples import SPACE_DEMO, SUMMEVAL_DEMO

    out = tmp_path / "results"
    argv = ["--summeval", "1", "--space", "1", "--summeval-data", str(SUMMEVAL_DEMO),
            "--space-data", str(SPACE_DEMO), "--strategies", "sentence_deletion",
            "--scorers", "rouge_l", "--out", str(out)]  # fmt: skip
    main(argv)
    [summeval_log] = (out / "summeval" / "logs" / "sentence_deletion").glob("*.eval")
    samples = read_eval_log(str(summeval_log)).samples
    assert len(samples) == 16
    assert {s.metadata["perturb_target"] for s in samples} == {"existing candidates"}
    [space_log] = (out / "space" / "logs" / "sentence_deletion").glob("*.eval")
    assert len(read_eval_log(str(space_log)).samples) == 7
    for name in ("summeval", "space"):  # each dataset its own results folder
        assert set(json.loads((out / name / "timings.json").read_text())) == {"sentence_deletion"}
        manifest = json.loads((out / name / "manifest.json").read_text())
        assert manifest["settings"][name] == 1 and len(manifest["data"]) == 1
        assert (out / name / "report.md").exists() and (out / name / "perturbations.md").exists()
    main(argv)  # both rows read from their finished logs
    journal = JournalRecord.read(out / "summeval")
    assert len(journal.data["invocations"]) == 2
    assert journal.invocations("sentence_deletion") == 1
    with pytest.raises(ResumeRefused, match="settings"):
        main([*argv[:1], "2", *argv[2:]])
    # 0 skips a dataset: SPACE alone, SummEval's folder untouched
    before = (out / "summeval" / "invocations.json").read_text()
    main(["--summeval", "0", *argv[2:]])
    assert (out / "summeval" / "invocations.json").read_text() == before
    assert len(JournalRecord.read(out / "space").data["invocations"]) == 3
    with pytest.raises(SystemExit, match="at least one must be positive"):
        main(["--summeval", "0", "--space", "0", *argv[4:]])


@pytest.mark.slow
def test_summeval_correlation_takes_its_system_level_from_the_leaderboard(tmp_path: Path):
    """On the bundled three articles: the summary level is the log's rating_spearman, the system
    level the leaderboard's Spearman ρ of the 16 systems' means with their mean ratings, equal
    to ρ computed by hand from the log."""
    import math

    from inspect_ai.log import read_eval_log

    _summeval_correlation = load_benchmark("experiments.summeval_correlation.run")
    main = _summeval_correlation.main
    from gem_tasks.tasks.samples import SUMMEVAL_DEMO
    from scorers.validation.statistics import spearman

    out = tmp_path / "results"
    result = main(
        ["--data", str(SUMMEVAL_DEMO), "--articles", "3", "--scorers", "rouge_l", "--out", str(out)]
    )
    [path] = (out / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    by_system: dict[str, list[tuple[float, dict]]] = {}
    for sample in log.samples:
        answer = sample.metadata["answer"]
        by_system.setdefault(answer["id"], []).append(
            (sample.scores["rouge_l"].value, answer["ratings"])
        )
    systems = sorted(by_system)
    means = [sum(v for v, _ in by_system[s]) / len(by_system[s]) for s in systems]
    for dimension in ("coherence", "relevance"):
        ratings = [sum(r[dimension] for _, r in by_system[s]) / len(by_system[s]) for s in systems]
        expected = spearman(means, ratings)[0]
        assert result["system_level"]["rouge_l"][dimension] == pytest.approx(expected)
    summary = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert result["summary_level"]["rouge_l"]["mean"] == summary["rho_mean_of_dimensions"]
    assert result["scored"] == {"rouge_l": 48} and math.isfinite(
        result["system_level"]["rouge_l"]["mean"]
    )
    board = (out / "leaderboard" / "leaderboard.md").read_text()
    assert "system:M11" in board and "rating_mean" in board
    assert (out / "manifest.json").exists()
    assert "Table 3 layout" in (out / "report" / "report.md").read_text()
    # the tables again from the finished log, nothing scored again: the same numbers
    again = main(
        ["--data", str(SUMMEVAL_DEMO), "--articles", "3", "--scorers", "rouge_l", "--out",
         str(out), "--from-log", str(path)]
    )  # fmt: skip
    assert again["system_level"] == result["system_level"]
    assert again["summary_level"] == result["summary_level"]
    assert len(list((out / "logs").glob("*.eval"))) == 1
    # an invocation after the finished one reads the row from its log (nothing scored again,
    # the journal keeps both invocations); other settings are refused, not mixed in
    _resumable = load_benchmark("common.resumable")
    JournalRecord = _resumable.JournalRecord
    ResumeRefused = _resumable.ResumeRefused

    rerun = main(
        ["--data", str(SUMMEVAL_DEMO), "--articles", "3", "--scorers", "rouge_l", "--out", str(out)]
    )
    assert rerun["system_level"] == result["system_level"]
    journal = JournalRecord.read(out)
    assert len(journal.data["invocations"]) == 2 and journal.invocations("summeval") == 1
    assert len(list((out / "logs").glob("*.eval"))) == 1
    with pytest.raises(ResumeRefused, match="settings"):
        main(["--data", str(SUMMEVAL_DEMO), "--articles", "2", "--scorers", "rouge_l", "--out",
              str(out)])  # fmt: skip


def tiny_decisions_set(
    folder: Path, ratings: list[tuple], *, official: bool = False
) -> tuple[str, Path, Path]:
    """A set for the decisions experiment: paper ``p<i>`` with one review per rating in
    ``ratings[i]`` (None: unrated); p0 accepted, p1 and p2 rejected (p3 on: no decision); with
    ``official``, the decisions file lists every official reviewer's rating (6;8;8, 3;3;5,
    3;4;6)."""
    rows = [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": "An abstract.",
            "venue": "ICLR 2023",
            "reviews": [
                {"id": f"p{i}r{j}", "text": f"Review {j}.", "rating": r}
                for j, r in enumerate(paper)
            ],
        }
        for i, paper in enumerate(ratings)
    ]
    records = folder / "papers.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    decisions = folder / "decisions.csv"
    if official:
        decisions.write_text(
            "id,decision,accept,ratings\np0,Accept (Poster),1,6;8;8\np1,Reject,0,3;3;5\n"
            "p2,Reject,0,3;4;6\n"
        )
    else:
        decisions.write_text("id,decision,accept\np0,Accept (Poster),1\np1,Reject,0\np2,Reject,0\n")
    return "records", records, decisions


@pytest.mark.slow
def test_decisions_experiment_writes_the_rows_and_the_unread_verdicts(tmp_path, monkeypatch):
    """With no model row: the human and baseline rows of one small set, their leaderboard, and
    the count of verdicts missing a part (the human rows of papers whose held-out review has no
    rating)."""
    import json as _json

    run = load_benchmark("experiments.decisions_iclr.run")

    # p0, p2: a review without rating
    ratings = [(8, 6, None) if i % 2 == 0 else (3, 3, 6) for i in range(4)]
    monkeypatch.setattr(run, "SETS", {"tiny": tiny_decisions_set(tmp_path, ratings, official=True)})
    out = tmp_path / "results"
    run.main(["--model-papers", "0", "--out", str(out)])
    board = (out / "tiny" / "leaderboard" / "leaderboard.md").read_text()
    assert "baseline:committee" in board and "human (held-out review)" in board
    # the committee over every official reviewer's rating: 22/3 accepts p0, 11/3 and 13/3
    # reject p1 and p2: right on all three decided papers
    assert "| 1 | baseline:committee_all_reviewers | 3 | 1 | 0 | 1.000 |" in board
    assert "*Corpus statistic* `balanced_accuracy`" in board
    page = (out / "tiny" / "leaderboard" / "leaderboard.html").read_text()
    assert "baseline:committee" in page and "data:image/png;base64," in page
    timings = _json.loads((out / "tiny" / "timings.json").read_text())
    assert set(timings) == {f"tiny/{row}" for row in run.ROWS}  # every rule: ratings listed
    verdicts = (out / "tiny" / "verdicts.md").read_text()
    # the held-out review of each paper is one of its three; where it is the unrated one, the
    # human verdict is missing, said in the table
    assert "| tiny/human | 4 |" in verdicts
    assert "| tiny/baseline:always_reject | 4 | 4 | 4x the rule states no rating |" in verdicts
    assert "| tiny/baseline:committee | 4 | 0 | – |" in verdicts
    # p3 has no decision and no official ratings: its verdict says so
    assert "| tiny/baseline:committee_all_reviewers | 4 | 1 | 1x the data lists no" in verdicts
    manifest = _json.loads((out / "tiny" / "manifest.json").read_text())
    assert {"timings.json", "verdicts.md", "invocations.json"} <= set(manifest["files"])
    with pytest.raises(SystemExit, match="unknown sets"):
        run.main(["--sets", "iclr1999", "--out", str(out)])
    with pytest.raises(SystemExit, match="no finished model row to rebuild from"):
        run.main(["--model-papers", "0", "--out", str(out), "--board-only"])


@pytest.mark.slow
def test_decisions_experiment_resumes_the_model_row_and_refuses_other_settings(
    tmp_path, monkeypatch
):
    """The model's row (a scripted model here) is run once and read from its log by a second
    invocation (not redone, not timed again): one log, two invocations journalled, the row in
    the first only; other settings are refused."""
    import json as _json

    run = load_benchmark("experiments.decisions_iclr.run")
    scripted_model("decisions_scripted", accepting_reviewer)

    monkeypatch.setattr(run, "SETS", {"tiny": tiny_decisions_set(tmp_path, [(5, 5)] * 3)})
    out = tmp_path / "results"
    argv = ["--model", "decisions_scripted/a", "--model-papers", "2", "--mi-scorer", "none"]
    argv += ["--max-tokens", "16", "--out", str(out)]
    run.main(argv)
    [first] = (out / "tiny" / "logs" / "model").glob("*.eval")
    run.main(argv)
    assert [p.name for p in (out / "tiny" / "logs" / "model").glob("*.eval")] == [first.name]
    journal = _json.loads((out / "tiny" / "invocations.json").read_text())
    row = "tiny/decisions_scripted/a"
    assert [list(i["rows"]) for i in journal["invocations"]] == [[row], []]
    timings = _json.loads((out / "tiny" / "timings.json").read_text())
    assert timings[row] >= 0
    verdicts = (out / "tiny" / "verdicts.md").read_text()
    assert f"| {row} | 2 | 0 | – |" in verdicts
    board = (out / "tiny" / "leaderboard" / "leaderboard.md").read_text()
    assert "decisions_scripted/a" in board
    assert "ran over" not in verdicts  # one invocation worked on it
    # the folder rebuilt from the finished row's log: not run again, the journal as it was
    before = (out / "tiny" / "invocations.json").read_text()
    run.main([*argv, "--board-only"])
    assert (out / "tiny" / "invocations.json").read_text() == before
    assert [p.name for p in (out / "tiny" / "logs" / "model").glob("*.eval")] == [first.name]
    manifest = _json.loads((out / "tiny" / "manifest.json").read_text())
    assert manifest["settings"]["board_only"] is True
    assert manifest["settings"]["model_row"]["log"].endswith(first.name)
    assert any(d["path"].endswith(first.name) for d in manifest["data"])
    assert "decisions_scripted/a" in (out / "tiny" / "leaderboard" / "leaderboard.md").read_text()
    # a set without official ratings has no committee_all_reviewers row, and says why
    assert "baseline:committee_all_reviewers" not in _json.loads(
        (out / "tiny" / "timings.json").read_text()
    )
    with pytest.raises(SystemExit, match="--fresh"):
        run.main([*argv[:-4], "--max-tokens", "32", "--out", str(out)])
    run.main([*argv[:-4], "--max-tokens", "32", "--out", str(out), "--fresh"])
    journal = _json.loads((out / "tiny" / "invocations.json").read_text())
    assert len(journal["invocations"]) == 1 and journal["settings"]["max_tokens"] == 32


def test_generation_benchmark_writes_its_tables_from_its_result():
    """The markdown beside the JSON is made from the result: one row per workload and batch
    with both rates, the speed-up and the token-by-token check (and the vLLM engine's, where it
    ran), and the demo's two trees."""
    report = load_benchmark("speed.generation").markdown_report
    path = {"seconds": 1.0, "generated_tokens": 10, "tokens_per_s": 10.0, "stats": {}}
    result = {
        "machine": {"cpus": 2, "cpu": "Test CPU", "torch": "2.13", "torch_threads": 2},
        "batches": [
            {
                "workload": "rewrite",
                "batch": 4,
                "transformers_generate": path,
                "ours": {**path, "tokens_per_s": 25.0},
                "speedup": 2.5,
                "identical_rows": 3,
            }
        ],
    }
    text = report(result, "python -m benchmarks.speed.generation")
    assert "| rewrite | 4 | 10.00 | 25.00 | 2.50 | 3 of 4 |" in text
    assert "Demo" not in text and "Test CPU" in text
    assert "vLLM" not in text  # no engine path measured: no vLLM columns
    with_vllm = {
        **result["batches"][0],
        "vllm": {
            **path,
            "tokens_per_s": 30.0,
            "speedup_over_ours": 1.2,
            "rows_identical_to_ours": 2,
        },
    }
    result["batches"] = [with_vllm, {**result["batches"][0], "batch": 1, "identical_rows": 1}]
    text = report(result, "python -m benchmarks.speed.generation")
    assert "| vLLM engine (tok/s) | vLLM / ours | vLLM replies identical to ours |" in text
    assert "| rewrite | 4 | 10.00 | 25.00 | 2.50 | 3 of 4 | 30.00 | 1.20 | 2 of 4 |" in text
    assert "| rewrite | 1 | 10.00 | 25.00 | 2.50 | 1 of 1 | not run | not run | not run |" in text
    result["batches"] = result["batches"][:1]
    run = {"seconds": 9.5, "output_tokens": 100, "scores": {"gem": -1.0, "gem_s": -2.0}}
    result["demo"] = {
        "command": "inspect eval x",
        "baseline_ref": "abc",
        "baseline": {**run, "seconds": 19.0},
        "ours": run,
        "speedup": 2.0,
        "max_abs_score_change": 0.0,
    }
    text = report(result, "cmd")
    assert "| abc (baseline) | 19.0 s | 100 | -1.0 | -2.0 |" in text
    assert "| this tree | 9.5 s | 100 | -1.0 | -2.0 |" in text
    assert "Speed-up 2.0x" in text


@pytest.mark.slow
def test_gaming_experiment_splits_and_resumes_over_invocations(tmp_path):
    """Strategies run in separate invocations (--only) share one journal: each strategy one
    log, timings summed from the journal (nothing carried from an older timings.json), a rerun
    reuses the finished log, other settings are refused until --fresh."""
    import json as _json

    run = load_benchmark("experiments.gaming.run")
    papers = tmp_path / "papers.jsonl"
    tiny_decisions_set(tmp_path, [(5, 6, 7)] * 3)  # writes papers.jsonl: 3 papers, 3 reviews
    out = tmp_path / "results"
    out.mkdir()
    (out / "timings.json").write_text('{"shotgun (3 papers)": 9999.0}')  # an older run's
    argv = ["--data", str(papers), "--papers", "3", "--scorers", "bleu", "--skip-model"]
    argv += ["--out", str(out)]
    run.main([*argv, "--only", "shotgun"])
    run.main([*argv, "--only", "self_reference"])
    finished = list((out / "logs" / "shotgun").glob("*.eval"))
    run.main([*argv, "--only", "shotgun"])  # finished: read from its log, not rerun or timed
    assert list((out / "logs" / "shotgun").glob("*.eval")) == finished
    assert [
        len(list((out / "logs" / s).glob("*.eval"))) for s in ("shotgun", "self_reference")
    ] == [1, 1]
    journal = _json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [
        ["shotgun"],
        ["self_reference"],
        [],
    ]
    timings = _json.loads((out / "timings.json").read_text())
    assert set(timings) == {"shotgun (3 papers)", "self_reference (3 papers)"}
    assert timings["shotgun (3 papers)"] < 9999.0
    report = (out / "report.md").read_text()
    assert "shotgun" in report and "self_reference" in report
    manifest = _json.loads((out / "manifest.json").read_text())
    assert {"timings.json", "invocations.json", "report.md"} <= set(manifest["files"])
    with pytest.raises(SystemExit, match="--fresh"):
        run.main([*argv[:3], "2", *argv[4:], "--only", "shotgun"])
    run.main([*argv[:3], "2", *argv[4:], "--only", "shotgun", "--fresh"])
    journal = _json.loads((out / "invocations.json").read_text())
    assert len(journal["invocations"]) == 1 and journal["settings"]["papers"] == 2


@pytest.mark.slow
def test_validation_iclr2020_runs_strategies_over_invocations_and_reports_each_once(tmp_path):
    """Strategies split over two invocations share one journal (one log folder each, timings
    from the journal); a rerun reads every finished strategy from its log; the report holds
    each strategy once with the same "before" side (the same held-out reviews); other settings
    are refused, an unknown metric is named before anything runs."""
    from inspect_ai.log import read_eval_log

    from conftest import write_jsonl

    run = load_benchmark("experiments.validation_iclr2020.run")
    words = ["method", "baseline", "ablation", "proof", "dataset", "figure"]
    papers = [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": "An abstract.",
            "reviews": [
                {
                    "id": f"p{i}r{j}",
                    "text": f"The {words[(i + j) % 6]} is clear. The {words[(i + 2 * j) % 6]} is "
                    f"weak. The {words[(i + j + 3) % 6]} needs work in paper {i}.",
                    "rating": 3 + j,
                }
                for j in range(3)
            ],
        }
        for i in range(4)
    ]
    data = write_jsonl(tmp_path / "papers.jsonl", papers)
    out = tmp_path / "out"
    argv = ["--data", str(data), "--papers", "4", "--scorers", "bleu", "--out", str(out)]
    run.main([*argv, "--perturbations", "sentence_deletion"])
    run.main(argv)  # the other two; sentence_deletion read from its log
    journal = json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [
        ["sentence_deletion"],
        ["elongation_fixed", "random_replacement"],
    ]
    strategies = ("sentence_deletion", "random_replacement", "elongation_fixed")
    logs = [list((out / "logs" / s).glob("*.eval")) for s in strategies]
    assert [len(found) for found in logs] == [1, 1, 1]
    timings = json.loads((out / "timings.json").read_text())
    assert sorted(timings) == sorted(f"{s} (4 papers)" for s in strategies)
    rows = list(csv.DictReader((out / "robustness.csv").open()))
    assert sorted(r["perturbation"] for r in rows) == sorted(strategies)
    assert all(r["n"] == "4" and r["excluded"] == "0" for r in rows)
    befores = []
    for [log] in logs:  # the same held-out reviews before every strategy
        samples = read_eval_log(str(log)).samples
        befores.append({s.id: s.scores["bleu_paired"].value["before"] for s in samples})
    assert befores[0] == befores[1] == befores[2] and len(befores[0]) == 4
    assert all(math.isfinite(v) for v in befores[0].values())
    run.main(argv)  # everything finished: read, nothing run or timed
    assert len(json.loads((out / "invocations.json").read_text())["invocations"]) == 3
    assert json.loads((out / "timings.json").read_text()) == timings
    with pytest.raises(SystemExit, match="--fresh"):
        run.main([*argv[:3], "2", *argv[4:]])
    with pytest.raises(SystemExit):
        run.main([*argv[:5], "bleu,no_such_metric", *argv[6:]])


@pytest.mark.slow
def test_validation_iclr2023_runs_cells_over_invocations_with_the_embedded_lm(tmp_path):
    """The release's cells on three toy papers with the embedded evaluation LM, split over two
    invocations (``--only``): each (strategy, level) cell one log folder, timed by the journal,
    in the report once; GEM's and GEM-raw's "before" sides of random replacement are the same
    held-out reviews' scores as judgment deletion's (summaries) and finite."""
    from inspect_ai.log import read_eval_log

    run = load_benchmark("experiments.validation_iclr2023.run")
    words = "method results baseline ablation dataset".split()
    papers = [
        {
            "paper_id": f"paper{i}",
            "reviews": [
                {
                    "review": f"Review {k} of paper {i}. The {words[(i + k) % 5]} is unclear. "
                    f"The {words[(i + k + 2) % 5]} is strong.",
                    "review_summary": f"The reviewer finds the {words[(i + k) % 5]} of paper "
                    f"{i} unclear.\n\nThe reviewer appreciates the {words[(i + k + 2) % 5]}.",
                }
                for k in range(3)
            ],
        }
        for i in range(3)
    ]
    data = tmp_path / "release.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in papers))
    out = tmp_path / "out"
    argv = ["--data", str(data), "--papers", "3", "--raw-papers", "3", "--out", str(out)]
    run.main([*argv, "--only", "judgment_deletion"])
    run.main([*argv, "--only", "random_replacement", "judgment_deletion"])
    journal = json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [
        ["judgments_judgment_deletion"],
        ["judgments_random_replacement", "review_random_replacement"],
    ]
    timings = json.loads((out / "timings.json").read_text())
    assert sorted(timings) == [
        "judgment_deletion/judgments/gem (3 papers)",
        "random_replacement/judgments/gem (3 papers)",
        "random_replacement/review/gem_raw (3 papers)",
    ]
    rows = list(csv.DictReader((out / "robustness.csv").open()))
    assert sorted((r["perturbation"], r["scorer"]) for r in rows) == [
        ("judgment_deletion", "gem"),
        ("random_replacement", "gem"),
        ("random_replacement", "gem_raw"),
    ]

    def before(folder: str, scorer: str) -> dict:
        [log] = (out / "logs" / folder).glob("*.eval")
        samples = read_eval_log(str(log)).samples
        return {s.id: s.scores[f"{scorer}_paired"].value["before"] for s in samples}

    summaries = before("judgments_judgment_deletion", "gem")
    assert summaries == before("judgments_random_replacement", "gem") and len(summaries) == 3
    raw = before("review_random_replacement", "gem_raw")
    assert all(math.isfinite(v) for v in [*summaries.values(), *raw.values()])
    with pytest.raises(SystemExit):
        run.main([*argv, "--only", "no_such_strategy"])


BENCHMARK_MODULES = sorted(
    ".".join(path.relative_to(REPO / "benchmarks").with_suffix("").parts)
    for path in (REPO / "benchmarks").rglob("*.py")
    if path.name != "__init__.py"
)


@pytest.mark.parametrize("name", BENCHMARK_MODULES)
def test_every_benchmark_module_imports_as_python_m_runs_it(name):
    """Every script and helper under ``benchmarks/`` imports from the repository root (no bare
    names through ``sys.path``, no module that was moved or renamed): a script nobody runs in
    the suite still cannot rot silently."""
    assert load_benchmark(name).__name__ == f"benchmarks.{name}"


@pytest.mark.slow
def test_autopre_exam_experiment_runs_modes_over_invocations_and_reports_them(tmp_path):
    """Three judges that always name the first review, on four toy papers: the generate mode
    in one invocation, then both modes (generate read from its log); each mode one log folder,
    its time the journal's, its qualification the log's own; a judge that always names the
    first-shown review keeps no consistency pair (P_c 0), so the panel is empty."""
    from inspect_ai.model import ModelAPI, ModelOutput, ModelUsage, modelapi

    from conftest import write_jsonl
    from gem_tasks.tasks.autopre_exam import qualification_from_log

    @modelapi(name="bench_first")
    def bench_first():
        class First(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):
                output = ModelOutput.from_content(self.model_name, "one")
                output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
                return output

        return First

    bench = load_benchmark("experiments.autopre_exam_iclr2020.run")
    topics = ["graph neural networks", "protein folding", "speech recognition", "robot grasping"]
    papers = [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": f"We study {topic} with a new method and strong experiments.",
            "reviews": [
                {"id": f"p{i}r0", "text": f"The {topic} method is studied here. Short."},
                {"id": f"p{i}r1", "text": f"The {topic} experiments are weak."},
                {"id": f"p{i}r2", "text": "A long generic review about clarity and novelty."},
            ],
        }
        for i, topic in enumerate(topics)
    ]
    data = write_jsonl(tmp_path / "papers.jsonl", papers)
    out = tmp_path / "out"
    judges = "bench_first/a,bench_first/b@after,bench_first/c@expert"
    argv = ["--data", str(data), "--items", "4", "--judges", judges, "--out", str(out)]
    bench.main([*argv, "--answers", "generate"])
    bench.main([*argv, "--answers", "generate,forced"])
    journal = json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [["generate"], ["forced"]]
    assert sorted(json.loads((out / "timings.json").read_text())) == ["forced", "generate"]
    report = (out / "report.md").read_text()
    assert "SmolLM2" not in report.splitlines()[0]  # not the offline variants
    command = json.loads((out / "manifest.json").read_text())["command"]
    assert f"Made by `{command}`" in report
    for mode in ("forced", "generate"):
        [log] = (out / "logs" / mode).glob("*.eval")
        written = json.loads((out / f"qualification_{mode}.json").read_text())
        assert written == json.loads(json.dumps(qualification_from_log(str(log))))
        assert written["panel"] == []
        assert all(j["consistency"]["value"] == 0.0 for j in written["judges"].values())
        assert mode in report
    with pytest.raises(SystemExit):
        bench.main([*argv, "--answers", "sampled"])
    with pytest.raises(SystemExit, match="--fresh"):
        bench.main([*argv[:3], "3", *argv[4:], "--answers", "forced"])


def test_scoring_rules_cost_refuses_options_for_a_metric_it_does_not_measure(tmp_path: Path):
    """Options under an alias (gppm_j is measured as fmi_kl_direct_statement) or for a metric
    left out of --metrics would be silently unused: refused, naming them, before any work."""
    cost = load_benchmark("speed.scoring_rules_cost")
    out = tmp_path / "results" / "cost.json"
    with pytest.raises(SystemExit, match=r"not measured: \['gppm_j'\]"):
        cost.main(["--out", str(out), "--metric-options", '{"gppm_j": {"max_tokens": 256}}'])
    with pytest.raises(SystemExit, match=r"not measured: \['gppm_token'\]"):
        cost.main(
            ["--out", str(out), "--metrics", "gppm_cluster",
             "--metric-options", '{"gppm_token": {}, "gppm_cluster": {}}']
        )  # fmt: skip
    assert not out.parent.exists()  # refused before the results folder was made


@pytest.mark.slow
def test_lfqa_e_smoke_run_writes_agreement_and_replacement(tmp_path: Path):
    """The LFQA-E smoke script on a file written as LFQA-E publishes it: every pair's two answers
    scored, the preference agreement and the random replacement SMD per metric, with a manifest."""
    run = load_benchmark("experiments.lfqa_e_smoke.run")
    rows = [
        {"id": f"q{i}", "question": f"Why does thing {i} happen?",
         "Concise_Reference": f"Thing {i} happens because of cause {i}.",
         "student_answer_a": f"Thing {i} happens because of cause {i}, mostly.",
         "model_answer_b": "No idea at all.",
         "student_answer_a_vs_model_answer_b": "student_answer_a"}
        for i in range(4)
    ]  # fmt: skip
    data = tmp_path / "lfqa_e.json"
    data.write_text(json.dumps(rows))
    out = tmp_path / "results"
    result = run.main(["--data", str(data), "--scorers", "rouge_l", "--out", str(out)])
    assert result["samples"] == {"agreement": 8, "replacement": 8}
    # ROUGE-L prefers the answer that repeats the reference on every pair
    assert result["agreement"]["rouge_l"]["preference_agreement"] == 1.0
    # a "No idea at all." answer replaced by another question's "No idea at all." tests
    # nothing: that pair is unscored with the reason; every other pair is scored
    from inspect_ai.log import list_eval_logs, read_eval_log

    [info] = list_eval_logs(str(out / "logs" / "replacement"))
    samples = read_eval_log(info.name).samples
    same = [s for s in samples if s.metadata["other_text"] == s.metadata["original"]]
    assert same and len(same) < 8
    for sample in same:
        reason = sample.scores["rouge_l_paired"].metadata["unscored_reason"]
        assert reason == "random replacement drew another input's text identical to this one"
    assert result["replacement"]["rouge_l"]["pairs"] == 8 - len(same)
    assert "| rouge_l | 1.000 [" in (out / "results.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"results.json", "results.md"} <= set(manifest["files"])
    # a later invocation reads both runs from their logs (scored once), as the journal says
    _resumable = load_benchmark("common.resumable")
    JournalRecord = _resumable.JournalRecord

    again = run.main(["--data", str(data), "--scorers", "rouge_l", "--out", str(out)])
    assert again["agreement"] == result["agreement"]
    journal = JournalRecord.read(out)
    assert len(journal.data["invocations"]) == 2
    assert journal.invocations("agreement") == journal.invocations("replacement") == 1


@pytest.mark.slow
def test_gpu_checks_script_runs_both_checks_and_reports_a_failure(tmp_path: Path):
    """benchmarks/speed/gpu_checks.sh, dry on a CPU (small models, a few requests): both runs
    write their results with manifests, the suite's GPU tests run (skipped) and are recorded; the
    FlashAttention variants are recorded as not run (agreement) or failed (speed) with why; a
    failing run still lets the later steps run, and makes the script fail."""
    import os
    import subprocess

    speed_args = "--shape tiny --dtype float32 --peak-tflops 1 --requests 6"

    def run(agreement_args: str, name: str, speed_args: str) -> subprocess.CompletedProcess:
        env = dict(
            os.environ,
            PYTHON=sys.executable,
            GPU_CHECKS_DEVICE="cpu",
            GPU_CHECKS_RESULTS=str(tmp_path),
            GPU_CHECKS_AGREEMENT_ARGS=agreement_args,
            GPU_CHECKS_SPEED_ARGS=speed_args,
        )
        return subprocess.run(
            ["bash", str(REPO / "benchmarks/speed/gpu_checks.sh"), name, "30"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )

    done = run("--models random_gqa_llama --dtypes float32", "dry", speed_args)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    agreement = json.loads((tmp_path / "kernel_agreement_dry/agreement.json").read_text())
    # the suite's GPU tests ran too, recorded beside the agreement: seven, skipped without CUDA
    assert agreement["suite_gpu_tests"] == {
        "exit": 0,
        "tests": 7,
        "passed": 0,
        "skipped": 7,
        "failed": [],
    }
    rows = agreement["results"]["random_gqa_llama/float32"]
    assert rows["packed_masked"]["max_abs_per_token"] < 2e-4 and agreement["disagree"] == []
    assert "CUDA" in rows["packed_flash_fused_rotary"]["not_run"]
    speed = json.loads((tmp_path / "scoring_gpu_dry_rotary/scoring_gpu.json").read_text())
    assert speed["results"]["ours"]["speedup"] > 0
    assert set(speed["failed"]) == {
        f"ours_{v}"
        for v in (
            "packed_compiled_flash",
            "packed_compiled_fused_flash",
            "packed_compiled_flash_rotary",
            "packed_compiled_fused_flash_rotary",
        )
    }
    for folder in ("kernel_agreement_dry", "scoring_gpu_dry_rotary"):
        assert json.loads((tmp_path / folder / "manifest.json").read_text())["command"]
    # both runs fail (no such model; no such workload, the later argument wins): each is
    # attempted, the script fails
    failed = run("--models no_such_model", "broken", f"{speed_args} --workload {tmp_path}/none")
    assert failed.returncode == 1
    assert "GPU tests: exit 1; speed run: exit 1" in failed.stdout
    assert "no_such_model" in failed.stderr and "none" in failed.stderr


def test_cache_open_benchmark_times_both_opens_and_writes_its_manifest(tmp_path: Path):
    bench = load_benchmark("speed.cache_open")
    out = tmp_path / "out"
    assert bench.main(["--gigabytes", "0.002", "--rounds", "2", "--out", str(out)]) == 0
    result = json.loads((out / "cache_open.json").read_text())
    assert result["rows"] == int(0.002e9 / (bench.ROW_BYTES + 100))
    assert set(result["median_seconds"]) == {"whole_file_check", "stamped"}
    assert all(len(v) == 2 for v in result["seconds"].values())
    assert result["stamped_over_checked"] == pytest.approx(
        result["median_seconds"]["stamped"] / result["median_seconds"]["whole_file_check"]
    )
    assert "cache_open.json" in json.loads((out / "manifest.json").read_text())["files"]
