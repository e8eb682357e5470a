"""The command line against a real `placement serve` on loopback: ``placement jobs`` and
Ctrl-C of ``solve --server`` (real processes, real signals)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from placement.api.files import read_instance, read_solution
from tests.service_harness import INSTANCES, Server, start_server, wait_until

TINY = str(INSTANCES / "tiny.json")
MEDIUM = str(INSTANCES / "medium.json")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Any:
    srv = start_server(tmp_path_factory.mktemp("jobs-server"))
    yield srv
    srv.stop()


def _cli(*args: Any, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _jobs(server: Server, *args: Any) -> subprocess.CompletedProcess[str]:
    return _cli("jobs", *args, "--server", server.target)


def _feasible(instance: str, solution: Path) -> bool:
    loaded = read_instance(instance)
    typed, _ = read_solution(str(solution), loaded)
    return loaded.family.check(loaded.instance, typed).feasible


def test_jobs_submit_watch_get_list(server: Server, tmp_path: Path) -> None:
    submitted = _jobs(server, "submit", TINY, "--time-limit", "5", "--json")
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads(submitted.stdout)  # pure JSON
    job_id = job["job_id"]
    assert job["state"] in ("queued", "running", "succeeded") and job["family"] == "gpu"

    watched = _jobs(server, "watch", job_id, "--json")
    assert watched.returncode == 0, watched.stderr
    events = [json.loads(line) for line in watched.stdout.splitlines()]
    assert events[-1]["job"]["state"] == "succeeded"

    out = tmp_path / "tiny.solution.json"
    got = _jobs(server, "get", job_id, "--out", out)
    assert got.returncode == 0, got.stderr
    assert "succeeded" in got.stdout and "optimal (proven)" in got.stdout
    assert _feasible(TINY, out)
    data = json.loads(_jobs(server, "get", job_id, "--json").stdout)
    assert data["result"]["status"] == "optimal" and data["result"]["objective"] == 10.3

    listed = json.loads(_jobs(server, "list", "--json", "--state", "succeeded").stdout)
    assert job_id in [j["job_id"] for j in listed]
    assert job_id in _jobs(server, "list").stdout


def test_jobs_cancel_keeps_the_best_incumbent(server: Server) -> None:
    job_id = _jobs(server, "submit", MEDIUM, "--time-limit", "60").stdout.strip()

    def state() -> str:
        return json.loads(_jobs(server, "get", job_id, "--json").stdout)["state"]

    assert wait_until(lambda: state() == "running", 30, step=0.2)
    cancelled = _jobs(server, "cancel", job_id, "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert wait_until(lambda: state() == "cancelled", 30, step=0.2)
    result = json.loads(_jobs(server, "get", job_id, "--json").stdout)["result"]
    assert result is not None and result["status"] == "feasible"


def test_sigterm_stops_watching_and_the_job_runs_on(server: Server) -> None:
    job_id = _jobs(server, "submit", MEDIUM, "--time-limit", "60").stdout.strip()
    watch = subprocess.Popen(
        [sys.executable, "-m", "placement.api.cli", "jobs", "watch", job_id, "--json"]
        + ["--server", server.target],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = json.loads(watch.stdout.readline())  # watching: its first event is out
        assert first["job"]["job_id"] == job_id
    finally:
        watch.send_signal(signal.SIGTERM)
        _, errs = watch.communicate(timeout=30)
    assert watch.returncode == 143 and "stopped by SIGTERM" in errs, errs
    state = json.loads(_jobs(server, "get", job_id, "--json").stdout)["state"]
    assert state in ("queued", "running")  # only the watching stopped
    assert _jobs(server, "cancel", job_id).returncode == 0


@pytest.mark.parametrize("command", ["get", "watch", "cancel"])
def test_jobs_of_an_unknown_id_is_one_line_and_exit_2(server: Server, command: str) -> None:
    proc = _jobs(server, command, "no-such-job")
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-job" in lines[0] and "NOT_FOUND" in lines[0]
    assert proc.stdout == ""


def test_ctrl_c_of_solve_on_a_server_keeps_the_best_streamed_incumbent(
    server: Server, tmp_path: Path
) -> None:
    out = tmp_path / "medium.solution.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "solve",
            MEDIUM,
            "--server",
            server.target,
            "--time-limit",
            "60",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        lines.extend(proc.stderr)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # An incumbent was streamed (a progress line names its source).
    assert wait_until(lambda: any("greedy" in x for x in lines), 60)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    reader.join(5)
    assert proc.returncode == 130, "".join(lines)
    assert "stop reason cancelled" in stdout and "status      feasible" in stdout
    assert f"solution    {out}" in stdout
    assert _feasible(MEDIUM, out)
