"""The gRPC service against a real `placement serve` process on loopback.

Every RPC; deadlines shorter than the solve; a hung worker; cancellation; kill -9 of a
worker mid-solve; a server crash and restart with queued and running jobs; malformed and
oversized requests; admission control; health, reflection and metrics.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc
import pytest

from placement.api.client import Client, bad_fields, to_result
from placement.solver import SolutionStatus, SolveOptions, StopReason
from placement.solver.family import get_family
from placement.solver.schema.v1 import service_pb2
from tests.service_harness import (
    INSTANCES,
    Server,
    alive,
    busy_worker,
    settle,
    start_server,
    stops_computing,
    wait_until,
)

TINY = json.loads((INSTANCES / "tiny.json").read_text())
MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
LARGE = json.loads((INSTANCES / "large.json").read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("server")
    srv = start_server(
        tmp,
        "--queue",
        "4",
        "--grace",
        "0.5",
        "--limit",
        "nodes=200",
        "--max-message-mib",
        "4",
        "--metrics-port",
        str(_free_port()),
    )
    yield srv
    srv.stop()


@pytest.fixture
def client(server: Server) -> Any:
    with Client(server.target) as c:
        yield c


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _typed(doc: dict[str, Any]) -> Any:
    from placement.api.client import instance_message
    from placement.api.server.messages import parse_instance

    return parse_instance(instance_message(doc))


# --- health, reflection ------------------------------------------------------------------


def test_health_and_reflection_answer(client: Client) -> None:
    assert client.health() == "SERVING"
    assert client.health("placement.v1.PlacementSolver") == "SERVING"

    from google.protobuf.descriptor_pool import DescriptorPool
    from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
        ProtoReflectionDescriptorDatabase,
    )

    db = ProtoReflectionDescriptorDatabase(client.channel)
    assert "placement.v1.PlacementSolver" in db.get_services()
    pool = DescriptorPool(db)
    service = pool.FindServiceByName("placement.v1.PlacementSolver")
    assert {m.name for m in service.methods} == {
        "Solve",
        "SolveStream",
        "Check",
        "SubmitJob",
        "GetJob",
        "WatchJob",
        "CancelJob",
        "ListJobs",
    }
    # The family messages are reachable through reflection too (grpcurl can build requests).
    assert pool.FindMessageTypeByName("placement.v1.GpuInstance").fields_by_name["jobs"]


# --- Solve, SolveStream, Check -----------------------------------------------------------


def test_solve_returns_the_checked_optimum(client: Client) -> None:
    resp = client.solve_response(TINY, time_limit_s=10, request_id="tiny-1")
    assert resp.request_id == "tiny-1"
    assert resp.status == service_pb2.SOLUTION_STATUS_OPTIMAL
    assert resp.stop_reason == service_pb2.STOP_REASON_PROVEN
    assert [(t.name, round(t.value, 6), t.sense) for t in resp.objective_terms] == [
        ("placed_gpu_weighted", 10.3, "max"),
        ("comm_cost", 0.16625, "min"),
        ("fragmentation", 0.96, "min"),
    ]
    assert resp.gap == 0 and resp.bound == pytest.approx(10.3)
    assert {"greedy", "total", "queue", "service"} <= set(resp.phase_times_s)
    # The solution carries the reason for the unplaced job; it re-checks here, independently.
    family, instance = _typed(TINY)
    result = to_result(resp, family, instance)
    assert family.check(instance, result.solution).feasible
    assert [u["name"] for u in result.unplaced] == ["big"]
    check = client.check(TINY, resp.solution)
    assert check.feasible and not check.violations
    assert check.objective == pytest.approx(10.3)


def test_check_lists_violations_of_a_broken_solution(client: Client) -> None:
    resp = client.solve_response(TINY, time_limit_s=5)
    broken = service_pb2.SolveResponse()
    broken.CopyFrom(resp)
    placement = broken.solution.gpu.placements[0]
    # Every worker of the first job onto the same GPU as the second job's first worker.
    other = broken.solution.gpu.placements[1].workers[0]
    for w in placement.workers:
        w.node = other.node
        del w.gpus[:]
        w.gpus.extend(other.gpus)
    check = client.check(TINY, broken.solution)
    assert not check.feasible and check.violations


def test_solve_stream_sends_incumbents_then_the_result(client: Client) -> None:
    events = list(client.solve_stream(MEDIUM, time_limit_s=2))
    assert events[-1].HasField("result") and all(e.HasField("incumbent") for e in events[:-1])
    incumbents = [e.incumbent for e in events[:-1]]
    assert incumbents, "at least the greedy incumbent is streamed"
    objectives = [i.objective for i in incumbents]
    assert objectives == sorted(objectives)  # improving (the primary objective is max)
    result = events[-1].result
    assert result.status == service_pb2.SOLUTION_STATUS_FEASIBLE
    assert result.objective == pytest.approx(objectives[-1])
    assert [h.objective for h in result.history] == pytest.approx(objectives)


def test_solve_iter_yields_the_library_incumbents_then_the_result(client: Client) -> None:
    from placement.solver import Result
    from placement.solver.result import Incumbent

    family, instance = _typed(MEDIUM)
    events = list(client.solve_iter(MEDIUM, time_limit_s=1))
    assert isinstance(events[-1], Result) and events[-1].status is SolutionStatus.FEASIBLE
    incumbents = events[:-1]
    assert incumbents and all(isinstance(i, Incumbent) for i in incumbents)
    # Each streamed incumbent carries its typed solution, which the checker accepts.
    last = incumbents[-1]
    report = family.check(instance, last.solution)
    assert report.feasible and report.objective == pytest.approx(last.objective)


def test_deadline_shorter_than_the_solve_gets_the_best_incumbent_in_time(client: Client) -> None:
    t0 = time.monotonic()
    resp = client.solve_response(MEDIUM, time_limit_s=60, timeout=2.0)
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0  # the call did not fail with DEADLINE_EXCEEDED: it was answered
    assert resp.status == service_pb2.SOLUTION_STATUS_FEASIBLE
    assert resp.stop_reason == service_pb2.STOP_REASON_TIME_LIMIT
    assert resp.time_limit_s < 2.0
    family, instance = _typed(MEDIUM)
    assert family.check(instance, to_result(resp, family, instance).solution).feasible


def test_hung_worker_is_answered_at_the_deadline_and_replaced(
    server: Server, client: Client
) -> None:
    settle(server, 2)
    stream = client.solve_stream(MEDIUM, time_limit_s=60, timeout=6.0)
    first = next(stream)
    assert first.HasField("incumbent")
    pid = busy_worker(server)
    os.kill(pid, signal.SIGSTOP)  # the worker hangs: no result will ever come from it
    try:
        rest = list(stream)
        result = rest[-1].result
        assert result.status == service_pb2.SOLUTION_STATUS_FEASIBLE
        assert result.stop_reason == service_pb2.STOP_REASON_TIME_LIMIT
        assert "had not answered" in result.message
        assert result.objective >= first.incumbent.objective
        # The watchdog kills the hung worker (limit + grace, then SIGTERM, SIGKILL) and the
        # pool replaces it.
        assert wait_until(lambda: not alive(pid), 30)
        settle(server, 2)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGCONT)
    assert client.solve_response(TINY, time_limit_s=5).status == service_pb2.SOLUTION_STATUS_OPTIMAL


def test_cancelling_a_stream_stops_the_worker(server: Server, client: Client) -> None:
    settle(server, 2)
    stream = client.solve_stream(MEDIUM, time_limit_s=60)
    assert next(stream).HasField("incumbent")
    pid = busy_worker(server)
    stream.cancel()
    # The solver stops cooperatively; its worker stays (warm) for the next request.
    assert stops_computing(pid, 10) is not None
    assert alive(pid) and pid in server.workers()
    assert client.solve_response(TINY, time_limit_s=5).status == service_pb2.SOLUTION_STATUS_OPTIMAL


def test_cancelling_a_unary_solve_stops_the_worker(server: Server, client: Client) -> None:
    settle(server, 2)
    req = service_pb2.SolveRequest(
        instance=_message(MEDIUM), parameters=service_pb2.SolveParameters(time_limit_s=60)
    )
    call = client.stub.Solve.future(req)
    pid = busy_worker(server)
    call.cancel()
    assert stops_computing(pid, 10) is not None
    assert call.cancelled()
    assert client.solve_response(TINY, time_limit_s=5).status == service_pb2.SOLUTION_STATUS_OPTIMAL


def test_kill_9_of_a_worker_mid_solve(server: Server, client: Client) -> None:
    settle(server, 2)
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["resp"] = client.solve_response(MEDIUM, time_limit_s=60, timeout=120)
        except grpc.RpcError as exc:
            outcome["error"] = exc

    t = threading.Thread(target=call)
    t.start()
    pid = busy_worker(server)
    os.kill(pid, signal.SIGKILL)
    t.join(60)
    assert not t.is_alive()
    # The best incumbent the worker had sent, re-checked (issue 41, item 6); INTERNAL only
    # when it had sent none.
    resp = outcome.get("resp")
    if resp is not None:
        assert resp.status == service_pb2.SOLUTION_STATUS_FEASIBLE
        assert resp.stop_reason == service_pb2.STOP_REASON_ERROR
        assert "worker died" in resp.message
    else:
        error = outcome.get("error")
        assert error is not None and error.code() == grpc.StatusCode.INTERNAL
        assert "worker died" in error.details()
    assert client.health() == "SERVING"
    settle(server, 2)
    assert client.solve_response(TINY, time_limit_s=5).status == service_pb2.SOLUTION_STATUS_OPTIMAL


# --- bad input -----------------------------------------------------------------------------


def _invalid(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT, info.value.details()
    return info.value


def test_malformed_requests_name_every_bad_field(client: Client) -> None:
    err = _invalid(lambda: client.stub.Solve(service_pb2.SolveRequest()))
    assert bad_fields(err) == ["instance"]

    doc = json.loads(json.dumps(TINY))
    doc["gpu"]["jobs"][0]["workers"] = 0
    doc["gpu"]["cluster"]["nodes"][0]["gpu_count"] = -1
    err = _invalid(lambda: client.solve_response(doc, SolveOptions(time_limit_s=1)))
    fields = bad_fields(err)
    assert "instance.gpu.jobs[0].workers" in fields
    assert any(f.startswith("instance.gpu.cluster.nodes[0]") for f in fields)

    req = service_pb2.SolveRequest()
    req.instance.ParseFromString(_message(TINY).SerializeToString())
    req.parameters.backend = "quantum"
    req.parameters.relative_gap = 2
    err = _invalid(lambda: client.stub.Solve(req))
    assert set(bad_fields(err)) == {"parameters.backend", "parameters.relative_gap"}

    err = _invalid(lambda: list(client.stub.SolveStream(req)))
    assert set(bad_fields(err)) == {"parameters.backend", "parameters.relative_gap"}

    err = _invalid(lambda: client.stub.SubmitJob(service_pb2.SubmitJobRequest(request=req)))
    assert "request.parameters.backend" in bad_fields(err)

    err = _invalid(lambda: client.stub.Check(service_pb2.CheckRequest(instance=req.instance)))
    assert bad_fields(err) == ["solution"]

    err = _invalid(lambda: client.list_jobs(page_token="not-a-token"))
    assert bad_fields(err) == ["page_token"]

    with pytest.raises(grpc.RpcError) as info:
        client.get_job("no-such-job")
    assert info.value.code() == grpc.StatusCode.NOT_FOUND


def _message(doc: dict[str, Any]) -> Any:
    from placement.api.client import instance_message

    return instance_message(doc)


def test_size_limits_are_enforced(client: Client) -> None:
    # The fixture's server allows 200 nodes; large.json has more.
    err = _invalid(lambda: client.solve_response(LARGE, time_limit_s=1))
    assert bad_fields(err) == ["instance.nodes"]
    assert "server limit" in err.details()
    # Messages over --max-message-mib 4 are refused by gRPC before any parsing.
    doc = dict(TINY, description="x" * (5 * 1024 * 1024))
    with pytest.raises(grpc.RpcError) as info:
        client.solve_response(doc, time_limit_s=1)
    assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert client.health() == "SERVING"


# --- jobs ----------------------------------------------------------------------------------


def test_job_lifecycle(client: Client) -> None:
    job = client.submit_job(TINY, time_limit_s=5)
    assert job.job_id and job.state in (service_pb2.JOB_STATE_QUEUED, service_pb2.JOB_STATE_RUNNING)
    events = list(client.watch_job(job.job_id, timeout=60))
    states = [e.job.state for e in events if e.HasField("job")]
    assert states[-1] == service_pb2.JOB_STATE_SUCCEEDED
    done = client.get_job(job.job_id)
    assert done.state == service_pb2.JOB_STATE_SUCCEEDED and done.attempts == 1
    assert done.result.status == service_pb2.SOLUTION_STATUS_OPTIMAL
    assert done.family == "gpu" and done.instance_name == "tiny"
    listed = [j.job_id for j in client.iter_jobs(service_pb2.JOB_STATE_SUCCEEDED)]
    assert job.job_id in listed
    assert not any(j.HasField("result") for j in client.list_jobs().jobs)


def test_cancel_job_keeps_the_best_incumbent(server: Server, client: Client) -> None:
    settle(server, 2)
    job = client.submit_job(MEDIUM, time_limit_s=120)
    watch = client.watch_job(job.job_id, timeout=120)
    for event in watch:
        if event.HasField("incumbent"):
            break
    pid = busy_worker(server)
    cancelled = client.cancel_job(job.job_id)
    assert cancelled.state == service_pb2.JOB_STATE_CANCELLED
    assert cancelled.result.status == service_pb2.SOLUTION_STATUS_FEASIBLE
    assert cancelled.result.stop_reason == service_pb2.STOP_REASON_CANCELLED
    assert cancelled.result.HasField("solution")
    assert stops_computing(pid, 10) is not None
    assert client.cancel_job(job.job_id).state == service_pb2.JOB_STATE_CANCELLED  # idempotent
    watch.cancel()


def test_a_job_whose_worker_dies_runs_again(server: Server, client: Client) -> None:
    settle(server, 2)
    job = client.submit_job(MEDIUM, time_limit_s=3)
    assert wait_until(lambda: client.get_job(job.job_id).state == service_pb2.JOB_STATE_RUNNING, 30)
    os.kill(busy_worker(server), signal.SIGKILL)
    done = client.wait_job(job.job_id, timeout=120)
    assert done.state == service_pb2.JOB_STATE_SUCCEEDED
    assert done.attempts == 2 and done.error == ""
    assert done.result.status == service_pb2.SOLUTION_STATUS_FEASIBLE


def test_server_crash_and_restart_loses_no_job(tmp_path: Path) -> None:
    db = tmp_path / "jobs.sqlite3"
    first = start_server(tmp_path, db=db, workers=1)
    try:
        with Client(first.target) as c:
            ids = [c.submit_job(MEDIUM, time_limit_s=2).job_id for _ in range(3)]
            assert wait_until(lambda: c.get_job(ids[0]).state == service_pb2.JOB_STATE_RUNNING, 30)
            assert c.get_job(ids[2]).state == service_pb2.JOB_STATE_QUEUED
    finally:
        first.kill()  # kill -9 of the server and its workers, mid-job
    second = start_server(tmp_path, db=db, workers=1)
    try:
        assert any("interrupted jobs queued again" in line for line in second.lines)
        with Client(second.target) as c:
            jobs = [c.wait_job(i, timeout=120) for i in ids]
            assert [j.state for j in jobs] == [service_pb2.JOB_STATE_SUCCEEDED] * 3
            assert jobs[0].attempts == 2  # interrupted once, run again
            assert all(j.result.HasField("solution") for j in jobs)
    finally:
        second.stop()


# --- admission, metrics, logs ----------------------------------------------------------------


def test_full_queue_is_refused_at_once(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--queue", "0", workers=1)
    try:
        with Client(srv.target) as c:
            stream = c.solve_stream(MEDIUM, time_limit_s=60)
            assert next(stream).HasField("incumbent")
            t0 = time.monotonic()
            with pytest.raises(grpc.RpcError) as info:
                c.solve_response(TINY, time_limit_s=1)
            assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert time.monotonic() - t0 < 5  # at once, not after the running solve
            stream.cancel()
    finally:
        srv.stop()
    assert srv.proc.returncode == 0


def test_metrics_and_access_log(server: Server, client: Client) -> None:
    client.solve_response(TINY, time_limit_s=5)
    port = next(
        int(line.rsplit("metrics on :", 1)[1].rstrip(")"))
        for line in server.lines
        if "metrics on :" in line
    )
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    assert 'placement_solves_total{family="gpu",status="optimal"}' in text
    assert "placement_solve_latency_seconds_bucket" in text
    assert "placement_queue_depth" in text and "placement_worker_restarts_total" in text
    records = [json.loads(line) for line in server.lines if line.startswith("{")]
    solves = [r for r in records if r.get("rpc") == "Solve" and r["code"] == "OK"]
    assert solves and {"id", "family", "size", "status", "queue_s", "solve_s", "total_s"} <= set(
        solves[-1]
    )


def test_cli_solves_through_the_server(server: Server, tmp_path: Path) -> None:
    from tests.test_cli import run

    out = tmp_path / "s.json"
    proc = run(
        "solve", INSTANCES / "tiny.json", "--server", server.target, "--out", out, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "optimal" in proc.stdout and "greedy:" in proc.stderr
    check = run("check", INSTANCES / "tiny.json", out, cwd=tmp_path)
    assert check.returncode == 0, check.stderr


def test_client_solve_returns_the_library_result(client: Client) -> None:
    from placement.solver import Result, solve

    family, instance = _typed(TINY)
    local = solve(instance, SolveOptions(time_limit_s=10))
    # A typed instance, its JSON form: the same Result, enums and typed solution as a local solve.
    for given in (instance, TINY):
        remote = client.solve(given, time_limit_s=10)
        assert isinstance(remote, Result)
        assert remote.status is SolutionStatus.OPTIMAL and local.status is SolutionStatus.OPTIMAL
        assert remote.stop_reason is StopReason.PROVEN
        assert remote.objective_terms == pytest.approx(local.objective_terms)
        assert type(remote.solution) is type(local.solution)
        assert (
            get_family("gpu").check(instance, remote.solution).score()
            == family.check(instance, local.solution).score()
        )
    raw = to_result(client.solve_response(TINY, time_limit_s=10), family, instance)
    assert raw.status is SolutionStatus.OPTIMAL


# --- security ------------------------------------------------------------------------------


def test_mutual_tls_and_token_auth(tmp_path: Path) -> None:
    from tests.service_harness import make_certificates

    certs = make_certificates(tmp_path)
    tokens = tmp_path / "tokens"
    tokens.write_text("# accepted tokens\ns3cret-token\n")
    srv = start_server(
        tmp_path,
        "--host",
        "127.0.0.1",
        "--tls-cert",
        str(certs["server_cert"]),
        "--tls-key",
        str(certs["server_key"]),
        "--client-ca",
        str(certs["ca"]),
        "--token-file",
        str(tokens),
        workers=1,
    )
    tls = dict(ca=certs["ca"], cert=certs["client_cert"], key=certs["client_key"])
    try:
        assert "mutual TLS, token auth" in "\n".join(srv.lines)
        with Client(srv.target, token="s3cret-token", **tls) as c:
            assert (
                c.solve_response(TINY, time_limit_s=5).status == service_pb2.SOLUTION_STATUS_OPTIMAL
            )
        for token in (None, "wrong-token"):
            with Client(srv.target, token=token, **tls) as c:
                with pytest.raises(grpc.RpcError) as info:
                    c.solve_response(TINY, time_limit_s=5)
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
                with pytest.raises(grpc.RpcError) as info:
                    list(c.solve_stream(TINY, time_limit_s=5))
                assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
                # Probes need no token.
                assert c.health() == "SERVING"
        # A client certificate from another CA, or none: the TLS handshake fails.
        other = dict(ca=certs["ca"], cert=certs["other_client_cert"], key=certs["other_client_key"])
        for creds in (other, dict(ca=certs["ca"])):
            with Client(srv.target, token="s3cret-token", **creds) as c:
                with pytest.raises(grpc.RpcError) as info:
                    c.solve_response(TINY, time_limit_s=5, timeout=10)
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE
        # Plaintext to a TLS port does not get through either.
        with Client(srv.target, token="s3cret-token") as c:
            with pytest.raises(grpc.RpcError) as info:
                c.solve_response(TINY, time_limit_s=5, timeout=10)
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        srv.stop()
    # No secret in any log line.
    assert not any("s3cret-token" in line for line in srv.lines)


def test_plaintext_binds_to_loopback_by_default(server: Server) -> None:
    assert f"serving on 127.0.0.1:{server.port} (plaintext" in "\n".join(server.lines)


def test_bad_server_settings_are_one_line_errors(tmp_path: Path) -> None:
    from tests.test_cli import assert_user_error, run

    proc = run("serve", "--tls-cert", tmp_path / "missing.pem", cwd=tmp_path, timeout=60)
    assert_user_error(proc, "tls")
    proc = run("serve", "--workers", "0", cwd=tmp_path, timeout=60)
    assert_user_error(proc, "--workers")
    # Settings checked after parsing are named after their options too, not the fields.
    proc = run("serve", "--lease-seconds", "0.5", cwd=tmp_path, timeout=60)
    assert_user_error(proc, "--lease-seconds")
    assert "job_lease_s" not in proc.stderr


# --- another language -----------------------------------------------------------------------


def test_a_node_js_client_solves_through_the_server(server: Server, tmp_path: Path) -> None:
    import shutil
    import subprocess

    from tests.conftest import REPO

    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(
            "Node.js (node and npm) is not installed: the cross-language client test needs it"
        )
    install = subprocess.run(
        [
            npm,
            "install",
            "--no-audit",
            "--no-fund",
            "--silent",
            "@grpc/grpc-js",
            "@grpc/proto-loader",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert install.returncode == 0, install.stderr
    script = tmp_path / "solve_client.js"
    shutil.copy(REPO / "tests" / "node" / "solve_client.js", script)
    proc = subprocess.run(
        [
            node,
            str(script),
            str(REPO / "solver" / "schema" / "proto"),
            server.target,
            str(INSTANCES / "tiny.json"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    response = json.loads(proc.stdout)
    assert response["request_id"] == "node-client"
    assert response["status"] == "SOLUTION_STATUS_OPTIMAL"
    assert response["objective"] == pytest.approx(10.3)
    assert response["solution"]["gpu"]["placements"]


def test_a_corrupt_job_database_is_a_clear_error(tmp_path: Path) -> None:
    from tests.test_cli import assert_user_error, run

    db = tmp_path / "jobs.sqlite3"
    db.write_bytes(b"this is not an SQLite database" * 100)
    proc = run("serve", "--port", "0", "--workers", "1", "--db", db, cwd=tmp_path, timeout=180)
    assert_user_error(proc, "--db", "job database")


def test_unauthenticated_versus_permission_denied_and_no_secret_in_logs(tmp_path: Path) -> None:
    """Who are you (a token: UNAUTHENTICATED without a valid one) comes before may you (the
    client certificate's name: PERMISSION_DENIED when not allowed); a certificate from
    another CA never gets past the TLS handshake. No token, right or wrong, and no key
    appears in any line the server writes, errors included."""
    from tests.service_harness import make_certificates

    certs = make_certificates(tmp_path)
    tokens = tmp_path / "tokens"
    tokens.write_text("s3cret-token\n")
    srv = start_server(
        tmp_path,
        "--host", "127.0.0.1",
        "--tls-cert", str(certs["server_cert"]),
        "--tls-key", str(certs["server_key"]),
        "--client-ca", str(certs["ca"]),
        "--allow-client", "client",
        "--token-file", str(tokens),
        workers=1,
    )  # fmt: skip
    good = dict(ca=certs["ca"], cert=certs["client_cert"], key=certs["client_key"])
    stranger = dict(
        ca=certs["ca"], cert=certs["stranger_client_cert"], key=certs["stranger_client_key"]
    )
    other_ca = dict(ca=certs["ca"], cert=certs["other_client_cert"], key=certs["other_client_key"])
    wrong = "wr0ng-but-secret-looking-token"

    def code(creds: dict[str, Any], token: str | None) -> grpc.StatusCode:
        with Client(srv.target, token=token, **creds) as c:
            try:
                c.solve_response(TINY, time_limit_s=5, timeout=30)
            except grpc.RpcError as exc:
                return exc.code()
            return grpc.StatusCode.OK

    try:
        assert "1 allowed client names" in "\n".join(srv.lines)
        assert code(good, "s3cret-token") == grpc.StatusCode.OK
        assert code(good, None) == grpc.StatusCode.UNAUTHENTICATED
        assert code(good, wrong) == grpc.StatusCode.UNAUTHENTICATED
        assert code(stranger, "s3cret-token") == grpc.StatusCode.PERMISSION_DENIED
        assert code(stranger, None) == grpc.StatusCode.UNAUTHENTICATED
        assert code(stranger, wrong) == grpc.StatusCode.UNAUTHENTICATED
        assert code(other_ca, "s3cret-token") == grpc.StatusCode.UNAVAILABLE
        with Client(srv.target, token="s3cret-token", **stranger) as c:
            with pytest.raises(grpc.RpcError) as info:
                c.get_job("x")
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "stranger" in (info.value.details() or "")
            assert c.health() == "SERVING"  # probes need neither
        with Client(srv.target, token=wrong, **good) as c:
            with pytest.raises(grpc.RpcError) as info:
                list(c.solve_stream(TINY, time_limit_s=5))
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert wrong not in (info.value.details() or "")
    finally:
        srv.stop()
    secrets = ["s3cret-token", wrong]
    for name in ("server_key", "client_key", "stranger_client_key"):
        pem = Path(certs[name]).read_text()
        secrets.append(pem.splitlines()[1][:40])  # a line of the key material
    leaked = [line for line in srv.lines for s in secrets if s in line]
    assert not leaked, leaked
