"""Beyond Rating metrics: the structured-review parser on every layout, chunk windows and
coverage by hand, P / Max-Recall / F1 on hand-built match tables and end to end with a scripted
judge, focus KL (direction, smoothing, corpus vs paper level), the question score, rating error,
the reply parsers on malformed replies, and one extraction per human review (cache hits)."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re

import numpy as np
import pytest

from conftest import scripted_model
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.lm.answers import parse_yes_no
from scorers.lm.base import GenerationSettings
from scorers.lm.cache import ScoreCache
from scorers.lm.generation import CachedGenerator
from scorers.metrics.beyond.alignment import alignment_scores
from scorers.metrics.beyond.common import ReplyError, ask_many
from scorers.metrics.beyond.coverage import chunk_windows, coverage
from scorers.metrics.beyond.focus import corpus_kl, kl_divergence, smoothed
from scorers.metrics.beyond.questions import question_score
from scorers.metrics.beyond.rating import rating_error
from scorers.metrics.beyond.structure import CATEGORIES, parse_points
from scorers.text.structured import parse_review

# -- the parser ------------------------------------------------------------------------------


def test_parser_reads_tags_and_tells_missing_from_empty():
    review = parse_review(
        "<summary>It does X.</summary>\n<strengths>novel</strengths>\n<weaknesses>\n"
        "</weaknesses>\n<rating>6</rating><soundness>3</soundness><confidence>9</confidence>"
    )
    assert review.layout == "tags"
    assert review.fields == {
        "summary": "It does X.",
        "strengths": "novel",
        "weaknesses": "",  # there, but empty
        "questions": None,  # not there
    }
    assert review.scores["rating"] == 6 and review.scores["soundness"] == 3
    assert review.scores["confidence"] is None  # 9 is outside 1-5: never clipped
    assert any("confidence" in issue for issue in review.issues)
    assert not review.needs_split


def test_parser_unclosed_last_tag_runs_to_the_end():
    review = parse_review("<summary>S</summary><questions>Why does it work?")
    assert review.fields["questions"] == "Why does it work?"


def test_parser_reads_markdown_headings_bold_and_plain_labels():
    review = parse_review(
        "## Summary\nIt does X.\n\n**Strengths:**\n- novel idea\n\n**Weaknesses**: weak "
        "baselines\nmore on that\nQuestions: why?\nRating: 6: marginally above the acceptance "
        "threshold\nConfidence: 4: You are confident"
    )
    assert review.layout == "headings"
    assert review.fields == {
        "summary": "It does X.",
        "strengths": "- novel idea",
        "weaknesses": "weak baselines\nmore on that",
        "questions": "why?",
    }
    assert review.scores["rating"] == 6 and review.scores["confidence"] == 4


def test_a_sentence_that_starts_with_a_label_word_is_not_a_heading():
    review = parse_review("Strengths of this work are many and weaknesses few.")
    assert review.layout == "none" and review.needs_split


def test_parser_flags_the_iclr2023_combined_section():
    text = (
        "Summary Of The Paper:\n\nDoes X.\n\nStrength And Weaknesses:\n\nGood idea, weak "
        "evaluation.\n\nClarity, Quality, Novelty And Reproducibility:\n\nClear.\n\n"
        "Summary Of The Review:\n\nOK.\n"
    )
    review = parse_review(text)
    assert review.fields["summary"] == "Does X."
    assert review.fields["strengths"] is None and review.fields["weaknesses"] is None
    assert review.combined == "Good idea, weak evaluation."
    assert review.needs_split


def test_parser_reads_labels_inside_the_builders_2024_section():
    text = (
        "Summary Of The Paper:\n\nDoes X.\n\nStrength And Weaknesses:\n\nStrengths:\ngood\n\n"
        "Weaknesses:\nbad\n\nQuestions:\nwhy\n\nClarity, Quality, Novelty And Reproducibility:"
        "\n\n\n\nSummary Of The Review:\n\n\n"
    )
    review = parse_review(text)
    assert review.fields == {
        "summary": "Does X.",
        "strengths": "good",
        "weaknesses": "bad",
        "questions": "why",
    }
    assert not review.needs_split


def test_parser_rejects_non_text():
    with pytest.raises(TypeError):
        parse_review(7)  # type: ignore[arg-type]


# -- coverage --------------------------------------------------------------------------------


def test_chunk_windows_by_hand():
    assert chunk_windows(1000) == [(0, 512), (384, 896), (768, 1000)]
    assert chunk_windows(896) == [(0, 512), (384, 896)]
    assert chunk_windows(300) == [(0, 300)]
    assert chunk_windows(512) == [(0, 512)]
    assert chunk_windows(0) == []
    with pytest.raises(ValueError):
        chunk_windows(10, size=4, overlap=4)


def test_coverage_sums_top_five_and_scales_when_fewer():
    sims = [0.1, 0.9, 0.8, 0.3, 0.7, 0.6, 0.2]
    assert coverage(sims) == (pytest.approx(0.9 + 0.8 + 0.7 + 0.6 + 0.3), False)
    assert coverage([0.5, 0.7]) == (pytest.approx(5 * 0.6), True)
    # invariant to chunk order
    assert coverage(sims[::-1])[0] == pytest.approx(coverage(sims)[0])


class WordEmbedder:
    """Whitespace tokens; a hashed bag-of-words vector (identical texts: cosine 1)."""

    identity = "test/words"
    max_tokens = 510

    def __init__(self) -> None:
        self.vocabulary: dict[str, int] = {}
        self.words: dict[int, str] = {}
        self.encoded: list[list[str]] = []

    def tokenize(self, text: str) -> list[int]:
        ids = []
        for word in text.split():
            index = self.vocabulary.setdefault(word, len(self.vocabulary))
            self.words[index] = word
            ids.append(index)
        return ids

    def detokenize(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids)

    def encode(self, texts, *, prompt_name=None, max_tokens=None):
        self.encoded.append(list(texts))
        out = np.zeros((len(texts), 64))
        for row, text in enumerate(texts):
            for word in text.split():
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 64] += 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _paper(n_words: int) -> str:
    return " ".join(f"w{i}" for i in range(n_words))


def test_coverage_metric_with_a_fake_embedder():
    embedder = WordEmbedder()
    text = _paper(2000)  # windows of 512 (capped by max_tokens 510) ... by hand below
    ids = list(range(2000))
    windows = chunk_windows(2000, size=510, overlap=128)
    chunk3 = " ".join(f"w{i}" for i in ids[windows[2][0] : windows[2][1]])
    item = Item(
        paper=Paper(id="p", paper_text=text),
        candidate=f"<summary>{chunk3}</summary><strengths>x</strengths>",
        references=(Review("r", "unused"),),
    )
    resources = _resources(RuleModel(), embedders={"fake": embedder})
    result = get_metric("br_summary_coverage", embedder="fake").score(item, resources)
    chunk_vectors = embedder.encode([" ".join(f"w{i}" for i in ids[a:b]) for a, b in windows])
    summary_vector = embedder.encode([chunk3])[0]
    sims = np.sort(chunk_vectors @ summary_vector)[::-1]
    assert sims[0] == pytest.approx(1.0)
    assert result.value == pytest.approx(float(sims[:5].sum()))
    assert result.details["chunks"] == len(windows) == 5
    assert result.details["chunk_tokens"] == 510  # capped by the embedder
    assert "fewer_chunks_than_k" not in result.details.get("flags", [])


def test_coverage_with_fewer_chunks_than_k_and_without_summary():
    embedder = WordEmbedder()
    resources = _resources(RuleModel(), embedders={"fake": embedder})
    metric = get_metric("br_summary_coverage", embedder="fake")
    item = Item(
        paper=Paper(id="p", title="A title", abstract="w1 w2 w3"),
        candidate="<summary>w1 w2</summary>",
        references=(Review("r", "unused"),),
    )
    result = metric.score(item, resources)
    [vector] = embedder.encode(["A title w1 w2 w3"])
    expected = 5 * float(vector @ embedder.encode(["w1 w2"])[0])
    assert result.value == pytest.approx(expected)
    assert "fewer_chunks_than_k" in result.details["flags"]
    assert result.details["paper_source"] == "title+abstract"
    missing = metric.score(
        Item(paper=item.paper, candidate="<strengths>x</strengths>", references=()), resources
    )
    assert missing.value is None and "no summary" in missing.reason
    empty = metric.score(
        Item(
            paper=item.paper,
            candidate="<summary> </summary><strengths>x</strengths>",
            references=(),
        ),
        resources,
    )
    assert empty.value is None and "empty" in empty.reason


# -- alignment -------------------------------------------------------------------------------


def test_max_recall_is_the_best_single_expert():
    # A = {a1, a2}, H1 = {h1, h2}, H2 = {h3, h4, h5, h6}; a1~h1, a1~h2, a2~h3
    table = [
        {"H1": [True, True], "H2": [False, False, False, False]},
        {"H1": [False, False], "H2": [True, False, False, False]},
    ]
    scores = alignment_scores(table)
    assert scores["precision"] == 1.0
    assert scores["recall"] == 1.0  # union recall would be 0.5, mean recall 0.625
    assert scores["f1"] == 1.0


def test_f1_is_per_paper_then_averaged():
    paper1 = alignment_scores([{"H": [False]}])  # P 0, R 0
    assert paper1 == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    one = alignment_scores([{"H": [True, False]}])  # P 1, R 0.5
    assert one["f1"] == pytest.approx(2 * 1 * 0.5 / 1.5)
    # (P, R) = (1, 0) and (0.5, 0.5) -> per-paper F1 0 and 0.5: macro 0.25, not 0.375
    f1_a = 0.0
    f1_b = alignment_scores([{"H": [True, False]}, {"H": [False, False]}])["f1"]
    assert f1_b == pytest.approx(0.5)
    assert (f1_a + f1_b) / 2 == pytest.approx(0.25)


def test_an_expert_without_points_is_skipped_and_none_is_an_error():
    assert alignment_scores([{"H1": [], "H2": [True, False]}])["recall"] == 0.5
    with pytest.raises(ValueError):
        alignment_scores([{"H1": []}])


def test_points_parser():
    parsed = parse_points(
        "1. Novelty | The idea is new.\n- clarity | The writing is clear.\nrambling line\n",
        "strengths",
    )
    assert [(p.category, p.text) for p in parsed.points] == [
        ("Novelty", "The idea is new."),
        ("Clarity", "The writing is clear."),
    ]
    assert parsed.unread == ("rambling line",)
    questions = parse_points("Explain | Soundness | Why is it stable?", "questions")
    assert questions.points[0].qtype == "Explain"
    assert parse_points("NONE", "weaknesses").points == ()
    # a header line and doubled list markers (rejected as "no point" before): the points are
    # read, the header is kept as an unread line
    reply = (
        "The strengths section:\n\n- 1. Clarity | The method is clear.\n"
        "- 2. **Novelty**: A new idea.\n* [3] Experiments: Thorough ablations."
    )
    parsed = parse_points(reply, "strengths")
    assert [(p.category, p.text) for p in parsed.points] == [
        ("Clarity", "The method is clear."),
        ("Novelty", "A new idea."),
        ("Experiments", "Thorough ablations."),
    ]
    assert parsed.unread == ("The strengths section:",)
    typed = parse_points("1. **Supplement** | Experiments | Add a baseline?", "questions")
    assert (typed.points[0].qtype, typed.points[0].category) == ("Supplement", "Experiments")
    # a point with no known category is never given one
    assert parse_points(
        "- The method is clear.\n- Soundness | Proofs hold.", "strengths"
    ).unread == ("The method is clear.",)
    for bad in ("", "The review is good.", "Banana | text", "Explain | text", "- 1. The method"):
        section = "questions" if bad.startswith("Explain") else "strengths"
        with pytest.raises(ReplyError):
            parse_points(bad, section)


# -- a scripted preprocessor and judge ------------------------------------------------------

_CATEGORY_WORDS = {"novel": "Novelty", "experiment": "Experiments", "clear": "Clarity"}


def _category(text: str) -> str:
    for word, category in _CATEGORY_WORDS.items():
        if word in text.lower():
            return category
    return "Other"


def _tags(text: str) -> set[str]:
    return set(re.findall(r"#\w+", text))


class RuleModel:
    """Answers the Beyond Rating prompts by rule: sorts reviews by line markers (+ strength,
    - weakness, ? question, anything else summary), splits sections into lines, matches points
    sharing a #tag, and says a question's content is present when a chunk holds its #tag."""

    identity = "test/rules"

    def __init__(self, *, match_reply: str | None = None) -> None:
        self.conversations: list[list[dict]] = []
        self.match_reply = match_reply

    def answer(self, conversation) -> str:
        system, user = conversation[0]["content"], conversation[-1]["content"]
        if "sort the content of a peer review" in system:
            review = user.split("Review:\n\n", 1)[1]
            parts = {"summary": [], "strengths": [], "weaknesses": [], "questions": []}
            for line in review.splitlines():
                key = {"+": "strengths", "-": "weaknesses", "?": "questions"}.get(
                    line[:1], "summary"
                )
                parts[key].append(line[1:].strip() if key != "summary" else line)
            return "".join(f"<{k}>{chr(10).join(v)}</{k}>" for k, v in parts.items())
        if "into atomic points" in system:
            text = user.split(" section:\n\n", 1)[1]
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if "questions section" in system:
                return "\n".join(
                    f"{'Explain' if q.startswith('Why') else 'Supplement'} | {_category(q)} | {q}"
                    for q in lines
                )
            return "\n".join(f"{_category(line)} | {line}" for line in lines)
        if "You compare two points" in system:
            if self.match_reply is not None:
                return self.match_reply
            a = user.split("Point A: ", 1)[1].split("\n\nPoint B: ")[0]
            b = user.split("Point B: ", 1)[1].split("\n\n")[0]
            return "Yes" if _tags(a) & _tags(b) else "No"
        if "check a reviewer's question" in system:
            question = user.split("Question: ", 1)[1]
            excerpts = user.split("Question: ", 1)[0]
            return "Yes" if _tags(question) & _tags(excerpts) else "No"
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    async def generate(self, conversations, settings):
        self.conversations += [list(c) for c in conversations]
        return [self.answer(c) for c in conversations]


