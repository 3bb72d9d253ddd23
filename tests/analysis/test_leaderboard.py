"""The leaderboard from Inspect logs: numbers checked against numpy/scipy on logs built with
inspect_ai.log (edge cases: fewer papers, errored and unscored samples, signature mismatch, an
over-long signature), the CLI and its files, and end to end on logs of the demo data written by
`inspect eval` and re-scored by `inspect score` with two evaluation LMs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from inspect_ai.log import (
    EvalLog,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import GenerateConfig
from scipy import stats

import gem_tasks.analysis.leaderboard.logs as leaderboard_logs
from conftest import BASE_SIGNATURE, ERROR, PAPERS, signature, write_jsonl, write_log
from gem_tasks.analysis.leaderboard.compare import (
    HUMAN_LABEL,
    compare_logs,
    leaderboard,
    ranking_consistency,
)
from gem_tasks.analysis.leaderboard.logs import signature_differences
from gem_tasks.analysis.leaderboard.params import read_params
from gem_tasks.analysis.leaderboard.plot import plot_leaderboard
from gem_tasks.analysis.leaderboard.render import write_leaderboard
from gem_tasks.cli import main as cli_main
from scorers.validation.statistics import holm_adjust, paired_comparison

RNG = np.random.default_rng(7)
A = dict(zip(PAPERS, RNG.normal(10.0, 3.0, 8)))
B = dict(zip(PAPERS, RNG.normal(4.0, 3.0, 8)))
B["p3"] = ERROR  # errored sample
B["p6"] = math.nan  # unscored sample
C = {p: A[p] - 3.0 + float(RNG.normal(0.0, 0.5)) for p in PAPERS[:5]}  # fewer papers
H = dict(zip(PAPERS, RNG.normal(12.0, 2.0, 8)))
OTHER_LM = signature(evaluation_lm="hf/Qwen/Qwen2.5-7B-Instruct:bfloat16")
A2 = {p: v + 1.0 + float(RNG.normal(0.0, 0.3)) for p, v in A.items()}
B2 = {p: (v if v == ERROR else v * 0.5) for p, v in B.items()}
C2 = {p: v + 20.0 for p, v in C.items()}  # C ranks first under the other evaluation LM


@pytest.fixture(scope="module")
def built_logs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("built")
    write_log(root / "a.eval", "openai/model-a", A)
    write_log(root / "b.eval", "openai/model-b", B)
    write_log(root / "c.eval", "openai/model-c", C)
    write_log(root / "human.eval", "none", H, human=True)
    other = root / "other_lm"
    write_log(other / "a.eval", "openai/model-a", A2, sig=OTHER_LM)
    write_log(other / "b.eval", "openai/model-b", B2, sig=OTHER_LM)
    write_log(other / "c.eval", "openai/model-c", C2, sig=OTHER_LM)
    return root


def finite(values: dict) -> np.ndarray:
    array = np.array([v for v in values.values() if v != ERROR], dtype=float)
    return array[np.isfinite(array)]


def expected_row(values: dict) -> dict:
    x = finite(values)
    se = x.std(ddof=1) / math.sqrt(x.size)
    half = stats.t.ppf(0.95, x.size - 1) * se
    return {"scored": x.size, "mean": x.mean(), "stderr": se, "lo": x.mean() - half}


def test_table_matches_numpy_and_flags_errors(built_logs):
    board = compare_logs([built_logs], progress=False)
    table = board.table
    first = table[(table["metric"] == "gem") & (table["group"] == "1")].set_index("model")
    assert list(first.index) == [HUMAN_LABEL, "openai/model-a", "openai/model-c", "openai/model-b"]
    assert list(first["rank"]) == [1, 2, 3, 4]
    assert first.loc[HUMAN_LABEL, "is_human"] and not first.loc["openai/model-a", "is_human"]
    for model, values in [
        ("openai/model-a", A),
        ("openai/model-b", B),
        ("openai/model-c", C),
        (HUMAN_LABEL, H),
    ]:
        want = expected_row(values)
        row = first.loc[model]
        assert row["scored"] == want["scored"]
        assert row["mean"] == pytest.approx(want["mean"], rel=1e-12)
        assert row["stderr"] == pytest.approx(want["stderr"], rel=1e-12)
        assert row["ci90_lower"] == pytest.approx(want["lo"], rel=1e-12)
        assert row["ci90_upper"] == pytest.approx(2 * want["mean"] - want["lo"], rel=1e-12)
    assert first.loc["openai/model-b", ["papers", "scored", "unscored", "errored"]].tolist() == [
        8,
        6,
        1,
        1,
    ]
    assert first.loc["openai/model-c", "papers"] == 5
    # the public entry point returns the same table
    simple = leaderboard([built_logs], progress=False)
    assert simple["mean"].tolist() == pytest.approx(table["mean"].tolist())
    assert any("signature groups ranked separately" in n for n in simple.attrs["notes"])


def test_paired_comparisons_on_common_papers(built_logs):
    board = compare_logs([built_logs], progress=False)
    pairs = board.pairs[(board.pairs["metric"] == "gem") & (board.pairs["group"] == "1")]
    assert len(pairs) == 6  # every two of four rows
    for _, row in pairs.iterrows():
        values = {
            "openai/model-a": A,
            "openai/model-b": B,
            "openai/model-c": C,
            HUMAN_LABEL: H,
        }
        a, b = values[row["model_a"]], values[row["model_b"]]
        common = [
            p
            for p in PAPERS
            if p in a and p in b and a[p] != ERROR and b[p] != ERROR
            if math.isfinite(a[p]) and math.isfinite(b[p])
        ]
        x = np.array([a[p] for p in common])
        y = np.array([b[p] for p in common])
        d = x - y
        half = stats.t.ppf(0.95, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
        assert row["papers"] == len(common)
        assert row["difference"] == pytest.approx(d.mean(), rel=1e-12)
        assert row["ci90_lower"] == pytest.approx(d.mean() - half, rel=1e-12)
        assert row["ci90_upper"] == pytest.approx(d.mean() + half, rel=1e-12)
        assert row["p"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-12)
        assert row["significant"] == (row["p"] < 0.10)
        spread = (d - d.mean()) ** 2
        assert row["largest_share"] == pytest.approx(spread.max() / spread.sum(), rel=1e-12)
        assert row["signed_rank_p"] == pytest.approx(stats.wilcoxon(d).pvalue, rel=1e-12)
    # model-c shares 5 papers with model-a, 3 with model-b (p3 errored in b; p6, p7, p8 not in c)
    ac = pairs[(pairs["model_a"] == "openai/model-a") & (pairs["model_b"] == "openai/model-c")]
    assert ac["papers"].item() == 5
    cb = pairs[(pairs["model_a"] == "openai/model-c") & (pairs["model_b"] == "openai/model-b")]
    assert cb["papers"].item() == 4
    # the "better than" lists agree with the significant pairs
    table = board.table[(board.table["metric"] == "gem") & (board.table["group"] == "1")]
    for _, row in table.iterrows():
        wins = pairs[pairs["better"] == row["model"]]
        losers = {b if a == row["model"] else a for a, b in zip(wins["model_a"], wins["model_b"])}
        assert set(filter(None, row["better_than"].split(", "))) == losers
    human = table[table["model"] == HUMAN_LABEL].iloc[0]
    assert "openai/model-b" in human["better_than"]
    assert pairs["p_holm"].tolist() == pytest.approx(holm_adjust(pairs["p"]).tolist())


def test_signature_mismatch_is_grouped_named_and_merged_only_on_request(built_logs):
    board = compare_logs([built_logs], progress=False)
    groups = board.groups.set_index("group")
    assert groups.loc["1", "evaluation_lm"] == BASE_SIGNATURE["evaluation_lm"]
    assert groups.loc["2", "evaluation_lm"] == OTHER_LM["evaluation_lm"]
    assert board.differences["field"].tolist() == ["evaluation_lm"]
    second = board.table[board.table["group"] == "2"]
    assert sorted(second["model"]) == ["openai/model-a", "openai/model-b", "openai/model-c"]
    assert second.set_index("model").loc["openai/model-c", "mean"] == pytest.approx(
        np.mean(list(C2.values()))
    )
    assert any("pass --merge" in n and "evaluation_lm" in n for n in board.notes)

    merged = compare_logs([built_logs], merge=True, progress=False)
    assert set(merged.table["group"]) == {"merged"}
    assert len(merged.table) == 7  # 3 models x 2 signatures + the human baseline
    assert "openai/model-a [signature 2]" in set(merged.table["model"])
    assert HUMAN_LABEL in set(merged.table["model"])  # only in one group: no suffix
    assert any("--merge ranks 2 signature groups together" in n for n in merged.notes)
    # ranking consistency is computed on the unmerged groups either way
    assert merged.consistency.equals(board.consistency)


def test_ranking_consistency_matches_scipy(built_logs):
    board = compare_logs([built_logs], progress=False)
    [row] = board.consistency.to_dict("records")
    assert (row["group_a"], row["group_b"], row["models"]) == ("1", "2", 3)
    means1 = [np.mean(finite(v)) for v in (A, B, C)]
    means2 = [np.mean(finite(v)) for v in (A2, B2, C2)]
    want = stats.spearmanr(means1, means2)
    assert row["spearman_rho"] == pytest.approx(want.statistic)
    assert row["p"] == pytest.approx(want.pvalue)
    assert row["spearman_rho"] == pytest.approx(0.5)  # C jumps from second to first
    # the function works on any leaderboard table
    again = ranking_consistency(board.table)
    assert again["spearman_rho"].tolist() == pytest.approx([0.5])


def test_statistics_helpers_against_scipy():
    x = np.array([1.0, 2.5, 3.0, 4.5, math.nan, 7.0])
    y = np.array([0.5, 2.0, 3.5, 3.0, 1.0, math.nan])
    result = paired_comparison(x, y, level=0.90)
    keep = np.isfinite(x) & np.isfinite(y)
    d = x[keep] - y[keep]
    half = stats.t.ppf(0.95, 3) * d.std(ddof=1) / 2
    assert result.n == 4
    assert result.mean_difference == pytest.approx(d.mean())
    assert (result.ci_lower, result.ci_upper) == pytest.approx((d.mean() - half, d.mean() + half))
    assert result.p == pytest.approx(stats.ttest_rel(x[keep], y[keep]).pvalue)
    assert math.isnan(paired_comparison([1.0], [2.0]).p)
    # Holm: sorted p * (m - i), running maximum, capped at 1; NaN stays NaN
    adjusted = holm_adjust([0.01, 0.04, math.nan, 0.03, 0.5])
    assert adjusted[[0, 1, 3, 4]].tolist() == pytest.approx([0.04, 0.09, 0.09, 0.5])
    assert math.isnan(adjusted[2])
    assert signature_differences(
        signature(), signature(prompts={**BASE_SIGNATURE["prompts"], "predict_user": "x"})
    ) == ["prompts.predict_user"]


def test_reads_summaries_only_and_falls_back_for_an_over_long_signature(tmp_path, monkeypatch):
    long_sig = signature(preprocessor="inspect/" + "x" * 1500)  # > 1k: dropped from summaries
    write_log(tmp_path / "long.eval", "openai/model-a", {"p1": 1.0, "p2": 3.0}, sig=long_sig)
    write_log(tmp_path / "short.eval", "openai/model-b", {"p1": 2.0, "p2": 2.0})
    headers, full_samples = [], []
    real_read, real_sample = leaderboard_logs.read_eval_log, leaderboard_logs.read_eval_log_sample

    def read_header(path, header_only=False, **kwargs):
        headers.append(header_only)
        return real_read(path, header_only=header_only, **kwargs)

    def read_sample(path, **kwargs):
        full_samples.append((Path(path).name, kwargs["id"]))
        return real_sample(path, **kwargs)

    monkeypatch.setattr(leaderboard_logs, "read_eval_log", read_header)
    monkeypatch.setattr(leaderboard_logs, "read_eval_log_sample", read_sample)
    board = compare_logs([tmp_path], progress=False)
    assert headers and all(headers)  # no log is read in full
    assert sorted(full_samples) == [("long.eval", "p1"), ("long.eval", "p2")]
    groups = board.groups.set_index("group")
    assert groups.loc["2", "preprocessor"] == long_sig["preprocessor"]
    assert board.differences["field"].tolist() == ["preprocessor"]


def test_runs_with_different_settings_are_separate_rows_and_retries_supersede(tmp_path):
    write_log(tmp_path / "t0.eval", "openai/m", {"p1": 1.0, "p2": 2.0, "p3": 3.0})
    write_log(
        tmp_path / "t7.eval",
        "openai/m",
        {"p1": 5.0, "p2": 6.0, "p3": 7.0},
        config=GenerateConfig(temperature=0.7),
    )
    # a later log of the default run (an eval-retry) replaces p3's score
    write_log(
        tmp_path / "t0_retry.eval",
        "openai/m",
        {"p3": 9.0},
        created="2025-02-01T00:00:00+00:00",
    )
    board = compare_logs([tmp_path], progress=False)
    table = board.table.set_index("model")
    assert sorted(table.index) == ["openai/m (default settings)", "openai/m (temperature=0.7)"]
    assert table.loc["openai/m (default settings)", "mean"] == pytest.approx(4.0)  # 1, 2, 9
    assert table.loc["openai/m (default settings)", "logs"] == 2
    assert any("newest log's scores are used" in n for n in board.notes)


@pytest.mark.slow
def test_cli_writes_tables_json_and_plot(built_logs, tmp_path, capsys):
    params = tmp_path / "params.yaml"
    params.write_text("openai/model-a: 8\nmodel-b: 70\n", encoding="utf-8")  # c: unknown
    out = tmp_path / "board"
    code = cli_main(
        ["leaderboard", str(built_logs), "--out", str(out), "--plot", "--params", str(params)]
        + ["--quiet"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "## GEM — signature group 1" in captured.out
    assert f"**{HUMAN_LABEL}**" in captured.out
    assert "| GEM | 1 vs 2 | evaluation_lm |" in captured.out
    for name in ["leaderboard.md", "leaderboard.csv", "pairs.csv", "groups.csv", "consistency.csv"]:
        assert (out / name).stat().st_size > 0
    csv = pd.read_csv(out / "leaderboard.csv")
    assert len(csv) == 7
    assert csv.set_index(["group", "model"]).loc[(1, "openai/model-b"), "params_b"] == 70
    document = json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))
    assert document["merged"] is False and document["level"] == 0.9
    assert len(document["pairs"]) == 6 + 3
    b_row = next(r for r in document["leaderboard"] if r["model"] == "openai/model-b")
    assert b_row["errored"] == 1 and b_row["unscored"] == 1
    assert (out / "leaderboard_gem_1.png").stat().st_size > 10_000
    assert (out / "leaderboard_gem_2.png").exists()

    # the plotted data, read back from the figure's artists
    board = compare_logs([built_logs], progress=False)
    figures = plot_leaderboard(board, tmp_path / "plots", params=read_params(params))
    first = next(f for f in figures if f.group == "1")
    assert first.x_axis == "params"
    assert [(p.model, p.x) for p in first.points] == [
        ("openai/model-a", 8.0),
        ("openai/model-b", 70.0),
    ]
    assert first.points[0].mean == pytest.approx(np.mean(finite(A)))
    assert first.missing_params == ["openai/model-c"]
    assert first.human is not None and first.human[0] == pytest.approx(np.mean(finite(H)))
    plain = plot_leaderboard(board, tmp_path / "plain")
    assert [len(f.points) for f in plain] == [3, 3]  # every model; the human is the band
    assert plain[0].human is not None and plain[1].human is None


def test_params_files(tmp_path):
    (tmp_path / "p.csv").write_text("model,params\nopenai/a,8\nb,0.5\n", encoding="utf-8")
    assert read_params(tmp_path / "p.csv") == {"openai/a": 8.0, "b": 0.5}
    (tmp_path / "p.yaml").write_text("- {model: a, params: 7}\n- {model: b, params: 13}\n")
    assert read_params(tmp_path / "p.yaml") == {"a": 7.0, "b": 13.0}
    (tmp_path / "bad.yaml").write_text("a: many\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be a positive number"):
        read_params(tmp_path / "bad.yaml")


def test_cli_errors(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_main(["leaderboard", str(empty), "--quiet"]) == 2
    assert f"gem-tasks leaderboard: no Inspect logs in {empty}" in capsys.readouterr().err
    assert cli_main(["leaderboard", str(tmp_path / "missing"), "--quiet"]) == 2
    assert "no such log file or folder" in capsys.readouterr().err
    other = tmp_path / "other"
    write_log(other / "r.eval", "m", {"p1": 1.0}, task="gem_tasks/robustness")
    assert cli_main(["leaderboard", str(other), "--quiet"]) == 2
    assert "no logs of task gem_tasks/iclr" in capsys.readouterr().err
    write_log(other / "ok.eval", "m", {"p1": 1.0, "p2": 2.0})
    assert cli_main(["leaderboard", str(other), "--plot", "--quiet"]) == 2
    assert "--plot writes PNG files" in capsys.readouterr().err
    assert cli_main(["leaderboard", str(other), "--quiet"]) == 0
    assert "task gem_tasks/robustness skipped" in capsys.readouterr().out


@pytest.mark.slow
def test_nothing_to_rank_says_why_for_each_log(tmp_path, capsys):
    """Logs of an interrupted or failed run hold no scored sample: the leaderboard says there is
    nothing to rank and shows each log's status and error (it stopped with pandas' KeyError)."""
    from inspect_ai.log import EvalError

    failed = tmp_path / "failed"
    errored = write_log(failed / "a.eval", "openai/m", {"p1": ERROR, "p2": ERROR})
    log = read_eval_log(str(errored))
    log.status, log.error = (
        "error",
        EvalError(message="RuntimeError('server unreachable')", traceback="", traceback_ansi=""),
    )
    write_eval_log(log, str(errored))
    empty = EvalLog(eval=log.eval, status="error", error=log.error, samples=[])
    write_eval_log(empty, str(failed / "b.eval"))
    write_log(failed / "c.eval", "openai/n", {"p1": math.nan})  # finished, every sample unscored
    assert cli_main(["leaderboard", str(failed), "--quiet"]) == 2
    message = capsys.readouterr().err
    assert "nothing to rank: no log holds a scored sample" in message
    assert "a.eval: status error, error: RuntimeError('server unreachable')" in message
    assert "b.eval: status error" in message and "c.eval: status success" in message
    only_empty = tmp_path / "only_empty"
    write_eval_log(empty, str(only_empty / "b.eval"))
    with pytest.raises(ValueError, match="(?s)nothing to rank.*b.eval: status error"):
        compare_logs([only_empty], progress=False)


# -- end to end: inspect eval --no-score, inspect score with two evaluation LMs ------------------


def inspect_score(log: Path, output: Path, *args: str) -> subprocess.CompletedProcess:
    """`inspect score` with the GEM-raw scorer, run from the output's folder (as
    `inspect_eval` does: a build's gem_tasks.egg-info in the repository root would otherwise
    shadow the editable install and Inspect would register the scorers without namespace)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "inspect_ai", "score", str(log), "--scorer"]
    command += ["gem_tasks/gem_raw", *args, "--output-file", str(output), "--display", "plain"]
    return subprocess.run(
        command,
        cwd=output.parent,
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=1500,
    )


