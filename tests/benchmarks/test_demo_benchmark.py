"""The demo benchmark's arithmetic: the recorded values it checks against, the phase table, the
union of busy intervals, and the phase timers' attribution of a backend call to its callers."""

from __future__ import annotations

import datetime

import pytest

from conftest import load_benchmark
from scorers.lm.base import ScoringRequest


def test_the_recorded_means_are_the_docs_table():
    demo = load_benchmark("speed.demo")
    means = demo.recorded_means()
    assert means == {"gem": -11.161, "gem_raw": 47.203, "gem_s": -18.163}
    demo.check_means({"gem": -11.16104, "gem_raw": 47.2031, "gem_s": -18.1634}, means)
    with pytest.raises(SystemExit, match=r"'gem_s': \(-18.162, -18.163\)"):
        demo.check_means({"gem": -11.161, "gem_raw": 47.203, "gem_s": -18.162}, means)
    with pytest.raises(SystemExit, match="gem_raw"):
        demo.check_means({"gem": -11.161, "gem_s": -18.163}, means)  # a missing metric


def test_union_counts_overlaps_once_inside_the_window():
    phases = load_benchmark("speed.demo_phases")
    intervals = [(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (9.0, 12.0)]
    assert phases._union(intervals, 0.0, 10.0) == pytest.approx(3.0 + 1.0 + 1.0)
    assert phases._union([(0.0, 5.0), (1.0, 2.0)], 0.0, 10.0) == pytest.approx(5.0)  # nested
    assert phases._union([], 0.0, 10.0) == 0.0


def test_the_phase_table_from_hand_timestamps():
    demo = load_benchmark("speed.demo")
    start = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    t0 = start.timestamp()
    run = {
        "launched": t0,
        "seconds": 100.0,
        "inspect_started": (start + datetime.timedelta(seconds=15)).isoformat(),
        "inspect_seconds": 80.0,
    }
    phases = {
        "started": t0 + 1.0,
        "imported": t0 + 9.0,
        # a model load from 10 to 20 s: 5 s before the timer (which starts at 15), 5 inside;
        # decoding 40-60 s, half of it this caller's (share 0.5)
        "busy_intervals": [(t0 + 10, t0 + 20), (t0 + 40, t0 + 60)],
        "spans": {
            "model load": [(t0 + 10, t0 + 20, 1.0)],
            "review: generation decoding": [(t0 + 40, t0 + 60, 0.5)],
        },
        "counts": {},
    }
    table = demo.phase_table(run, phases)
    assert table["interpreter start to the profiler's first line"] == 1.0
    assert table["imports (inspect_ai, gem_tasks and what they import)"] == 8.0
    assert table["Inspect's start to its timer (task, dataset, plan, model)"] == 6.0
    assert table["before the timer"] == {"model load": 5.0}
    assert table["inside the timer"] == {"model load": 5.0, "review: generation decoding": 10.0}
    assert table["after the timer (log written, exit)"] == 5.0  # 100 - (15 + 80)
    key = "inside the timer, not in the model (Inspect, the scorers' Python, waits)"
    assert table[key] == 80.0 - 5.0 - 20.0
    text = demo.profile_markdown(
        table,
        {"means": {"gem": -1.0}},
        {"warm_models": False, "commit": "abc", "cpu": "x", "cpus": 2},
    )
    assert "| &nbsp;&nbsp;model load | 5.0 |" in text and "gem -1.000" in text


def test_a_backend_call_is_split_among_its_callers(monkeypatch):
    phases = load_benchmark("speed.demo_phases")
    from scorers.lm.batching import _item_key

    record = phases.Phases()
    monkeypatch.setattr(phases, "PHASES", record)
    mine = ScoringRequest((1, 2, 3), (4,))  # 4 tokens
    theirs = ScoringRequest((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), (12,))  # 12 tokens
    record.owners[_item_key(mine)] = "gem"
    record.owners[_item_key(theirs)] = "gem_s"
    ticks = iter([100.0, 104.0])
    monkeypatch.setattr(phases.time, "time", lambda: next(ticks))
    split = phases._split(lambda self, items: len(items), "score", lambda r: float(r.length))
    assert split(None, [mine, theirs]) == 2
    assert record.seconds["gem: scoring forwards"] == pytest.approx(1.0)  # 4 of 16 tokens
    assert record.seconds["gem_s: scoring forwards"] == pytest.approx(3.0)
    assert record.busy == [(100.0, 104.0)]
    assert record.spans["gem: scoring forwards"] == [(100.0, 104.0, 0.25)]
    assert phases.within(record.spans["gem_s: scoring forwards"], 102.0, 110.0) == pytest.approx(
        1.5
    )


def test_sample_differences_name_what_moved_and_by_how_much():
    demo = load_benchmark("speed.demo")
    first = {"p1": {"gem": 1.0, "bleu": 0.5}, "p2": {"gem": 2.0}}
    other = {"p1": {"gem": 1.25, "bleu": 0.5}, "p3": {"gem": 2.0}}
    assert demo.sample_differences(first, first) == {}
    assert demo.sample_differences(first, other) == {
        "p1 gem": 0.25,
        "p2 gem": float("inf"),  # p2 is missing from the other run
        "p3 gem": float("inf"),
    }
