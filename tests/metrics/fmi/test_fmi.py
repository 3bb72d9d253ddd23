"""The Scoring Rules design space (scorers/metrics/fmi): the f-divergences, the
estimators of Tab. 1 on hand-computed values, the oracle's parsers, the negative
sampler, and the cells end to end with a scripted oracle. No model is loaded except the tiny
random one (cell 1 equals GEM)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from scorers import Item, Paper, Resources, Review, get_metric
from scorers.data.negatives import draw_negatives
from scorers.data.records import PaperRecord, RecordError, ReviewRecord
from scorers.lm.asking import ReplyError
from scorers.metrics.fmi import (
    DIVERGENCES,
    RatioOverflow,
    direct,
    direct_product,
    divergence,
    f_variational,
    variational_from_critic,
)
from scorers.metrics.fmi.oracle import parse_critic
from scorers.oracle import gppm_line_scores, likelihood_messages, parse_likelihood
from scorers.registry import list_metrics

LN2 = math.log(2.0)

# --------------------------------------------------------------------------- F


def test_every_f_vanishes_at_one_and_meets_fenchel_young():
    for f in DIVERGENCES.values():
        assert f.f(1.0) == pytest.approx(0.0, abs=1e-15)
        for r in (0.25, 0.9, 2.0, 7.5):
            # f*(f'(r)) = r f'(r) − f(r)
            expected = r * f.critic(math.log(r)) - f.f(r)
            assert f.conjugate_at_critic(math.log(r)) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("name", "critic", "conjugate"),
    [
        ("tv", 0.5, 0.5),
        ("kl", 1.693147, 2.0),
        ("reverse_kl", -0.5, -0.306853),
        ("pearson", 2.0, 3.0),
        ("hellinger", 0.292893, 0.414214),
    ],
)
def test_critic_and_conjugate_at_r_equal_two(name, critic, conjugate):
    f = divergence(name)
    assert f.critic(LN2) == pytest.approx(critic, abs=1e-6)
    assert f.conjugate_at_critic(LN2) == pytest.approx(conjugate, abs=1e-6)


def _mutual_information(joint, f):
    """Direct (E_Q f(r)), joint-direct (E_P f(r)/r) and variational (E_P T* − E_Q f*(T*))."""
    px = [sum(row) for row in joint]
    py = [sum(col) for col in zip(*joint)]
    product = direct_joint = variational = 0.0
    for i, row in enumerate(joint):
        for j, p in enumerate(row):
            q = px[i] * py[j]
            log_r = math.log(p / q)
            product += q * f.product_term(log_r)
            direct_joint += p * f.direct_term(log_r)
            variational += p * f.critic(log_r) - q * f.conjugate_at_critic(log_r)
    return product, direct_joint, variational


@pytest.mark.parametrize(
    ("joint", "tv", "kl"),
    [([[0.4, 0.1], [0.1, 0.4]], 0.3, 0.192745), ([[0.3, 0.1], [0.2, 0.4]], 0.2, 0.086305)],
)
def test_closed_forms_three_ways(joint, tv, kl):
    for name, expected in (("tv", tv), ("kl", kl)):
        values = _mutual_information(joint, divergence(name))
        assert values == pytest.approx((expected,) * 3, abs=1e-6)
    for f in DIVERGENCES.values():  # every f: the three routes agree at the optimal critic
        product, joint_form, variational = _mutual_information(joint, f)
        assert joint_form == pytest.approx(product) and variational == pytest.approx(product)


def test_a_half_critic_is_a_lower_bound():
    joint = [[0.3, 0.1], [0.2, 0.4]]
    px, py = [0.4, 0.6], [0.5, 0.5]
    value = sum(
        joint[i][j] * 0.25 * math.copysign(1, joint[i][j] - px[i] * py[j])
        - px[i] * py[j] * 0.25 * math.copysign(1, joint[i][j] - px[i] * py[j])
        for i in range(2)
        for j in range(2)
    )
    assert value == pytest.approx(0.1) and value < 0.2


def test_unknown_divergence_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown f-divergence 'js'"):
        divergence("js")


# --------------------------------------------------------------------------- E (Tab. 1)


def test_table_one_arithmetic():
    kl, tv = divergence("kl"), divergence("tv")
    positive, negatives = [math.log(4)], [math.log(0.5)] * 4
    assert direct(kl, positive).value == pytest.approx(1.386294, abs=1e-6)
    assert f_variational(kl, positive, negatives).value == pytest.approx(1.886294, abs=1e-6)
    assert direct(tv, positive).value == pytest.approx(0.375)
    assert f_variational(tv, positive, negatives).value == pytest.approx(1.0)
    # the TV direct score is not monotone in r: a lower ratio scores higher (asserted on purpose)
    assert direct(kl, [-LN2]).value == pytest.approx(-0.693147, abs=1e-6)
    assert direct(tv, [-LN2]).value == pytest.approx(0.5)
    assert direct_product(tv, negatives).value == pytest.approx(0.25)  # ½|½ − 1|


def test_an_empty_candidate_scores_zero_in_every_token_cell():
    kl, tv = divergence("kl"), divergence("tv")
    zeros = [0.0, 0.0]
    assert direct(kl, zeros).value == 0.0
    assert f_variational(kl, zeros, zeros).value == 0.0  # 1 + 0 − 1
    assert direct(tv, zeros).value == 0.0
    assert f_variational(tv, zeros, zeros).value == 0.0  # sign(0) = 0


def test_the_seven_point_scale():
    tv, kl = divergence("tv"), divergence("kl")
    expected_tv = [3.5, 1.5, 0.5, 0.0, 0.25, 0.375, 0.4375]
    for k, want in zip(range(-3, 4), expected_tv, strict=True):
        assert direct(tv, [k * LN2]).value == pytest.approx(want)
        assert kl.critic(k * LN2) == pytest.approx(1 + k * LN2)
    cell6 = f_variational(kl, [3 * LN2], [-3 * LN2] * 4).value
    assert cell6 == pytest.approx(2.954442, abs=1e-6)


def test_overflow_is_an_error_never_a_clipped_value():
    kl = divergence("kl")
    with pytest.raises(RatioOverflow, match="overflows float64"):
        f_variational(kl, [1.0], [800.0])
    with pytest.raises(RatioOverflow):
        direct(divergence("tv"), [-800.0])
    assert f_variational(kl, [1.0], [700.0]).value < -1e300  # large but finite: kept


def test_critic_values_outside_the_tv_bound_are_refused():
    assert variational_from_critic([0.5], [-0.5, -0.5, -0.5, -0.5]).value == 1.0
    assert variational_from_critic([0.5], [0.5, -0.5, -0.5, -0.5]).value == 0.75
    assert variational_from_critic([-0.5], [0.5] * 4).value == -1.0
    with pytest.raises(ValueError, match=r"\[-0.5, 0.5\]"):
        variational_from_critic([1.0], [0.0])
    with pytest.raises(ValueError, match="at least one reference"):
        f_variational(divergence("kl"), [1.0], [])


# --------------------------------------------------------------------------- Π: the oracle


def test_likelihood_parser_is_strict():
    reply = "[1] The initial comments support it. <SCORE=3>\n[2] They oppose it. <SCORE=-2>"
    assert parse_likelihood(reply, 2) == [3, -2]
    assert parse_likelihood("Reasons first.\n[1] x <score = +1>", 1) == [1]
    for bad, count, match in (
        ("[1] x <SCORE=4>", 1, "outside -3..3"),
        ("[1] x", 1, "found 0"),
        ("[1] a <SCORE=1>\n[2] b <SCORE=0>", 3, "expected 3"),
        ("[1] a <SCORE=1> <SCORE=2>", 1, "two scores|2 scores"),
    ):
        with pytest.raises(ReplyError, match=match) as error:
            parse_likelihood(bad, count)
        assert error.value.reply == bad


def test_gppm_worked_examples_and_the_authors_line_parser():
    iclr = "\n\n".join(
        f"[{i}] reasons. <SCORE={s}>" for i, s in enumerate([3, 2, 0, 2, 0, 3, 2, 0, 2], 1)
    )
    assert sum(s for s in gppm_line_scores(iclr) if s is not None) == 14
    yelp = "[1] a <SCORE=0>\n[2] b <SCORE=3>\n[3] c <SCORE=-1>"
    assert sum(s for s in gppm_line_scores(yelp) if s is not None) == 2
    assert gppm_line_scores("x <SCORE=+2>\nScore: -1\nSCORE=3 and SCORE=-2\nnothing") == [
        None, -1, -2, None,
    ]  # fmt: skip


def test_the_binary_critic_is_plus_or_minus_a_half_of_the_one_yes_no_reader():
    """App. C Eq. 5: yes → +½, no → −½; which replies are read is the project's one yes/no
    reader's business (tests/core/test_answers.py)."""
    assert parse_critic("Yes, it supports it.") == 0.5
    assert parse_critic("**No**") == -0.5
    with pytest.raises(ReplyError):
        parse_critic("The answer is yes")


