"""``placement bench dispatch-bundle``: per-task dispatch, Byun et al.'s node bundling and
ours on a burst of short tasks beside long jobs, at several per-dispatch scheduler overheads.

Cases: one generated workload per overhead
(:func:`placement.models.dispatch.generate.generate_bundle`: short one-core tasks submitted
together at time 0, long multi-core jobs arriving over time, identical nodes). For each
heuristic (:mod:`placement.models.dispatch.bundling`): the short tasks' throughput (tasks per
time unit until the last one ends), the long jobs' mean wait (start - arrival), the makespan,
the total weighted flow time, the dispatches the scheduler made; and the bounds: the trace's
lower bound on the total flow time (own service plus the overhead, one-machine SRPT; valid
in bundle mode) and a lower bound on the short tasks' makespan (so an upper bound on their
throughput, :func:`short_makespan_bound`). Every schedule goes through the family's checker
(``invalid``).
"""

from __future__ import annotations

from typing import Any

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.dispatch.bound import lower_bound
from placement.models.dispatch.bundling import BUNDLING, shorts_of
from placement.models.dispatch.generate import generate_bundle

OVERHEADS = (0, 1, 10, 50)
"""Scheduler time units per dispatch (with 0.1 s units: 0, 0.1 s, 1 s, 5 s)."""


def cases_bundle(config: Any) -> list[dict[str, Any]]:
    """One case per overhead."""
    p = config.params
    tasks = 1_000 if config.quick else int(p.get("tasks", 5_000))
    return [
        {
            "tasks": tasks,
            "nodes": int(p.get("nodes", 16)),
            "cores": int(p.get("cores", 32)),
            "overhead": h,
            "seed": int(p.get("seed", 1)),
        }  # fmt: skip
        for h in OVERHEADS
    ]


def short_makespan_bound(instance: Any, shorts: list[int]) -> int:
    """No schedule ends the short tasks before this (so their throughput is at most
    tasks / this). Let ``W`` be their shortest services' sum, ``a`` their first arrival,
    ``h`` the overhead and ``c`` the most cores of a node. The scheduler's i-th launch is at
    ``a + i h`` at the earliest, and a dispatch (a task, or a bundle on one node) uses at
    most ``c`` cores from its start, so by time ``T`` the dispatches give at most
    ``c * sum_{i >= 1} (T - a - i h)^+`` core-time, and all the cores at most
    ``cores * (T - a - h)``; ``T`` must let both reach ``W`` and exceed ``a + h + max p``."""
    h = instance.scheduler_overhead
    first = min(instance.jobs[j].arrival for j in shorts)
    own = [min(instance.service[j][s] for s in instance.eligible[j]) for j in shorts]
    cores = sum(s.cores for s in instance.servers)
    widest = max(s.cores for s in instance.servers)
    work = sum(own)

    def enough(t: int) -> bool:
        span = t - first
        if h:
            k = (span - 1) // h  # launches i with i h < span
            by_dispatches = widest * (k * span - h * k * (k + 1) // 2)
        else:
            by_dispatches = work  # no scheduler limit
        return min(by_dispatches, cores * (span - h)) >= work

    lo = first + h + max(max(own), -(-work // cores))
    hi = lo
    while not enough(hi):
        hi *= 2
    while lo < hi:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def run_bundle(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every heuristic on the case's workload."""
    del config
    instance = generate_bundle(
        case["tasks"],
        case["nodes"],
        0.5,
        case["seed"],
        server_cores=case["cores"],
        scheduler_overhead=case["overhead"],
    )
    shorts = set(shorts_of(instance))
    longs = [j for j in range(len(instance.jobs)) if j not in shorts]
    base = {k: case[k] for k in ("tasks", "nodes", "cores", "overhead", "seed")}
    base["long_jobs"] = len(longs)
    short_end = short_makespan_bound(instance, sorted(shorts))
    rows = [
        {
            **base,
            "method": "lower bound",
            "objective": lower_bound(instance),
            "short_makespan": short_end,
            "short_throughput": round(len(shorts) / short_end, 4),
            "invalid": 0,
        }
    ]
    for name, heuristic in BUNDLING.items():
        checker = Rechecker("dispatch")
        solution = heuristic(instance)
        report = checker(instance, solution)
        ends = {
            j: solution.start[j] + instance.service[j][solution.server_of[j]]
            for j in range(len(instance.jobs))
        }
        last_short = max(ends[j] for j in shorts)
        bundles = {b for b in solution.bundle if b}
        dispatches = len(bundles) + sum(1 for b in solution.bundle if not b)
        rows.append(
            {
                **base,
                "method": name,
                "short_throughput": round(len(shorts) / last_short, 4),
                "short_makespan": last_short,
                "long_mean_wait": round(
                    sum(solution.start[j] - instance.jobs[j].arrival for j in longs)
                    / max(1, len(longs)),
                    1,
                ),
                "makespan": max(ends.values()),
                "objective": int(report.objective) if report.feasible else "",
                "dispatches": dispatches,
                "invalid": checker.invalid,
            }
        )
    return rows


def report_bundle(rows: list[dict[str, Any]], config: Any) -> str:
    """One table per overhead."""
    del config
    out = [
        "Short tasks: one-core tasks submitted together at time 0; long jobs: multi-core, "
        "arriving over time. The scheduler launches one dispatch at a time, `overhead` time "
        "units each. `per-task`: every job its own dispatch; `byun`: one whole-node bundle per "
        "node, tasks dealt to cores in turn (Byun et al., HPEC'21); `bundle-opt` (ours): the "
        "bundle count of least total flow time over 1..2x the nodes (and 3, 4, 8x), SPT or "
        "LPT inside. Throughput: short tasks per time unit until the last one ends. `lower "
        "bound`: on the short tasks' makespan (launches one overhead apart, each on at most "
        "one node, all cores at most: so a bound on their throughput) and on the total flow "
        "(own service plus the overhead, one-machine SRPT); it sees no long job.",
        "",
    ]
    for h in sorted({r["overhead"] for r in rows}):
        group = [r for r in rows if r["overhead"] == h]
        first = group[0]
        out += [
            f"### Overhead {h} per dispatch",
            "",
            f"{first['tasks']} short tasks and {first['long_jobs']} long jobs on "
            f"{first['nodes']} nodes of {first['cores']} cores, seed {first['seed']}.",
            "",
        ]
        out += markdown_table(
            ["method", "short throughput", "short makespan", "long mean wait", "makespan",
             "total flow", "dispatches", "invalid"],
            [
                [r["method"], r.get("short_throughput", ""), r.get("short_makespan", ""),
                 r.get("long_mean_wait", ""), r.get("makespan", ""), r.get("objective", ""),
                 r.get("dispatches", ""), r.get("invalid", 0)]
                for r in group
            ],
            "lrrrrrrr",
        )  # fmt: skip
        out.append("")
    return "\n".join(out)
