"""Every metric's correlation with rating MAE across models (gem_tasks.analysis.leaderboard.
correlate): the Beyond Rating paper's Table 3 rows, fed through the leaderboard itself, must give
the paper's r(weakness Max-Recall, MAE) = −0.781 up to the rounding of its inputs (−0.777 over the
9 general LLMs; −0.26 over all 15 rows); then the corpus-metric hook, the human exclusion and the
CLI end to end on small Inspect logs written here (no model runs)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    write_eval_log,
)
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score
from scipy import stats

from gem_tasks.analysis.leaderboard import HUMAN_LABEL, compare_logs
from gem_tasks.analysis.leaderboard.correlate import (
    correlate,
    correlation_file_stem,
    correlation_markdown,
    metric_correlations,
)
from gem_tasks.cli import main as cli_main
from scorers.metrics.beyond.focus import corpus_kl
from scorers.metrics.beyond.structure import CATEGORIES
from scorers.registry import metric_spec

# -- the paper's Table 3, fed to the leaderboard -----------------------------------------------

# Summary | Strength R P F1 KL | Weakness R P F1 KL | Question QS KL | AI rate, BS | MAE
COLUMNS = [
    "br_summary_coverage",
    "br_strength_recall",
    "br_strength_precision",
    "br_strength_f1",
    "br_strength_kl",
    "br_weakness_recall",
    "br_weakness_precision",
    "br_weakness_f1",
    "br_weakness_kl",
    "br_question_score",
    "br_question_kl",
    "ai_rate",
    "br_binoculars",
    "br_rating_mae",
]
TABLE_3 = """
GPT-5.2                 4.46 | .38 .30 .32 .03 | .42 .19 .25 .09 | .46 .13 | 0    1.06 | 1.14
Claude-4.5-Sonnet       4.40 | .48 .39 .41 .05 | .46 .23 .29 .05 | .43 .13 | .01  0.97 | 1.14
Gemini-3-pro-preview    4.40 | .42 .44 .40 .13 | .28 .29 .26 .18 | .32 .11 | 0    0.98 | 1.52
Qwen3-8B                4.32 | .46 .44 .43 .05 | .25 .28 .24 .15 | .51 .06 | .98  0.82 | 1.03
Qwen3-30B-A3B-Instruct  4.52 | .53 .35 .40 .03 | .29 .26 .26 .30 | .41 .16 | .28  0.92 | 1.41
Qwen3-235B-A22B-Instr.  4.47 | .53 .36 .41 .06 | .32 .27 .28 .22 | .45 .17 | 0    0.98 | 0.98
Llama-3.1-8B-Instruct   4.33 | .39 .44 .39 .03 | .16 .22 .17 .30 | .52 .21 | .92  0.80 | 2.51
Llama-3.1-70B-Instruct  4.30 | .39 .45 .39 .09 | .16 .26 .18 .38 | .54 .40 | .92  0.80 | 2.32
DeepSeek-V3.2           4.44 | .51 .43 .45 .01 | .36 .31 .31 .13 | .43 .10 | .03  0.98 | 0.98
AI-Scientist-GPT-5(1sh) 4.44 | .42 .38 .38 .11 | .38 .24 .28 .09 | .46 .15 | 0    1.09 | 2.68
AgentReview-GPT-5       4.61 | .45 .43 .42 .13 | .40 .19 .23 .12 |  /   /  | 0    1.01 | 1.28
DeepReviewer-14B        4.66 | .61 .39 .46 .02 | .31 .23 .25 .07 | .42 .13 | 1.0  0.75 | 0.85
CycleReviewer-70B       4.19 | .30 .46 .34 .08 | .20 .30 .22 .09 | .49 .11 | .98  0.75 | 1.29
OpenReviewer-8B         4.24 | .37 .47 .39 .03 | .19 .30 .21 .16 | .51 .24 | .86  0.83 | 0.86
SEA-E                   4.38 | .47 .38 .40 .01 | .26 .23 .23 .05 | .44 .02 | .53  0.90 | 1.10
"""
HUMAN_ROW = {
    "br_summary_coverage": 4.21,
    "br_question_score": 0.45,
    "ai_rate": 0.03,
    "br_binoculars": 1.01,
}


def table_3() -> dict[str, dict[str, float | None]]:
    """Model -> metric -> value; "/" is None."""
    rows = {}
    for line in TABLE_3.strip().splitlines():
        name, rest = line[:24].strip(), line[24:]
        cells = rest.replace("|", " ").split()
        assert len(cells) == len(COLUMNS), name
        rows[name] = {c: (None if v == "/" else float(v)) for c, v in zip(COLUMNS, cells)}
    return rows


GENERAL_LLMS = list(table_3())[:9]
# per-paper values around the model's mean: they average out, in an order of each model's own
# (so that two models' paired differences vary from paper to paper)
OFFSETS = [0.01, -0.01, 0.02, -0.02, 0.03, -0.03]


def scores_frame(
    models: dict[str, dict[str, float | None]], human: dict[str, float] | None, papers: int = 12
) -> pd.DataFrame:
    """A ``read_scores`` frame: each model scored on ``papers`` papers per metric, the per-paper
    values averaging to the table's value; "/" means every paper unscored (questions KL: the
    scorer absent altogether). Llama-3.1-8B gets fewer papers (it must be marked, not dropped)."""
    rows = []
    entries = [(m, False, v) for m, v in models.items()]
    if human is not None:
        entries.append(("none/none", True, human))
    order = np.random.default_rng(0)
    for model, is_human, values in entries:
        n = 6 if model == "Llama-3.1-8B-Instruct" else papers
        offsets = list(order.permutation(OFFSETS * (n // len(OFFSETS))))
        for metric, value in values.items():
            if value is None and metric == "br_question_kl":
                continue  # no such scorer in the log
            for i in range(n):
                per_paper = math.nan if value is None else value + float(offsets[i])
                rows.append(
                    {
                        "log": f"logs/{model}.eval",
                        "created": "2026-01-01T00:00:00+00:00",
                        "model": model,
                        "entry": HUMAN_LABEL if is_human else model,
                        "is_human": is_human,
                        "setup": "{}",
                        "run_config": "{}",
                        "paper": f"p{i}",
                        "epoch": 1,
                        "scorer": metric,
                        "metric": metric,
                        "signature": f'{{"metric": "{metric}"}}',
                        "value": per_paper,
                        "status": "unscored" if value is None else "scored",
                        "other_signature": False,
                    }
                )
    return pd.DataFrame(rows)


def paper_r(models: list[str], metric: str) -> float:
    rows = table_3()
    pairs = [(rows[m][metric], rows[m]["br_rating_mae"]) for m in models]
    x, y = zip(*[p for p in pairs if p[0] is not None])
    return float(stats.pearsonr(x, y).statistic)


@pytest.fixture(scope="module")
def board_9():
    rows = table_3()
    return compare_logs(scores_frame({m: rows[m] for m in GENERAL_LLMS}, HUMAN_ROW), progress=False)


@pytest.fixture(scope="module")
def board_15():
    return compare_logs(scores_frame(table_3(), HUMAN_ROW), progress=False)


def by_metric(result) -> pd.DataFrame:
    return result.table.set_index("metric")


def test_table_3_general_llms_reproduce_the_papers_weakness_recall_r(board_9):
    result = correlate(board_9, "br_rating_mae", corpus_key=None)
    table = by_metric(result)
    assert "br_rating_mae" not in table.index
    row = table.loc["br_weakness_recall"]
    assert row["models"] == 9
    assert round(row["pearson_r"], 3) == -0.777  # the paper's −0.781, from rounded inputs
    weakness_recall = [0.42, 0.46, 0.28, 0.25, 0.29, 0.32, 0.16, 0.16, 0.36]
    mae = [1.14, 1.14, 1.52, 1.03, 1.41, 0.98, 2.51, 2.32, 0.98]
    assert row["p"] == pytest.approx(stats.pearsonr(weakness_recall, mae).pvalue, rel=1e-6)
    z, half = math.atanh(row["pearson_r"]), 1.959964 / math.sqrt(6)
    assert row["ci95_lower"] == pytest.approx(math.tanh(z - half), abs=1e-6)
    assert row["ci95_upper"] == pytest.approx(math.tanh(z + half), abs=1e-6)
    # the spec's other values over the 9 LLMs (§ M7), to 2 decimals
    expected = {
        "br_binoculars": -0.68,
        "br_weakness_kl": 0.75,
        "br_question_kl": 0.75,
        "br_strength_recall": -0.63,
        "br_summary_coverage": -0.58,
        "br_question_score": 0.43,  # 0.425
    }
    for metric, r in expected.items():
        assert table.loc[metric, "pearson_r"] == pytest.approx(r, abs=0.006), metric
    for metric in COLUMNS[:-1]:  # and every column against scipy on the table itself
        assert table.loc[metric, "pearson_r"] == pytest.approx(
            paper_r(GENERAL_LLMS, metric), abs=1e-9
        )
        assert table.loc[metric, "value_source"] == "mean"
    # the human row (no MAE: "/") is excluded and the footer says so
    assert HUMAN_LABEL not in table.loc["br_summary_coverage", "model_names"]
    assert result.excluded_human == [HUMAN_LABEL]
    text = correlation_markdown(result)
    assert f"The human baseline ({HUMAN_LABEL}) is excluded" in text
    assert "| 9 | -0.777 | 0.0138 | [-0.951, -0.233] |" in text
    # thin models are counted and named
    assert table.loc["br_weakness_recall", "below_min_scored"] == "Llama-3.1-8B-Instruct"
    assert "(n=6)†" in text and "papers are counted all the same (Llama-3.1-8B-Instruct;" in text


@pytest.mark.slow
def test_table_3_all_rows_and_missing_question_columns(board_15):
    table = by_metric(correlate(board_15, corpus_key=None))  # default against: br_rating_mae
    assert round(table.loc["br_weakness_recall", "pearson_r"], 2) == -0.26
    assert table.loc["br_weakness_recall", "models"] == 15
    # AgentReview's "/": its question score was unscored, its question KL never computed
    for metric in ("br_question_score", "br_question_kl"):
        assert table.loc[metric, "models"] == 14
        assert "AgentReview-GPT-5" not in table.loc[metric, "model_names"]
    for metric in COLUMNS[:-1]:
        assert table.loc[metric, "pearson_r"] == pytest.approx(
            paper_r(list(table_3()), metric), abs=1e-9
        )


def test_a_human_mae_would_still_be_left_out(board_9):
    rows = table_3()
    human = {**HUMAN_ROW, "br_rating_mae": 0.0, "br_weakness_recall": 0.9}
    board = compare_logs(scores_frame({m: rows[m] for m in GENERAL_LLMS}, human), progress=False)
    with_human = by_metric(correlate(board, corpus_key=None))
    without = by_metric(correlate(board_9, corpus_key=None))
    assert with_human.loc["br_weakness_recall", "models"] == 9
    assert with_human.loc["br_weakness_recall", "pearson_r"] == pytest.approx(
        without.loc["br_weakness_recall", "pearson_r"], abs=1e-12
    )


def test_what_cannot_be_computed_is_said_not_hidden():
    def row(model, metric, mean, scored=20, human=False):
        return {
            "metric": metric,
            "group": "1",
            "model": model,
            "is_human": human,
            "scored": scored,
            "mean": mean,
        }

    table = pd.DataFrame(
        [row(m, "mae", v) for m, v in zip("abcd", [1.0, 2.0, 3.0, 4.0])]
        + [row(m, "flat", 0.5) for m in "abcd"]
        + [row(m, "two", v) for m, v in zip("ab", [1.0, 2.0])]
        + [row(m, "three", v) for m, v in zip("abc", [1.0, 3.0, 2.0])]
    )
    result = metric_correlations(table, "mae", min_scored=5)
    t = by_metric(result)
    assert math.isnan(t.loc["flat", "pearson_r"]) and "x is constant" in t.loc["flat", "note"]
    assert t.loc["two", "models"] == 2 and "at least 3 pairs" in t.loc["two", "note"]
    assert t.loc["three", "pearson_r"] == pytest.approx(0.5)
    assert math.isnan(t.loc["three", "ci95_lower"]) and "at least 4" in t.loc["three", "note"]
    assert "The human baseline, when present, is excluded" in correlation_markdown(result)
    with pytest.raises(ValueError, match="no metric 'br_rating_mae'.*mae, flat"):
        metric_correlations(table)
    assert correlation_file_stem("inspect/rating mae") == "correlation_with_inspect_rating_mae"


# -- end to end: Inspect logs, the corpus-metric hook and the CLI --------------------------------

PAPERS = [f"p{i}" for i in range(12)]
RNG = np.random.default_rng(3)
# the weakness KL's headline: the KL of the category counts pooled over the papers (registry)
KL_KEY = metric_spec("br_weakness_kl").headline_name
MODELS = {  # model -> (MAE level, weakness recall level, another corpus number its log reports)
    "openai/model-a": (1.0, 0.45, 0.05),
    "openai/model-b": (1.4, 0.30, 0.20),
    "openai/model-c": (2.4, 0.15, 0.35),
    "openai/model-d": (1.2, 0.40, 0.10),
    "openai/model-e": (1.8, 0.25, 0.30),
}


def write_log(
    path: Path,
    model: str,
    values: dict[str, dict[str, float]],
    corpus: dict[str, dict[str, float]],
    *,
    human: bool = False,
    details: dict[tuple[str, str], dict] | None = None,
) -> Path:
    """A finished gem_tasks/iclr log: per paper, one score per scorer; ``corpus``: scorer ->
    its corpus-level Inspect metrics in the results (name -> value); ``details``: (paper,
    scorer) -> the score's result metadata."""
    details = details or {}
    samples = []
    for paper, scores in values.items():
        samples.append(
            EvalSample(
                id=paper,
                epoch=1,
                input="review this paper",
                target="",
                scores={
                    name: Score(
                        value=v,
                        metadata={"signature": {"metric": name}, **details.get((paper, name), {})},
                    )
                    for name, v in scores.items()
                },
            )
        )
    names = list(dict.fromkeys(n for s in values.values() for n in s))
    log = EvalLog(
        eval=EvalSpec(
            created="2026-01-01T00:00:00+00:00",
            task="gem_tasks/iclr",
            dataset=EvalDataset(name="demo_iclr"),
            model="none/none" if human else model,
            model_generate_config=GenerateConfig(),
            config=EvalConfig(),
            task_args={"candidate": "human" if human else "model", "seed": 0, "references": 2},
        ),
        status="success",
        samples=samples,
        results=EvalResults(
            scores=[
                EvalScore(
                    name=n,
                    scorer=n,
                    metrics={
                        "mean": EvalMetric(name="mean", value=0.0),
                        **{
                            key: EvalMetric(name=key, value=value)
                            for key, value in corpus.get(n, {}).items()
                        },
                    },
                )
                for n in names
            ]
        ),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(path))
    return path


