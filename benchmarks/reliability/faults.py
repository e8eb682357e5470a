"""Fault injection against real ``placement serve`` processes: nothing accepted is lost.

Scenarios (each reports what it injected and what became of every accepted job):

``workers``  kill -9 of a solve worker at random moments (``--worker-kills``, default 100)
             while async jobs and synchronous solves keep arriving;
``servers``  kill -9 of the whole server (process group: server and workers, like a machine
             crash) with queued and running jobs, then a restart on the same database
             (``--server-kills``, default 20);
``diskfull`` the job database's file system full (RLIMIT_FSIZE on the server, SIGXFSZ
             ignored, so writes fail with EFBIG as on a full disk), then the space back;
``corrupt``  the database file overwritten while the server runs, and a corrupt file at
             start.

Every accepted job must end SUCCEEDED, FAILED with a reason or CANCELLED; none may be
missing or stay unfinished; every solution returned is re-checked with the family's checker
here; the server must keep serving. Writes JSON to ``--out``.

    python benchmarks/reliability/faults.py                      # everything (~15 min)
    python benchmarks/reliability/faults.py workers --worker-kills 10
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from placement.api.client import Client, instance_message  # noqa: E402
from placement.api.server.messages import parse_instance  # noqa: E402
from placement.api.server.probe import serve_command, start_server  # noqa: E402
from placement.solver.schema.v1 import service_pb2  # noqa: E402

INSTANCES = REPO / "instances" / "gpu"
TINY = json.loads((INSTANCES / "tiny.json").read_text())
MEDIUM = json.loads((INSTANCES / "medium.json").read_text())
BY_NAME = {doc["name"]: doc for doc in (TINY, MEDIUM)}
FINISHED = (
    service_pb2.JOB_STATE_SUCCEEDED,
    service_pb2.JOB_STATE_FAILED,
    service_pb2.JOB_STATE_CANCELLED,
)
STATE = service_pb2.JobState.Name


def check_job(job: Any, instances: dict[str, Any]) -> bool:
    """True when the job's solution (if any) passes the family checker here."""
    if not job.HasField("result") or not job.result.HasField("solution"):
        return True
    family, inst = parse_instance(instance_message(instances[job.instance_name]))
    sol = family.solution_from_message(inst, getattr(job.result.solution, family.name))
    return family.check(inst, sol).feasible


def settle_jobs(c: Client, ids: list[str], timeout: float) -> dict[str, Any]:
    """Wait for every job to finish; returns the last seen Job per id (None: not found)."""
    seen: dict[str, Any] = {}
    end = time.monotonic() + timeout
    left = list(ids)
    while left and time.monotonic() < end:
        nxt = []
        for job_id in left:
            try:
                job = c.get_job(job_id, timeout=30)
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.NOT_FOUND:
                    seen[job_id] = None
                    continue
                nxt.append(job_id)
                continue
            seen[job_id] = job
            if job.state not in FINISHED:
                nxt.append(job_id)
        left = nxt
        if left:
            time.sleep(1.0)
    return seen


def tally(jobs: dict[str, Any], instances: dict[str, Any]) -> dict[str, Any]:
    states: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    lost = unexplained = invalid = 0
    for job in jobs.values():
        if job is None:
            lost += 1
            continue
        states[STATE(job.state)] += 1
        if job.state not in FINISHED:
            lost += 1
        elif job.state == service_pb2.JOB_STATE_FAILED:
            if not job.error:
                unexplained += 1
            errors[job.error[:80]] += 1
        if not check_job(job, instances):
            invalid += 1
    return dict(
        accepted=len(jobs),
        states=dict(states),
        failed_reasons=dict(errors),
        lost=lost,
        failed_without_reason=unexplained,
        invalid_solutions=invalid,
    )


# --- worker kills ------------------------------------------------------------------------