def test_likelihood_prompt_numbers_the_statements_and_keeps_texts_literal():
    [system, user] = likelihood_messages("The reviewer likes {{ x }}.", ["A\nB.", "C."])
    assert system["content"].startswith("You will receive the abstract of a scientific paper")
    assert "<SCORE=...>" in system["content"]
    assert user["content"].endswith(
        "[Initial reviewer comments]\n\nThe reviewer likes {{ x }}.\n\n"
        "[Additional reviewer comments]\n\n[1] A B.\n[2] C."
    )
    # the placeholder is the GPPM authors' code's "Not given" (their App. D.3 prints "Not
    # Provided"; the code, which produced their numbers, decides)
    assert user["content"].startswith("[Abstract of the paper]\n\nNot given\n\n")
    assert "Not Provided" not in user["content"]
    assert "An abstract." in likelihood_messages("x", ["y"], synopsis="An abstract.")[1]["content"]
    # an empty abstract never silently becomes the placeholder
    with pytest.raises(ValueError, match="empty synopsis"):
        likelihood_messages("x", ["y"], synopsis="  ")


# --------------------------------------------------------------------------- negatives


def _paper(pid, venue="ICLR", reviews=("a", "b")):
    return PaperRecord(
        id=pid,
        venue=venue,
        title=pid,
        abstract="",
        reviews=tuple(ReviewRecord(id=f"r{i}", text=t) for i, t in enumerate(reviews)),
    )


