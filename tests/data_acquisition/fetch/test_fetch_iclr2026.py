"""``gem-tasks data fetch iclr2026``: the converter's rules on real ICLR 2026 notes, and the whole
fetch against a loopback server laid out as raw.githubusercontent.com
(``<owner>/<repo>/<commit>/<path>``).

The notes in ``fixtures/iclr2026_notes.json`` are six real papers of imczxx/ICLR2026ReviewTracker
at 8dc6f4d3 (``docs/data/papers/<id>.json``: OpenReview API v2 notes of ICLR 2026 as crawled on
2025-11-22), their fields trimmed to those the converter reads. Each reply note is licensed
CC BY 4.0 (its ``license`` field): the reviews and comments are by the ICLR 2026 reviewers and
authors, published on OpenReview; the titles and abstracts by the papers' authors. The six:

- 22hBwIf7OC: transfer learning, an Oral, 3 reviews, one of them in two versions;
- 3a2QuEzveq: probabilistic methods by its note, on the generative models' accepted list, 4
  reviews and an author comment;
- rzGEfYr2ZC: unsupervised learning, on no list (Reject), 3 reviews;
- qioDi3afqm: reinforcement learning, withdrawn (4 reviews and the withdrawal note);
- E5NwyihhEc: optimization, 2 reviews;
- Z14gV0qz5r: infrastructure and software libraries, an area without an accepted list.

The accepted lists are tiny CSVs in the published columns' layout (a byte-order mark, the
columns the converter reads, rows copied from the real lists). The real data's check (the
published sample's sha256) needs the two repositories and is run by hand: lay their files out as
``<owner>/<repo>/<commit>/<path>``, serve them on 127.0.0.1 and run ``gem-tasks data fetch
iclr2026 --mirror http://127.0.0.1:PORT``."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
import random
from pathlib import Path

import pytest

from conftest import put_source
from gem_data.fetch import catalog, fetch_dataset, fetched, iclr2026
from scorers.data.records import RecordError, load_records
from scorers.registries import Registry

FIXTURE = Path(__file__).parents[1] / "fixtures" / "iclr2026_notes.json"
NOTES = {note["id"]: note for note in json.loads(FIXTURE.read_text(encoding="utf-8"))["papers"]}

ORAL, POSTER = "ICLR 2026 Oral", "ICLR 2026 Poster"
GENERATIVE = "generative models"
OPTIMIZATION = "optimization"
PROBABILISTIC = (
    "probabilistic methods (Bayesian methods, variational inference, sampling, UQ, etc.)"
)
RL = "reinforcement learning"
TRANSFER = "transfer learning, meta learning, and lifelong learning"
UNSUPERVISED = (
    "unsupervised, self-supervised, semi-supervised, and supervised representation learning"
)
AREAS = (GENERATIVE, OPTIMIZATION, PROBABILISTIC, RL, TRANSFER, UNSUPERVISED)

# rows of the real accepted lists: (forum, decision, title)
LISTS = {
    GENERATIVE: [
        ("kI27Niy4xY", POSTER, "a paper of the list the fixture does not hold"),
        ("3a2QuEzveq", POSTER, NOTES["3a2QuEzveq"]["content"]["title"]),
    ],
    OPTIMIZATION: [("VaS6xcDrTb", POSTER, "another paper not in the fixture")],
    PROBABILISTIC: [("Ahdsg2nkNH", POSTER, "another paper not in the fixture")],
    RL: [("oBXfPyi47m", POSTER, "another paper not in the fixture")],
    TRANSFER: [("22hBwIf7OC", ORAL, NOTES["22hBwIf7OC"]["content"]["title"])],
    UNSUPERVISED: [("mytIKuRsSE", POSTER, "another paper not in the fixture")],
}


def _csv(area: str, rows: list[tuple[str, str, str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["openreview_url", "venue", "title", "abstract", "primary_area"])
    for forum, decision, title in rows:
        writer.writerow([f"https://openreview.net/forum?id={forum}", decision, title, "A.", area])
    return ("\ufeff" + buffer.getvalue()).encode("utf-8")


def _listing(notes: list[dict]) -> bytes:
    """papers-list.json as the tracker writes it (the fields the converter reads, and more)."""
    return json.dumps(
        [
            {
                "id": note["id"],
                "title": note["content"]["title"],
                "number": note["number"],
                "venue": note["content"]["venue"],
                "reviews": len({r["id"] for r in iclr2026.latest_reviews(note)}),
                "withdrawn": note["withdrawn"],
            }
            for note in sorted(notes, key=lambda n: n["number"])
        ],
        ensure_ascii=False,
    ).encode("utf-8")


def _lay_out(*, unlisted: tuple[str, ...] = ()) -> dict[str, bytes]:
    """The two repositories' files the fixture makes, {path in its repository: bytes}: the
    tracker's list (without the papers in ``unlisted``) and paper files, the accepted lists."""
    files = {
        iclr2026.LIST_PATH: _listing([n for n in NOTES.values() if n["id"] not in unlisted]),
        **{iclr2026.accepted_list_path(area): _csv(area, rows) for area, rows in LISTS.items()},
    }
    for forum, note in NOTES.items():
        files[iclr2026.paper_path(forum)] = json.dumps(note, ensure_ascii=False).encode("utf-8")
    return files


