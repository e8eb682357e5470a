"""Why no schedule meets the deadlines: the deadline or limit that cannot be met, and by how much.

:func:`explain_infeasible` lists shortfalls (``name``, ``kind`` and ``message`` like every
family's unplaced work, plus the earliest possible time, the limit and the excess in seconds),
most specific first:

* ``deadline`` -- a task cannot end by its ``deadline_s`` even alone: the earliest it can end
  (its release, its dataset's transfer, the chain of its ancestors on their fastest machines
  with free transfers, then itself on its best machine) is later. The chain is named.
* ``deadline_load`` -- every such deadline can be met alone, but the tasks that must end by a
  deadline ``D``, with all their ancestors, need more machine time than the cluster has
  before ``D`` (the area bound of :mod:`.bound`).
* ``makespan_limit`` -- the makespan's proven lower bound (:func:`.bound.makespan_lower_bound`:
  path, area and head-area-tail) exceeds ``makespan_limit_s``.

Each is a proof: the instance has no feasible schedule when the list is not empty. An empty
list says only that these cheap arguments found nothing (the conflict may need a search).
A task that no machine can run (memory, cores, type, pinned data) is refused when the
instance is read, with the field named.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.dag.bound import _area_weights, makespan_lower_bound
from placement.models.dag.instance import DagInstance

_TOL = 1e-6
CHAIN_SHOWN = 4
"""Ancestors named in a deadline's chain at most (the latest first)."""


def _s(seconds: float) -> str:
    return f"{seconds:.6g} s"


def earliest_ends(instance: DagInstance) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Per task, the earliest it can end (``end``), the machine reaching it (``best``) and the
    parent whose end it waits for (``-1`` when none): every transfer free, every task on its
    best machine, no other task in the way. A lower bound on any schedule's end times."""
    d, est = instance.duration, instance.earliest_start
    n = len(instance.tasks)
    end = np.zeros(n)
    best = np.zeros(n, dtype=np.int64)
    waits: list[int] = [-1] * n
    for t in instance.topological_order:
        ready, waits[t] = 0.0, -1
        for p, _ in instance.parents[t]:
            if end[p] > ready:
                ready, waits[t] = float(end[p]), p
        ends = np.maximum(est[t], ready) + d[t]
        best[t] = int(np.argmin(ends))
        end[t] = float(ends[best[t]])
    return end, best, waits


def explain_infeasible(instance: DagInstance) -> list[dict[str, Any]]:
    """Shortfalls that keep ``instance`` from having any feasible schedule (empty if none found).

    Parameters
    ----------
    instance:
        A validated DAG instance.

    Returns
    -------
    list of dict
        One dict per shortfall: ``name`` (the task, or ``makespan``), ``kind`` (``deadline``,
        ``deadline_load`` or ``makespan_limit``), ``message`` (one line), ``earliest_s`` (the
        earliest end or makespan any schedule reaches), ``limit_s`` and ``excess_s``.
    """
    tasks, machines = instance.tasks, instance.machines
    end, best, waits = earliest_ends(instance)
    out: list[dict[str, Any]] = []
    for t, task in enumerate(tasks):
        limit = task.deadline_s
        if limit <= 0 or end[t] <= limit + _TOL * max(1.0, limit):
            continue
        chain, p = [], waits[t]
        while p >= 0:
            chain.append(p)
            p = waits[p]
        d = float(instance.duration[t, best[t]])
        how = f"{_s(d)} on {machines[best[t]].name}"
        if chain:
            names = [tasks[c].name for c in chain[:CHAIN_SHOWN]]
            more = f" and {len(chain) - CHAIN_SHOWN} more" if len(chain) > CHAIN_SHOWN else ""
            how += (
                f", after {tasks[chain[0]].name} ends at {_s(float(end[chain[0]]))} at the earliest"
            )
            if len(chain) > 1:
                how += f"; chain {' <- '.join(names)}{more}"
        elif end[t] - d > 0:
            how += (
                f", starting at {_s(float(end[t] - d))} at the earliest (release, dataset transfer)"
            )
        out.append(
            dict(
                name=task.name,
                kind="deadline",
                message=f"task {task.name} ends at {_s(float(end[t]))} at the earliest ({how}); "
                f"its deadline_s is {limit:g}: {_s(float(end[t] - limit))} too late",
                earliest_s=float(end[t]),
                limit_s=float(limit),
                excess_s=float(end[t] - limit),
            )
        )
    if not out:
        out.extend(_deadline_load(instance))
    limit = instance.makespan_limit_s
    if limit > 0:
        bound = makespan_lower_bound(instance)
        if bound > limit + _TOL * max(1.0, limit):
            out.append(
                dict(
                    name="makespan",
                    kind="makespan_limit",
                    message=f"every schedule takes at least {_s(bound)} (the longest chain and "
                    f"the machines' capacity), makespan_limit_s is {limit:g}: "
                    f"{_s(bound - limit)} over",
                    earliest_s=float(bound),
                    limit_s=float(limit),
                    excess_s=float(bound - limit),
                )
            )
    return out


def _deadline_load(instance: DagInstance) -> list[dict[str, Any]]:
    """For each deadline ``D``, the tasks due by ``D`` and their ancestors against the machine
    time the cluster has before ``D`` (the tightest deadline that fails, if any)."""
    deadlines = sorted({t.deadline_s for t in instance.tasks if t.deadline_s > 0})
    if not deadlines:
        return []
    weights = _area_weights(instance)
    by_deadline = sorted(
        (t.deadline_s, i) for i, t in enumerate(instance.tasks) if t.deadline_s > 0
    )
    # The tasks due by D and their ancestors only grow with D: one pass over the deadlines.
    needed: set[int] = set()
    used = [0.0] * len(weights)
    due = 0
    k = 0
    for limit in deadlines:
        while k < len(by_deadline) and by_deadline[k][0] <= limit:
            stack = [by_deadline[k][1]]
            due += 1
            k += 1
            while stack:
                t = stack.pop()
                if t in needed:
                    continue
                needed.add(t)
                for w, (weight, _) in enumerate(weights):
                    used[w] += float(weight[t])
                stack.extend(p for p, _ in instance.parents[t] if p not in needed)
        time_needed = max(u / cap for u, (_, cap) in zip(used, weights, strict=True))
        if time_needed > limit + _TOL * max(1.0, limit):
            first = by_deadline[0][1]
            return [
                dict(
                    name=instance.tasks[first].name,
                    kind="deadline_load",
                    message=f"{due} task(s) due by {_s(limit)} (with their "
                    f"{len(needed) - due} ancestor(s)) need all {len(instance.machines)} "
                    f"machine(s) for at least {_s(time_needed)}: "
                    f"{_s(time_needed - limit)} more than there is",
                    earliest_s=time_needed,
                    limit_s=float(limit),
                    excess_s=time_needed - limit,
                )
            ]
    return []


def explained(shortfalls: list[dict[str, Any]]) -> str:
    """One line: why no schedule fits (the first five shortfalls' messages)."""
    text = "; ".join(s["message"] for s in shortfalls[:5])
    if len(shortfalls) > 5:
        text += f"; ... {len(shortfalls) - 5} more"
    return f"no schedule fits: {text}"
