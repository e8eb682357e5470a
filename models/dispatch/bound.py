"""Lower bounds on the total weighted flow time of a whole trace.

Two relaxations, each valid for every schedule the checker accepts; the bound is the larger:

* **own service**: job j's flow time is at least its shortest service time on a server it
  fits, ``min_s p_js``: ``B1 = sum_j w_j min_s p_js`` (in bundle mode plus the scheduler's
  overhead ``h`` per job: no dispatch starts before its jobs' arrival + h).
* **one fast machine (SRPT)**: give job j the work ``q_j = cores_j * size_j`` (core-time at
  speed 1). On server s a job runs for ``p_js >= size_j / speed_s`` on ``cores_j`` cores, so it
  receives at least ``q_j`` units of work at rate ``cores_j * speed_s``; at any moment the
  servers together deliver work at rate at most ``C = sum_s cores_s * speed_s``. Map any
  feasible schedule onto one machine of speed ``C`` that, at each moment, gives each running
  job the rate it gets on its server: that is a preemptive (processor-sharing) schedule on
  one machine with release dates and the same completion times. SRPT (shortest remaining
  processing time) minimises the total completion time of preemptive one-machine schedules
  with release dates (Schrage 1968), processor sharing included, so
  ``sum_j C_j >= SRPT's sum`` and ``sum_j (C_j - a_j) >= SRPT's total flow``. With weights,
  ``sum_j w_j F_j >= min_j w_j * sum_j F_j``: ``B2 = w_min * SRPT flow``.

In ``budget`` mode the objective is a cost or a makespan: :func:`sweep_bound`.

The objective is an integer, so the bound is rounded up (after a 1e-9 relative allowance for
the floating-point SRPT).
"""

from __future__ import annotations

import heapq
import math

from placement.models.dispatch.instance import BUDGET_TIERS, DispatchInstance


def own_service_bound(instance: DispatchInstance) -> int:
    """B1: every job's weighted shortest service time; in bundle mode plus the scheduler's
    overhead (a job's dispatch, alone or in a bundle, is launched no earlier than its arrival
    plus the overhead; 0 in the other modes)."""
    return sum(
        job.weight
        * (instance.scheduler_overhead + min(instance.service[j][s] for s in instance.eligible[j]))
        for j, job in enumerate(instance.jobs)
    )


def srpt_flow(releases: list[float], works: list[float], rate: float) -> float:
    """Total flow time of preemptive SRPT on one machine of speed ``rate``."""
    order = sorted(range(len(releases)), key=lambda i: releases[i])
    heap: list[tuple[float, int]] = []
    t, total, k = 0.0, 0.0, 0
    while k < len(order) or heap:
        if not heap:
            t = max(t, releases[order[k]])
        while k < len(order) and releases[order[k]] <= t:
            i = order[k]
            heapq.heappush(heap, (works[i] / rate, i))
            k += 1
        remaining, i = heapq.heappop(heap)
        next_release = releases[order[k]] if k < len(order) else math.inf
        if t + remaining <= next_release:
            t += remaining
            total += t - releases[i]
        else:
            heapq.heappush(heap, (remaining - (next_release - t), i))
            t = next_release
    return total


def srpt_bound(instance: DispatchInstance) -> int:
    """B2: the one-fast-machine SRPT relaxation, times the smallest weight."""
    if not instance.jobs:
        return 0
    rate = sum(s.cores * s.speed for s in instance.servers)
    flow = srpt_flow(
        [float(j.arrival) for j in instance.jobs],
        [float(j.cores * j.size) for j in instance.jobs],
        rate,
    )
    w_min = min(j.weight for j in instance.jobs)
    value = w_min * flow
    return max(0, math.ceil(value - 1e-9 * max(1.0, value)))


def lower_bound(instance: DispatchInstance) -> int:
    """max(B1, B2): a proven lower bound on the objective."""
    return max(own_service_bound(instance), srpt_bound(instance))


def sweep_bound(instance: DispatchInstance) -> int:
    """A bound on the primary tier of a ``budget``-mode sweep: the cost of every job on its
    cheapest server (cost tiers); for the makespan, the longest of the jobs' shortest service
    times, or their sum over the cores (each job holds a core that long at least)."""
    if not instance.jobs:
        return 0
    if BUDGET_TIERS[instance.budget_objective][0] == "cost":
        cheapest: dict[int, int] = {}
        for j, job in enumerate(instance.jobs):
            if job.size not in cheapest:
                cheapest[job.size] = min(instance.cost(j, s) for s in instance.eligible[j])
        return sum(cheapest[job.size] for job in instance.jobs)
    shortest = [
        min(instance.service[j][s] for s in instance.eligible[j]) for j in range(len(instance.jobs))
    ]
    # Every job holds a core for at least its shortest service; the cores give cores * T.
    cores = sum(s.cores for s in instance.servers)
    return max(max(shortest), -(-sum(shortest) // cores))