def focus_counts(skew: float) -> dict:
    """One paper's weakness categories: the experts' counts, and a model's drawn further from
    them the larger ``skew`` is."""
    human = {c: int(RNG.integers(0, 4)) for c in CATEGORIES}
    weights = np.array([1.0 + skew * i for i in range(len(CATEGORIES))])
    drawn = RNG.choice(CATEGORIES, size=6, p=weights / weights.sum())
    model = {c: int((drawn == c).sum()) for c in CATEGORIES}
    return {"category_counts": {"human": human, "model": model}, "alpha": 0.5}


def per_paper(mae: float, recall: float, skew: float) -> tuple[dict, dict]:
    """Per paper each scorer's value, and the weakness KL's result metadata (its counts: the
    per-paper value is the KL of one paper's counts, a diagnostic; the headline pools them)."""
    values, details = {}, {}
    for p in PAPERS:
        counts = focus_counts(skew)
        details[(p, "br_weakness_kl")] = counts
        values[p] = {
            "br_rating_mae": mae + float(RNG.normal(0, 0.3)),
            "br_weakness_recall": recall + float(RNG.normal(0, 0.05)),
            "br_weakness_kl": corpus_kl([counts]),
        }
    return values, details


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("correlate_logs")
    values, kls = {}, {}
    for k, (model, (mae, recall, other)) in enumerate(MODELS.items()):
        values[model], details = per_paper(mae, recall, skew=0.3 * k)
        kls[model] = corpus_kl(list(details.values()))  # the headline over all its papers
        name = model.split("/")[1]
        # the headline as Inspect reports it, and another number only a named --corpus-key picks
        corpus = {"br_weakness_kl": {KL_KEY: kls[model], "pooled": -other}}
        if model == "openai/model-e":  # two logs: the log's own numbers cannot be pooled
            items = list(values[model].items())
            for part, chosen in (("1", items[:6]), ("2", items[6:])):
                write_log(root / f"{name}-{part}.eval", model, dict(chosen), {
                    "br_weakness_kl": {"pooled": -other}}, details=details)  # fmt: skip
        else:
            write_log(root / f"{name}.eval", model, values[model], corpus, details=details)
    human = {p: {"br_weakness_recall": 0.5, "br_weakness_kl": 0.0} for p in PAPERS}
    same = {(p, "br_weakness_kl"): focus_counts(0.0) for p in PAPERS}
    for paper in PAPERS:  # the human's own categories: the model side equals the experts'
        counts = same[(paper, "br_weakness_kl")]["category_counts"]
        counts["model"] = dict(counts["human"])
    write_log(root / "human.eval", "none", human, {}, human=True, details=same)
    return root, {"values": values, "kls": kls}


