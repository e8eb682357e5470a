"""Online dispatch heuristics of the family (no solver): each job, in arrival order, goes to
one server at its arrival, seeing only the jobs that arrived before it (their sizes are known,
as size-aware policies assume); the server then runs it FCFS (:mod:`.schedule`).

* ``ect`` (the fallback): earliest completion time: the server where the job would end
  soonest given the committed queues, speeds and cores. On identical single-core servers it
  is least work left (LWL), which on them equals a central FCFS queue (M/G/k).
* ``est``: earliest start time, ties by the faster server (the central FCFS queue on
  heterogeneous servers: the job takes the first server that frees up for it).

In ``backfill`` mode each assignment is also scheduled by EASY backfilling on its server
(:func:`.schedule.easy_solution`). In ``budget`` mode the heuristics are Nimrod/G's three
DBC heuristics (:mod:`.dbc`), the one of the instance's objective first; in ``bundle`` mode
ours, Byun et al.'s node bundling and per-task dispatch (:mod:`.bundling`).

The literature's other policies (RR, JIQ, JSQ, LWL, SITA, JBT, two-stage) are peers in
:mod:`placement.models.dispatch.peers` and run in the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from placement.models.dispatch.bundling import BUNDLING
from placement.models.dispatch.dbc import DBC
from placement.models.dispatch.instance import (
    BACKFILL,
    BUDGET,
    BUNDLE,
    COST,
    TIME,
    DispatchInstance,
    DispatchSolution,
)
from placement.models.dispatch.schedule import ServerQueue, easy_solution, fcfs_solution, queues
from placement.solver.options import SolveOptions

Chooser = Callable[[DispatchInstance, list[ServerQueue], int], int]
"""(instance, server queues, job) -> the server the job goes to (one it fits on)."""


def earliest_completion(instance: DispatchInstance, qs: list[ServerQueue], job: int) -> int:
    """The server where ``job`` ends soonest (ties: the lowest index)."""
    j = instance.jobs[job]
    return min(
        instance.eligible[job],
        key=lambda s: (qs[s].earliest_start(j.arrival, j.cores) + instance.service[job][s], s),
    )


def earliest_start(instance: DispatchInstance, qs: list[ServerQueue], job: int) -> int:
    """The server where ``job`` starts soonest (ties: the shortest service, lowest index)."""
    j = instance.jobs[job]
    return min(
        instance.eligible[job],
        key=lambda s: (qs[s].earliest_start(j.arrival, j.cores), instance.service[job][s], s),
    )


def dispatch(instance: DispatchInstance, choose: Chooser) -> DispatchSolution:
    """Replay the jobs in arrival order through ``choose``; the FCFS schedule it makes."""
    qs = queues(instance)
    server_of = [0] * len(instance.jobs)
    for j in instance.order:
        s = choose(instance, qs, j)
        server_of[j] = s
        job = instance.jobs[j]
        qs[s].commit(job.arrival, job.cores, instance.service[j][s])
    return fcfs_solution(instance, server_of)


HEURISTICS: dict[str, Chooser] = {"ect": earliest_completion, "est": earliest_start}
"""Every heuristic by name, the fallback first."""


def greedy_solutions(
    instance: DispatchInstance, options: SolveOptions | None = None
) -> Iterator[tuple[str, DispatchSolution]]:
    """Named heuristic schedules, the fallback first; in ``backfill`` mode also each
    assignment's EASY-backfilling schedule (``ect-easy``, ``est-easy``); in ``budget`` mode
    the DBC heuristics, the one of the instance's objective first."""
    del options
    if instance.mode == BUNDLE:
        for name, heuristic in BUNDLING.items():
            yield name, heuristic(instance)
        return
    if instance.mode == BUDGET:
        first = {COST: "dbc-cost", TIME: "dbc-time"}.get(instance.budget_objective, "dbc-cost-time")
        for name in sorted(DBC, key=lambda n: n != first):
            yield name, DBC[name](instance)
        return
    for name, choose in HEURISTICS.items():
        solution = dispatch(instance, choose)
        yield name, solution
        if instance.mode == BACKFILL:
            yield f"{name}-easy", easy_solution(instance, solution.server_of)
