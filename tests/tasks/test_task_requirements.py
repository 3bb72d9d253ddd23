"""What a requested metric needs from the dataset is decided in one place for every task: negative
references are drawn wherever a metric scores against them (iclr, review_quality, robustness,
correlation and the lm-eval task), and a dataset that cannot give a metric what it needs at all
(no paper with an abstract, for GEM-S) is refused up front with a message naming the metric."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval

from gem_tasks.tasks.samples import DEMO_DATASET
from scorers.data.records import RecordError, load_records
from scorers.plan import ScoringPlan

NEEDS_NEGATIVES = "fmi_kl_fvar_token"
"""An f-variational cell scored by the evaluation LM's log-probabilities (no oracle needed)."""
OPTIONS = {
    NEEDS_NEGATIVES: {"dataset_summaries": True}
}  # the demo's stored rewrites: no generation


def _graded_demo(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in DEMO_DATASET.read_text().splitlines() if line.strip()]
    for row in rows:
        for k, review in enumerate(row["reviews"]):
            review["grade"] = 5 + k
    path = tmp_path / "graded.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def _no_abstracts(tmp_path: Path) -> Path:
    rows = [json.loads(line) for line in DEMO_DATASET.read_text().splitlines() if line.strip()]
    for k, row in enumerate(rows):  # what the GEM release's converter writes, or a placeholder
        row["abstract"] = "" if k % 2 else "Not available"
        row["title"] = row["id"]
        row.pop("paper_text", None)
    path = tmp_path / "no_abstracts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def negatives_wanted(scorers: str, negatives: int | None, *, scorer_options=None) -> int:
    """The negatives a task draws for ``scorers``: its scoring plan's answer."""
    return ScoringPlan.build(scorers, scorer_options=scorer_options).negatives(negatives)


def refuse_unservable(records, scorers: str, *, scorer_options=None, where="the dataset"):
    """What a task's scoring plan refuses of ``records`` for ``scorers``."""
    ScoringPlan.build(scorers, scorer_options=scorer_options).refuse_unservable(
        records, where=where
    )


def _loaded(path: Path):
    """The loaded data a task's dataset builders take."""
    from scorers.data.task_data import TaskData

    return {"data": TaskData.load(path)}


