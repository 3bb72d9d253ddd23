"""The ICLR 2026 edition's evidence script: its naive-rule table against hand-computed numbers,
and a whole run on four papers (rule rows, a scripted model's row, the human row's GEM-raw under
the embedded LM), resumed by a second invocation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import accepting_reviewer, load_benchmark, scripted_model

# mean ratings 22/3 (accepted), 10/3 (rejected), 16/3 (rejected), 16/3 (accepted)
RATINGS = [(6, 8, 8), (2, 4, 4), (4, 6, 6), (6, 6, 4)]
ACCEPTED = [True, False, False, True]


def iclr2026_records(folder: Path) -> Path:
    rows = [
        {
            "id": f"p{i}",
            "venue": "ICLR 2026",
            "title": f"Paper {i}",
            "abstract": f"We study problem {i} and propose a method for it.",
            "decision": "ICLR 2026 Poster" if accepted else "Reject",
            "accept": int(accepted),
            "reviews": [
                {
                    "id": f"p{i}r{j}",
                    "text": f"Review {j} of paper {i}: the method is sound.",
                    "rating": rating,
                }
                for j, rating in enumerate(ratings)
            ],
        }  # fmt: skip
        for i, (ratings, accepted) in enumerate(zip(RATINGS, ACCEPTED, strict=True))
    ]
    path = folder / "iclr2026_records.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def iclr2023_decisions(folder: Path) -> Path:
    path = folder / "iclr2023_decisions.csv"
    # means 7, 3, 6 (a reject at the threshold), none (left out)
    path.write_text(
        "id,decision,accept,ratings\na,Accept (Poster),1,6;8\nb,Reject,0,3;3\n"
        "c,Reject,0,5;6;7\nd,Reject,0,\n"
    )
    return path


def test_naive_rules_match_hand_computed_accuracies(tmp_path):
    run = load_benchmark("experiments.grebench_2026.run")
    initial = run.mean_ratings_of_records(iclr2026_records(tmp_path))
    # on ICLR's scale: 0, 2, 4 read as 1, 3, 5 (pytest.approx compares flat sequences only)
    assert [rating for rating, _ in initial] == pytest.approx([22 / 3, 13 / 3, 17 / 3, 17 / 3])
    assert [accepted for _, accepted in initial] == [True, False, False, True]
    final = run.mean_ratings_of_decisions(iclr2023_decisions(tmp_path))
    assert final == [(7.0, True), (3.0, False), (6.0, False)]
    assert run.rule_accuracy(initial, None) == 0.5
    assert run.rule_accuracy(initial, 4.0) == 0.5  # both rejects accepted
    # >= 4.5 to 5.5: p3 wrongly accepted; >= 6: p4 wrongly rejected
    assert [run.rule_accuracy(initial, t) for t in (4.5, 5.0, 5.5, 6.0)] == [0.75] * 4
    assert run.rule_accuracy(final, 6.0) == pytest.approx(2 / 3)
    assert run.rule_accuracy(final, 6.5) == 1.0
    # accepted {22/3, 17/3} against rejected {13/3, 17/3}: 3 pairs won, one tie
    assert run.rating_auc(initial) == 0.875
    assert run.rating_auc(final) == 1.0
    assert run.best_threshold(initial) == 4.5 and run.best_threshold(final) == 4.0
    # leave-one-out (fewer papers than folds): p1 is decided by the others' best, 4.5 (right),
    # p2 by 4.0 (wrong), p3 by 4.5 (wrong), p4 by 6 (wrong); ICLR 2023: a and b right, c wrong
    assert run.cross_validated_accuracy(initial) == 0.25
    assert run.cross_validated_accuracy(final) == pytest.approx(2 / 3)
    table = run.naive_rules_table(initial, final, data=Path("a.jsonl"), decisions=Path("b.csv"))
    assert "| always reject | 0.500 | 0.667 |" in table
    assert "| accept when mean rating ≥ 6 (the accept side's first value: fixed in advance) | " \
        "0.750 | 0.667 |" in table  # fmt: skip
    assert "| AUC of the mean rating (no threshold) | 0.875 | 1.000 |" in table
    # a threshold chosen on one edition decides the other: ICLR 2023's 4 on ICLR 2026's papers
    assert "| the other edition's best threshold | ≥ 4 (0.500) | ≥ 4.5 (0.667) |" in table
    assert "(10-fold cross-validated) | 0.250 | 0.667 |" in table
    assert "the same papers) | ≥ 4.5 (0.750) | ≥ 4 (0.667) |" in table
    with pytest.raises(ValueError, match="two papers or more"):
        run.cross_validated_accuracy(initial[:1])
    with pytest.raises(ValueError, match="accepted and rejected"):
        run.rating_auc([(5.0, True)])
    with pytest.raises(ValueError, match="no paper"):
        run.rule_accuracy([], 5.0)
    unrated = tmp_path / "unrated.csv"
    unrated.write_text("id,decision,accept\na,Reject,0\n")
    with pytest.raises(SystemExit, match="no ratings column"):
        run.mean_ratings_of_decisions(unrated)


@pytest.mark.slow
def test_grebench_2026_experiment_writes_every_row_and_resumes(tmp_path, monkeypatch):
    run = load_benchmark("experiments.grebench_2026.run")
    scripted_model("grebench_scripted", accepting_reviewer)

    # the model's row without GEM-raw, the human row's MI metrics as GEM-raw alone: the
    # embedded LM scores two papers' human reviews
    monkeypatch.setattr(run, "MODEL_SCORERS", run.DECISION_SCORERS)
    monkeypatch.setattr(run, "MI_SCORERS", "gem_raw")
    records, decisions = iclr2026_records(tmp_path), iclr2023_decisions(tmp_path)
    out = tmp_path / "results"
    argv = ["--data", str(records), "--iclr2023-decisions", str(decisions), "--out", str(out)]
    argv += ["--mi-papers", "2", "--model-papers", "3", "--model", "grebench_scripted/a"]
    run.main(argv)
    board = (out / "leaderboard" / "leaderboard.md").read_text()
    # always reject: right on the two rejects of four
    assert "| baseline:always_reject | 4 | 0 | 0 | 0.500 |" in board
    # the scripted model accepts every paper: of the first three, right on p0 alone
    assert "| grebench_scripted/a | 3 | 0 | 0 | 0.333 |" in board
    assert "## GEM-raw" in board and "## ROUGE-L" in board
    timings = json.loads((out / "timings.json").read_text())
    assert set(timings) == {
        "human",
        *run.RULES,
        "human: gem, gem_s, gem_raw",
        "grebench_scripted/a",
    }
    verdicts = (out / "verdicts.md").read_text()
    assert "| grebench_scripted/a | 3 | 0 | – |" in verdicts
    assert "| baseline:committee | 4 | 0 | – |" in verdicts
    assert "| always reject | 0.500 | 0.667 |" in (out / "naive_rules.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"naive_rules.md", "timings.json", "verdicts.md", "invocations.json"} <= set(
        manifest["files"]
    )
    model_logs = sorted(p.name for p in (out / "logs" / "model").glob("*.eval"))
    run.main(argv)  # resumed: both model-scored rows read from their finished logs
    assert sorted(p.name for p in (out / "logs" / "model").glob("*.eval")) == model_logs
    journal = json.loads((out / "invocations.json").read_text())
    assert [sorted(i["rows"]) for i in journal["invocations"]] == [
        ["grebench_scripted/a", "human: gem, gem_s, gem_raw"],
        [],
    ]
    with pytest.raises(SystemExit, match="--fresh"):
        run.main([*argv, "--max-tokens", "64"])
    with pytest.raises(SystemExit, match="not found"):
        run.main(["--data", str(tmp_path / "absent.jsonl"), "--out", str(out)])
