"""The report's Scoring Rules Tables 4-5 layout (gem_tasks/analysis/report.py), fed the paper's
own SMD ± 95% CI rows (Tabs. 11-12) so that it must recover the paper's letter strings."""

from __future__ import annotations

import pandas as pd

from gem_tasks.analysis.report import failure_codes_markdown, failure_counts, gaming_table_markdown
from scorers.validation.perturbations import PERTURBATIONS

# (scorer, dataset, perturbation, d, half-width) from the Scoring Rules paper, Tabs. 11-12
ROWS = [
    ("gem", "ICLR26", "deletion_completion", -0.24, 0.07),
    ("gem", "ICLR26", "opinion_flip", -0.44, 0.09),
    ("gem", "ICLR26", "random_replacement", -1.82, 0.18),
    ("gem", "ICLR26", "sentence_deletion", -0.70, 0.07),
    ("gem", "ICLR26", "surface_report", -0.02, 0.14),
    ("gem", "ICLR26", "ultra_concise", -1.43, 0.13),
    ("gem", "ICLR26", "meaningless_elongation", 0.00, 0.02),
    ("gem", "ICLR26", "negative_shift", 0.29, 0.08),
    ("gem", "ICLR26", "hedged_shift", 0.13, 0.06),
    ("gem", "ICLR26", "positive_shift", 0.13, 0.07),
    ("gem", "ICLR26", "strong_shift", 0.14, 0.05),
    ("gem", "ICLR26", "rephrase", 0.07, 0.05),
    ("tvd_mi", "MedAESQA", "deletion_completion", 0.19, 0.14),
    ("tvd_mi", "MedAESQA", "random_replacement", -3.00, 0.21),
    ("tvd_mi", "MedAESQA", "sentence_deletion", -0.03, 0.15),
    ("tvd_mi", "MedAESQA", "surface_report", -0.02, 0.19),
    ("tvd_mi", "MedAESQA", "ultra_concise", 0.34, 0.17),
    ("tvd_mi", "MedAESQA", "meaningless_elongation", 0.05, 0.12),
]


def _frame():
    rows = []
    for scorer, dataset, name, d, half in ROWS:
        kind = PERTURBATIONS[name].kind
        # the paper's rule: a degradation passes when its interval lies below 0, a manipulation
        # fails when its interval lies above 0
        passed = (d + half < 0) if kind == "degradation" else not (d - half > 0)
        rows.append(
            {"scorer": scorer, "dataset": dataset, "perturbation": name, "kind": kind,
             "code": PERTURBATIONS[name].code, "verdict": float(passed), "n": 200,
             "excluded": 0}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_papers_letter_strings_are_recovered():
    table = failure_codes_markdown(_frame())
    lines = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()}
    gem = [c.strip() for c in lines["gem"].strip("|").split("|")]
    tvd = [c.strip() for c in lines["tvd_mi"].strip("|").split("|")]
    # columns: scorer, ICLR26 deg, ICLR26 man, MedAESQA deg, MedAESQA man, totals
    assert gem[1:5] == ["P", "NHPSR", "–", "–"] and gem[5:] == ["1/6", "5/6"]
    assert tvd[1:5] == ["–", "–", "DSPU", "✓"] and tvd[5:] == ["4/5", "0/1"]


def test_excluded_items_are_listed():
    frame = _frame()
    frame.loc[0, "excluded"] = 3
    table = failure_codes_markdown(frame)
    assert "- gem / deletion_completion: 3 excluded, 200 scored" in table
    assert "excluded" not in failure_codes_markdown(_frame())


def test_a_strategy_with_no_scored_pair_is_not_tested_not_passed():
    """A metric that scored nothing (verdict NaN: every pair unscored) neither passes nor fails:
    n/a in the letters, left out of the totals and counts."""
    frame = _frame()
    tvd = frame["scorer"] == "tvd_mi"
    frame.loc[tvd & (frame["perturbation"] == "random_replacement"), "verdict"] = float("nan")
    judge = frame[frame["scorer"] == "gem"].head(3).assign(scorer="judge", verdict=float("nan"))
    table = failure_codes_markdown(pd.concat([frame, judge], ignore_index=True))
    lines = {line.split(" | ")[0].strip("| "): line for line in table.splitlines()}
    cells = [c.strip() for c in lines["judge"].strip("|").split("|")]
    assert cells[1:3] == ["n/a", "–"] and cells[5:] == ["0/0", "0/0"]
    tvd_cells = [c.strip() for c in lines["tvd_mi"].strip("|").split("|")]
    # random replacement (passed in the paper) is now untested: named, not counted
    assert tvd_cells[3] == "DSPU (n/a: R)" and tvd_cells[5:] == ["4/4", "0/1"]
    counts = failure_counts(pd.concat([frame, judge], ignore_index=True)).set_index("scorer")
    assert counts.loc["judge", "tested"] == 0 and counts.loc["judge", "failed"] == 0
    assert counts.loc["tvd_mi", "tested"] == 5 and counts.loc["tvd_mi", "degradations"] == 4


def test_a_cell_one_paper_decides_is_marked_and_counted():
    """A gaming cell whose largest pair carries most of the spread keeps the t-test's verdict but
    is marked ‡ with the signed-rank p-value, and counted; cells below the threshold and logs
    written before the share existed (NaN) are not marked."""
    rows = [
        {"scorer": "nwj", "perturbation": "shotgun", "share": 0.99, "rank_p": 1.2e-23},
        {"scorer": "nwj", "perturbation": "injection", "share": 0.2, "rank_p": 0.4},
        {"scorer": "gem", "perturbation": "shotgun", "share": float("nan"), "rank_p": 0.3},
    ]
    frame = pd.DataFrame(
        [
            {"scorer": r["scorer"], "dataset": "d", "perturbation": r["perturbation"],
             "kind": "gaming", "expected": "no_increase", "alpha": 0.05, "code": "",
             "verdict": 1.0, "n": 100, "excluded": 0, "smd": 0.14, "p": 0.16,
             "smd_paired_ci95_lower": -0.14, "smd_paired_ci95_upper": 0.42,
             "largest_share": r["share"], "signed_rank_p": r["rank_p"]}
            for r in rows
        ]
    )  # fmt: skip
    table = gaming_table_markdown(frame)
    nwj = next(line for line in table.splitlines() if line.startswith("| nwj |"))
    assert (
        "0.14 [-0.14, 0.42], p = 0.16 ‡ (one paper: 99% of the spread; signed-rank p = 1.2e-23)"
        in nwj
    )
    assert nwj.count("‡") == 2 and nwj.endswith("| 0 of 2 (1 ‡) |")  # the cell and the count
    gem = next(line for line in table.splitlines() if line.startswith("| gem |"))
    assert "‡" not in gem and gem.endswith("| 0 of 1 |")
    assert "‡: one paper carries at least 50%" in table
    assert "‡" not in gaming_table_markdown(frame[frame["scorer"] == "gem"])  # no mark, no note
    counts = failure_counts(frame).set_index("scorer")
    assert (
        counts.loc["nwj", "one_paper_decides"] == 1 and counts.loc["gem", "one_paper_decides"] == 0
    )
    assert counts.loc["nwj", "gaming_failed"] == 0  # the papers' verdict is kept
