"""Binoculars (Beyond Rating M5): the score against an independent numpy computation of the
reference code's definition on a tiny random model pair, its masks, padding and cut, the
loader, and the br_binoculars metric (fields, mean, threshold, unscored cases, signature)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scorers import Item, Paper, Resources, get_metric
from scorers.errors import MetricError, SettingError
from scorers.metrics.binoculars import BinocularsMetric, ai_rate, family
from scorers.metrics.binoculars.detector import (
    ACCURACY_THRESHOLD,
    Binoculars,
    BinocularsScore,
    load_binoculars,
    load_causal_lm,
)
from scorers.registry import metric_spec

TEXTS = [
    "The paper proposes a new method for sparse attention and evaluates it on two benchmarks.",
    "Weak baselines.",
    "The ablation in Table 3 is convincing<|im_end|> but the theory section is hard to follow.",
]
REVIEW = (
    "<summary>The paper studies sparse attention for long documents.</summary>\n"
    "<strengths>The method is simple and the experiments cover three datasets.</strengths>\n"
    "<weaknesses>The baselines are old and the variance over seeds is not reported at all."
    "</weaknesses>"
)


def tiny_llama(seed: int, vocab_size: int = 49152):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=1024,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # sharper distributions than the default init, so terms differ
        model.lm_head.weight.mul_(40.0)
    return model


@pytest.fixture(scope="module")
def observer():
    return tiny_llama(1)


@pytest.fixture(scope="module")
def performer():
    return tiny_llama(2)


@pytest.fixture(scope="module")
def pair(observer, performer, tokenizer):
    return Binoculars(observer, performer, tokenizer, observer_identity="o", performer_identity="p")


def numpy_logits(model, ids: list[int]) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0].double().numpy()


def log_softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def brute_force(observer, performer, ids, pad_id, ppl_model="performer") -> tuple[float, float]:
    """The reference's ppl and x_ppl for one unpadded text, loop by loop in float64."""
    log_o = log_softmax(numpy_logits(observer, ids))
    log_p = log_softmax(numpy_logits(performer, ids))
    source = log_p if ppl_model == "performer" else log_o
    nll = [-source[t, ids[t + 1]] for t in range(len(ids) - 1)]
    cross = [
        -float(np.sum(np.exp(log_o[t]) * log_p[t])) for t in range(len(ids)) if ids[t] != pad_id
    ]
    return float(np.mean(nll)), float(np.mean(cross))


# -- the score --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ppl_model", ["performer", "observer"])
@pytest.mark.parametrize("text", TEXTS)
def test_the_score_is_the_reference_definition(observer, performer, tokenizer, text, ppl_model):
    """Including the T vs T-1 averaging and, for the third text, a token equal to the padding
    id inside the text (left out of x_ppl, kept in ppl, as the reference does)."""
    detector = Binoculars(observer, performer, tokenizer, ppl_model=ppl_model)
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    ppl, x_ppl = brute_force(observer, performer, ids, detector.pad_token_id, ppl_model)
    [got] = detector.score([text])
    assert got.tokens == len(ids) and not got.truncated
    assert got.ppl == pytest.approx(ppl, rel=1e-5)
    assert got.x_ppl == pytest.approx(x_ppl, rel=1e-5)
    assert got.score == pytest.approx(ppl / x_ppl, rel=1e-5)


@pytest.mark.slow
def test_the_padding_id_inside_a_text_is_left_out_of_x_ppl_only(pair, tokenizer):
    ids = tokenizer(TEXTS[2], add_special_tokens=False)["input_ids"]
    assert pair.pad_token_id in ids  # the premise of the reference-mask case above
    keep_all = Binoculars(pair.observer, pair.performer, tokenizer)
    keep_all.pad_token_id = -1  # a mask that drops nothing must give another x_ppl
    [masked], [unmasked] = pair.score([TEXTS[2]]), keep_all.score([TEXTS[2]])
    assert masked.ppl == pytest.approx(unmasked.ppl, rel=1e-9)
    assert abs(masked.x_ppl - unmasked.x_ppl) > 1e-4