def scenario_workers(kills: int, tmp: Path) -> dict[str, Any]:
    srv = start_server(tmp, "--queue", "8", "--grace", "0.5", workers=2)
    instances = BY_NAME
    ids: list[str] = []
    solve_codes: Counter[str] = Counter()
    stop = threading.Event()
    rnd = random.Random(8)

    def submitter(c: Client) -> None:
        while not stop.is_set():
            doc = rnd.choice([TINY, MEDIUM])
            try:
                ids.append(c.submit_job(doc, time_limit_s=rnd.choice([0.5, 1, 2])).job_id)
            except grpc.RpcError as exc:
                solve_codes["submit " + exc.code().name] += 1
            stop.wait(rnd.uniform(0.1, 0.6))

    def solver(c: Client) -> None:
        while not stop.is_set():
            doc = rnd.choice([TINY, MEDIUM])
            try:
                resp = c.solve_response(doc, time_limit_s=1, timeout=15)
                fam, inst = parse_instance(
                    __import__("placement.api.client", fromlist=["x"]).instance_message(doc)
                )
                sol = fam.solution_from_message(inst, getattr(resp.solution, fam.name))
                ok = fam.check(inst, sol).feasible
                solve_codes["OK" if ok else "OK but INVALID"] += 1
            except grpc.RpcError as exc:
                solve_codes[f"{exc.code().name}: {exc.details()[:60]}"] += 1

    done = 0
    t0 = time.monotonic()
    try:
        with Client(srv.target) as c:
            threads = [
                threading.Thread(target=submitter, args=(c,)),
                threading.Thread(target=solver, args=(c,)),
            ]
            for t in threads:
                t.start()
            while done < kills:
                time.sleep(rnd.uniform(0.2, 1.5))
                pids = sorted(srv.workers())
                if not pids:
                    continue
                try:
                    os.kill(rnd.choice(pids), signal.SIGKILL)
                    done += 1
                except ProcessLookupError:
                    pass
                if done % 10 == 0:
                    print(f"  workers: {done} kills, {len(ids)} jobs", flush=True)
            stop.set()
            for t in threads:
                t.join(60)
            jobs = settle_jobs(c, ids, 600)
            healthy = c.health() == "SERVING"
            after = c.solve_response(TINY, time_limit_s=2, timeout=60).status
    finally:
        srv.stop()
    return dict(
        worker_kills=done,
        seconds=round(time.monotonic() - t0, 1),
        jobs=tally(jobs, instances),
        sync_solves=dict(solve_codes),
        health_after="SERVING" if healthy else "NOT SERVING",
        solve_after=service_pb2.SolutionStatus.Name(after),
    )


# --- server kills ------------------------------------------------------------------------


def scenario_servers(kills: int, tmp: Path) -> dict[str, Any]:
    db = tmp / "jobs.sqlite3"
    instances = BY_NAME
    ids: list[str] = []
    rnd = random.Random(20)
    states_at_kill: Counter[str] = Counter()
    recovered_lines = 0
    t0 = time.monotonic()
    for cycle in range(kills):
        srv = start_server(tmp, db=db, workers=1)
        recovered_lines += any("interrupted jobs queued again" in ln for ln in srv.lines)
        try:
            with Client(srv.target) as c:
                for _ in range(rnd.randint(2, 4)):
                    doc = rnd.choice([TINY, MEDIUM, MEDIUM])
                    ids.append(c.submit_job(doc, time_limit_s=rnd.choice([1, 2, 3])).job_id)
                time.sleep(rnd.uniform(0.0, 2.5))
                for j in c.list_jobs(page_size=1000).jobs:
                    states_at_kill[STATE(j.state)] += 1
        finally:
            srv.kill()
        print(f"  servers: {cycle + 1} kills, {len(ids)} jobs", flush=True)
    srv = start_server(tmp, db=db, workers=2)
    try:
        with Client(srv.target) as c:
            jobs = settle_jobs(c, ids, 900)
            healthy = c.health() == "SERVING"
    finally:
        srv.stop()
    return dict(
        server_kills=kills,
        seconds=round(time.monotonic() - t0, 1),
        restarts_that_requeued_interrupted_jobs=recovered_lines,
        job_states_seen_just_before_kills=dict(states_at_kill),
        jobs=tally(jobs, instances),
        health_after="SERVING" if healthy else "NOT SERVING",
    )


# --- disk full -----------------------------------------------------------------------------


