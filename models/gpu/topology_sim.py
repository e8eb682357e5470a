"""A discrete-event simulation of scheduling cycles on a :class:`TopologyTrace`: ours against
the topology-aware peers (Kueue TAS, KAI, Volcano), with every decision checked.

Time advances in cycles of ``cycle_s`` seconds. At each cycle, pods whose run ended leave
(their GPUs are free again), arrivals since the last cycle join the pending queue (arrival
order), and the policy decides on the whole queue at once, on the family's instance of the
moment (the nodes with what is running, the pending gangs as jobs):

* the peers admit the queued gangs one at a time in queue order as they do, skipping a gang
  that does not fit and trying the next (Kueue's ``BestEffortFIFO``, KAI's and Volcano's
  allocate actions): :func:`~.kueue_tas.kueue_one_at_a_time` (three profiles),
  :func:`~.kai_topology.kai_one_at_a_time`, :func:`~.volcano_topology.volcano_one_at_a_time`;
* ours solves the cycle's instance through the family's portfolio
  (:func:`placement.solver.portfolio.solve`, CP-SAT first) in its deterministic mode, with
  ``deadline_s`` deterministic seconds (:func:`decide`): the most GPU demand placed, each
  job weighted by its aging priority (1 + minutes waited, :func:`aging_priority`), then the
  least communication cost, then (the opt-in ``topology_fit`` tier, on for ours) the fewest
  racks per gang and best fit per rack and block, which keeps emptier racks whole for the
  large gangs that come later, then the least fragmentation.

Every decision goes through the family's checker (:func:`~.check.check`) before it is
applied; a rejected decision is counted and not applied. Gangs are all or nothing; a gang not
placed waits and is tried again at the next cycle. A cycle where nothing arrived or left
since the last one is skipped (the same queue on the same cluster: every peer would decide
the same again). Gangs still waiting at the end count their wait up to the end.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placement.models.gpu.check import check, span_level
from placement.models.gpu.instance import MAX_PRIORITY, MILLI, GpuInstance, GpuSolution
from placement.models.gpu.kai_topology import kai_one_at_a_time
from placement.models.gpu.kueue_tas import kueue_one_at_a_time
from placement.models.gpu.topology_trace import TopologyTrace, TraceJob
from placement.models.gpu.volcano_topology import volcano_one_at_a_time
from placement.solver.options import SolveOptions, deterministic_wall_limit
from placement.solver.portfolio import solve

OURS = "ours"
OURS_NO_AGING = "ours-no-aging"
PEERS = ("kueue-mixed", "kueue-best-fit", "kueue-least-free-capacity", "kai", "volcano")
POLICIES = (*PEERS, OURS)
"""The policies the benchmark runs by default."""
ABLATIONS = (OURS_NO_AGING,)
"""Variants of ours run only on request (``--param policies=...``): ours without the aging
priority (:func:`aging_priority`; every job priority 1, the first tier the most GPUs placed)."""
KNOWN_POLICIES = (*POLICIES, *ABLATIONS)


@dataclass
class CycleStats:
    """What one policy's run measured."""

    policy: str
    times_h: list[float] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    """GPUs in use after each cycle's decision (at ``times_h``)."""
    placed_at: dict[int, float] = field(default_factory=dict)
    """Trace job index -> hour it was placed."""
    spans: dict[int, int] = field(default_factory=dict)
    """Trace job index -> span level of its placement (:func:`~.check.span_level`)."""
    cross_rack_gb: dict[int, float] = field(default_factory=dict)
    """Trace job index -> its traffic crossing racks (GB)."""
    fragmented: int = 0
    """Pending gangs, summed over cycles, whose GPUs were free in total but not placed."""
    fragmented_gangs: set[int] = field(default_factory=set)
    cycles: int = 0
    decisions_checked: int = 0
    invalid: int = 0
    proven: int = 0
    """Cycles where ours proved its decision optimal (the status ``optimal``)."""
    wall_clock: int = 0
    """Cycles where the wall clock may have cut ours' deterministic solve
    (:attr:`Decision.wall_clock`); 0 means the run is reproducible whatever the load."""
    restricted: int = 0
    """Cycles where ours solved restricted models (:attr:`Decision.restricted`)."""
    decide_s: list[float] = field(default_factory=list)


def cross_rack_gb(trace_job: TraceJob, racks: list[str]) -> float:
    """A gang's traffic (``traffic_gb``) times the share of its worker pairs in different
    racks (all-reduce traffic spread evenly over pairs); 0 for one worker."""
    w = len(racks)
    if w < 2:
        return 0.0
    counts = np.unique(racks, return_counts=True)[1]
    pairs_across = (w * w - int((counts**2).sum())) / (w * (w - 1))
    return trace_job.as_job().traffic_gb * pairs_across


