"""One replay of a job stream on a live Slurm cluster (:mod:`.slurm_cluster`), under one of
two policies, and what each job did:

- ``slurm``: every job submitted as it is (unheld); Slurm alone places it (``sched/backfill``,
  ``topology/tree``, ``select/cons_tres``).
- ``placement``: every job submitted held (``sbatch -H``) while ``placement slurm schedule
  --interval I`` runs as a real subprocess (``python -m placement.api.cli``), sets each
  placeable job's ``ReqNodeList`` and releases it.

Each job is submitted at its stream time by ``sbatch`` (``--wrap "sleep S"``); the replay
ends when no job of the stream is left in ``squeue`` (or at a deadline, after which what is
left is cancelled and reported as not started). Then ``scontrol show job -o`` gives each
job's submit, start and end time (whole seconds: Slurm's resolution), its node list and the
``ReqNodeList`` the scheduler set (``MinJobAge`` keeps finished jobs visible).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from placement.benchmarks.gpu.slurm_cluster import SlurmCluster
from placement.benchmarks.gpu.slurm_stream import StreamJob

POLICIES = ("slurm", "placement")
_UNSET = ("", "(null)", "None", "Unknown")
START_TIMEOUT_S = 60.0
"""Seconds for ``placement slurm schedule`` to finish its first (empty) cycle."""


@dataclass(frozen=True)
class JobRecord:
    """What Slurm says one job of the stream did (times in seconds from the replay's start)."""

    job: StreamJob
    job_id: int
    state: str
    submit_s: float
    start_s: float | None
    end_s: float | None
    nodes: tuple[str, ...]
    req_nodes: tuple[str, ...]


@dataclass
class Replay:
    """One policy's replay: the job records and what the scheduler's log says."""

    policy: str
    records: list[JobRecord]
    wall_s: float
    cycles: int = 0
    checker_rejections: int = 0
    """Cycles whose solution the GPU family's checker rejected (``slurm schedule`` then
    applies nothing)."""
    failed_cycles: int = 0
    cancelled_at_deadline: int = 0


def _epoch(value: str) -> float | None:
    if value in _UNSET:
        return None
    try:
        return time.mktime(time.strptime(value, "%Y-%m-%dT%H:%M:%S"))
    except ValueError:
        return None


def hostnames(cluster: SlurmCluster, hostlist: str) -> tuple[str, ...]:
    """A Slurm hostlist (``n[1-3],n7``) expanded by ``scontrol show hostnames``."""
    if hostlist in _UNSET:
        return ()
    out = cluster.run(["scontrol", "show", "hostnames", hostlist]).stdout
    return tuple(out.split())


def replay(
    cluster: SlurmCluster,
    stream: list[StreamJob],
    policy: str,
    *,
    switch_wait_s: int,
    interval_s: float,
    solve_time_limit_s: float,
    drain_s: float,
    log_path: Path,
) -> Replay:
    """Replay ``stream`` under ``policy`` on ``cluster`` (which must be idle)."""
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: one of {POLICIES}")
    scheduler = None
    log = open(log_path, "w")  # noqa: SIM115 - the scheduler's stdout, closed below
    try:
        if policy == "placement":
            argv = [sys.executable, "-m", "placement.api.cli", "slurm", "schedule"]
            argv += ["--interval", f"{interval_s:g}", "--time-limit", f"{solve_time_limit_s:g}"]
            argv += ["--partition", cluster.partition]
            scheduler = subprocess.Popen(
                argv, env=cluster.env, stdout=log, stderr=subprocess.STDOUT
            )
            # a scheduler is a daemon that runs before jobs come: its start-up (imports)
            # is not charged to the first jobs' wait
            _wait_first_cycle(scheduler, log_path)
        hold = ["-H"] if policy == "placement" else []
        ids: dict[int, StreamJob] = {}
        started = time.monotonic()
        epoch0 = time.time()
        for job in sorted(stream, key=lambda j: (j.submit_s, j.name)):
            delay = started + job.submit_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            ids[cluster.submit(*hold, *job.sbatch_args(switch_wait_s))] = job
        deadline = time.monotonic() + drain_s
        while time.monotonic() < deadline:
            r = cluster.run(["squeue", "-h", "-o", "%i"], check=False, timeout=20)
            if r.returncode == 0 and not set(map(int, r.stdout.split())) & set(ids):
                break
            time.sleep(1.0)
        wall = time.monotonic() - started
        left = cluster.run(["squeue", "-h", "-o", "%i"], check=False).stdout.split()
        cancelled = len(set(map(int, left)) & set(ids))
        if cancelled:
            cluster.cancel_all()
    finally:
        if scheduler is not None:
            scheduler.send_signal(signal.SIGINT)
            try:
                scheduler.wait(timeout=15)
            except subprocess.TimeoutExpired:
                scheduler.kill()
                scheduler.wait(timeout=10)
        log.close()
    records = _records(cluster, ids, epoch0)
    text = log_path.read_text(errors="replace")
    return Replay(
        policy=policy,
        records=records,
        wall_s=wall,
        cycles=text.count("cycle done:") + text.count("no held jobs to place"),
        checker_rejections=text.count("failed the checker"),
        failed_cycles=text.count("the cycle failed"),
        cancelled_at_deadline=cancelled,
    )


def _wait_first_cycle(scheduler: subprocess.Popen[bytes], log_path: Path) -> None:
    end = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < end:
        if scheduler.poll() is not None:
            raise RuntimeError(
                f"placement slurm schedule exited {scheduler.returncode}: "
                f"{log_path.read_text(errors='replace')[-2000:]}"
            )
        if "no held jobs to place" in log_path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"placement slurm schedule: no first cycle in {START_TIMEOUT_S:.0f} s")


def _records(cluster: SlurmCluster, ids: dict[int, StreamJob], epoch0: float) -> list[JobRecord]:
    text = cluster.run(["scontrol", "show", "job", "-o"]).stdout
    fields = {}
    for line in text.splitlines():
        kv = dict(w.split("=", 1) for w in line.split() if "=" in w)
        if kv.get("JobId", "").isdigit():
            fields[int(kv["JobId"])] = kv
    # Slurm's times are whole seconds: measure from the second the replay started in
    t0 = float(int(epoch0))
    out = []
    for job_id, job in sorted(ids.items()):
        kv = fields.get(job_id)
        if kv is None:
            raise RuntimeError(
                f"job {job_id} ({job.name}) is gone from scontrol show job: raise MinJobAge"
            )
        submit = _epoch(kv.get("SubmitTime", ""))
        start = _epoch(kv.get("StartTime", ""))
        end = _epoch(kv.get("EndTime", ""))
        state = kv.get("JobState", "")
        ran = state in ("RUNNING", "COMPLETED", "TIMEOUT", "FAILED") and start is not None
        submit_s = (submit or t0) - t0
        start_s = start - t0 if ran and start is not None else None
        end_s = end - t0 if ran and end is not None and state != "RUNNING" else None
        out.append(
            JobRecord(
                job=job,
                job_id=job_id,
                state=state,
                submit_s=submit_s,
                start_s=max(start_s, submit_s) if start_s is not None else None,
                end_s=end_s,
                nodes=hostnames(cluster, kv.get("NodeList", "")) if ran else (),
                req_nodes=hostnames(cluster, kv.get("ReqNodeList", "")),
            )
        )
    return out