def _write_raw(raw: Path, **kwargs) -> tuple[Path, Path]:
    tracker, accepted = raw / "imczxx+ICLR2026ReviewTracker", raw / "alickzhu+iclr2026-papers"
    for path, data in _lay_out(**kwargs).items():
        base = accepted if path.startswith(iclr2026.ACCEPTED_DIR) else tracker
        (base / path).parent.mkdir(parents=True, exist_ok=True)
        (base / path).write_bytes(data)
    return tracker, accepted


def _records() -> list[dict]:
    return iclr2026.eligible_records(NOTES.values(), _accepted(), areas=AREAS)


def _accepted() -> dict[str, str]:
    return {forum: decision for rows in LISTS.values() for forum, decision, _ in rows}


# --- the rules -----------------------------------------------------------------------------------


def test_eligibility_leaves_out_withdrawn_short_of_reviews_and_other_areas():
    records = _records()
    # sorted by id; withdrawn (qioDi3afqm), 2 reviews (E5NwyihhEc) and an area without a list
    # (Z14gV0qz5r) are left out
    assert [r["id"] for r in records] == ["22hBwIf7OC", "3a2QuEzveq", "rzGEfYr2ZC"]
    assert (
        NOTES["qioDi3afqm"]["withdrawn"] and len(iclr2026.latest_reviews(NOTES["qioDi3afqm"])) == 4
    )
    assert len(iclr2026.latest_reviews(NOTES["E5NwyihhEc"])) == 2
    assert NOTES["Z14gV0qz5r"]["content"]["primary_area"] not in iclr2026.AREAS
    # every area of the fixture is one of the 12 real ones
    assert set(AREAS) <= set(iclr2026.AREAS)
    # with the papers' area lists only, a paper of another area is not eligible
    only = iclr2026.eligible_records(NOTES.values(), _accepted(), areas=(TRANSFER,))
    assert [r["id"] for r in only] == ["22hBwIf7OC"]


def test_each_review_is_its_latest_version_in_first_appearance_order():
    note = NOTES["22hBwIf7OC"]
    versions = [r for r in note["replies"] if r["id"] == "03X0xSDxOG"]
    assert len(versions) == 2 and versions[0]["mdate"] < versions[1]["mdate"]
    latest = iclr2026.latest_reviews(note)
    assert [r["id"] for r in latest] == ["0xQRNNERIu", "03X0xSDxOG", "G4qAFGetTV"]
    assert latest[1] is versions[1]
    # the later version changed two scores
    assert versions[0]["content"]["presentation"]["value"] == 2
    [record] = [r for r in _records() if r["id"] == "22hBwIf7OC"]
    assert record["reviews"][1]["text"].startswith(
        "Summary:\n" + versions[1]["content"]["summary"]["value"].strip()
    )
    assert (record["reviews"][1]["presentation"], record["reviews"][1]["confidence"]) == (4, 5)
    # versions listed newest first give the same review
    replies = note["replies"]
    flipped = {**note, "replies": [replies[0], replies[2], replies[1], *replies[3:]]}
    assert [r["mdate"] for r in iclr2026.latest_reviews(flipped)] == [r["mdate"] for r in latest]
    # comments, withdrawals: not reviews
    assert [r["id"] for r in iclr2026.latest_reviews(NOTES["3a2QuEzveq"])] == [
        "MUFqbjqiGj",
        "pVjKjtRRie",
        "hZ6QWwnXb1",
        "DNfiRznZn8",
    ]


