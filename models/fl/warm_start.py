"""A start solution (an earlier assignment, by names) adapted to the instance being solved.

Each (round, job) assignment of the start is kept, in the start's order, when its round and
job still exist, the job still runs in that round, and its devices still exist, are online,
have the memory, cover the job's classes, serve no other job kept in that round and stay
within the participation limit with what was kept before. Every (round, job) left is
assigned by the fallback's rule (:func:`.greedy.threshold_cover`) over the devices left.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.fl.greedy import threshold_cover
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import eligible
from placement.solver.family import StartAdaptation


def adapt_start(instance: FlInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.FlSolution`` the instance admits (see the module)."""
    assign = [[() for _ in instance.jobs] for _ in range(instance.rounds)]
    budget = np.full(len(instance.devices), instance.participation_limit, dtype=np.int64)
    used = [set() for _ in range(instance.rounds)]
    dropped: list[tuple[str, str]] = []
    kept = 0
    for a in msg.assignments:
        label = f"{a.job}@{a.round}"
        j = instance.job_index.get(a.job)
        devs = [instance.device_index.get(name) for name in a.devices]
        r = int(a.round)
        if j is None or not 0 <= r < instance.rounds or not instance.active(r, j):
            dropped.append((label, f"{label}: the job or the round is gone"))
            continue
        if None in devs or assign[r][j]:
            dropped.append((label, f"{label}: a device is gone, or given twice"))
            continue
        ok = eligible(instance, r)[j]
        job = instance.jobs[j]
        held = {c for d in devs for c in instance.devices[d].classes}  # type: ignore[index]
        if (
            len(set(devs)) != job.devices_per_round
            or len(devs) != job.devices_per_round
            or not all(ok[d] and budget[d] > 0 and d not in used[r] for d in devs)  # type: ignore[index]
            or not set(job.classes_needed) <= held
        ):
            dropped.append((label, f"{label}: its devices no longer serve the job here"))
            continue
        assign[r][j] = tuple(int(d) for d in devs)  # type: ignore[arg-type]
        used[r].update(devs)  # type: ignore[arg-type]
        budget[devs] -= 1  # type: ignore[index]
        kept += 1
    placed = 0
    for r in range(instance.rounds):
        ok = eligible(instance, r)
        for j in range(len(instance.jobs)):
            if not instance.active(r, j) or assign[r][j]:
                continue
            free = ok[j] & (budget > 0)
            free[list(used[r])] = False
            found = threshold_cover(instance, j, free)
            if found is None:
                continue
            assign[r][j] = found
            used[r].update(found)
            budget[list(found)] -= 1
            placed += 1
    return StartAdaptation(
        FlSolution(tuple(tuple(row) for row in assign)),
        len(msg.assignments),
        kept,
        dropped,
        f"{placed} (round, job) pair(s) assigned anew" if placed else "",
    )