def _resources(model, **extra) -> Resources:
    return Resources(generators={"preprocessor": model, "judge": model}, **extra)


EXPERT_1 = (
    "Summary of the work.\n+ The idea is novel #nov\n+ Writing is clear #clr\n- Few seeds #seeds"
)
EXPERT_2 = (
    "Another summary.\n+ Strong experiment suite #exp\n- Weak baselines #base\n"
    "- Missing ablation #abl\n- Few seeds used #seeds\n- Unclear proofs #proof\n? Why #q1"
)
PAPER = Paper(id="p1", title="T", abstract="A")


def _item(candidate: str) -> Item:
    return Item(
        paper=PAPER,
        candidate=candidate,
        references=(Review("e1", EXPERT_1, rating=6), Review("e2", EXPERT_2, rating=3)),
    )


def test_alignment_end_to_end_with_a_scripted_judge():
    model = RuleModel()
    candidate = (
        "<summary>S</summary><strengths>Novel idea #nov\nFast code #fast</strengths>"
        "<weaknesses>Weak baselines #base\nMissing ablation #abl\nFew seeds #seeds</weaknesses>"
    )
    item, resources = _item(candidate), _resources(model)
    strength = {
        q: get_metric(f"br_strength_{q}").score(item, resources)
        for q in ("precision", "recall", "f1")
    }
    # strengths: a = {#nov, #fast}; H1 = {#nov, #clr}, H2 = {#exp}: P 1/2, R_max = max(1/2, 0)
    assert strength["precision"].value == pytest.approx(0.5)
    assert strength["recall"].value == pytest.approx(0.5)
    assert strength["f1"].value == pytest.approx(0.5)
    weakness = get_metric("br_weakness_recall").score(item, resources)
    # weaknesses: all 3 match; H1 = {#seeds} -> 1/1; H2 = {#base, #abl, #seeds, #proof} -> 3/4
    assert weakness.value == pytest.approx(1.0)
    assert get_metric("br_weakness_precision").score(item, resources).value == 1.0
    # fields never cross: no match prompt pairs a strength with a weakness
    strengths_text = {"Novel idea #nov", "Fast code #fast", "The idea is novel #nov"}
    for conversation in model.conversations:
        if "You compare two points" in conversation[0]["content"]:
            user = conversation[-1]["content"]
            a_is_strength = any(s in user.split("Point B")[0] for s in strengths_text)
            b_is_weakness = any(w in user.split("Point B")[1] for w in ("#seeds", "#base", "#abl"))
            assert not (a_is_strength and b_is_weakness)
    assert strength["f1"].signature.judge == "test/rules"
    assert strength["f1"].details["calls"]["judge"] == 2 * 3  # 2 candidate x 3 expert points