@pytest.mark.slow
def test_with_one_model_as_both_x_ppl_is_the_mean_predictive_entropy(observer, tokenizer):
    detector = Binoculars(observer, observer, tokenizer)
    ids = tokenizer(TEXTS[0], add_special_tokens=False)["input_ids"]
    log_o = log_softmax(numpy_logits(observer, ids))
    entropy = float(np.mean(-(np.exp(log_o) * log_o).sum(axis=-1)))  # all T positions
    [got] = detector.score([TEXTS[0]])
    assert got.x_ppl == pytest.approx(entropy, rel=1e-5)


def test_a_padded_batch_gives_the_one_by_one_scores(pair):
    batched = pair.score(TEXTS)
    lengths = {s.tokens for s in batched}
    assert len(lengths) == len(TEXTS)  # different lengths: the batch is padded
    for text, together in zip(TEXTS, batched):
        [alone] = pair.score([text])
        assert together.ppl == pytest.approx(alone.ppl, rel=1e-5)
        assert together.x_ppl == pytest.approx(alone.x_ppl, rel=1e-5)
    one_row = Binoculars(pair.observer, pair.performer, pair.tokenizer, batch_size=1)
    assert [s.score for s in one_row.score(TEXTS)] == pytest.approx(
        [s.score for s in batched], rel=1e-5
    )


@pytest.mark.slow
def test_texts_are_cut_to_max_tokens(pair, observer, performer, tokenizer):
    rng = np.random.default_rng(0)
    words = ["method", "result", "table", "weak", "novel", "proof", "data", "claim", "but"]
    text = " ".join(rng.choice(words, size=700))
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert len(ids) > 512
    [got] = pair.score([text])
    assert (got.tokens, got.length, got.truncated) == (512, len(ids), True)
    [(ppl, x_ppl)] = pair.score_ids([ids[:512]])
    assert (got.ppl, got.x_ppl) == pytest.approx((ppl, x_ppl), rel=1e-6)
    [(full_ppl, _)] = pair.score_ids([ids])
    assert abs(full_ppl - got.ppl) > 1e-6  # the cut changes the number: it did happen
    short = Binoculars(observer, performer, tokenizer, max_tokens=16)
    [cut] = short.score([text])
    expected = brute_force(observer, performer, ids[:16], short.pad_token_id)
    assert cut.tokens == 16
    assert (cut.ppl, cut.x_ppl) == pytest.approx(expected, rel=1e-5)


@pytest.mark.slow
def test_no_special_tokens_are_added(tokenizer):
    class AddsBos:
        """SmolLM2's tokenizer adds nothing by itself: this one adds a BOS unless told not to."""

        pad_token_id, eos_token_id = tokenizer.pad_token_id, tokenizer.eos_token_id

        def __len__(self):
            return len(tokenizer)

        def __call__(self, text, add_special_tokens=True):
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            return {"input_ids": ([1] if add_special_tokens else []) + ids}

    rows = []
    detector = Binoculars(tiny_llama(3), tiny_llama(3), AddsBos())
    detector.score_ids = lambda batch: rows.extend(batch) or [(1.0, 1.0)] * len(batch)
    detector.score(["Hello there, reviewer."])
    assert rows == [tokenizer("Hello there, reviewer.", add_special_tokens=False)["input_ids"]]
    assert rows[0][0] != 1


@pytest.mark.slow
def test_the_two_models_must_share_a_vocabulary(observer, tokenizer):
    with pytest.raises(MetricError, match="one vocabulary.*49152.*49160"):
        Binoculars(observer, tiny_llama(4, vocab_size=49160), tokenizer)
    with pytest.raises(MetricError, match="more than the models' vocabulary"):
        Binoculars(tiny_llama(4, 1000), tiny_llama(5, 1000), tokenizer)


def test_a_text_of_one_token_is_refused(pair):
    with pytest.raises(ValueError, match="fewer than 2 tokens"):
        pair.score(["Fine", TEXTS[0]])


