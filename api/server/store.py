"""The job store: the job states and row, one interface, two backends (SQLite in a file,
PostgreSQL on a server).

Every replica of ``placement serve`` that shares a store sees every job. A queued job is
*claimed* by exactly one replica under a *lease* (a deadline in the row, on the database's
clock) that the running replica renews every :data:`RENEW_EVERY_S`; a replica that stops
renewing (kill -9, lost machine) loses its jobs when the lease expires, and the next claim
by any replica takes them again (``attempts`` counts every claim; a job claimed more than
:data:`MAX_ATTEMPTS` times fails with the reason). A result is written only by the lease
owner while the job is running (a conditional update), so a job never ends twice.

The two backends share all SQL but three spellings (the placeholder, the database clock and
PostgreSQL's ``FOR UPDATE SKIP LOCKED``, which lets claims of several replicas pass each
other instead of queueing on one row lock). See docs/scale-out.md.
"""

from __future__ import annotations

import threading
import urllib.parse
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = 1, 2, 3, 4, 5
"""``placement.v1.JobState`` numbers."""
FINISHED = (SUCCEEDED, FAILED, CANCELLED)
MAX_CRASHES = 2
"""A job whose worker dies this many times fails (one retry)."""
MAX_ATTEMPTS = 5
"""A job runs at most this many times (claims); claimed once more without having finished
(its replica died each time), it fails with the reason."""
RENEW_EVERY_S = 0.25
"""How often a replica renews its leases and reads cancel requests (the cancel latency)."""
DEFAULT_LEASE_S = 10.0
"""Seconds a lease lasts without renewal: how long a dead replica's jobs wait."""
STATE_NAMES = {QUEUED: "queued", RUNNING: "running", SUCCEEDED: "succeeded", FAILED: "failed",
               CANCELLED: "cancelled"}  # fmt: skip


class JobStoreError(Exception):
    """The job database cannot be opened or written (corrupt file, disk full, server down)."""


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
    """Claims so far (a run interrupted by a crash or a dead replica counts)."""
    crashes: int
    request: bytes
    time_limit_s: float
    result: bytes | None
    error: str
    instance_name: str
    family: str
    owner: str = ""
    """The replica that holds (or last held) the job's lease."""
    lease_until: float = 0.0
    """Epoch seconds (database clock) the lease lasts without renewal."""
    cancel_requested: bool = False
    """A cancel came while the job was running: its replica stops it."""


COLUMNS = (
    "id, seq, state, created_at, started_at, finished_at, attempts, crashes, request, "
    "time_limit_s, result, error, instance_name, family, owner, lease_until, cancel_requested"
)
"""The columns of :class:`JobRow`, in its order."""


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by
    ``***``: what logs and error messages show."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable database URL>"
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = [(k, "***" if k.lower() == "password" else v) for k, v in query]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(query, safe="*"), "")
    )


def is_postgres_url(db: str) -> bool:
    """True when ``--db`` names a PostgreSQL server rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def new_replica_id(host: str, pid: int) -> str:
    """A name for one replica's leases, unique across restarts (host, pid, random)."""
    return f"{host}:{pid}:{uuid.uuid4().hex[:8]}"


