"""The metric seam: the registry, typed signatures, items and results, the Inspect adapter and
the leaderboard's use of the registry (names, directions, comparability)."""

from __future__ import annotations

import math

import pytest

from conftest import PAPERS, signature, write_log
from gem_tasks.analysis.leaderboard import compare_logs
from scorers import (
    Item,
    MetricError,
    MetricSpec,
    Paper,
    Result,
    Review,
    UnknownMetricError,
    get_metric,
    list_metrics,
    register_metric,
)
from scorers.errors import GemTasksError
from scorers.metrics.gem import GemMetric, GemSignature
from scorers.registry import Metric, metric_spec, register_metric_class
from scorers.signature import Signature, comparable


def test_the_gem_family_is_registered_with_names_directions_and_options():
    specs = {spec.name: spec for spec in list_metrics()}
    assert {"gem", "gem_raw", "gem_s", "gem_s_assw"} <= set(specs)
    assert specs["gem_s"].display_name == "GEM-S (abstract)"
    assert metric_spec("gem_s_abstract") is specs["gem_s"]  # the name older logs carry
    assert all(specs[n].higher_is_better and specs[n].family == "gem" for n in ("gem", "gem_raw"))
    assert specs["gem"].roles == ("preprocessor",) and specs["gem_raw"].roles == ()
    assert "abstract" in specs["gem_s"].needs and "paper_text" in specs["gem_s_assw"].needs
    assert isinstance(get_metric("gem"), GemMetric)
    assert get_metric("gem_s", synopsis="assw").metric_name == "gem_s_assw"


def test_unknown_names_and_options_are_clear_errors():
    with pytest.raises(
        UnknownMetricError,
        match=r"unknown metric 'gemm' \(did you mean 'gem'\?\); `gem-tasks metrics` lists",
    ):
        get_metric("gemm")
    with pytest.raises(
        MetricError, match=r"metric 'gem' has no option 'temperature'; its options: dataset_summ"
    ):
        get_metric("gem", temperature=0.5)
    with pytest.raises(MetricError, match="option 'synopsis' must be 'abstract' or 'assw'"):
        get_metric("gem_s", synopsis="title")
    assert issubclass(UnknownMetricError, GemTasksError)


class Constant(Metric):
    async def compute(self, item, resources):
        return Result(value=float(len(item.candidate)), explanation="length")


def test_a_family_plugs_in_with_one_registration_and_names_are_unique():
    spec = register_metric_class(
        Constant,
        name="test_length",
        display_name="Length",
        family="test",
        higher_is_better=False,
        needs=frozenset(),
        version=1,
        empty_candidate="flagged",
    )
    item = Item(paper=Paper(id="p"), candidate="four", references=(Review("r", "x"),))
    assert get_metric("test_length").score(item, resources=None).value == 4.0
    assert spec in list_metrics()
    with pytest.raises(MetricError, match="registered twice"):
        register_metric(spec)
    with pytest.raises(MetricError, match="unknown needs"):
        MetricSpec("x", "X", "t", True, frozenset({"telepathy"}), 1, spec.factory)
    # a registration must say what an empty review gets (the contract test holds it to that)
    with pytest.raises(MetricError, match="empty_candidate must say what an empty review gets"):
        MetricSpec("x", "X", "t", True, frozenset(), 1, spec.factory)


def test_results_and_items_say_what_is_wrong():
    with pytest.raises(ValueError, match="needs its reason"):
        Result(value=None, explanation="?")
    with pytest.raises(TypeError, match="candidate must be a string"):
        Item(paper=Paper(id="p"), candidate=3, references=())
    unscored = Result(value=None, reason="no usable reference", explanation="...")
    assert unscored.metadata()["unscored_reason"] == "no usable reference"
    assert not unscored.scored


def test_signatures_are_typed_and_the_package_version_does_not_split_them():
    a = GemSignature(
        metric="gem", family="gem", version=1, evaluation_lm="m:float32", package_version="0.1"
    )
    b = GemSignature(
        metric="gem", family="gem", version=1, evaluation_lm="m:float32", package_version="0.2"
    )
    assert a.id == b.id and a.as_dict()["package_version"] == "0.1"
    assert "package_version" not in a.key() and a.key()["evaluation_lm"] == "m:float32"
    assert GemSignature(metric="gem", family="gem", version=2).id != a.id  # a new version splits
    assert isinstance(a, Signature)
    assert comparable({"id": "x", "package_version": "1", "metric": "gem"}) == {"metric": "gem"}


def test_the_leaderboard_does_not_split_groups_by_package_version(tmp_path):
    values = {p: float(i) for i, p in enumerate(PAPERS)}
    write_log(tmp_path / "a.eval", "m/a", values, sig=signature(package_version="0.1.0"))
    write_log(
        tmp_path / "b.eval",
        "m/b",
        {p: v + 1 for p, v in values.items()},
        sig=signature(package_version="0.2.0"),
    )
    board = compare_logs([tmp_path], progress=False)
    assert set(board.table["group"]) == {"1"} and len(board.table) == 2
    assert board.table.set_index("model").loc["m/b", "rank"] == 1


