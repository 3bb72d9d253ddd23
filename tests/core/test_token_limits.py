"""Generated texts that stop at their token limit are never silent (issue: a judgment rewrite cut
at 256 new tokens lost a long review's last judgments with no trace): every backend says whether
a reply ran to its limit, the cache keeps it, a review's rewrite gets room by its length, and a
metric whose value rests on a cut text names it in its result and in the log's
``at_token_limit`` count."""

from __future__ import annotations

import math
import sqlite3

import pytest

from conftest import FunctionGenerator
from scorers import Item, Paper, Resources, Review, get_metric
from scorers.lm.base import GenerationSettings, Reply, hit_limit
from scorers.lm.cache import ScoreCache
from scorers.lm.threads import run_sync
from scorers.text.judgments import (
    PREPROCESS_SETTINGS,
    REWRITE_BUDGET,
    rewrite_budget,
    rewrite_reviews,
    rewrite_settings,
)
from scorers.types import AT_TOKEN_LIMIT


def test_a_reply_knows_whether_it_hit_its_limit():
    cut = Reply("The reviewer appreciates", hit_limit=True)
    assert cut == "The reviewer appreciates" and hit_limit(cut) is True
    assert hit_limit("a plain string") is None  # a generator that does not say
    assert hit_limit(cut.strip()) is None  # str methods give plain strings: read it first
    import pickle

    assert pickle.loads(pickle.dumps(cut)).hit_limit is True


@pytest.mark.slow
def test_the_local_backends_say_when_a_reply_ran_to_its_limit(tiny_lm, embedded_lm):
    [cut] = tiny_lm.generate([[{"role": "user", "content": "Go on."}]], GenerationSettings(3))
    assert isinstance(cut, Reply) and cut.hit_limit is True
    ask = [{"role": "user", "content": "Say the word yes and nothing else."}]
    [done] = embedded_lm.generate([ask], GenerationSettings(max_new_tokens=40))
    assert done.hit_limit is False and len(done) < 120


@pytest.mark.parametrize("flag", [True, False, None])
def test_the_cache_keeps_the_flag(tmp_path, flag):
    cache = ScoreCache(tmp_path / "c.sqlite")
    cache.put_generation("g", Reply("text", hit_limit=flag))
    again = ScoreCache(tmp_path / "c.sqlite").get_generation("g")
    assert again == "text" and again.hit_limit is flag


def test_a_cache_written_before_the_flag_is_migrated_and_its_rows_recomputed(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the schema before replies kept the flag
        db.execute("CREATE TABLE generations (key TEXT PRIMARY KEY, text TEXT, checksum TEXT)")
        db.execute("INSERT INTO generations VALUES ('g', 'old reply', 'x')")
    cache = ScoreCache(path)
    assert cache.get_generation("g") is None  # not known whether it was cut: generate again
    assert cache.stats["generation_stale"] == 1 and cache.stats["generation_corrupt"] == 0
    cache.put_generation("g", Reply("new reply", hit_limit=False))
    assert cache.get_generation("g").hit_limit is False


def test_a_review_gets_room_for_its_judgments_by_its_length():
    assert rewrite_budget("short review") == 256  # at least the old limit
    assert rewrite_budget("x" * 1024) == 256  # 256 estimated tokens
    assert rewrite_budget("x" * 1025) == 384  # 257 tokens: the next step of 128
    assert rewrite_budget("x" * 2048) == 512
    assert rewrite_budget("x" * 100_000) == 1024  # at most 1,024
    settings = rewrite_settings("x" * 2000)
    assert settings.max_new_tokens == 512
    assert settings.prefill == PREPROCESS_SETTINGS.prefill  # only the budget differs
    assert "1024" in REWRITE_BUDGET and "256" in REWRITE_BUDGET


class Rewriter:
    """A preprocessor that writes one judgment and says it was cut when the review contains
    "CUT"; it records the budget each review was given."""

    identity = "scripted/rewriter"

    def __init__(self) -> None:
        self.budgets: dict[str, int] = {}

    async def generate(self, conversations, settings):
        out = []
        for conversation in conversations:
            review = conversation[-1]["content"]
            self.budgets[review] = settings.max_new_tokens
            out.append(Reply("The reviewer appreciates it.", hit_limit="CUT" in review))
        return out


def test_each_review_is_rewritten_with_its_own_budget():
    seen: list[int] = []

    def generate(conversations, settings):
        seen.extend(settings.max_new_tokens for _ in conversations)
        return [Reply("The reviewer appreciates it.", hit_limit=False) for _ in conversations]

    done = run_sync(rewrite_reviews(FunctionGenerator(generate), ["short", "y" * 3000, "z" * 10]))
    assert [d.judgments for d in done] == ["The reviewer appreciates it."] * 3
    assert sorted(seen) == [256, 256, 768]
    assert [d.hit_limit for d in done] == [False, False, False]


def _item(candidate: str, references: list[Review]) -> Item:
    return Item(Paper("p", title="A paper", abstract="We study things."), candidate, references)


@pytest.mark.slow
def test_gem_names_the_rewrites_that_were_cut(tiny_lm, tmp_path):
    rewriter = Rewriter()
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path, generators={})
    resources.generators["preprocessor"] = rewriter
    long_cut = "CUT " + "w" * 3000
    item = _item("A fine candidate.", [Review("r1", long_cut), Review("r2", "A short review.")])
    result = get_metric("gem").score(item, resources)
    assert result.value is not None  # scored from the rewrite as written, and said so
    assert result.details[AT_TOKEN_LIMIT] == {"rewrite of reference r1": 768}
    assert rewriter.budgets[next(k for k in rewriter.budgets if "CUT" in k)] == rewrite_budget(
        long_cut
    )
    assert result.signature.rewrite_budget == REWRITE_BUDGET
    assert get_metric("gem_raw").score(item, resources).signature.rewrite_budget == "none"
    clean = get_metric("gem").score(_item("Another.", [Review("r2", "A short review.")]), resources)
    assert AT_TOKEN_LIMIT not in clean.details
    # the families built on GEM's rewrites carry the note through
    token_cell = get_metric("fmi_kl_direct_token").score(item, resources)
    assert token_cell.details[AT_TOKEN_LIMIT] == {"rewrite of reference r1": 768}
    gppm = get_metric("gppm_token").score(item, resources)
    assert gppm.details[AT_TOKEN_LIMIT] == {"rewrite of reference r1": 768}
    assert gppm.signature.rewrite_budget == REWRITE_BUDGET


