"""Independent checker of dispatch schedules.

It imports no heuristic, no encoding and not :mod:`.schedule`: it recomputes every job's
service time (``ceil(size / speed) + overhead``, exact rationals), end and response from the
instance's fields, and checks, in ``immediate_dispatch`` mode:

* every job is served exactly once, on a server of the instance whose cores it fits;
* no job starts before it arrives (integer starts);
* on every server, jobs start in FCFS order (arrival, ties by position in the instance),
  except in ``backfill`` mode, where a server may start its jobs in any order;
* on every server the cores of the jobs running at any moment never exceed its cores.

Objective (one tier, min): ``total_weighted_flow_time`` = sum of ``weight * (end - arrival)``.
The mean response, mean slowdown, p99 response, makespan and missed deadlines are reported in
the solution message.

In ``budget`` mode (a parameter sweep, Nimrod/G) a server may start its jobs in any order,
and two more rules hold: the makespan (the latest end) is at most the instance's deadline and
the total cost (sum of ``price * cores * service time``, exact integers) at most its budget
(each when set). The objective tiers are ``cost``, ``makespan`` or ``cost`` then
``makespan`` (``BUDGET_TIERS``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from placement.models.dispatch.instance import (
    BACKFILL,
    BUDGET,
    BUDGET_TIERS,
    BUNDLE,
    OBJECTIVE,
    DispatchInstance,
    DispatchSolution,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import dispatch_pb2 as pb


def _service(instance: DispatchInstance, job: int, server: int) -> int:
    s = instance.servers[server]
    return math.ceil(Fraction(instance.jobs[job].size) / Fraction(s.speed)) + s.dispatch_overhead


def _tiers(instance: DispatchInstance) -> tuple[str, ...]:
    if instance.mode == BUDGET:
        return BUDGET_TIERS[instance.budget_objective]
    return (OBJECTIVE,)


def _infeasible(instance: DispatchInstance, violations: list[str]) -> CheckReport:
    tiers = _tiers(instance)
    return CheckReport(False, violations, dict.fromkeys(tiers, float("inf")), ("min",) * len(tiers))


def _cost(instance: DispatchInstance, job: int, server: int) -> int:
    """price * cores * service time, exact (prices are integers in budget mode)."""
    price = Fraction(instance.servers[server].price)
    return round(price * instance.jobs[job].cores * _service(instance, job, server))


def _budget_report(instance: DispatchInstance, solution: DispatchSolution) -> CheckReport:
    """The deadline and budget rules and the tiers of a schedule that passed the rest."""
    makespan = max(
        (solution.start[j] + _service(instance, j, s) for j, s in enumerate(solution.server_of)),
        default=0,
    )
    cost = sum(_cost(instance, j, s) for j, s in enumerate(solution.server_of))
    violations = []
    if instance.deadline and makespan > instance.deadline:
        violations.append(
            f"makespan {makespan} is past the deadline {instance.deadline} by "
            f"{makespan - instance.deadline}"
        )
    if instance.budget and cost > instance.budget:
        violations.append(
            f"cost {cost} is over the budget {instance.budget} by {cost - instance.budget}"
        )
    if violations:
        return _infeasible(instance, violations)
    values = {"cost": float(cost), "makespan": float(makespan)}
    tiers = _tiers(instance)
    return CheckReport(True, [], {t: values[t] for t in tiers}, ("min",) * len(tiers))


def _bundle_violations(instance: DispatchInstance, solution: DispatchSolution) -> list[str]:
    """Bundle mode's rules: a bundle on one server holds it alone from its first start to
    its last end; the scheduler launches dispatches one at a time in start order, each
    ``scheduler_overhead`` after the previous launch and after its last job arrived."""
    names = solution.bundle or ("",) * len(instance.jobs)
    if len(names) != len(instance.jobs):
        return [f"{len(names)} bundle names for {len(instance.jobs)} jobs"]
    groups: dict[str, list[int]] = {}
    dispatches = []  # (start, release, label)
    for j, name in enumerate(names):
        if name:
            groups.setdefault(name, []).append(j)
        else:
            job = instance.jobs[j]
            dispatches.append((solution.start[j], job.arrival, f"job {job.name!r}"))
    violations = []
    for name, jobs in sorted(groups.items()):
        servers = {solution.server_of[j] for j in jobs}
        if len(servers) > 1:
            violations.append(f"bundle {name!r} spans {len(servers)} servers")
            continue
        (s,) = servers
        first = min(solution.start[j] for j in jobs)
        last = max(solution.start[j] + _service(instance, j, s) for j in jobs)
        for i, other in enumerate(names):
            if other != name and solution.server_of[i] == s:
                begin, end = solution.start[i], solution.start[i] + _service(instance, i, s)
                if begin < last and end > first:
                    violations.append(
                        f"job {instance.jobs[i].name!r} runs on {instance.servers[s].name!r} "
                        f"in [{begin}, {end}) inside bundle {name!r}'s whole-node hold "
                        f"[{first}, {last})"
                    )
                    break
        release = max(instance.jobs[j].arrival for j in jobs)
        dispatches.append((first, release, f"bundle {name!r}"))
    launched = 0
    for start, release, label in sorted(dispatches):
        launched = max(launched, release) + instance.scheduler_overhead
        if start < launched:
            violations.append(
                f"{label} starts at {start}, before the scheduler can launch it ({launched}: "
                f"{instance.scheduler_overhead} per dispatch, in start order)"
            )
            break
    return violations


def check(instance: DispatchInstance, solution: DispatchSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list the violations; compute the objective."""
    if not isinstance(solution, DispatchSolution):
        return _infeasible(instance, [f"not a DispatchSolution: {type(solution).__name__}"])
    n, m = len(instance.jobs), len(instance.servers)
    if len(solution.server_of) != n or len(solution.start) != n:
        return _infeasible(
            instance,
            [f"{len(solution.server_of)} servers, {len(solution.start)} starts for {n} jobs"],
        )
    violations: list[str] = []
    on: list[list[int]] = [[] for _ in range(m)]
    for j, (job, s, t) in enumerate(
        zip(instance.jobs, solution.server_of, solution.start, strict=True)
    ):
        if not (isinstance(s, int) and 0 <= s < m):
            violations.append(f"job {job.name!r} is not served ({s!r})")
            continue
        if not isinstance(t, int) or isinstance(t, bool):
            violations.append(f"job {job.name!r}: start {t!r} is not an integer")
            continue
        if job.cores > instance.servers[s].cores:
            violations.append(
                f"job {job.name!r} needs {job.cores} cores, server "
                f"{instance.servers[s].name!r} has {instance.servers[s].cores}"
            )
        if t < job.arrival:
            violations.append(f"job {job.name!r} starts at {t} before its arrival {job.arrival}")
        on[s].append(j)
    if violations:
        return _infeasible(instance, violations)
    for s, jobs in enumerate(on):
        name = instance.servers[s].name
        fcfs = sorted(jobs, key=lambda j: (instance.jobs[j].arrival, j))
        if instance.mode in (BACKFILL, BUDGET, BUNDLE):
            fcfs = []  # any order: only the cores bind
        for a, b in zip(fcfs, fcfs[1:], strict=False):
            if solution.start[b] < solution.start[a]:
                violations.append(
                    f"server {name!r}: job {instance.jobs[b].name!r} starts at "
                    f"{solution.start[b]}, before {instance.jobs[a].name!r} that arrived "
                    f"first (at {solution.start[a]}): not FCFS"
                )
                break
        # Ends before starts at the same instant: a job ending at t frees its cores for t.
        events = sorted(
            [
                (solution.start[j] + _service(instance, j, s), 0, -instance.jobs[j].cores)
                for j in jobs
            ]
            + [(solution.start[j], 1, instance.jobs[j].cores) for j in jobs]
        )
        used = 0
        for t, _, delta in events:
            used += delta
            if used > instance.servers[s].cores:
                violations.append(
                    f"server {name!r}: {used} cores in use at time {t}, it has "
                    f"{instance.servers[s].cores}"
                )
                break
    if violations:
        return _infeasible(instance, violations)
    if instance.mode == BUDGET:
        return _budget_report(instance, solution)
    if instance.mode == BUNDLE:
        violations = _bundle_violations(instance, solution)
        if violations:
            return _infeasible(instance, violations)
    total = sum(
        job.weight
        * (solution.start[j] + _service(instance, j, solution.server_of[j]) - job.arrival)
        for j, job in enumerate(instance.jobs)
    )
    return CheckReport(True, [], {OBJECTIVE: float(total)}, ("min",))


