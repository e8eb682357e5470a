"""Several ``placement serve`` replicas on one PostgreSQL job store, as real processes on
loopback: any replica answers for any job, cancel and watch across replicas, kill -9 of the
replica running a job, the database stopped and started under load, a database unreachable
at start. Leases are short here (--lease-seconds 1 or 2) so a dead replica's jobs move fast."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest

from placement.api.client import Client
from placement.api.server.store_throwaway import ThrowawayPostgres, find_binaries, free_port
from placement.solver.schema.v1 import service_pb2
from tests.postgres_harness import SKIP_REASON, fresh_database, needs_postgres
from tests.service_harness import INSTANCES, Server, start_server, wait_until

pytestmark = needs_postgres

TINY = json.loads((INSTANCES / "tiny.json").read_text())
MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
SUCCEEDED = service_pb2.JOB_STATE_SUCCEEDED


def replicas(tmp_path: Path, url: str, n: int, lease_s: float = 2.0) -> list[Server]:
    """``n`` replicas of one worker each on the job store ``url`` (started together)."""

    def one(i: int) -> Server:
        folder = tmp_path / f"replica{i}"
        folder.mkdir(parents=True, exist_ok=True)
        return start_server(folder, "--lease-seconds", str(lease_s), db=url, workers=1)

    with ThreadPoolExecutor(n) as ex:
        return list(ex.map(one, range(n)))


@dataclass
class Trio:
    """Three replicas on one database, shared by the tests of this module (the kill test
    comes last: it kills one)."""

    url: str
    servers: list[Server]


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trio]:
    url = fresh_database()
    servers = replicas(tmp_path_factory.mktemp("trio"), url, 3)
    yield Trio(url, servers)
    for s in servers:
        s.kill()


@pytest.fixture
def cleanup() -> Iterator[list[Server]]:
    servers: list[Server] = []
    yield servers
    for s in servers:
        s.kill()


def job_events(servers: list[Server]) -> list[dict[str, Any]]:
    """The job lines (started, ended) of every replica's log."""
    events = []
    for s in servers:
        for line in s.lines:
            if line.startswith("{") and '"event":"job"' in line:
                events.append(json.loads(line))
    return events


def runner_of(servers: list[Server], job_id: str) -> Server | None:
    """The replica that last started ``job_id`` (the claim with the most attempts)."""
    best: tuple[int, Server] | None = None
    for s in servers:
        for line in s.lines:
            if job_id in line and '"state":"running"' in line:
                attempts = json.loads(line)["attempts"]
                if best is None or attempts > best[0]:
                    best = (attempts, s)
    return None if best is None else best[1]


def ended_once(servers: list[Server], ids: list[str]) -> None:
    """Every job of ``ids`` has exactly one outcome line over all replicas' logs."""

    def ends() -> Counter[str]:
        return Counter(
            e["job_id"]
            for e in job_events(servers)
            if e["state"] in ("succeeded", "failed", "cancelled")
        )

    # The line follows the write that a client may already have read: let it arrive.
    wait_until(lambda: all(ends()[i] for i in ids), 10)
    counts = ends()
    assert {i: counts[i] for i in ids} == {i: 1 for i in ids}


def test_submit_on_one_replica_read_and_watch_on_another(trio: Trio) -> None:
    servers = trio.servers
    a, b = servers[0], servers[1]
    with Client(a.target) as ca, Client(b.target) as cb:
        ids = [ca.submit_job(MEDIUM, time_limit_s=3).job_id for _ in range(3)]
        streams = {i: cb.watch_job(i, timeout=120) for i in ids}  # both watched from b
        seen: dict[str, list[Any]] = {i: [] for i in ids}
        readers = [threading.Thread(target=lambda i=i: seen[i].extend(streams[i])) for i in ids]
        for t in readers:
            t.start()
        for t in readers:
            t.join()
        # One job per replica (one worker each): b watched jobs that other replicas ran.
        assert {runner_of(servers, i).port for i in ids} - {b.port}
        for job_id in ids:
            events = seen[job_id]
            incumbents = [e for e in events if e.HasField("incumbent")]
            final = events[-1].job
            assert incumbents, f"no incumbent streamed for {job_id}"
            assert final.state == SUCCEEDED and final.result.HasField("solution")
            assert cb.get_job(job_id).result == ca.get_job(job_id).result
        listed = {j.job_id for j in cb.list_jobs().jobs}
        assert set(ids) <= listed
    ended_once(servers, ids)


def test_cancel_on_one_replica_stops_the_job_running_on_another(trio: Trio) -> None:
    servers = trio.servers
    with Client(servers[0].target) as c:
        ids = [c.submit_job(MEDIUM, time_limit_s=120).job_id for _ in range(2)]
    assert wait_until(lambda: all(runner_of(servers, i) for i in ids), 60)
    for job_id in ids:
        runner = runner_of(servers, job_id)
        other = next(s for s in servers if s is not runner)
        with Client(other.target) as c:
            job = c.cancel_job(job_id)  # answers once the job has ended (at most 5 s)
            assert job.state == service_pb2.JOB_STATE_CANCELLED
    ended_once(servers, ids)