def test_alignment_edge_cases():
    model = RuleModel()
    resources = _resources(model)
    # the candidate has no strengths section: zeros, flagged
    result = get_metric("br_strength_f1").score(_item("<summary>S</summary>"), resources)
    assert result.value == 0.0 and "empty_candidate_field" in result.details["flags"]
    # no expert with a point: unscored
    lonely = Item(
        paper=PAPER,
        candidate="<strengths>x #a</strengths>",
        references=(Review("e", "summary only"),),
    )
    result = get_metric("br_strength_recall").score(lonely, resources)
    assert result.value is None and "no expert" in result.reason
    # an empty candidate: unscored, no call
    before = len(model.conversations)
    result = get_metric("br_weakness_f1").score(_item("  "), resources)
    assert result.value is None and "empty candidate" in result.reason
    assert len(model.conversations) == before
    # an empty reference is left out with its reason
    item = Item(
        paper=PAPER,
        candidate="<strengths>Novel #nov</strengths>",
        references=(Review("blank", "  "), Review("e1", EXPERT_1)),
    )
    result = get_metric("br_strength_recall").score(item, resources)
    assert result.value == 0.5 and result.details["experts_left_out"] == {
        "blank": "empty reference text"
    }


def test_unreadable_match_verdicts_leave_the_paper_unscored_after_a_retry():
    model = RuleModel(match_reply="Perhaps.")
    result = get_metric("br_strength_precision").score(
        _item("<strengths>Novel #nov</strengths>"), _resources(model)
    )
    assert result.value is None
    assert "unreadable" in result.reason and "Perhaps." in result.reason
    assert result.details["calls"]["judge"] == 2 * 3  # 3 pairs, each asked twice


