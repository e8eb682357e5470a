"""SIGTERM drains a real `placement serve`: new calls get UNAVAILABLE, a solve in progress
that ends within the shutdown grace period is answered as usual, and one that does not is
answered with its best checked solution at the end of it; then the server exits 0."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import grpc
import pytest

from placement.api.client import Client
from placement.solver import SolutionStatus
from placement.solver.schema.v1 import service_pb2
from tests.service_harness import INSTANCES, start_server, wait_until

MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
TINY = json.loads((INSTANCES / "tiny.json").read_text())


def test_sigterm_lets_calls_in_progress_finish_and_refuses_new_ones(tmp_path: Path) -> None:
    srv = start_server(tmp_path, "--shutdown-grace", "2")
    try:
        with Client(srv.target) as client:
            long_stream = client.solve_stream(MEDIUM, time_limit_s=60)
            first = next(long_stream)  # the long solve is running
            assert first.HasField("incumbent")
            # The short call is in progress on the server once its first incumbent arrives
            # (waiting on a thread's call could send SIGTERM before the call got there).
            short_call = client.solve_iter(MEDIUM, time_limit_s=1.0)
            next(short_call)
            srv.proc.send_signal(signal.SIGTERM)
            assert wait_until(lambda: any("shutting down" in x for x in srv.lines), 10)

            with pytest.raises(grpc.RpcError) as refused:
                client.solve(TINY, time_limit_s=1, timeout=10)
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE

            *_, short = list(short_call)
            # The short solve ran to its own limit, untouched by the shutdown.
            assert short.status == SolutionStatus.FEASIBLE
            assert "shutting down" not in short.message

            events = list(long_stream)
            result = events[-1].result
            assert result.status == service_pb2.SOLUTION_STATUS_FEASIBLE  # the best incumbent
            assert "shutting down" in result.message
            assert result.objective >= first.incumbent.objective
        assert srv.exit_code(30) == 0
    finally:
        srv.kill() if srv.proc.poll() is None else None
