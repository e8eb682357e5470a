"""PostgreSQL for the tests: the server ``PLACEMENT_TEST_PG_URL`` names (CI starts one, see
.ci/run), else one throw-away cluster per test session when the distribution's binaries are
installed (so a plain ``pytest`` works wherever PostgreSQL is), else a skip that says so.
Every test gets a fresh database."""

from __future__ import annotations

import atexit
import os

import pytest

from placement.api.server.store_throwaway import ThrowawayPostgres, find_binaries, new_database

ENV = "PLACEMENT_TEST_PG_URL"
SKIP_REASON = (
    f"needs PostgreSQL: set {ENV}=postgresql://USER@HOST:PORT/DB (a superuser) or install the "
    "postgresql package (initdb and pg_ctl under /usr/lib/postgresql/*/bin)"
)
_cluster: list[ThrowawayPostgres] = []


def have_postgres() -> bool:
    """True when a test can get a PostgreSQL database."""
    return bool(os.environ.get(ENV)) or find_binaries() is not None


def server_url() -> str:
    """The URL of a PostgreSQL server the tests may create databases on (skips if none)."""
    if os.environ.get(ENV):
        return os.environ[ENV]
    if find_binaries() is None:
        pytest.skip(SKIP_REASON)
    if not _cluster:
        cluster = ThrowawayPostgres()
        cluster.start()
        atexit.register(cluster.remove)
        _cluster.append(cluster)
    return _cluster[0].url


def fresh_database() -> str:
    """The URL of a fresh, empty PostgreSQL database (skips when there is no PostgreSQL)."""
    return new_database(server_url())


needs_postgres = pytest.mark.skipif(not have_postgres(), reason=SKIP_REASON)