@pytest.fixture(scope="module")
def demo_logs(tmp_path_factory, tiny_folder):
    """The embedded model's reviews generated once (no scoring) and scored afterwards, as
    `inspect score` does, with two evaluation LMs (the embedded model, and the tiny random
    Llama: a second LM whose numbers only need to be its own, at no cost); the human baseline
    scored in the eval with the embedded one. All in this process (the command lines are tested
    in test_inspect_eval.py and by test_inspect_score_cli)."""
    import inspect_ai
    from inspect_ai.log import write_eval_log

    from gem_tasks.scoring.adapter import SCORERS
    from gem_tasks.tasks.iclr import iclr

    root = tmp_path_factory.mktemp("demo")
    common = {"scorers": "gem_raw", "references": 1}
    [unscored] = inspect_ai.eval(
        iclr(**common),
        model="smollm2/embedded",
        max_tokens=48,
        limit=3,
        score=False,
        log_dir=str(root / "reviews" / "logs"),
        display="none",
    )
    [human] = inspect_ai.eval(
        iclr(candidate="human", **common),
        model="none",
        limit=3,
        log_dir=str(root / "human" / "logs"),
        display="none",
    )
    assert unscored.status == human.status == "success"
    for folder, args in (("lm_embedded", {}), ("lm_tiny", {"scorer_lm": f"hf/{tiny_folder}"})):
        scored = inspect_ai.score(unscored, SCORERS["gem_raw"](**args), display="none")
        (root / folder).mkdir()
        write_eval_log(scored, str(root / folder / "model.eval"))
    return root


