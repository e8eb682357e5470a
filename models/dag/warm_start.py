"""A start solution (an earlier schedule, by names) adapted to the instance being solved.

A dag solution must run every task, so the start is completed rather than cut: each task of
the start keeps its machine if the task and the machine still exist and the task may still
run there; every other task (new, or its machine gone) goes to the machine that runs it
fastest. Start times are then recomputed (:func:`~placement.models.dag.greedy.semi_active`:
each task as early as its parents, its machine and the links allow, in the order of the
start's times), since durations, edges or machines may have changed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.dag.check import running_time
from placement.models.dag.greedy import semi_active
from placement.models.dag.instance import DagInstance
from placement.solver.family import StartAdaptation, known_pieces


def _fastest(instance: DagInstance, t: int) -> int:
    """The machine that runs task ``t`` fastest (0 when it may run nowhere: the checker
    then says why)."""
    times = [(running_time(instance, t, m), m) for m in range(len(instance.machines))]
    allowed = [(s, m) for s, m in times if s is not None]
    return min(allowed)[1] if allowed else 0


def adapt_start(instance: DagInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.DagSolution`` the instance admits (see the module)."""
    n = len(instance.tasks)
    machine = np.full(n, -1, dtype=np.int64)
    key = np.full(n, np.nan)
    dropped: list[tuple[str, str]] = []
    for run, name, t in known_pieces(
        msg.runs, lambda run: run.task, instance.task_index, "task", "run twice", dropped
    ):
        m = instance.machine_index.get(run.machine)
        if m is None:
            dropped.append((name, f"task {name!r}: machine {run.machine!r} gone"))
            continue
        if running_time(instance, t, m) is None:
            dropped.append((name, f"task {name!r} may no longer run on {run.machine!r}"))
            continue
        machine[t], key[t] = m, float(run.start_s)
    kept = int(np.count_nonzero(machine >= 0))
    added = 0
    for t in instance.topological_order:
        t = int(t)
        if machine[t] < 0:
            machine[t] = _fastest(instance, t)
            added += 1
        if np.isnan(key[t]):
            # After its parents in the start's order: a task placed anew keeps its place.
            parents = [key[p] for p, _ in instance.parents[t]]
            key[t] = max(parents, default=0.0)
    solution = semi_active(instance, machine, key)
    note = f"{added} task(s) placed on their fastest machine" if added else ""
    return StartAdaptation(solution, len(msg.runs), kept, dropped, note)
