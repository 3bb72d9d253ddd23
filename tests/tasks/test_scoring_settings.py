"""The shared scoring parameters: declared once, in every scored task's signature, documented
once in its docstring and handed to the task as one :class:`TaskScoring`."""

from __future__ import annotations

import inspect

import pytest

from gem_tasks.tasks.scoring_settings import SHARED_PARAMETERS, TaskScoring, scoring_parameters
from scorers.data.records import RecordError


@scoring_parameters(scorers="bleu", without=("dataset_summaries",))
def _toy(dataset: str = "d", *, scoring: TaskScoring) -> tuple[str, TaskScoring]:
    """A toy task.

    Args:
        dataset: the data.
        cache_dir: this task's own words for the cache.
    """
    return dataset, scoring


def test_the_signature_has_the_task_parameters_then_the_shared_ones():
    parameters = inspect.signature(_toy).parameters
    assert list(parameters) == [
        "dataset",
        "scorers",
        "scorer_lm",
        "scorer_lm_args",
        "scorer_options",
        "cache_dir",
        "negatives",
    ]
    assert parameters["scorers"].default == "bleu"
    assert parameters["scorer_lm"].default == "embedded"
    assert parameters["negatives"].default is None


def test_the_settings_arrive_as_one_object():
    dataset, scoring = _toy("x", scorers="gem", scorer_lm="hf/m", negatives=2)
    assert dataset == "x"
    assert scoring == TaskScoring(scorers="gem", scorer_lm="hf/m", negatives=2)
    _, default = _toy()
    assert default.scorers == "bleu" and default.cache_dir is None
    assert default.task_options == {}  # the task has no dataset_summaries to route
    with pytest.raises(TypeError):
        _toy(dataset_summaries=True)  # not this task's


def test_each_shared_parameter_is_documented_once_and_a_tasks_own_words_win():
    doc = _toy.__doc__
    assert doc.count("cache_dir:") == 1
    assert "cache_dir: this task's own words for the cache." in doc
    for name in ("scorers", "scorer_lm", "scorer_lm_args", "scorer_options", "negatives"):
        assert doc.count(f"    {name}: ") == 1, name
    assert "dataset_summaries" not in doc
    # every added line stays inside the docstring's width
    assert max(len(line) for line in doc.splitlines()) <= 96


def test_a_wrong_declaration_is_refused():
    with pytest.raises(ValueError, match="not a shared scoring parameter"):
        scoring_parameters(scorers="bleu", without=("scorers",))
    with pytest.raises(TypeError, match="keyword-only 'scoring'"):

        @scoring_parameters(scorers="bleu")
        def _no_scoring(dataset: str = "d") -> None:
            """Args:
            dataset: d."""

    with pytest.raises(TypeError, match="none of"):

        @scoring_parameters(scorers="bleu")
        def _restates(scorers: str = "x", *, scoring: TaskScoring) -> None:
            """Args:
            scorers: s."""


def test_every_scored_task_takes_the_shared_parameters():
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.space import space
    from gem_tasks.tasks.summeval import summeval

    for task in (iclr, robustness, correlation, judgments, summeval, space):
        assert set(SHARED_PARAMETERS) <= set(inspect.signature(task).parameters), task
    assert set(SHARED_PARAMETERS) - set(inspect.signature(review_quality).parameters) == {
        "dataset_summaries"
    }


def test_a_task_that_has_dataset_summaries_routes_it_and_says_where_other_domains_go():
    @scoring_parameters(scorers="gem")
    def _with_summaries(*, scoring: TaskScoring) -> TaskScoring:
        """Args:"""
        return scoring

    assert _with_summaries().task_options == {"dataset_summaries": False}
    assert _with_summaries(dataset_summaries=True).plan().options == {
        "gem": {"dataset_summaries": True}
    }
    from gem_tasks.tasks.samples import DEMO_DATASET

    scoring = _toy(scorers="bleu")[1]
    with pytest.raises(RecordError, match="takes qa .gem_tasks/judgments and gem_tasks/robustness"):
        scoring.prepare(DEMO_DATASET, domains=frozenset({"qa"}))
    data, plan = scoring.prepare(DEMO_DATASET, domains=frozenset({"peer_review"}))
    assert plan.names == ["bleu"] and len(data.records) == 10


def test_a_plan_rebuilt_from_checked_settings_skips_the_checks(tmp_path):
    from scorers.errors import SettingError

    scoring = TaskScoring(scorers="gem", scorer_lm=f"hf/{tmp_path / 'no-model-here'}")
    with pytest.raises(SettingError, match="no-model-here"):
        scoring.plan(bound_roles=())
    unchecked = scoring.plan(bound_roles=(), checked=False)  # nothing looked for, nothing loaded
    assert unchecked.names == ["gem"] and unchecked.evaluation_lm.endswith("no-model-here")
