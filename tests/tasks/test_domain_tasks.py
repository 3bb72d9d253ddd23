"""The summarisation, opinion-summary and any-domain tasks: samples, candidates, refusals, and
Spearman's ρ against human ratings, run end to end through inspect eval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from inspect_ai import eval as run_eval

from gem_tasks.tasks.judgments import judgments
from gem_tasks.tasks.space import space
from gem_tasks.tasks.summeval import summeval
from scorers.data.records import RecordError
from scorers.errors import MetricError
from scorers.metrics.overlap import rouge_l


def items_file(tmp_path: Path) -> Path:
    """Three QA items; each has two human answers and three rated candidates whose ROUGE-L
    with the reference rises with their rating."""
    rows = []
    for q in range(3):
        reference = f"light scatters off small molecules in the air number {q}"
        rows.append(
            {
                "id": f"q{q}",
                "domain": "qa",
                "input": {"synopsis": f"Why is the sky blue, case {q}?"},
                "references": [
                    {"id": f"q{q}-a", "text": reference},
                    {"id": f"q{q}-b", "text": reference},
                ],
                "candidates": [
                    {"id": "bad", "text": "cheese", "ratings": {"overall": 1, "style": 3}},
                    {"id": "mid", "text": "light scatters", "ratings": {"overall": 2, "style": 1}},
                    {"id": "good", "text": reference, "ratings": {"overall": 3, "style": 2}},
                ],
            }
        )
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_samples_of_each_candidate_mode():
    assert len(summeval().dataset) == 3  # the model summarises each bundled article
    assert len(summeval(candidate="human").dataset) == 3
    every = summeval(candidate="candidates").dataset
    assert len(every) == 48 and every[0].id.endswith("/M0")
    assert set(every[0].metadata["ratings"]) == {"coherence", "consistency", "fluency", "relevance"}
    one = summeval(candidate="system:M11").dataset
    assert [s.metadata["answer"]["id"] for s in one] == ["M11"] * 3
    # every candidate of an article is scored against the same references
    refs = {s.metadata["paper_id"]: s.metadata["references"] for s in every}
    assert all(s.metadata["references"] == refs[s.metadata["paper_id"]] for s in every)
    prompt = summeval().dataset[0].input
    assert "Summarize" in prompt[0].content and "CNN" in prompt[1].content
    assert len(space().dataset) == 14


def test_what_a_domain_cannot_do_is_refused_with_why():
    with pytest.raises(RecordError, match="no text for a model to report on"):
        space(candidate="model")
    with pytest.raises(MetricError, match="gem_s applies to peer_review, qa, summarization"):
        space(scorers="gem,gem_s")
    with pytest.raises(MetricError, match="lm_examiner applies to peer_review"):
        summeval(scorers="gem,lm_examiner")
    with pytest.raises(RecordError, match="no candidate 'M99'"):
        summeval(candidate="system:M99")
    with pytest.raises(ValueError, match="candidate must be"):
        summeval(candidate="everyone")
    with pytest.raises(
        RecordError, match="opinion_summarization data; this task takes summarization"
    ):
        from gem_tasks.tasks.samples import SPACE_DEMO

        summeval(dataset=str(SPACE_DEMO))


@pytest.mark.slow
def test_rated_candidates_give_spearman_per_dimension_and_their_mean(tmp_path: Path):
    [log] = run_eval(
        judgments(dataset=str(items_file(tmp_path)), candidate="candidates", scorers="rouge_l"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    metrics = log.results.scores[0].metrics
    # ROUGE-L rises with "overall" in every item: ρ = 1; "style" ranks them 3, 1, 2
    assert metrics["rho_overall"].value == pytest.approx(1.0)
    style = metrics["rho_style"].value
    assert style == pytest.approx(
        __import__("scipy").stats.spearmanr([0, 2 / 3, 1] * 3, [3, 1, 2] * 3).statistic
    )
    assert metrics["rho_mean_of_dimensions"].value == pytest.approx((1.0 + style) / 2)
    sample = log.samples[0]
    assert sample.scores["rouge_l"].value == pytest.approx(
        rouge_l("cheese", "light scatters off small molecules in the air number 0")
    )


@pytest.mark.slow
def test_the_held_out_human_answer_is_scored_against_the_other(tmp_path: Path):
    [log] = run_eval(
        judgments(dataset=str(items_file(tmp_path)), scorers="bleu,rouge_l"),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.eval.metadata["domain"] == "qa"
    # both human answers are the same text: ROUGE-L 1 for every item
    assert all(s.scores["rouge_l"].value == pytest.approx(1.0) for s in log.samples)


@pytest.mark.slow
def test_summeval_runs_offline_with_the_embedded_model(tmp_path: Path):
    """The task's defaults (every scorer, the model's summaries rewritten into judgments) on one
    demo article, in this process (the command line is tested on the ICLR task)."""
    [log] = run_eval(
        summeval(),
        model="smollm2/embedded",
        limit=1,
        max_tokens=96,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 1
    for sample in log.samples:
        gem_raw = sample.scores["gem_raw"]
        assert math.isfinite(gem_raw.value)
        signature = gem_raw.metadata["signature"]
        assert set(signature["prompts"]) == {
            "domains/summarization/gem/predict_system",
            "domains/summarization/gem/predict_user",
        }


@pytest.mark.slow
def test_robustness_runs_the_strategies_that_fit_a_domain_and_refuses_the_others(tmp_path):
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.samples import SPACE_DEMO, SUMMEVAL_DEMO
    from scorers.validation.perturbations.elongation import DOMAIN_FILLERS

    with pytest.raises(ValueError, match="'opinion_flip' is written for peer_review"):
        robustness(perturbation="opinion_flip", dataset=str(SUMMEVAL_DEMO), scorers="bleu")
    with pytest.raises(MetricError, match="gem_s applies to"):
        robustness(perturbation="sentence_deletion", dataset=str(SPACE_DEMO), scorers="gem_s")
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
    assert log.status == "success", log.error
    perturbed = log.samples[0].metadata["perturbed"]
    assert perturbed.endswith(DOMAIN_FILLERS["summarization"])
    assert "review" not in DOMAIN_FILLERS["summarization"]


@pytest.mark.slow
def test_a_perturbation_that_changes_nothing_is_unscored_with_why(tmp_path: Path):
    """Sentence deletion keeps a one-sentence answer whole: the pair would test nothing, so it
    is unscored with the reason, never scored as a zero difference (the items' three candidate
    answers are what is perturbed, each one sentence)."""
    from gem_tasks.tasks.robustness import robustness

    [log] = run_eval(
        robustness(
            perturbation="sentence_deletion",
            dataset=str(items_file(tmp_path)),
            scorers="rouge_l",
            references=1,
        ),
        model="none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == 9
    for sample in log.samples:
        assert sample.metadata["perturb_target"] == "existing candidates"
        score = sample.scores["rouge_l_paired"]
        assert score.metadata["perturb_target"] == "existing candidates"
        assert math.isnan(score.value)
        assert score.metadata["unscored_reason"] == "'sentence_deletion' left the text unchanged"


@pytest.mark.slow
def test_a_reply_that_does_not_do_what_was_asked_is_unscored_with_why(tmp_path: Path):
    """A chatty completion that loses the kept sentences is no deletion & completion of the
    summary: the pair is unscored with the reason, and the run goes on."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.samples import SUMMEVAL_DEMO

    chatty = ModelOutput.from_content("mockllm/model", "Here is the summary you asked for.")
    chatty.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)  # no tokenizer
    [log] = run_eval(
        robustness(
            perturbation="deletion_completion",
            dataset=str(SUMMEVAL_DEMO),
            scorers="rouge_l",
            references=1,
        ),
        model=get_model("mockllm/model", custom_outputs=[chatty] * 2),
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        score = sample.scores["rouge_l_paired"]
        assert math.isnan(score.value)
        assert "completion lost" in score.metadata["unscored_reason"]
        assert sample.metadata["llm_outputs"] == {"completion": chatty.completion}


@pytest.mark.slow
def test_an_llm_strategy_rewrites_a_summary_in_the_summary_wording(tmp_path: Path):
    """Ultra-concise compression on SummEval with the embedded model: the summary prompt is
    asked (its cap in words), the reply is the perturbed text, both are scored."""
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.samples import SUMMEVAL_DEMO

    [log] = run_eval(
        robustness(
            perturbation="ultra_concise",
            dataset=str(SUMMEVAL_DEMO),
            scorers="rouge_l",
            references=1,
        ),
        model="smollm2/embedded",
        limit=2,
        max_tokens=48,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    from inspect_ai.log import resolve_sample_attachments

    for sample in map(resolve_sample_attachments, log.samples):
        [event] = [e for e in sample.events if e.event == "model"]
        assert "You are given a summary of a news article" in event.input[0].text
        assert event.input[1].text == sample.metadata["original"]
        perturbed = sample.metadata["perturbed"]
        assert perturbed == sample.metadata["llm_outputs"]["rewrite"].strip()
        score = sample.scores["rouge_l_paired"]
        if " ".join(perturbed.split()) == " ".join(sample.metadata["original"].split()):
            # the 135M model often echoes the summary: a pair that tests nothing is unscored
            assert math.isnan(score.value)  # Inspect's unscored value
            assert "left the text unchanged" in score.metadata["unscored_reason"]
        else:
            assert math.isfinite(score.value["before"]) and math.isfinite(score.value["after"])


def test_random_replacement_stays_within_the_group(tmp_path: Path):
    from gem_tasks.tasks.robustness.robustness import robustness_dataset

    rows = [
        {
            "id": f"{group}{k}",
            "domain": "summarization",
            "group": group,
            "input": {"text": f"article {group}{k}", "synopsis": f"article {group}{k}"},
            "references": [{"text": f"{group}{k} one"}, {"text": f"{group}{k} two"}],
        }
        for group in ("a", "b")
        for k in range(3)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from scorers.data.task_data import TaskData

    samples = robustness_dataset(
        TaskData.load(path), perturbation="random_replacement", references=1, seed=0,
        max_paper_tokens=100,
    )  # fmt: skip
    for sample in samples:
        assert sample.metadata["other_paper_id"][0] == sample.id[0]  # same group
        assert sample.metadata["other_paper_id"] != sample.id


@pytest.mark.slow
def test_the_report_prints_the_rating_correlation_per_dataset(tmp_path: Path):
    from gem_tasks.analysis.report import write_report

    [log] = run_eval(
        judgments(dataset=str(items_file(tmp_path)), candidate="candidates", scorers="rouge_l"),
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    paths = write_report([tmp_path / "logs"], tmp_path / "report", progress=False)
    text = paths["markdown"].read_text()
    section = text.split("Table 3 layout)")[1]
    rho = log.results.scores[0].metrics["rho_mean_of_dimensions"].value
    assert f"| rouge_l | {rho:+.3f} (n 9) |" in section
    assert "items" in section.splitlines()[2]  # the dataset's column
    rated = __import__("pandas").read_csv(paths["ratings_correlation"])
    assert rated["rho_overall"].tolist() == pytest.approx([1.0])