def test_human_reviews_are_processed_once_and_shared(tmp_path):
    cache = ScoreCache(tmp_path / "cache.sqlite")
    rules = RuleModel()
    asked: list[str] = []

    async def complete(conversation, settings):
        asked.append(conversation[-1]["content"])
        return rules.answer(conversation)

    generator = CachedGenerator("test/rules-cached", complete, cache)
    resources = Resources(
        generators={"preprocessor": generator, "judge": generator}, cache_dir=tmp_path
    )
    metric = get_metric("br_weakness_recall")
    metric.score(_item("<weaknesses>Few seeds #seeds</weaknesses>"), resources)
    expert_calls = [a for a in asked if "Review:" in a or EXPERT_2.splitlines()[2][1:].strip() in a]
    assert expert_calls  # the experts were sorted and decomposed the first time
    asked.clear()
    metric.score(_item("<weaknesses>Weak baselines #base</weaknesses>"), resources)
    # a second model's review: only its own points and its matches are new
    assert not any("Review:" in a for a in asked)
    assert not any(a.startswith("The weaknesses section") and "#proof" in a for a in asked)
    assert any(a.startswith("The weaknesses section") and "#base" in a for a in asked)


# -- focus KL --------------------------------------------------------------------------------


def test_kl_by_hand_direction_and_smoothing():
    assert kl_divergence([0.5, 0.5], [0.5, 0.5]) == 0.0
    p, q = [0.5, 0.5], [0.9, 0.1]
    by_hand = 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)
    assert kl_divergence(p, q) == pytest.approx(by_hand)
    assert kl_divergence(q, p) != pytest.approx(by_hand)  # the direction matters
    human = smoothed({"Novelty": 3})
    model = smoothed({"Clarity": 2})
    # alpha 0.5 on all 8 categories: human (3.5, 0.5 x 7) / 7, model (0.5 x 3, 2.5, 0.5 x 4) / 6
    h = [3.5 / 7] + [0.5 / 7] * 7
    m = [0.5 / 6, 0.5 / 6, 0.5 / 6, 2.5 / 6] + [0.5 / 6] * 4
    assert CATEGORIES[3] == "Clarity"
    expected = sum(hi * math.log(hi / mi) for hi, mi in zip(h, m))
    assert kl_divergence(human, model) == pytest.approx(expected)
    assert math.isfinite(expected)