@dataclass
class Decision:
    """One cycle's decision of a policy."""

    solution: GpuSolution
    proven: bool = False
    """Ours proved it optimal for the instance it solved (the status ``optimal``)."""
    wall_clock: bool = False
    """The wall clock, not ours' deterministic budget, may have cut part of the solve: its
    greedy phase took the whole budget (the portfolio then skips the exact phase), or the
    solve ran past the shortest wall-clock guard (``deterministic_wall_limit``)."""
    restricted: bool = False
    """Ours solved restricted models (candidate nodes) instead of the full one."""


def decide(policy: str, instance: GpuInstance, deadline_s: float) -> Decision:
    """One cycle's decision of ``policy`` on ``instance`` (for ours, the instance with the
    aging priorities: :func:`ours_instance`).

    Ours solves in the portfolio's deterministic mode: one CP-SAT worker, seed 0, and every
    search stopped by CP-SAT's deterministic time (``deadline_s`` deterministic seconds for
    the whole solve), so the same cycle gives the same decision whatever the machine's load.
    The wall clock only guards against a runaway search (:func:`deterministic_wall_limit`);
    :attr:`Decision.wall_clock` says when it may have mattered.
    """
    if policy.startswith("kueue-"):
        return Decision(kueue_one_at_a_time(instance, policy.removeprefix("kueue-")))
    if policy == "kai":
        return Decision(kai_one_at_a_time(instance))
    if policy == "volcano":
        return Decision(volcano_one_at_a_time(instance))
    if policy in (OURS, OURS_NO_AGING):
        instance.topology_fit = True  # the opt-in fourth tier (docs/formulations/gpu.md)
        options = SolveOptions(time_limit_s=deadline_s, deterministic=True, seed=0)
        t0 = time.perf_counter()
        result = solve(instance, options)
        wall = time.perf_counter() - t0
        sol = result.solution if result.solution is not None else GpuSolution({})
        greedy_s = result.phase_times_s.get("greedy", 0.0)
        return Decision(
            sol,
            result.status.value == "optimal",
            wall_clock=greedy_s >= deadline_s or wall >= deterministic_wall_limit(0.0),
            restricted="restricted to candidate nodes" in result.message,
        )
    raise ValueError(f"policy {policy!r} not in {KNOWN_POLICIES}")


AGING_UNIT_H = 1 / 60
"""Ours' aging: a pending job's priority in the cycle's solve is 1 plus the whole minutes it
has waited (at most ``MAX_PRIORITY``, reached after 16.65 h)."""


def aging_priority(wait_h: float) -> int:
    """Ours' priority for a job that has waited ``wait_h`` hours (:data:`AGING_UNIT_H`)."""
    return min(MAX_PRIORITY, 1 + int(wait_h / AGING_UNIT_H + 1e-9))


def ours_instance(
    trace: TopologyTrace, pending: list[int], used: list[list[int]], t: float
) -> GpuInstance:
    """The instance ours solves at hour ``t``: the cycle's cluster and pending jobs, each job's
    priority its :func:`aging_priority` (so the first tier places the most GPUs x (1 + minutes
    waited): the jobs whose wait has cost the most so far first, the largest at equal wait)."""
    jobs = [trace.jobs[k].as_job(aging_priority(t - trace.jobs[k].arrival_h)) for k in pending]
    return trace.instance(jobs, [tuple(u) for u in used])


