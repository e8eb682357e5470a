"""Issue 41 (hostile user), items 5, 6 and 13, against real processes: `placement serve`
bounds its counts by the machine and reaps every worker on every stop signal; the best
incumbent survives a worker's death and a SIGTERM to `solve` or `batch`; a shutdown says
which queued solves never started."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from placement.api.client import Client, instance_message
from placement.api.server.probe import serve_command
from placement.solver.schema.v1 import service_pb2
from tests.conftest import REPO
from tests.service_harness import (
    INSTANCES,
    alive,
    cpu_ticks,
    start_server,
    wait_until,
    worker_pids,
)

CLI = [sys.executable, "-m", "placement.api.cli"]
MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
MEDIUM_FILE = str(INSTANCES / "medium.json")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


def _descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (children, grandchildren...), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- item 5: counts bounded by the machine ------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("--workers", "100000", "expected 1.."),
        ("--queue", "100000", "expected 0..10000"),
        ("--max-message-mib", "4096", "expected 1.."),
    ],
)
def test_serve_refuses_counts_beyond_what_the_machine_holds(
    tmp_path: Path, option: str, value: str, expected: str
) -> None:
    # Regression: `serve --workers 100000` was accepted and started hundreds of workers.
    proc = subprocess.run(
        [*CLI, "serve", "--port", "0", "--db", ":memory:", option, value],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert line.startswith(f"placement: error: {option}: got {value}, {expected}"), line
    assert "Traceback" not in proc.stderr
    if option == "--workers":
        assert "per core" in line and "MiB" in line  # the rule is in the message


@pytest.mark.parametrize(
    ("sig", "when"),
    [(signal.SIGTERM, "starting"), (signal.SIGTERM, "serving"), (signal.SIGHUP, "serving")],
)
def test_a_stop_signal_reaps_every_worker(tmp_path: Path, sig: int, when: str) -> None:
    # Regression: SIGTERM during the warm-up killed the server at once (exit 143) and left
    # its workers running on as orphans; SIGHUP did the same while serving.
    proc = subprocess.Popen(
        serve_command(":memory:", 3),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        seen: set[int] = set()
        if when == "starting":
            # Signal once the first worker exists: the others are still being started
            # or importing the solver libraries (seconds).
            assert wait_until(lambda: bool(worker_pids(proc.pid)), 120)
        else:
            assert proc.stderr is not None
            for line in proc.stderr:
                lines.append(line)
                if "serving on" in line:
                    break
            assert wait_until(lambda: len(worker_pids(proc.pid)) == 3, 60)
        seen = _descendants(proc.pid)
        workers = worker_pids(proc.pid)
        assert workers
        proc.send_signal(sig)
        _, rest = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stderr = "".join(lines) + rest
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    if when == "starting":
        assert f"stopped by {signal.Signals(sig).name} while starting" in stderr, stderr
    else:
        assert "shutting down" in stderr
    # The workers were reaped before the server exited: none is left, not even a zombie.
    assert [p for p in workers if alive(p)] == []
    # Anything else it started (multiprocessing's resource tracker) ends after it.
    assert wait_until(lambda: not any(alive(p) for p in seen), 30), [p for p in seen if alive(p)]


# --- item 6: the best incumbent survives ---------------------------------------------------


def _act_once_shown(
    args: list[str], cwd: Path, shown: Callable[[str], bool], act: Callable[[Any], None]
) -> tuple[int, str, str]:
    """Run the command line with ``args``; once a line of its stderr is ``shown``, ``act`` on
    the process (a signal to it or to a worker); then its exit code, stdout and stderr."""
    proc = subprocess.Popen(
        [*CLI, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            seen.append(line)
            if shown(line):
                break
        else:
            pytest.fail("the awaited line never came: " + "".join(seen))
        act(proc)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stdout, "".join(seen) + stderr


def _kill_the_one_worker(workers: list[int]) -> None:
    (pid,) = workers
    os.kill(pid, signal.SIGKILL)


def _assert_checked(instance: str | Path, solution: Path) -> None:
    check = subprocess.run(
        [*CLI, "check", str(instance), str(solution)], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_kill_9_of_the_worker_returns_the_best_incumbent_to_solve_out(tmp_path: Path) -> None:
    # Regression: the call ended INTERNAL "the solve worker died", exit 1, no --out file,
    # though the server held a checked incumbent (as it returns on overrun and shutdown).
    srv = start_server(tmp_path, workers=1)
    out = tmp_path / "best.json"
    try:
        code, stdout, stderr = _act_once_shown(
            [
                "solve",
                MEDIUM_FILE,
                "--server",
                srv.target,
                "--time-limit",
                "120",
                "--out",
                str(out),
            ],
            tmp_path,
            lambda line: "objective" in line,  # the client has shown an incumbent
            lambda _: _kill_the_one_worker(srv.workers()),
        )
    finally:
        srv.stop()
    assert code == 0, stdout + stderr
    assert "worker died" in stdout, stdout
    assert "stop reason error" in stdout, stdout
    _assert_checked(MEDIUM_FILE, out)


def test_sigterm_to_solve_writes_the_best_solution(tmp_path: Path) -> None:
    # Regression: SIGTERM killed `solve --out` (exit 143) with no file, though a solution
    # existed; it is now handled as Ctrl-C is: the best solution written, then exit 143.
    instance = tmp_path / "big.json"
    gen = subprocess.run(
        [*CLI, "generate", "gpu", "--gpus", "128", "--jobs", "100", "--seed", "1"]
        + ["--out", str(instance)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert gen.returncode == 0, gen.stderr
    out = tmp_path / "best.json"
    code, stdout, stderr = _act_once_shown(
        ["solve", str(instance), "--backend", "cpsat", "--time-limit", "600", "--out", str(out)],
        tmp_path,
        lambda line: line.rstrip().endswith("cpsat"),  # CP-SAT reported a solution
        lambda proc: proc.send_signal(signal.SIGTERM),
    )
    assert code == 143, stderr
    assert "Traceback" not in stderr
    assert "stop reason cancelled" in stdout
    _assert_checked(instance, out)


def test_sigterm_to_batch_writes_the_csv_and_stops_its_workers(tmp_path: Path) -> None:
    # Regression: SIGTERM to `batch` wrote no CSV, and its workers went on writing
    # solution files after it was gone. Now as Ctrl-C: rows marked, CSV written, exit 143.
    medium = str(REPO / "instances" / "gpu" / "medium.json")
    out = tmp_path / "rows.csv"
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    proc = subprocess.Popen(
        [*CLI, "batch", medium, medium, medium, "--jobs", "1", "--time-limit", "120"]
        + ["--out", str(out), "--solutions", str(solutions), "-q"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The first solve is in its exact phase once its worker has used 5 s of CPU.
        assert wait_until(
            lambda: any(cpu_ticks(p) >= 500 for p in worker_pids(proc.pid)), 120, step=0.2
        )
        workers = worker_pids(proc.pid)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, err
    assert "Traceback" not in err
    rows = list(csv.DictReader(out.open()))
    assert [r["status"] for r in rows[1:]] == ["skipped", "skipped"]
    assert rows[0]["status"] == "feasible" and rows[0]["stop_reason"] == "cancelled", rows[0]
    assert rows[0]["solution_file"] and Path(rows[0]["solution_file"]).exists()
    assert [p for p in workers if alive(p)] == []
    assert len(list(solutions.iterdir())) == 1


def test_sigterm_to_solve_on_a_server_writes_the_best_streamed_incumbent(
    tmp_path: Path,
) -> None:
    # Regression: SIGTERM killed `solve --server --out` (exit 143) with no file.
    srv = start_server(tmp_path, workers=1)
    out = tmp_path / "best.json"
    try:
        code, stdout, stderr = _act_once_shown(
            [
                "solve",
                MEDIUM_FILE,
                "--server",
                srv.target,
                "--time-limit",
                "120",
                "--out",
                str(out),
            ],
            tmp_path,
            lambda line: "objective" in line,
            lambda proc: proc.send_signal(signal.SIGTERM),
        )
    finally:
        srv.stop()
    assert code == 143, stderr
    assert "stop reason cancelled" in stdout, stdout
    _assert_checked(MEDIUM_FILE, out)


def test_batch_workers_stop_and_write_nothing_once_the_batch_is_killed(tmp_path: Path) -> None:
    # Regression: after the batch process was gone, its workers went on solving and wrote
    # solution files nobody would list in a CSV.
    medium = str(REPO / "instances" / "gpu" / "medium.json")
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    proc = subprocess.Popen(
        [*CLI, "batch", medium, "--jobs", "1", "--time-limit", "120"]
        + ["--solutions", str(solutions), "-q"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    workers: set[int] = set()
    try:
        assert wait_until(
            lambda: any(cpu_ticks(p) >= 500 for p in worker_pids(proc.pid)), 120, step=0.2
        )
        workers = worker_pids(proc.pid)
        proc.kill()
        proc.wait()
        # The orphaned worker notices within its poll and ends (well before its 120 s).
        assert wait_until(lambda: not any(alive(p) for p in workers), 60)
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    assert list(solutions.iterdir()) == []


# --- item 13: shutdown accounting ----------------------------------------------------------


def _in_flight(port: int) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("placement_solves_in_flight "):
                return float(line.split()[1])
    return -1.0


def test_sigterm_says_which_queued_solves_never_started(tmp_path: Path) -> None:
    # Regression: queued solves that never ran got "had found no solution yet", and the
    # log claimed every stopped call was answered with its best solution.
    metrics = _free_port()
    srv = start_server(tmp_path, "--shutdown-grace", "1", "--metrics-port", str(metrics), workers=1)
    try:
        with Client(srv.target) as client:
            stream = client.solve_stream(MEDIUM, time_limit_s=120)
            assert next(stream).HasField("incumbent")  # the one worker is busy with it
            request = service_pb2.SolveRequest(
                instance=instance_message(MEDIUM),
                parameters=service_pb2.SolveParameters(time_limit_s=120),
            )
            queued = [client.stub.Solve.future(request, timeout=120) for _ in range(2)]
            assert wait_until(lambda: _in_flight(metrics) == 3, 30)
            srv.proc.send_signal(signal.SIGTERM)
            result = list(stream)[-1].result
            assert result.status == service_pb2.SOLUTION_STATUS_FEASIBLE
            assert "shutting down" in result.message
            for call in queued:
                with pytest.raises(grpc.RpcError) as info:
                    call.result()
                assert info.value.code() == grpc.StatusCode.UNAVAILABLE
                assert "never started" in info.value.details(), info.value.details()
        assert srv.exit_code(60) == 0
    finally:
        srv.kill() if srv.proc.poll() is None else None
    log = "\n".join(srv.lines)
    assert "3 calls stopped at the end of the grace period" in log, log
    assert "1 answered with their best solution" in log, log
    assert "2 never started" in log, log
