"""The scoring settings every harness takes (scorers.settings.ScoringSettings): the plan they
build, the data they load against it, and the options they route to the metrics."""

from __future__ import annotations

import json

import pytest

from scorers.data.records import RecordError
from scorers.data.task_data import DomainNotTaken
from scorers.errors import SettingError
from scorers.settings import ScoringSettings


def _demo_path() -> str:
    from gem_tasks.tasks.samples import DEMO_DATASET

    return str(DEMO_DATASET)


def test_dataset_summaries_reaches_the_metrics_only_where_the_harness_has_it():
    assert ScoringSettings(scorers="gem").task_options == {}
    assert ScoringSettings(scorers="gem", dataset_summaries=False).task_options == {
        "dataset_summaries": False
    }
    plan = ScoringSettings(scorers="gem,bleu", dataset_summaries=True).plan(checked=False)
    assert plan.options == {"gem": {"dataset_summaries": True}, "bleu": {}}
    assert ScoringSettings(scorers="gem").plan(checked=False).options == {"gem": {}}


def test_the_plan_is_checked_unless_rebuilt_from_checked_settings():
    wrong = ScoringSettings(scorers="gem", scorer_lm="embeded")
    with pytest.raises(SettingError, match="did you mean 'embedded'"):
        wrong.plan()
    assert wrong.plan(checked=False).names == ["gem"]
    with pytest.raises(SettingError, match="not among the scorers"):
        ScoringSettings(scorers="gem", scorer_options={"bleu": {}}).plan(checked=False)


def test_data_is_loaded_against_the_plan_with_the_negatives_it_resolves(tmp_path):
    settings = ScoringSettings(scorers="bleu")
    data = settings.load(_demo_path(), settings.plan(), domains=frozenset({"peer_review"}))
    assert data.negatives == 0 and len(data.records) == 10
    needing = ScoringSettings(scorers="fmi_tv_fvar_report")
    assert needing.load(_demo_path(), needing.plan(checked=False)).negatives == 4
    three = ScoringSettings(scorers="fmi_tv_fvar_report", negatives=3)
    assert three.load(_demo_path(), three.plan(checked=False)).negatives == 3
    with pytest.raises(SettingError, match="negatives=0"):
        none = ScoringSettings(scorers="fmi_tv_fvar_report", negatives=0)
        none.load(_demo_path(), none.plan(checked=False))
    with pytest.raises(DomainNotTaken, match="peer_review data; this task takes qa") as caught:
        settings.load(_demo_path(), settings.plan(), domains=frozenset({"qa"}))
    assert caught.value.domain == "peer_review" and isinstance(caught.value, RecordError)
    assert str(caught.value).endswith("this task takes qa")  # the core names no Inspect task


def test_resources_carry_the_evaluation_lm_and_cache(tmp_path):
    settings = ScoringSettings(
        scorers="gem", scorer_lm="hf/x", scorer_lm_args={"dtype": "float32"}, cache_dir=tmp_path
    )
    resources = settings.resources()
    assert resources.evaluation_lm_spec == "hf/x"
    assert resources.evaluation_lm_options == {"dtype": "float32"}
    assert resources.cache_dir == tmp_path
    assert json.dumps(ScoringSettings(scorers="gem").task_options) == "{}"
