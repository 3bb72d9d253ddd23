"""A damaged score cache is never fatal: real cache files, written through the cache's own API,
then damaged as a disk fault or a crash mid-write can leave them. A damaged entry is a miss,
reported once per file, recomputed and rewritten; a file sqlite cannot use is moved aside and
started afresh; a file that fails mid-run leaves the run going without caching in it."""

from __future__ import annotations

import os
import random
import sqlite3
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

from conftest import inspect_eval, only_log
from scorers.lm.base import LogprobResult, Reply
from scorers.lm.cache import ScoreCache, _digest

LOGPROB = LogprobResult(-3.5, 4)
REPLY = Reply("The reviewer appreciates the ablations.", hit_limit=False)
VALUE = [2.25, 3.5]


@contextmanager
def recorded():
    """Every warning raised inside (none deduplicated by Python's registry)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught


def messages(caught) -> list[str]:
    return [str(w.message) for w in caught]


def written(path: Path, n: int = 1) -> ScoreCache:
    """A cache at ``path`` holding ``n`` entries of each kind (keys l<i>, g<i>, v<i>)."""
    cache = ScoreCache(path)
    for i in range(n):
        cache.put_logprob(f"l{i}", LogprobResult(LOGPROB.total - i, LOGPROB.n_tokens + i))
        cache.put_generation(f"g{i}", Reply(f"{REPLY} ({i})", hit_limit=False))
        cache.put_value(f"v{i}", [VALUE[0] + i, VALUE[1]])
    assert cache.get_logprob("l0") == LOGPROB
    assert cache.get_generation("g0") == f"{REPLY} (0)"
    assert cache.get_value("v0") == VALUE
    return cache


def tamper(path: Path, *statements: str) -> None:
    """Change stored rows behind the cache's back (another connection, as a bad write would)."""
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


GETS = {
    "logprobs": ("l0", "get_logprob", "put_logprob", LOGPROB),
    "generations": ("g0", "get_generation", "put_generation", REPLY),
    "model_values": ("v0", "get_value", "put_value", VALUE),
}


def assert_miss_then_rewritten(cache: ScoreCache, table: str) -> None:
    key, get, put, value = GETS[table]
    assert getattr(cache, get)(key) is None  # a miss, not an exception
    getattr(cache, put)(key, value)  # the caller recomputes and writes it again
    assert getattr(cache, get)(key) == value  # and the next read hits


# -- (a) stored text that is not UTF-8 --------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "column"),
    [
        ("generations", "text"),
        ("generations", "checksum"),
        ("logprobs", "checksum"),
        ("model_values", "value"),
        ("model_values", "checksum"),
    ],
)
def test_text_that_is_not_utf8_is_a_miss_reported_once(tmp_path, table, column):
    cache = written(tmp_path / "c.sqlite", n=3)
    tamper(cache.path, f"UPDATE {table} SET {column} = CAST(x'fffe41' AS TEXT)")
    with recorded() as caught:
        assert_miss_then_rewritten(cache, table)
        key, get, _, _ = GETS[table]
        for other in ("1", "2"):  # more damaged entries of the same file: no more warnings
            assert getattr(cache, get)(key[0] + other) is None
    [message] = messages(caught)
    assert str(cache.path) in message and "damaged" in message
    assert "UTF-8" in message or "checksum" in message
    kind = {"logprobs": "logprob", "generations": "generation", "model_values": "value"}[table]
    assert cache.stats[f"{kind}_corrupt"] == 3


def test_undecodable_reply_in_a_file_reopened_later(tmp_path):
    """The reported failure: a rerun reading a reply whose bytes were flipped on disk."""
    written(tmp_path / "c.sqlite").close()
    tamper(tmp_path / "c.sqlite", "UPDATE generations SET text = CAST(x'ff41fe42' AS TEXT)")
    cache = ScoreCache(tmp_path / "c.sqlite")
    with recorded() as caught:
        assert cache.get_generation("g0") is None
    assert [str(cache.path) in m for m in messages(caught)] == [True]
    cache.put_generation("g0", REPLY)
    assert ScoreCache(tmp_path / "c.sqlite").get_generation("g0") == REPLY


