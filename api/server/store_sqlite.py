"""The job store in an SQLite file: the default, for one replica (or several processes of one
machine sharing the file; jobs left running are queued again when a replica starts, so
replicas on other machines need PostgreSQL, see :mod:`placement.api.server.store_postgres`).

WAL journal and ``synchronous=FULL``: a job is on disk before ``SubmitJob`` answers.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from placement.api.server.store import JobStore, JobStoreError

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS job_incumbents (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL,
    data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS job_incumbents_job ON job_incumbents (job_id, n);
"""

LEASE_COLUMNS = (
    ("owner", "TEXT NOT NULL DEFAULT ''"),
    ("lease_until", "REAL NOT NULL DEFAULT 0"),
    ("cancel_requested", "INTEGER NOT NULL DEFAULT 0"),
)
"""Added to the files of servers before leases (ALTER TABLE: old job files stay usable)."""


class SqliteJobStore(JobStore):
    """Jobs in an SQLite file (``:memory:`` for a throwaway store)."""

    NOW = "((julianday('now') - 2440587.5) * 86400.0)"
    recovers_on_start = True

    def __init__(self, path: str | Path):
        super().__init__()
        self.path = self.name = str(path)
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=30
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(SCHEMA)
            have = {r[1] for r in self._db.execute("PRAGMA table_info(jobs)")}
            for name, kind in LEASE_COLUMNS:
                if name not in have:
                    self._db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")
            self._db.execute("SELECT count(*) FROM jobs").fetchone()
        except (sqlite3.Error, OSError) as exc:
            raise JobStoreError(f"job database {self.path}: {exc}") from exc

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        with self._lock:
            try:
                cur = self._db.execute(sql, args)
                rows = cur.fetchall()
                return cur.rowcount, rows
            except sqlite3.Error as exc:
                raise JobStoreError(f"job database {self.path}: {exc}") from exc

    def _insert(self, args: tuple[Any, ...]) -> None:
        job_id, state, request, limit, name, family = args
        # The number is taken inside the insert: atomic under SQLite's write lock.
        self._execute(
            self._sql(
                "INSERT INTO jobs (id, seq, state, created_at, request, time_limit_s, "
                "instance_name, family) VALUES (?, (SELECT coalesce(max(seq), 0) + 1 FROM jobs),"
                " ?, {now}, ?, ?, ?, ?)"
            ),
            (job_id, state, request, limit, name, family),
        )

    def close(self) -> None:
        with self._lock:
            self._db.close()