@pytest.mark.slow
def test_a_cut_candidate_rewrite_is_named_too(tiny_lm, tmp_path):
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    resources.generators["preprocessor"] = Rewriter()
    item = _item("CUT candidate", [Review("r1", "A short review.")])
    result = get_metric("gem").score(item, resources)
    assert result.details[AT_TOKEN_LIMIT] == {"rewrite of the candidate": 256}


def test_a_gppm_judgment_reply_cut_before_its_last_lines_is_named(tmp_path):
    class Oracle:
        identity = "scripted/oracle"

        async def generate(self, conversations, settings):
            # scores the first of two judgments, then runs out of room
            return [Reply("[1] ... <SCORE=2>\n[2] The initial", hit_limit=True)]

    resources = Resources(cache_dir=tmp_path, generators={"oracle": Oracle()})
    item = Item(
        Paper("p"),
        "The reviewer appreciates the proofs.",
        (Review("r1", "raw", summary="The reviewer criticizes A.\nThe reviewer likes B."),),
        flags=frozenset({"candidate_is_judgments"}),
    )
    result = get_metric("gppm_judgment", dataset_summaries=True).score(item, resources)
    assert result.value == 2.0  # the authors' rule: the unscored line counts 0 ...
    assert result.details[AT_TOKEN_LIMIT] == {"oracle reply for reference r1": 2000}  # ... said


@pytest.mark.slow
def test_the_log_counts_samples_whose_value_rests_on_a_cut_text(tmp_path):
    """Through ``inspect eval``: a preprocessor role whose replies stop at ``max_tokens`` (as an
    API model reports it) is recorded in every sample's metadata and in the metric
    ``at_token_limit``."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from gem_tasks.tasks.iclr import iclr

    cut = [
        ModelOutput.from_content(
            "mockllm/model", "The reviewer appreciates the", stop_reason="max_tokens"
        )
        for _ in range(40)
    ]
    for output in cut:  # usage given: mockllm would otherwise count tokens with a download
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    [log] = inspect_eval(
        iclr(scorers="gem", candidate="human", cache_dir=str(tmp_path / "cache")),
        model="mockllm/model",
        model_roles={"preprocessor": get_model("mockllm/model", custom_outputs=cut)},
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    metrics = log.results.scores[0].metrics
    scored = log.results.scores[0].scored_samples
    assert scored == 2 and metrics["at_token_limit"].value == 2.0
    for sample in log.samples:
        noted = sample.scores["gem"].metadata[AT_TOKEN_LIMIT]
        assert noted and all(name.startswith("rewrite of") for name in noted)
        assert all(math.isfinite(v) for v in noted.values())
