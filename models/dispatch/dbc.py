"""Nimrod/G's deadline and budget constrained (DBC) heuristics for a parameter sweep on
priced servers (``budget`` mode), the fallbacks of that mode.

Written from the papers and the Gridbus broker's scheduler, not copied:

* R. Buyya, D. Abramson, J. Giddy, H. Stockinger, "Economic models for resource management
  and scheduling in Grid computing", Concurrency and Computation: Practice and Experience
  14 (2002), section on the Nimrod/G broker's DBC scheduling: cost-optimisation (use the
  cheapest resources that still meet the deadline) and time-optimisation (finish as early as
  the budget allows);
* R. Buyya, M. Murshed, D. Abramson, S. Venugopal, "Scheduling parameter sweep applications
  on global Grids: a deadline and budget constrained cost-time optimization algorithm",
  Software: Practice and Experience 35 (2005): the three algorithms as stated there (cost:
  sort resources by increasing cost, give each as many jobs as it can finish by the deadline;
  time: each job to the resource that completes it soonest among those whose cost per job is
  within the budget left per job; cost-time: resources of equal cost grouped, groups by
  increasing cost, inside a group time-optimisation);
* the Gridbus broker's ``org/gridbus/broker/scheduler/DBScheduler.java`` (S. Venugopal;
  version as stored in the public code index, undated), whose COST, TIME and COST_TIME cases
  skip a server when the budget available per remaining job is below its price per job.

A resource's "cost" is, as in the papers (G$ per MI), its price per unit of work at speed 1,
``price / speed``; a job's cost on a server is ``price * service time`` (one core). The
broker of the papers adapts as jobs finish; here the run times are known, so one pass over
the jobs in the instance's order, each placed on the core of its server that frees first,
gives the schedule that broker would reach. Where a rule leaves a job nowhere (no server can
meet the deadline within the budget left), the job goes where it ends soonest among the
cheapest-first servers, and the checker says what was missed and by how much.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from fractions import Fraction

from placement.models.dispatch.instance import DispatchInstance, DispatchSolution


class Cores:
    """Every server's cores as heaps of (free-from time, core), the state a DBC pass keeps."""

    def __init__(self, instance: DispatchInstance) -> None:
        self.instance = instance
        self.free = [[(0, c) for c in range(s.cores)] for s in instance.servers]
        self.spent = 0
        self.left = len(instance.jobs)
        self.server_of = [0] * len(instance.jobs)
        self.start = [0] * len(instance.jobs)

    def end_on(self, job: int, server: int) -> int:
        """When ``job`` would end on ``server``'s first free core."""
        return self.free[server][0][0] + self.instance.service[job][server]

    def place(self, job: int, server: int) -> None:
        """Run ``job`` on ``server``'s first free core."""
        t, core = heapq.heappop(self.free[server])
        self.server_of[job], self.start[job] = server, t
        heapq.heappush(self.free[server], (t + self.instance.service[job][server], core))
        self.spent += self.instance.cost(job, server)
        self.left -= 1

    def affordable(self, job: int, server: int) -> bool:
        """DBScheduler's test: the budget left per job not yet placed covers this job here."""
        budget = self.instance.budget
        if not budget:
            return True
        return self.instance.cost(job, server) * self.left <= budget - self.spent

    def meets_deadline(self, job: int, server: int) -> bool:
        deadline = self.instance.deadline
        return not deadline or self.end_on(job, server) <= deadline

    def solution(self) -> DispatchSolution:
        return DispatchSolution(tuple(self.server_of), tuple(self.start))


def unit_cost(instance: DispatchInstance, server: int) -> Fraction:
    """The papers' cost of a resource: price per unit of work (G$ per MI)."""
    s = instance.servers[server]
    return Fraction(s.price) / Fraction(s.speed)


def by_cost(instance: DispatchInstance) -> list[int]:
    """Servers by increasing cost, ties by the faster, then by index."""
    return sorted(
        range(len(instance.servers)),
        key=lambda s: (unit_cost(instance, s), -instance.servers[s].speed, s),
    )


def _fallback(state: Cores, job: int, order: list[int]) -> int:
    """Where a job goes when no server meets both rules: the cheapest that meets the
    deadline, else the one where it ends soonest."""
    for s in order:
        if state.meets_deadline(job, s):
            return s
    return min(order, key=lambda s: (state.end_on(job, s), s))


def cost_optimisation(instance: DispatchInstance) -> DispatchSolution:
    """DBC cost-optimisation: servers by increasing cost; each job to the first server that
    can still finish it by the deadline and whose cost per job the budget left per job
    covers (with no deadline: the cheapest affordable server)."""
    state, order = Cores(instance), by_cost(instance)
    for j in range(len(instance.jobs)):
        chosen = next(
            (s for s in order if state.affordable(j, s) and state.meets_deadline(j, s)), None
        )
        state.place(j, _fallback(state, j, order) if chosen is None else chosen)
    return state.solution()


def time_optimisation(instance: DispatchInstance) -> DispatchSolution:
    """DBC time-optimisation: each job to the server that completes it soonest among those
    whose cost per job the budget left per job covers (ties: the cheaper); with none, the
    cheapest server for the job."""
    state, order = Cores(instance), by_cost(instance)
    rank = {s: r for r, s in enumerate(order)}
    for j in range(len(instance.jobs)):
        candidates = [s for s in order if state.affordable(j, s)]
        if candidates:
            chosen = min(candidates, key=lambda s: (state.end_on(j, s), rank[s]))
        else:
            chosen = min(order, key=lambda s: (instance.cost(j, s), state.end_on(j, s), rank[s]))
        state.place(j, chosen)
    return state.solution()


def cost_time_optimisation(instance: DispatchInstance) -> DispatchSolution:
    """DBC cost-time optimisation: servers of equal cost grouped, groups by increasing cost;
    each job to the first group with an affordable server that finishes it by the deadline,
    and inside that group to the affordable server that completes it soonest."""
    state, order = Cores(instance), by_cost(instance)
    groups: list[list[int]] = []
    for s in order:
        if groups and unit_cost(instance, groups[-1][0]) == unit_cost(instance, s):
            groups[-1].append(s)
        else:
            groups.append([s])
    for j in range(len(instance.jobs)):
        chosen = None
        for group in groups:
            fits = [s for s in group if state.affordable(j, s) and state.meets_deadline(j, s)]
            if fits:
                chosen = min(fits, key=lambda s: (state.end_on(j, s), s))
                break
        state.place(j, _fallback(state, j, order) if chosen is None else chosen)
    return state.solution()


DBC: dict[str, Callable[[DispatchInstance], DispatchSolution]] = {
    "dbc-cost": cost_optimisation,
    "dbc-time": time_optimisation,
    "dbc-cost-time": cost_time_optimisation,
}
"""Nimrod/G's three DBC heuristics by name."""
