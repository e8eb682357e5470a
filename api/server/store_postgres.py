"""The job store on a PostgreSQL server: the queue several replicas share.

Driver: psycopg 3 (``psycopg[binary]``), the maintained successor of psycopg2 by the same
authors: native ``RETURNING`` rows, bytes for ``bytea``, and libpq's own URL parsing, so
``--db`` takes any ``postgresql://`` URL libpq accepts.

Claims use ``FOR UPDATE SKIP LOCKED``: replicas claiming at the same moment take different
rows instead of waiting on one lock. Times (``created_at``, leases) come from the server's
clock, so replicas' clocks need not agree. One connection per replica (autocommit, each
operation one statement), opened again after the server went away; every failure is a
:class:`~placement.api.server.jobs.JobStoreError` whose message shows the URL without its
password.
"""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg
import psycopg.conninfo

from placement.api.server.store import JobStore, JobStoreError, redact_url

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    seq BIGSERIAL NOT NULL,
    state INTEGER NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    started_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    finished_at DOUBLE PRECISION NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0,
    crashes INTEGER NOT NULL DEFAULT 0,
    request BYTEA NOT NULL,
    time_limit_s DOUBLE PRECISION NOT NULL,
    result BYTEA,
    error TEXT NOT NULL DEFAULT '',
    instance_name TEXT NOT NULL DEFAULT '',
    family TEXT NOT NULL DEFAULT '',
    owner TEXT NOT NULL DEFAULT '',
    lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state, seq);
CREATE INDEX IF NOT EXISTS jobs_owner ON jobs (owner) WHERE state = 2;
CREATE TABLE IF NOT EXISTS job_incumbents (
    n BIGSERIAL PRIMARY KEY,
    job_id TEXT NOT NULL,
    data BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS job_incumbents_job ON job_incumbents (job_id, n);
"""

SCHEMA_LOCK = 0x706C6163
"""Advisory lock key held while creating the tables (replicas starting together)."""
CONNECT_TIMEOUT_S = 3
STATEMENT_TIMEOUT_MS = 10_000
"""A statement the server has not answered by then fails (a hung network is an outage)."""


class PostgresJobStore(JobStore):
    """Jobs in a PostgreSQL database (``postgresql://USER[:PASSWORD]@HOST:PORT/DB``)."""

    NOW = "extract(epoch from clock_timestamp())::double precision"
    LOCK_SUFFIX = " FOR UPDATE SKIP LOCKED"

    def __init__(self, url: str):
        super().__init__()
        self._url = url
        self.name = redact_url(url)
        self._password = psycopg.conninfo.conninfo_to_dict(url).get("password") or None
        self._conn: psycopg.Connection[Any] | None = None
        with self._lock:
            conn = self._connection()
            try:
                with conn.transaction():
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    conn.execute(SCHEMA)
            except psycopg.Error as exc:
                self._drop()
                raise self._error(exc) from exc

    def _error(self, exc: Exception) -> JobStoreError:
        text = " ".join(str(exc).split())
        if self._password:
            text = text.replace(self._password, "***")
        return JobStoreError(f"job database {self.name}: {text}")

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(
                    self._url,
                    autocommit=True,
                    connect_timeout=CONNECT_TIMEOUT_S,
                    options=f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
                    application_name="placement serve",
                )
            except psycopg.Error as exc:
                raise self._error(exc) from exc
        return self._conn

    def _drop(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def _execute(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        query = sql.replace("?", "%s")
        with self._lock:
            conn = self._connection()
            try:
                cur = conn.execute(query, args)
                rows = cur.fetchall() if cur.description is not None else []
                return cur.rowcount, rows
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
                    self._drop()  # the server went away: connect again next time
                raise self._error(exc) from exc

    def _insert(self, args: tuple[Any, ...]) -> None:
        self._execute(
            self._sql(
                "INSERT INTO jobs (id, state, created_at, request, time_limit_s, instance_name,"
                " family) VALUES (?, ?, {now}, ?, ?, ?, ?)"
            ),
            args,
        )

    def close(self) -> None:
        with self._lock:
            self._drop()
