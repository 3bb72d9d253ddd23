"""Content-addressed on-disk cache (sqlite, stdlib) for log-probabilities and generations.

Keys are sha256 digests of everything that determines the value: the model identity and the
token ids of context and target for a log-probability; the generator identity, the rendered
conversation and the decoding settings for a generation. So the marginal term of a reference and
the preprocessing of a human review are computed once across every candidate model and rerun.

Every row carries a checksum of its value; a row that fails it is deleted and recomputed, and a
database file that sqlite cannot read is moved aside and started afresh.
"""

from __future__ import annotations

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
    hit_limit,
)

__all__ = ["CachedEvaluationLM", "ScoreCache", "default_cache_dir"]

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


class ScoreCache:
    """The sqlite store. Thread-safe; every write is its own transaction (atomic)."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path else default_cache_dir() / "cache.sqlite"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stats: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._connection = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            connection = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
            connection.execute("PRAGMA journal_mode=WAL")
            connection.executescript(_SCHEMA)
            connection.execute("SELECT count(*) FROM logprobs").fetchone()
            columns = {row[1] for row in connection.execute("PRAGMA table_info(generations)")}
            if "hit_limit" not in columns:  # a cache written before replies kept the flag
                connection.execute("ALTER TABLE generations ADD COLUMN hit_limit INTEGER")
                connection.commit()
            return connection
        except sqlite3.DatabaseError as exc:
            broken = self.path.with_suffix(self.path.suffix + ".corrupt")
            warnings.warn(
                f"cache {self.path} is unreadable ({exc}); moved to {broken}", stacklevel=2
            )
            os.replace(self.path, broken)
            connection = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
            connection.executescript(_SCHEMA)
            return connection

    def close(self) -> None:
        with self._lock:
            self._connection.close()

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
            row = self._connection.execute(
                "SELECT total, n_tokens, checksum FROM logprobs WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.stats["logprob_miss"] += 1
                return None
            total, n_tokens, checksum = row
            if (
                not isinstance(total, float)
                or not isinstance(n_tokens, int)
                or checksum != self._logprob_checksum(total, n_tokens)
            ):
                self._connection.execute("DELETE FROM logprobs WHERE key = ?", (key,))
                self._connection.commit()
                self.stats["logprob_corrupt"] += 1
                self.stats["logprob_miss"] += 1
                return None
            self.stats["logprob_hit"] += 1
            return LogprobResult(total=total, n_tokens=n_tokens)

    def put_logprob(self, key: str, result: LogprobResult) -> None:
        with self._lock, self._connection:
            self._connection.execute(
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
            row = self._connection.execute(
                "SELECT text, checksum, hit_limit FROM generations WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.stats["generation_miss"] += 1
                return None
            text, checksum, code = row
            if code is None:
                self.stats["generation_stale"] += 1
                self.stats["generation_miss"] += 1
                return None
            if (
                not isinstance(text, str)
                or code not in _LIMIT_CODES.values()
                or checksum != self._generation_checksum(text, code)
            ):
                self._connection.execute("DELETE FROM generations WHERE key = ?", (key,))
                self._connection.commit()
                self.stats["generation_corrupt"] += 1
                self.stats["generation_miss"] += 1
                return None
            self.stats["generation_hit"] += 1
            return Reply(text, hit_limit=None if code < 0 else bool(code))

    def put_generation(self, key: str, text: str) -> None:
        """Store a reply and whether it stopped at its token limit (``text`` a
        :class:`~scorers.lm.base.Reply`; a plain string is stored as "not said")."""
        code = _LIMIT_CODES[hit_limit(text)]
        with self._lock, self._connection:
            self._connection.execute(
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
        """A stored model output (JSON data), or None (a tampered row is deleted: a miss)."""
        with self._lock:
            row = self._connection.execute(
                "SELECT value, checksum FROM model_values WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                self.stats["value_miss"] += 1
                return None
            text, checksum = row
            if not isinstance(text, str) or checksum != _digest(text)[:16]:
                self._connection.execute("DELETE FROM model_values WHERE key = ?", (key,))
                self._connection.commit()
                self.stats["value_corrupt"] += 1
                self.stats["value_miss"] += 1
                return None
            self.stats["value_hit"] += 1
            return json.loads(text)

    def put_value(self, key: str, value: Any) -> None:
        """Store a model output (JSON data; floats keep their exact value)."""
        text = json.dumps(value, sort_keys=True)
        with self._lock, self._connection:
            self._connection.execute(
                "INSERT OR REPLACE INTO model_values VALUES (?, ?, ?)",
                (key, text, _digest(text)[:16]),
            )


class CachedEvaluationLM:
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

    @property
    def identity(self) -> str:
        return self.backend.identity

    @property
    def tokenizer(self) -> object:
        return self.backend.tokenizer

    @property
    def max_length(self) -> int | None:
        return self.backend.max_length

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
                for key, value in pending.items():
                    cached = read(key)
                    if cached is not None:
                        results[key] = cached
                    elif key in self._in_flight:
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