# -- (b) truncated and wrong-shaped values ----------------------------------------------------

WRONG_SHAPES = [
    # JSON that does not parse, stored with a checksum that matches it
    ("model_values", "UPDATE model_values SET value = '[2.25, 3', checksum = '{digest}'"),
    ("model_values", "UPDATE model_values SET value = substr(value, 1, 6)"),  # truncated
    ("model_values", "UPDATE model_values SET value = x'0102'"),  # a blob
    ("generations", "UPDATE generations SET text = substr(text, 1, 10)"),  # truncated
    ("generations", "UPDATE generations SET text = x'00ff00'"),  # a blob of the wrong length
    ("generations", "UPDATE generations SET hit_limit = 7"),
    ("generations", "UPDATE generations SET hit_limit = 'yes'"),
    ("generations", "UPDATE generations SET checksum = substr(checksum, 1, 8)"),
    ("logprobs", "UPDATE logprobs SET total = 'minus three'"),
    ("logprobs", "UPDATE logprobs SET n_tokens = 4.5"),
    ("logprobs", "UPDATE logprobs SET total = x'00000000'"),
    ("logprobs", "UPDATE logprobs SET checksum = NULL"),
]


def test_truncated_or_wrong_shaped_values_are_misses_reported_once(tmp_path):
    cache = written(tmp_path / "c.sqlite")
    with recorded() as caught:
        for table, statement in WRONG_SHAPES:
            tamper(cache.path, statement.format(digest=_digest("[2.25, 3")[:16]))
            assert_miss_then_rewritten(cache, table)
    [message] = messages(caught)
    assert str(cache.path) in message
    assert cache.stats["value_corrupt"] + cache.stats["generation_corrupt"] == 8
    assert cache.stats["logprob_corrupt"] == 4


# -- (c) damaged pages ------------------------------------------------------------------------


def overwrite(path: Path, offset: int, size: int, seed: int = 0) -> None:
    """Bytes changed under the file by a writer (its modification time moves on, as a writer's
    does; within the file system's clock tick of the last close it would not show)."""
    rng = random.Random(seed)
    before = path.stat().st_mtime_ns
    data = bytearray(path.read_bytes())
    data[offset : offset + size] = bytes(rng.randrange(256) for _ in range(size))
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before + 10**7, before + 10**7))


def test_a_file_left_as_closed_is_opened_without_reading_all_of_it(tmp_path):
    """The whole-file check runs only when the file is not as a clean close left it: a crash,
    another writer, bytes changed under it, or damage an earlier run met."""
    path = tmp_path / "c.sqlite"
    first = ScoreCache(path)
    assert first.checked  # a new file: no stamp yet
    first.put_logprob("l0", LOGPROB)
    first.close()
    again = ScoreCache(path)
    assert not again.checked and again.get_logprob("l0") == LOGPROB
    writer = ScoreCache(path)  # a second process's connection, still writing
    writer.put_logprob("l1", LOGPROB)
    third = ScoreCache(path)
    assert third.checked  # the writer's log is pending
    for cache in (third, writer, again):
        cache.close()
    clean = ScoreCache(path)
    assert not clean.checked and clean.get_logprob("l1") == LOGPROB
    clean.close()
    os.utime(path, ns=(1, 1))  # the file changed since
    changed = ScoreCache(path)
    assert changed.checked
    changed.close()
    damaged = ScoreCache(path)
    damaged._damaged("a test")  # a run that met damage leaves no stamp
    with recorded():
        damaged.close()
    assert ScoreCache(path).checked