def test_negatives_are_other_papers_of_the_group_fixed_by_the_seed():
    pool = [_paper(f"p{i}") for i in range(8)] + [_paper("x", venue="NeurIPS")]
    first = draw_negatives(pool[0], pool, k=4, seed=0)
    assert len(first) == 4 and len({n.paper_id for n in first}) == 4
    assert all(n.paper_id not in ("p0", "x") for n in first)
    assert draw_negatives(pool[0], list(reversed(pool)), k=4, seed=0) == first
    draws = {tuple(n.id for n in draw_negatives(pool[0], pool, k=4, seed=s)) for s in range(6)}
    assert len(draws) > 1
    empty_only = _paper("p9", reviews=("  ",))
    assert all(n.paper_id != "p9" for n in draw_negatives(pool[0], [*pool, empty_only], k=7))
    with pytest.raises(RecordError, match="4 negative reference.*has 0"):
        draw_negatives(pool[-1], pool, k=4)
    with pytest.raises(ValueError, match="at least 1"):
        draw_negatives(pool[0], pool, k=0)


# --------------------------------------------------------------------------- the cells


ADDITIONAL = ("[Additional reviewer comments]", "[Additional summary statements]")
"""Where the 7-point prompt lists the reference's statements (peer review, summaries)."""


class ScriptedOracle:
    """Answers by rule: ``support(statement)`` for binary questions, ``scores(statements)`` for
    7-point ones; records every call."""

    identity = "scripted/oracle"

    def __init__(self, *, support=None, scores=None, replies=None):
        self.support = support
        self.scores = scores
        self.replies = replies
        self.calls: list[str] = []
        self.systems: list[str] = []
        self.settings: list = []

    async def generate(self, conversations, settings):
        out = []
        for conversation in conversations:
            user = conversation[-1]["content"]
            self.calls.append(user)
            self.systems.append(conversation[0]["content"])
            self.settings.append(settings)
            if self.replies is not None:
                out.append(self.replies.pop(0))
            elif "[Statement]" in user or "[Report 2]" in user:
                marker = "[Statement]\n\n" if "[Statement]" in user else "[Report 2]\n\n"
                statement = user.split(marker)[1].split("\n\n")[0]
                out.append("Yes" if self.support(statement) else "No")
            else:
                marker = next(m for m in ADDITIONAL if m in user)
                lines = user.split(f"{marker}\n\n")[1].splitlines()
                ks = self.scores([line.split("] ", 1)[1] for line in lines])
                out.append("\n".join(f"[{i}] r <SCORE={k}>" for i, k in enumerate(ks, 1)))
        return out


def _judgments(*points):
    return "\n".join(f"The reviewer {p}" for p in points)