def test_kl_is_corpus_level_not_a_mean_of_papers():
    rows = [
        {"category_counts": {"human": {"Novelty": 10}, "model": {}}, "alpha": 0.5},
        {"category_counts": {"human": {}, "model": {"Novelty": 10}}, "alpha": 0.5},
    ]
    assert corpus_kl(rows) == pytest.approx(0.0)
    per_paper = [
        kl_divergence(
            smoothed(r["category_counts"]["human"]), smoothed(r["category_counts"]["model"])
        )
        for r in rows
    ]
    assert np.mean(per_paper) > 0.5
    with pytest.raises(ValueError):
        corpus_kl([rows[0], {**rows[1], "alpha": 1.0}])


def test_focus_metric_records_counts_for_the_corpus_number():
    model = RuleModel()
    item = _item("<weaknesses>Experiment too small #exp\nClear flaw #c</weaknesses>")
    result = get_metric("br_weakness_kl").score(item, _resources(model))
    counts = result.details["category_counts"]
    assert counts["model"] == {"Experiments": 1, "Clarity": 1}
    assert sum(counts["human"].values()) == 5  # 1 + 4 expert weakness points
    assert result.value == pytest.approx(
        kl_divergence(smoothed(counts["human"]), smoothed(counts["model"]))
    )
    assert corpus_kl([result.metadata()]) == pytest.approx(result.value)