def assert_recovers(path: Path, n: int) -> None:
    """Open the damaged file: every read is the stored value or a miss (never an error); a file
    moved aside is named, with its new name, in a warning; rewriting the misses leaves a cache
    whose every read hits, in this process and in the next."""
    with recorded() as caught:
        cache = ScoreCache(path)
        stored = {
            **{f"l{i}": cache.get_logprob(f"l{i}") for i in range(n)},
            **{f"g{i}": cache.get_generation(f"g{i}") for i in range(n)},
            **{f"v{i}": cache.get_value(f"v{i}") for i in range(n)},
        }
    expected = {
        **{f"l{i}": LogprobResult(LOGPROB.total - i, LOGPROB.n_tokens + i) for i in range(n)},
        **{f"g{i}": f"{REPLY} ({i})" for i in range(n)},
        **{f"v{i}": [VALUE[0] + i, VALUE[1]] for i in range(n)},
    }
    assert all(stored[key] in (None, expected[key]) for key in expected)
    aside = path.with_name(path.name + ".corrupt")
    if aside.exists():
        assert any(str(path) in m and str(aside) in m for m in messages(caught))
    assert len(caught) <= 2  # once per problem, never once per entry
    for key, value in expected.items():
        if stored[key] is None:
            {"l": cache.put_logprob, "g": cache.put_generation, "v": cache.put_value}[key[0]](
                key, value
            )
    for reader in (cache, ScoreCache(path)):
        assert reader.get_logprob("l0") == expected["l0"]
        assert reader.get_generation(f"g{n - 1}") == expected[f"g{n - 1}"]
        assert reader.get_value("v0") == expected["v0"]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_few_hundred_bytes_overwritten_mid_file(tmp_path, seed):
    path = tmp_path / "c.sqlite"
    written(path, n=200).close()
    size = path.stat().st_size
    assert size > 32 * 1024
    overwrite(path, size // 2 + random.Random(seed).randrange(-4096, 4096), 300, seed)
    assert_recovers(path, n=200)


def test_damaged_header_moves_the_file_aside(tmp_path):
    path = tmp_path / "c.sqlite"
    written(path, n=20).close()
    overwrite(path, 0, 100)
    with pytest.warns(UserWarning) as caught:
        cache = ScoreCache(path)
    aside = tmp_path / "c.sqlite.corrupt"
    assert aside.exists()
    assert any(str(path) in str(w.message) and str(aside) in str(w.message) for w in caught)
    assert cache.get_logprob("l0") is None  # a fresh, empty cache
    cache.put_logprob("l0", LOGPROB)
    assert ScoreCache(path).get_logprob("l0") == LOGPROB


def test_a_damaged_files_write_ahead_log_moves_with_it(tmp_path):
    """Entries still in the write-ahead log of a file found damaged are never replayed into the
    fresh file that takes its place: the log moves aside with it."""
    path = tmp_path / "c.sqlite"
    written(path, n=200).close()
    writer = ScoreCache(path)
    writer.put_generation("in the log", REPLY)  # the writer is open: the entry is in c.sqlite-wal
    assert Path(f"{path}-wal").stat().st_size > 0
    size = path.stat().st_size
    overwrite(path, size // 2, 300)
    with pytest.warns(UserWarning, match="moved to"):
        cache = ScoreCache(path)
    assert Path(f"{path}.corrupt-wal").exists()
    assert cache.get_generation("in the log") is None
    cache.put_generation("g0", REPLY)
    assert ScoreCache(path).get_generation("g0") == REPLY
    writer.close()


def test_a_file_damaged_mid_run_costs_caching_not_the_run(tmp_path):
    """The open cache's file is damaged under it (its generations table now points at an index
    page): reads are misses and writes are dropped, warned once each; the next run moves the
    file aside and caches again."""
    cache = written(tmp_path / "c.sqlite", n=10)
    with sqlite3.connect(cache.path) as db:
        index_page = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'sqlite_autoindex_generations_1'"
        ).fetchone()[0]
        version = db.execute("PRAGMA schema_version").fetchone()[0]
        db.execute("PRAGMA writable_schema = ON")
        db.execute(
            "UPDATE sqlite_master SET rootpage = ? WHERE name = 'generations'", (index_page,)
        )
        db.execute(f"PRAGMA schema_version = {version + 1}")
    db.close()
    with recorded() as caught:
        for i in range(3):
            assert cache.get_generation(f"g{i}") is None
            cache.put_generation(f"g{i}", REPLY)  # never raises into scoring
        assert cache.get_logprob("l0") is None  # no caching in this file any more
        cache.put_logprob("l0", LOGPROB)
    assert len(caught) == 2
    assert all(str(cache.path) in m for m in messages(caught))
    assert "damaged" in messages(caught)[0] and "without caching" in messages(caught)[1]
    with pytest.warns(UserWarning, match="moved to"):
        rerun = ScoreCache(cache.path)
    rerun.put_generation("g0", REPLY)
    assert rerun.get_generation("g0") == REPLY


# -- (d) not a database -----------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"\x00" * 4096, b"not a database at all\n" * 500])
def test_a_file_that_is_not_a_database_is_moved_aside(tmp_path, content):
    path = tmp_path / "cache.sqlite"
    path.write_bytes(content)
    with recorded() as caught:
        cache = ScoreCache(path)
    aside = tmp_path / "cache.sqlite.corrupt"
    if content:
        [message] = messages(caught)
        assert str(path) in message and str(aside) in message
        assert aside.read_bytes() == content
    else:  # an empty file is an empty database: nothing to move
        assert not caught and not aside.exists()
    cache.put_value("v0", VALUE)
    assert cache.get_value("v0") == VALUE
    assert ScoreCache(path).get_value("v0") == VALUE


# -- a lock is not damage ---------------------------------------------------------------------


def test_a_locked_file_is_waited_for_then_skipped_never_moved(tmp_path):
    cache = written(tmp_path / "c.sqlite")
    cache._connection.execute("PRAGMA busy_timeout = 50")  # instead of 60 s
    other = sqlite3.connect(cache.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing, holding the write lock
    with recorded() as caught:
        cache.put_logprob("l1", LOGPROB)  # not stored, not raised
        cache.put_logprob("l2", LOGPROB)
        assert cache.get_logprob("l0") == LOGPROB  # readers are not blocked
    [message] = messages(caught)
    assert str(cache.path) in message and "locked" in message
    other.execute("ROLLBACK")
    other.close()
    assert not (tmp_path / "c.sqlite.corrupt").exists()
    assert cache.get_logprob("l1") is None
    cache.put_logprob("l1", LOGPROB)  # the file is still in use
    assert cache.get_logprob("l1") == LOGPROB


def test_an_undamaged_cache_warns_nothing(tmp_path):
    with recorded() as caught:
        cache = written(tmp_path / "c.sqlite", n=5)
        cache.close()
        again = ScoreCache(tmp_path / "c.sqlite")
        assert again.get_generation("g4") == f"{REPLY} (4)"
        assert again.get_generation("missing") is None
    assert not caught
    assert again.stats == {"generation_hit": 1, "generation_miss": 1}


# -- end to end --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_human_baseline_scores_through_a_damaged_cache(tmp_path):
    """``inspect eval gem_tasks/iclr --model none -T candidate=human`` on the demo data, rerun
    after bytes of its cached values were flipped: the run succeeds with the same score."""
    cache_dir = tmp_path / "cache"
    args = [
        "--model",
        "none",
        "--limit",
        "1",
        "-T",
        "candidate=human",
        "-T",
        "scorers=gem",
        "-T",
        "dataset_summaries=true",  # no preprocessing: the evaluation LM's log-probabilities only
        "-T",
        f"cache_dir={cache_dir}",
    ]
    runs = {}
    for name in ("first", "rerun"):
        (tmp_path / name).mkdir()
        run = inspect_eval(args, tmp_path / name)
        assert run.returncode == 0, run.stderr[-3000:]
        runs[name] = run, only_log(tmp_path / name)
        if name == "first":
            with sqlite3.connect(cache_dir / "cache.sqlite") as db:
                assert db.execute("SELECT count(*) FROM logprobs").fetchone()[0] > 0
                db.execute("UPDATE logprobs SET checksum = CAST(x'fffe41' AS TEXT)")
            db.close()
    (_, first_log), (rerun, rerun_log) = runs["first"], runs["rerun"]
    assert first_log.status == "success"
    assert rerun_log.status == "success"
    assert str(cache_dir / "cache.sqlite") in rerun.stderr + rerun.stdout
    [before], [after] = first_log.samples, rerun_log.samples
    assert after.scores["gem"].value == before.scores["gem"].value
