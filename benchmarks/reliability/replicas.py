"""Replicas on one PostgreSQL job store under kill -9: nothing accepted is lost or done twice.

Starts a throw-away PostgreSQL cluster (fsync on), ``--replicas`` ``placement serve``
processes (one worker each, ``--lease-seconds``) sharing it, and submits ``--jobs``
asynchronous jobs round-robin to the live replicas: ``instances/gpu/tiny.json`` (solved and
proven in milliseconds) alternating with ``instances/gpu/medium.json`` under a 0.5 s limit
(it runs to its limit), so that kills find jobs running. Meanwhile
``--kills`` times, at a random moment, a random live replica is killed with SIGKILL (its
process group: server and worker, like a machine crash; never the last live one) and started
again. At the end it reports:

- jobs lost: accepted (SubmitJob answered) but missing or not SUCCEEDED;
- jobs completed twice: jobs with more than one outcome line over all replicas' logs, the
  killed ones' included (each replica logs a line when its conditional result write
  succeeds);
- invalid results: solutions the GPU family's checker rejects, re-checked here;
- takeover time: for every job running on a replica when it was killed, from the kill to
  the job's next start on another replica (p50 / p99; about the lease plus the claim poll).

    python benchmarks/reliability/replicas.py                     # 3 replicas, 1000 jobs, 50 kills
    python benchmarks/reliability/replicas.py --jobs 100 --kills 5

Writes JSON to ``--out`` (default benchmarks/reliability/results/replicas.json).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import grpc

from placement.api.client import Client, instance_message
from placement.api.server import messages
from placement.api.server.probe import Server, start_server
from placement.api.server.store_throwaway import ThrowawayPostgres
from placement.solver.schema.v1 import service_pb2

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "instances" / "gpu" / "tiny.json"
MEDIUM = REPO / "instances" / "gpu" / "medium.json"
MEDIUM_LIMIT_S = 0.5


def job_lines(lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(x) for x in lines if x.startswith("{") and '"event":"job"' in x]


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--kills", type=int, default=50)
    ap.add_argument("--lease-seconds", type=float, default=2.0)
    ap.add_argument("--kill-every", type=float, default=3.0, help="mean seconds between kills")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(REPO / "benchmarks/reliability/results/replicas.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    instances = [json.loads(TINY.read_text()), json.loads(MEDIUM.read_text())]
    limits = [2.0, MEDIUM_LIMIT_S]

    cluster = ThrowawayPostgres(durable=True)
    cluster.start()
    url = cluster.new_database()
    work = Path(tempfile.mkdtemp(prefix="placement-replicas-"))
    lock = threading.Lock()
    live: dict[int, Server] = {}
    every_server: list[Server] = []
    kills: list[tuple[float, Server]] = []
    t0 = time.time()

    def launch(slot: int) -> None:
        folder = work / f"slot{slot}-{len(every_server)}"
        folder.mkdir()
        srv = start_server(
            folder,
            "--lease-seconds",
            str(args.lease_seconds),
            db=url,
            workers=1,
        )
        with lock:
            live[slot] = srv
            every_server.append(srv)

    starters = [threading.Thread(target=launch, args=(i,)) for i in range(args.replicas)]
    for t in starters:
        t.start()
    for t in starters:
        t.join()
    print(f"{args.replicas} replicas up in {time.time() - t0:.1f} s", flush=True)

    accepted: list[str] = []
    kind: dict[str, int] = {}
    refused = 0
    done_submitting = threading.Event()

    pace = args.kills * args.kill_every / max(1, args.jobs) * 0.8

    def submitter() -> None:
        nonlocal refused
        n = 0
        while n < args.jobs:
            with lock:
                targets = [s.target for s in live.values()]
            target = targets[n % len(targets)] if targets else None
            if target is None:
                time.sleep(0.1)
                continue
            try:
                with Client(target) as c:
                    job = c.submit_job(instances[n % 2], time_limit_s=limits[n % 2], timeout=10)
                accepted.append(job.job_id)
                kind[job.job_id] = n % 2
                n += 1
            except grpc.RpcError:
                refused += 1  # the replica died under us: send it elsewhere
                time.sleep(0.05)
            time.sleep(pace)  # spread the submissions over the kills
        done_submitting.set()

    def killer() -> None:
        for k in range(args.kills):
            time.sleep(rng.expovariate(1.0 / args.kill_every))
            while True:  # never the last live replica: wait for a restart
                with lock:
                    slots = [s for s, srv in live.items() if srv.proc.poll() is None]
                    if len(slots) >= 2:
                        slot = rng.choice(slots)
                        victim = live.pop(slot)
                        break
                time.sleep(0.1)
            victim.kill()
            kills.append((time.time(), victim))
            print(f"kill {k + 1}/{args.kills} at {time.time() - t0:.1f} s", flush=True)
            threading.Thread(target=launch, args=(slot,), daemon=True).start()

    threads = [threading.Thread(target=submitter), threading.Thread(target=killer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # Wait until every accepted job has ended (or 10 minutes).
    end = time.time() + 600
    finished: dict[str, Any] = {}
    while time.time() < end and len(finished) < len(accepted):
        with lock:
            target = next(iter(live.values())).target
        try:
            with Client(target) as c:
                for job_id in accepted:
                    if job_id not in finished:
                        job = c.get_job(job_id, timeout=10)
                        if job.state in (3, 4, 5):
                            finished[job_id] = job
        except grpc.RpcError:
            pass
        time.sleep(0.5)
    elapsed = time.time() - t0
    time.sleep(1.0)  # the last log lines

    lost = [
        j
        for j in accepted
        if j not in finished or finished[j].state != service_pb2.JOB_STATE_SUCCEEDED
    ]
    ends: Counter[str] = Counter()
    starts: dict[str, list[tuple[float, str]]] = {}
    for srv in every_server:
        for e in job_lines(srv.lines):
            if e["state"] in ("succeeded", "failed", "cancelled"):
                ends[e["job_id"]] += 1
            elif e["state"] == "running":
                starts.setdefault(e["job_id"], []).append((e["at"], e["replica"]))
    twice = [j for j, n in ends.items() if n > 1]

    # Re-check every result with the family's checker.
    parsed = [messages.parse_instance(instance_message(i)) for i in instances]
    invalid = 0
    for job_id, job in finished.items():
        fam, inst = parsed[kind[job_id]]
        if not job.result.HasField("solution"):
            invalid += 1
            continue
        sol = fam.solution_from_message(inst, getattr(job.result.solution, fam.name))
        if not fam.check(inst, sol).feasible:
            invalid += 1

    # Takeover: jobs a victim had started and not ended when it died.
    takeovers: list[float] = []
    rerun: list[str] = []
    for at, victim in kills:
        events = job_lines(victim.lines)
        replica = next((e["replica"] for e in events), None)
        ended = {e["job_id"] for e in events if e["state"] != "running"}
        orphans = {e["job_id"] for e in events if e["state"] == "running"} - ended
        for job_id in orphans:
            later = [t for t, r in starts.get(job_id, []) if r != replica and t > at]
            if later:
                takeovers.append(min(later) - at)
                rerun.append(job_id)
    report = {
        "command": "python benchmarks/reliability/replicas.py "
        f"--replicas {args.replicas} --jobs {args.jobs} --kills {args.kills} "
        f"--lease-seconds {args.lease_seconds} --kill-every {args.kill_every} --seed {args.seed}",
        "replicas": args.replicas,
        "jobs_accepted": len(accepted),
        "submissions_refused_and_resent": refused,
        "kills": len(kills),
        "jobs_lost": len(lost),
        "jobs_completed_twice": len(twice),
        "results_invalid": invalid,
        "jobs_rerun_after_a_kill": len(takeovers),
        "takeover_p50_s": round(percentile(takeovers, 0.5), 3),
        "takeover_p99_s": round(percentile(takeovers, 0.99), 3),
        "takeover_max_s": round(max(takeovers), 3) if takeovers else None,
        "attempts_max": max((j.attempts for j in finished.values()), default=0),
        "attempts_of_rerun_jobs": dict(
            Counter(finished[j].attempts for j in rerun if j in finished)
        ),
        "wall_s": round(elapsed, 1),
        "load_average": os.getloadavg(),
    }
    print(json.dumps(report, indent=2))
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    with lock:
        for srv in live.values():
            srv.stop()
    cluster.remove()
    return 0 if not lost and not twice and not invalid else 1


if __name__ == "__main__":
    raise SystemExit(main())