def test_a_job_whose_replicas_keep_dying_fails_after_the_retry_limit(trio: Trio) -> None:
    """Five replicas claimed the job and died, the last one ``dead-4`` (its lease long
    expired); the next claim fails it with the reason instead of running it a sixth time."""
    from placement.api.client import instance_message
    from placement.api.server.store import MAX_ATTEMPTS
    from placement.api.server.stores import open_store

    store = open_store(trio.url)
    request = service_pb2.SolveRequest(instance=instance_message(TINY))
    job_id = "j" + "0" * 31
    # One statement, so that none of the live replicas claims it halfway.
    store._execute(
        "INSERT INTO jobs (id, state, created_at, request, time_limit_s, instance_name, family,"
        " owner, attempts, lease_until) VALUES (?, ?, 0, ?, 1.0, 'tiny', 'gpu', 'dead-4', ?, 0)",
        (job_id, service_pb2.JOB_STATE_RUNNING, request.SerializeToString(), MAX_ATTEMPTS),
    )
    store.close()
    with Client(trio.servers[2].target) as c:
        job = c.wait_job(job_id, timeout=120)
    assert job.state == service_pb2.JOB_STATE_FAILED
    assert job.attempts == MAX_ATTEMPTS + 1
    assert "stopped renewing the lease (dead-4)" in job.error
    assert f"claimed {MAX_ATTEMPTS + 1} times without finishing" in job.error


def test_kill_9_of_the_running_replica_another_finishes_its_jobs_once(trio: Trio) -> None:
    """Last of the trio's tests: one of them dies here."""
    cleanup = trio.servers
    with Client(cleanup[0].target) as c:
        ids = [c.submit_job(MEDIUM, time_limit_s=2).job_id for _ in range(4)]
    assert wait_until(lambda: runner_of(cleanup, ids[0]) is not None, 60)
    victim = runner_of(cleanup, ids[0])
    victim.kill()  # kill -9 of the replica and its workers
    survivor = next(s for s in cleanup if s is not victim)
    with Client(survivor.target) as c:
        done = [c.wait_job(i, timeout=180) for i in ids]
    assert [j.state for j in done] == [SUCCEEDED] * len(ids)
    assert done[0].attempts == 2  # claimed by the victim, then by a survivor
    assert runner_of(cleanup, ids[0]) is not victim
    ended_once(cleanup, ids)


@pytest.mark.skipif(find_binaries() is None, reason=SKIP_REASON)
def test_database_stopped_and_started_under_load(tmp_path: Path, cleanup: list[Server]) -> None:
    """The database goes away while replicas run jobs: new jobs get UNAVAILABLE, health
    turns NOT_SERVING, the solves go on; once it is back every accepted job ends, once. The
    password of the URL appears in no log line."""
    cluster = ThrowawayPostgres()
    try:
        cluster.start()
        url = cluster.new_database().replace("placement@", "placement:N0t-In-Logs@")
        cleanup[:] = replicas(tmp_path, url, 2, lease_s=10)
        with Client(cleanup[0].target) as c:
            ids = [c.submit_job(MEDIUM, time_limit_s=3).job_id for _ in range(3)]
        assert wait_until(lambda: all(runner_of(cleanup, i) for i in ids[:2]), 60)
        cluster.stop()
        with Client(cleanup[1].target) as c:
            assert wait_until(lambda: c.health() == "NOT_SERVING", 30)
            with pytest.raises(grpc.RpcError) as info:
                c.submit_job(TINY, time_limit_s=1)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "N0t-In-Logs" not in (info.value.details() or "")
        cluster.start()
        with Client(cleanup[1].target) as c:
            assert wait_until(lambda: c.health() == "SERVING", 30)
            done = [c.wait_job(i, timeout=180) for i in ids]
        assert [j.state for j in done] == [SUCCEEDED] * len(ids)
        ended_once(cleanup, ids)
        lines = [line for s in cleanup for line in s.lines]
        assert any("unreachable" in line for line in lines)  # it was noticed and logged
        assert not [line for line in lines if "N0t-In-Logs" in line]
    finally:
        for s in cleanup:
            s.stop()
        cleanup.clear()
        cluster.remove()


def test_an_unreachable_database_at_start_is_one_line_without_the_password(
    tmp_path: Path,
) -> None:
    url = f"postgresql://alice:Sup3r-Secret@127.0.0.1:{free_port()}/jobs"
    proc = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "serve", "--port", "0", "--workers", "1",
         "--db", url],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "--db" in lines[0] and "postgresql://alice:***@127.0.0.1" in lines[0]
    assert "Sup3r-Secret" not in proc.stderr + proc.stdout
