"""Benchmark of the gRPC service: latency, throughput, deadline adherence, memory.

Starts a real ``placement serve`` process on loopback (2 workers by default) and measures,
from a client in this process:

1. latency: p50 / p99 of sequential Solve calls on ``instances/gpu/tiny.json``;
2. throughput: tiny solves per second with several concurrent client threads;
3. deadline adherence: solves of ``instances/gpu/medium.json`` (which never finishes early:
   the exact backend runs to its limit) with gRPC deadlines drawn uniformly from 50 ms to 2 s;
   answered = an OK response received within the deadline + 100 ms;
4. memory: the server's RSS (and its workers') at rest, then after N tiny requests;
5. cancellation: from cancelling a SolveStream to its worker no longer using CPU (50 ms
   sampling, so the figure is at most 50 ms pessimistic).

    python benchmarks/service_latency.py                      # the full run (~12 min)
    python benchmarks/service_latency.py --quick              # a smoke run (~1 min)

Writes docs/benchmarks/service-latency.{md,json} (``--out DIR`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from placement.api.client import Client, instance_message  # noqa: E402
from placement.api.v1 import service_pb2  # noqa: E402
from tests.service_harness import start_server, worker_pids  # noqa: E402


def rss_mib(pid: int) -> float:
    """Resident set size of a process, MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def solve_request(instance: Any, time_limit: float) -> Any:
    return service_pb2.SolveRequest(
        instance=instance, parameters=service_pb2.SolveParameters(time_limit_s=time_limit)
    )


def latency(client: Client, tiny: Any, n: int) -> dict[str, Any]:
    req = solve_request(tiny, 5)
    for _ in range(20):  # warm the channel and both workers
        client.stub.Solve(req)
    times, statuses = [], {}
    for _ in range(n):
        t0 = time.perf_counter()
        resp = client.stub.Solve(req)
        times.append(time.perf_counter() - t0)
        name = service_pb2.SolutionStatus.Name(resp.status)
        statuses[name] = statuses.get(name, 0) + 1
    return {
        "requests": n,
        "p50_ms": 1e3 * pct(times, 0.50),
        "p99_ms": 1e3 * pct(times, 0.99),
        "mean_ms": 1e3 * statistics.fmean(times),
        "statuses": statuses,
    }


def throughput(target: str, tiny: Any, n: int, threads: int) -> dict[str, Any]:
    req = solve_request(tiny, 5)
    codes: dict[str, int] = {}
    lock = threading.Lock()

    def work(count: int) -> None:
        with Client(target) as c:
            for _ in range(count):
                try:
                    c.stub.Solve(req, timeout=30)
                    code = "OK"
                except grpc.RpcError as exc:
                    code = exc.code().name
                with lock:
                    codes[code] = codes.get(code, 0) + 1

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, [n // threads] * threads))
    elapsed = time.perf_counter() - t0
    done = codes.get("OK", 0)
    return {
        "requests": sum(codes.values()),
        "client_threads": threads,
        "seconds": elapsed,
        "solves_per_s": done / elapsed,
        "codes": codes,
    }


def deadlines(target: str, medium: Any, n: int, threads: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    plan = [rng.uniform(0.05, 2.0) for _ in range(n)]
    req = solve_request(medium, 60)  # the deadline, not the limit, bounds every solve
    rows: list[tuple[float, float, str]] = []
    lock = threading.Lock()

    def work(chunk: list[float]) -> None:
        with Client(target) as c:
            for d in chunk:
                t0 = time.perf_counter()
                try:
                    # The gRPC deadline is the orchestrator's deadline d, and the only thing
                    # that tells the server how long it has. gRPC cuts off any answer later
                    # than d, so "answered" means an OK response (checked against d + 100 ms
                    # on the client's clock as well).
                    c.stub.Solve(req, timeout=d)
                    code = "OK"
                except grpc.RpcError as exc:
                    code = exc.code().name
                with lock:
                    rows.append((d, time.perf_counter() - t0, code))

    chunks = [plan[i::threads] for i in range(threads)]
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, chunks))
    answered = [r for r in rows if r[2] == "OK" and r[1] <= r[0] + 0.1]
    late = [r[1] - r[0] for r in rows if r[2] == "OK"]
    codes: dict[str, int] = {}
    for r in rows:
        codes[r[2]] = codes.get(r[2], 0) + 1
    return {
        "requests": len(rows),
        "client_threads": threads,
        "answered_in_time": len(answered),
        "answered_share": len(answered) / len(rows),
        "codes": codes,
        "margin_ms_p50": 1e3 * -pct(late, 0.5) if late else None,
        "margin_ms_min": 1e3 * -max(late) if late else None,
    }


def memory(client: Client, server_pid: int, tiny: Any, n: int) -> dict[str, Any]:
    req = solve_request(tiny, 5)

    def snapshot() -> dict[str, float]:
        workers = worker_pids(server_pid)
        return {
            "server_mib": rss_mib(server_pid),
            "workers_mib": sum(rss_mib(p) for p in workers),
        }

    for _ in range(50):
        client.stub.Solve(req)
    rest = snapshot()
    for _ in range(n):
        client.stub.Solve(req)
    after = snapshot()
    return {
        "requests": n,
        "at_rest": rest,
        "after": after,
        "server_growth": after["server_mib"] / rest["server_mib"] - 1,
        "workers_growth": after["workers_mib"] / rest["workers_mib"] - 1,
    }