# -- loading ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_loader_reads_folders_once_and_checks_the_tokenizers(tmp_path, tokenizer):
    folders = {}
    for name, seed in (("a", 6), ("b", 7)):
        folders[name] = tmp_path / name
        tiny_llama(seed).save_pretrained(folders[name])
        tokenizer.save_pretrained(folders[name])
    detector = load_binoculars(str(folders["a"]), str(folders["b"]))
    assert detector.observer_identity.endswith("@local:float32")
    assert str(folders["b"].resolve()) in detector.performer_identity
    assert detector.observer is load_causal_lm(str(folders["a"])).model  # loaded once
    assert load_binoculars(str(folders["a"]), str(folders["b"])) is detector
    assert not detector.observer.training
    [score] = detector.score([TEXTS[0]])
    assert math.isfinite(score.score)

    other = tmp_path / "c"
    tiny_llama(8).save_pretrained(other)
    extended = type(tokenizer).from_pretrained(str(folders["a"]))
    extended.add_tokens(["<gem_tasks_extra_token>"])
    extended.save_pretrained(other)
    with pytest.raises(MetricError, match="one tokenizer"):
        load_binoculars(str(folders["a"]), str(other))


@pytest.mark.slow
def test_a_hub_id_that_cannot_be_fetched_is_a_clear_error():
    with pytest.raises(
        SettingError,
        match="the Binoculars model: 'gem-tasks-test/no-such-model-anywhere' is not in the local "
        "Hugging Face cache and the Hub is offline",
    ):
        load_causal_lm("gem-tasks-test/no-such-model-anywhere")


# -- the metric -------------------------------------------------------------------------------


def item(candidate: str) -> Item:
    return Item(paper=Paper(id="p"), candidate=candidate, references=())


@pytest.fixture()
def tiny_metric(monkeypatch, observer, performer, tokenizer):
    """br_binoculars over the tiny pair (the loader is replaced; options still reach it)."""

    def loader(obs, perf, *, dtype, device, max_tokens, ppl_model):
        return Binoculars(
            observer,
            performer,
            tokenizer,
            observer_identity=f"{obs}:float32",
            performer_identity=f"{perf}:float32",
            max_tokens=max_tokens,
            ppl_model=ppl_model,
        )

    monkeypatch.setattr(family, "load_binoculars", loader)

    def build(**options):
        return get_metric("br_binoculars", **options)

    return build


def test_the_metric_is_registered_with_its_defaults():
    spec = metric_spec("br_binoculars")
    assert (spec.display_name, spec.family, spec.higher_is_better) == (
        "Binoculars score",
        "binoculars",
        True,
    )
    assert spec.needs == frozenset()
    assert spec.defaults["observer"] == "tiiuae/falcon-7b"
    assert spec.defaults["performer"] == "tiiuae/falcon-7b-instruct"
    assert spec.defaults["threshold"] == 0.9015310749276843 == ACCURACY_THRESHOLD
    assert (spec.defaults["ppl_model"], spec.defaults["max_tokens"]) == ("performer", 512)
    assert spec.corpus == {"ai_rate": ai_rate}


def test_the_threshold_is_calibrated_only_for_the_reference_setup():
    assert get_metric("br_binoculars").calibrated
    assert get_metric("br_binoculars", observer="hf/tiiuae/falcon-7b").calibrated
    assert not get_metric("br_binoculars", observer="embedded", performer="embedded").calibrated
    assert not get_metric("br_binoculars", threshold=0.95).calibrated
    assert not get_metric("br_binoculars", ppl_model="observer").calibrated


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"ppl_model": "both"}, "'ppl_model' must be 'performer' or 'observer'"),
        ({"max_tokens": 1}, "'max_tokens' must be at least 2, got 1"),
        ({"max_tokens": "512"}, "'max_tokens' must be int, got '512'"),
        ({"threshold": "high"}, "'threshold' must be float, got 'high'"),
        ({"threshold": float("nan")}, "'threshold' must be finite"),
        ({"observer": ""}, "'observer' must be a model spec"),
        ({"dtype": "int8"}, "'dtype' must be 'auto' or one of"),
    ],
)
def test_bad_options_are_clear_errors(options, message):
    with pytest.raises(MetricError, match=message):
        get_metric("br_binoculars", **options)


