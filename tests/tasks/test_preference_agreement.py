"""Pairwise human preferences (LFQA-E): the share of pairs a metric orders as the annotator did,
and LFQA-E's published accuracy, by hand on sample scores (ties, an unscored side, a
lower-is-better metric, malformed pairs, answers that recur in several pairs, the bootstrap over
questions), and end to end through the judgments task on a file written as LFQA-E publishes
it."""

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


def _member(record: str, preferred: float) -> dict:
    return {"record": record, "candidate": "c", "ratings": {"preferred": preferred}}


def _answer(question: str, value: float, *members: dict) -> SampleScore:
    return SampleScore(
        score=Score(value=value),
        sample_id=f"{question}/{value}",
        sample_metadata={"entity": question, "members": list(members)},
        scorer="rouge_l",
    )


def test_answers_in_several_pairs_are_scored_once_and_read_in_every_pair():
    """One question, three answers compared in three pairs (LFQA-E's layout): A over B, C over
    A, B and C the same. Each answer is one sample with the pairs it is in; the metric scores
    A 0.9, B 0.5, C 0.5."""
    scores = [
        _answer("q", 0.9, _member("ab", 1), _member("ac", 0)),
        _answer("q", 0.5, _member("ab", 0), _member("bc", 0.5)),
        _answer("q", 0.5, _member("ac", 1), _member("bc", 0.5)),
    ]
    found = preference_agreement()(scores)
    # ordered pairs: ab right (1), ac wrong (0); bc the annotator's tie
    assert found["preference_agreement"] == pytest.approx(0.5)
    assert (found["preference_pairs"], found["preference_ties"]) == (2, 1)
    # LFQA-E's accuracy over all three: ab says a (right), ac says a (wrong: c), bc says same
    # (right: B and C score alike)
    assert found["preference_accuracy"] == pytest.approx(2 / 3)
    assert found["preference_accuracy_pairs"] == 3 and found["preference_questions"] == 1


def test_the_interval_resamples_questions_not_pairs():
    """Two questions of six pairs each, every pair of q1 right and every pair of q2 wrong: over
    questions a resample holds q1 twice, q2 twice or one of each (0, 1/2 or 1); a bootstrap of
    the twelve pairs would give a narrow interval around 1/2."""
    scores = []
    for question, right in (("q1", True), ("q2", False)):
        for k in range(6):
            pair = f"{question}-{k}"
            good, bad = (0.9, 0.1) if right else (0.1, 0.9)
            scores += [
                _answer(question, good, _member(pair, 1)),
                _answer(question, bad, _member(pair, 0)),
            ]
    found = preference_agreement()(scores)
    assert found["preference_agreement"] == 0.5
    assert found["preference_agreement_ci95_lower"] == 0.0
    assert found["preference_agreement_ci95_upper"] == 1.0


def test_the_judgments_task_scores_each_distinct_answer_once(tmp_path: Path):
    """LFQA-E's first release: one record per compared pair; an answer in three pairs is one
    sample, with the three places it appears."""
    from gem_tasks.tasks.judgments import judgments

    answers = {"a": "Answer A is long.", "b": "Answer B.", "c": "C, the third answer."}
    rows = [
        {"id": "q1", "question": "Why?", "Concise_Reference": "Because.",
         x: answers[x[0]], y: answers[y[0]], f"{x}_vs_{y}": x}
        for x, y in (("a_1", "b_1"), ("a_1", "c_1"), ("b_1", "c_1"))
    ]  # fmt: skip
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps(rows))
    task = judgments(dataset=str(path), candidate="candidates", scorers="rouge_l")
    texts = [s.metadata["answer"]["text"] for s in task.dataset]
    assert sorted(texts) == sorted(answers.values())  # 3 samples, not 6
    members = {s.metadata["answer"]["text"]: s.metadata["members"] for s in task.dataset}
    assert [m["record"] for m in members[answers["a"]]] == ["q1:a_1_vs_b_1", "q1:a_1_vs_c_1"]
    assert [m["ratings"]["preferred"] for m in members[answers["a"]]] == [1.0, 1.0]


def test_malformed_pairs_are_refused():
    with pytest.raises(ValueError, match="two answers rated 1 and 0"):
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
    # one pair per question: its two answers are distinct ("No idea." answers four questions:
    # four texts, each scored against its own question's reference)
    assert len(log.samples) == 8
    assert all(not math.isnan(s.scores["rouge_l"].value) for s in log.samples)  # every one scored
    [score] = log.results.scores
    first, value = next(iter(score.metrics.items()))
    # ROUGE-L prefers the answer that repeats the reference: right on q0-q2, wrong on q3
    assert (first, value.value) == ("preference_agreement", pytest.approx(0.75))
    assert score.metrics["preference_pairs"].value == 4


def _lfqa_like(path: Path) -> Path:
    """Two questions, four answers each, every two of them compared (six records a question):
    twelve records, 24 answer places, 8 distinct answers (the layout of LFQA-E's public
    sample)."""
    import itertools

    rows = []
    for q in ("q1", "q2"):
        answers = {f"{n}_answer": f"{q}: answer {n}, with its own words." for n in "wxyz"}
        for a, b in itertools.combinations(sorted(answers), 2):
            rows.append({"id": q, "question": f"Why {q}?", "Concise_Reference": f"Because {q}.",
                         a: answers[a], b: answers[b], f"{a}_vs_{b}": a})  # fmt: skip
    path.write_text(json.dumps(rows))
    return path


def test_robustness_perturbs_each_distinct_answer_once(tmp_path: Path):
    from gem_tasks.tasks.robustness import robustness

    data = _lfqa_like(tmp_path / "pairs.json")
    task = robustness(
        dataset=str(data), perturbation="random_replacement", scorers="rouge_l",
        perturb="candidates",
    )  # fmt: skip
    assert len(task.dataset) == 8  # not 24
    assert all(len(s.metadata["members"]) == 3 for s in task.dataset)  # each in three pairs
    assert "statistical_unit" in task.metadata


def test_paired_statistics_count_each_input_once():
    """Three answers of question a (differences -1, -2, -3) and one of b (-4). Each text counts
    once in the effect: mean difference -2.5, d = -2.5 / sqrt((4 + 5/3) / 2) = -1.4852213 (not
    the -1.3416408 of the two questions' means, whose spread is not the texts'). The test counts
    the two questions: residuals 1.5 and -1.5, SE = sqrt(2 · 4.5) / 4 = 0.75, t = -10/3 on one
    degree of freedom, p = 1/2 - atan(10/3)/π = 0.0927736 (the four texts as independent pairs
    would give p = 0.0152)."""
    from gem_tasks.scoring.metrics import _pairs, mean_paired_difference, paired_p, smd

    def pair(entity: str, before: float, after: float) -> SampleScore:
        return SampleScore(
            score=Score(value={"before": before, "after": after}),
            sample_id=f"{entity}/{after}",
            sample_metadata={"entity": entity},
        )

    scores = [pair("a", 5, 4), pair("a", 5, 3), pair("a", 5, 2), pair("b", 9, 5)]
    assert _pairs(scores) == ([5.0, 5.0, 5.0, 9.0], [4.0, 3.0, 2.0, 5.0], ["a", "a", "a", "b"])
    assert mean_paired_difference()(scores) == pytest.approx(-2.5)
    assert smd()(scores) == pytest.approx(-1.4852213, abs=1e-7)
    assert paired_p("less")(scores) == pytest.approx(0.0927736, abs=1e-7)
