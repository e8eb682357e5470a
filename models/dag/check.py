"""Independent checker of DAG schedules, and the objective.

It recomputes running times and transfer delays from the instance's raw fields (not from the
instance's cached matrices, which the heuristics and encodings use), and it imports neither the
encodings nor the heuristics. Rules, each with its own violation kind (the text's first word):

- ``missing``: every task runs exactly once (a machine and a finite start);
- ``eligibility``: the machine can run the task (type listed in an ETC row, cores <= slots,
  memory, a pinned dataset's zone or machine);
- ``release``: start >= release_s + the time to bring the task's dataset to the machine;
- ``deadline``: end <= deadline_s, and the makespan <= makespan_limit_s;
- ``precedence``: a child starts after each parent's end plus the transfer between their
  machines (free on the same machine);
- ``capacity``: at every instant the tasks running on a machine hold at most its slots.

Times are compared with a tolerance of 1e-6 relative (at least 1e-6 s). The solution's
message (:func:`solution_to_message`) is written here too, since it carries the makespan and
cost as this checker evaluates them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.dag.instance import DagInstance, DagSolution, end_times
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import dag_pb2 as pb

_REL = 1e-6
MAX_VIOLATIONS = 50


def _tol(value: float) -> float:
    return _REL * max(1.0, abs(value))


def running_time(instance: DagInstance, t: int, m: int) -> float | None:
    """Seconds task ``t`` runs on machine ``m``, or None if it may not run there."""
    task, mach = instance.tasks[t], instance.machines[m]
    if task.cores > mach.slots:
        return None
    if mach.memory_mib > 0 and task.memory_mib > mach.memory_mib:
        return None
    if task.data_pinned:
        if task.data_machine and task.data_machine != mach.name:
            return None
        if task.data_zone and task.data_zone != mach.zone:
            return None
    if task.time_by_type_s:
        seconds = task.time_by_type_s.get(mach.type)
        return None if seconds is None else float(seconds)
    return task.work / mach.speed


def _link(instance: DagInstance, zone_a: str, zone_b: str) -> tuple[float, float]:
    """(latency_s, seconds per byte) between two zones; (0, 0) inside a zone without a link."""
    for link in instance.links:
        if {link.from_zone, link.to_zone} == {zone_a, zone_b}:
            return link.latency_s, 1.0 / link.bandwidth_bytes_per_s
    return 0.0, 0.0


def _transfer(instance: DagInstance, data_bytes: float, m_from: int, m_to: int) -> float:
    if m_from == m_to:
        return 0.0
    latency, per_byte = _link(
        instance, instance.machines[m_from].zone, instance.machines[m_to].zone
    )
    return latency + data_bytes * per_byte


def _data_delay(instance: DagInstance, t: int, m: int) -> float:
    task, mach = instance.tasks[t], instance.machines[m]
    if task.data_machine:
        if task.data_machine == mach.name:
            return 0.0
        home = instance.machines[instance.machine_index[task.data_machine]]
        latency, per_byte = _link(instance, home.zone, mach.zone)
    elif task.data_zone:
        if task.data_zone == mach.zone:
            return 0.0
        latency, per_byte = _link(instance, task.data_zone, mach.zone)
    else:
        return 0.0
    return latency + task.data_bytes * per_byte


def evaluate(instance: DagInstance, solution: DagSolution) -> tuple[float, float]:
    """``(makespan_s, cost)`` of the scheduled tasks (no feasibility judgement)."""
    makespan, cost = 0.0, 0.0
    for t in range(len(instance.tasks)):
        m = int(solution.machine[t])
        if m < 0 or m >= len(instance.machines):
            continue
        seconds = running_time(instance, t, m)
        if seconds is None or not math.isfinite(solution.start_s[t]):
            continue
        makespan = max(makespan, float(solution.start_s[t]) + seconds)
        mach = instance.machines[m]
        cost += seconds / 3600.0 * mach.cost_per_hour * instance.tasks[t].cores / mach.slots
    return makespan, cost


def objective_value(instance: DagInstance, makespan_s: float, cost: float) -> float:
    """The primary objective of the instance from a makespan and a cost."""
    if instance.objective == "cost":
        return cost
    if instance.objective == "weighted":
        return instance.makespan_weight * makespan_s + instance.cost_weight * cost
    return makespan_s


def check(instance: DagInstance, solution: DagSolution) -> CheckReport:
    """Check every rule of the module docstring and evaluate the objective.

    Returns
    -------
    CheckReport
        ``terms`` holds one tier named after the instance's objective (``makespan``, ``cost``
        or ``weighted``), to be minimised.
    """
    violations: list[str] = []

    def bad(text: str) -> None:
        if len(violations) < MAX_VIOLATIONS:
            violations.append(text)

    n, k = len(instance.tasks), len(instance.machines)
    machine = np.asarray(solution.machine)
    start = np.asarray(solution.start_s, dtype=float)
    ends = np.full(n, np.nan)
    if machine.shape != (n,) or start.shape != (n,):
        bad(f"missing: the solution has {machine.shape} machines / {start.shape} starts for {n}")
        return CheckReport(False, violations, {instance.objective: math.inf}, ("min",))
    for t, task in enumerate(instance.tasks):
        m = int(machine[t])
        if m < 0 or m >= k or not math.isfinite(start[t]):
            bad(f"missing: task {task.name} is not scheduled")
            continue
        seconds = running_time(instance, t, m)
        if seconds is None:
            bad(f"eligibility: task {task.name} cannot run on {instance.machines[m].name}")
            continue
        ends[t] = start[t] + seconds
        ready = task.release_s + _data_delay(instance, t, m)
        if start[t] < ready - _tol(ready):
            bad(f"release: task {task.name} starts at {start[t]:g} before {ready:g}")
        if task.deadline_s > 0 and ends[t] > task.deadline_s + _tol(task.deadline_s):
            bad(f"deadline: task {task.name} ends at {ends[t]:g} after {task.deadline_s:g}")

    for e in instance.edges:
        p, c = instance.task_index[e.parent], instance.task_index[e.child]
        if math.isnan(ends[p]) or math.isnan(ends[c]):
            continue
        arrive = ends[p] + _transfer(instance, e.data_bytes, int(machine[p]), int(machine[c]))
        if start[c] < arrive - _tol(arrive):
            bad(
                f"precedence: task {e.child} starts at {start[c]:g} before the data of "
                f"{e.parent} arrives at {arrive:g}"
            )

    # Capacity: sweep each machine's start/end events (ends before starts at equal times).
    events: dict[int, list[tuple[float, int, int]]] = {}
    for t in range(n):
        if math.isnan(ends[t]) or ends[t] <= start[t]:
            continue  # zero-length tasks hold no capacity
        m = int(machine[t])
        events.setdefault(m, []).append((float(start[t]), 1, t))
        events.setdefault(m, []).append((float(ends[t]) - _tol(ends[t]), 0, t))
    for m, evs in events.items():
        evs.sort()
        used, slots = 0, instance.machines[m].slots
        for _time, kind, t in evs:
            if kind == 1:
                used += instance.tasks[t].cores
                if used > slots:
                    bad(
                        f"capacity: machine {instance.machines[m].name} runs {used} cores > "
                        f"{slots} slots when task {instance.tasks[t].name} starts at "
                        f"{start[t]:g}"
                    )
            else:
                used -= instance.tasks[t].cores

    makespan, cost = evaluate(instance, solution)
    limit = instance.makespan_limit_s
    if limit > 0 and makespan > limit + _tol(limit):
        bad(f"deadline: makespan {makespan:g} exceeds makespan_limit_s {limit:g}")
    value = objective_value(instance, makespan, cost)
    return CheckReport(not violations, violations, {instance.objective: value}, ("min",))


def solution_to_message(instance: DagInstance, solution: DagSolution) -> Any:
    """The ``placement.v1.DagSolution`` message of a solution (tasks in start order), with
    the makespan and cost as the checker evaluates them."""
    msg = pb.DagSolution()
    ends = end_times(instance, solution)
    order = sorted(
        (t for t in range(len(instance.tasks)) if solution.machine[t] >= 0),
        key=lambda t: (solution.start_s[t], t),
    )
    for t in order:
        msg.runs.add(
            task=instance.tasks[t].name,
            machine=instance.machines[int(solution.machine[t])].name,
            start_s=float(solution.start_s[t]),
            end_s=float(ends[t]),
        )
    makespan, cost = evaluate(instance, solution)
    msg.makespan_s = makespan
    msg.cost = cost
    return msg
