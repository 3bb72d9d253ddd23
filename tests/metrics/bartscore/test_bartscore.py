"""BARTScore through the evaluation LM: exactly the two summed log-probabilities of the App. C.2
prompt, in both directions, averaged over references."""

from __future__ import annotations

import pytest

from scorers import Item, Paper, Resources, Review, get_metric
from scorers.pmi import NOT_AVAILABLE, prediction_request

CANDIDATE = "The method is novel. The experiments use one seed only."
REFERENCES = ("The evaluation is too small.", "A clear paper with a novel idea.")


@pytest.mark.slow
def test_bartscore_is_the_summed_log_probabilities(tiny_lm, tmp_path):
    item = Item(
        paper=Paper(id="p"),
        candidate=CANDIDATE,
        references=tuple(Review(f"r{i}", t) for i, t in enumerate(REFERENCES))
        + (Review("blank", "  "),),
    )
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    expected = []
    for reference in REFERENCES:
        recall, precision = tiny_lm.target_logprobs(
            [
                prediction_request(
                    tiny_lm, synopsis=NOT_AVAILABLE, judgments=CANDIDATE, target=reference
                ),
                prediction_request(
                    tiny_lm, synopsis=NOT_AVAILABLE, judgments=reference, target=CANDIDATE
                ),
            ]
        )
        expected.append((recall.total, precision.total))
    values = {
        d: get_metric(f"bartscore_{d}").score(item, resources).value
        for d in ("recall", "precision", "f1")
    }
    assert values["recall"] == pytest.approx(sum(r for r, _ in expected) / 2, abs=1e-6)
    assert values["precision"] == pytest.approx(sum(p for _, p in expected) / 2, abs=1e-6)
    assert values["f1"] == pytest.approx((values["recall"] + values["precision"]) / 2, abs=1e-9)
    result = get_metric("bartscore_f1").score(item, resources)
    assert result.details["skipped_references"] == {"blank": "empty reference text"}
    assert result.signature.as_dict()["evaluation_lm"] == tiny_lm.identity
    assert result.signature.as_dict()["direction"] == "f1"


@pytest.mark.slow
def test_an_empty_candidate_is_unscored_with_its_reason(tiny_lm, tmp_path):
    item = Item(paper=Paper(id="p"), candidate=" ", references=(Review("r", "text"),))
    result = get_metric("bartscore_recall").score(
        item, Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    )
    assert result.value is None and "empty candidate" in result.reason


@pytest.mark.slow
def test_the_normalisation_is_the_gem_baselines_sum_and_recorded(tiny_lm, tmp_path):
    """The GEM authors' notebook sums the target's token log-probabilities (``query_logprob``);
    the original BARTScore averages per token. Sum is the default, ``normalisation=mean`` is
    the per-token variant, and the signature says which (the two never rank together)."""
    from scorers import MetricError

    item = Item(paper=Paper(id="p"), candidate=CANDIDATE, references=(Review("r", REFERENCES[0]),))
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    summed = get_metric("bartscore_recall").score(item, resources)
    per_token = get_metric("bartscore_recall", normalisation="mean").score(item, resources)
    [term] = per_token.terms
    assert summed.value == pytest.approx(term["recall_logprob_sum"])
    assert per_token.value == pytest.approx(term["recall_logprob_sum"] / term["reference_tokens"])
    assert term["reference_tokens"] > 1 and per_token.value > summed.value  # less negative
    f1 = get_metric("bartscore_f1", normalisation="mean").score(item, resources)
    assert f1.value == pytest.approx(
        (term["recall"] + term["precision_logprob_sum"] / term["candidate_tokens"]) / 2
    )
    assert summed.signature.normalisation.startswith("sum")
    assert per_token.signature.normalisation.startswith("mean")
    assert summed.signature.id != per_token.signature.id
    with pytest.raises(
        MetricError, match="option 'normalisation' must be 'sum' or 'mean', got 'max'"
    ):
        get_metric("bartscore_f1", normalisation="max")
