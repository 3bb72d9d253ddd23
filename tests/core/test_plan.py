"""The scoring plan (scorers.plan): the metrics a run asked for, resolved and built once, and the
settings they name, checked before any sample exists."""

from __future__ import annotations

import pytest

from scorers.errors import MetricError, SettingError, UnknownMetricError
from scorers.plan import ScoringPlan


def test_a_misspelled_scorer_names_the_nearest_in_one_short_line():
    with pytest.raises(UnknownMetricError) as caught:
        ScoringPlan.build("gem,decision_acuracy")
    message = str(caught.value)
    assert "unknown scorer 'decision_acuracy'" in message
    assert "did you mean 'decision_accuracy'?" in message
    assert "gem-tasks metrics" in message
    assert len(message) < 160 and "\n" not in message  # not every registered name
    with pytest.raises(UnknownMetricError, match="no scorer given"):
        ScoringPlan.build(" , ")


def test_metrics_are_built_once_with_the_options_they_take():
    plan = ScoringPlan.build(
        "gem,bleu,lm_examiner",
        scorer_options={"lm_examiner": {"max_tokens": 256}},
        task_options={"dataset_summaries": True},
    )
    assert plan.names == ["gem", "bleu", "lm_examiner"]
    assert plan.options == {
        "gem": {"dataset_summaries": True},
        "bleu": {},
        "lm_examiner": {"max_tokens": 256},
    }
    assert plan.metrics["gem"].options.dataset_summaries is True
    assert plan.metrics["lm_examiner"].options.max_tokens == 256


def test_wrong_options_are_refused_when_the_plan_is_built():
    with pytest.raises(MetricError, match="has no option"):
        ScoringPlan.build("lm_examiner", scorer_options={"lm_examiner": {"max_token": 256}})
    with pytest.raises(SettingError, match="not among the scorers"):
        ScoringPlan.build("gem", scorer_options={"bleu": {}})
    with pytest.raises(SettingError, match="must map metric names"):
        ScoringPlan.build("gem", scorer_options=["bleu"])  # type: ignore[arg-type]
    with pytest.raises(SettingError, match="scorer_lm_args must be a mapping"):
        ScoringPlan.build("gem", evaluation_lm_options="dtype=bfloat16")  # type: ignore[arg-type]


def test_the_evaluation_lm_is_checked_where_a_metric_uses_it():
    assert ScoringPlan.build("gem_raw").uses_evaluation_lm()
    assert not ScoringPlan.build("bleu,rouge_l,decision_accuracy").uses_evaluation_lm()
    # a generating metric uses the evaluation LM only for its roles that are not bound
    assert ScoringPlan.build("lm_examiner").uses_evaluation_lm()
    assert not ScoringPlan.build("lm_examiner").uses_evaluation_lm(bound_roles={"judge"})
    with pytest.raises(SettingError, match="did you mean 'embedded'"):
        ScoringPlan.build("gem", evaluation_lm="embeded").check()
    # a misspelled spec is refused even where no metric uses it
    with pytest.raises(SettingError, match="unknown evaluation-LM spec"):
        ScoringPlan.build("bleu", evaluation_lm="embeded").check()
    with pytest.raises(SettingError, match="no folder"):
        ScoringPlan.build("gem", evaluation_lm="hf/./missing-model").check()
    ScoringPlan.build("bleu", evaluation_lm="hf/./missing-model").check()  # unused: not loaded


def test_models_named_by_a_metrics_options_are_checked(tmp_path):
    plan = ScoringPlan.build(
        "br_binoculars",
        scorer_options={"br_binoculars": {"observer": "embedded", "performer": str(tmp_path)}},
    )
    with pytest.raises(SettingError, match="br_binoculars's performer model: .* without a model"):
        plan.check()
    plan = ScoringPlan.build(
        "bertscore", scorer_options={"bertscore": {"model": "./no-such-embedder"}}
    )
    with pytest.raises(SettingError, match="bertscore's embedding model: no folder"):
        plan.check()


def test_gem_tasks_metrics_lists_every_name_a_scorer_error_sends_the_reader_to(capsys):
    from gem_tasks.cli import main
    from scorers.registry import list_metrics

    assert main(["metrics"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["name", "family", "better", "headline", "aliases"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert list(rows) == [spec.name for spec in list_metrics()]
    assert rows["gem"][1:4] == ["gem", "higher", "mean"]
    assert rows["decision_fpr"][2] == "lower"
    assert rows["decision_balanced_accuracy"][3] == "balanced_accuracy"


def test_every_task_builds_each_of_its_metrics_once(monkeypatch, tmp_path):
    """A task's scoring plan builds each metric once; the checks, the negatives, the data's
    refusals and the Inspect scorers all read the plan's metric."""
    import json
    from collections import Counter
    from pathlib import Path

    from scorers.registry import Metric

    built: Counter[str] = Counter()
    original = Metric.__init__

    def counting(self, spec, **options):
        built[spec.name] += 1
        original(self, spec, **options)

    monkeypatch.setattr(Metric, "__init__", counting)
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness

    data = Path(__file__).parents[2] / "gem_tasks" / "tasks" / "data"
    rows = [json.loads(line) for line in (data / "demo_iclr.jsonl").read_text().splitlines()]
    for row in rows:
        for k, review in enumerate(row["reviews"]):
            review["grade"] = 5 + k
    graded = tmp_path / "graded.jsonl"
    graded.write_text("".join(json.dumps(r) + "\n" for r in rows))
    builds = {
        "iclr": lambda: iclr(scorers="gem,gem_raw,gem_s,fmi_kl_fvar_token,bleu"),
        "review_quality": lambda: review_quality(),
        "robustness": lambda: robustness(perturbation="sentence_deletion", scorers="gem,bleu"),
        "correlation": lambda: correlation(dataset=str(graded), scorers="gem_raw,rouge_l"),
        "judgments": lambda: judgments(dataset=str(data / "summeval_demo.jsonl")),
    }
    for name, build in builds.items():
        built.clear()
        task = build()
        assert built and set(built.values()) == {1}, (name, dict(built))
        assert len(task.scorer) == len(built), name
