"""Every task declares its headline (``Task(headline_metric=...)``), and a real log resolves it
to the number the task's docs call its result, as Inspect's viewer and ``evals_df`` read it."""

from __future__ import annotations

import pytest
from inspect_ai import eval as run_eval
from inspect_ai.analysis import evals_df
from inspect_ai.log import HeadlineMetric
from inspect_ai.log._headline import headline_metric

from gem_tasks.scoring.headline import headline_of
from gem_tasks.tasks.correlation import correlation
from gem_tasks.tasks.iclr import iclr
from gem_tasks.tasks.judgments import judgments
from gem_tasks.tasks.robustness import robustness
from gem_tasks.tasks.samples import SUMMEVAL_DEMO
from scorers.plan import ScoringPlan
from tests.tasks.test_domain_tasks import items_file
from tests.tasks.test_task_requirements import _graded_demo


def resolved(log):
    """(scorer, metric, value) of the log's headline, after checking Inspect resolved the
    task's declaration (not its first-metric fallback)."""
    assert log.status == "success", log.error
    declared = log.eval.headline_metric
    assert declared is not None
    found = headline_metric(log)
    assert found.score.scorer == declared.scorer and found.name == declared.metric
    return found.score.scorer, found.name, found.metric.value


def test_the_declarations_name_the_first_metric_and_the_tasks_statistic(tmp_path):
    assert iclr(candidate="human", scorers="rouge_l,bleu").headline_metric == HeadlineMetric(
        scorer="rouge_l", metric="mean"
    )
    task = robustness(perturbation="elongation_fixed", dataset=str(SUMMEVAL_DEMO), scorers="bleu")
    assert task.headline_metric == HeadlineMetric(scorer="bleu_paired", metric="smd")
    graded = str(_graded_demo(tmp_path))
    assert correlation(dataset=graded, scorers="bleu").headline_metric == HeadlineMetric(
        scorer="bleu", metric="spearman_rho"
    )
    # a corpus statistic heads its metric under its own name
    assert headline_of(ScoringPlan.build("decision_auc,decision_accuracy")) == HeadlineMetric(
        scorer="decision_auc", metric="auc"
    )
    assert headline_of(ScoringPlan.build("br_strength_kl")).metric == "corpus_kl"


@pytest.mark.slow
def test_a_candidates_run_is_headed_by_its_agreement_with_the_humans(tmp_path):
    [log] = run_eval(
        judgments(dataset=str(items_file(tmp_path)), candidate="candidates", scorers="rouge_l"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    scorer, metric, value = resolved(log)
    assert (scorer, metric) == ("rouge_l", "rho_mean_of_dimensions")
    assert value == log.results.scores[0].metrics["rho_mean_of_dimensions"].value
    frame = evals_df(str(tmp_path / "logs"), quiet=True)
    assert frame["score_headline_metric"].tolist() == ["rho_mean_of_dimensions"]
    assert frame["score_headline_value"].tolist() == [pytest.approx(value)]


@pytest.mark.slow
def test_the_iclr_log_is_headed_by_the_first_metrics_mean(tmp_path):
    [log] = run_eval(
        iclr(candidate="human", scorers="rouge_l,bleu"),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert resolved(log)[:2] == ("rouge_l", "mean")


@pytest.mark.slow
def test_the_robustness_log_is_headed_by_the_smd_not_the_token_limit_count(tmp_path):
    [log] = run_eval(
        robustness(
            perturbation="elongation_fixed",
            dataset=str(SUMMEVAL_DEMO),
            scorers="rouge_l",
            references=1,
        ),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert next(iter(log.results.scores[0].metrics)) == "at_token_limit"  # Inspect's default
    scorer, metric, value = resolved(log)
    assert (scorer, metric) == ("rouge_l_paired", "smd")
    assert value == log.results.scores[0].metrics["smd"].value