def _tasks(tmp_path: Path, lm: str):
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness

    cache = str(tmp_path / "cache")
    return {
        "iclr": iclr(
            scorers=NEEDS_NEGATIVES,
            candidate="human",
            dataset_summaries=True,
            cache_dir=cache,
            scorer_lm=lm,
        ),
        "review_quality": review_quality(
            scorers=NEEDS_NEGATIVES,
            candidate="human",
            scorer_options=OPTIONS,
            cache_dir=cache,
            scorer_lm=lm,
        ),
        "robustness": robustness(
            scorers=NEEDS_NEGATIVES,
            perturbation="random_replacement",
            level="judgments",
            scorer_options=OPTIONS,
            cache_dir=cache,
            scorer_lm=lm,
        ),
        "correlation": correlation(
            dataset=str(_graded_demo(tmp_path)),
            scorers=NEEDS_NEGATIVES,
            scorer_options=OPTIONS,
            cache_dir=cache,
            scorer_lm=lm,
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", ["iclr", "review_quality", "robustness", "correlation"])
def test_every_inspect_task_draws_negatives_for_a_metric_that_needs_them(
    tmp_path, name, tiny_folder
):
    """Scored by the tiny random Llama: what is checked is where the negatives go, not what
    they are worth."""
    task = _tasks(tmp_path, f"hf/{tiny_folder}")[name]
    [log] = inspect_eval(
        task, model="mockllm/model", limit=1, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    assert len(sample.metadata["negatives"]) == 4
    assert all(n["paper_id"] != sample.metadata["paper_id"] for n in sample.metadata["negatives"])
    [score] = sample.scores.values()
    metadata = score.metadata
    if name == "robustness":  # paired: both sides scored against the same negatives
        assert metadata["before"]["negatives"] == metadata["after"]["negatives"]
        metadata = metadata["before"]
    assert metadata.get("unscored_reason") is None, metadata.get("unscored_reason")
    assert len(metadata["negatives"]) == 4
    assert [t["side"] for t in metadata["references"]].count("negative") == 4


@pytest.mark.slow
def test_the_lm_eval_task_draws_negatives_for_a_metric_that_needs_them(tiny_folder):
    from gem_tasks.lm_eval_tasks.gre_bench import load_docs, process_results, score_reviews

    docs = load_docs(
        scorers=NEEDS_NEGATIVES,
        candidate="human",
        dataset_summaries=True,
        scorer_options=OPTIONS,
        scorer_lm=f"hf/{tiny_folder}",
    )["test"]
    doc = dict(docs[0])
    assert len(json.loads(doc["document"])["negatives"]) == 4
    [[text]] = score_reviews([["ignored: the human candidate"]], [doc])
    numbers = process_results(doc, [text])
    assert numbers[f"{NEEDS_NEGATIVES}_unscored"] == 0.0 and math.isfinite(numbers[NEEDS_NEGATIVES])


def test_negatives_follow_the_metrics_options():
    # TV direct needs negatives only in its product form, an option
    assert negatives_wanted("fmi_tv_direct_token", None) == 0
    product = {"fmi_tv_direct_token": {"tv_direct_form": "product"}}
    assert negatives_wanted("fmi_tv_direct_token", None, scorer_options=product) == 4
    assert negatives_wanted("gem,tvd_mi", None) == 4 and negatives_wanted("gem", None) == 0
    assert negatives_wanted("gem", 2) == 2
    with pytest.raises(ValueError, match="tvd_mi|fmi_tv_fvar_report"):
        negatives_wanted("tvd_mi", 0)  # every sample would be unscored


def test_a_dataset_without_abstracts_is_refused_for_the_metrics_that_need_one(tmp_path):
    from gem_tasks.tasks.iclr import iclr

    data = _no_abstracts(tmp_path)
    records = load_records(data)
    refuse_unservable(records, "gem,gem_raw,bleu")  # these need no abstract
    for needing in ("gem_s", "gsppm_token", "gsppm_judgment", "autopre_panel_unqualified"):
        with pytest.raises(RecordError, match=f"{needing} needs the papers' abstracts"):
            refuse_unservable(records, f"gem,{needing}", where=str(data))
    with pytest.raises(RecordError, match="br_summary_coverage reads a review against"):
        refuse_unservable(records, "br_summary_coverage")
    with pytest.raises(RecordError, match="lm_examiner reads a review against"):
        refuse_unservable(records, "lm_examiner")
    # an option can make a metric need the abstract
    options = {"fmi_kl_direct_report": {"synopsis": "abstract"}}
    refuse_unservable(records, "fmi_kl_direct_report")
    with pytest.raises(RecordError, match="fmi_kl_direct_report needs the papers' abstracts"):
        refuse_unservable(records, "fmi_kl_direct_report", scorer_options=options)
    # through the task, as a user runs it
    with pytest.raises(RecordError, match="gem_s needs the papers' abstracts"):
        iclr(dataset=str(data), scorers="gem,gem_s", candidate="human")


# -- a paper without an abstract, inside a dataset that has abstracts ---------------------------


class _NoCalls:
    """A generator that must not be asked (the metric should stop before)."""

    identity = "test/no-calls"

    async def generate(self, conversations, settings):
        raise AssertionError("asked a model about a paper that cannot be scored")


@pytest.mark.slow
@pytest.mark.parametrize("abstract", ["", "  ", "Not available", "N/A"])
def test_metrics_that_condition_on_the_abstract_leave_a_paper_without_one_unscored(
    tiny_lm, tmp_path, abstract
):
    from scorers import Item, Paper, Resources, Review, get_metric

    item = Item(
        Paper("p1", title="p1", abstract=abstract, assw="Strengths: x. Weaknesses: y."),
        "The reviewer appreciates the proofs.",
        (Review("r", "raw", summary="The reviewer criticizes the baselines."),),
        flags=frozenset({"candidate_is_judgments"}),
    )
    resources = Resources(
        evaluation_lm=tiny_lm,
        cache_dir=tmp_path,
        generators={"oracle": _NoCalls(), "preprocessor": _NoCalls()},
    )
    for name, options in (
        ("gem_s", {"dataset_summaries": True}),
        ("gem_s_assw", {"dataset_summaries": True}),
        ("gsppm_token", {"dataset_summaries": True}),
        ("gsppm_judgment", {"dataset_summaries": True}),
        ("fmi_kl_direct_report", {"synopsis": "abstract"}),
        ("gppm_j", {"synopsis": "abstract", "dataset_summaries": True}),
    ):
        result = get_metric(name, **options).score(item, resources)
        assert result.value is None, name
        assert result.reason.startswith("no abstract (the abstract is"), (name, result.reason)
    # GEM itself needs none, and GPPM's placeholder is not an abstract it needs
    assert get_metric("gem", dataset_summaries=True).score(item, resources).value is not None
    gppm = get_metric("gppm_token", dataset_summaries=True).score(item, resources)
    assert gppm.value is not None


@pytest.mark.slow
def test_reading_a_review_against_the_paper_needs_its_text_or_abstract(tmp_path):
    """Summary coverage (and LMExaminer) read the review against the paper's text, else its
    abstract: a paper with neither, whose title is its id, is unscored, never scored against
    the id."""
    from scorers import Item, Paper, Resources, Review, get_metric

    review = "<summary>The paper studies widgets.</summary><strengths>Clear.</strengths>"
    item = Item(Paper("forum123", title="forum123", abstract=""), review, (Review("r", "x"),))
    resources = Resources(cache_dir=tmp_path, generators={"judge": _NoCalls()})
    coverage = get_metric("br_summary_coverage").score(item, resources)
    assert coverage.value is None and "nothing to compare with" in coverage.reason
    examiner = get_metric("lm_examiner").score(item, resources)
    assert examiner.value is None and "the abstract is empty" in examiner.reason
    with_abstract = Item(
        Paper("forum123", title="forum123", abstract="We study widgets."), review, ()
    )
    scored = get_metric("br_summary_coverage").score(with_abstract, resources)
    assert scored.value is not None and scored.details["paper_source"] == "abstract"


def test_the_correlation_task_says_why_a_rating_is_not_a_grade(tmp_path):
    """``grade_field=rating`` on records whose every review has a numeric rating: the task used
    to say "no review carries a numeric 'rating' field", which was false (it read only extra
    fields). A reviewer's rating grades the paper, not the review: refused, saying so."""
    from gem_tasks.tasks.correlation import correlation, leave_one_out_dataset

    rows = [json.loads(line) for line in DEMO_DATASET.read_text().splitlines() if line.strip()]
    assert all(isinstance(r["rating"], int | float) for row in rows for r in row["reviews"])
    for field in ("rating", "confidence"):
        with pytest.raises(
            ValueError, match=f"grade_field='{field}' is the review's .*not a grade"
        ):
            correlation(grade_field=field)
    with pytest.raises(RecordError, match=r"no review carries a numeric 'grade' grade .*none\)"):
        leave_one_out_dataset(**_loaded(DEMO_DATASET))  # the demo's reviews have no extra fields
    graded = _graded_demo(tmp_path)
    with pytest.raises(RecordError, match=r"'score'.*extra fields: grade\)"):
        leave_one_out_dataset(**_loaded(graded), grade_field="score")
    assert len(leave_one_out_dataset(**_loaded(graded))) == 30


def test_the_correlation_task_builds_its_samples_as_every_task_does(tmp_path):
    """Each graded review is held out in turn through the same document builder as the other
    tasks (``paper_document`` with ``held_out``): the same keys, its paper text cut at the task's
    ``max_paper_tokens`` with the facts saying so, every other review a reference."""
    from gem_tasks.tasks.correlation import leave_one_out_dataset
    from scorers.data.paper_docs import paper_document
    from scorers.data.records import load_records

    graded = _graded_demo(tmp_path)
    samples = leave_one_out_dataset(**_loaded(graded), max_paper_tokens=10)
    paper = load_records(graded)[0]
    _, document = paper_document(paper, references=2, seed=0, max_paper_tokens=10)
    held_out = [s for s in samples if s.metadata["paper_id"] == paper.id]
    assert len(held_out) == len(paper.reviews)
    for sample in held_out:
        assert set(sample.metadata) == set(document) | {"grade", "dataset_identity", "answer"}
        assert sample.id == f"{paper.id}/{sample.metadata['held_out']['id']}"
        others = {r.id for r in paper.reviews} - {sample.metadata["held_out"]["id"]}
        assert {r["id"] for r in sample.metadata["references"]} == others
        assert sample.metadata["paper_truncated"] and sample.metadata["paper_chars"] == 40  # 10 x 4


def test_one_solver_answers_with_every_stored_candidate(tmp_path):
    """The human baseline (iclr, review_quality, correlation) and existing systems (judgments)
    are answered by one solver from the sample's stored answer; a sample without one is an
    error, never a model call."""
    import asyncio

    from inspect_ai.model import ModelName
    from inspect_ai.solver import TaskState

    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.samples import ANSWER, SUMMEVAL_DEMO, stored_answer

    stored = {
        "iclr": iclr(candidate="human", scorers="bleu"),
        "correlation": correlation(dataset=str(_graded_demo(tmp_path)), scorers="bleu"),
        "judgments": judgments(dataset=str(SUMMEVAL_DEMO), candidate="system:M11", scorers="bleu"),
    }
    for name, task in stored.items():
        sample = task.dataset[0]
        state = TaskState(
            ModelName("none/none"), sample.id, 0, sample.input, [], metadata=sample.metadata
        )
        done = asyncio.run(stored_answer()(state, None))
        assert done.output.completion == sample.metadata[ANSWER]["text"], name
        if name != "judgments":  # the held-out review is the human baseline's answer
            assert done.output.completion == sample.metadata["held_out"]["text"]
    bare = TaskState(ModelName("none/none"), "x", 0, "", [], metadata={})
    with pytest.raises(ValueError, match="stores no answer"):
        asyncio.run(stored_answer()(bare, None))


def test_every_task_loads_its_data_through_the_one_loader(tmp_path):
    """iclr, review_quality, robustness, correlation and the judgment tasks read data with the
    same loader and its checks: a file mixing two domains is refused by each with one message."""
    from gem_tasks.tasks.correlation import correlation
    from gem_tasks.tasks.iclr import iclr
    from gem_tasks.tasks.judgments import judgments
    from gem_tasks.tasks.review_quality import review_quality
    from gem_tasks.tasks.robustness import robustness

    items = [
        {"id": f"{domain}{i}", "domain": domain,
         "references": [{"id": "a", "text": "One."}, {"id": "b", "text": "Two."}]}
        for domain in ("qa", "summarization") for i in range(2)
    ]  # fmt: skip
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(item) + "\n" for item in items))
    builders = {
        "iclr": lambda: iclr(dataset=str(mixed), scorers="bleu"),
        "review_quality": lambda: review_quality(dataset=str(mixed), scorers="br_rating_mae"),
        "robustness": lambda: robustness(dataset=str(mixed), scorers="bleu"),
        "correlation": lambda: correlation(dataset=str(mixed), scorers="bleu"),
        "judgments": lambda: judgments(dataset=str(mixed), scorers="bleu"),
    }
    for name, build in builders.items():
        with pytest.raises(RecordError, match="one domain per dataset, found qa, summarization"):
            build()
            pytest.fail(f"{name} took a file of two domains")