def _item(candidate="The candidate review.", *, negatives=None):
    positive = Review("pos", "a raw review", summary=_judgments("p1.", "p2.", "p3.", "p4."))
    negatives = negatives or [
        Review("n1/r", "raw", summary=_judgments("n1a.", "n1b.")),
        Review("n2/r", "raw", summary=_judgments("n2a.", "n2b.", "n2c.", "n2d.")),
        Review("n3/r", "raw", summary=_judgments("n3a.")),
        Review("n4/r", "raw", summary=_judgments("n4a.", "n4b.")),
    ]
    return Item(Paper("p", abstract="An abstract."), candidate, (positive,), tuple(negatives))


def _resources(oracle, tmp_path):
    """The oracle bound to its role; an evaluation LM that cannot load, so that a cell that
    needs none (stored statements, a bound oracle) is seen not to load one."""
    missing = f"hf/{tmp_path / 'no-such-model'}"
    return Resources(evaluation_lm=missing, cache_dir=tmp_path, generators={"oracle": oracle})


def test_the_new_metric_by_hand(tmp_path):
    """The new metric, by hand: T_Ψ⁺ = 0.25; negatives (−½, −¼, −½, 0), mean −0.3125; Ŝ = 0.5625."""
    yes = {"p1.", "p2.", "p4.", "n2a.", "n4a."}  # n1: 0/2, n2: 1/4, n3: 0/1, n4: 1/2
    oracle = ScriptedOracle(support=lambda s: s.removeprefix("The reviewer ") in yes)
    metric = get_metric("ctv", dataset_summaries=True)
    result = metric.score(_item(), _resources(oracle, tmp_path))
    assert result.value == pytest.approx(0.5625)
    assert len(oracle.calls) == 4 + (2 + 4 + 1 + 2) == result.details["oracle_calls"]
    critics = {t["reference_id"]: t["critic"] for t in result.terms}
    assert critics == {"pos": 0.25, "n1/r": -0.5, "n2/r": -0.25, "n3/r": -0.5, "n4/r": 0.0}
    assert result.signature.representation == "statement" and result.signature.negatives == 4
    assert result.signature.oracle == "scripted/oracle"


def test_rewrite_lines_that_are_not_judgments_are_counted_not_asked(tmp_path):
    """A rewrite written as a paragraph ("The reviewer ... They also ...") gives statements only
    from its "The reviewer" lines; the other lines are counted in the metadata, never asked."""
    paragraph = Review(
        "pos", "raw", summary="The reviewer likes A.\nThey also like B.\n\nThey doubt C."
    )
    item = replace(_item(), references=(paragraph,))
    oracle = ScriptedOracle(support=lambda s: True)
    result = get_metric("ctv", dataset_summaries=True).score(item, _resources(oracle, tmp_path))
    assert [t["statements"] for t in result.terms if t["reference_id"] == "pos"] == [1]
    assert result.details["lines_not_statements"] == {"pos": 2}
    assert not any("They" in call for call in oracle.calls)
    clean = get_metric("ctv", dataset_summaries=True).score(_item(), _resources(oracle, tmp_path))
    assert "lines_not_statements" not in clean.details


def test_a_sycophantic_oracle_cannot_reward_anything(tmp_path):
    for name, options in (("ctv", {"dataset_summaries": True}), ("tvd_mi", {})):
        oracle = ScriptedOracle(support=lambda s: True)
        result = get_metric(name, **options).score(_item(), _resources(oracle, tmp_path))
        assert result.value == 0.0
    # the same references as positives and negatives: 0 for any oracle
    same = [Review("pos", "a raw review", summary=_judgments("p1.", "p2.", "p3.", "p4."))]
    oracle = ScriptedOracle(support=lambda s: s.endswith("p1."))
    item = _item(negatives=[Review("copy", same[0].text, summary=same[0].summary)])
    assert (
        get_metric("ctv", dataset_summaries=True).score(item, _resources(oracle, tmp_path)).value
        == 0.0
    )


def test_tvd_mi_values_and_calls(tmp_path):
    oracle = ScriptedOracle(support=lambda report: report == "a raw review")
    item = _item()
    result = get_metric("tvd_mi").score(item, _resources(oracle, tmp_path))
    assert result.value == 1.0 and result.details["oracle_calls"] == 5
    oracle = ScriptedOracle(support=lambda report: report in ("a raw review", "n1"))
    negatives = [
        Review("n1/r", "n1"),
        Review("n2/r", "n2"),
        Review("n3/r", "n3"),
        Review("n4/r", "n4"),
    ]
    assert (
        get_metric("tvd_mi").score(_item(negatives=negatives), _resources(oracle, tmp_path)).value
        == 0.75
    )


