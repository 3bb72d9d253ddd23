"""GPPM and GSPPM (scorers/metrics/gppm): TOKEN equals GEM's conditional term, JUDGMENT sums the
authors' line parser's scores, with the paper's worked examples."""

from __future__ import annotations

import pytest

from scorers import Item, Paper, Resources, Review, get_metric

ICLR_EXAMPLE = "\n\n".join(
    f"[{i}] The initial comments ... <SCORE={s}>"
    for i, s in enumerate([3, 2, 0, 2, 0, 3, 2, 0, 2], start=1)
)  # GPPM App. D.3 example output: sums to 14


class Scripted:
    identity = "scripted/oracle"

    def __init__(self, replies):
        self.replies = list(replies)
        self.users: list[str] = []
        self.limits: list[int] = []

    async def generate(self, conversations, settings):
        self.users += [c[-1]["content"] for c in conversations]
        self.limits += [settings.max_new_tokens for _ in conversations]
        return [self.replies.pop(0) for _ in conversations]


def _item(candidate="The reviewer appreciates the proofs.", references=None):
    references = references or (
        Review("r1", "raw one", summary="The reviewer criticizes A.\nThe reviewer likes B."),
    )
    return Item(
        Paper("p", abstract="We study symmetric functions."),
        candidate,
        tuple(references),
        flags=frozenset({"candidate_is_judgments"}),
    )


@pytest.mark.slow
def test_token_is_the_conditional_term_and_differs_from_gem_by_the_marginal(tiny_lm, tmp_path):
    resources = Resources(evaluation_lm=tiny_lm, cache_dir=tmp_path)
    item = _item()
    gppm = get_metric("gppm_token", dataset_summaries=True).score(item, resources)
    [term] = gppm.terms
    assert gppm.value == pytest.approx(term["conditional"])
    assert gppm.value - gppm.details["pmi"] == pytest.approx(term["marginal"])
    assert gppm.details["logprob_requests"] == 2  # the cost benchmark reads this
    assert gppm.signature.synopsis == "placeholder 'Not given'"
    other = get_metric("gppm_token", dataset_summaries=True, placeholder="Not Provided")
    changed = other.score(item, resources)
    assert changed.signature.id != gppm.signature.id and changed.value != gppm.value
    gsppm = get_metric("gsppm_token", dataset_summaries=True).score(item, resources)
    gem_s = get_metric("gem_s", dataset_summaries=True).score(item, resources)
    assert gsppm.details["pmi"] == gem_s.value
    assert gsppm.value == pytest.approx(gem_s.terms[0]["conditional"])


def test_judgment_sums_the_worked_example_and_counts_lines(tmp_path):
    oracle = Scripted([ICLR_EXAMPLE + "\nA closing remark without a score."])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert result.value == 14.0
    [term] = result.terms
    assert (term["scored_lines"], term["unscored_lines"], term["target_judgments"]) == (9, 1, 2)
    assert "[1] The reviewer criticizes A.\n[2] The reviewer likes B." in oracle.users[0]
    # the synopsis slot holds the authors' code's placeholder (App. D.3 prints "Not Provided")
    assert "[Abstract of the paper]\n\nNot given\n\n" in oracle.users[0]
    assert result.signature.synopsis == "placeholder 'Not given'"


def test_judgment_counts_rewrite_lines_that_are_not_judgments(tmp_path):
    """A paragraph-style reference rewrite keeps only its "The reviewer" lines as targets; the
    others are counted in the metadata (lines_not_statements), not silently lost."""
    paragraph = Review(
        "r1", "raw", summary="Here are the judgments:\nThe reviewer likes A.\nThey also like B."
    )
    oracle = Scripted(["[1] The reviewer likes A. <SCORE=2>"])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(
        _item(references=[paragraph]), resources
    )
    [term] = result.terms
    assert term["target_judgments"] == 1 and result.value == 2.0
    assert result.details["lines_not_statements"] == {"r1": 2}
    assert "They also" not in oracle.users[0]
    clean = Scripted([ICLR_EXAMPLE])
    resources = Resources(cache_dir=tmp_path / "clean", generators={"oracle": clean})
    assert "lines_not_statements" not in (
        get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources).details
    )


def test_judgment_reply_limit_is_an_option_in_the_signature(tmp_path):
    from scorers import MetricError

    oracle = Scripted([ICLR_EXAMPLE, ICLR_EXAMPLE])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    default = get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources)
    capped = get_metric("gppm_judgment", dataset_summaries=True, max_tokens=300).score(
        _item(), resources
    )
    assert oracle.limits == [2000, 300]  # the authors' limit, then the cap
    assert default.signature.max_tokens == 2000 and capped.signature.max_tokens == 300
    assert default.signature.id != capped.signature.id and capped.value == default.value == 14.0
    for bad in (0, -5):
        with pytest.raises(MetricError, match="'max_tokens' must be at least 1"):
            get_metric("gsppm_judgment", max_tokens=bad)
    for bad in (2.5, True, "400"):
        with pytest.raises(MetricError, match="'max_tokens' must be int"):
            get_metric("gsppm_judgment", max_tokens=bad)