def expected(values: dict, metric: str, models: list[str]) -> float:
    x = [np.mean([s[metric] for s in values[m].values()]) for m in models]
    y = [np.mean([s["br_rating_mae"] for s in values[m].values()]) for m in models]
    return float(stats.pearsonr(x, y).statistic)


@pytest.mark.slow
def test_leaderboard_cli_writes_the_correlation_files(logs, tmp_path, capsys):
    root, found = logs
    values, kls = found["values"], found["kls"]
    out = tmp_path / "board"
    code = cli_main(
        [
            "leaderboard",
            str(root),
            "--out",
            str(out),
            "--correlate-with",
            "br_rating_mae",
            "--quiet",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "# Correlation with" in printed
    csv = pd.read_csv(out / "correlation_with_br_rating_mae.csv").set_index("metric")
    assert (out / "correlation_with_br_rating_mae.md").exists()
    assert (out / "leaderboard.md").exists()
    models = list(MODELS)
    recall = csv.loc["br_weakness_recall"]
    assert recall["models"] == 5 and recall["value_source"] == "mean"
    assert recall["pearson_r"] == pytest.approx(expected(values, "br_weakness_recall", models))
    assert HUMAN_LABEL not in recall["model_names"]
    # the KL: its headline, the KL of the counts pooled over each model's papers (recomputed
    # from the samples, so model-e's two logs pool too), not the mean of the per-paper values
    kl = csv.loc["br_weakness_kl"]
    assert kl["value_source"] == KL_KEY and kl["models"] == 5
    mae = [np.mean([s["br_rating_mae"] for s in values[m].values()]) for m in models]
    want = stats.pearsonr([kls[m] for m in models], mae).statistic
    assert kl["pearson_r"] == pytest.approx(want)
    assert kl["pearson_r"] != pytest.approx(expected(values, "br_weakness_kl", models))
    text = (out / "correlation_with_br_rating_mae.md").read_text(encoding="utf-8")
    assert "ᶜ" in text
    # a named --corpus-key picks that Inspect metric of each log instead (here the other number
    # negated: r flips); model-e's two logs' numbers cannot be pooled (a note says so)
    args = ["leaderboard", str(root), "--against", "br_rating_mae", "--quiet", "--out", str(out)]
    assert cli_main([*args, "--corpus-key", "pooled"]) == 0
    csv = pd.read_csv(out / "correlation_with_br_rating_mae.csv").set_index("metric")
    assert csv.loc["br_weakness_kl", "value_source"] == "pooled"
    four = models[:4]
    mae_four = [np.mean([s["br_rating_mae"] for s in values[m].values()]) for m in four]
    other = stats.pearsonr([MODELS[m][2] for m in four], mae_four).statistic
    assert csv.loc["br_weakness_kl", "pearson_r"] == pytest.approx(-other)
    text = (out / "correlation_with_br_rating_mae.md").read_text(encoding="utf-8")
    assert "cannot be pooled" in text
    # --corpus-key '' falls back to the means of the per-paper values (model-e counts again)
    assert cli_main([*args, "--corpus-key", ""]) == 0
    csv = pd.read_csv(out / "correlation_with_br_rating_mae.csv").set_index("metric")
    assert csv.loc["br_weakness_kl", "value_source"] == "mean"
    assert csv.loc["br_weakness_kl", "pearson_r"] == pytest.approx(
        expected(values, "br_weakness_kl", models)
    )


def test_report_cli_against(logs, tmp_path, capsys):
    root, found = logs
    values = found["values"]
    out = tmp_path / "report"
    assert (
        cli_main(["report", str(root), "--out", str(out), "--against", "br_rating_mae", "--quiet"])
        == 0
    )
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "## Correlation with" in report and "### Per-model values" in report
    assert "not a validation task" not in report
    csv = pd.read_csv(out / "correlation_with_br_rating_mae.csv").set_index("metric")
    assert csv.loc["br_weakness_recall", "pearson_r"] == pytest.approx(
        expected(values, "br_weakness_recall", list(MODELS))
    )
    capsys.readouterr()
    assert cli_main(["report", str(root), "--out", str(out), "--against", "nope", "--quiet"]) == 2
    assert "no metric 'nope'" in capsys.readouterr().err