def test_likelihood_cells_by_hand(tmp_path):
    # positive statements get k = 3, 1, 0, 2; every negative statement k = -3
    scores = {"p1.": 3, "p2.": 1, "p3.": 0, "p4.": 2}

    def oracle():
        return ScriptedOracle(
            scores=lambda ss: [scores.get(s.removeprefix("The reviewer "), -3) for s in ss]
        )

    mean_log_r = (3 + 1 + 0 + 2) / 4 * LN2
    cases = {
        # the cell the paper names GPPM-J (Tab. 9) gives GPPM-J's number: the sum (GPPM §5.2)
        "fmi_kl_direct_statement": 6 * LN2,
        "gppm_j": 6 * LN2,
        # the other likelihood statement cells average (App. C, Eq. 6)
        "fmi_tv_direct_statement": 0.5 * abs(1 - math.exp(-mean_log_r)),
        "fmi_kl_fvar_statement": 1 + mean_log_r - 2.0**-3,
    }
    for name, expected in cases.items():
        scripted = oracle()
        result = get_metric(name, dataset_summaries=True).score(
            _item(), _resources(scripted, tmp_path)
        )
        assert result.value == pytest.approx(expected), name
        # one call per reference (GPPM App. D.3 batches a reference's statements)
        assert len(scripted.calls) == (5 if name == "fmi_kl_fvar_statement" else 1), name
    # the report cells send the whole reference as the one statement
    report = ScriptedOracle(scores=lambda ss: [2 if ss == ["a raw review"] else -1])
    result = get_metric("fmi_kl_fvar_report").score(_item(), _resources(report, tmp_path))
    assert result.value == pytest.approx(1 + 2 * LN2 - 0.5)


def test_the_oracle_cells_speak_the_items_domain(tmp_path):
    """A summary's statements ("The summary states that ...") are asked in the summarization
    wording, and the numbers are those of the same statements as reviews: only words change."""

    def as_summaries(item: Item) -> Item:
        def convert(review: Review) -> Review:
            lines = review.summary.replace("The reviewer ", "The summary states that ")
            return replace(review, summary=lines)

        return replace(
            item,
            domain="summarization",
            references=tuple(map(convert, item.references)),
            negatives=tuple(map(convert, item.negatives)),
        )

    yes = {"p1.", "p2.", "p4.", "n2a.", "n4a."}
    scores = {"p1.": 3, "p2.": 1, "p3.": 0, "p4.": 2}
    for name in ("ctv", "gppm_j", "tvd_mi"):
        values, prompts_used = [], []
        for item in (_item(), as_summaries(_item())):
            oracle = ScriptedOracle(
                support=lambda s: s.split(" ")[-1] in yes or s == "a raw review",
                scores=lambda ss: [scores.get(s.split(" ")[-1], -3) for s in ss],
            )
            options = {} if name == "tvd_mi" else {"dataset_summaries": True}
            result = get_metric(name, **options).score(item, _resources(oracle, tmp_path))
            values.append(result.value)
            prompts_used.append(sorted(result.signature.prompts))
            summary = item.domain == "summarization"
            assert all(("summar" in system) == summary for system in oracle.systems), name
            assert all(("review" in system) != summary for system in oracle.systems), name
        assert values[0] == pytest.approx(values[1]) and values[0] is not None, name
        assert all(not p.startswith("domains/") for p in prompts_used[0]), name
        assert all(p.startswith("domains/summarization/") for p in prompts_used[1]), name
    assert {"qa", "summarization"} <= set(get_metric("gsppm_judgment").spec.domains)
    assert "opinion_summarization" not in get_metric("gsppm_judgment").spec.domains  # no θ


def test_an_unreadable_oracle_is_retried_once_then_unscored(tmp_path):
    oracle = ScriptedOracle(replies=["Perhaps.", "I cannot say."])
    item = _item(negatives=[Review("n/r", "other")])
    result = get_metric("fmi_kl_direct_report").score(item, _resources(oracle, tmp_path))
    assert result.value is None and len(oracle.calls) == 2
    # the greedy first call is retried sampled: a local greedy oracle would repeat itself
    assert [(s.seed, s.temperature) for s in oracle.settings] == [(0, 0.0), (1, 0.7)]
    assert result.reason.startswith("reference pos: unreadable oracle reply: expected 1")
    assert "(after 2 call(s))" in result.reason
    assert "I cannot say." in result.reason
    assert result.details["oracle_calls"] == 2  # the cost is kept for an unscored item
    assert result.signature.oracle == "scripted/oracle"