# -- questions -------------------------------------------------------------------------------


def test_question_score_by_hand():
    verdicts = [
        ("Explain", True),
        ("Explain", False),
        ("Supplement", True),
        ("Supplement", False),
        ("Other", None),
    ]
    assert question_score(verdicts) == pytest.approx(2 / 5)
    assert question_score(verdicts, other="exclude") == pytest.approx(2 / 4)
    # polarity: the same "present" verdict counts 1 for Explain, 0 for Supplement
    assert question_score([("Explain", True)]) == 1.0
    assert question_score([("Supplement", True)]) == 0.0
    with pytest.raises(ValueError):
        question_score([("Other", None)], other="exclude")


def test_question_metric_retrieves_the_planted_chunk():
    words = [f"w{i}" for i in range(3000)]
    words[2500] = "#planted"  # in the last chunks only
    paper = Paper(id="p", paper_text=" ".join(words))
    embedder = WordEmbedder()
    model = RuleModel()
    item = Item(
        paper=paper,
        candidate="<questions>Why is w2500 #planted used?\n"
        "Could you add #absent results?</questions>",
        references=(Review("r", "unused"),),
    )
    result = get_metric("br_question_score", embedder="fake").score(
        item, _resources(model, embedders={"fake": embedder})
    )
    # Explain with content present -> 1; Supplement with content absent -> 1
    assert result.value == 1.0
    assert [q["content_present"] for q in result.details["questions"]] == [True, False]
    no_questions = get_metric("br_question_score", embedder="fake").score(
        Item(paper=paper, candidate="<summary>s</summary>", references=()),
        _resources(model, embedders={"fake": embedder}),
    )
    assert no_questions.value is None and "no questions section" in no_questions.reason


# -- rating ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_rating_error():
    assert rating_error(6, [5, 6, 8]) == pytest.approx(1 / 3)
    assert rating_error(6, [5, 6, 8], against="each") == pytest.approx(1.0)
    metric = get_metric("br_rating_mae")
    result = metric.score(_item("<rating>8</rating>"), Resources())
    assert result.value == pytest.approx(abs(8 - 4.5))
    unreadable = metric.score(_item("Rating: excellent"), Resources())
    assert unreadable.value is None and "rating" in unreadable.reason
    out_of_range = metric.score(_item("<rating>12</rating>"), Resources())
    assert out_of_range.value is None and "outside" in out_of_range.reason
    no_expert = metric.score(
        Item(paper=PAPER, candidate="<rating>6</rating>", references=(Review("r", "x"),)),
        Resources(),
    )
    assert no_expert.value is None and "no reference review has a rating" in no_expert.reason


@pytest.mark.slow
def test_rating_error_of_the_human_baseline_reads_the_held_out_reviews_stored_rating():
    """A free-text human review rarely states its rating: when the candidate is the held-out
    review itself, the rating stored with it in the data is the reviewer's rating."""
    metric = get_metric("br_rating_mae")
    human = "A free-text review with no rating in it."
    experts = (Review("e1", EXPERT_1, rating=6), Review("e2", EXPERT_2, rating=3))
    baseline = Item(
        paper=PAPER,
        candidate=f"  {human}\n",
        references=experts,
        held_out=Review("h", human, rating=8),
    )
    assert baseline.candidate_is_held_out
    result = metric.score(baseline, Resources())
    assert result.value == pytest.approx(abs(8 - 4.5))
    assert result.details["rating_source"] == "stored with the held-out review"
    # a model's review (not the held-out text) is read, never given the human's rating
    model = Item(
        paper=PAPER,
        candidate="<rating>3</rating>",
        references=experts,
        held_out=Review("h", human, rating=8),
    )
    assert not model.candidate_is_held_out
    assert metric.score(model, Resources()).value == pytest.approx(1.5)
    assert metric.score(model, Resources()).details["rating_source"] == "read from the review"
    # the held-out review without a stored rating: its text is read, and here says nothing
    unrated = Item(paper=PAPER, candidate=human, references=experts, held_out=Review("h", human))
    assert metric.score(unrated, Resources()).value is None
    # an empty candidate is never the held-out review
    empty = Item(
        paper=PAPER, candidate=" ", references=experts, held_out=Review("h", " ", rating=8)
    )
    assert not empty.candidate_is_held_out and metric.score(empty, Resources()).value is None
    assert "rating" in get_metric("br_rating_mae").signature(Resources()).choices["human_baseline"]


