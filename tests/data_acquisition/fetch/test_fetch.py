"""``gem-tasks data fetch`` against a loopback HTTP server that serves small fixtures laid out as
raw.githubusercontent.com lays out the pinned sources (``<owner>/<repo>/<commit>/<path>``): every
dataset of the catalog is downloaded, checked, converted and read back by the loader the tasks
use; resumed downloads, changed bytes, an unreachable host and a pickle that names code are
refused or handled as documented. No network: the server is on 127.0.0.1."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import pickle
import threading
from pathlib import Path

import pandas as pd
import pytest

from conftest import MirrorHandler, put_source
from gem_data.fetch import FetchError, catalog, fetch_dataset, fetch_order, fetched
from gem_data.fetch.convert import SPACE_ASPECTS, summeval_articles, summeval_subset_ids
from gem_data.fetch.download import GIT_BLOB, download
from gem_tasks.cli.data import main as data_main
from scorers.data.decisions import read_decisions
from scorers.data.records import RecordError, load_records
from scorers.data.sources.gem_release import gem_release_records
from scorers.data.sources.summaries import lfqa_e_records, space_records, summeval_records
from scorers.registries import Registry


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- fixtures in each source's published layout --------------------------------------------------


def _gem_release() -> dict[str, bytes]:
    files = {}
    for k in (1, 2, 3):
        frame = pd.DataFrame(
            {
                "paper_id": [f"p{i}" for i in range(1500)],
                "model": [f"human_review{k}"] * 1500,
                "review": [f"Review {k} of paper {i}: sound, but — unclear." for i in range(1500)],
                "review_summary": [f"Summary {k} of {i}" for i in range(1500)],
            }
        )
        buffer = io.BytesIO()
        frame.to_parquet(buffer)
        files[f"task_iclr23/dataset/dataset_human_review{k}.parquet"] = buffer.getvalue()
    files["LICENSE"] = b"Apache License 2.0 (fixture)\n"
    return files


GPPM_ITEMS = [
    {"id": "A1", "title": "Paper one", "abstract": "We do one thing.", "number": "1"},
    {"id": "B2", "title": "Paper two", "abstract": "We do two things.", "number": "2"},
]
GPPM_REVIEWS = [
    {"uid": "r1", "belong_id": "A1", "review": "Good.", "rating": "6: Weak Accept",
     "experience_assessment": "I have published in this field for several years."},
    {"uid": "r2", "belong_id": "B2", "review": "Weak.", "rating": "1: Reject"},
    {"uid": "r3", "belong_id": "A1", "review": "Fine.", "rating": "8: Accept"},
]  # fmt: skip


def _gppm() -> dict[str, bytes]:
    return {
        "openreview/openreview_item_rand.json": json.dumps(GPPM_ITEMS).encode(),
        "openreview/openreview_review_rand.json": json.dumps(GPPM_REVIEWS).encode(),
    }


def _paperlists() -> tuple[bytes, bytes]:
    y2020 = [
        {"id": "A1", "status": "Spotlight", "rating": "6;8"},
        {"id": "ZZ", "status": "Withdraw", "rating": "1;1"},  # not in the set: not read
        {"id": "B2", "status": "Reject", "rating": "1"},
    ]
    statuses = ["Poster", "Top-25%", "Top-5%", "Reject"]
    y2023 = [
        {"id": f"p{i}", "status": statuses[i % 4], "rating": f"{i % 10};8"}
        for i in range(300, 1500)
    ]
    return json.dumps(y2020).encode(), json.dumps(y2023).encode()


def _summeval() -> bytes:
    data = {}
    for n, doc in enumerate([*summeval_subset_ids(), "cnn-test-extra"]):
        data[doc] = {
            "src": f"Article {n} .",
            "ref_summ": f"Reference {n} .",
            "ref_summs": [f"Reference {n} ."] + [f"Crowd summary {n}.{k}" for k in range(10)],
            "sys_summs": {
                f"M{m}": {
                    "sys_summ": f"System {m} on {n} .",
                    "scores": {"coherence": 1.0 + m, "consistency": 2.0, "fluency": 3.0,
                               "relevance": 4.0 + m / 3},
                }
                for m in (11, 0, 5)
            },
        }  # fmt: skip
    return pickle.dumps(data)


SPACE_DEV = ["200", "1000"]


def _space() -> dict[str, bytes]:
    files = {"data/space_summ_splits.txt": b"1000\tdev\n300 test\n200 dev\n"}
    for hotel in SPACE_DEV:
        for aspect in SPACE_ASPECTS:
            for k in range(3):
                text = f"Hotel {hotel}\tis {aspect}.\nSummary {k}.\n"
                files[f"data/gold/{aspect}/{hotel}_{k}.txt"] = text.encode()
    files["LICENSE"] = b"MIT License (fixture)\n"
    return files


LFQA_E = [
    {"id": "u1", "question": "Why is the sky blue?", "context": "", "type": "Physics",
     "reference": "Rayleigh scattering.", "response_a": "Scattering of light.",
     "response_b": "Because it is.", "compare_type": "human_vs_model", "label": "response_a"},
    {"id": "u2", "question": "Why is the sky blue?", "context": "", "type": "Physics",
     "reference": "Rayleigh scattering.", "response_a": "No idea.",
     "response_b": "Short wavelengths scatter more.", "compare_type": "human_vs_human",
     "label": "response_b"},
    {"id": "u3", "question": "How do bees fly?", "context": "In still air.", "type": "Biology",
     "reference": "Fast wing beats.", "response_a": "Wings.", "response_b": "Wings, fast.",
     "compare_type": "model_vs_model", "label": "same"},
]  # fmt: skip


LFQA_E_FIRST = [
    {"id": "q1", "question": "Why?", "Concise_Reference": "Because.",
     "student_answer_a": "Because, really.", "student_answer_b": "No idea.",
     "student_answer_a_vs_student_answer_b": "student_answer_a"},
]  # fmt: skip


OWN_TESTS = {"iclr2026": "tests/data_acquisition/fetch/test_fetch_iclr2026.py"}
"""Datasets whose fixtures and end-to-end fetch are in a test file of their own (left out here:
their converter samples more papers than a fixture holds)."""


def _serve_everything(root: Path) -> dict[str, catalog.Dataset]:
    """Put every dataset's fixture on the server; returns the catalog entries pinned to the
    fixtures' bytes (the real entries pin the published bytes) and with outputs recorded, not
    pinned (all but :data:`OWN_TESTS`)."""
    published = {n: entry for n, entry in catalog.DATASETS.items() if n not in OWN_TESTS}
    blobs: dict[tuple[str, str], bytes] = {}

    def put(name: str, files: dict[str, bytes]) -> None:
        entry = published[name]
        specs = [*entry.files]
        if entry.licence_file is not None:
            specs.append(entry.licence_file)
        repos = {(s.repo, s.commit) for s in specs}
        for path, data in files.items():
            spec = next(
                (s for s in specs if s.path == path),
                None,
            ) or catalog.SourceFile(*sorted(repos)[0], path)
            put_source(root, spec, data)
            blobs[(spec.repo, spec.path)] = data

    put("iclr2023-gem", _gem_release())
    put("iclr2020-gppm", _gppm())
    y2020, y2023 = _paperlists()
    put_source(root, catalog.PAPERLISTS_2020, y2020)
    put_source(root, catalog.PAPERLISTS_2023, y2023)
    blobs[(catalog.PAPERLISTS_2020.repo, catalog.PAPERLISTS_2020.path)] = y2020
    blobs[(catalog.PAPERLISTS_2023.repo, catalog.PAPERLISTS_2023.path)] = y2023
    put("summeval", {"SUM/SummEval/data.pkl": _summeval()})
    summeval_licence = published["summeval"].licence_file
    put_source(root, summeval_licence, b"MIT License (SummEval fixture)\n")
    blobs[(summeval_licence.repo, summeval_licence.path)] = b"MIT License (SummEval fixture)\n"
    put("space", _space())
    put("lfqa-e", {"data/unified_benchmark_en.json": json.dumps(LFQA_E).encode()})
    put("lfqa-e", {"data/en_test.json": json.dumps(LFQA_E_FIRST).encode()})

    def pin(spec: catalog.SourceFile | None) -> catalog.SourceFile | None:
        if spec is None or spec.sha256 is None:
            return spec
        return dataclasses.replace(spec, sha256=_sha(blobs[(spec.repo, spec.path)]))

    pinned = {
        name: dataclasses.replace(
            entry,
            files=tuple(pin(spec) for spec in entry.files),
            licence_file=pin(entry.licence_file),
            outputs=dict.fromkeys(entry.outputs),
        )
        for name, entry in published.items()
    }
    return {
        name: dataclasses.replace(entry, more_files_digest=_derived_digest(entry, root))
        if entry.more_files is not None
        else entry
        for name, entry in pinned.items()
    }


def _derived_digest(entry: catalog.Dataset, root: Path) -> str:
    """The digest over the files a dataset derives from its first ones, on the server's bytes
    (the fixture's, as the real entry's digest is over the pinned commit's)."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder)
        for spec in entry.files:
            target = spec.local(raw)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes((root / spec.repo / spec.commit / spec.path).read_bytes())
        derived = entry.more_files(raw)
    return catalog.files_digest(
        {s.path: _sha((root / s.repo / s.commit / s.path).read_bytes()) for s in derived}
    )


@pytest.fixture
def fixtures(loopback_mirror, monkeypatch) -> tuple[str, dict[str, catalog.Dataset]]:
    base, root = loopback_mirror
    entries = _serve_everything(root)
    monkeypatch.setattr(catalog, "DATASETS", Registry.of("dataset", entries.values()))
    monkeypatch.setattr(catalog, "SPACE_SPLITS", entries["space"].files[0])
    return base, entries


# --- every dataset, end to end -------------------------------------------------------------------


def test_every_dataset_is_fetched_converted_and_read_back(fixtures, tmp_path: Path):
    base, _ = fixtures
    data = tmp_path / "data"
    order = fetch_order(["all"])
    assert [e.name for e in order].index("decisions") > [e.name for e in order].index(
        "iclr2023-gem"
    )  # its sets first
    for entry in order:
        folder = fetch_dataset(entry.name, data, mirror=base, progress=False)
        assert fetched(entry, data)
        assert not (folder / ".download").exists()  # downloads removed once checked
        record = json.loads((folder / "SOURCE.json").read_text())
        assert set(record["outputs"]) == set(entry.outputs)
        # canonical URLs, the mirror they came through apart
        assert all(url.startswith(catalog.RAW_BASE) for url in record["downloads"])
        assert record["fetched_through"] == base
        assert entry.source in (folder / "SOURCE.md").read_text()

    # ICLR 2023: rows 300-1,499, three reviews each with their summaries
    records = gem_release_records(data / "iclr2023_gem" / "iclr2023_reviews.jsonl")
    assert len(records) == 1200 and records[0].id == "p300" and records[-1].id == "p1499"
    assert [r.text for r in records[0].reviews] == [
        f"Review {k} of paper 300: sound, but — unclear." for k in (1, 2, 3)
    ]
    assert records[0].reviews[2].summary == "Summary 3 of 300"
    assert (data / "iclr2023_gem" / "LICENSE").read_bytes() == b"Apache License 2.0 (fixture)\n"

    # ICLR 2020: each paper with its reviews in the published order, the rating's number
    papers = load_records(data / "iclr2020_gppm" / "iclr2020_papers.jsonl")
    assert [p.id for p in papers] == ["A1", "B2"]
    assert [(r.id, r.rating) for r in papers[0].reviews] == [("r1", 6.0), ("r3", 8.0)]
    assert papers[0].abstract == "We do one thing."
    published = json.loads((data / "iclr2020_gppm" / "openreview_review_rand.json").read_text())
    assert published == GPPM_REVIEWS  # the files as published stay beside

    # decisions: OpenReview's wording, the set's order, every rating
    with (data / "decisions" / "iclr2020_decisions.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [
        ["id", "decision", "accept", "ratings"],
        ["A1", "Accept (Spotlight)", "1", "6;8"],
        ["B2", "Reject", "0", "1"],
    ]
    decisions = read_decisions(data / "decisions" / "iclr2023_decisions.csv")
    assert len(decisions) == 1200
    with (data / "decisions" / "iclr2023_decisions.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[1:3] == [
        ["p300", "Accept (Poster)", "1", "0;8"],
        ["p301", "Accept (Spotlight, notable-top-25%)", "1", "1;8"],
    ]
    assert decisions["p302"].accept and not decisions["p303"].accept

    # SummEval: all articles, and the 60 of the subset, systems sorted
    summeval = summeval_records(data / "summeval" / "summeval_60docs.jsonl")
    assert sorted(r.id for r in summeval) == sorted(summeval_subset_ids())
    assert [c.id for c in summeval[0].candidates] == ["M0", "M11", "M5"]
    assert len(summeval[0].reviews) == 11
    assert len(summeval_records(data / "summeval" / "summeval.jsonl")) == 61

    # SPACE: the dev hotels sorted as strings, whitespace collapsed
    space = space_records(data / "space" / "space_dev_refs.jsonl")
    assert sorted({r.entity for r in space}) == sorted(SPACE_DEV)
    assert len(space) == 2 * len(SPACE_ASPECTS)
    assert space[0].reviews[0].text == "Hotel 1000 is building. Summary 0."

    # LFQA-E: the published file, a tie rates both answers 1/2
    pairs = lfqa_e_records(data / "lfqa_e" / "lfqa_e_en.json")
    assert [p.id for p in pairs] == ["u1", "u2", "u3"]
    assert [c.ratings["preferred"] for c in pairs[0].candidates] == [1.0, 0.0]
    assert [c.ratings["preferred"] for c in pairs[1].candidates] == [0.0, 1.0]
    assert [c.ratings["preferred"] for c in pairs[2].candidates] == [0.5, 0.5]
    assert pairs[0].entity == pairs[1].entity != pairs[2].entity
    assert (pairs[0].group, pairs[2].group) == ("Physics", "Biology")
    assert pairs[2].abstract == "How do bees fly?\n\nIn still air."
    [first] = lfqa_e_records(data / "lfqa_e" / "lfqa_e_en_sample.json")
    assert first.id == "q1:student_answer_a_vs_student_answer_b"


def test_the_cli_fetches_resumes_and_says_what_it_did(fixtures, tmp_path: Path, capsys):
    base, _ = fixtures
    data = tmp_path / "data"
    argv = ["data", "fetch", "decisions", "--out", str(data), "--mirror", base, "--quiet"]
    assert data_main(argv) == 0
    out = capsys.readouterr().out
    # the sets decisions are read for are fetched first, each named with its folder
    assert out.index("iclr2020-gppm:") < out.index("decisions:")
    assert (data / "iclr2023_gem" / "iclr2023_reviews.jsonl").exists()
    assert data_main(argv) == 0
    assert "decisions: already in" in capsys.readouterr().out
    # a damaged output is reported, with its path, then fetched again
    (data / "decisions" / "iclr2020_decisions.csv").write_text("id,decision\n")
    with pytest.warns(UserWarning, match=r"iclr2020_decisions.csv is damaged \(sha256 .*fetched"):
        assert data_main(argv) == 0
    assert "decisions: already in" not in capsys.readouterr().out
    assert len(read_decisions(data / "decisions" / "iclr2020_decisions.csv")) == 2


def test_help_lists_every_dataset(capsys):
    with pytest.raises(SystemExit) as stop:
        data_main(["data", "fetch", "--help"])
    assert stop.value.code == 0
    shown = capsys.readouterr().out
    for name in catalog.DATASETS:
        assert f"  {name} " in shown
    assert data_main(["data", "fetch", "nonesuch"]) == 2


def test_an_unknown_year_points_to_the_builder(capsys):
    assert data_main(["data", "fetch", "iclr2025"]) == 2
    said = capsys.readouterr().err
    assert "unknown dataset 'iclr2025'" in said and "gem-tasks data build --venue" in said


def test_a_dataset_another_needs_says_so_when_the_mirror_lacks_it(
    fixtures, loopback_mirror, tmp_path: Path, capsys
):
    base, entries = fixtures
    root = loopback_mirror[1]
    gem = entries["iclr2023-gem"].files[0]
    (root / gem.repo / gem.commit / gem.path).unlink()  # the mirror lacks the GEM release
    argv = ["data", "fetch", "decisions", "--out", str(tmp_path), "--mirror", base, "--quiet"]
    assert data_main(argv) == 2
    said = capsys.readouterr().err
    assert "decisions needs iclr2023-gem, fetched first" in said
    assert "HTTP 404" in said and f"the mirror has no copy of {gem.url()}" in said


def test_a_dataset_needing_another_is_refused_until_it_is_there(fixtures, tmp_path: Path):
    base, _ = fixtures
    with pytest.raises(FetchError, match="fetch iclr2020-gppm first"):
        fetch_dataset("decisions", tmp_path / "data", mirror=base, progress=False)


# --- downloads ----------------------------------------------------------------------------------


def test_a_stopped_download_resumes_with_a_range_request(loopback_mirror, tmp_path: Path):
    base, root = loopback_mirror
    data = bytes(range(256)) * 1000
    (root / "f.bin").write_bytes(data)
    target = tmp_path / "out" / "f.bin"
    target.parent.mkdir()
    target.with_name("f.bin.part").write_bytes(data[:100_000])
    assert download(f"{base}/f.bin", target, sha256=_sha(data)) == _sha(data)
    assert target.read_bytes() == data
    assert MirrorHandler.ranges == ["bytes=100000-"]
    assert not target.with_name("f.bin.part").exists()
    # a complete file with the pinned digest is not fetched again
    (root / "f.bin").unlink()
    assert download(f"{base}/f.bin", target, sha256=_sha(data)) == _sha(data)


def test_changed_bytes_are_refused_and_not_kept(loopback_mirror, tmp_path: Path):
    base, root = loopback_mirror
    (root / "f.bin").write_bytes(b"not what was pinned")
    target = tmp_path / "f.bin"
    with pytest.raises(FetchError, match="differs from the pinned"):
        download(f"{base}/f.bin", target, sha256=_sha(b"the pinned bytes"))
    assert not target.exists() and not target.with_name("f.bin.part").exists()
    with pytest.raises(FetchError, match="HTTP 404"):
        download(f"{base}/missing.bin", target)
    # through a mirror, the mirror's copy is the one named as differing, or as missing
    canonical = "https://raw.githubusercontent.com/o/r/c/f.bin"
    with pytest.raises(FetchError, match=f"the mirror's copy of {canonical} is .* not the pinned"):
        download(f"{base}/f.bin", target, sha256=_sha(b"the pinned bytes"), source=canonical)
    with pytest.raises(FetchError, match=f"HTTP 404.*the mirror has no copy of {canonical}"):
        download(f"{base}/missing.bin", target, source=canonical)


def test_an_unreachable_host_says_what_to_do(tmp_path: Path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(FetchError, match="needs HTTPS access to 127.0.0.1.*--mirror"):
        download(f"http://127.0.0.1:{port}/f.bin", tmp_path / "f.bin")


def test_converted_outputs_that_differ_from_the_pinned_ones_are_refused(
    fixtures, tmp_path: Path, monkeypatch
):
    base, entries = fixtures
    wrong = dataclasses.replace(entries["space"], outputs={"space_dev_refs.jsonl": "0" * 64})
    swapped = (wrong if e.name == "space" else e for e in catalog.DATASETS.values())
    monkeypatch.setattr(catalog, "DATASETS", Registry.of("dataset", swapped))
    with pytest.raises(FetchError, match="not the pinned 0{64}"):
        fetch_dataset("space", tmp_path, mirror=base, progress=False)
    assert not (tmp_path / "space" / "space_dev_refs.jsonl").exists()
    assert not fetched(wrong, tmp_path)


def test_a_pickle_that_names_code_is_refused(tmp_path: Path):
    raw = tmp_path / "raw" / "SUM" / "SummEval"
    raw.mkdir(parents=True)
    (raw / "data.pkl").write_bytes(pickle.dumps({"doc": {"src": Path("x")}}))
    with pytest.raises(RecordError, match="names pathlib"):
        summeval_articles(tmp_path / "raw", tmp_path)


def _is_pin(pin: str | None) -> bool:
    if pin is None:
        return False
    if pin.startswith(GIT_BLOB):
        return len(pin.removeprefix(GIT_BLOB)) == 40 and int(pin.removeprefix(GIT_BLOB), 16) >= 0
    return len(pin) == 64 and int(pin, 16) >= 0


def test_every_byte_a_fetch_reads_is_pinned():
    """Every file a dataset names has its sha256 or git object id; the files it derives (the
    ICLR 2026 notes, SPACE's gold summaries) one digest over them all; every output its sha256
    or git object id."""
    for entry in catalog.DATASETS.values():
        specs = [*entry.files] + ([entry.licence_file] if entry.licence_file else [])
        for spec in specs:
            assert len(spec.commit) == 40 and int(spec.commit, 16) >= 0, spec
            assert _is_pin(spec.sha256), spec
        if entry.more_files is not None:
            assert _is_pin(entry.more_files_digest), entry.name
        assert entry.outputs and all(_is_pin(d) for d in entry.outputs.values()), entry.name


def test_a_files_digest_by_hand():
    digests = {"b/2.json": "2" * 64, "a/1.json": "1" * 64}
    lines = f"a/1.json {'1' * 64}\nb/2.json {'2' * 64}\n"
    assert catalog.files_digest(digests) == hashlib.sha256(lines.encode()).hexdigest()


def test_a_git_object_id_pin_by_hand(tmp_path: Path):
    from gem_data.fetch.download import git_blob_of, matches

    path = tmp_path / "f.json"
    path.write_bytes(b"hello\n")
    # git hash-object of "hello\n"
    assert git_blob_of(path) == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert matches(path, f"{GIT_BLOB}ce013625030ba8dba906f756967f9e9ca394464a")
    assert not matches(path, f"{GIT_BLOB}{'0' * 40}")
    assert matches(path, hashlib.sha256(b"hello\n").hexdigest())


def test_many_small_files_are_downloaded_several_at_once(
    loopback_mirror, tmp_path: Path, monkeypatch
):
    """A dataset of thousands of small files waits on round trips: downloads overlap (the
    server sees more than one request in flight), and every file still lands whole."""
    import time

    from gem_data.fetch.fetching import _download_all

    base, root = loopback_mirror
    in_flight, most = [0], [0]
    lock = threading.Lock()
    original = MirrorHandler.do_GET

    def slow_get(self):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        time.sleep(0.05)  # a round trip
        try:
            original(self)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(MirrorHandler, "do_GET", slow_get)
    specs = []
    for k in range(24):
        spec = catalog.SourceFile("o/r", "c" * 40, f"f{k}.txt", _sha(f"file {k}".encode()))
        put_source(root, spec, f"file {k}".encode())
        specs.append(spec)
    digests = _download_all(specs, tmp_path / "raw", base, None)
    assert len(digests) == 24
    assert all(spec.local(tmp_path / "raw").read_bytes() == f"file {k}".encode()
               for k, spec in enumerate(specs))  # fmt: skip
    assert most[0] > 1
