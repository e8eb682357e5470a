"""Driving a real ``placement serve`` process from outside: start it on loopback, find its
solve workers, watch their CPU. Used by the service's benchmark suite and by the tests (Linux:
it reads ``/proc``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Server",
    "alive",
    "busy_worker",
    "cpu_ticks",
    "rss_mib",
    "settle",
    "start_server",
    "stops_computing",
    "wait_until",
    "worker_pids",
]


@dataclass
class Server:
    """A running server: its process, port and everything it wrote on stderr."""

    proc: subprocess.Popen[str]
    port: int
    db: Path | str
    """The job store: an SQLite file or a PostgreSQL URL."""
    lines: list[str] = field(default_factory=list)

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def workers(self) -> set[int]:
        """Pids of the solve worker processes (spawned children of the server)."""
        return worker_pids(self.proc.pid)

    def exit_code(self, timeout: float) -> int:
        """Wait for the server to end; its exit code. Still running after ``timeout`` s:
        TimeoutError with everything it wrote on stderr (a hung stop shows its stacks)."""
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            time.sleep(0.5)  # the last lines
            raise TimeoutError(
                f"server still running {timeout:g} s later; its stderr:\n" + "\n".join(self.lines)
            ) from None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """kill -9 the server and its workers (its process group), like a machine crash."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)


def serve_command(db: Path | str, workers: int, *args: str) -> list[str]:
    """``placement serve`` on a free port (``--port 0``) with job database ``db``."""
    return [
        sys.executable,
        "-m",
        "placement.api.cli",
        "serve",
        "--port",
        "0",
        "--workers",
        str(workers),
        "--db",
        str(db),
        *args,
    ]


def start_server(
    tmp_path: Path,
    *args: str,
    db: Path | str | None = None,
    workers: int = 2,
    preexec_fn: Callable[[], None] | None = None,
) -> Server:
    """Start ``placement serve --port 0`` and wait until it serves (``preexec_fn`` runs in
    the child before exec, e.g. to set a resource limit)."""
    db = db or tmp_path / "jobs.sqlite3"
    proc = subprocess.Popen(
        serve_command(db, workers, *args),
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
        preexec_fn=preexec_fn,
    )
    lines: list[str] = []
    ready = threading.Event()
    port: list[int] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "serving on" in line and not port:
                port.append(int(line.split("serving on ", 1)[1].split(" ", 1)[0].rsplit(":", 1)[1]))
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(180) or not port:
        proc.kill()
        raise RuntimeError("server did not start:\n" + "\n".join(lines))
    return Server(proc, port[0], db, lines)


def worker_pids(parent: int) -> set[int]:
    """Children of ``parent`` that are multiprocessing spawn workers."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and "spawn_main" in cmdline:
            pids.add(int(entry.name))
    return pids


def cpu_ticks(pid: int) -> int:
    """User + system CPU ticks of a process (0 if gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def settle(server: Server, workers: int, timeout: float = 120.0) -> None:
    """Wait until ``workers`` workers exist and none uses CPU (fresh ones have warmed up), so
    that the next busy worker is the one solving."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pids = server.workers()
        if len(pids) == workers:
            before = {p: cpu_ticks(p) for p in pids}
            time.sleep(0.3)
            if all(cpu_ticks(p) - t <= 1 for p, t in before.items()):
                return
        else:
            time.sleep(0.1)
    raise RuntimeError("workers did not settle")


def busy_worker(server: Server, timeout: float = 30.0) -> int:
    """The worker that is using CPU (the one solving)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pids = server.workers()
        before = {p: cpu_ticks(p) for p in pids}
        time.sleep(0.3)
        used = {p: cpu_ticks(p) - t for p, t in before.items()}
        if used:
            pid, ticks = max(used.items(), key=lambda kv: kv[1])
            if ticks >= 5:
                return pid
    raise RuntimeError("no busy worker found")


def stops_computing(pid: int, timeout: float) -> float | None:
    """Seconds until ``pid`` uses no more CPU (or is gone), sampled every 50 ms; None if it
    is still computing after ``timeout``."""
    t0 = time.monotonic()
    last = cpu_ticks(pid)
    still_since = None
    while time.monotonic() - t0 < timeout:
        time.sleep(0.05)
        now = cpu_ticks(pid)
        if now == last or not alive(pid):
            if still_since is None:
                still_since = time.monotonic() - 0.05
            if not alive(pid) or time.monotonic() - still_since >= 0.2:
                return still_since - t0
        else:
            still_since = None
        last = now
    return None


def rss_mib(pid: int) -> float:
    """Resident set size of a process in MiB (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_until(predicate, timeout: float, step: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until true or ``timeout`` seconds; returns its last value."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())