@pytest.mark.slow
def test_the_value_is_the_mean_of_the_fields_present(tiny_metric, pair):
    result = tiny_metric(observer="embedded", performer="embedded").score(item(REVIEW), Resources())
    texts = {
        "summary": "The paper studies sparse attention for long documents.",
        "strengths": "The method is simple and the experiments cover three datasets.",
        "weaknesses": "The baselines are old and the variance over seeds is not reported at all.",
    }
    alone = {name: pair.score([text])[0].score for name, text in texts.items()}
    assert len(set(np.round(list(alone.values()), 6))) == 3  # distinct, so the mean is tested
    assert result.value == pytest.approx(np.mean(list(alone.values())), rel=1e-6)
    d = result.details
    assert d["n_fields"] == 3 and set(d["per_field"]) == set(texts)
    assert d["per_field"] == pytest.approx(alone, rel=1e-6)
    assert d["skipped_fields"] == {"questions": "missing"}
    assert d["ai_generated"] == (result.value < ACCURACY_THRESHOLD)
    assert d["per_field_ai"] == {n: b < ACCURACY_THRESHOLD for n, b in d["per_field"].items()}
    assert not d["whole_text"] and d["truncated_fields"] == []
    signature = result.signature.as_dict()
    assert signature["observer"] == "embedded:float32"
    assert signature["threshold_calibrated"] is False and "uncalibrated" in result.explanation


@pytest.mark.slow
def test_a_value_at_the_threshold_is_human_and_just_below_is_ai(tiny_metric):
    review = "<summary>The paper studies sparse attention for long documents.</summary>"
    value = tiny_metric().score(item(review), Resources()).value
    at = tiny_metric(threshold=value).score(item(review), Resources())
    above = tiny_metric(threshold=float(np.nextafter(value, math.inf))).score(
        item(review), Resources()
    )
    assert at.value == value == above.value
    assert at.details["ai_generated"] is False and at.details["per_field_ai"]["summary"] is False
    assert above.details["ai_generated"] is True and above.details["per_field_ai"]["summary"]


class FixedPair:
    """A pair whose scores are given: every field scores ``value``."""

    observer_identity = performer_identity = "fixed:float32"

    def __init__(self, value: float) -> None:
        self.value = value

    def token_counts(self, texts):
        return [len(t.split()) for t in texts]

    def score(self, texts):
        return [BinocularsScore(self.value, self.value, 1.0, 5, 5) for _ in texts]

    def score_cached(self, texts, cache):
        return self.score(texts)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("value", "ai"),
    [
        (ACCURACY_THRESHOLD, False),
        (float(np.nextafter(ACCURACY_THRESHOLD, 0.0)), True),
        (0.9016, False),
        (0.9015, True),  # 0.9015 < 0.90153...: the default threshold is the reference's float
    ],
)
def test_the_default_threshold_edges(monkeypatch, value, ai):
    monkeypatch.setattr(family, "load_binoculars", lambda *a, **k: FixedPair(value))
    review = "<summary>The paper studies sparse attention for long documents.</summary>"
    result = get_metric("br_binoculars").score(item(review), Resources())
    assert result.value == value
    assert result.details["ai_generated"] is ai
    assert result.details["threshold_calibrated"] is True
    assert result.signature.as_dict()["threshold_calibrated"] is True
    assert ai_rate([result.metadata()]) == float(ai)  # what the harness hands the corpus number


@pytest.mark.slow
@pytest.mark.parametrize("candidate", ["", "   \n\t"])
def test_an_empty_candidate_is_unscored(tiny_metric, candidate):
    result = tiny_metric().score(item(candidate), Resources())
    assert result.value is None and "empty candidate" in result.reason
    assert result.details["flags"] == ["empty_candidate"]


@pytest.mark.slow
def test_fields_that_are_all_empty_leave_the_review_unscored(tiny_metric):
    result = tiny_metric().score(item("<summary> </summary>\n<questions></questions>"), Resources())
    assert result.value is None and "no text field to score" in result.reason
    assert result.details["skipped_fields"]["summary"] == "empty"


