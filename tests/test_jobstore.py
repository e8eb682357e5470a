"""The SQLite job store on its own: durability across reopen, recovery, retention, paging."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from placement.api.server import jobs
from placement.api.server.jobs import JobStore, JobStoreError


def test_jobs_survive_reopening_and_running_ones_are_queued_again(tmp_path: Path) -> None:
    db = tmp_path / "jobs.sqlite3"
    store = JobStore(db)
    a = store.add(b"request-a", 5.0, "a", "gpu")
    b = store.add(b"request-b", 5.0, "b", "gpu")
    assert store.mark_running(a)
    store.close()  # like a crash: nothing else is written

    again = JobStore(db)
    assert again.recover() == 1
    rows = {r.id: r for r in again.page(0, 10, None)}
    assert rows[a].state == jobs.QUEUED and rows[a].attempts == 1
    assert rows[a].error == "interrupted by a server restart"
    assert rows[b].state == jobs.QUEUED and rows[b].request == b"request-b"
    assert again.next_queued().id == a  # submission order


def test_a_second_crash_fails_the_job_with_the_reason(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    job = store.add(b"r", 5.0, "x", "gpu")
    store.mark_running(job)
    assert store.requeue_after_crash(job, "worker died (exit -9)")
    store.mark_running(job)
    assert not store.requeue_after_crash(job, "worker died (exit -9)")
    row = store.get(job)
    assert row.state == jobs.FAILED and "worker died" in row.error and row.attempts == 2


def test_retention_purges_only_old_finished_jobs(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    old, recent, queued = (store.add(b"r", 1.0, n, "gpu") for n in ("old", "recent", "queued"))
    store.finish(old, jobs.SUCCEEDED, b"result")
    store.finish(recent, jobs.SUCCEEDED, b"result")
    store._db.execute("UPDATE jobs SET finished_at = ? WHERE id = ?", (time.time() - 3600, old))
    assert store.purge(60) == 1
    assert store.get(old) is None
    assert store.get(recent) is not None and store.get(queued) is not None


def test_paging_is_newest_first_and_filters_by_state(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    ids = [store.add(b"r", 1.0, f"j{i}", "gpu") for i in range(5)]
    store.finish(ids[1], jobs.CANCELLED, None)
    first = store.page(0, 2, None)
    assert [r.id for r in first] == [ids[4], ids[3]]
    second = store.page(0, 2, first[-1].seq)
    assert [r.id for r in second] == [ids[2], ids[1]]
    assert [r.id for r in store.page(jobs.CANCELLED, 10, None)] == [ids[1]]


def test_a_corrupt_file_is_a_job_store_error(tmp_path: Path) -> None:
    db = tmp_path / "jobs.sqlite3"
    db.write_bytes(b"not a database" * 512)
    with pytest.raises(JobStoreError, match="jobs.sqlite3"):
        JobStore(db)


def test_write_failures_are_job_store_errors(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.sqlite3")
    store._db.execute("PRAGMA query_only = ON")  # every write now fails, like a full disk
    with pytest.raises(JobStoreError):
        store.add(b"r", 1.0, "x", "gpu")
