"""Evidence runs that outlast one invocation: an Inspect eval that resumes where it was stopped,
and a journal of the invocations that together produced a result.

A run of several CPU hours is often stopped before it ends (a terminal closes, the machine is
needed). :func:`resumable_eval` runs a task through Inspect's ``eval_set``: a rerun with the same
task finds the log of the stopped run in the same folder and reuses its finished samples (Inspect
recovers a crashed log; only samples in flight are redone). When the task has finished, the logs
of the stopped invocations, whose samples the finished log now holds, are removed, so one log
per task remains and the leaderboard reads each sample once.

:class:`Journal` (``invocations.json`` in the results folder) records each invocation: its
commit, whether the tree had uncommitted changes, the machine it ran on, its start, a heartbeat
written every ``HEARTBEAT_S`` seconds while it works, and its end where it reached one; the time
a resumed row took is the sum over its invocations (:meth:`Journal.seconds`), each counted to its
end or, where it was stopped, to its last heartbeat. A resume is refused when the commit or the
settings that decide the numbers differ from the first invocation's: the rows would mix two
computations.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.log import list_eval_logs, read_eval_log

from benchmarks.common.machine import describe_machine
from benchmarks.common.manifest import Run
from benchmarks.common.paths import missing_data

JOURNAL = "invocations.json"
HEARTBEAT_S = 30.0


class ResumeRefused(SystemExit):
    """A stopped run cannot be resumed as asked (another commit or other settings)."""


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _stamp(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="seconds")


class JournalRecord:
    """A run's journal as it was written (read only): which invocations worked on which rows,
    when, at which commit, on which machine."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @classmethod
    def read(cls, out: Path) -> JournalRecord | None:
        """The journal in results folder ``out``; None when there is none."""
        path = Path(out) / JOURNAL
        return cls(json.loads(path.read_text())) if path.exists() else None

    def seconds(self, name: str) -> float:
        """Row ``name``'s time summed over the invocations that worked on it (each to its end,
        or to its last heartbeat where it was stopped)."""
        total = 0.0
        for invocation in self.data["invocations"]:
            timing = invocation["rows"].get(name)
            if timing:
                end = datetime.datetime.fromisoformat(timing["ended"] or timing["alive"])
                total += (end - datetime.datetime.fromisoformat(timing["started"])).total_seconds()
        return total

    def rows(self) -> list[str]:
        """The rows any invocation worked on, in the order they were first started."""
        invocations = self.data["invocations"]
        return list(dict.fromkeys(row for invocation in invocations for row in invocation["rows"]))

    def invocations(self, name: str) -> int:
        """How many invocations worked on row ``name``."""
        return sum(name in invocation["rows"] for invocation in self.data["invocations"])

    def finished(self, name: str) -> bool:
        """Whether an invocation finished row ``name``."""
        return any(
            (invocation["rows"].get(name) or {}).get("ended")
            for invocation in self.data["invocations"]
        )

    def commits(self, name: str) -> list[str]:
        """The commits of the invocations that worked on row ``name``, in order."""
        found = [i["commit"] for i in self.data["invocations"] if name in i["rows"]]
        return list(dict.fromkeys(found))


