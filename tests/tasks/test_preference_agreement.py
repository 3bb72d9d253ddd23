"""Pairwise human preferences (LFQA-E): the share of pairs a metric orders as the annotator did,
by hand on sample scores (ties, an unscored side, a lower-is-better metric, malformed pairs),
and end to end through the judgments task on a file written as LFQA-E publishes it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from inspect_ai.scorer import SampleScore, Score

from gem_tasks.scoring.metrics import preference_agreement
from scorers.validation.statistics import preference_agreement as agreement_of


def _score(question: str, preferred: float, value: float, scorer: str = "rouge_l") -> SampleScore:
    return SampleScore(
        score=Score(value=value),
        sample_id=f"{question}/{preferred}",
        sample_metadata={"paper_id": question, "ratings": {"preferred": preferred}},
        scorer=scorer,
    )


def test_agreement_by_hand():
    assert agreement_of([(2.0, 1.0), (1.0, 1.0), (0.0, 3.0)]) == pytest.approx(0.5)
    assert math.isnan(agreement_of([]))
    scores = [
        _score("q1", 1, 0.9), _score("q1", 0, 0.1),  # right: 1
        _score("q2", 1, 0.4), _score("q2", 0, 0.4),  # tie: 1/2
        _score("q3", 1, 0.2), _score("q3", 0, 0.8),  # wrong: 0
        _score("q4", 1, 0.7), _score("q4", 0, 0.3),  # right: 1
        _score("q5", 1, 0.5),  # its other answer was unscored: no pair
    ]  # fmt: skip
    found = preference_agreement()(scores)
    assert found["preference_agreement"] == pytest.approx(2.5 / 4)
    assert found["preference_pairs"] == 4
    assert (
        found["preference_agreement_ci95_lower"]
        <= 2.5 / 4
        <= found["preference_agreement_ci95_upper"]
    )
    assert list(found)[0] == "preference_agreement"  # the headline first


def test_a_pair_the_annotator_called_a_tie_is_counted_apart():
    scores = [
        _score("q1", 1, 0.9), _score("q1", 0, 0.1),  # right: 1
        _score("q2", 0.5, 0.4), _score("q2", 0.5, 0.9),  # the annotator's tie: no order
        _score("q3", 1, 0.2), _score("q3", 0, 0.8),  # wrong: 0
    ]  # fmt: skip
    found = preference_agreement()(scores)
    assert found["preference_agreement"] == pytest.approx(0.5)
    assert (found["preference_pairs"], found["preference_ties"]) == (2, 1)


def test_a_lower_is_better_metric_agrees_when_the_preferred_answer_scores_lower():
    # the focus KL: lower is better, so the preferred answer's lower KL is agreement
    scores = [_score("q1", 1, 0.1, "br_weakness_kl"), _score("q1", 0, 0.9, "br_weakness_kl")]
    assert preference_agreement()(scores)["preference_agreement"] == 1.0


def test_malformed_pairs_are_refused():
    with pytest.raises(ValueError, match="two candidates rated 1 and 0"):
        preference_agreement()([_score("q1", 1, 0.2), _score("q1", 1, 0.3)])
    with pytest.raises(ValueError, match="no 'preferred' rating"):
        preference_agreement()(
            [SampleScore(score=Score(value=1.0), sample_id="x", sample_metadata={"ratings": {}})]
        )


@pytest.mark.slow
def test_lfqa_e_as_published_runs_end_to_end(tmp_path: Path):
    """Both compared answers of every pair are candidates, scored against the one reference
    answer (none held out); the run's headline is the preference agreement."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.judgments import judgments

    rows = [
        {"id": f"q{i}", "question": f"Why does thing {i} happen?",
         "Concise_Reference": f"Thing {i} happens because of cause {i}.",
         "student_answer_a": f"Thing {i} happens because of cause {i}, mostly.",
         "model_answer_b": "No idea.",
         "student_answer_a_vs_model_answer_b": "student_answer_a" if i < 3 else "model_answer_b"}
        for i in range(4)
    ]  # fmt: skip
    path = tmp_path / "lfqa_e.json"
    path.write_text(json.dumps(rows))
    [log] = inspect_eval(
        judgments(dataset=str(path), candidate="candidates", scorers="rouge_l"),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 8
    assert all(not math.isnan(s.scores["rouge_l"].value) for s in log.samples)  # every one scored
    [score] = log.results.scores
    first, value = next(iter(score.metrics.items()))
    # ROUGE-L prefers the answer that repeats the reference: right on q0-q2, wrong on q3
    assert (first, value.value) == ("preference_agreement", pytest.approx(0.75))
    assert score.metrics["preference_pairs"].value == 4