def test_judgment_yelp_example_and_the_abstract_of_gsppm(tmp_path):
    oracle = Scripted(["[1] a <SCORE=0>\n[2] b <SCORE=3>\n[3] c <SCORE=-1>"])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gsppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert result.value == 2.0
    assert "We study symmetric functions." in oracle.users[0]


def test_judgment_of_an_empty_candidate_asks_nothing(tmp_path):
    oracle = Scripted([])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(_item("  "), resources)
    assert result.value == 0.0 and oracle.users == []
    assert result.details["flags"] == ["empty_candidate"]
    empty = _item(references=[Review("r1", " ")])
    unscored = get_metric("gppm_judgment").score(empty, resources)
    assert unscored.value is None and "empty reference text" in unscored.reason


def test_cluster_table_against_a_direct_computation():
    import math

    import numpy as np

    from scorers.metrics.gppm.cluster import ClusterTable, fit_clusters, report_vector

    # two clusters; item A: reports (1,0), (1,1), (0,0); item B: (1,0), (1,0)
    items = [[(1, 0), (1, 1), (0, 0)], [(1, 0), (1, 0)]]
    table = ClusterTable.from_reports(items)
    assert table.pairs == 4  # 3 pairs in A, 1 in B
    # cluster 0 over the 4 pairs: (1,1) (1,0) (1,0) (1,1) -> n11 = 2, mixed = 2, n00 = 0
    p00, p11, p01 = 0.5 / 6, 2.5 / 6, 3 / 12
    assert table.joint[0].ravel().tolist() == pytest.approx([p00, p01, p01, p11])
    assert table.joint[0].sum() == pytest.approx(1.0)
    # cluster 1: (0,1) (0,0) (1,0) (0,0) -> n00 = 2, mixed = 2
    q00, q01 = 2.5 / 6, 3 / 12  # q11 = 0.5 / 6
    expected = math.log(p11 / (p01 + p11)) + math.log(q01 / (q00 + q01))
    assert table.score((1, 0), (1, 1)) == pytest.approx(expected)
    # a cell never seen gets ½ pseudo-count: no −inf
    assert math.isfinite(table.score((0, 1), (0, 1)))
    assert report_vector([2, 0, 2], 4) == [True, False, True, False]
    with pytest.raises(ValueError, match="two reports"):
        ClusterTable.from_reports([[(1, 0)]])
    points = np.concatenate([np.zeros((5, 2)), np.ones((5, 2)) * 10])
    model = fit_clusters(points, n_clusters=2)
    assert len(set(model.predict(points[:5]))) == 1 and len(set(model.predict(points))) == 2


class TopicEmbedder:
    """Judgments about writing -> (1, 0), anything else -> (0, 1)."""

    identity = "test/topic-embedder"

    def encode(self, texts, *, prompt_name=None):
        import numpy as np

        return np.array([[1.0, 0.0] if "writing" in t else [0.0, 1.0] for t in texts])


def _past_reports(path, papers):
    """A fit file of canonical records: per paper, its reviews given as judgment summaries."""
    import json

    rows = [
        {
            "id": f"p{i}",
            "title": "t",
            "abstract": "a",
            "reviews": [{"id": f"r{j}", "text": "raw", "summary": s} for j, s in enumerate(rs)],
        }
        for i, rs in enumerate(papers)
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows))
    return path


def test_cluster_metric_fits_once_and_scores_by_hand(tmp_path):
    import math

    from scorers import MetricError
    from scorers.metrics.gppm.cluster import ClusterTable

    writing, method = "The reviewer likes the writing.", "The reviewer criticizes the method."
    papers = [  # per paper, reviews as judgment summaries
        [writing, writing],
        [method, method],
        [f"{writing}\n{method}", method],
    ]
    fit = _past_reports(tmp_path / "past.jsonl", papers)
    resources = Resources(cache_dir=tmp_path, embedders={"topic": TopicEmbedder()})
    metric = get_metric(
        "gppm_cluster", fit_on=str(fit), n_clusters=2, embedder="topic", dataset_summaries=True
    )
    item = Item(
        Paper("new"),
        writing,
        (Review("r1", "raw", summary=writing), Review("r2", "raw", summary=method)),
        flags=frozenset({"candidate_is_judgments"}),
    )
    result = metric.score(item, resources)
    # the clusters' numbering is K-means's: rebuild the table in its labels
    from scorers.metrics.gppm.family import _fitted

    [model] = [m for key, (m, _, _) in _fitted.items() if key[0] == str(fit)]
    w, m = model.kmeans.predict(TopicEmbedder().encode([writing, method]))

    def vec(*labels):
        return [c in labels for c in range(2)]

    table = ClusterTable.from_reports([[vec(w), vec(w)], [vec(m), vec(m)], [vec(w, m), vec(m)]])
    expected = (table.score(vec(w), vec(w)) + table.score(vec(w), vec(m))) / 2
    assert result.value == pytest.approx(expected) and math.isfinite(result.value)
    assert result.details["fit_pairs"] == 3 and result.details["fit_judgments"] == 7
    assert "lines_not_statements" not in result.details
    assert result.signature.fit_on.startswith("past.jsonl:")
    assert metric.score(item, resources).value == result.value  # fitted once, reused
    # lines of the candidate or a reference that are not judgments are counted, not clustered
    chatty = Item(
        Paper("new"),
        f"Sure! Here they are:\n{writing}",
        (Review("r1", "raw", summary=f"{writing}\nThey also doubt it."),),
        flags=frozenset({"candidate_is_judgments"}),
    )
    counted = metric.score(chatty, resources)
    assert counted.details["lines_not_statements"] == {"candidate": 1, "r1": 1}
    assert counted.value == pytest.approx(table.score(vec(w), vec(w)))
    with pytest.raises(MetricError, match="needs fit_on"):
        get_metric("gppm_cluster")