def test_ask_many_retries_only_the_unreadable_with_another_seed():
    seen: list[tuple[int, float, list[str]]] = []

    class Flaky:
        identity = "flaky"

        async def generate(self, conversations, settings):
            asked = [c[0]["content"] for c in conversations]
            seen.append((settings.seed, settings.temperature, asked))
            return ["??" if q == "q1" and not settings.seed else "Yes" for q in asked]

    asked = asyncio.run(
        ask_many(
            Flaky(),
            [[{"role": "user", "content": f"q{i}"}] for i in range(3)],
            parse_yes_no,
            settings=GenerationSettings(),
        )
    )
    # only the unreadable question is asked again, and the greedy first call is retried
    # sampled: a local greedy model would repeat itself
    assert asked.values == [True, True, True] and asked.reasons == [None, None, None]
    assert asked.calls == 4 and asked.item_calls == [1, 2, 1]
    assert seen == [(0, 0.0, ["q0", "q1", "q2"]), (1, 0.7, ["q1"])]

    class Mute:
        identity = "mute"

        async def generate(self, conversations, settings):
            return ["hmm"] * len(conversations)

    failed = asyncio.run(
        ask_many(
            Mute(),
            [[{"role": "user", "content": "q"}]],
            parse_yes_no,
            settings=GenerationSettings(),
            attempts=3,
        )
    )
    assert failed.values == [None] and failed.failures == [0] and failed.item_calls == [3]
    assert failed.replies == ["hmm"] and "(after 3 call(s))" in failed.reasons[0]


# -- through Inspect ---------------------------------------------------------------------------


def _rules_model_api():
    """``beyond_rules/<any>``: the rule-following model of these tests as an Inspect model."""
    scripted_model("beyond_rules", lambda conversation, model: RuleModel().answer(conversation))


