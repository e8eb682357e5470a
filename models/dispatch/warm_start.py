"""A start solution (an earlier schedule, by names) adapted to the instance being solved.

Each run of the start keeps its server if its job and server still exist and the job still
fits the server; every other job (new, or displaced) goes where it would end soonest
(:func:`.greedy.earliest_completion`). The starts are then recomputed as the FCFS
earliest-start schedule of that assignment, which is optimal for the assignment
(:mod:`.schedule`), so the start's own times are not kept: they may no longer be feasible
(arrivals and sizes may have changed) and can only be improved on.
"""

from __future__ import annotations

from typing import Any

from placement.models.dispatch.greedy import earliest_completion
from placement.models.dispatch.instance import DispatchInstance
from placement.models.dispatch.schedule import fcfs_solution, queues
from placement.solver.family import StartAdaptation, known_pieces


def adapt_start(instance: DispatchInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.DispatchSolution`` the instance admits (see the module)."""
    server_of = [-1] * len(instance.jobs)
    dropped: list[tuple[str, str]] = []
    kept = 0
    for run, name, job in known_pieces(
        list(msg.runs), lambda r: r.job, instance.job_index, "job", "given twice", dropped
    ):
        s = instance.server_index.get(run.server)
        if s is None:
            dropped.append((name, f"job {name!r}: server {run.server!r} gone"))
        elif not instance.fits(job, s):
            dropped.append((name, f"job {name!r} no longer fits server {run.server!r}"))
        else:
            server_of[job] = s
            kept += 1
    placed = 0
    qs = queues(instance)
    for j in instance.order:
        if server_of[j] < 0:
            server_of[j] = earliest_completion(instance, qs, j)
            placed += 1
        job = instance.jobs[j]
        qs[server_of[j]].commit(job.arrival, job.cores, instance.service[j][server_of[j]])
    note = f"{placed} job(s) dispatched anew" if placed else ""
    return StartAdaptation(fcfs_solution(instance, server_of), len(msg.runs), kept, dropped, note)
