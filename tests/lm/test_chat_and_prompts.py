"""Prompt templates and the exact token split of the prediction prompt."""

from __future__ import annotations

import jinja2
import jinja2.meta
import pytest

import prompts
from scorers.lm.chat import ChatRenderError, build_scoring_request
from scorers.pmi import NOT_AVAILABLE, prediction_messages

SYSTEM_C2 = (
    "You are the second reviewer for a scientific paper. You are given the abstract of the paper "
    "and a list of review judgments from the first reviewer, starting with 'The reviewer "
    "appreciates/criticizes/questions/suggests'. Your task is to provide your own judgments of the "
    "paper based on the given materials. You should create a separate line for each judgment you "
    "have, starting with 'The reviewer appreciates/criticizes/questions/suggests'. Ensure your "
    "judgments are concise, excluding specific details about the paper's content."
)


def test_every_template_is_strict_about_its_variables():
    environment = jinja2.Environment()
    for name in prompts.available():
        source = (prompts.PROMPTS_DIR / f"{name}.jinja").read_text()
        variables = jinja2.meta.find_undeclared_variables(environment.parse(source))
        if variables:
            with pytest.raises(jinja2.UndefinedError):
                prompts.render(name)
            # every variable reaches the text (some, like a scale's range, more than once)
            rendered = prompts.render(name, **{v: f"<<{v}>>" for v in variables})
            assert all(f"<<{v}>>" in rendered for v in variables), name
        else:
            assert prompts.render(name).strip()
            assert "{#" not in prompts.render(name)  # the citation header is a comment


def test_templates_hold_the_papers_prompts_verbatim():
    assert prompts.render("gem/predict_system") == SYSTEM_C2
    assert prompts.render("gem/preprocess_system").startswith(
        "Carefully read the text of a scientific paper review."
    )
    assert prompts.render("review/system").endswith(
        "justify your points carefully with reference to the content of the paper."
    )
    assert "</strengths_claimed_by_the_paper>" in prompts.render("gem/assw_system")


def test_scored_text_is_a_variable_not_template_source():
    tricky = "The reviewer criticizes {{ synopsis }} and {% raw %} blocks"
    rendered = prompts.render("gem/predict_user", synopsis="S", judgments=tricky)
    assert rendered == (
        "[Abstract of the paper]\n\nS\n\n[Review judgments from the first reviewer]\n\n" + tricky
    )


def test_unknown_template_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown prompt template"):
        prompts.render("nope")


@pytest.mark.slow
def test_prediction_prompt_tokens_are_exactly_the_app_c2_structure(tokenizer):
    x = "The reviewer appreciates the clear writing.\nThe reviewer criticizes the small datasets."
    y = "The reviewer questions the scalability.\nThe reviewer suggests more baselines."
    request = build_scoring_request(
        tokenizer, prediction_messages(synopsis=NOT_AVAILABLE, judgments=x), y
    )
    expected_context = (
        f"<|im_start|>system\n{SYSTEM_C2}<|im_end|>\n"
        "<|im_start|>user\n[Abstract of the paper]\n\nNot available\n\n"
        f"[Review judgments from the first reviewer]\n\n{x}<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    assert tokenizer.decode(list(request.context_ids)) == expected_context
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert list(request.target_ids) == tokenizer(y, add_special_tokens=False)["input_ids"] + [
        im_end
    ]
    # the same ids as the authors' notebook: one tokenisation of the whole chat
    full = tokenizer.apply_chat_template(
        [
            *prediction_messages(synopsis=NOT_AVAILABLE, judgments=x),
            {"role": "assistant", "content": y},
        ],
        tokenize=True,
    )["input_ids"]
    assert list(request.context_ids) + list(request.target_ids) == full[: len(full) - 1]
    assert full[-1] == tokenizer("\n", add_special_tokens=False)["input_ids"][0]


@pytest.mark.slow
def test_empty_target_and_missing_template_are_errors(tokenizer):
    with pytest.raises(ChatRenderError, match="empty"):
        build_scoring_request(tokenizer, [{"role": "user", "content": "u"}], "  ")

    class NoTemplate:
        chat_template = None

    with pytest.raises(ChatRenderError, match="no chat template"):
        build_scoring_request(NoTemplate(), [{"role": "user", "content": "u"}], "y")


def test_retry_settings_sample_a_greedy_retry_and_change_the_seed():
    from scorers.lm.base import GenerationSettings, retry_settings

    greedy = GenerationSettings(max_new_tokens=8, seed=3)
    assert retry_settings(greedy, 0) is greedy
    first_retry = retry_settings(greedy, 1)
    assert (first_retry.seed, first_retry.temperature, first_retry.max_new_tokens) == (4, 0.7, 8)
    assert retry_settings(greedy, 2, temperature=1.0).temperature == 1.0
    sampled = GenerationSettings(temperature=0.3)
    assert retry_settings(sampled, 1).temperature == 0.3  # a sampled call keeps its temperature
    assert retry_settings(greedy, 1).key() != greedy.key()  # never the cached reply again