def test_the_seven_point_reply_limit_is_an_option_in_the_signature(tmp_path):
    """``max_tokens`` bounds each 7-point reply (default 2,000, the GPPM authors' limit), is
    passed to the oracle on the first call and the retry, and splits the signature; the binary
    cells have no such option, and a limit that is not a positive integer is refused."""
    from scorers import MetricError

    item = _item(negatives=[Review("n/r", "other")])
    default = ScriptedOracle(replies=["Perhaps.", "No."])
    first = get_metric("fmi_kl_direct_report").score(item, _resources(default, tmp_path))
    assert [s.max_new_tokens for s in default.settings] == [2000, 2000]
    capped = ScriptedOracle(replies=["Perhaps.", "No."])
    second = get_metric("fmi_kl_direct_report", max_tokens=300).score(
        item, _resources(capped, tmp_path / "other-cache")
    )
    assert [s.max_new_tokens for s in capped.settings] == [300, 300]
    assert (first.signature.max_tokens, second.signature.max_tokens) == (2000, 300)
    assert first.signature.id != second.signature.id
    assert "max_tokens" not in get_metric("ctv").options  # a binary critic has no 7-point reply
    for bad in (0, -5):
        with pytest.raises(MetricError, match="'max_tokens' must be at least 1"):
            get_metric("gppm_j", max_tokens=bad)
    for bad in (2.5, "400", True):
        with pytest.raises(MetricError, match="'max_tokens' must be int"):
            get_metric("gppm_j", max_tokens=bad)
    with pytest.raises(MetricError, match="has no option"):
        get_metric("tvd_mi", max_tokens=100)


def test_an_empty_candidate_asks_nothing_and_reveals_nothing(tmp_path):
    oracle = ScriptedOracle(support=lambda s: True)
    result = get_metric("ctv", dataset_summaries=True).score(
        _item(" "), _resources(oracle, tmp_path)
    )
    assert result.value == 0.0 and oracle.calls == []
    result = get_metric("fmi_kl_direct_report").score(_item(""), _resources(oracle, tmp_path))
    assert result.value == 0.0 and oracle.calls == []


def test_f_variational_cells_need_negatives(tmp_path):
    item = Item(Paper("p"), "c", (Review("r", "text"),))
    result = get_metric("ctv").score(item, _resources(ScriptedOracle(support=bool), tmp_path))
    assert result.value is None and result.reason == "no negative references"


def test_options_are_checked():
    from scorers import MetricError

    with pytest.raises(MetricError, match="'divergence' must be 'kl' or 'tv', got 'pearson'"):
        get_metric("fmi_kl_direct_report", divergence="pearson")
    assert get_metric("fmi_kl_fvar_token", divergence="hellinger").f.name == "hellinger"
    with pytest.raises(MetricError, match="'aggregation' must be 'mean' or 'sum'"):
        get_metric("gppm_j", aggregation="max")


def test_all_twelve_cells_are_registered():
    specs = {s.name: s for s in list_metrics() if s.family == "fmi"}
    cells = {f"fmi_{f}_{e}_{r}" for f in ("kl", "tv") for e in ("direct", "fvar")
             for r in ("token", "report", "statement")}  # fmt: skip
    assert cells == set(specs)
    assert specs["fmi_kl_direct_statement"].aliases == ("gppm_j",)  # the cell is GPPM-J
    assert specs["fmi_tv_fvar_report"].aliases == ("tvd_mi",)
    assert specs["fmi_tv_fvar_statement"].aliases == ("ctv",)
    assert "negatives" in specs["fmi_tv_fvar_statement"].needs
    assert "negatives" not in specs["fmi_kl_direct_report"].needs
    assert "negatives" not in specs["fmi_tv_direct_token"].needs  # product form: on request


@pytest.mark.slow
def test_cell_one_is_gem_and_the_token_cells_follow_from_its_terms(tiny_lm, tmp_path):
    references = (Review("r1", "x", summary="The reviewer likes the method."),)
    negatives = tuple(
        Review(f"n{i}/r", "y", summary=f"The reviewer criticizes the proof {i}.") for i in range(4)
    )
    item = Item(Paper("p"), "The reviewer likes the method a lot.", references, negatives,
                flags=frozenset({"candidate_is_judgments"}))  # fmt: skip
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    gem = get_metric("gem", dataset_summaries=True).score(item, resources)
    cell1 = get_metric("fmi_kl_direct_token", dataset_summaries=True).score(item, resources)
    assert cell1.value == gem.value
    nwj = get_metric("fmi_kl_fvar_token", dataset_summaries=True).score(item, resources)
    terms = {t["reference_id"]: t["log_ratio"] for t in nwj.terms}
    expected = 1 + terms["r1"] - sum(math.exp(terms[n.id]) for n in negatives) / 4
    assert nwj.value == pytest.approx(expected, rel=1e-12)
    assert nwj.details["logprob_requests"] == 10


