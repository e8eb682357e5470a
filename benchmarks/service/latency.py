"""The service's benchmark suite, ``placement bench service-latency``.

Starts a real ``placement serve`` process on loopback (2 workers) and measures, from a client
in the benchmark's process:

1. latency: p50 / p99 of sequential Solve calls on ``instances/gpu/tiny.json``;
2. throughput: tiny solves per second with several concurrent client threads;
3. deadline adherence: solves of ``instances/gpu/medium.json`` (which never finishes early:
   the exact backend runs to its limit) with gRPC deadlines drawn uniformly from 50 ms to 2 s;
   answered = an OK response received within the deadline + 100 ms;
4. memory: the server's RSS (and its workers') at rest, then after N tiny requests;
5. cancellation: from cancelling a SolveStream to its worker no longer using CPU (50 ms
   sampling, so the figure is at most 50 ms pessimistic).

Every solution the server returned in (1) and (3) is re-checked by the GPU family's checker
after the timed part.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc

from placement.api.client import Client, instance_message, to_result
from placement.api.files import read_instance
from placement.api.server.probe import (
    busy_worker,
    rss_mib,
    settle,
    start_server,
    stops_computing,
    worker_pids,
)
from placement.benchmarks.runner import INSTANCES, recheck
from placement.benchmarks.tables import rule
from placement.solver.schema.v1 import service_pb2

GPU_INSTANCES = INSTANCES / "gpu"
"""The bundled GPU instances (a source checkout; the wheel does not carry them)."""

WORKERS = 2
FULL = {"latency": 1000, "throughput": 4000, "deadlines": 1000, "memory": 10000, "cancels": 20}
QUICK = {"latency": 50, "throughput": 100, "deadlines": 20, "memory": 200, "cancels": 2}


def cases(config: Any) -> list[dict[str, Any]]:
    """One case: every measurement shares one server."""
    return [{"case": "service", **(QUICK if config.quick else FULL)}]


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
    times, statuses, responses = [], {}, []
    for _ in range(n):
        t0 = time.perf_counter()
        resp = client.stub.Solve(req)
        times.append(time.perf_counter() - t0)
        responses.append(resp)
        name = service_pb2.SolutionStatus.Name(resp.status)
        statuses[name] = statuses.get(name, 0) + 1
    return {
        "responses": responses,
        "requests": n,
        "p50_ms": 1e3 * pct(times, 0.50),
        "p99_ms": 1e3 * pct(times, 0.99),
        "mean_ms": 1e3 * statistics.fmean(times),
        "statuses": statuses,
        "where_ms": where_the_time_goes(times, responses),
    }


def where_the_time_goes(times: list[float], responses: list[Any]) -> dict[str, float]:
    """Median milliseconds per part of a request, end to end: the solve's phases as the
    worker timed them (``greedy``, the exact phase, ``explain``; ``total`` is the whole
    solve), the server's ``queue`` wait and ``service`` (the call in the server: admission,
    queue, the solve in a worker, the answer back from it), and what lies outside the server
    (``client+grpc``: the client's round trip minus ``service``: serialising, loopback,
    gRPC's threads)."""
    parts: dict[str, list[float]] = {}
    for resp in responses:
        for name, seconds in resp.phase_times_s.items():
            parts.setdefault(name, []).append(1e3 * seconds)
    out = {name: statistics.median(values) for name, values in parts.items()}
    service = [1e3 * r.phase_times_s.get("service", 0.0) for r in responses]
    if service and len(service) == len(times):
        out["worker<->server"] = statistics.median(
            1e3 * r.phase_times_s.get("service", 0.0)
            - 1e3 * r.phase_times_s.get("queue", 0.0)
            - 1e3 * r.phase_times_s.get("total", 0.0)
            for r in responses
        )
        out["client+grpc"] = statistics.median(
            1e3 * t - s for t, s in zip(times, service, strict=True)
        )
    out["round trip"] = 1e3 * pct(times, 0.50)
    return {name: round(value, 3) for name, value in out.items()}


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
    responses: list[Any] = []
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
                    resp = c.stub.Solve(req, timeout=d)
                    code = "OK"
                    with lock:
                        responses.append(resp)
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
        "responses": responses,
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


def recheck_responses(responses: list[Any], instance_file: Path) -> tuple[int, int]:
    """``(checked, invalid)``: every returned solution through the GPU family's checker."""

    loaded = read_instance(instance_file)
    checked = invalid = 0
    for resp in responses:
        result = to_result(resp, loaded.family, loaded.instance)
        if result.solution is not None:
            checked += 1
            invalid += recheck(loaded.family_name, loaded.instance, result.solution)[1]
    return checked, invalid


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Start a server, measure, stop it; one row per measure."""
    tiny_file, medium_file = GPU_INSTANCES / "tiny.json", GPU_INSTANCES / "medium.json"
    tiny = instance_message(json.loads(tiny_file.read_text()))
    medium = instance_message(json.loads(medium_file.read_text()))
    with tempfile.TemporaryDirectory(prefix="placement-bench-") as tmp:
        server = start_server(Path(tmp), "--queue", "64", "--db", ":memory:", workers=WORKERS)
        try:
            with Client(server.target) as client:
                lat = latency(client, tiny, case["latency"])
                thr = throughput(server.target, tiny, case["throughput"], 2 * WORKERS)
                dl = deadlines(server.target, medium, case["deadlines"], WORKERS, seed=1)
                mem = memory(client, server.proc.pid, tiny, case["memory"])
                can = cancellation(server, medium, case["cancels"], WORKERS)
        finally:
            server.stop()
    lat_checked, lat_invalid = recheck_responses(lat.pop("responses"), tiny_file)
    dl_checked, dl_invalid = recheck_responses(dl.pop("responses"), medium_file)
    return [
        _row(
            "latency p50, tiny.json", "<= 10 ms", lat["p50_ms"], "ms", lat, lat_checked, lat_invalid
        ),
        _row("latency p99, tiny.json", "<= 50 ms", lat["p99_ms"], "ms", lat, 0, 0),
        _row("throughput, tiny solves", ">= 200/s", thr["solves_per_s"], "1/s", thr, 0, 0),
        _row(
            "deadline adherence, medium.json, deadlines U(50 ms, 2 s)",
            ">= 99.9 % answered by deadline + 100 ms",
            100 * dl["answered_share"],
            "%",
            dl,
            dl_checked,
            dl_invalid,
        ),
        _row(
            "server RSS growth after the memory run",
            "<= +10 %",
            100 * mem["server_growth"],
            "%",
            mem,
            0,
            0,
        ),
        _row("cancellation -> worker idle, max", "<= 1 s", can["max_s"], "s", can, 0, 0),
    ]


def _row(
    measure: str,
    target: str,
    value: float,
    unit: str,
    detail: dict[str, Any],
    checked: int,
    invalid: int,
) -> dict[str, Any]:
    return {
        "measure": measure,
        "target": target,
        "value": round(value, 3),
        "unit": unit,
        "solutions_checked": checked,
        "invalid": invalid,
        "detail": json.dumps(detail, sort_keys=True),
    }


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """The measures against their targets."""
    lines = [
        f"A real `placement serve` with {WORKERS} solve workers on loopback; the client runs on "
        "the same machine, so its threads compete with the solvers. Solutions re-checked: the "
        "latency and deadline runs' (every returned solution).",
        "",
        "| measure | target | result | solutions re-checked (invalid) | detail |",
        rule(5),
    ]
    for r in rows:
        detail = json.loads(r["detail"])
        shown = {k: v for k, v in detail.items() if not isinstance(v, dict) or k == "codes"}
        lines.append(
            f"| {r['measure']} | {r['target']} | {r['value']:g} {r['unit']} | "
            f"{r['solutions_checked']} ({r['invalid']}) | `{json.dumps(shown)}` |"
        )
    where = next(
        (json.loads(r["detail"]).get("where_ms") for r in rows if "p50" in r["measure"]), None
    )
    if where:
        lines += [
            "",
            "## Where the milliseconds of a tiny request go",
            "",
            "Medians over the latency run, from the phase times each answer carries "
            "(`phase_times_s`) and the client's clock. `total` is the solve in the worker "
            "(`greedy` + the exact phase + `explain` + bookkeeping); `service` is the call in "
            "the server (admission, `queue`, the solve, the answer back from the worker); "
            "`worker<->server` = `service` - `queue` - `total`; `client+grpc` = round trip - "
            "`service` (serialising, loopback, gRPC's threads on both sides).",
            "",
            "| part | median ms |",
            rule(2),
            *(f"| {name} | {where[name]:g} |" for name in _in_request_order(where)),
            "",
            "What was cut (issue 17): the exact phase of tiny.json is CP-SAT on the two "
            "tiers the bound does not settle (the first tier meets the capacity bound and "
            "is proved without a search). Starting CP-SAT's portfolio (workers, presolve, "
            "probing, symmetry, linearization) took 3-12 ms per tier for models of 35 and 72 "
            "variables; a model of at most 2,000 variables now first gets one worker without "
            "those for at most 50 ms, and only a proof ends it there (about 1 ms per tier). "
            "Where the heuristic meets the quick bound and the objective has one tier (dag, "
            "partition, entanglement), no exact backend starts at all.",
        ]
    return "\n".join(lines) + "\n"


def _in_request_order(where: dict[str, float]) -> list[str]:
    """The parts of ``where`` as a request meets them (the solve's phases in between)."""
    first, last = ["greedy"], ["explain", "total", "queue", "worker<->server", "service"]
    last += ["client+grpc", "round trip"]
    middle = [k for k in where if k not in first + last]
    return [k for k in first + middle + last if k in where]