def cancellation(server: Any, medium: Any, n: int, workers: int) -> dict[str, Any]:
    """Seconds from cancelling a SolveStream to its worker no longer computing."""
    from tests.service_harness import busy_worker, settle, stops_computing

    req = solve_request(medium, 60)
    delays = []
    with Client(server.target) as c:
        for _ in range(n):
            settle(server, workers)  # every worker warm and idle: the busy one is ours
            stream = c.stub.SolveStream(req)
            next(stream)  # the first incumbent: the solve is running
            try:
                pid = busy_worker(server, timeout=5)
            except RuntimeError:  # the solve ended before we looked: not a sample
                stream.cancel()
                continue
            stream.cancel()
            delay = stops_computing(pid, 30)
            delays.append(30.0 if delay is None else delay)
    return {"cancels": len(delays), "p50_s": pct(delays, 0.5), "max_s": max(delays)}


def markdown(results: dict[str, Any], command: str) -> str:
    lat, thr, dl, mem, can = (
        results[k] for k in ("latency", "throughput", "deadlines", "memory", "cancellation")
    )
    env = results["environment"]
    lines = [
        "# Service benchmark",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {env['cpus']} cores, Python {env['python']}, {env['workers']} solve "
        f"workers; load average before the run {env['load_before']}. Client and server on "
        "the same machine (loopback), so the client's threads compete with the solvers.",
        "",
        "| measure | target | result |",
        "|---|---|---|",
        f"| latency of `tiny.json`, p50 | 10 ms | {lat['p50_ms']:.1f} ms |",
        f"| latency of `tiny.json`, p99 | 50 ms | {lat['p99_ms']:.1f} ms |",
        f"| throughput of tiny solves ({thr['client_threads']} client threads) | >= 200/s | "
        f"{thr['solves_per_s']:.0f}/s ({thr['requests']} requests, codes {thr['codes']}) |",
        f"| deadline adherence: answered within deadline + 100 ms, deadlines U(50 ms, 2 s) on "
        f"`medium.json` | 99.9% | {100 * dl['answered_share']:.2f}% ({dl['answered_in_time']} "
        f"of {dl['requests']}; codes {dl['codes']}) |",
        f"| server RSS at rest -> after {mem['requests']} requests | growth <= 10% | "
        f"{mem['at_rest']['server_mib']:.1f} -> {mem['after']['server_mib']:.1f} MiB "
        f"({100 * mem['server_growth']:+.1f}%) |",
        f"| workers' RSS (all) at rest -> after | | {mem['at_rest']['workers_mib']:.1f} -> "
        f"{mem['after']['workers_mib']:.1f} MiB ({100 * mem['workers_growth']:+.1f}%) |",
        f"| cancellation: SolveStream cancelled -> its worker idle ({can['cancels']} times) | "
        f"<= 1 s | p50 {can['p50_s']:.2f} s, max {can['max_s']:.2f} s |",
        "",
        f"Latency statuses: {lat['statuses']}. Deadline runs: median time left at the "
        f"answer {dl['margin_ms_p50']:.1f} ms, smallest {dl['margin_ms_min']:.1f} ms."
        if dl["margin_ms_p50"] is not None
        else "",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts (a smoke run)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    n_lat, n_thr, n_dl, n_mem, n_can = (
        (100, 200, 40, 500, 3) if args.quick else (1000, 4000, 1000, 10000, 20)
    )
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / f"placement-bench-{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()
    server = start_server(tmp, "--queue", "64", "--db", ":memory:", workers=args.workers)
    tiny = instance_message(json.loads((REPO / "instances/gpu/tiny.json").read_text()))
    medium = instance_message(json.loads((REPO / "instances/gpu/medium.json").read_text()))
    results: dict[str, Any] = {
        "environment": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "workers": args.workers,
            "load_before": " / ".join(f"{x:.2f}" for x in load),
        }
    }
    try:
        with Client(server.target) as client:
            print("latency ...", file=sys.stderr)
            results["latency"] = latency(client, tiny, n_lat)
            print("throughput ...", file=sys.stderr)
            results["throughput"] = throughput(server.target, tiny, n_thr, 2 * args.workers)
            print("deadlines ...", file=sys.stderr)
            results["deadlines"] = deadlines(server.target, medium, n_dl, args.workers, args.seed)
            print("memory ...", file=sys.stderr)
            results["memory"] = memory(client, server.proc.pid, tiny, n_mem)
            print("cancellation ...", file=sys.stderr)
            results["cancellation"] = cancellation(server, medium, n_can, args.workers)
    finally:
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
    command = "python benchmarks/service_latency.py" + (" --quick" if args.quick else "")
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "service-latency-quick" if args.quick else "service-latency"
    (args.out / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    text = markdown(results, command)
    (args.out / f"{stem}.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