def _small_disk(limit: int) -> Any:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def scenario_diskfull(tmp: Path, limit: int = 1024 * 1024) -> dict[str, Any]:
    db = tmp / "jobs.sqlite3"
    instances = BY_NAME
    ids: list[str] = []
    codes: Counter[str] = Counter()
    messages: set[str] = set()
    srv = start_server(tmp, db=db, workers=2, preexec_fn=_small_disk(limit))
    try:
        with Client(srv.target) as c:
            for _ in range(200):
                try:
                    ids.append(c.submit_job(MEDIUM, time_limit_s=1).job_id)
                    codes["OK"] += 1
                except grpc.RpcError as exc:
                    codes[exc.code().name] += 1
                    messages.add(exc.details()[:160])
                    if codes[exc.code().name] >= 5:
                        break
            time.sleep(5)  # jobs run; their outcomes may not be writable
            during = Counter(STATE(c.get_job(i).state) for i in ids)
            solve_during = service_pb2.SolutionStatus.Name(
                c.solve_response(TINY, time_limit_s=2).status
            )
            healthy = c.health() == "SERVING"
    finally:
        srv.stop()
    # The space is back: a server on the same database finishes every accepted job.
    srv = start_server(tmp, db=db, workers=2)
    try:
        with Client(srv.target) as c:
            jobs = settle_jobs(c, ids, 600)
    finally:
        srv.stop()
    return dict(
        file_size_limit_bytes=limit,
        submit_codes=dict(codes),
        refusal_messages=sorted(messages),
        states_while_full=dict(during),
        solve_while_full=solve_during,
        health_while_full="SERVING" if healthy else "NOT SERVING",
        jobs_after_space_returned=tally(jobs, instances),
    )


# --- corrupt database ------------------------------------------------------------------------


def scenario_corrupt(tmp: Path) -> dict[str, Any]:
    db = tmp / "jobs.sqlite3"
    instances = BY_NAME
    srv = start_server(tmp, db=db, workers=1)
    codes: Counter[str] = Counter()
    try:
        with Client(srv.target) as c:
            ids = [c.submit_job(TINY, time_limit_s=1).job_id for _ in range(3)]
            before = tally(settle_jobs(c, ids, 120), instances)
            # Garbage over the whole database and its write-ahead log (a torn disk).
            for path in (db, Path(f"{db}-wal")):
                if path.exists():
                    size = path.stat().st_size
                    with open(path, "r+b") as fh:
                        fh.write(os.urandom(size))
            for call in (
                lambda: c.submit_job(TINY, time_limit_s=1),
                lambda: c.get_job(ids[0]),
                lambda: c.list_jobs(),
            ):
                try:
                    call()
                    codes["OK"] += 1
                except grpc.RpcError as exc:
                    codes[f"{exc.code().name}: {exc.details()[:100]}"] += 1
            solve_after = service_pb2.SolutionStatus.Name(
                c.solve_response(TINY, time_limit_s=2).status
            )
            healthy = c.health() == "SERVING"
    finally:
        srv.kill()  # no clean shutdown: a checkpoint would write the WAL's good pages back
    # A corrupt file at start: the server must refuse it with a clear error (exit 2),
    # never start on it or silently replace it.
    bad = tmp / "garbage.sqlite3"
    bad.write_bytes(os.urandom(64 * 1024))
    runs = []
    for path in (db, bad):
        proc = subprocess.Popen(
            serve_command(path, 1),
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
            cwd=tmp,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=120)
            runs.append(
                dict(
                    db=path.name,
                    exit_code=proc.returncode,
                    message=(err.strip().splitlines() or [""])[-1][:300],
                )
            )
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            runs.append(dict(db=path.name, exit_code=None, message="served (did not exit)"))
    return dict(
        jobs_before_corruption=before,
        job_rpcs_after_corruption=dict(codes),
        solve_after_corruption=solve_after,
        health_after_corruption="SERVING" if healthy else "NOT SERVING",
        restarts=runs,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenarios", nargs="*", default=["workers", "servers", "diskfull", "corrupt"])
    ap.add_argument("--worker-kills", type=int, default=100)
    ap.add_argument("--server-kills", type=int, default=20)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "faults.json"))
    args = ap.parse_args()
    results: dict[str, Any] = dict(
        command="python benchmarks/reliability/faults.py " + " ".join(sys.argv[1:]),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        loadavg_before=[round(x, 2) for x in os.getloadavg()],
        cpus=os.cpu_count(),
    )
    for name in args.scenarios:
        tmp = Path(tempfile.mkdtemp(prefix=f"placement-faults-{name}-"))
        print(f"== {name}", flush=True)
        if name == "workers":
            results[name] = scenario_workers(args.worker_kills, tmp)
        elif name == "servers":
            results[name] = scenario_servers(args.server_kills, tmp)
        elif name == "diskfull":
            results[name] = scenario_diskfull(tmp)
        elif name == "corrupt":
            results[name] = scenario_corrupt(tmp)
        else:
            ap.error(f"unknown scenario {name}")
        print(json.dumps(results[name], indent=1), flush=True)
    results["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    lost = sum(
        r["jobs"]["lost"] + r["jobs"]["invalid_solutions"] + r["jobs"]["failed_without_reason"]
        for r in results.values()
        if isinstance(r, dict) and "jobs" in r
    )
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