class Journal(JournalRecord):
    """The invocations of one resumable run, kept in ``invocations.json`` of its results folder.

    Args:
        run: the run's provenance (:class:`~benchmarks.common.manifest.Run`): its folder, and
            the commit and uncommitted-changes flag this invocation records.
        settings: what decides the numbers (model, limits, reply length...): a later invocation
            with other settings is refused (:class:`ResumeRefused`), as is one at another commit
            or with uncommitted changes when the first had none. JSON-serialisable.
        fresh: forget earlier invocations and start a new journal; ``logs`` is removed too.
        logs: the folder of the run's Inspect logs (a folder per row); a fresh start removes it,
            so that no row resumes the samples of a stopped run it was told to forget.
    """

    def __init__(
        self,
        run: Run,
        *,
        settings: dict[str, Any],
        fresh: bool = False,
        logs: Path | None = None,
    ) -> None:
        if fresh and logs is not None:
            shutil.rmtree(logs, ignore_errors=True)
        self.path = run.out / JOURNAL
        self.settings = json.loads(json.dumps(settings, default=str))
        self.commit = run.record["commit"]
        self.uncommitted = run.record["uncommitted_changes"]
        earlier = json.loads(self.path.read_text()) if self.path.exists() and not fresh else None
        if earlier is not None:
            first = earlier["invocations"][0] if earlier["invocations"] else {}
            if earlier["settings"] != self.settings:
                raise ResumeRefused(
                    f"{self.path}: the stopped run used settings {earlier['settings']}, this one "
                    f"{self.settings}; rerun with --fresh to start over"
                )
            if first and (first.get("commit"), first.get("uncommitted")) != (
                self.commit,
                self.uncommitted,
            ):
                raise ResumeRefused(
                    f"{self.path}: the stopped run was started at commit {first.get('commit')} "
                    f"(uncommitted changes: {first.get('uncommitted')}), this tree is at "
                    f"{self.commit} (uncommitted changes: {self.uncommitted}); check out that "
                    "commit to resume, or rerun with --fresh to start over"
                )
        self.data: dict[str, Any] = earlier or {"settings": self.settings, "invocations": []}
        self.entry: dict[str, Any] = {
            "commit": self.commit,
            "uncommitted": self.uncommitted,
            # rows of one run can be computed on different machines (a GPU machine's model row,
            # the rule rows and the leaderboard here): each invocation says where it ran
            "machine": run.record["machine"],
            "started": _stamp(_now()),
            "rows": {},
        }
        self.data["invocations"].append(self.entry)
        self._lock = threading.Lock()
        self._write()

    def _write(self) -> None:
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.data, indent=1) + "\n")
        temporary.replace(self.path)

    @contextmanager
    def row(self, name: str) -> Iterator[None]:
        """Times row ``name`` in this invocation: its start, a heartbeat every ``HEARTBEAT_S``
        seconds, its end when the block finishes (an exception leaves the last heartbeat)."""
        timing = {"started": _stamp(_now()), "alive": _stamp(_now()), "ended": None}
        with self._lock:
            self.entry["rows"][name] = timing
            self._write()
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_S):
                with self._lock:
                    timing["alive"] = _stamp(_now())
                    self._seen_machine()
                    self._write()

        beating = threading.Thread(target=beat, name=f"heartbeat {name}", daemon=True)
        beating.start()
        try:
            yield
            with self._lock:
                timing["alive"] = timing["ended"] = _stamp(_now())
                self._seen_machine()
        finally:
            stop.set()
            beating.join()
            with self._lock:
                self._write()

    def _seen_machine(self) -> None:
        """The machine as a row sees it once it works: the GPU appears once torch has loaded a
        model on it (the invocation starts before any model is loaded)."""
        self.entry["machine"] = describe_machine()


def add_fresh_option(
    parser: argparse.ArgumentParser,
    *,
    help: str = "forget a stopped run's logs and journal, start over",  # noqa: A002
) -> None:
    """The ``--fresh`` flag of a resumable run's command line (for :class:`Journal`'s ``fresh``)."""
    parser.add_argument("--fresh", action="store_true", help=help)


def start_journal(
    args: argparse.Namespace,
    settings: dict[str, Any],
    *,
    inputs: Sequence[Path] | None = None,
    logs: bool = True,
) -> tuple[Run, Journal]:
    """The start of a resumable experiment whose command line has ``--data``, ``--out`` and
    ``--fresh``: the data file checked (a missing one says how to fetch it), the run's
    provenance (its ``inputs``, by default the data file alone; every argument as given) and its
    journal, whose ``settings`` (what decides the numbers; the data file is one) a resume must
    repeat. ``logs``: the rows' Inspect logs live in ``<out>/logs``."""
    if not args.data.exists():
        raise SystemExit(missing_data(args.data))
    provenance = Run(args.out, data=list(inputs or [args.data]), settings=vars(args))
    journal = Journal(
        provenance,
        settings={"data": str(args.data), **settings},
        fresh=args.fresh,
        logs=args.out / "logs" if logs else None,
    )
    return provenance, journal