def test_lower_is_better_metrics_rank_the_lowest_mean_first(tmp_path):
    register_metric_class(
        Constant,
        name="test_error_rate",
        display_name="Error rate",
        family="test",
        higher_is_better=False,
        needs=frozenset(),
        version=1,
        empty_candidate="flagged",
    )
    sig = {"metric": "test_error_rate", "family": "test", "version": 1}
    low = {p: 1.0 + 0.1 * i for i, p in enumerate(PAPERS)}
    high = {p: v + 5.0 + 0.3 * ((i * 7) % 3) for i, (p, v) in enumerate(low.items())}
    write_log(tmp_path / "low.eval", "m/low", low, sig=sig, scorer="test_error_rate")
    write_log(tmp_path / "high.eval", "m/high", high, sig=sig, scorer="test_error_rate")
    board = compare_logs([tmp_path], progress=False)
    table = board.table.set_index("model")
    assert table.loc["m/low", "rank"] == 1 and table.loc["m/high", "rank"] == 2
    assert table.loc["m/low", "metric_name"] == "Error rate"
    [pair] = board.pairs.to_dict("records")
    assert pair["better"] == "m/low" and pair["significant"]
    assert "m/high" in table.loc["m/low", "better_than"]
    assert not math.isnan(table.loc["m/low", "mean"])


@pytest.fixture(scope="module")
def human_baseline_cache(tmp_path_factory) -> str:
    """One score cache for this module's runs of the human baseline on the first demo papers:
    the second run's GEM and GEM-S requests are hits (what it checks is not how they were
    computed)."""
    return str(tmp_path_factory.mktemp("registry_cache"))


@pytest.mark.slow
def test_plain_python_gives_exactly_the_number_inspect_logs(
    tmp_path, demo_records, human_baseline_cache
):
    """``get_metric(name).score(item, resources)`` equals the logged score of the same sample."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.iclr import iclr
    from scorers import Resources
    from scorers.data.records import split_reviews

    [log] = inspect_eval(
        iclr(
            candidate="human",
            scorers="gem,gem_s",
            dataset_summaries=True,
            cache_dir=human_baseline_cache,
        ),
        model="mockllm/model",
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    # the same cache: a request built differently would miss it and be computed anew
    resources = Resources(evaluation_lm="embedded", cache_dir=human_baseline_cache)
    by_id = {paper.id: paper for paper in demo_records}
    for sample in log.samples:
        paper = by_id[sample.id]
        split = split_reviews(paper, references=2, seed=0)
        item = Item(
            paper=Paper(id=paper.id, title=paper.title, abstract=paper.abstract),
            candidate=split.held_out.text,
            references=tuple(Review(r.id, r.text, r.summary) for r in split.references),
            candidate_summary=split.held_out.summary,
        )
        for name in ("gem", "gem_s"):
            computed_before = resources.lm().computed["logprob_requests"]
            result = get_metric(name, dataset_summaries=True).score(item, resources)
            assert resources.lm().computed["logprob_requests"] == computed_before  # all hits
            logged = sample.scores[name]
            assert result.value == logged.value, name  # exactly, not approximately
            assert result.signature.as_dict()["id"] == logged.metadata["signature"]["id"]


@pytest.mark.slow
def test_every_registered_metric_runs_through_inspect_and_the_leaderboard(
    tmp_path, capsys, human_baseline_cache
):
    """The issue's check, small: the human baseline on one demo paper with GEM and every
    baseline, then ``gem-tasks leaderboard`` lists every metric."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.cli import main as cli_main
    from gem_tasks.tasks.iclr import iclr

    names = ["gem", "gem_s", "bleu", "rouge_l", "bertscore", "bartscore_f1", "lm_examiner"]
    [log] = inspect_eval(
        iclr(
            candidate="human",
            scorers=",".join(names),
            dataset_summaries=True,
            scorer_options={"lm_examiner": {"max_tokens": 24}},
            cache_dir=human_baseline_cache,
        ),
        model="mockllm/model",
        limit=1,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert [s.name for s in log.results.scores] == names
    for sample in log.samples:
        for name in names:
            score = sample.scores[name]
            signature = score.metadata["signature"]
            assert signature["metric"] == name and signature["version"] >= 1
            if math.isnan(score.value):  # the 135M judge rarely writes the tag in 24 tokens
                assert name == "lm_examiner"
                assert "overall_score" in score.metadata["unscored_reason"]
    assert cli_main(["leaderboard", str(tmp_path / "logs"), "--quiet"]) == 0
    printed = capsys.readouterr().out
    for display in ("GEM", "GEM-S (abstract)", "BLEU", "ROUGE-L", "BERTScore", "BARTScore-F1"):
        assert f"## {display}" in printed, display
    with pytest.raises(ValueError, match="not among the scorers"):
        iclr(scorers="gem", scorer_options={"bleu": {}})
