"""Content-addressed on-disk cache (sqlite, stdlib) for log-probabilities and generations.

Keys are sha256 digests of everything that determines the value: the model identity and the
token ids of context and target for a log-probability; the generator identity, the rendered
conversation and the decoding settings for a generation. So the marginal term of a reference and
the preprocessing of a human review are computed once across every candidate model and rerun.

Every row carries a checksum of its value; a row that fails it, or cannot be read at all, is a
miss: deleted, recomputed and rewritten. A database file that sqlite cannot read is moved aside
and started afresh; one that fails mid-run leaves the run going without caching in it. The cache
holds derived data only, so its damage costs recomputation, never a run (see
:class:`ScoreCache`).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sqlite3
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from scorers.lm.base import (
    ChatMessage,
    EvaluationLM,
    GenerationSettings,
    LogprobResult,
    Reply,
    ScoringRequest,
    WrappedEvaluationLM,
    hit_limit,
)

__all__ = ["CachedEvaluationLM", "ScoreCache", "default_cache_dir", "partition_cached"]

Input = TypeVar("Input")
Output = TypeVar("Output")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS logprobs
    (key TEXT PRIMARY KEY, total REAL, n_tokens INTEGER, checksum TEXT);
CREATE TABLE IF NOT EXISTS generations
    (key TEXT PRIMARY KEY, text TEXT, checksum TEXT, hit_limit INTEGER);
CREATE TABLE IF NOT EXISTS model_values (key TEXT PRIMARY KEY, value TEXT, checksum TEXT);
"""
_LIMIT_CODES = {None: -1, False: 0, True: 1}
"""How a reply's ``hit_limit`` is stored (NULL: a row written before the flag was kept)."""