def test_the_decision_comes_from_any_accepted_list_else_it_is_inferred():
    by_id = {r["id"]: r for r in _records()}
    oral, other_list, reject = by_id["22hBwIf7OC"], by_id["3a2QuEzveq"], by_id["rzGEfYr2ZC"]
    assert (oral["decision"], oral["accept"], oral["decision_source"]) == (
        ORAL,
        1,
        "accepted list of its area",
    )
    # on the generative models' list, its note says probabilistic methods: accepted, its own area
    assert other_list["primary_area"] == PROBABILISTIC
    assert (other_list["decision"], other_list["accept"]) == (POSTER, 1)
    assert (reject["decision"], reject["accept"], reject["decision_source"]) == (
        "Reject",
        0,
        "inferred: not on the accepted list of its area",
    )


def test_a_record_has_the_published_fields_and_the_sections_under_their_headings():
    [record] = [r for r in _records() if r["id"] == "rzGEfYr2ZC"]
    note = NOTES["rzGEfYr2ZC"]
    assert list(record) == [
        "id", "venue", "title", "abstract", "primary_area", "pdf", "decision", "accept",
        "decision_source", "reviews",
    ]  # fmt: skip
    assert record["venue"] == "ICLR 2026"
    assert record["pdf"] == "https://openreview.net/pdf?id=rzGEfYr2ZC"
    assert record["abstract"] == note["content"]["abstract"].strip()
    reply = note["replies"][0]
    review = record["reviews"][0]
    assert list(review) == [
        "id", "text", "rating", "confidence", "soundness", "presentation", "contribution",
    ]  # fmt: skip
    content = {key: value["value"] for key, value in reply["content"].items()}
    assert review["text"] == (
        f"Summary:\n{content['summary'].strip()}\n\n"
        f"Strengths:\n{content['strengths'].strip()}\n\n"
        f"Weaknesses:\n{content['weaknesses'].strip()}\n\n"
        f"Questions:\n{content['questions'].strip()}"
    )
    for name in ("rating", "confidence", "soundness", "presentation", "contribution"):
        assert review[name] == content[name] and type(review[name]) is int
    assert review["rating"] in (0, 2, 4, 6, 8, 10)
    assert "Yes" not in review["text"].split("\n")  # code_of_conduct and flags stay out


def test_a_review_without_a_score_stops_the_conversion():
    note = json.loads(json.dumps(NOTES["rzGEfYr2ZC"]))
    del note["replies"][1]["content"]["soundness"]
    with pytest.raises(RecordError, match="kOiJGDqL6j: soundness None"):
        iclr2026.eligible_records([note], {}, areas=AREAS)


def test_the_sample_is_a_seeded_draw_with_its_first_draws_left_out():
    records = [{"id": f"p{k}"} for k in range(5)]
    drawn = random.Random(7).sample(records, 4)
    assert iclr2026.sample(records, size=3, skip=1, seed=7) == drawn[1:]
    assert iclr2026.sample(records, size=3, skip=0, seed=7) == random.Random(7).sample(records, 3)
    with pytest.raises(RecordError, match="6 draws asked of 5"):
        iclr2026.sample(records, size=3, skip=3)
    # the published sample's parameters
    assert (iclr2026.SEED, iclr2026.SAMPLE_SKIP, iclr2026.SAMPLE_SIZE) == (20261127, 300, 1200)


def test_the_list_names_the_files_to_read_and_unlisted_ones_are_added(tmp_path: Path):
    tracker, _ = _write_raw(tmp_path, unlisted=("rzGEfYr2ZC",))
    listing = tracker / iclr2026.LIST_PATH
    # not withdrawn, 3 reviews or more, in the list's order (submission number)
    assert iclr2026.paper_paths(listing, unlisted=()) == [
        "docs/data/papers/22hBwIf7OC.json",
        "docs/data/papers/3a2QuEzveq.json",
        "docs/data/papers/Z14gV0qz5r.json",
    ]
    with_it = iclr2026.paper_paths(listing, unlisted=("rzGEfYr2ZC", "22hBwIf7OC"))
    assert with_it[-1] == "docs/data/papers/rzGEfYr2ZC.json" and len(with_it) == 4
    assert iclr2026.paper_paths(listing)[-1] == "docs/data/papers/Q5Zp1KAFSi.json"