def figures(instance: DispatchInstance, solution: DispatchSolution) -> dict[str, float]:
    """Mean response, mean slowdown (response / size), p99 response (nearest rank),
    makespan and missed deadlines of a schedule that serves every job."""
    responses, slowdowns, ends, missed = [], [], [], 0
    for j, job in enumerate(instance.jobs):
        s = solution.server_of[j]
        if not 0 <= s < len(instance.servers):
            continue
        end = solution.start[j] + _service(instance, j, s)
        responses.append(end - job.arrival)
        slowdowns.append((end - job.arrival) / job.size)
        ends.append(end)
        missed += bool(job.deadline and end > job.deadline)
    if not responses:
        return {
            "mean_response": 0.0,
            "mean_slowdown": 0.0,
            "p99_response": 0.0,
            "makespan": 0,
            "deadlines_missed": 0,
        }
    ordered = sorted(responses)
    rank = max(1, math.ceil(0.99 * len(ordered)))
    return {
        "mean_response": sum(responses) / len(responses),
        "mean_slowdown": sum(slowdowns) / len(slowdowns),
        "p99_response": float(ordered[rank - 1]),
        "makespan": max(ends),
        "deadlines_missed": missed,
    }


def solution_to_message(instance: DispatchInstance, solution: DispatchSolution) -> Any:
    """The ``placement.v1.DispatchSolution`` message, with the checker's figures."""
    msg = pb.DispatchSolution()
    total = 0
    for j, job in enumerate(instance.jobs):
        s = solution.server_of[j]
        if not 0 <= s < len(instance.servers):
            continue
        end = solution.start[j] + _service(instance, j, s)
        total += job.weight * (end - job.arrival)
        msg.runs.add(
            job=job.name,
            server=instance.servers[s].name,
            start=solution.start[j],
            end=end,
            response=end - job.arrival,
            bundle=solution.bundle[j] if solution.bundle else "",
        )
    f = figures(instance, solution)
    msg.figures.total_weighted_flow_time = total
    msg.figures.mean_response = f["mean_response"]
    msg.figures.mean_slowdown = f["mean_slowdown"]
    msg.figures.p99_response = f["p99_response"]
    msg.figures.makespan = int(f["makespan"])
    msg.figures.deadlines_missed = int(f["deadlines_missed"])
    if instance.mode == BUDGET:  # elsewhere prices may be fractional and unbounded: no cost
        msg.figures.cost = sum(
            _cost(instance, j, s)
            for j, s in enumerate(solution.server_of)
            if 0 <= s < len(instance.servers)
        )
    return msg
