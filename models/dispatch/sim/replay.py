"""Replay a trace through an online dispatching policy.

Events are the arrivals, in FCFS order (arrival, then position). At each arrival the policy
sees the servers' queues at that instant (jobs ended by then have left: the departures are
processed before the arrival) and names a server; the job is committed there and its FCFS
start follows (:mod:`placement.models.dispatch.schedule`). Each decision is timed (wall
clock, ``perf_counter``), and the finished schedule goes through the family's checker: a
policy whose schedule the checker rejects raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from placement.models.dispatch.check import check, figures
from placement.models.dispatch.greedy import earliest_completion, earliest_start
from placement.models.dispatch.instance import DispatchInstance, DispatchSolution
from placement.models.dispatch.peers import POLICIES, Policy
from placement.models.dispatch.schedule import ServerQueue, queues
from placement.models.dispatch.sim.rollout import Rollout


class GreedyPolicy:
    """One of the family's own choosers (``ect``, ``est``) as a policy."""

    def __init__(
        self, name: str, choose: Callable[[DispatchInstance, list[ServerQueue], int], int]
    ):
        self.name = name
        self._choose = choose

    def start(self, instance: DispatchInstance) -> None:
        del instance

    def choose(self, instance, queues, job, now):  # noqa: D102
        del now
        return self._choose(instance, queues, job)


OURS: dict[str, Callable[[], Policy]] = {
    "ect": lambda: GreedyPolicy("ect", earliest_completion),
    "central-fcfs": lambda: GreedyPolicy("central-fcfs", earliest_start),
    "rollout": Rollout,
    "staged-rollout": lambda: Rollout(staged=True),
}
"""The family's policies: earliest completion, the rollout over sampled futures and the
same inside a two-stage structure chosen by simulation (ours, :mod:`.rollout`,
:mod:`.stages`), and earliest start, which is the
central FCFS queue (M/G/k: each job, in arrival order, takes the first server free for it)."""

POLICY_NAMES = (*POLICIES, *OURS)


def make_policy(name: str) -> Policy:
    """A fresh policy by name (a peer's or the family's)."""
    if name in POLICIES:
        return POLICIES[name]()
    if name in OURS:
        return OURS[name]()
    raise KeyError(f"unknown policy {name!r}; known: {', '.join(POLICY_NAMES)}")


@dataclass(frozen=True)
class Replay:
    """A checked replay: the schedule, its objective and figures, decision latencies."""

    policy: str
    solution: DispatchSolution
    objective: float
    figures: dict[str, float]
    decision_s: list[float]


def replay(instance: DispatchInstance, policy: Policy | str) -> Replay:
    """Dispatch every job of ``instance`` with ``policy``; the checked schedule."""
    if isinstance(policy, str):
        policy = make_policy(policy)
    policy.start(instance)
    qs = queues(instance)
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    latencies = []
    for j in instance.order:
        job = instance.jobs[j]
        t0 = time.perf_counter()
        s = policy.choose(instance, qs, j, job.arrival)
        latencies.append(time.perf_counter() - t0)
        if not instance.fits(j, s):
            raise ValueError(f"policy {policy.name!r} sent job {job.name!r} to server {s}")
        server_of[j] = s
        start[j] = qs[s].commit(job.arrival, job.cores, instance.service[j][s])
    solution = DispatchSolution(tuple(server_of), tuple(start))
    report = check(instance, solution)
    if not report.feasible:
        raise ValueError(
            f"policy {policy.name!r}: the checker rejects the replay: {report.violations[:3]}"
        )
    return Replay(policy.name, solution, report.objective, figures(instance, solution), latencies)