def sample_values(path: Path, scorer: str = "gem_raw") -> dict[str, float]:
    log = read_eval_log(str(path))
    return {str(s.id): float(s.scores[scorer].value) for s in log.samples}


@pytest.mark.slow
def test_rescored_logs_form_one_group_per_evaluation_lm(demo_logs, tiny_folder, capsys):
    [human_log] = sorted((demo_logs / "human" / "logs").glob("*.eval"))
    model_embedded = demo_logs / "lm_embedded" / "model.eval"
    model_tiny = demo_logs / "lm_tiny" / "model.eval"
    lms = {
        p: read_eval_log(str(p)).samples[0].scores["gem_raw"].metadata["signature"]
        for p in (human_log, model_embedded, model_tiny)
    }
    assert lms[model_embedded]["evaluation_lm"].startswith("embedded/SmolLM2")
    assert str(tiny_folder.resolve()) in lms[model_tiny]["evaluation_lm"]
    assert lms[model_embedded] == lms[human_log]  # same scoring whether in the eval or afterwards

    board = compare_logs([demo_logs], progress=False)
    assert any("reviews" in n and "no scores" in n for n in board.notes)  # the --no-score log
    table = board.table
    assert set(table["metric"]) == {"gem_raw"}
    first = table[table["group"] == "1"].set_index("model")
    assert sorted(first.index) == sorted([HUMAN_LABEL, "smollm2/embedded"])
    second = table[table["group"] == "2"].set_index("model")
    assert list(second.index) == ["smollm2/embedded"]
    assert board.differences["field"].tolist() == ["evaluation_lm"]
    for rows, path in [
        (first.loc["smollm2/embedded"], model_embedded),
        (first.loc[HUMAN_LABEL], human_log),
        (second.loc["smollm2/embedded"], model_tiny),
    ]:
        values = np.array(list(sample_values(path).values()))
        assert rows["scored"] == 3
        assert rows["mean"] == pytest.approx(values.mean(), rel=1e-9)
        se = values.std(ddof=1) / math.sqrt(3)
        assert rows["stderr"] == pytest.approx(se, rel=1e-9)
        assert rows["ci90_lower"] == pytest.approx(
            values.mean() - stats.t.ppf(0.95, 2) * se, rel=1e-9
        )
    [pair] = board.pairs[board.pairs["group"] == "1"].to_dict("records")
    human, model = sample_values(human_log), sample_values(model_embedded)
    papers = sorted(human)
    x = np.array([human[p] if pair["model_a"] == HUMAN_LABEL else model[p] for p in papers])
    y = np.array([model[p] if pair["model_a"] == HUMAN_LABEL else human[p] for p in papers])
    assert pair["papers"] == 3
    assert pair["difference"] == pytest.approx((x - y).mean(), rel=1e-9)
    assert pair["p"] == pytest.approx(stats.ttest_rel(x, y).pvalue, rel=1e-9)

    code = cli_main(["leaderboard", str(demo_logs), "--merge", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0
    assert "Signature groups merged (--merge)" in out
    assert "smollm2/embedded [signature 1]" in out and "smollm2/embedded [signature 2]" in out


@pytest.mark.slow
def test_inspect_score_cli(demo_logs, tmp_path):
    """`inspect score --scorer gem_tasks/gem_raw` on the human-baseline log gives the numbers the
    eval logged (the command line; the fixture scores in process)."""
    [human_log] = sorted((demo_logs / "human" / "logs").glob("*.eval"))
    output = tmp_path / "rescored" / "human.eval"
    run = inspect_score(human_log, output, "--action", "overwrite")
    assert run.returncode == 0, run.stderr[-3000:]
    assert sample_values(output) == sample_values(human_log)


def test_group_captions_show_the_signatures_own_fields_and_never_nan(tmp_path, capsys):
    """A metric without an evaluation LM (BLEU) is captioned with its own signature fields, not
    with ``nan``/``None`` placeholders; GEM's caption names its evaluation LM."""
    bleu = {
        "metric": "bleu",
        "version": 1,
        "family": "overlap",
        "settings": "nltk sentence_bleu",
        "package_version": "0.1",
    }
    write_log(tmp_path / "logs" / "bleu.eval", "openai/model-a", A, scorer="bleu", sig=bleu)
    write_log(tmp_path / "logs" / "gem.eval", "openai/model-a", A)
    assert cli_main(["leaderboard", str(tmp_path / "logs"), "--quiet"]) == 0
    headings = [line for line in capsys.readouterr().out.splitlines() if line.startswith("## ")]
    [bleu_heading] = [h for h in headings if h.startswith("## BLEU")]
    assert "settings `nltk sentence_bleu`" in bleu_heading and "family `overlap`" in bleu_heading
    assert not any(word in bleu_heading for word in ("nan", "None", "evaluation LM"))
    [gem_heading] = [h for h in headings if h.startswith("## GEM ")]
    assert f"evaluation LM `{BASE_SIGNATURE['evaluation_lm']}`" in gem_heading


def test_a_pair_one_paper_decides_is_marked(tmp_path):
    """Model x beats y by 0.1 on 19 papers and loses by 1e6 on one (a heavy-tailed metric):
    the t-test reads only that paper (p ≈ 0.33), the pair is marked ‡ with the signed-rank
    p-value, which sees the 19 wins; a well-behaved pair is not marked."""
    papers = [f"q{i}" for i in range(20)]
    x = {p: 1.0 for p in papers}
    y = {p: 0.9 for p in papers}
    y["q0"] = 1e6
    z = {p: 0.5 + 0.01 * i for i, p in enumerate(papers)}
    write_log(tmp_path / "x.eval", "openai/x", x)
    write_log(tmp_path / "y.eval", "openai/y", y)
    write_log(tmp_path / "z.eval", "openai/z", z)
    board = compare_logs([tmp_path], progress=False)
    pairs = board.pairs.set_index(["model_a", "model_b"])
    decided = pairs.loc[("openai/y", "openai/x")]
    assert decided["largest_share"] == pytest.approx(0.95) and decided["p"] > 0.3
    d = np.array([y[p] - x[p] for p in papers])
    assert decided["signed_rank_p"] == pytest.approx(stats.wilcoxon(d).pvalue)
    assert pairs.loc[("openai/x", "openai/z"), "largest_share"] < 0.5
    from gem_tasks.analysis.leaderboard.render import leaderboard_markdown

    markdown = leaderboard_markdown(board)
    line = next(row for row in markdown.splitlines() if row.startswith("| openai/y | openai/x |"))
    assert f"‡ (signed-rank p = {decided['signed_rank_p']:.3g})" in line
    assert "‡: one paper carries at least 50%" in markdown
    other = next(row for row in markdown.splitlines() if row.startswith("| openai/x | openai/z |"))
    assert "‡" not in other


@pytest.mark.slow
def test_rated_systems_are_rows_beside_their_expert_ratings(tmp_path):
    """SummEval at the system level: one `candidate=candidates` log gives one leaderboard row per
    system, the experts' ratings (per dimension and their mean) ranked beside the metrics, and
    `--against rating_mean` correlates each metric with the mean rating across the 16 systems."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.analysis.leaderboard.correlate import correlate
    from gem_tasks.tasks.samples import SUMMEVAL_DEMO
    from gem_tasks.tasks.summeval import summeval
    from scorers.data.sources.summaries import load_judgment_records
    from scorers.validation.statistics import spearman

    [log] = inspect_eval(
        summeval(candidate="candidates", scorers="rouge_l"),
        model="none",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success"
    board = compare_logs([tmp_path], progress=False)
    table = board.table
    rouge = table[table["metric"] == "rouge_l"].set_index("model")
    rating = table[table["metric"] == "rating_mean"].set_index("model")
    records = load_judgment_records(SUMMEVAL_DEMO)
    systems = sorted({c.id for r in records for c in r.candidates})
    assert len(systems) == 16 and sorted(rouge.index) == sorted(f"system:{s}" for s in systems)
    assert set(rouge["scored"]) == {len(records)}  # each system over the same 3 articles
    # the mean rating of a system: its summaries' mean over the four dimensions, averaged
    for system in systems:
        per_article = [
            sum(c.ratings.values()) / len(c.ratings)
            for r in records
            for c in r.candidates
            if c.id == system
        ]
        expected = sum(per_article) / len(per_article)
        assert rating.loc[f"system:{system}", "mean"] == pytest.approx(expected)
    result = correlate(board, "rating_mean")
    row = result.table[result.table["metric"] == "rouge_l"].iloc[0]
    assert row["models"] == 16
    x = [rouge.loc[f"system:{s}", "mean"] for s in systems]
    y = [rating.loc[f"system:{s}", "mean"] for s in systems]
    assert row["spearman_rho"] == pytest.approx(spearman(x, y)[0])


def test_a_plot_with_no_drawable_row_warns_nothing(tmp_path):
    """A group whose rows all lack a finite mean (a rating error where no rating was stated)
    is drawn empty, without matplotlib's 'no artists with labels' warning reaching the user."""
    import warnings

    from gem_tasks.analysis.leaderboard.plot import plot_group

    rows = pd.DataFrame(
        {
            "model": ["a", "human"],
            "metric": ["rating_error"] * 2,
            "group": ["g"] * 2,
            "mean": [float("nan"), float("nan")],
            "is_human": [False, True],
            "rank": [1, 2],
            "ci90_lower": [float("nan")] * 2,
            "ci90_upper": [float("nan")] * 2,
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot = plot_group(rows, tmp_path / "empty.png", title="rating error")
    assert plot.points == [] and plot.human is None
    assert (tmp_path / "empty.png").stat().st_size > 0


@pytest.mark.parametrize("source_present", [True, False])
def test_the_commands_description_is_the_leaderboards_docstring(
    source_present, monkeypatch, capsys
):
    """``gem-tasks leaderboard --help`` describes the command with the compare module's
    docstring, read from its source without importing it, or imported where only bytecode is
    installed."""
    import gem_tasks.analysis.leaderboard.compare as compare

    if not source_present:
        read_text = Path.read_text

        def no_source(self, *args, **kwargs):
            if self.name == "compare.py":
                raise FileNotFoundError(self)
            return read_text(self, *args, **kwargs)

        monkeypatch.setattr(Path, "read_text", no_source)
    with pytest.raises(SystemExit):
        cli_main(["leaderboard", "--help"])
    assert compare.__doc__.strip() in capsys.readouterr().out


# -- corpus statistics: ranked, bounded and paired as themselves ---------------------------------

# a dozen papers, 4 accepted (p0-p3) and 8 rejected (p4-p11)
DECIDED = [f"p{i}" for i in range(12)]
ACCEPTED = set(DECIDED[:4])
# stated accept/reject per row: "liberal" accepts every accepted paper and half the rejected
# ones, "reject-all" rejects everything, "backwards" accepts only rejected papers (half of them)
STATED = {
    "openai/liberal": {p: p in ACCEPTED or p in {"p4", "p5", "p6", "p7"} for p in DECIDED},
    "openai/reject-all": dict.fromkeys(DECIDED, False),
    "openai/backwards": {p: p in {"p4", "p5", "p6", "p7"} for p in DECIDED},
}
# stated ratings (ties within and across classes): "sharp" orders the papers almost perfectly,
# "flat" states 5 for every paper, "inverted" rates every accepted paper 3 and every rejected 8
RATINGS = {
    "openai/sharp": dict(zip(DECIDED, [8, 6, 6, 5, 5, 3, 3, 3, 1, 1, 1, 1])),
    "openai/flat": dict.fromkeys(DECIDED, 5),
    "openai/inverted": {p: 3 if p in ACCEPTED else 8 for p in DECIDED},
}


def _decision_logs(root: Path) -> Path:
    for model, stated in STATED.items():
        details = {
            p: {
                "predicted_accept": a,
                "accept": p in ACCEPTED,
                "indicator": int(a == (p in ACCEPTED)),
            }
            for p, a in stated.items()
        }
        values = {p: float(d["indicator"]) for p, d in details.items()}
        write_log(
            root / f"ba_{model.split('/')[1]}.eval",
            model,
            values,
            scorer="decision_balanced_accuracy",
            sig=signature(metric="decision_balanced_accuracy", family="decision"),
            details=details,
            # what Inspect printed: right for two rows, a stale number for "backwards"
            metrics={"balanced_accuracy": 0.4} if model == "openai/backwards" else None,
        )
    for model, ratings in RATINGS.items():
        details = {p: {"rating": float(r), "accept": p in ACCEPTED} for p, r in ratings.items()}
        write_log(
            root / f"auc_{model.split('/')[1]}.eval",
            model,
            {p: float(r) for p, r in ratings.items()},
            scorer="decision_auc",
            sig=signature(metric="decision_auc", family="decision"),
            details=details,
        )
    return root


def test_corpus_statistics_are_ranked_bounded_and_paired_as_themselves(tmp_path):
    board = compare_logs([_decision_logs(tmp_path / "logs")], progress=False)
    table = board.table.set_index(["metric", "model"])

    # balanced accuracy: (TPR + TNR) / 2. liberal (1 + 1/2) / 2, reject-all (0 + 1) / 2,
    # backwards (0 + 1/2) / 2; their per-paper means (accuracy) tie liberal and reject-all at 8/12
    ba = table.loc["decision_balanced_accuracy"]
    assert ba["value"].to_dict() == pytest.approx(
        {"openai/liberal": 0.75, "openai/reject-all": 0.5, "openai/backwards": 0.25}
    )
    assert ba["mean"].to_dict() == pytest.approx(
        {"openai/liberal": 8 / 12, "openai/reject-all": 8 / 12, "openai/backwards": 4 / 12}
    )
    assert ba["rank"].to_dict() == {
        "openai/liberal": 1,
        "openai/reject-all": 2,
        "openai/backwards": 3,
    }
    assert set(ba["headline"]) == {"balanced_accuracy"}
    assert set(ba["headline_kind"]) == {"corpus statistic"}
    # reject-all is 0.5 in every resample (TPR 0, TNR 1 whatever is drawn): a point interval
    assert (
        ba.loc["openai/reject-all", "ci90_lower"],
        ba.loc["openai/reject-all", "ci90_upper"],
    ) == (
        0.5,
        0.5,
    )
    assert ba.loc["openai/liberal", "ci90_lower"] <= 0.75 <= ba.loc["openai/liberal", "ci90_upper"]
    # liberal's TPR is 1 in every resample: its interval stays within [0.5, 1]
    assert ba.loc["openai/liberal", "ci90_lower"] >= 0.5
    # the number the log reports is checked against the one recomputed from its samples
    [stale] = [n for n in board.notes if "its log reports" in n]
    assert "openai/backwards" in stale and "balanced_accuracy 0.4, recomputed" in stale

    # AUC of the stated rating. sharp: of the 4 x 8 (accepted, rejected) pairs every one is
    # ordered right but its 5 against the rejected 5, a tie: (31 + 0.5) / 32; flat: all ties, 0.5;
    # inverted: every pair wrong, 0. The per-paper means (the mean stated rating) order them the
    # other way: inverted 76/12, flat 5, sharp 43/12
    auc = table.loc["decision_auc"]
    assert auc["value"].to_dict() == pytest.approx(
        {"openai/sharp": 31.5 / 32, "openai/flat": 0.5, "openai/inverted": 0.0}
    )
    assert auc["mean"].to_dict() == pytest.approx(
        {"openai/sharp": 43 / 12, "openai/flat": 5.0, "openai/inverted": 76 / 12}
    )
    assert auc["rank"].to_dict() == {"openai/sharp": 1, "openai/flat": 2, "openai/inverted": 3}
    # a resample keeps 4 accepted and 8 rejected papers: flat is 0.5 and inverted 0 in each
    assert (auc.loc["openai/flat", "ci90_lower"], auc.loc["openai/flat", "ci90_upper"]) == (
        0.5,
        0.5,
    )
    assert (auc.loc["openai/inverted", "ci90_lower"], auc.loc["openai/inverted", "ci90_upper"]) == (
        0.0,
        0.0,
    )

    # paired bootstrap on the 12 papers both scored: flat − inverted is 0.5 in every resample, so
    # its interval is [0.5, 0.5] and no resample reaches 0: p = 2 (0 + 1) / (2000 + 1)
    pairs = board.pairs[board.pairs["metric"] == "decision_auc"].set_index(["model_a", "model_b"])
    flat = pairs.loc[("openai/flat", "openai/inverted")]
    assert flat["test"] == "paired bootstrap" and flat["papers"] == 12
    assert flat["difference"] == pytest.approx(0.5)
    assert (flat["ci90_lower"], flat["ci90_upper"]) == pytest.approx((0.5, 0.5))
    assert flat["p"] == pytest.approx(2 / 2001)
    assert math.isnan(flat["t"])  # no t-test of the ratings
    # every pair is that clear-cut; Holm multiplies the smallest of three equal p-values by 3
    assert pairs["p"].tolist() == pytest.approx([2 / 2001] * 3)
    assert pairs["p_holm"].tolist() == pytest.approx([6 / 2001] * 3)
    assert auc.loc["openai/sharp", "better_than"] == "openai/flat, openai/inverted"
    # the mean's pairs stay paired t-tests
    ba_pairs = board.pairs[board.pairs["metric"] == "decision_balanced_accuracy"]
    assert set(ba_pairs["test"]) == {"paired bootstrap"}

    # every output says which kind each table is
    paths = write_leaderboard(board, tmp_path / "out", plot=True)
    text = paths["markdown"].read_text()
    assert "*Corpus statistic* `auc`" in text and "*Corpus statistic* `balanced_accuracy`" in text
    assert (
        "| rank | model | papers scored | unscored | errored | auc | 90% CI (bootstrap) |" in text
    )
    assert "| 1 | openai/sharp | 12 | 0 | 0 | 0.984 |" in text
    assert "p (paired bootstrap)" in text
    csv = pd.read_csv(paths["leaderboard"])
    assert set(csv["headline_kind"]) == {"corpus statistic"}
    assert set(pd.read_csv(paths["pairs"])["test"]) == {"paired bootstrap"}
    document = json.loads(paths["json"].read_text())
    assert {row["headline"] for row in document["leaderboard"]} == {"auc", "balanced_accuracy"}
    # the plot shows the statistic and its interval, on an axis that names it
    [auc_plot] = [
        f for f in plot_leaderboard(board, tmp_path / "plots") if f.metric == "decision_auc"
    ]
    drawn = {p.model: (p.mean, p.lower, p.upper) for p in auc_plot.points}
    assert drawn["openai/flat"] == (0.5, 0.5, 0.5)
    assert drawn["openai/sharp"][0] == pytest.approx(31.5 / 32)
    from gem_tasks.analysis.leaderboard.html import leaderboard_html

    page = leaderboard_html(board)
    assert "Corpus statistic auc" in page and "per-item mean (diagnostic)" in page


def test_a_rate_is_ranked_with_wilsons_interval_inside_zero_and_one(tmp_path):
    """Always reject: FNR 1 on every accepted paper, FPR 0 on every rejected one. Student's t
    gives the points [1, 1] and [0, 0]; Wilson's 90% interval is inside [0, 1] and not a point."""
    from scorers.validation.statistics import proportion_interval

    root = tmp_path / "logs"
    root.mkdir()
    accepted = {f"a{i}": 1.0 for i in range(6)}
    rejected = {f"r{i}": 0.0 for i in range(9)}
    write_log(root / "fnr.eval", "openai/reject-all", accepted, scorer="decision_fnr",
              sig=signature(metric="decision_fnr", family="decision"))  # fmt: skip
    write_log(root / "fpr.eval", "openai/reject-all", rejected, scorer="decision_fpr",
              sig=signature(metric="decision_fpr", family="decision"))  # fmt: skip
    mixed = {**{f"a{i}": 1.0 for i in range(3)}, **{f"r{i}": 0.0 for i in range(7)}}
    write_log(root / "acc.eval", "openai/reject-all", mixed, scorer="decision_accuracy",
              sig=signature(metric="decision_accuracy", family="decision"))  # fmt: skip
    table = compare_logs([root], progress=False).table.set_index("metric")
    z = 1.6448536269514722
    fnr, fpr, acc = (table.loc[m] for m in ("decision_fnr", "decision_fpr", "decision_accuracy"))
    assert fnr["value"] == 1.0 and fnr["ci90_upper"] == pytest.approx(1.0)
    assert fnr["ci90_lower"] == pytest.approx(6 / (6 + z * z))  # Wilson at n of n
    assert fpr["value"] == 0.0 and fpr["ci90_lower"] == pytest.approx(0.0, abs=1e-12)
    assert fpr["ci90_upper"] == pytest.approx(z * z / (9 + z * z))
    assert (acc["ci90_lower"], acc["ci90_upper"]) == pytest.approx(
        proportion_interval([1.0] * 3 + [0.0] * 7)
    )
    for row in (fnr, fpr, acc):
        assert 0.0 <= row["ci90_lower"] <= row["value"] <= row["ci90_upper"] <= 1.0


@pytest.mark.slow
def test_a_text_two_systems_share_is_scored_once_and_counts_for_both_systems(tmp_path):
    """Systems B and C wrote the same summary of an article: one sample scores it (the
    summary-level metrics count it once, with the mean of its ratings), and the leaderboard
    gives both systems their row for that article, each with its own experts' rating."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.judgments import judgments

    items = [
        {"id": f"a{k}", "domain": "summarization", "group": "news",
         "input": {"synopsis": f"Article {k}: the council voted to rebuild the bridge."},
         "references": [{"id": f"r{k}", "text": f"Article {k}: the council will rebuild it."}],
         "ground_truth": True,
         "candidates": [
             {"id": "A", "text": f"The council voted on article {k}.", "ratings": {"overall": 3}},
             {"id": "B", "text": "A bridge will be rebuilt.", "ratings": {"overall": 4}},
             {"id": "C", "text": "A bridge will be rebuilt.", "ratings": {"overall": 2}},
         ]}
        for k in range(3)
    ]  # fmt: skip
    data = write_jsonl(tmp_path / "items.jsonl", items)
    [log] = inspect_eval(
        judgments(dataset=str(data), candidate="candidates", scorers="rouge_l"),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and len(log.samples) == 6  # 3 articles x 2 distinct texts
    shared = [s for s in log.samples if len(s.metadata["members"]) == 2]
    assert len(shared) == 3 and all(s.metadata["ratings"] == {"overall": 3.0} for s in shared)
    table = compare_logs([tmp_path / "logs"], progress=False).table
    rouge = table[table["metric"] == "rouge_l"].set_index("model")
    rating = table[table["metric"] == "rating_overall"].set_index("model")
    assert sorted(rouge.index) == ["system:A", "system:B", "system:C"]
    assert set(rouge["scored"]) == {3}  # every system over its three articles
    assert rouge.loc["system:B", "mean"] == rouge.loc["system:C", "mean"]
    assert (rating.loc["system:B", "mean"], rating.loc["system:C", "mean"]) == (4.0, 2.0)