def test_cluster_metric_fits_once_when_samples_ask_concurrently(tmp_path, monkeypatch):
    """Samples scored at the same time (Inspect runs them concurrently) wait for one fit instead
    of each fitting the same model (seen: six concurrent fits of 36,000 judgments)."""
    import asyncio

    from scorers.metrics.gppm import cluster

    fits = []
    real_fit = cluster.fit_cluster_model

    def counting_fit(*args, **kwargs):
        fits.append(kwargs["source"])
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(cluster, "fit_cluster_model", counting_fit)
    writing, method = "The reviewer likes the writing.", "The reviewer criticizes the method."
    papers = [[writing, method if i % 2 else writing] for i in range(4)]
    fit = _past_reports(tmp_path / "past.jsonl", papers)
    resources = Resources(cache_dir=tmp_path, embedders={"topic": TopicEmbedder()})
    metric = get_metric(
        "gppm_cluster", fit_on=str(fit), n_clusters=2, embedder="topic", dataset_summaries=True
    )
    items = [
        Item(
            Paper(f"new{i}"),
            writing if i % 2 else method,
            (Review("r1", "raw", summary=writing), Review("r2", "raw", summary=method)),
            flags=frozenset({"candidate_is_judgments"}),
        )
        for i in range(6)
    ]

    async def all_at_once():
        return await asyncio.gather(*(metric.ascore(item, resources) for item in items))

    results = asyncio.run(all_at_once())
    assert len(fits) == 1 and fits[0].startswith("past.jsonl:")
    assert all(r.value is not None for r in results)
    assert results[0].value != results[1].value  # candidates in different clusters differ
    metric.score(items[0], resources)
    assert len(fits) == 1  # reused after the fit, too


def test_judgment_reply_without_any_score_is_asked_again_then_left_out(tmp_path):
    """A reply in which the authors' parser reads no score on any line is not 0 bits: it is
    asked once more with another seed; still unreadable, that reference is left out with the
    reply quoted, and with no reference left the sample is unscored."""
    two = (
        Review("r1", "raw one", summary="The reviewer criticizes A."),
        Review("r2", "raw two", summary="The reviewer likes B."),
    )
    prose = "The candidate review is definitely supported by the statement."
    # r1: prose, then a score on the second call; r2: prose twice
    oracle = Scripted([prose, prose, "[1] ... <SCORE=2>", prose])
    resources = Resources(cache_dir=tmp_path, generators={"oracle": oracle})
    result = get_metric("gppm_judgment", dataset_summaries=True).score(
        _item(references=two), resources
    )
    assert result.value == 2.0
    [term] = result.terms
    assert term["reference_id"] == "r1" and term["oracle_calls"] == 2
    reason = result.details["skipped_references"]["r2"]
    assert reason.startswith("unreadable oracle reply after 2 call(s)") and prose in reason
    assert result.details["oracle_calls"] == 4 and len(oracle.users) == 4
    assert result.signature.version == 3

    silent = Scripted([prose, prose])
    resources = Resources(cache_dir=tmp_path / "b", generators={"oracle": silent})
    unscored = get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert unscored.value is None and "unreadable oracle reply after 2 call(s)" in unscored.reason
    # a reply with some scored lines keeps the authors' rule: the other lines count 0
    partly = Scripted(["[1] ... <SCORE=1>\n[2] no score here"])
    resources = Resources(cache_dir=tmp_path / "c", generators={"oracle": partly})
    kept = get_metric("gppm_judgment", dataset_summaries=True).score(_item(), resources)
    assert kept.value == 1.0 and kept.terms[0]["unscored_lines"] == 1
    assert kept.terms[0]["oracle_calls"] == 1 and len(partly.users) == 1
