"""Asynchronous jobs: an SQLite job store and the runner that feeds jobs to the pool.

A job is written to the database (WAL journal, ``synchronous=FULL``) before ``SubmitJob``
answers, so an accepted job survives a crash of the server. On start, jobs left ``RUNNING`` by
a previous server are queued again, like those still ``QUEUED``. A job whose worker dies is
retried once, then fails with the reason. Finished jobs are kept ``retention_s`` seconds.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = 1, 2, 3, 4, 5
"""``placement.v1.JobState`` numbers."""
FINISHED = (SUCCEEDED, FAILED, CANCELLED)
MAX_CRASHES = 2
"""A job whose worker dies this many times fails (one retry)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    state INTEGER NOT NULL,
    created_at REAL NOT NULL,
    started_at REAL NOT NULL DEFAULT 0,
    finished_at REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    crashes INTEGER NOT NULL DEFAULT 0,
    request BLOB NOT NULL,
    time_limit_s REAL NOT NULL,
    result BLOB,
    error TEXT NOT NULL DEFAULT '',
    instance_name TEXT NOT NULL DEFAULT '',
    family TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, seq);
"""


class JobStoreError(Exception):
    """The job database cannot be opened or written (corrupt file, disk full, ...)."""


@dataclass
class JobRow:
    """One job as stored."""

    id: str
    seq: int
    state: int
    created_at: float
    started_at: float
    finished_at: float
    attempts: int
    crashes: int
    request: bytes
    time_limit_s: float
    result: bytes | None
    error: str
    instance_name: str
    family: str


class JobStore:
    """Jobs in an SQLite file (``:memory:`` for a throwaway store)."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.execute("SELECT count(*) FROM jobs").fetchone()
        except sqlite3.Error as exc:
            raise JobStoreError(f"job database {self.path}: {exc}") from exc
        self._lock = threading.Lock()
        row = self._db.execute("SELECT coalesce(max(seq), 0) FROM jobs").fetchone()
        self._seq = int(row[0])

    def _write(self, sql: str, args: tuple[Any, ...]) -> int:
        with self._lock:
            try:
                return self._db.execute(sql, args).rowcount
            except sqlite3.Error as exc:
                raise JobStoreError(f"job database {self.path}: {exc}") from exc

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[JobRow]:
        with self._lock:
            try:
                rows = self._db.execute(sql, args).fetchall()
            except sqlite3.Error as exc:
                raise JobStoreError(f"job database {self.path}: {exc}") from exc
        return [JobRow(*r) for r in rows]

    _COLUMNS = (
        "id, seq, state, created_at, started_at, finished_at, attempts, crashes, request, "
        "time_limit_s, result, error, instance_name, family"
    )

    def add(self, request: bytes, time_limit_s: float, instance_name: str, family: str) -> str:
        """Store a new queued job; returns its id. Durable once this returns."""
        job_id = uuid.uuid4().hex
        with self._lock:
            self._seq += 1
            seq = self._seq
        self._write(
            "INSERT INTO jobs (id, seq, state, created_at, request, time_limit_s, instance_name,"
            " family) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (job_id, seq, QUEUED, time.time(), request, time_limit_s, instance_name, family),
        )
        return job_id

    def get(self, job_id: str) -> JobRow | None:
        rows = self._rows(f"SELECT {self._COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return rows[0] if rows else None

    def count(self, states: tuple[int, ...]) -> int:
        marks = ",".join("?" * len(states))
        with self._lock:
            return int(
                self._db.execute(
                    f"SELECT count(*) FROM jobs WHERE state IN ({marks})", states
                ).fetchone()[0]
            )

    def next_queued(self) -> JobRow | None:
        rows = self._rows(
            f"SELECT {self._COLUMNS} FROM jobs WHERE state = ? ORDER BY seq LIMIT 1", (QUEUED,)
        )
        return rows[0] if rows else None

    def mark_running(self, job_id: str) -> bool:
        """QUEUED -> RUNNING; False if the job is no longer queued (e.g. cancelled)."""
        return (
            self._write(
                "UPDATE jobs SET state = ?, started_at = ?, attempts = attempts + 1 "
                "WHERE id = ? AND state = ?",
                (RUNNING, time.time(), job_id, QUEUED),
            )
            == 1
        )

    def finish(self, job_id: str, state: int, result: bytes | None, error: str = "") -> None:
        self._write(
            "UPDATE jobs SET state = ?, finished_at = ?, result = ?, error = ? WHERE id = ?",
            (state, time.time(), result, error, job_id),
        )

    def requeue_after_crash(self, job_id: str, error: str) -> bool:
        """Count a worker crash; queue the job again unless it has crashed too often."""
        self._write("UPDATE jobs SET crashes = crashes + 1 WHERE id = ?", (job_id,))
        row = self.get(job_id)
        if row is None:
            return False
        if row.crashes >= MAX_CRASHES:
            self.finish(job_id, FAILED, row.result, f"{error} ({row.crashes} times)")
            return False
        self._write(
            "UPDATE jobs SET state = ?, error = ? WHERE id = ?", (QUEUED, error, job_id)
        )
        return True

    def cancel_queued(self, job_id: str) -> bool:
        """QUEUED -> CANCELLED; False if it was not queued."""
        return (
            self._write(
                "UPDATE jobs SET state = ?, finished_at = ? WHERE id = ? AND state = ?",
                (CANCELLED, time.time(), job_id, QUEUED),
            )
            == 1
        )

    def recover(self) -> int:
        """Queue again the jobs a previous server left running; returns how many."""
        return self._write(
            "UPDATE jobs SET state = ?, error = 'interrupted by a server restart' "
            "WHERE state = ?",
            (QUEUED, RUNNING),
        )

    def purge(self, older_than_s: float) -> int:
        """Delete finished jobs that finished more than ``older_than_s`` seconds ago."""
        marks = ",".join("?" * len(FINISHED))
        return self._write(
            f"DELETE FROM jobs WHERE state IN ({marks}) AND finished_at < ?",
            (*FINISHED, time.time() - older_than_s),
        )

    def page(self, state: int, size: int, before_seq: int | None) -> list[JobRow]:
        """Jobs newest first, optionally in one state, with ``seq < before_seq``."""
        where, args = [], []
        if state:
            where.append("state = ?")
            args.append(state)
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return self._rows(
            f"SELECT {self._COLUMNS} FROM jobs {clause} ORDER BY seq DESC LIMIT ?",
            (*args, size),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()


JobListener = Callable[[str, Any], None]
"""Called with ``("job", JobRow)`` on every state change or ``("incumbent", bytes)``."""


class JobRunner:
    """Moves queued jobs into the pool, records their outcomes, and notifies watchers.

    ``run(row, on_event) -> Ticket | None`` starts a job's solve (None: no room now);
    ``conclude(row, outcome) -> (state, result_bytes, error)`` turns an outcome into what is
    stored. Jobs use at most ``max_running`` workers, so synchronous solves keep some.
    """

    def __init__(
        self,
        store: JobStore,
        run: Callable[[JobRow, Callable[[str, Any], None]], Any],
        conclude: Callable[[JobRow, Any], tuple[int, bytes | None, str]],
        max_running: int,
        retention_s: float,
    ):
        self.store = store
        self._run = run
        self._conclude = conclude
        self.max_running = max_running
        self.retention_s = retention_s
        self._lock = threading.Lock()
        self._tickets: dict[str, Any] = {}
        self._listeners: dict[str, list[JobListener]] = {}
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._unrecorded: dict[str, tuple[int, bytes | None, str]] = {}
        """Outcomes the store could not take (disk full, ...): written again every second."""
        self.recovered = store.recover()
        store.purge(retention_s)
        self._thread = threading.Thread(target=self._loop, name="job-runner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=5)

    def poke(self) -> None:
        """A job was queued or a worker may be free: look again now."""
        self._wake.set()

    # --- watchers -----------------------------------------------------------------------
    def listen(self, job_id: str, listener: JobListener) -> None:
        with self._lock:
            self._listeners.setdefault(job_id, []).append(listener)

    def unlisten(self, job_id: str, listener: JobListener) -> None:
        with self._lock:
            items = self._listeners.get(job_id, [])
            if listener in items:
                items.remove(listener)
            if not items:
                self._listeners.pop(job_id, None)

    def _notify(self, job_id: str, kind: str, payload: Any) -> None:
        with self._lock:
            listeners = list(self._listeners.get(job_id, []))
        for fn in listeners:
            try:
                fn(kind, payload)
            except Exception:  # noqa: BLE001
                log.exception("job listener failed")

    # --- cancellation -------------------------------------------------------------------
    def cancel(self, job_id: str) -> JobRow | None:
        """Cancel a queued or running job; returns its row afterwards (None if unknown)."""
        if self.store.cancel_queued(job_id):
            row = self.store.get(job_id)
            self._notify(job_id, "job", row)
            return row
        with self._lock:
            ticket = self._tickets.get(job_id)
        if ticket is not None:
            ticket.cancel("cancelled")
            ticket.wait(10)
            # The done callback records the outcome; give it a moment to land.
            for _ in range(100):
                row = self.store.get(job_id)
                if row is None or row.state in FINISHED:
                    return row
                time.sleep(0.01)
        return self.store.get(job_id)

    def unrecorded(self, job_id: str) -> tuple[int, bytes | None, str] | None:
        """The outcome of a finished job the store has not taken yet (None if none)."""
        with self._lock:
            return self._unrecorded.get(job_id)

    def _record_unrecorded(self) -> None:
        with self._lock:
            items = list(self._unrecorded.items())
        for job_id, (state, result, error) in items:
            self.store.finish(job_id, state, result, error)  # JobStoreError: next round
            with self._lock:
                self._unrecorded.pop(job_id, None)
            log.warning("job %s: outcome recorded after an earlier write failure", job_id)
            self._notify(job_id, "job", self.store.get(job_id))

    # --- the loop -----------------------------------------------------------------------
    def _loop(self) -> None:
        last_purge = time.monotonic()
        while not self._stop.is_set():
            self._wake.wait(0.5)
            self._wake.clear()
            try:
                self._record_unrecorded()
                while self._start_one():
                    pass
                if time.monotonic() - last_purge > 60:
                    self.store.purge(self.retention_s)
                    last_purge = time.monotonic()
            except JobStoreError as exc:
                log.error("job runner: %s", exc)
                self._stop.wait(1.0)

    def _start_one(self) -> bool:
        with self._lock:
            if len(self._tickets) >= self.max_running:
                return False
        row = self.store.next_queued()
        if row is None:
            return False

        def on_event(kind: str, payload: Any, job_id: str = row.id) -> None:
            if kind == "incumbent":
                self._notify(job_id, "incumbent", payload[0])

        ticket = self._run(row, on_event)
        if ticket is None:
            return False
        try:
            running = self.store.mark_running(row.id)
        except JobStoreError:
            ticket.cancel("cancelled", kill=True)  # not recorded as running: do not run it
            raise
        if not running:
            ticket.cancel("cancelled")
            return True
        with self._lock:
            self._tickets[row.id] = ticket
        self._notify(row.id, "job", self.store.get(row.id))
        threading.Thread(
            target=self._await, args=(row.id, ticket), name=f"job-{row.id[:8]}", daemon=True
        ).start()
        return True

    def _await(self, job_id: str, ticket: Any) -> None:
        outcome = ticket.wait()
        row = self.store.get(job_id)
        try:
            if row is not None and outcome is not None:
                if outcome.kind == "crashed" and not self._stop.is_set():
                    if self.store.requeue_after_crash(job_id, outcome.error):
                        log.warning("job %s: %s; queued again", job_id, outcome.error)
                    else:
                        log.error("job %s failed: %s", job_id, outcome.error)
                elif outcome.kind == "cancelled" and outcome.error == "shutdown":
                    pass  # left RUNNING: the next server queues it again
                else:
                    state, result, error = self._conclude(row, outcome)
                    try:
                        self.store.finish(job_id, state, result, error)
                    except JobStoreError:
                        with self._lock:
                            self._unrecorded[job_id] = (state, result, error)
                        raise
        except JobStoreError as exc:
            log.error("job %s: could not record the outcome (kept, retried): %s", job_id, exc)
        with self._lock:
            self._tickets.pop(job_id, None)
        self._notify(job_id, "job", self.store.get(job_id))
        self._wake.set()
