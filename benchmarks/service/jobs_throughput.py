"""Asynchronous jobs on a shared store: throughput with 1, 2 and 3 replicas, and the store's
own latency per claim and per result write, SQLite vs PostgreSQL.

1. Store latency: ``--store-jobs`` jobs are added to a fresh store, then claimed one by one
   and their results written one by one (a 2 KiB result), each operation timed from this
   process: SQLite (WAL, ``synchronous=FULL``, a file in /tmp) and PostgreSQL (a throw-away
   cluster on loopback, fsync on, one connection).
2. Throughput: ``placement serve`` replicas of one worker each on one PostgreSQL database
   (and one replica on SQLite, the baseline); ``--tiny`` jobs of ``instances/gpu/tiny.json``
   (proven optimal in milliseconds: the figure is the queue's overhead) and ``--medium``
   jobs of ``instances/gpu/medium.json`` under a 1 s limit (each runs to its limit) are
   submitted at once; jobs per second = jobs / (last finish - first submit), finish times
   read from the job rows.
3. Cancel across replicas: two replicas on PostgreSQL; a ``medium.json`` job with a 60 s
   limit is submitted, and once it runs, ``CancelJob`` is sent to the *other* replica; the
   figure is the wall time of that call, which answers once the job has ended CANCELLED
   (``--cancels`` times).

    python benchmarks/service/jobs_throughput.py          # writes docs/benchmarks/service-jobs.md

The machine's load average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from placement.api.client import Client
from placement.api.server import jobs
from placement.api.server.probe import Server, start_server
from placement.api.server.store_throwaway import ThrowawayPostgres
from placement.api.server.stores import open_store
from placement.benchmarks.tables import rule

REPO = Path(__file__).resolve().parents[2]
INSTANCES = REPO / "instances" / "gpu"
OUT = REPO / "docs" / "benchmarks" / "service-jobs.md"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def store_latency(db: str, n: int) -> dict[str, float]:
    """Milliseconds per add, claim and result write (p50 / p99)."""
    store = open_store(db)
    result = os.urandom(2048)
    times: dict[str, list[float]] = {"add": [], "claim": [], "finish": []}
    ids = []
    for i in range(n):
        t = time.perf_counter()
        ids.append(store.add(b"x" * 4096, 1.0, f"j{i}", "gpu"))
        times["add"].append(time.perf_counter() - t)
    for _ in range(n):
        t = time.perf_counter()
        row = store.claim("bench", 60)
        times["claim"].append(time.perf_counter() - t)
        assert row is not None
    for job_id in ids:
        t = time.perf_counter()
        assert store.finish(job_id, "bench", jobs.SUCCEEDED, result)
        times["finish"].append(time.perf_counter() - t)
    store.close()
    out = {}
    for k, v in times.items():
        out[f"{k}_p50_ms"] = round(1000 * statistics.median(v), 3)
        out[f"{k}_p99_ms"] = round(1000 * pct(v, 0.99), 3)
    return out


def throughput(db: str, replicas: int, instance: Any, limit: float, n: int, work: Path) -> float:
    """Jobs per second through ``replicas`` replicas on ``db``."""
    servers: list[Server] = []
    try:
        with ThreadPoolExecutor(replicas) as ex:
            servers = list(
                ex.map(
                    lambda i: start_server(_folder(work, i), db=db, workers=1),
                    range(replicas),
                )
            )
        time.sleep(1.0)
        clients = [Client(s.target) for s in servers]
        t0 = time.time()
        with ThreadPoolExecutor(8) as ex:
            ids = list(
                ex.map(
                    lambda i: clients[i % replicas].submit_job(instance, time_limit_s=limit).job_id,
                    range(n),
                )
            )
        done = [clients[0].wait_job(i, timeout=900) for i in ids]
        assert all(j.state == jobs.SUCCEEDED for j in done), [j.error for j in done]
        last = max(j.finished_at for j in done)
        for c in clients:
            c.close()
        return n / (last - t0)
    finally:
        for s in servers:
            s.stop()


def cancel_across(url: str, medium: Any, n: int, work: Path) -> list[float]:
    """Seconds from CancelJob on one replica to the job, running on the other, ended."""
    servers: list[Server] = []
    try:
        with ThreadPoolExecutor(2) as ex:
            servers = list(
                ex.map(lambda i: start_server(_folder(work, i), db=url, workers=1), range(2))
            )
        out = []
        for _ in range(n):
            with Client(servers[0].target) as c:
                job_id = c.submit_job(medium, time_limit_s=60).job_id
            runner = None
            while runner is None:
                time.sleep(0.1)
                for srv in servers:
                    if any(job_id in x and '"state":"running"' in x for x in srv.lines):
                        runner = srv
            time.sleep(1.0)  # let the solve get going
            other = servers[1] if runner is servers[0] else servers[0]
            with Client(other.target) as c:
                t = time.perf_counter()
                job = c.cancel_job(job_id)
                out.append(time.perf_counter() - t)
            assert job.state == jobs.CANCELLED, job
        return out
    finally:
        for s in servers:
            s.stop()


def _folder(work: Path, i: int) -> Path:
    folder = work / f"r{i}-{time.monotonic_ns()}"
    folder.mkdir()
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store-jobs", type=int, default=500)
    ap.add_argument("--tiny", type=int, default=200)
    ap.add_argument("--medium", type=int, default=12)
    ap.add_argument("--cancels", type=int, default=10)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="placement-jobs-bench-"))
    tiny = json.loads((INSTANCES / "tiny.json").read_text())
    medium = json.loads((INSTANCES / "medium.json").read_text())
    cluster = ThrowawayPostgres(durable=True)
    cluster.start()
    try:
        latency = {
            "SQLite (WAL, synchronous=FULL)": store_latency(
                str(work / "lat.sqlite3"), args.store_jobs
            ),
            "PostgreSQL 127.0.0.1 (fsync on)": store_latency(
                cluster.new_database(), args.store_jobs
            ),
        }
        load_latency = os.getloadavg()
        print(json.dumps(latency, indent=1), "load", load_latency, flush=True)
        cancels = cancel_across(cluster.new_database(), medium, args.cancels, work)
        load_cancel = os.getloadavg()[0]
        print("cancel across replicas", cancels, flush=True)
        rows = []
        for label, db, counts in (
            ("SQLite", str(work / "tp.sqlite3"), (1,)),
            ("PostgreSQL", None, (1, 2, 3)),
        ):
            for r in counts:
                url = db or cluster.new_database()
                t = throughput(url, r, tiny, 2.0, args.tiny, work)
                url = db + f".{r}m" if db else cluster.new_database()
                m = throughput(url, r, medium, 1.0, args.medium, work)
                rows.append((label, r, t, m, os.getloadavg()[0]))
                print(label, r, f"tiny {t:.1f}/s medium {m:.2f}/s", flush=True)
    finally:
        cluster.remove()
    lines = [
        "# Asynchronous jobs: throughput by replicas, and the job store's latency",
        "",
        "Command: `python benchmarks/service/jobs_throughput.py "
        f"--store-jobs {args.store_jobs} --tiny {args.tiny} --medium {args.medium} "
        f"--cancels {args.cancels}`",
        "",
        "## The store's own latency (ms per operation, from one client process)",
        "",
        "| store | add p50 | add p99 | claim p50 | claim p99 | result write p50 | result write p99 |",
        rule(7),
    ]
    for name, v in latency.items():
        lines.append(
            f"| {name} | {v['add_p50_ms']} | {v['add_p99_ms']} | {v['claim_p50_ms']} | "
            f"{v['claim_p99_ms']} | {v['finish_p50_ms']} | {v['finish_p99_ms']} |"
        )
    lines += [
        "",
        f"Load average (1, 5, 15 min) after the latency part: {', '.join(f'{x:.2f}' for x in load_latency)}.",
        "",
        "## Throughput (jobs per second; replicas of one worker each, on one database)",
        "",
        f"| store | replicas | tiny jobs/s ({args.tiny} jobs) | medium jobs/s ({args.medium} jobs, 1 s limit) | load avg (1 min) |",
        rule(5),
    ]
    for label, r, t, m, load in rows:
        lines.append(f"| {label} | {r} | {t:.1f} | {m:.2f} | {load:.2f} |")
    lines += [
        "",
        "## Cancel across replicas",
        "",
        f"CancelJob sent to the replica not running the job, until the job has ended "
        f"CANCELLED ({len(cancels)} times): p50 {statistics.median(cancels):.3f} s, "
        f"max {max(cancels):.3f} s (load average {load_cancel:.2f}).",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
