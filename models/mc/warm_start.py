"""A start solution (an earlier assignment, by names) adapted to the instance being solved.

Each assignment of the start is kept, in the start's order, if its task and core still exist,
the task may still run there (pinning, exclusions) and the core still passes the instance's
test with it (speeds and budgets may have changed); a dropped task stays dropped if it may
still be dropped. Every other task (new, or displaced) goes to the core with the most slack
that passes the test with it (worst fit, as the heuristics do), or is dropped if it may be;
a task that fits nowhere and may not be dropped is left out, and the checker then says so.
"""

from __future__ import annotations

from typing import Any

from placement.models.mc.edfvd import CoreLoad
from placement.models.mc.instance import McInstance, McSolution
from placement.solver.family import StartAdaptation, known_pieces

_UNPLACED = -2


def adapt_start(instance: McInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.McSolution`` the instance admits (see the module)."""
    loads = [CoreLoad(c.speed_exact) for c in instance.cores]
    core_of = [_UNPLACED] * len(instance.tasks)
    dropped: list[tuple[str, str]] = []
    kept = 0
    pieces = [(a.task, a) for a in msg.assignments] + [(name, None) for name in msg.dropped]
    for (_, a), name, task in known_pieces(
        pieces, lambda piece: piece[0], instance.task_index, "task", "given twice", dropped
    ):
        if a is None:  # dropped in the start
            if instance.tasks[task].droppable:
                core_of[task] = -1
                kept += 1
            else:
                dropped.append((name, f"task {name!r} dropped in the start, now it may not be"))
            continue
        core = instance.core_index.get(a.core)
        if core is None:
            dropped.append((name, f"task {name!r}: core {a.core!r} gone"))
        elif not instance.allowed(task, core):
            dropped.append((name, f"task {name!r} may no longer run on core {a.core!r}"))
        elif not loads[core].fits(instance, task):
            dropped.append((name, f"task {name!r} no longer fits on core {a.core!r}"))
        else:
            loads[core].add(instance, task)
            core_of[task] = core
            kept += 1
    placed = 0
    for task in range(len(instance.tasks)):
        if core_of[task] != _UNPLACED:
            continue
        fits = [
            k
            for k in range(len(loads))
            if instance.allowed(task, k) and loads[k].fits(instance, task)
        ]
        if fits:
            k = max(fits, key=lambda c: (loads[c].slack_with(instance, task), -c))
            loads[k].add(instance, task)
            core_of[task] = k
            placed += 1
        elif instance.tasks[task].droppable:
            core_of[task] = -1
    count = len(msg.assignments) + len(msg.dropped)
    note = f"{placed} task(s) placed anew" if placed else ""
    return StartAdaptation(McSolution(tuple(core_of)), count, kept, dropped, note)
