"""Overload: drive a real server at twice its measured capacity and see what breaks.

1. Start ``placement serve`` (2 workers, queue 64) on loopback.
2. Capacity: closed loop, ``--threads`` clients sending ``instances/gpu/tiny.json`` solves for
   ``--measure-s`` seconds; capacity = OK answers per second.
3. Overload: an open-loop generator sends ``--factor`` x capacity requests per second for
   ``--duration-s`` seconds, each with a ``--deadline-s`` gRPC deadline, never waiting for
   answers. Every outcome is counted by status code; an OK answer must arrive within its
   deadline; the server's memory (server + workers RSS) is sampled every second.

The promise: no error other than RESOURCE_EXHAUSTED, every admitted request answered within
its deadline, memory stable (no growth trend). Writes the figures as JSON to ``--out``.

    python benchmarks/reliability/overload.py                # 60 s at 2x capacity
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from placement.api.client import Client, instance_message  # noqa: E402
from placement.api.server.probe import rss_mib, start_server, worker_pids  # noqa: E402
from placement.solver.schema.v1 import service_pb2  # noqa: E402


def request(doc: dict) -> service_pb2.SolveRequest:
    req = service_pb2.SolveRequest(instance=instance_message(doc))
    req.parameters.time_limit_s = 1.0
    return req


def measure_capacity(stub, req, threads: int, seconds: float) -> float:
    done = Counter()
    end = time.monotonic() + seconds

    def loop() -> None:
        while time.monotonic() < end:
            try:
                stub.Solve(req, timeout=10)
                done["ok"] += 1
            except grpc.RpcError as exc:
                done[exc.code().name] += 1

    ts = [threading.Thread(target=loop) for _ in range(threads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return done["ok"] / (time.monotonic() - t0)


def overload(stub, req, rate: float, seconds: float, deadline_s: float, server) -> dict:
    codes: Counter[str] = Counter()
    late: list[float] = []
    latencies: list[float] = []
    lock = threading.Lock()
    pending = threading.Semaphore(0)
    sent = 0
    memory: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample() -> None:
        t0 = time.monotonic()
        while not stop.wait(1.0):
            pids = [server.proc.pid, *worker_pids(server.proc.pid)]
            memory.append((round(time.monotonic() - t0, 1), round(sum(map(rss_mib, pids)), 1)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    def done(fut, start: float) -> None:
        elapsed = time.monotonic() - start
        try:
            fut.result()
            code = "OK"
        except grpc.RpcError as exc:
            code = exc.code().name
        with lock:
            codes[code] += 1
            if code == "OK":
                latencies.append(elapsed)
                if elapsed > deadline_s:
                    late.append(elapsed)
        pending.release()

    t0 = time.monotonic()
    interval = 1.0 / rate
    next_at = t0
    while True:
        now = time.monotonic()
        if now - t0 >= seconds:
            break
        if now < next_at:
            time.sleep(min(next_at - now, 0.005))
            continue
        start = time.monotonic()
        fut = stub.Solve.future(req, timeout=deadline_s)
        fut.add_done_callback(lambda f, s=start: done(f, s))
        sent += 1
        next_at += interval
    offered_s = time.monotonic() - t0
    for _ in range(sent):
        pending.acquire(timeout=deadline_s + 30)
    stop.set()
    sampler.join()
    latencies.sort()

    def q(p: float) -> float | None:
        return (
            round(latencies[min(len(latencies) - 1, int(p * len(latencies)))], 4)
            if latencies
            else None
        )

    third = max(1, len(memory) // 3)
    return dict(
        sent=sent,
        offered_rate=round(sent / offered_s, 1),
        codes=dict(codes),
        ok_rate=round(codes["OK"] / offered_s, 1),
        late_ok=len(late),
        latency_ok_p50_s=q(0.5),
        latency_ok_p99_s=q(0.99),
        latency_ok_max_s=q(1.0),
        memory_mib=memory,
        memory_first_third_mean=round(sum(m for _, m in memory[:third]) / third, 1),
        memory_last_third_mean=round(sum(m for _, m in memory[-third:]) / third, 1),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--queue", type=int, default=64)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--measure-s", type=float, default=15.0)
    ap.add_argument("--factor", type=float, default=2.0)
    ap.add_argument("--duration-s", type=float, default=60.0)
    ap.add_argument("--deadline-s", type=float, default=5.0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "overload.json"))
    args = ap.parse_args()
    doc = json.loads((REPO / "instances" / "gpu" / "tiny.json").read_text())
    req = request(doc)
    tmp = Path(tempfile.mkdtemp(prefix="placement-overload-"))
    load_before = os.getloadavg()
    server = start_server(tmp, "--queue", str(args.queue), workers=args.workers)
    try:
        with Client(server.target) as c:
            for _ in range(10):
                c.stub.Solve(req, timeout=30)  # warm
            capacity = measure_capacity(c.stub, req, args.threads, args.measure_s)
            print(f"capacity {capacity:.1f} solves/s", flush=True)
            result = overload(
                c.stub, req, args.factor * capacity, args.duration_s, args.deadline_s, server
            )
            healthy = c.health() == "SERVING"
            after = c.stub.Solve(req, timeout=30).status == service_pb2.SOLUTION_STATUS_OPTIMAL
    finally:
        server.stop()
    errors = {k: v for k, v in result["codes"].items() if k not in ("OK", "RESOURCE_EXHAUSTED")}
    summary = dict(
        command="python benchmarks/reliability/overload.py " + " ".join(sys.argv[1:]),
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        loadavg_before=[round(x, 2) for x in load_before],
        loadavg_after=[round(x, 2) for x in os.getloadavg()],
        cpus=os.cpu_count(),
        workers=args.workers,
        queue=args.queue,
        deadline_s=args.deadline_s,
        capacity_solves_per_s=round(capacity, 1),
        factor=args.factor,
        duration_s=args.duration_s,
        **result,
        other_errors=errors,
        health_after="SERVING" if healthy else "NOT SERVING",
        solves_after=after,
        promise_kept=not errors and result["late_ok"] == 0 and healthy and after,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1) + "\n")
    shown = {k: v for k, v in summary.items() if k != "memory_mib"}
    print(json.dumps(shown, indent=1))
    return 0 if summary["promise_kept"] else 1


if __name__ == "__main__":
    sys.exit(main())