def default_cache_dir() -> Path:
    """``$GEM_TASKS_CACHE_DIR``, else ``$XDG_CACHE_HOME/gem_tasks``, else ``~/.cache/gem_tasks``."""
    explicit = os.environ.get("GEM_TASKS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gem_tasks"


def _digest(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class _Undecodable(bytes):
    """A stored text value that is not valid UTF-8 (a damaged row): never equal to a str."""


def _decode(raw: bytes) -> str | bytes:
    """The connection's text factory: what the default (``str``) returns for valid UTF-8, and
    the raw bytes for anything else, which every read then treats as a damaged value."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _Undecodable(raw)


_BUSY = {sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED}
"""Another connection holds the file (after sqlite's 60 s busy timeout): not damage."""
_ENVIRONMENT = {
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_CANTOPEN,
    sqlite3.SQLITE_READONLY,
    sqlite3.SQLITE_PERM,
    sqlite3.SQLITE_NOMEM,
    sqlite3.SQLITE_NOLFS,
    sqlite3.SQLITE_AUTH,
}
"""Errors of the disk, the folder or the machine, not of the file's content: moving the file
aside would not help."""
_COMPANIONS = ("-wal", "-shm", "-journal")
"""sqlite's files beside a database (write-ahead log, its index, rollback journal): they move
with it, so that a fresh file at the path never replays a damaged file's log."""


def _primary_code(error: sqlite3.DatabaseError) -> int | None:
    code = getattr(error, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _is_busy(error: sqlite3.DatabaseError) -> bool:
    return _primary_code(error) in _BUSY or "locked" in str(error)


class ScoreCache:
    """The sqlite store. Thread-safe; every write is its own transaction (atomic).

    A damaged cache is never fatal: a value that cannot be read back as it was written (a
    sqlite error on its row, text that is not UTF-8, a value of the wrong type or shape, a
    checksum that does not match) is a miss, recomputed by the caller and rewritten over the
    damaged row; a file sqlite cannot use at all is moved aside to ``<name>.corrupt`` and a
    fresh one started; a file that fails mid-run is left alone and the run goes on without
    caching in it. Each kind of problem is warned about once per cache file. A file another
    process holds locked is waited for (60 s) and, past that, skipped for the read or write
    at hand, never moved aside.
    """

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_cache_dir() / "cache.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._reported: set[str] = set()
        self._disabled = False
        self.checked = False
        """Whether opening ran sqlite's whole-file check (the file was not as a clean close
        left it: :meth:`_left_as_closed`)."""
        self._connection: sqlite3.Connection | None = self._open()
        atexit.register(self.close)

    # -- opening ------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        connection.text_factory = _decode
        return connection

    def _prepare(self, connection: sqlite3.Connection) -> sqlite3.Connection:
        """Check the file and create or migrate its tables; sqlite3.DatabaseError if the file
        cannot be used."""
        connection.execute("PRAGMA schema_version").fetchone()  # a header that is not sqlite's
        self.checked = not self._left_as_closed()
        if self.checked:  # whole-file check: costs a read of the file (0.6 s a GB)
            check = connection.execute("PRAGMA quick_check(1)").fetchone()
            if check != ("ok",):
                found = "; ".join(str(check[0]).splitlines()) if check else "no answer"
                raise sqlite3.DatabaseError(f"quick_check: {found}")
        connection.execute("PRAGMA journal_mode=WAL")
        connection.executescript(_SCHEMA)
        columns = {row[1] for row in connection.execute("PRAGMA table_info(generations)")}
        if "hit_limit" not in columns:  # a cache written before replies kept the flag
            connection.execute("ALTER TABLE generations ADD COLUMN hit_limit INTEGER")
            connection.commit()
        return connection

    def _open(self) -> sqlite3.Connection | None:
        """A usable connection: the file as it is, else (damaged) a fresh file in its place,
        else (the disk, the folder or a lock is the problem) None: no caching in this file."""
        for _ in range(2):
            found = self._identity()
            connection = None
            try:
                connection = self._connect()
                return self._prepare(connection)
            except sqlite3.DatabaseError as error:
                _close_quietly(connection)
                if _is_busy(error) or _primary_code(error) in _ENVIRONMENT:
                    return self._give_up(f"cannot be used ({error})")
                if self._identity() != found:
                    continue  # another process moved it aside meanwhile: open the new file
                broken = self.path.with_suffix(self.path.suffix + ".corrupt")
                try:
                    self._move_aside(broken)
                except OSError as move_error:
                    return self._give_up(
                        f"is unreadable ({error}) and cannot be moved aside ({move_error})"
                    )
                warnings.warn(
                    f"cache {self.path} is unreadable ({error}); moved to {broken}, a fresh "
                    "cache starts in its place",
                    stacklevel=3,
                )
                break
        connection = None
        try:
            connection = self._connect()
            return self._prepare(connection)
        except sqlite3.DatabaseError as error:
            _close_quietly(connection)
            return self._give_up(f"cannot be used ({error})")

    @property
    def _stamp_path(self) -> Path:
        return Path(f"{self.path}.closed")

    def _state(self) -> str | None:
        """The file as it is on disk (device, inode, size, modification time), None if absent."""
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return f"{stat.st_dev} {stat.st_ino} {stat.st_size} {stat.st_mtime_ns}"

    def _left_as_closed(self) -> bool:
        """Whether the file is exactly as this class left it when it last closed it without
        having met damage (its stamp, written at that close, matches; no write-ahead log is
        pending). Anything else (a crash, another writer still at work, bytes changed under it,
        an earlier run that met damage) earns the whole-file check at open. Damage that changes
        no file attribute is still never fatal: the entries it touches read as misses."""
        try:
            stamp = self._stamp_path.read_text(encoding="utf-8").strip()
        except OSError:
            return False
        wal = Path(f"{self.path}-wal")
        pending = wal.exists() and wal.stat().st_size > 0
        return not pending and stamp == self._state()

    def _write_stamp(self) -> None:
        state = self._state()
        if state is None:
            return
        staging = self._stamp_path.with_name(f"{self._stamp_path.name}.{os.getpid()}")
        try:
            staging.write_text(state, encoding="utf-8")
            os.replace(staging, self._stamp_path)
        except OSError:
            staging.unlink(missing_ok=True)

    def _identity(self) -> tuple[int, int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_dev, stat.st_ino

    def _move_aside(self, broken: Path) -> None:
        os.replace(self.path, broken)
        for suffix in _COMPANIONS:
            source, target = Path(f"{self.path}{suffix}"), Path(f"{broken}{suffix}")
            if source.exists():
                os.replace(source, target)
            else:
                target.unlink(missing_ok=True)  # an earlier damaged file's, not this one's

    def _give_up(self, why: str) -> None:
        """No caching in this file for the rest of the process (warned once)."""
        self._disabled = True
        self._stamp_path.unlink(missing_ok=True)
        self._report("disabled", f"cache {self.path} {why}; the run goes on without caching in it")
        return None

    def close(self) -> None:
        """Close the file (once); a file this process met no damage in is stamped as closed, so
        that the next open skips the whole-file check."""
        with self._lock:
            if self._connection is None:
                return
            connection, self._connection = self._connection, None
            connection.close()
            if not self._disabled and not self._reported & {"damaged", "disabled"}:
                self._write_stamp()

    # -- reading and writing (the lock held) ---------------------------------------------------
    def _report(self, problem: str, message: str) -> None:
        """Warn about ``problem`` once for this cache file."""
        if problem not in self._reported:
            self._reported.add(problem)
            warnings.warn(message, stacklevel=2)

    def _fetch(self, kind: str, sql: str, key: str) -> tuple | None:
        """The row of ``key``, or None: absent, or unreadable (a miss, reported)."""
        if self._disabled or self._connection is None:
            self.stats[f"{kind}_miss"] += 1
            return None
        try:
            row = self._connection.execute(sql, (key,)).fetchone()
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.ProgrammingError):
                raise
            if _is_busy(error):
                self._busy(error)
            else:
                self.stats[f"{kind}_corrupt"] += 1
                self._damaged(f"reading an entry failed ({error})")
            row = None
        if row is None:
            self.stats[f"{kind}_miss"] += 1
        return row

    def _discard(self, kind: str, table: str, key: str, what: str) -> None:
        """A damaged row: deleted (the caller recomputes and rewrites it), counted, reported."""
        self._write(f"DELETE FROM {table} WHERE key = ?", (key,))
        self.stats[f"{kind}_corrupt"] += 1
        self.stats[f"{kind}_miss"] += 1
        self._damaged(what)

    def _damaged(self, what: str) -> None:
        self._stamp_path.unlink(missing_ok=True)  # the next open checks the whole file
        self._report(
            "damaged",
            f"cache {self.path} holds damaged entries ({what}); they are read as misses, "
            "recomputed and rewritten (further ones in this file are not reported)",
        )

    def _busy(self, error: sqlite3.DatabaseError) -> None:
        self._report(
            "busy",
            f"cache {self.path} stayed locked by another connection for 60 s ({error}); "
            "entries that could not be read or written then are recomputed when next needed",
        )

    def _write(self, sql: str, parameters: tuple) -> None:
        """One statement in its own transaction; a failure never reaches the caller."""
        if self._disabled or self._connection is None:
            return
        try:
            with self._connection:
                self._connection.execute(sql, parameters)
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.ProgrammingError):
                raise
            if _is_busy(error):
                self._busy(error)
            else:
                self._give_up(f"can no longer be written ({error})")

    # -- log-probabilities --------------------------------------------------------------------
    @staticmethod
    def logprob_key(identity: str, request: ScoringRequest) -> str:
        return _digest(
            "logprob", identity, json.dumps(request.context_ids), json.dumps(request.target_ids)
        )

    @staticmethod
    def _logprob_checksum(total: float, n_tokens: int) -> str:
        return _digest(repr(float(total)), str(int(n_tokens)))[:16]

    def get_logprob(self, key: str) -> LogprobResult | None:
        with self._lock:
            row = self._fetch(
                "logprob", "SELECT total, n_tokens, checksum FROM logprobs WHERE key = ?", key
            )
            if row is None:
                return None
            total, n_tokens, checksum = row
            if not isinstance(total, float) or not isinstance(n_tokens, int):
                self._discard("logprob", "logprobs", key, "a value of the wrong type")
                return None
            if checksum != self._logprob_checksum(total, n_tokens):
                self._discard("logprob", "logprobs", key, _mismatch(checksum))
                return None
            self.stats["logprob_hit"] += 1
            return LogprobResult(total=total, n_tokens=n_tokens)

    def put_logprob(self, key: str, result: LogprobResult) -> None:
        with self._lock:
            self._write(
                "INSERT OR REPLACE INTO logprobs VALUES (?, ?, ?, ?)",
                (
                    key,
                    float(result.total),
                    int(result.n_tokens),
                    self._logprob_checksum(result.total, result.n_tokens),
                ),
            )

    # -- generations --------------------------------------------------------------------------
    @staticmethod
    def generation_key(
        identity: str, conversation: Sequence[ChatMessage], settings: GenerationSettings
    ) -> str:
        return _digest("generation", identity, json.dumps(list(conversation)), settings.key())

    @staticmethod
    def _generation_checksum(text: str, code: int) -> str:
        return _digest(text, str(code))[:16]

    def get_generation(self, key: str) -> Reply | None:
        """The stored reply with its ``hit_limit`` flag; a row written before the flag was
        stored is a miss (so the reply is generated again and the flag is known)."""
        with self._lock:
            row = self._fetch(
                "generation",
                "SELECT text, checksum, hit_limit FROM generations WHERE key = ?",
                key,
            )
            if row is None:
                return None
            text, checksum, code = row
            if code is None:
                self.stats["generation_stale"] += 1
                self.stats["generation_miss"] += 1
                return None
            if isinstance(text, _Undecodable):
                self._discard("generation", "generations", key, "text that is not UTF-8")
                return None
            if not isinstance(text, str) or code not in _LIMIT_CODES.values():
                self._discard("generation", "generations", key, "a value of the wrong type")
                return None
            if checksum != self._generation_checksum(text, code):
                self._discard("generation", "generations", key, _mismatch(checksum))
                return None
            self.stats["generation_hit"] += 1
            return Reply(text, hit_limit=None if code < 0 else bool(code))

    def put_generation(self, key: str, text: str) -> None:
        """Store a reply and whether it stopped at its token limit (``text`` a
        :class:`~scorers.lm.base.Reply`; a plain string is stored as "not said")."""
        code = _LIMIT_CODES[hit_limit(text)]
        with self._lock:
            self._write(
                "INSERT OR REPLACE INTO generations (key, text, checksum, hit_limit) "
                "VALUES (?, ?, ?, ?)",
                (key, str(text), self._generation_checksum(str(text), code), code),
            )

    # -- other model outputs (a Binoculars pair's perplexities, ...) ---------------------------
    @staticmethod
    def value_key(kind: str, *parts: str) -> str:
        """The key of a model output of ``kind`` (``binoculars``, ...) computed from ``parts``
        (model identities, token ids as JSON, options): everything that determines it."""
        return _digest("value", kind, *parts)

    def get_value(self, key: str) -> Any | None:
        """A stored model output (JSON data), or None (a damaged row is deleted: a miss)."""
        with self._lock:
            row = self._fetch(
                "value", "SELECT value, checksum FROM model_values WHERE key = ?", key
            )
            if row is None:
                return None
            text, checksum = row
            if isinstance(text, _Undecodable):
                self._discard("value", "model_values", key, "text that is not UTF-8")
                return None
            if not isinstance(text, str):
                self._discard("value", "model_values", key, "a value of the wrong type")
                return None
            if checksum != _digest(text)[:16]:
                self._discard("value", "model_values", key, _mismatch(checksum))
                return None
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                self._discard("value", "model_values", key, "JSON that does not parse")
                return None
            self.stats["value_hit"] += 1
            return value

    def put_value(self, key: str, value: Any) -> None:
        """Store a model output (JSON data; floats keep their exact value)."""
        text = json.dumps(value, sort_keys=True)
        with self._lock:
            self._write(
                "INSERT OR REPLACE INTO model_values VALUES (?, ?, ?)",
                (key, text, _digest(text)[:16]),
            )


def _mismatch(checksum: object) -> str:
    if isinstance(checksum, _Undecodable):
        return "a checksum that is not UTF-8"
    return "a value that does not match its checksum"


def partition_cached(
    keys: Sequence[str], inputs: Sequence[Input], read: Callable[[str], Output | None]
) -> tuple[dict[str, Output], dict[str, Input]]:
    """The lookup every cached computation starts with: each distinct key once, either found
    by ``read`` (key -> stored value; a damaged entry reads as a miss) or missing (key -> its
    input), both in first-seen order. The caller computes the missing inputs, stores each result
    under its key, and answers every key in ``keys`` order from the two."""
    found: dict[str, Output] = {}
    missing: dict[str, Input] = {}
    for key, value in zip(keys, inputs, strict=True):
        if key in found or key in missing:
            continue
        stored = read(key)
        if stored is None:
            missing[key] = value
        else:
            found[key] = stored
    return found, missing


def _close_quietly(connection: sqlite3.Connection | None) -> None:
    if connection is not None:
        try:
            connection.close()
        except sqlite3.Error:
            pass


class CachedEvaluationLM(WrappedEvaluationLM):
    """An :class:`EvaluationLM` whose results are read from and written to a :class:`ScoreCache`.

    Only misses reach the wrapped backend, in one batched call; a failing backend call stores
    nothing. Single flight: a request that another thread is computing at the moment is not
    computed again; the call waits for that result and reads it from the cache (if that
    computation failed, the waiting call computes the request itself).
    """

    def __init__(self, backend: EvaluationLM, cache: ScoreCache) -> None:
        self.backend = backend
        self.cache = cache
        self.computed: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._in_flight: dict[str, threading.Event] = {}

    def target_logprobs(self, requests: Sequence[ScoringRequest]) -> list[LogprobResult]:
        keys = [self.cache.logprob_key(self.identity, r) for r in requests]

        def compute(missing: dict[str, ScoringRequest]) -> list[LogprobResult]:
            computed = self.backend.target_logprobs(list(missing.values()))
            self.computed["logprob_requests"] += len(missing)
            self.computed["logprob_tokens"] += sum(r.length for r in missing.values())
            for key, result in zip(missing, computed):
                self.cache.put_logprob(key, result)
            return computed

        return self._single_flight(keys, requests, self.cache.get_logprob, compute)

    def generate(
        self, conversations: Sequence[Sequence[ChatMessage]], settings: GenerationSettings
    ) -> list[Reply]:
        keys = [self.cache.generation_key(self.identity, c, settings) for c in conversations]

        def compute(missing: dict[str, Sequence[ChatMessage]]) -> list[Reply]:
            generated = [
                reply if isinstance(reply, Reply) else Reply(reply, hit_limit=None)
                for reply in self.backend.generate(list(missing.values()), settings)
            ]
            self.computed["generations"] += len(missing)
            for key, text in zip(missing, generated):
                self.cache.put_generation(key, text)
            return generated

        return self._single_flight(keys, conversations, self.cache.get_generation, compute)

    def _single_flight(
        self,
        keys: list[str],
        inputs: Sequence[Input],
        read: Callable[[str], Output | None],
        compute: Callable[[dict[str, Input]], list[Output]],
    ) -> list[Output]:
        """Each distinct key once: from the cache, from another thread's computation of it
        (waited for), or computed here in one batched ``compute`` call of the rest."""
        results: dict[str, Output] = {}
        pending = dict(zip(keys, inputs))
        while pending:
            mine: dict[str, Input] = {}
            waits: dict[str, threading.Event] = {}
            with self._lock:
                found, missing = partition_cached(list(pending), list(pending.values()), read)
                results.update(found)
                for key, value in missing.items():
                    if key in self._in_flight:
                        waits[key] = self._in_flight[key]
                    else:
                        mine[key] = value
                        self._in_flight[key] = threading.Event()
            try:
                if mine:
                    for key, result in zip(mine, compute(mine)):
                        results[key] = result
            finally:
                with self._lock:
                    for key in mine:
                        self._in_flight.pop(key).set()
            for event in waits.values():
                event.wait()
            # what another thread computed is in the cache now; a failed one is tried again here
            pending = {key: pending[key] for key in waits}
        return [results[key] for key in keys]
