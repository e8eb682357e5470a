"""Warm starts through a real `placement serve` on loopback: by a finished job's id and by a
solution, on Solve, SolveStream and SubmitJob; the errors (unknown job, job not finished,
another family's solution or job, both fields); the command line's ``--start`` and
``jobs submit --start-job``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from placement.api.client import Client, bad_fields, result_of
from placement.solver import SolveOptions
from placement.solver.schema.v1 import service_pb2
from tests.conftest import REPO
from tests.service_harness import INSTANCES, Server, start_server

TINY = json.loads((INSTANCES / "tiny.json").read_text())
MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
GREEDY = SolveOptions(time_limit_s=1, backend="greedy")
DAG = json.loads((REPO / "instances" / "dag" / "random-20x3.json").read_text())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    srv = start_server(tmp_path_factory.mktemp("warm-server"))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def client(server: Server) -> Any:
    with Client(server.target) as c:
        yield c


@pytest.fixture(scope="module")
def finished_job(client: Client) -> Any:
    """A finished job on TINY (gpu), with its solution."""
    job = client.submit_job(TINY, time_limit_s=2)
    done = client.wait_job(job.job_id, timeout=60)
    assert done.state == service_pb2.JOB_STATE_SUCCEEDED and done.result.HasField("solution")
    return done


def _changed_tiny() -> dict[str, Any]:
    """TINY without the job 'infer' and with one more job."""
    doc = json.loads(json.dumps(TINY))
    doc["gpu"]["jobs"] = [j for j in doc["gpu"]["jobs"] if j["name"] != "infer"]
    doc["gpu"]["jobs"].append(dict(doc["gpu"]["jobs"][0], name="arrived"))
    return doc


def test_solve_from_a_finished_job(client: Client, finished_job: Any) -> None:
    placed = len(finished_job.result.solution.gpu.placements)
    resp = client.solve_response(TINY, GREEDY, start_job_id=finished_job.job_id)
    warm = resp.warm_start
    assert warm.source == f"job {finished_job.job_id}"
    assert warm.kept == warm.pieces == placed and warm.feasible and not warm.dropped
    assert resp.history[0].source == "start"
    assert resp.objective >= finished_job.result.objective
    assert warm.objective == pytest.approx(finished_job.result.objective)


def test_solve_stream_and_the_library_result_from_a_job_of_a_changed_instance(
    client: Client, finished_job: Any
) -> None:
    events = list(client.solve_stream(_changed_tiny(), GREEDY, start_job_id=finished_job.job_id))
    assert events[0].incumbent.source == "start"
    resp = events[-1].result
    reasons = [d.reason for d in resp.warm_start.dropped]
    if any(p.job == "infer" for p in finished_job.result.solution.gpu.placements):
        assert "job 'infer' no longer in the instance" in reasons
    result = result_of(resp, _changed_tiny())
    assert result.warm_start is not None
    assert result.warm_start.kept == resp.warm_start.kept
    assert result.warm_start.summary().startswith(f"kept {resp.warm_start.kept} of")


def test_submit_job_from_a_job_and_solve_from_a_solution(client: Client, finished_job: Any) -> None:
    job = client.submit_job(TINY, time_limit_s=1, start_job_id=finished_job.job_id)
    done = client.wait_job(job.job_id, timeout=60)
    assert done.state == service_pb2.JOB_STATE_SUCCEEDED
    assert done.result.warm_start.source == f"job {finished_job.job_id}"
    assert done.result.warm_start.feasible
    # A solution given by value: a library Result of an earlier solve.
    earlier = client.solve(TINY, GREEDY)
    result = client.solve(_changed_tiny(), GREEDY, start=earlier)
    assert result.warm_start is not None and result.warm_start.source == "solution"
    assert result.warm_start.pieces == len(earlier.named.placements)


def _error(call: Any) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value


def test_warm_start_errors_name_the_field(client: Client, finished_job: Any) -> None:
    e = _error(lambda: client.solve_response(TINY, time_limit_s=1, start_job_id="nope"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "start_job_id" in e.details()
    e = _error(lambda: client.submit_job(TINY, time_limit_s=1, start_job_id="nope"))
    assert e.code() == grpc.StatusCode.NOT_FOUND and "request.start_job_id" in e.details()

    # Another family's solution, by value and by job.
    dag_result = client.solve(DAG, GREEDY)
    e = _error(lambda: client.solve_response(TINY, time_limit_s=1, start=dag_result))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert bad_fields(e) == ["start_solution.dag"]
    dag_job = client.submit_job(DAG, time_limit_s=1)
    client.wait_job(dag_job.job_id, timeout=60)
    e = _error(lambda: client.solve_response(TINY, time_limit_s=1, start_job_id=dag_job.job_id))
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and bad_fields(e) == ["start_job_id"]

    # Both fields at once.
    earlier = client.solve(TINY, GREEDY)
    e = _error(
        lambda: client.solve_response(
            TINY, time_limit_s=1, start=earlier, start_job_id=finished_job.job_id
        )
    )
    assert e.code() == grpc.StatusCode.INVALID_ARGUMENT and bad_fields(e) == ["start_job_id"]

    # A job not finished yet: FAILED_PRECONDITION, saying so.
    long_job = client.submit_job(MEDIUM, time_limit_s=60)
    try:
        e = _error(
            lambda: client.solve_response(TINY, time_limit_s=1, start_job_id=long_job.job_id)
        )
        assert e.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "has not finished" in e.details() and "start_job_id" in e.details()
    finally:
        client.cancel_job(long_job.job_id)


def _cli(*args: Any, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_cli_start_through_the_server(server: Server, finished_job: Any, tmp_path: Path) -> None:
    from placement.api.cli.jobs import format_job

    first = tmp_path / "first.json"
    first.write_text(
        json_format.MessageToJson(finished_job.result.solution, preserving_proto_field_name=True)
    )
    tiny = INSTANCES / "tiny.json"
    proc = _cli(
        "solve",
        tiny,
        "--server",
        server.target,
        "--time-limit",
        "1",
        "-q",
        "--start",
        first,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    start_lines = [line for line in proc.stdout.splitlines() if line.startswith("start ")]
    assert len(start_lines) == 1 and start_lines[0].endswith("from solution")

    proc = _cli(
        "jobs",
        "submit",
        tiny,
        "--time-limit",
        "1",
        "--start-job",
        finished_job.job_id,
        "--server",
        server.target,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    with Client(server.target) as client:
        done = client.wait_job(proc.stdout.strip(), timeout=60)
    assert done.result.warm_start.source == f"job {finished_job.job_id}"
    assert "\nstart       kept " in format_job(done)

    proc = _cli(
        "jobs", "submit", tiny, "--start-job", "nope", "--server", server.target, cwd=tmp_path
    )
    assert proc.returncode == 2 and "start_job_id" in proc.stderr