def simulate(
    trace: TopologyTrace,
    policy: str,
    cycle_s: float = 60.0,
    deadline_s: float = 1.0,
) -> CycleStats:
    """Run ``policy`` over ``trace`` (``trace.hours`` of simulated time); see the module."""
    if policy not in KNOWN_POLICIES:
        raise ValueError(f"policy {policy!r} not in {KNOWN_POLICIES}")
    n_nodes = len(trace.nodes)
    per_node = trace.nodes[0].gpu_count
    used = [[0] * per_node for _ in range(n_nodes)]
    departures: list[tuple[float, int, list[tuple[int, tuple[int, ...]]]]] = []
    for seq, (n, g, end) in enumerate(trace.initial):
        gpus = tuple(i for i in range(per_node) if not used[n][i])[:g]
        for i in gpus:
            used[n][i] = MILLI
        heapq.heappush(departures, (end, -1 - seq, [(n, gpus)]))
    stats = CycleStats(policy)
    pending: list[int] = []
    next_arrival = 0
    step = cycle_s / 3600.0
    cycles = int(np.ceil(trace.hours / step))
    rack_of = [node.groups[0] for node in trace.nodes]
    for c in range(cycles + 1):
        t = c * step
        changed = c == 0
        while departures and departures[0][0] <= t:
            _, _, spots = heapq.heappop(departures)
            for n, gpus in spots:
                for i in gpus:
                    used[n][i] = 0
            changed = True
        while next_arrival < len(trace.jobs) and trace.jobs[next_arrival].arrival_h <= t:
            pending.append(next_arrival)
            next_arrival += 1
            changed = True
        if changed and pending:
            instance = trace.instance(
                [trace.jobs[k].as_job() for k in pending], [tuple(u) for u in used]
            )
            t0 = time.perf_counter()
            if policy == OURS:
                decision = decide(policy, ours_instance(trace, pending, used, t), deadline_s)
            else:
                decision = decide(policy, instance, deadline_s)
            stats.decide_s.append(time.perf_counter() - t0)
            stats.cycles += 1
            stats.proven += decision.proven
            stats.wall_clock += decision.wall_clock
            stats.restricted += decision.restricted
            solution = decision.solution
            # the real cluster and jobs of the cycle, whatever ours solved
            report = check(instance, solution)
            stats.decisions_checked += 1
            if not report.feasible:
                stats.invalid += 1
                solution = GpuSolution({})
            placed = set()
            for j, workers in solution.placements.items():
                k = pending[j]
                job = trace.jobs[k]
                spots = [(w.node, tuple(w.gpus)) for w in workers]
                for n, gpus in spots:
                    for i in gpus:
                        used[n][i] = MILLI
                heapq.heappush(departures, (t + job.duration_h, k, spots))
                stats.placed_at[k] = t
                stats.spans[k] = span_level(instance, "whole", spots)
                stats.cross_rack_gb[k] = cross_rack_gb(job, [rack_of[n] for n, _ in spots])
                placed.add(k)
            pending = [k for k in pending if k not in placed]
            free = sum(per_node - sum(1 for u in row if u) for row in used)
            for k in pending:
                if trace.jobs[k].demand <= free:
                    stats.fragmented += 1
                    stats.fragmented_gangs.add(k)
        stats.times_h.append(t)
        stats.allocated.append(sum(1 for row in used for u in row if u))
    return stats


def summarise(trace: TopologyTrace, stats: CycleStats) -> dict[str, Any]:
    """The figures of one run: allocation, waiting (all arrivals, hours), waiting GPU-hours,
    preferred-level share, cross-rack traffic per placed gang, fragmented pending gangs."""
    end = trace.hours
    waits = []
    gpu_hours = 0.0
    for k, job in enumerate(trace.jobs):
        wait = stats.placed_at.get(k, end) - job.arrival_h
        waits.append(wait)
        gpu_hours += wait * job.demand
    gangs = [k for k, job in enumerate(trace.jobs) if job.workers > 1]
    placed_gangs = [k for k in gangs if k in stats.placed_at]
    preferred = [k for k in placed_gangs if not trace.jobs[k].required]
    level = {"rack": 2, "block": 3}
    inside = sum(1 for k in preferred if stats.spans[k] <= level[trace.jobs[k].level])
    allocated = np.array(stats.allocated, dtype=float) / trace.gpus
    w = np.array(waits) if waits else np.zeros(1)
    return {
        "arrivals": len(trace.jobs),
        "gangs": len(gangs),
        "placed": len(stats.placed_at),
        "gangs_placed": len(placed_gangs),
        "still_waiting": len(trace.jobs) - len(stats.placed_at),
        "allocation_mean": float(allocated.mean()),
        "wait_mean_h": float(w.mean()),
        "wait_p99_h": float(np.percentile(w, 99)),
        "waiting_gpu_h": gpu_hours,
        "preferred_inside": inside / len(preferred) if preferred else float("nan"),
        "cross_rack_gb_per_gang": (
            sum(stats.cross_rack_gb[k] for k in placed_gangs) / len(placed_gangs)
            if placed_gangs
            else 0.0
        ),
        "fragmented_gang_cycles": stats.fragmented,
        "fragmented_gangs": len(stats.fragmented_gangs),
        "cycles": stats.cycles,
        "decisions_checked": stats.decisions_checked,
        "invalid": stats.invalid,
        "proven_cycles": stats.proven,
        "wall_clock_cycles": stats.wall_clock,
        "restricted_cycles": stats.restricted,
        "decide_mean_s": float(np.mean(stats.decide_s)) if stats.decide_s else 0.0,
        "decide_max_s": float(np.max(stats.decide_s)) if stats.decide_s else 0.0,
    }