def test_convert_writes_the_eligible_set_and_the_sample(tmp_path: Path):
    tracker, accepted = _write_raw(tmp_path / "raw", unlisted=("rzGEfYr2ZC",))
    out = tmp_path / "out"
    out.mkdir()
    written = iclr2026.convert(
        tracker, accepted, out, areas=AREAS, unlisted=("rzGEfYr2ZC",), size=2, skip=1, seed=3
    )
    assert written == ["iclr2026_records.jsonl", "iclr2026_eligible.jsonl"]
    eligible = [json.loads(line) for line in (out / "iclr2026_eligible.jsonl").open()]
    assert eligible == _records()
    sample = [json.loads(line) for line in (out / "iclr2026_records.jsonl").open()]
    assert sample == random.Random(3).sample(eligible, 3)[1:]
    text = (out / "iclr2026_eligible.jsonl").read_text(encoding="utf-8")
    assert "\\u" not in text and text.endswith("}\n")  # UTF-8 as is, one paper a line
    # a paper file the list names that is not there stops it
    (tracker / iclr2026.paper_path("3a2QuEzveq")).unlink()
    with pytest.raises(RecordError, match="3a2QuEzveq.json: not readable"):
        iclr2026.convert(tracker, accepted, out, areas=AREAS, unlisted=(), size=1, skip=0)


def test_an_accepted_list_of_another_shape_is_refused(tmp_path: Path):
    _, accepted = _write_raw(tmp_path)
    path = accepted / iclr2026.accepted_list_path(RL)
    path.write_bytes(_csv(RL, [("oBXfPyi47m", "ICLR 2026 Spotlight", "T")]))
    with pytest.raises(RecordError, match="Spotlight"):
        iclr2026.read_accepted(accepted, AREAS)
    path.write_bytes(_csv(GENERATIVE, [("oBXfPyi47m", POSTER, "T")]))
    with pytest.raises(RecordError, match="primary_area"):
        iclr2026.read_accepted(accepted, AREAS)


# --- end to end ----------------------------------------------------------------------------------