def resumable_eval(task: Task, log_dir: Path, **options: Any) -> str:
    """Run ``task`` to the end through Inspect's ``eval_set`` in ``log_dir`` (a folder for this
    task alone), resuming a stopped run of the same task there, and return its finished log's
    path (read it with ``read_eval_log``; the log is not read here). The stopped runs' logs are
    removed once their samples are in it.

    Raises:
        SystemExit: the task did not finish (the error is in its log, which is kept).
    """
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    finished, logs = eval_set(
        task, log_dir=str(log_dir), retry_attempts=0, retry_immediate=False, **options
    )
    if not finished or len(logs) != 1 or logs[0].status != "success":
        errors = [log.error.message[:500] for log in logs if log.error]
        raise SystemExit(f"{task.name} did not finish in {log_dir}: {errors or 'no error logged'}")
    done = logs[0].location.removeprefix("file://")
    remove_stopped_logs(log_dir, keep=[done])
    return done


def run_row(
    journal: Journal, name: str, make_task: Callable[[], Task], log_dir: Path, **options: Any
) -> str:
    """Row ``name`` of a resumable run, one task in its own ``log_dir``: read from its finished
    log where an earlier invocation finished it (not redone, not timed again), otherwise run, or
    resumed with its finished samples, through :func:`resumable_eval` and timed in ``journal``.
    ``options`` go to Inspect (model, display, limits). Returns the finished log's path.

    Raises:
        SystemExit: the task did not finish (its log is kept for the next invocation).
    """
    done = finished_log(log_dir)
    if done is not None:
        print(f"{name}: finished earlier, read from its log", flush=True)
        return done
    with journal.row(name):
        done = resumable_eval(make_task(), log_dir, **options)
    print(f"{name}: success, {journal.seconds(name):.1f} s", flush=True)
    return done


def journalled_result(
    journal: Journal, name: str, stored: Path, compute: Callable[[], dict[str, Any]]
) -> dict[str, Any]:
    """Row ``name`` of a run that writes one JSON result, ``stored``, without Inspect (a script
    asking the evaluation LM directly, which resumes through the score cache): read back where
    an earlier invocation finished the row and the file is there (not redone, not timed again);
    otherwise ``compute()`` timed in ``journal``, its time over the invocations added as
    ``seconds`` and their count as ``invocations``, written to ``stored`` and returned."""
    if journal.finished(name) and stored.exists():
        print(f"{name}: finished earlier, read from {stored}", flush=True)
        return json.loads(stored.read_text())
    with journal.row(name):
        result = compute()
    result["seconds"] = round(journal.seconds(name), 1)
    result["invocations"] = journal.invocations(name)
    stored.write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str) + "\n")
    return result


def finished_log(log_dir: Path) -> str | None:
    """The finished (``success``) log in ``log_dir``, a folder :func:`resumable_eval` ran one task
    in; None when there is none yet (no folder, or only stopped logs).

    Raises:
        SystemExit: the folder holds more than one finished log (not one task's folder).
    """
    if not Path(log_dir).is_dir():
        return None
    done = [
        info.name.removeprefix("file://")
        for info in list_eval_logs(str(log_dir), recursive=False)
        if read_eval_log(info, header_only=True).status == "success"
    ]
    if len(done) > 1:
        raise SystemExit(f"{log_dir}: {len(done)} finished logs, expected one task's log")
    return done[0] if done else None


def remove_stopped_logs(log_dir: Path, *, keep: Sequence[str]) -> list[str]:
    """Remove the logs in ``log_dir`` that did not finish (``started``, ``error``,
    ``cancelled``), except ``keep``; returns what was removed."""
    removed = []
    kept = {Path(k).name for k in keep}
    for info in list_eval_logs(str(log_dir), recursive=False):
        path = Path(info.name.removeprefix("file://"))
        header = read_eval_log(info, header_only=True)
        if header.status != "success" and path.name not in kept:
            path.unlink()
            removed.append(str(path))
    return removed