@pytest.mark.slow
def test_fmi_cells_through_inspect_with_an_oracle_role(tmp_path, demo_records):
    """``inspect eval gem_tasks/iclr`` with a token cell and TVD-MI: each sample carries four
    negatives of other papers; the oracle role answers (here an always-"Yes" model, so TVD-MI is
    exactly 0); the plain-Python call gives exactly the logged number."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    from gem_tasks.tasks.iclr import iclr
    from scorers.data.records import split_reviews

    yes = []
    for _ in range(12):  # usage given: otherwise Inspect counts tokens with a downloaded encoding
        output = ModelOutput.from_content("mockllm/model", "Yes")
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        yes.append(output)
    [log] = inspect_eval(
        iclr(
            candidate="human",
            scorers="tvd_mi,fmi_kl_fvar_token",
            dataset_summaries=True,
            cache_dir=str(tmp_path / "cache"),
        ),
        model="mockllm/model",
        model_roles={"oracle": get_model("mockllm/model", custom_outputs=yes)},
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    resources = Resources(evaluation_lm="embedded", cache_dir=tmp_path / "cache")
    by_id = {paper.id: paper for paper in demo_records}
    for sample in log.samples:
        negatives = sample.metadata["negatives"]
        assert len(negatives) == 4 and all(n["paper_id"] != sample.id for n in negatives)
        tvd = sample.scores["fmi_tv_fvar_report"]  # the alias logs under the cell name
        assert tvd.value == 0.0 and tvd.metadata["oracle_calls"] == 6
        assert tvd.metadata["signature"]["oracle"] == "inspect/mockllm/model"
        paper = by_id[sample.id]
        split = split_reviews(paper, references=2, seed=0)
        item = Item(
            paper=Paper(id=paper.id, title=paper.title, abstract=paper.abstract),
            candidate=split.held_out.text,
            references=tuple(Review(r.id, r.text, r.summary) for r in split.references),
            negatives=tuple(Review(n["id"], n["text"], n["summary"]) for n in negatives),
            candidate_summary=split.held_out.summary,
        )
        result = get_metric("fmi_kl_fvar_token", dataset_summaries=True).score(item, resources)
        logged = sample.scores["fmi_kl_fvar_token"]
        assert result.value == logged.value
        assert result.signature.as_dict()["id"] == logged.metadata["signature"]["id"]


@pytest.mark.slow
def test_an_fmi_cell_in_the_robustness_task_keeps_its_negatives(tmp_path, tiny_folder):
    """Judgment deletion on stored summaries with NWJ: both sides of a pair use the same four
    negatives, and the paired score is logged for every sample (scored by the tiny random
    Llama: what is checked is where the negatives go, not what the scores are worth)."""
    from inspect_ai import eval as inspect_eval

    from gem_tasks.tasks.robustness import robustness

    [log] = inspect_eval(
        robustness(
            perturbation="judgment_deletion",
            scorers="fmi_kl_fvar_token",
            dataset_summaries=True,
            cache_dir=str(tmp_path / "cache"),
            scorer_lm=f"hf/{tiny_folder}",
        ),
        model="mockllm/model",
        limit=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    for sample in log.samples:
        assert len(sample.metadata["negatives"]) == 4
        paired = sample.scores["fmi_kl_fvar_token_paired"]
        assert set(paired.value) >= {"before", "after"}
        assert all(math.isfinite(paired.value[side]) for side in ("before", "after"))


def test_a_rerun_and_a_second_model_pay_only_for_new_questions(tmp_path):
    """Behind the cache (as an Inspect role model is), a rerun asks the oracle nothing; a second
    candidate against the same references asks only its own questions (the references'
    decompositions are shared)."""
    from scorers.lm.cache import ScoreCache
    from scorers.lm.generation import CachedGenerator

    asked: list[str] = []
    decomposed: list[str] = []

    async def oracle(conversation, settings):
        asked.append(conversation[-1]["content"])
        return "Yes" if "p1." in conversation[-1]["content"] else "No"

    async def preprocessor(conversation, settings):
        text = conversation[-1]["content"]
        decomposed.append(text)
        point = "p" if text == "a raw review" else text
        return f"The reviewer makes point {point}1.\nThe reviewer makes point {point}2."

    cache = ScoreCache(tmp_path / "cache.sqlite")
    resources = Resources(
        cache_dir=tmp_path,
        generators={
            "oracle": CachedGenerator("scripted/oracle", oracle, cache),
            "preprocessor": CachedGenerator("scripted/pre", preprocessor, cache),
        },
    )
    metric = get_metric("ctv")  # statements from the preprocessor's rewrites
    negatives = [Review(f"n{i}/r", f"other review {i}") for i in range(4)]
    first = metric.score(_item(negatives=negatives), resources)
    assert first.value is not None and len(decomposed) == 5  # 1 positive + 4 negatives
    assert len(asked) == 5 * 2  # two statements per reference
    assert first.value == pytest.approx(0.5)  # T⁺ = (½ − ½)/2 = 0, every T⁻ = −½
    again = metric.score(_item(negatives=negatives), resources)
    assert again.value == first.value and len(asked) == 10 and len(decomposed) == 5
    metric.score(_item("Another model's review.", negatives=negatives), resources)
    assert len(asked) == 20 and len(decomposed) == 5


def test_llm_decomposition_option(tmp_path):
    """statements=llm: the generic decomposition prompt, one claim per line (markers removed);
    a reference whose decomposition is empty is left out with its reason."""
    replies = {"a raw review": "- Claim one.\n2. Claim two.\n\n", "raw": "   "}

    class Decomposer:
        identity = "scripted/decomposer"
        prompts: list[str] = []

        async def generate(self, conversations, settings):
            self.prompts += [c[0]["content"] for c in conversations]
            return [replies[c[-1]["content"]] for c in conversations]

    decomposer = Decomposer()
    oracle = ScriptedOracle(scores=lambda statements: [2 for _ in statements])
    resources = Resources(
        cache_dir=tmp_path, generators={"oracle": oracle, "preprocessor": decomposer}
    )
    item = _item(negatives=[Review("n/r", "raw")])
    result = get_metric("fmi_kl_direct_statement", statements="llm").score(item, resources)
    assert result.value == pytest.approx(2 * 2 * LN2)  # two claims, summed (GPPM-J)
    [term] = result.terms
    assert term["statements"] == 2 and term["scores"] == [2, 2]
    assert "atomic claims" in decomposer.prompts[0]
    assert "[1] Claim one.\n[2] Claim two." in oracle.calls[0]
    assert result.signature.statements == "llm"


def test_tv_direct_product_form_uses_the_negatives(tmp_path):
    """½|r̂(x, y⁻) − 1| averaged over the negatives (Tab. 1's product form): 7-point scores −1
    and 1 on two negatives give (¼ + ½)/2; without negatives the item is unscored."""
    scores = {"n1": -1, "n2": 1}
    oracle = ScriptedOracle(scores=lambda ss: [scores.get(ss[0], 0)])
    item = _item(negatives=[Review("n1/r", "n1"), Review("n2/r", "n2")])
    metric = get_metric("fmi_tv_direct_report", tv_direct_form="product")
    result = metric.score(item, _resources(oracle, tmp_path))
    assert result.value == pytest.approx((0.25 + 0.5) / 2)
    assert result.signature.tv_direct_form == "product" and result.signature.negatives == 2
    lone = Item(Paper("p"), "c", (Review("r", "text"),))
    assert metric.score(lone, _resources(oracle, tmp_path)).reason == "no negative references"


def test_an_overflowing_ratio_leaves_the_item_unscored(tmp_path, monkeypatch):
    """NWJ with a negative PMI of 800 nats: exp overflows float64; the item is unscored with the
    reason and its terms, never clipped."""
    from scorers.metrics.fmi import family

    async def token_side(self, item, resources, negatives):
        positive = family._Side([1.0], [{"reference_id": "pos", "log_ratio": 1.0}])
        negative = family._Side([800.0], [{"reference_id": "n", "log_ratio": 800.0}])
        return positive, negative, {"logprob_requests": 4}, None

    monkeypatch.setattr(family.ScoringRuleMetric, "_token_side", token_side)
    item = _item(negatives=[Review("n", "raw")])
    result = get_metric("fmi_kl_fvar_token").score(item, _resources(None, tmp_path))
    assert result.value is None and result.reason.startswith("ratio overflow")
    assert "never clipped" in result.explanation
    assert [t["side"] for t in result.terms] == ["positive", "negative"]