def test_fetch_downloads_the_list_and_the_papers_it_names_and_converts(
    loopback_mirror, tmp_path: Path, monkeypatch
):
    base, root = loopback_mirror
    published = catalog.dataset("iclr2026")
    pinned = []
    for path, data in _lay_out(unlisted=("rzGEfYr2ZC",)).items():
        accepted = path.startswith(iclr2026.ACCEPTED_DIR)
        repo = catalog.ICLR2026_ACCEPTED if accepted else catalog.ICLR2026_TRACKER
        spec = repo(path, hashlib.sha256(data).hexdigest())
        put_source(root, spec, data)  # paths with spaces, commas and parentheses: URLs quote them
        if path == iclr2026.LIST_PATH or path.startswith("iclr_paper"):
            pinned.append(spec)
    entry = dataclasses.replace(
        published,
        files=tuple(pinned),
        convert=lambda raw, out, _: iclr2026.convert(
            raw / "imczxx+ICLR2026ReviewTracker",
            raw / "alickzhu+iclr2026-papers",
            out,
            areas=AREAS,
            size=2,
            skip=1,
        ),
        outputs=dict.fromkeys(published.outputs),
        # the digest over the paper files the fetch derives from the fixture's list
        more_files_digest=catalog.files_digest(
            {
                path: hashlib.sha256(data).hexdigest()
                for path, data in _lay_out(unlisted=("rzGEfYr2ZC",)).items()
                if path.startswith("docs/data/papers/")
                and path.rsplit("/", 1)[1].removesuffix(".json")
                in ("22hBwIf7OC", "3a2QuEzveq", "Z14gV0qz5r", "rzGEfYr2ZC")
            }
        ),
    )
    monkeypatch.setattr(catalog, "DATASETS", Registry.of("dataset", [entry]))
    # the fixture's list leaves rzGEfYr2ZC out, as the real one leaves out Q5Zp1KAFSi
    monkeypatch.setattr(iclr2026, "UNLISTED", ("rzGEfYr2ZC",))
    data = tmp_path / "data"
    folder = fetch_dataset("iclr2026", data, mirror=base, progress=False)
    assert fetched(entry, data) and not (folder / ".download").exists()
    record = json.loads((folder / "SOURCE.json").read_text())
    # the list, the 6 areas' lists, the 3 papers the list names as not withdrawn with 3 reviews
    # or more and the unlisted one (more_files: the real entry's); not the withdrawn one, not
    # the one with 2 reviews
    papers = sorted(url.rsplit("/", 1)[1] for url in record["downloads"] if "/papers/" in url)
    assert papers == ["22hBwIf7OC.json", "3a2QuEzveq.json", "Z14gV0qz5r.json", "rzGEfYr2ZC.json"]
    assert len(record["downloads"]) == 1 + len(AREAS) + 4
    assert any("%2C%20" in url for url in record["downloads"])  # the lists' names, quoted
    assert "CC BY 4.0" in (folder / "SOURCE.md").read_text()
    eligible = load_records(folder / "iclr2026_eligible.jsonl")
    assert [r.id for r in eligible] == ["22hBwIf7OC", "3a2QuEzveq", "rzGEfYr2ZC"]
    assert [r.decision.accept for r in eligible] == [True, True, False]
    sample = [json.loads(line) for line in (folder / "iclr2026_records.jsonl").open()]
    expected = random.Random(iclr2026.SEED).sample(_records(), 3)[1:]
    assert sample == expected and len(sample) == 2
    [first] = load_records(folder / "iclr2026_records.jsonl")[:1]
    assert first.venue == "ICLR 2026" and first.reviews[0].rating in (0, 2, 4, 6, 8, 10)


def test_the_real_entry_pins_every_list_and_both_outputs():
    entry = catalog.dataset("iclr2026")
    assert list(catalog.DATASETS.values())[-1] is entry and entry.folder == "iclr2026"
    assert [spec.path for spec in entry.files] == [
        iclr2026.LIST_PATH,
        *(iclr2026.accepted_list_path(area) for area in iclr2026.AREAS),
    ]
    assert all(spec.sha256 for spec in entry.files)
    assert entry.files[0].commit == "8dc6f4d36a3417acdbe26b7fc391511f47bf4aa9"
    assert entry.files[1].commit == "cefdae8fee477c033281c696abdb801d88a273db"
    assert entry.outputs["iclr2026_records.jsonl"] == (
        "7bd83efa69c1ee6e541f4e8fb672e135b892f77b8bb59aa3b059a0ead04d7b20"
    )
    assert entry.outputs["iclr2026_eligible.jsonl"] is not None
    assert entry.more_files is not None and "CC BY 4.0" in entry.licence


def test_built_and_fetched_records_of_the_same_reviews_hold_the_same_ratings_and_decisions():
    """``gem-tasks data build`` (the OpenReview form's normaliser) and ``data fetch iclr2026``
    store ICLR 2026's ratings on one scale, its own 0-10, so the committee rule decides the same
    on both: the real notes of the fixture, every eligible paper."""
    from gem_data.openreview.forms import (
        form_for_year,
        normalise_review,
        stored_ratings,
    )
    from scorers.data.records import parse_record
    from scorers.scales import scale_named

    form = form_for_year(2026)
    compared = 0
    for note in NOTES.values():
        fetched_raw = iclr2026.paper_record(note, _accepted(), areas=AREAS)
        if fetched_raw is None:
            continue
        fetched_record = parse_record(fetched_raw, where="fetched")
        replies = iclr2026.latest_reviews(note)
        scale, built = stored_ratings([normalise_review(r["content"], form) for r in replies])
        assert scale == fetched_record.rating_scale == "iclr2026"
        assert built == [r.rating for r in fetched_record.reviews]
        mean = sum(built) / len(built)
        assert scale_named(scale).accepts(mean) == scale_named("iclr2026").accepts(
            sum(r.rating for r in fetched_record.reviews) / len(built)
        )
        compared += 1
    assert compared >= 3
