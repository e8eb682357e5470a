"""The job store on its own, one suite for both backends (SQLite file and PostgreSQL):
durability, claims under leases, conditional result writes, cancel requests, incumbents,
retention, paging, and errors that hide the password."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from placement.api.server import jobs
from placement.api.server.store import JobStore, JobStoreError, redact_url
from placement.api.server.store_sqlite import SqliteJobStore
from placement.api.server.stores import open_store
from tests.postgres_harness import fresh_database, needs_postgres


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=needs_postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store lives: an SQLite file or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "jobs.sqlite3")
    return fresh_database()


@pytest.fixture
def store(db: str) -> Iterator[JobStore]:
    s = open_store(db)
    yield s
    s.close()


def test_jobs_survive_reopening(db: str) -> None:
    first = open_store(db)
    a = first.add(b"request-a", 5.0, "a", "gpu")
    b = first.add(b"request-b", 5.0, "b", "gpu")
    first.close()  # like a crash: nothing else is written
    again = open_store(db)
    rows = {r.id: r for r in again.page(0, 10, None)}
    assert rows[a].state == jobs.QUEUED and rows[a].request == b"request-a"
    assert rows[b].request == b"request-b" and rows[b].seq > rows[a].seq
    assert again.claim("r1", 10).id == a  # submission order
    again.close()


def test_sqlite_queues_running_jobs_again_on_start(tmp_path: Path) -> None:
    """SQLite belongs to one replica: what it left running is queued when it starts."""
    db = tmp_path / "jobs.sqlite3"
    store = SqliteJobStore(db)
    a = store.add(b"r", 5.0, "a", "gpu")
    assert store.claim("dead", 60).id == a
    store.close()
    again = SqliteJobStore(db)
    assert again.recover() == 1
    row = again.get(a)
    assert row.state == jobs.QUEUED and row.attempts == 1
    assert row.error == "interrupted by a server restart"
    assert again.claim("next", 60).attempts == 2


def test_a_job_is_claimed_by_exactly_one_replica(store: JobStore, db: str) -> None:
    ids = {store.add(b"r", 1.0, f"j{i}", "gpu") for i in range(40)}
    claimed: dict[str, list[str]] = {}
    lock = threading.Lock()

    def replica(name: str) -> None:
        own = open_store(db)  # its own connection, like another process
        try:
            while (row := own.claim(name, 30)) is not None:
                with lock:
                    claimed.setdefault(row.id, []).append(name)
        finally:
            own.close()

    threads = [threading.Thread(target=replica, args=(f"r{i}",)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert set(claimed) == ids
    assert all(len(owners) == 1 for owners in claimed.values())


def test_an_expired_lease_is_claimed_again_and_counted(store: JobStore) -> None:
    job = store.add(b"r", 1.0, "x", "gpu")
    assert store.claim("a", 1.0).owner == "a"
    assert store.claim("b", 1.0) is None  # a's lease holds
    assert store.renew("a", 1.0) == {job: False}
    time.sleep(1.2)  # a stopped renewing (it died)
    row = store.claim("b", 30)
    assert row.id == job and row.owner == "b" and row.attempts == 2
    assert "stopped renewing" in row.error and "(a)" in row.error
    assert store.renew("a", 1.0) == {}  # a has lost it
    assert not store.finish(job, "a", jobs.SUCCEEDED, b"a's answer")  # written once only
    assert store.finish(job, "b", jobs.SUCCEEDED, b"b's answer")
    assert not store.finish(job, "b", jobs.FAILED, None, "again")
    row = store.get(job)
    assert row.state == jobs.SUCCEEDED and row.result == b"b's answer" and row.error == ""


def test_cancel_queued_at_once_running_by_flag(store: JobStore) -> None:
    queued, running = store.add(b"q", 1.0, "q", "gpu"), store.add(b"r", 1.0, "r", "gpu")
    assert store.claim("a", 30).id == queued
    # queued is now running; the other one waits
    assert store.cancel(running)
    assert store.get(running).state == jobs.CANCELLED
    assert not store.cancel(queued)
    assert store.get(queued).state == jobs.RUNNING
    assert store.renew("a", 30) == {queued: True}  # a reads the request and stops it
    assert store.finish(queued, "a", jobs.CANCELLED, None, "cancelled")
    assert store.get(queued).state == jobs.CANCELLED


def test_worker_crashes_queue_again_then_fail(store: JobStore) -> None:
    job = store.add(b"r", 5.0, "x", "gpu")
    store.claim("a", 30)
    assert not store.requeue_after_crash(job, "b", "worker died")  # not b's job
    assert store.requeue_after_crash(job, "a", "worker died (exit -9)")
    assert store.get(job).state == jobs.QUEUED
    store.claim("a", 30)
    assert not store.requeue_after_crash(job, "a", "worker died (exit -9)")
    row = store.get(job)
    assert row.state == jobs.FAILED and row.attempts == 2
    assert row.error == "worker died (exit -9) (2 times)"


def test_release_gives_jobs_back(store: JobStore) -> None:
    a, b = store.add(b"a", 1.0, "a", "gpu"), store.add(b"b", 1.0, "b", "gpu")
    store.claim("r", 30)
    assert store.release(a, "r", uncount=True)
    assert store.get(a).attempts == 0 and store.get(a).state == jobs.QUEUED
    store.claim("r", 30)
    store.claim("r", 30)
    assert store.release_owner("r") == 2
    assert {store.get(a).state, store.get(b).state} == {jobs.QUEUED}


def test_incumbents_are_kept_in_order_per_job(store: JobStore) -> None:
    a, b = store.add(b"a", 1.0, "a", "gpu"), store.add(b"b", 1.0, "b", "gpu")
    store.add_incumbent(a, b"a1")
    store.add_incumbent(b, b"b1")
    store.add_incumbent(a, b"a2")
    seen = store.incumbents(a)
    assert [d for _, d in seen] == [b"a1", b"a2"]
    assert [d for _, d in store.incumbents(a, seen[0][0])] == [b"a2"]


def test_retention_purges_only_old_finished_jobs(store: JobStore) -> None:
    old, recent, queued = (store.add(b"r", 1.0, n, "gpu") for n in ("old", "recent", "queued"))
    for job in (old, recent):
        store.claim("r", 30)
        store.finish(job, "r", jobs.SUCCEEDED, b"result")
    store.add_incumbent(old, b"inc")
    time.sleep(1.1)
    store.finish(recent, "r", jobs.SUCCEEDED, b"x")  # no-op: already finished
    store._execute("UPDATE jobs SET finished_at = finished_at + 100 WHERE id = ?", (recent,))
    assert store.purge(1.0) == 1
    assert store.get(old) is None and store.incumbents(old) == []
    assert store.get(recent) is not None and store.get(queued) is not None


def test_paging_is_newest_first_and_filters_by_state(store: JobStore) -> None:
    ids = [store.add(b"r", 1.0, f"j{i}", "gpu") for i in range(5)]
    store.cancel(ids[1])
    first = store.page(0, 2, None)
    assert [r.id for r in first] == [ids[4], ids[3]]
    second = store.page(0, 2, first[-1].seq)
    assert [r.id for r in second] == [ids[2], ids[1]]
    assert [r.id for r in store.page(jobs.CANCELLED, 10, None)] == [ids[1]]
    assert store.count((jobs.QUEUED,)) == 4


def test_a_corrupt_file_is_a_job_store_error(tmp_path: Path) -> None:
    db = tmp_path / "jobs.sqlite3"
    db.write_bytes(b"not a database" * 512)
    with pytest.raises(JobStoreError, match="jobs.sqlite3"):
        open_store(str(db))


def test_write_failures_are_job_store_errors(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.sqlite3")
    store._db.execute("PRAGMA query_only = ON")  # every write now fails, like a full disk
    with pytest.raises(JobStoreError):
        store.add(b"r", 1.0, "x", "gpu")


def test_an_unreachable_server_is_an_error_without_the_password() -> None:
    from placement.api.server.store_throwaway import free_port

    url = f"postgresql://alice:Sup3rSecret@127.0.0.1:{free_port()}/jobs"
    with pytest.raises(JobStoreError) as info:
        open_store(url)
    text = str(info.value)
    assert "Sup3rSecret" not in text
    assert "postgresql://alice:***@127.0.0.1" in text


def test_redact_url_hides_every_password_spelling() -> None:
    assert redact_url("postgresql://u:pw@h:5/db") == "postgresql://u:***@h:5/db"
    assert "pw" not in redact_url("postgresql://u@h/db?password=pw&sslmode=require")
    assert redact_url("postgresql://u@h:5/db") == "postgresql://u@h:5/db"
