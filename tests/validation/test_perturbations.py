"""Degradation and manipulation strategies (scorers.validation.perturbations): exact outputs of
the rule-based ones (the GEM paper's toy examples included), the exact conversations of the
LLM-based ones and the parsing of recorded answers. No model is loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

import prompts
from conftest import FunctionGenerator
from scorers.lm.threads import run_sync
from scorers.validation.perturbations import (
    ELONGATION_FILLERS,
    GAMING,
    MISSING_SENTENCE,
    PERTURB_SETTINGS,
    PERTURBATIONS,
    PaperContext,
    apply_perturbation,
    llm_requests,
    run_perturbation,
)

# --------------------------------------------------------------------------- the papers' texts

# GEM paper App. D.1.1-D.2.2 toy review ("Before Deletion" / "Before Manipulation")
TOY = (
    "Summary Of The Paper:\n\n"
    "This is the first sentence. This is the second sentence. This is the third sentence.\n\n"
    "Strengths And Weaknesses:\n\n"
    "This is the first sentence. This is the second sentence. This is the third sentence. "
    "This is the fourth sentence.\n\n"
    "Clarity, Quality, Novelty And Reproducibility:\n\n"
    "This is the first sentence.\n\n"
    "Summary Of The Review:\n\n"
    "This is the first sentence. This is the second sentence."
)

# App. D.1.1 "After Deletion"
TOY_AFTER_DELETION = (
    "Summary Of The Paper:\n\n"
    "This is the first sentence. This is the third sentence.\n\n"
    "Strengths And Weaknesses:\n\n"
    "This is the first sentence. This is the third sentence.\n\n"
    "Clarity, Quality, Novelty And Reproducibility:\n\n"
    "This is the first sentence.\n\n"
    "Summary Of The Review:\n\n"
    "This is the first sentence."
)

# App. D.1.2 "After Deletion" (the paper's text drops the period of "the third sentence" in the
# first section; the kept sentence is the original one, period included)
TOY_MASKED = (
    "Summary Of The Paper:\n\n"
    "This is the first sentence. [There is one missing sentence] This is the third sentence.\n\n"
    "Strengths And Weaknesses:\n\n"
    "This is the first sentence. [There is one missing sentence] This is the third sentence. "
    "[There is one missing sentence]\n\n"
    "Clarity, Quality, Novelty And Reproducibility:\n\n"
    "This is the first sentence.\n\n"
    "Summary Of The Review:\n\n"
    "This is the first sentence. [There is one missing sentence]"
)

# App. D.1.2 system prompt (= the authors' task_iclr23/prompt/complete_review.txt)
COMPLETE_REVIEW = (
    "You are tasked with completing missing sentences of a peer review evaluation given by the "
    "user while keeping all its existing sentences. Your goal is to complete all missing "
    "sentences indicated by [There is one missing sentence] of this peer review evaluation, "
    "following these rules:\n"
    "\n"
    "- Insert new sentences that don't contribute significant information.\n"
    "- Place these sentences between existing sentences where they seem most natural.\n"
    "- Keep the overall language style similar.\n"
    "- Ensure these added sentences don't contradict or substantially alter the original "
    "content.\n"
    "\n"
    "Remember to maintain the essence and order of the original content while completing all "
    "missing sentences indicated by [There is one missing sentence]."
)

# App. D.1.3 system prompt (= get_abstract_review.txt)
ABSTRACT_REVIEW = (
    "You are given an abstract of a paper submission for a top-tier Machine Learning "
    "conference. You need to write a detailed peer review of the paper with only the abstract. "
    "Please read the abstract carefully. Once you have finished reading, please provide the "
    "following in your review:\n"
    "\n"
    'First, write a concise summary of the key points and contributions of the paper in "Summary '
    'Of The Paper" section.\n'
    "\n"
    'Next, in the "Strength And Weaknesses" section, think critically about the strengths and '
    "weaknesses of the submission. Give a numbered list of at least 4 key reasons why this paper "
    "should potentially be accepted to the conference. For each reason, use sub-bullet points to "
    "provide detailed arguments and evidence from the paper to support that reason. Then, give a "
    "numbered list of at least 4 key reasons why this paper should potentially be rejected from "
    "the conference. Again, for each reason, use sub-bullet points to provide detailed arguments "
    "and evidence from the paper to support that reason. After weighing the reasons for and "
    "against, think of some questions you have about the work.\n"
    "\n"
    'Then, finish the "Clarity, Quality, Novelty And Reproducibility" and "Summary Of The Review" '
    "sections.\n"
    "\n"
    "Remember, as a reviewer your job is to rigorously evaluate the strengths and weaknesses of "
    "the work and to provide critical but constructive feedback to the authors. Be thorough, "
    "specific and detailed in your arguments and feedback. Highlight both the positives and "
    "negatives you see, and justify your points carefully with reference to the content of the "
    "paper."
)

# App. D.2.1 system prompt (= restate_review.txt, its trailing spaces included)
RESTATE_REVIEW = (
    "You are tasked with rewriting a peer review evaluation. You should follow these "
    "guidelines: \n"
    "\n"
    "1. Maintain the overall structure and organization of the review.\n"
    "2. Improve the writing and make the language more natural and native-sounding. \n"
    "3. Correct any grammatical errors or awkward phrasing. \n"
    "\n"
    "Remember to maintain the overall structure and content of the original review, but aim to "
    "enhance its readability and fluency."
)

# App. D.2.2 summary prompts (= get_review_strength.txt, get_review_weakness.txt)
REVIEW_STRENGTH = (
    "You are given a peer review of a scientific paper, please identify two key strengths of the "
    "scientific paper from the review in a single, concise line, using two phrases separated by "
    "'and'."
)
REVIEW_WEAKNESS = REVIEW_STRENGTH.replace("key strengths", "key weaknesses")

# App. D.2.2 "After Manipulation", with the LLM summaries of the recorded answers below. The
# paper's text drops the colon of the last header; headers are kept unchanged.
RECORDED_STRENGTHS = "  a novel objective and strong empirical results.\n"
RECORDED_WEAKNESSES = "limited baselines and\nunclear notation"
TOY_ELONGATED = (
    "Summary Of The Paper:\n\n"
    "This section provides an overview of the key contributions, methodologies, and findings "
    "presented in the paper. It summarizes the main arguments and highlights the scope and "
    "significance of the research conducted. Specifically, This is the first sentence. This is "
    "the second sentence. This is the third sentence.\n\n"
    "Strengths And Weaknesses:\n\n"
    "In this section, I will discuss the strengths and weaknesses of the paper, focusing on its "
    "contributions to the field, methodological rigor, and areas where improvements could be "
    "made. The aim is to provide constructive feedback that can help enhance the quality of the "
    "work. This paper has several notable strengths, including a novel objective and strong "
    "empirical results. However, there are some areas that could be improved, such as limited "
    "baselines and unclear notation. Specifically, I discuss the strengths and weaknesses of the "
    "paper as following.\n\n"
    "This is the first sentence. This is the second sentence. This is the third sentence. This "
    "is the fourth sentence.\n\n"
    "Clarity, Quality, Novelty And Reproducibility:\n\n"
    "I will evaluate the clarity of the paper's presentation, the quality of the research, the "
    "novelty of the findings, and the reproducibility of the experiments. This assessment will "
    "address whether the research is presented in a clear and coherent manner, offers new "
    "insights, and can be replicated based on the provided information. This is the first "
    "sentence.\n\n"
    "Summary Of The Review:\n\n"
    "This summary encapsulates the main points of the review, reflecting on the paper's "
    "contributions, strengths, and areas for improvement. It provides a balanced overview of the "
    "paper's impact and offers final recommendations for the authors. This is the first "
    "sentence. This is the second sentence."
)

# Scoring Rules paper App. A, Tables 6-7: no prompt printed; ours, written from the descriptions
_TAIL = "Output only the rewritten review, without any preamble or commentary."
_INTRO = "You are given a peer review of a scientific paper."
WRITTEN_PROMPTS = {
    "opinion_flip": f"{_INTRO} Rewrite the review so that its overall evaluative verdict is "
    "reversed (e.g., accept → reject, positive → negative), while preserving the surface "
    f"structure and topical vocabulary of the original review. {_TAIL}",
    "positive_shift": f"{_INTRO} Rewrite the review to preserve its structure and coverage while "
    "systematically shifting its stance toward more favorable sentiment. Do not add any new "
    f"information about the paper. {_TAIL}",
    "negative_shift": f"{_INTRO} Rewrite the review to preserve its structure and coverage while "
    "systematically shifting its stance toward less favorable sentiment. Do not add any new "
    f"information about the paper. {_TAIL}",
    "hedged_shift": f'{_INTRO} Rewrite its claims as hedged, noncommittal statements (e.g., "the '
    'method is effective" → "the method may have some merit"), flattening the evaluative signal '
    f"without changing the topical content. Do not add any new information about the paper. "
    f"{_TAIL}",
    "strong_shift": f"{_INTRO} Rewrite the review, amplifying all of its claims to their "
    'strongest possible form (e.g., "a reasonable approach" → "a groundbreaking contribution"), '
    "without changing the topical content. Do not add any new information about the paper. "
    f"{_TAIL}",
}


def ultra_concise_prompt(max_words: int) -> str:
    return (
        f"{_INTRO} Summarize the review under a severe length cap: use at most {max_words} words, "
        "about 10% of the length of the original review, so that specific evidence and caveats "
        "must be dropped. Output only the summary, without any preamble or commentary."
    )


REVIEW = "The method is sound. The evaluation is {{ thin }}; I lean to reject {% if x %}."
BRACES = "Braces {{ thin }} and {% if x %} stay text."

RULE_BASED = {
    "sentence_deletion", "judgment_deletion", "random_replacement", "elongation_fixed", *GAMING,
}  # fmt: skip
REWRITES = {"rephrase", "rephrase_reorganize", "ultra_concise", *WRITTEN_PROMPTS}
LLM_BASED = {"deletion_completion", "surface_report", "meaningless_elongation", *REWRITES}


def system_user(conversation: list[dict[str, str]]) -> tuple[str, str]:
    assert [m["role"] for m in conversation] == ["system", "user"]
    return conversation[0]["content"], conversation[1]["content"]


# --------------------------------------------------------------------------- the catalogue


def test_every_strategy_is_specified_and_tested():
    assert set(PERTURBATIONS) == RULE_BASED | LLM_BASED
    for name, spec in PERTURBATIONS.items():
        assert spec.name == name and spec.source and spec.description
        assert spec.expected == ("decrease" if spec.kind == "degradation" else "no_increase")
        assert spec.uses_llm == (name in LLM_BASED)
        requests = llm_requests(name, TOY, paper=PaperContext(abstract="An abstract."))
        assert bool(requests) == spec.uses_llm


def test_every_strategy_is_its_own_class():
    """One Perturbation subclass per strategy, holding its name and classification."""
    from scorers.validation.perturbations import Perturbation

    classes = [type(strategy) for strategy in PERTURBATIONS.values()]
    assert len(set(classes)) == len(classes) == len(PERTURBATIONS)
    for name, strategy in PERTURBATIONS.items():
        assert isinstance(strategy, Perturbation) and type(strategy).name == name
        assert name in repr(strategy)


def test_classification_follows_the_papers():
    degradations = {
        "sentence_deletion", "judgment_deletion", "random_replacement", "deletion_completion",
        "surface_report", "ultra_concise", "opinion_flip",
    }  # fmt: skip
    assert {n for n, s in PERTURBATIONS.items() if s.kind == "degradation"} == degradations
    assert {n for n, s in PERTURBATIONS.items() if s.level == "judgments"} == {"judgment_deletion"}
    for name in ("ultra_concise", "opinion_flip", *WRITTEN_PROMPTS):
        assert "not verbatim" in PERTURBATIONS[name].source


def test_module_does_not_import_inspect():
    code = "import sys, scorers.validation.perturbations; assert 'inspect_ai' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_templates_cite_their_source():
    names = [n for n in prompts.available() if n.startswith("perturb/")]
    assert len(names) == 13
    for name in names:
        source = (prompts.PROMPTS_DIR / f"{name}.jinja").read_text()
        assert source.startswith("{#-") and "paper" in source.split("-#}")[0]
        assert "Appendix" in source.split("-#}")[0]
    for name in ("ultra_concise", "opinion_flip", *WRITTEN_PROMPTS):
        source = (prompts.PROMPTS_DIR / f"perturb/{name}_system.jinja").read_text()
        assert "NOT VERBATIM" in source


# --------------------------------------------------------------------------- rule-based


def test_sentence_deletion_reproduces_the_gem_toy_example():
    assert apply_perturbation("sentence_deletion", TOY) == TOY_AFTER_DELETION
    assert apply_perturbation("sentence_deletion", TOY + "\n") == TOY_AFTER_DELETION + "\n"


def test_sentence_deletion_on_a_realistic_review():
    review = (
        "Summary Of The Paper:\n\n"
        "The paper adds 3.5x more data (see arXiv.org). Results improve!\n\n"
        "Strength And Weaknesses:\n\n"
        "S:\n"
        "1. Simple method.\n"
        "2. Strong results on ImageNet.\n"
        "   - Fig. 2 is convincing? Mostly.\n"
        "W:\n\n"
        "Weak baselines. No ablation.\n\n"
        "Why not compare to X?\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\n"
        "**Clarity:**\n"
        "Clear (mostly). Code is released.\n\n"
        "Summary Of The Review:\n"
        "Borderline accept."
    )
    expected = (
        "Summary Of The Paper:\n\n"
        "The paper adds 3.5x more data (see arXiv.org).\n\n"
        "Strength And Weaknesses:\n\n"
        "S:\n"
        "2. Strong results on ImageNet.\n"
        "   Mostly.\n\n"
        "Weak baselines.\n\n"
        "Why not compare to X?\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\n"
        "**Clarity:**\n"
        "Clear (mostly).\n\n"
        "Summary Of The Review:\n"
        "Borderline accept."
    )
    assert apply_perturbation("sentence_deletion", review) == expected


def test_sentence_deletion_without_sections_and_with_tags():
    # (a lone capital with a dot is an initial, not a sentence: "A. B." is one sentence)
    review = (
        "<summary>\nOne. Two? Three! Four\nFive\n</summary>\n<strengths>\nAlpha. Beta.\n"
        "</strengths>"
    )
    assert apply_perturbation("sentence_deletion", review) == (
        "<summary>\nOne. Three!\nFive\n</summary>\n<strengths>\nAlpha.\n</strengths>"
    )
    assert apply_perturbation("sentence_deletion", "Only one sentence.") == "Only one sentence."
    abbreviations = "We follow Smith et al. and use e.g. dropout (cf. Eq. 3). It works. Fine."
    assert apply_perturbation("sentence_deletion", abbreviations) == (
        "We follow Smith et al. and use e.g. dropout (cf. Eq. 3). Fine."
    )
    assert apply_perturbation("sentence_deletion", "A.\r\n\r\nB.\r\n\r\nC.") == "A.\n\nC."


def test_judgment_deletion_keeps_every_other_judgment():
    judgments = (
        "The reviewer appreciates the clear writing.\n"
        "The reviewer criticizes the weak baselines.\n"
        "  The reviewer questions the choice of datasets.\n"
        "The reviewer suggests an ablation study.\n"
        "The reviewer appreciates the released code.\n"
    )
    assert apply_perturbation("judgment_deletion", judgments) == (
        "The reviewer appreciates the clear writing.\n"
        "The reviewer questions the choice of datasets.\n"
        "The reviewer appreciates the released code."
    )
    single = "The reviewer appreciates the idea."
    assert apply_perturbation("judgment_deletion", single) == single


def test_judgment_deletion_keeps_a_blank_line_layout():
    release = (  # the GEM release separates judgments by blank lines
        "The reviewer appreciates A.\n\nThe reviewer criticizes B.\n\nThe reviewer suggests C.\n"
    )
    assert apply_perturbation("judgment_deletion", release) == (
        "The reviewer appreciates A.\n\nThe reviewer suggests C."
    )


def test_random_replacement_returns_the_other_review():
    other = "Summary Of The Paper:\n\nA different paper."
    assert apply_perturbation("random_replacement", TOY, other_text=other) == other
    with pytest.raises(ValueError, match="needs other_text"):
        apply_perturbation("random_replacement", TOY)
    with pytest.raises(ValueError, match="needs other_text"):
        apply_perturbation("random_replacement", TOY, other_text="  ")
    with pytest.raises(ValueError, match="the review itself"):
        apply_perturbation("random_replacement", TOY, other_text=TOY + "\n")


def test_rule_based_strategies_ignore_llm_arguments():
    for name in ("sentence_deletion", "judgment_deletion"):
        plain = apply_perturbation(name, TOY)
        assert apply_perturbation(name, TOY, other_text="x", llm_outputs={"a": "b"}) == plain
        assert llm_requests(name, TOY, paper=PaperContext(abstract="An abstract.")) == {}


# --------------------------------------------------------------------------- LLM-based


def test_deletion_completion_masks_every_other_sentence_then_asks_to_complete():
    [(key, conversation)] = llm_requests("deletion_completion", TOY).items()
    assert key == "completion"
    system, user = system_user(conversation)
    assert system == COMPLETE_REVIEW
    assert user == TOY_MASKED
    completed = TOY_MASKED.replace(MISSING_SENTENCE, "It is filler.")
    answer = {"completion": f"\n{completed}  "}
    assert apply_perturbation("deletion_completion", TOY, llm_outputs=answer) == completed
    with pytest.raises(ValueError, match=r"left 1 gap\(s\)"):
        apply_perturbation(
            "deletion_completion", TOY, llm_outputs={"completion": f"A. {MISSING_SENTENCE}"}
        )


def test_surface_report_writes_from_the_abstract():
    abstract = "We propose {{ X }}, a method."
    paper = PaperContext(abstract=abstract)
    [(key, conversation)] = llm_requests("surface_report", TOY, paper=paper).items()
    assert key == "report"
    assert system_user(conversation) == (ABSTRACT_REVIEW, abstract)
    answer = "Summary Of The Paper:\n\nThe paper proposes X.\n"
    assert apply_perturbation("surface_report", TOY, llm_outputs={"report": answer}) == (
        answer.strip()
    )
    with pytest.raises(ValueError, match="needs the abstract of the peer_review item"):
        llm_requests("surface_report", TOY)
    with pytest.raises(ValueError, match="needs the abstract of the peer_review item"):
        llm_requests("surface_report", TOY, paper=PaperContext(abstract=" "))


def test_rephrase_uses_the_gem_prompt():
    [(key, conversation)] = llm_requests("rephrase", REVIEW).items()
    assert key == "rewrite"
    assert system_user(conversation) == (RESTATE_REVIEW, REVIEW)
    assert apply_perturbation("rephrase", REVIEW, llm_outputs={"rewrite": " Fluent.\n"}) == (
        "Fluent."
    )


@pytest.mark.parametrize("name", sorted(WRITTEN_PROMPTS))
def test_scoring_rules_rewrites(name):
    [(key, conversation)] = llm_requests(name, REVIEW).items()
    assert key == "rewrite"
    assert system_user(conversation) == (WRITTEN_PROMPTS[name], REVIEW)
    answer = "\nThe method is groundbreaking.\n\n"
    assert apply_perturbation(name, REVIEW, llm_outputs={"rewrite": answer}) == (
        "The method is groundbreaking."
    )


def test_ultra_concise_caps_at_ten_percent_of_the_words():
    [(key, conversation)] = llm_requests("ultra_concise", REVIEW).items()  # 16 words
    assert key == "rewrite"
    assert system_user(conversation) == (ultra_concise_prompt(2), REVIEW)
    long_review = " ".join(["word"] * 200)
    system, _ = system_user(llm_requests("ultra_concise", long_review)["rewrite"])
    assert system == ultra_concise_prompt(20)
    assert apply_perturbation("ultra_concise", REVIEW, llm_outputs={"rewrite": "Reject."}) == (
        "Reject."
    )


def test_meaningless_elongation_reproduces_the_gem_example():
    requests = llm_requests("meaningless_elongation", TOY)
    assert list(requests) == ["strengths", "weaknesses"]
    assert system_user(requests["strengths"]) == (REVIEW_STRENGTH, TOY)
    assert system_user(requests["weaknesses"]) == (REVIEW_WEAKNESS, TOY)
    outputs = {"strengths": RECORDED_STRENGTHS, "weaknesses": RECORDED_WEAKNESSES}
    assert apply_perturbation("meaningless_elongation", TOY, llm_outputs=outputs) == TOY_ELONGATED


def test_meaningless_elongation_on_the_iclr_form_layout():
    review = (
        "Summary Of The Paper:\n"
        "  A paper.\n\n"
        "Strength And Weaknesses:\n\n"
        "- good\n\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\n"
        "Summary Of The Review:\n\n"
        "Accept.\n"
    )
    outputs = {"strengths": "x and y", "weaknesses": "z and w."}
    fillers = {
        k: v.format(strengths="x and y", weaknesses="z and w")
        for k, v in ELONGATION_FILLERS.items()
    }
    assert apply_perturbation("meaningless_elongation", review, llm_outputs=outputs) == (
        "Summary Of The Paper:\n"
        f"  {fillers['Summary Of The Paper']} A paper.\n\n"
        "Strength And Weaknesses:\n\n"
        f"{fillers['Strengths And Weaknesses']}\n\n"
        "- good\n\n\n"
        "Clarity, Quality, Novelty And Reproducibility:\n\n"
        f"{fillers['Clarity, Quality, Novelty And Reproducibility']}\n\n"
        "Summary Of The Review:\n\n"
        f"{fillers['Summary Of The Review']} Accept.\n"
    )


def test_meaningless_elongation_needs_the_iclr_format():
    with pytest.raises(ValueError, match="four-section format"):
        llm_requests("meaningless_elongation", "<summary>\nA paper.\n</summary>")
    outputs = {"strengths": "x", "weaknesses": "y"}
    with pytest.raises(ValueError, match="four-section format"):
        apply_perturbation("meaningless_elongation", "No sections.", llm_outputs=outputs)
    with pytest.raises(ValueError, match="summary '.' is empty"):
        apply_perturbation("meaningless_elongation", TOY, llm_outputs={**outputs, "strengths": "."})


def test_texts_are_variables_never_template_source():
    for name in REWRITES | {"deletion_completion", "meaningless_elongation"}:
        text = TOY + "\n" + BRACES  # the third sentence of its section: kept
        for conversation in llm_requests(name, text).values():
            _, user = system_user(conversation)
            assert BRACES in user


# --------------------------------------------------------------------------- errors and runner


@pytest.mark.parametrize("name", sorted(LLM_BASED))
def test_llm_answers_are_required(name):
    keys = list(llm_requests(name, TOY, paper=PaperContext(abstract="An abstract.")))
    with pytest.raises(ValueError, match="needs the LLM's answer"):
        apply_perturbation(name, TOY)
    with pytest.raises(ValueError, match="needs the LLM's answer"):
        apply_perturbation(name, TOY, llm_outputs={"other": "x"})
    with pytest.raises(ValueError, match="is empty"):
        apply_perturbation(name, TOY, llm_outputs=dict.fromkeys(keys, " \n"))


def test_unknown_names_and_empty_texts():
    with pytest.raises(ValueError, match="unknown perturbation 'shuffle'"):
        apply_perturbation("shuffle", TOY)
    with pytest.raises(ValueError, match="unknown perturbation"):
        llm_requests("shuffle", TOY)
    for name in PERTURBATIONS:
        with pytest.raises(ValueError, match="text to perturb is empty"):
            apply_perturbation(name, " \n", other_text=TOY, llm_outputs={})
        with pytest.raises(ValueError, match="text to perturb is empty"):
            llm_requests(name, "", paper=PaperContext(abstract="An abstract."))


def test_run_perturbation_batches_the_requests():
    calls = []

    def generate(conversations, settings):
        calls.append((conversations, settings))
        return [RECORDED_STRENGTHS, RECORDED_WEAKNESSES]

    def run(*args):
        return run_sync(run_perturbation(*args))

    assert run("meaningless_elongation", TOY, FunctionGenerator(generate)) == TOY_ELONGATED
    [(conversations, settings)] = calls
    assert settings == PERTURB_SETTINGS and settings.temperature == 0.0
    assert [c[0]["content"] for c in conversations] == [REVIEW_STRENGTH, REVIEW_WEAKNESS]
    assert run("sentence_deletion", TOY) == TOY_AFTER_DELETION
    with pytest.raises(ValueError, match="needs an LLM"):
        run("rephrase", TOY)
    with pytest.raises(ValueError, match="2 requests but 1 answers"):
        run("meaningless_elongation", TOY, FunctionGenerator(lambda c, s: ["x"]))


def test_fixed_elongation_appends_the_same_paragraph_to_any_format():
    from scorers.validation.perturbations.elongation import FIXED_FILLER

    for text in (TOY, "A short review.\n", "<summary>x</summary>"):
        out = apply_perturbation("elongation_fixed", text)
        assert out == text.rstrip() + "\n\n" + FIXED_FILLER
    assert llm_requests("elongation_fixed", "A review.") == {}


def test_reorganising_rephrase_is_a_separate_not_verbatim_prompt():
    [(key, conversation)] = llm_requests("rephrase_reorganize", REVIEW).items()
    system, user = system_user(conversation)
    assert key == "rewrite" and "may reorganize" in system and user.endswith(REVIEW)
    assert "not verbatim" in PERTURBATIONS["rephrase_reorganize"].source
    assert system != system_user(llm_requests("rephrase", REVIEW)["rewrite"])[0]


def test_letter_codes_are_the_scoring_rules_papers():
    codes = {n: s.code for n, s in PERTURBATIONS.items() if s.kind != "gaming"}
    assert codes == {
        "sentence_deletion": "S", "judgment_deletion": "J", "random_replacement": "R",
        "deletion_completion": "D", "surface_report": "P", "ultra_concise": "U",
        "opinion_flip": "O", "rephrase": "R", "meaningless_elongation": "M",
        "positive_shift": "P", "negative_shift": "N", "hedged_shift": "H", "strong_shift": "S",
        "rephrase_reorganize": "Rr", "elongation_fixed": "Mf",
    }  # fmt: skip
    for kind in ("degradation", "manipulation"):
        kind_codes = [s.code for s in PERTURBATIONS.values() if s.kind == kind]
        assert len(kind_codes) == len(set(kind_codes))  # unique within a table


# --------------------------------------------------------------------------- other domains

ARTICLE = (
    "( CNN ) A judge ordered Stiviano to pay back $ 2.6 million . She denied wrongdoing .\n"
    "Her lawyer said e.g. an appeal is planned . The family was pleased ."
)
SUMMARY = "Stiviano must pay back $ 2.6 million. Her lawyer plans an appeal. The family won."


def test_surface_report_takes_each_domains_weak_context():
    """Summaries are written from the article's first two sentences (SummEval has no
    headline), opinion summaries from the aspect (the title), answers from the question."""
    cases = {
        "summarization": (
            PaperContext(abstract=ARTICLE, domain="summarization"),
            "( CNN ) A judge ordered Stiviano to pay back $ 2.6 million . She denied wrongdoing .",
            "opening sentences of a news article",
        ),
        "opinion_summarization": (
            PaperContext(title="cleanliness", domain="opinion_summarization"),
            "cleanliness",
            "one aspect of a hotel",
        ),
        "qa": (
            PaperContext(abstract="Why is the sky blue?", domain="qa"),
            "Why is the sky blue?",
            "Answer the following question",
        ),
    }
    for domain, (paper, context, wording) in cases.items():
        [(key, conversation)] = llm_requests("surface_report", SUMMARY, paper=paper).items()
        system, user = system_user(conversation)
        assert key == "report" and user == context, domain
        assert wording in system and "peer review" not in system, domain
    with pytest.raises(ValueError, match="needs the title of the opinion_summarization item"):
        llm_requests("surface_report", SUMMARY, paper=PaperContext(domain="opinion_summarization"))


@pytest.mark.parametrize("domain", ["summarization", "opinion_summarization", "qa"])
def test_rewrites_speak_the_domains_words(domain):
    """D, U, rephrase and its reorganising variant have a version per domain that never speaks
    of peer review; the cap and the masked text are the same as for reviews."""
    paper = PaperContext(domain=domain)
    noun = "answer" if domain == "qa" else "summary"
    for name in ("deletion_completion", "ultra_concise", "rephrase", "rephrase_reorganize"):
        assert domain in PERTURBATIONS[name].domains
        [conversation] = llm_requests(name, SUMMARY, paper=paper).values()
        system, user = system_user(conversation)
        assert noun in system and "peer review" not in system, (domain, name)
        if name == "deletion_completion":
            masked = f"Stiviano must pay back $ 2.6 million. {MISSING_SENTENCE} The family won."
            assert user == masked
        else:
            assert user == SUMMARY
    system, _ = system_user(llm_requests("ultra_concise", SUMMARY, paper=paper)["rewrite"])
    assert "at most 2 words" in system  # ceil(15 / 10)


def test_a_strategy_without_the_domains_prompt_is_refused():
    from scorers.domains import DomainError

    assert PERTURBATIONS["opinion_flip"].domains == {"peer_review"}
    assert PERTURBATIONS["hedged_shift"].domains == {"peer_review", "qa"}
    with pytest.raises(DomainError, match="summarization domain has no prompt 'perturb/opinion"):
        llm_requests("opinion_flip", SUMMARY, paper=PaperContext(domain="summarization"))


def test_a_completion_must_keep_the_sentences_it_was_given():
    """GEM App. D.1.2 asks to complete the gaps "while keeping all its existing sentences": a
    reply that drops or rewrites a kept sentence is not this text completed, and says so."""
    from scorers.validation.perturbations import PerturbationReplyError
    from scorers.validation.perturbations.segmentation import kept_sentences

    assert kept_sentences(SUMMARY) == ["Stiviano must pay back $ 2.6 million.", "The family won."]
    kept = "Stiviano must pay back $2.6 million. It was a long case. The family  won."
    outputs = {"completion": kept}
    assert apply_perturbation("deletion_completion", SUMMARY, llm_outputs=outputs) == kept
    chatty = "Here is the summary: The family won. It was a long case."
    with pytest.raises(PerturbationReplyError, match="lost 1 of the kept sentences"):
        apply_perturbation("deletion_completion", SUMMARY, llm_outputs={"completion": chatty})
    with pytest.raises(PerturbationReplyError, match="is empty"):
        apply_perturbation("surface_report", SUMMARY, llm_outputs={"report": " "})


def test_robustness_perturbs_the_candidates_the_metrics_score():
    """As the Scoring Rules paper: on SummEval the system summaries are perturbed (scored
    against the ground-truth references, none held out), on SPACE (no systems) the held-out
    summary; the reference-perturbing mode is asked for by name and said in the metadata."""
    from gem_tasks.tasks.robustness import robustness
    from gem_tasks.tasks.samples import ANSWER, SPACE_DEMO, SUMMEVAL_DEMO

    task = robustness(dataset=str(SUMMEVAL_DEMO), perturbation="sentence_deletion", scorers="bleu")
    assert task.metadata["perturb"] == "candidates"
    assert task.metadata["perturb_target"] == "existing candidates"
    systems = [s for s in task.dataset]
    assert len(systems) == 3 * 16  # every article's 16 system summaries
    for sample in systems:
        assert sample.metadata["original"] == sample.metadata[ANSWER]["text"]
        assert sample.metadata[ANSWER]["source"].startswith("system:")
        assert sample.metadata["held_out"] is None  # the references are ground truth
        assert sample.metadata["perturb_target"] == "existing candidates"
    held = robustness(
        dataset=str(SUMMEVAL_DEMO),
        perturbation="sentence_deletion",
        scorers="bleu",
        perturb="held_out_reference",
    )
    assert held.metadata["perturb_target"] == "the held-out human report"
    assert len(held.dataset) == 3
    for sample in held.dataset:
        assert sample.metadata["original"] == sample.metadata["held_out"]["text"]
    space = robustness(dataset=str(SPACE_DEMO), perturbation="sentence_deletion", scorers="bleu")
    assert space.metadata["perturb_target"] == "the held-out human report"  # no systems
    with pytest.raises(ValueError, match="perturb must be one of"):
        robustness(dataset=str(SUMMEVAL_DEMO), perturb="references", scorers="bleu")
    with pytest.raises(ValueError, match="existing candidates do not have"):
        robustness(dataset=str(SUMMEVAL_DEMO), level="judgments", scorers="bleu")