@pytest.mark.slow
def test_a_one_token_field_is_left_out_with_its_reason(tiny_metric, pair):
    review = (
        "<summary>Fine</summary>\n<strengths>The method is simple and well motivated.</strengths>"
    )
    result = tiny_metric().score(item(review), Resources())
    assert "at least 2" in result.details["skipped_fields"]["summary"]
    assert result.details["n_fields"] == 1
    [alone] = pair.score(["The method is simple and well motivated."])
    assert result.value == pytest.approx(alone.score, rel=1e-6)


@pytest.mark.slow
def test_a_review_without_fields_is_scored_as_one_text(tiny_metric, pair):
    text = "  A solid paper overall. The experiments are thorough, yet the writing is dense.\n"
    result = tiny_metric().score(item(text), Resources())
    assert result.details["whole_text"] is True and result.details["layout"] == "whole_text"
    assert list(result.details["per_field"]) == ["text"]
    assert result.value == pytest.approx(pair.score([text.strip()])[0].score, rel=1e-6)
    assert "whole text scored" in result.explanation


@pytest.mark.slow
def test_a_combined_strengths_and_weaknesses_section_is_one_field(tiny_metric):
    review = (
        "Summary Of The Paper: The paper studies sparse attention.\n"
        "Strength And Weaknesses: Clear writing, but the baselines are weak.\n"
    )
    result = tiny_metric().score(item(review), Resources())
    assert set(result.details["per_field"]) == {"summary", "strengths_and_weaknesses"}


@pytest.mark.slow
def test_a_long_field_is_cut_and_listed(tiny_metric):
    review = "<summary>" + " ".join(["the method works well"] * 20) + "</summary>"
    result = tiny_metric(max_tokens=16).score(item(review), Resources())
    assert result.details["truncated_fields"] == ["summary"]
    assert result.details["fields"][0]["tokens"] == 16
    assert result.signature.as_dict()["max_tokens"] == 16


def test_the_ai_rate_is_the_share_of_flagged_reviews():
    rows = [{"ai_generated": True}, {"ai_generated": False}, {"ai_generated": False}]
    assert ai_rate(rows + [{"unscored_reason": "empty candidate"}]) == pytest.approx(1 / 3)
    assert math.isnan(ai_rate([]))
    with pytest.raises(MetricError, match="ai_generated"):
        ai_rate([{"value": 1.0}])


@pytest.mark.slow
def test_the_embedded_model_as_both_runs_end_to_end():
    metric = get_metric("br_binoculars", observer="embedded", performer="embedded")
    assert isinstance(metric, BinocularsMetric)
    result = metric.score(item(REVIEW), Resources())
    assert result.value is not None and 0.3 < result.value < 3.0
    assert result.value == pytest.approx(np.mean(list(result.details["per_field"].values())))
    for field in result.details["fields"]:
        assert field["x_ppl"] > 0 and field["ppl"] > 0
    signature = result.signature.as_dict()
    assert "SmolLM2" in signature["observer"] and signature["observer"].endswith(":float32")
    assert signature["observer"] == signature["performer"]
    assert signature["threshold_calibrated"] is False
    pair = load_binoculars("embedded", "embedded")
    assert pair.observer is pair.performer  # one model, loaded once, run once per batch


@pytest.mark.slow
def test_scores_go_through_the_score_cache(tiny_metric, tmp_path):
    """Each field's (ppl, x_ppl) is stored in the one score cache under the pair's identities
    and the tokens scored: a rerun computes nothing and gives the same number, and another
    ppl_model is another entry."""
    review = (
        "<summary>The paper studies sparse attention.</summary>"
        "<strengths>The method is simple.</strengths>"
    )
    resources = Resources(cache_dir=tmp_path)
    first = tiny_metric().score(item(review), resources)
    stats = resources.cache.stats
    assert (stats["value_miss"], stats["value_hit"]) == (2, 0)
    again = tiny_metric().score(item(review), Resources(cache_dir=tmp_path))
    assert again.value == first.value and again.details["fields"] == first.details["fields"]
    assert (stats["value_miss"], stats["value_hit"]) == (2, 2)
    other = tiny_metric(ppl_model="observer").score(item(review), resources)
    assert stats["value_miss"] == 4 and other.value != first.value