class JobStore(ABC):
    """Jobs in a database: the operations replicas need, each one atomic.

    Subclasses give :meth:`_execute` (one statement, autocommit, returns the rowcount and the
    rows), the database clock :attr:`NOW` in SQL, and :attr:`LOCK_SUFFIX` for claims. Every
    database failure is raised as :class:`JobStoreError` with the password hidden.
    """

    NOW = ""
    """SQL: the database's clock, epoch seconds."""
    LOCK_SUFFIX = ""
    """SQL after the claim's row selection (PostgreSQL: FOR UPDATE SKIP LOCKED)."""
    recovers_on_start = False
    """True for a store one replica owns (SQLite): jobs left running are queued at start."""
    name = ""
    """How logs name the store (the path, or the URL without its password)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    # --- the backend --------------------------------------------------------------------
    @abstractmethod
    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        """Run one statement (``?`` placeholders, ``{now}`` for the clock); return the rowcount
        and the rows it returned. Raises JobStoreError."""

    @abstractmethod
    def _insert(self, args: tuple[Any, ...]) -> None:
        """Insert a job: ``(id, state, request, time_limit_s, instance_name, family)``; the
        store numbers it (``seq``, increasing) and stamps ``created_at``."""

    @abstractmethod
    def close(self) -> None:
        """Release the connection."""

    def _sql(self, sql: str) -> str:
        return sql.replace("{now}", self.NOW)

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[JobRow]:
        return [_row(r) for r in self._execute(sql, args)[1]]

    # --- jobs ---------------------------------------------------------------------------
    def ping(self) -> None:
        """Raise JobStoreError unless the database answers."""
        self._execute("SELECT 1")

    def add(self, request: bytes, time_limit_s: float, instance_name: str, family: str) -> str:
        """Store a new queued job; returns its id. Durable once this returns."""
        job_id = uuid.uuid4().hex
        self._insert((job_id, QUEUED, request, time_limit_s, instance_name, family))
        return job_id

    def get(self, job_id: str) -> JobRow | None:
        """The job ``job_id`` as stored (None if unknown): the read any replica answers with."""
        rows = self._rows(f"SELECT {COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        return rows[0] if rows else None

    def count(self, states: tuple[int, ...]) -> int:
        """How many jobs are in one of ``states``."""
        marks = ",".join("?" * len(states))
        rows = self._execute(f"SELECT count(*) FROM jobs WHERE state IN ({marks})", states)[1]
        return int(rows[0][0])

    def page(self, state: int, size: int, before_seq: int | None) -> list[JobRow]:
        """Jobs newest first, optionally in one state, with ``seq < before_seq``."""
        where: list[str] = []
        args: list[Any] = []
        if state:
            where.append("state = ?")
            args.append(state)
        if before_seq is not None:
            where.append("seq < ?")
            args.append(before_seq)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        return self._rows(
            f"SELECT {COLUMNS} FROM jobs {clause} ORDER BY seq DESC LIMIT ?", (*args, size)
        )

    def claim(self, owner: str, lease_s: float) -> JobRow | None:
        """Take the oldest job that is queued or whose lease has expired, for ``owner``, under
        a lease of ``lease_s`` seconds; None when there is none. ``attempts`` counts claims;
        the row says ``cancel_requested`` when a cancel came while nobody ran it."""
        rows = self._rows(
            self._sql(
                "UPDATE jobs SET state = ?, owner = ?, lease_until = {now} + ?, "
                "started_at = {now}, attempts = attempts + 1, "
                "error = CASE WHEN state = ? THEN 'its replica stopped renewing the lease "
                "(' || owner || ')' ELSE error END "
                "WHERE id = (SELECT id FROM jobs WHERE state = ? OR (state = ? AND "
                f"lease_until < {{now}}) ORDER BY seq LIMIT 1{self.LOCK_SUFFIX}) "
                f"RETURNING {COLUMNS}"
            ),
            (RUNNING, owner, lease_s, RUNNING, QUEUED, RUNNING),
        )
        return rows[0] if rows else None

    def renew(self, owner: str, lease_s: float) -> dict[str, bool]:
        """Extend every lease ``owner`` holds; returns ``{job id: cancel requested}`` for the
        jobs it still holds (a job missing from it was lost: the lease expired and another
        replica took it, or it ended)."""
        rows = self._execute(
            self._sql(
                "UPDATE jobs SET lease_until = {now} + ? WHERE owner = ? AND state = ? "
                "RETURNING id, cancel_requested"
            ),
            (lease_s, owner, RUNNING),
        )[1]
        return {r[0]: bool(r[1]) for r in rows}

    def finish(
        self, job_id: str, owner: str, state: int, result: bytes | None, error: str = ""
    ) -> bool:
        """Record how a running job ended, if ``owner`` still holds it; False (nothing
        written) otherwise. The one write of a result: a job never ends twice."""
        n, _ = self._execute(
            self._sql(
                "UPDATE jobs SET state = ?, finished_at = {now}, result = ?, error = ?, "
                "lease_until = 0 WHERE id = ? AND state = ? AND owner = ?"
            ),
            (state, result, error, job_id, RUNNING, owner),
        )
        return n == 1

    def release(self, job_id: str, owner: str, uncount: bool = False) -> bool:
        """Give a running job back to the queue (shutdown, or no worker free after all:
        ``uncount`` takes back the claim's attempt)."""
        n, _ = self._execute(
            "UPDATE jobs SET state = ?, owner = '', lease_until = 0, "
            "attempts = attempts - ? WHERE id = ? AND state = ? AND owner = ?",
            (QUEUED, 1 if uncount else 0, job_id, RUNNING, owner),
        )
        return n == 1

    def release_owner(self, owner: str) -> int:
        """Give every job ``owner`` runs back to the queue (a replica shutting down)."""
        n, _ = self._execute(
            "UPDATE jobs SET state = ?, owner = '', lease_until = 0, "
            "error = 'interrupted by a server shutdown' WHERE state = ? AND owner = ?",
            (QUEUED, RUNNING, owner),
        )
        return n

    def requeue_after_crash(self, job_id: str, owner: str, error: str) -> bool:
        """Count a worker crash: queue the job again, or fail it after :data:`MAX_CRASHES`
        crashes. True when it was queued again."""
        rows = self._execute(
            self._sql(
                "UPDATE jobs SET crashes = crashes + 1, owner = '', lease_until = 0, "
                "state = CASE WHEN crashes + 1 >= ? THEN ? ELSE ? END, "
                "finished_at = CASE WHEN crashes + 1 >= ? THEN {now} ELSE finished_at END, "
                "error = CASE WHEN crashes + 1 >= ? THEN ? || ' (' || "
                "CAST(crashes + 1 AS TEXT) || ' times)' ELSE ? END "
                "WHERE id = ? AND state = ? AND owner = ? RETURNING state"
            ),
            (MAX_CRASHES, FAILED, QUEUED, MAX_CRASHES, MAX_CRASHES, error, error, job_id,
             RUNNING, owner),
        )[1]  # fmt: skip
        return bool(rows) and rows[0][0] == QUEUED

    def cancel(self, job_id: str) -> bool:
        """Cancel a job: a queued one at once (True); a running one is flagged, and the
        replica running it stops it at its next lease renewal (False)."""
        n, _ = self._execute(
            self._sql(
                "UPDATE jobs SET state = ?, finished_at = {now}, error = 'cancelled' "
                "WHERE id = ? AND state = ?"
            ),
            (CANCELLED, job_id, QUEUED),
        )
        if n == 1:
            return True
        self._execute(
            "UPDATE jobs SET cancel_requested = 1 WHERE id = ? AND state = ?", (job_id, RUNNING)
        )
        return False

    def recover(self) -> int:
        """Queue again the jobs a previous server left running (only for a store one replica
        owns, see :attr:`recovers_on_start`); returns how many."""
        if not self.recovers_on_start:
            return 0
        n, _ = self._execute(
            "UPDATE jobs SET state = ?, owner = '', lease_until = 0, "
            "error = 'interrupted by a server restart' WHERE state = ?",
            (QUEUED, RUNNING),
        )
        return n

    def purge(self, older_than_s: float) -> int:
        """Delete finished jobs (and their incumbents) that finished more than
        ``older_than_s`` seconds ago."""
        marks = ",".join("?" * len(FINISHED))
        old = self._sql(f"state IN ({marks}) AND finished_at < {{now}} - ?")
        self._execute(
            f"DELETE FROM job_incumbents WHERE job_id IN (SELECT id FROM jobs WHERE {old})",
            (*FINISHED, older_than_s),
        )
        n, _ = self._execute(f"DELETE FROM jobs WHERE {old}", (*FINISHED, older_than_s))
        return n

    # --- incumbents (what WatchJob on any replica streams) -----------------------------
    def add_incumbent(self, job_id: str, incumbent: bytes) -> None:
        """Store a checked incumbent of a running job (``placement.v1.Incumbent`` bytes)."""
        self._execute(
            "INSERT INTO job_incumbents (job_id, data) VALUES (?, ?)", (job_id, incumbent)
        )

    def incumbents(self, job_id: str, after: int = 0) -> list[tuple[int, bytes]]:
        """The incumbents stored for ``job_id`` after number ``after``, oldest first, as
        ``(number, incumbent bytes)``."""
        rows = self._execute(
            "SELECT n, data FROM job_incumbents WHERE job_id = ? AND n > ? ORDER BY n",
            (job_id, after),
        )[1]
        return [(int(n), bytes(data)) for n, data in rows]


def _row(r: tuple[Any, ...]) -> JobRow:
    values = list(r)
    for i in (8, 10):  # request, result: PostgreSQL gives memoryview
        if values[i] is not None:
            values[i] = bytes(values[i])
    values[16] = bool(values[16])
    return JobRow(*values)