@pytest.mark.slow
def test_review_quality_task_end_to_end(tmp_path):
    """``gem_tasks/review_quality``: the model writes a structured review (strict prompt), the
    roles are bound to a rule-following model; each logged value equals the plain-Python call,
    the corpus KL is the KLs' headline, and the experts are every review but the
    held-out one."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from conftest import write_jsonl
    from gem_tasks.scoring.items import reviews_from_metadata
    from gem_tasks.tasks.review_quality import review_quality

    _rules_model_api()
    reviews = [
        {"id": "a", "text": EXPERT_1, "rating": 6},
        {"id": "b", "text": EXPERT_2, "rating": 3},
        {"id": "c", "text": "Third.\n+ Clear writing #clr\n- Few seeds #seeds", "rating": 5},
    ]
    papers = [
        {
            "id": f"p{i}",
            "title": f"Paper {i}",
            "abstract": "w1 w2 w3 #exp",
            "venue": "ICLR 2023",
            "reviews": reviews,
        }
        for i in range(2)
    ]
    data = write_jsonl(tmp_path / "papers.jsonl", papers)
    answer = (
        "<summary>w1 w2</summary><strengths>Novel idea #nov</strengths>"
        "<weaknesses>Few seeds #seeds\nExperiment too small #exp</weaknesses>"
        "<questions>Why #exp?</questions><rating>5</rating>"
    )
    outputs = []
    for _ in range(2):
        output = ModelOutput.from_content("mockllm/model", answer)
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        outputs.append(output)
    rules = get_model("beyond_rules/model")
    scorers = "br_rating_mae,br_weakness_recall,br_weakness_kl,br_question_score"
    [log] = inspect_eval(
        review_quality(dataset=str(data), scorers=scorers, cache_dir=str(tmp_path / "cache")),
        model=get_model("mockllm/model", custom_outputs=outputs),
        model_roles={"preprocessor": rules, "judge": rules},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert "critically and rigorously" in log.samples[0].input[0].content  # the strict prompt
    metrics = {s.name: s.metrics for s in log.results.scores}
    assert "corpus_kl" in metrics["br_weakness_kl"] and "corpus_kl" not in metrics["br_rating_mae"]
    kl_rows = [s.scores["br_weakness_kl"].metadata for s in log.samples]
    assert metrics["br_weakness_kl"]["corpus_kl"].value == pytest.approx(corpus_kl(kl_rows))
    resources = Resources(generators={"preprocessor": RuleModel(), "judge": RuleModel()})
    for sample in log.samples:
        experts = reviews_from_metadata(sample.metadata["references"])
        assert len(experts) == 2  # every review but the held-out one
        item = Item(
            paper=Paper(id=sample.id, abstract="w1 w2 w3 #exp"),
            candidate=answer,
            references=experts,
        )
        for name in scorers.split(","):
            logged = sample.scores[name]
            plain = get_metric(name).score(item, resources)
            assert plain.value == pytest.approx(logged.value), name
        held_out = sample.metadata["held_out"]["rating"]
        mean = sum(r.rating for r in experts) / 2
        assert sample.scores["br_rating_mae"].value == pytest.approx(abs(5 - mean))
        assert {r.rating for r in experts} | {held_out} == {6, 3, 5}
    # the headline Inspect prints first is the pooled KL; the per-paper KLs' mean is a diagnostic
    assert list(metrics["br_weakness_kl"])[0] == "corpus_kl"
    per_paper = [s.scores["br_weakness_kl"].value for s in log.samples]
    assert metrics["br_weakness_kl"]["mean_per_paper_kl"].value == pytest.approx(
        sum(per_paper) / len(per_paper)
    )
    # the leaderboard reads review_quality logs and ranks the KL by the same pooled number
    from gem_tasks.analysis.leaderboard import compare_logs, leaderboard_markdown

    board = compare_logs([tmp_path / "logs"], progress=False)
    kl = board.table[board.table["metric"] == "br_weakness_kl"].iloc[0]
    assert kl["value"] == pytest.approx(metrics["br_weakness_kl"]["corpus_kl"].value)
    assert kl["headline"] == "corpus_kl" and kl["headline_kind"] == "corpus statistic"
    mae = board.table[board.table["metric"] == "br_rating_mae"].iloc[0]
    assert mae["headline"] == "mean" and math.isnan(mae["corpus"])
    assert "*Corpus statistic* `corpus_kl`" in leaderboard_markdown(board)
    # the human baseline row: the held-out review's stored rating against the other two
    [human_log] = inspect_eval(
        review_quality(
            dataset=str(data),
            candidate="human",
            scorers="br_rating_mae",
            cache_dir=str(tmp_path / "cache"),
        ),
        model="none/none",
        log_dir=str(tmp_path / "human_logs"),
        display="none",
    )
    assert human_log.status == "success", human_log.error
    for sample in human_log.samples:
        held_out = sample.metadata["held_out"]["rating"]
        experts = [r["rating"] for r in sample.metadata["references"]]
        score = sample.scores["br_rating_mae"]
        assert score.value == pytest.approx(abs(held_out - sum(experts) / 2))
        assert score.metadata["rating_source"] == "stored with the held-out review"


@pytest.mark.slow
def test_a_side_scored_in_an_unscored_pair_keeps_its_value(tmp_path):
    """Random replacement with the rating error: the held-out review (before) is scored from its
    stored rating, the replacement (another paper's free-text review, after) has no readable
    rating, so the pair is unscored, and the before side's value is still in the log."""
    from inspect_ai import eval as inspect_eval

    from conftest import rated_free_text_papers, write_jsonl
    from gem_tasks.tasks.review_quality.review_quality import ALL_EXPERTS
    from gem_tasks.tasks.robustness import robustness

    data = write_jsonl(tmp_path / "papers.jsonl", rated_free_text_papers(3))
    [log] = inspect_eval(
        robustness(
            perturbation="random_replacement",
            dataset=str(data),
            scorers="br_rating_mae",
            references=ALL_EXPERTS,
            cache_dir=str(tmp_path / "cache"),
        ),
        model="none/none",
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        score = sample.scores["br_rating_mae_paired"]
        assert math.isnan(score.value)
        assert score.metadata["unscored_reason"].startswith("after: the review's rating cannot")
        before, after = score.metadata["before"], score.metadata["after"]
        held_out = sample.metadata["held_out"]["rating"]
        experts = [r["rating"] for r in sample.metadata["references"]]
        assert before["value"] == pytest.approx(abs(held_out - sum(experts) / len(experts)))
        assert "unscored_reason" not in before
        assert after["value"] is None and "rating cannot be read" in after["unscored_reason"]
