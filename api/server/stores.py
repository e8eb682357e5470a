"""Opening the job store that ``--db`` names: the factory above the store interface
(:mod:`placement.api.server.store`) and its two backends, so the interface imports neither."""

from __future__ import annotations

from placement.api.server.store import JobStore, is_postgres_url
from placement.api.server.store_sqlite import SqliteJobStore


def open_store(db: str) -> JobStore:
    """The store ``--db`` names: ``postgresql://USER[:PASSWORD]@HOST:PORT/DB`` or an SQLite
    path (``:memory:`` keeps nothing). Raises :class:`JobStoreError` (with the URL's password
    hidden) when it cannot be opened."""
    if is_postgres_url(db):
        # psycopg only where PostgreSQL is used (start-up time of SQLite replicas).
        from placement.api.server.store_postgres import PostgresJobStore

        return PostgresJobStore(db)
    return SqliteJobStore(db)
