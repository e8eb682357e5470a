"""A start solution (an earlier schedule, by names) adapted to the instance being solved.

Each run of the start keeps its server if its job and server still exist and the job still
fits the server; every other job (new, or displaced) goes where it would end soonest
(:func:`.greedy.earliest_completion`). The starts are then recomputed as the FCFS
earliest-start schedule of that assignment, which is optimal for the assignment
(:mod:`.schedule`), so the start's own times are not kept: they may no longer be feasible
(arrivals and sizes may have changed) and can only be improved on. In budget and bundle
modes the start is kept as given, when it names every job (the checker then judges it).
"""

from __future__ import annotations

from typing import Any

from placement.models.dispatch.greedy import earliest_completion
from placement.models.dispatch.instance import (
    BUDGET,
    BUNDLE,
    DispatchInstance,
    DispatchSolution,
)
from placement.models.dispatch.schedule import fcfs_solution, queues
from placement.solver.family import StartAdaptation, known_pieces


def adapt_start(instance: DispatchInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.DispatchSolution`` the instance admits (see the module)."""
    if instance.mode in (BUDGET, BUNDLE):
        return _as_given(instance, msg)
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


def _as_given(instance: DispatchInstance, msg: Any) -> StartAdaptation:
    """Budget and bundle modes: a start is the schedule as given (servers, starts, bundles),
    when it names every job on a server that exists and fits; else nothing of it is kept (a
    partial sweep or bundling has no completion that keeps its deadline, budget or
    scheduler's order)."""
    dropped: list[tuple[str, str]] = []
    server_of = [-1] * len(instance.jobs)
    start = [0] * len(instance.jobs)
    bundle = [""] * len(instance.jobs)
    for run, name, job in known_pieces(
        list(msg.runs), lambda r: r.job, instance.job_index, "job", "given twice", dropped
    ):
        s = instance.server_index.get(run.server)
        if s is None or not instance.fits(job, s):
            dropped.append((name, f"job {name!r}: server {run.server!r} gone or too small"))
            continue
        server_of[job], start[job], bundle[job] = s, int(run.start), run.bundle
    kept = sum(1 for s in server_of if s >= 0)
    if kept < len(instance.jobs) or dropped:
        note = f"{instance.mode} mode: the start names {kept} of {len(instance.jobs)} jobs; unused"
        return StartAdaptation(None, len(msg.runs), 0, dropped, note)
    solution = DispatchSolution(
        tuple(server_of), tuple(start), tuple(bundle) if any(bundle) else ()
    )
    return StartAdaptation(solution, len(msg.runs), kept, [], "")
