"""Yildiz et al.'s first finding: at a fixed total compute budget, the mean response time has
a minimum over the number of servers.

"The Merit of Simple Policies" (Yildiz et al., 2025) splits a fixed total speed over ``m``
servers: few fast servers make small jobs wait behind big ones (FCFS), many slow ones stretch
every job. Here each trace's jobs (their arrivals and sizes; cores set to 1, so every job fits
every server) go to ``m`` single-core servers of speed ``S / m`` for ``m`` in
:data:`SERVER_COUNTS`, with ``S`` set so the offered load (the trace's work over its span) is
:data:`LOAD` (:func:`total_speed_for`; a synthetic trace made for 8 servers at load 0.9 gets
``S`` close to 8). Policies: RR, JIQ,
LWL, ECT (earliest completion) and the two-stage peer (Yildiz's second finding: its gain
over the single-stage policies at the same m), each replay checked by the family's checker.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.dispatch.instance import DispatchInstance, DispatchJob, DispatchServer
from placement.models.dispatch.sim import make_policy, replay

SERVER_COUNTS = (1, 2, 4, 8, 16, 32, 64)
SWEEP_POLICIES = ("rr", "jiq", "lwl", "ect", "two-stage")
LOAD = 0.9


def total_speed_for(instance: DispatchInstance, load: float) -> Fraction:
    """The total speed at which the trace's work arrives at offered ``load``, rounded to a
    multiple of 1/64 so every ``m`` of :data:`SERVER_COUNTS` gets an exact speed."""
    arrivals = [j.arrival for j in instance.jobs]
    span = max(1, max(arrivals) - min(arrivals))
    work = sum(j.size for j in instance.jobs)
    return max(Fraction(1, 64), Fraction(round(64 * work / (load * span)), 64))


def split(instance: DispatchInstance, servers: int, total: Fraction) -> DispatchInstance:
    """The trace's jobs, single-core, on ``servers`` single-core servers of speed
    ``total / servers``."""
    speed = total / servers
    return DispatchInstance(
        [DispatchServer(f"s{k}", 1, float(speed)) for k in range(servers)],
        [DispatchJob(j.name, j.arrival, j.size, 1, 0, j.weight) for j in instance.jobs],
        name=f"{instance.name}-split{servers}",
    )


def run_sweep(base: dict[str, Any], instance: DispatchInstance, total: Fraction) -> list[dict]:
    """A row per (server count, policy): mean response and slowdown, checked."""
    rows = []
    for m in SERVER_COUNTS:
        inst = split(instance, m, total)
        for name in SWEEP_POLICIES:
            checker = Rechecker("dispatch")
            r = replay(inst, make_policy(name))
            report = checker(inst, r.solution)
            rows.append(
                {
                    **base,
                    "jobs": len(inst.jobs),
                    "servers": m,
                    "speed": round(float(total / m), 4),
                    "policy": name,
                    "mean_response": round(r.figures["mean_response"], 3),
                    "mean_slowdown": round(r.figures["mean_slowdown"], 3),
                    "invalid": 0 if report.feasible else 1,
                }
            )
    return rows


def sweep_table(rows: list[dict[str, Any]]) -> list[str]:
    """Mean response by server count (rows) and policy (columns); the least per policy
    in bold."""
    lines = [
        f"### {rows[0]['sweep']}: a fixed total speed over m servers (Yildiz et al.)",
        "",
        f"{rows[0]['jobs']} jobs, cores set to 1; total speed {rows[0]['total_speed']} "
        f"(offered load {rows[0]['load']}); m single-core servers of speed total / m. "
        "Mean response time; the least of each policy in bold.",
        "",
    ]
    best = {
        p: min(float(r["mean_response"]) for r in rows if r["policy"] == p) for p in SWEEP_POLICIES
    }
    table = []
    for m in SERVER_COUNTS:
        cells: list[Any] = [m, next(r["speed"] for r in rows if r["servers"] == m)]
        for p in SWEEP_POLICIES:
            v = next(
                float(r["mean_response"]) for r in rows if r["servers"] == m and r["policy"] == p
            )
            cells.append(f"**{v:.1f}**" if v == best[p] else f"{v:.1f}")
        table.append(cells)
    lines += markdown_table(
        ["servers", "speed each", *SWEEP_POLICIES], table, "rr" + "r" * len(SWEEP_POLICIES)
    )
    lines.append("")
    return lines


__all__ = ["LOAD", "SERVER_COUNTS", "run_sweep", "split", "sweep_table", "total_speed_for"]
