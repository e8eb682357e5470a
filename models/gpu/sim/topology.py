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
  large gangs that come later, then the least fragmentation;
* ``ours-migrate`` decides as ours, then, when work still waits, may move up to
  :data:`MIGRATION_MAX_WORKERS` running single-node pods where that places more
  (:func:`migrate`: one re-optimization solve, its moves checked); a moved pod restarts, its
  run ending :data:`MIGRATION_RESTART_H` later. The peers never move running work.

Every decision goes through the family's checker (:func:`~.check.check`) before it is
applied; a rejected decision is counted and not applied. Gangs are all or nothing; a gang not
placed waits and is tried again at the next cycle. A cycle where nothing arrived or left
since the last one is skipped (the same queue on the same cluster: every peer would decide
the same again). Gangs still waiting at the end count their wait up to the end.
"""

from __future__ import annotations

import heapq
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placement.models.gpu.check import check, running_decisions, solution_to_message, span_level
from placement.models.gpu.instance import (
    MAX_PRIORITY,
    MILLI,
    DisruptionBudget,
    GpuInstance,
    GpuJob,
    GpuSolution,
    WorkerPlacement,
)
from placement.models.gpu.peers.kai import kai_one_at_a_time
from placement.models.gpu.peers.kueue_tas import kueue_one_at_a_time
from placement.models.gpu.peers.volcano import volcano_one_at_a_time
from placement.models.gpu.sim.kant import JobRun, KantMetrics, kant_metrics
from placement.models.gpu.sim.topology_trace import TopologyTrace, TraceJob
from placement.solver.options import SolveOptions, deterministic_wall_limit
from placement.solver.portfolio import solve

OURS = "ours"
OURS_MIGRATE = "ours-migrate"
OURS_NO_AGING = "ours-no-aging"
PEERS = ("kueue-mixed", "kueue-best-fit", "kueue-least-free-capacity", "kai", "volcano")
POLICIES = (*PEERS, OURS, OURS_MIGRATE)
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
    nodes_of: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Trace job index -> the nodes its workers were placed on."""
    fragmented: int = 0
    """Pending gangs, summed over cycles, whose GPUs were free in total but not placed."""
    fragmented_gangs: set[int] = field(default_factory=set)
    cycles: int = 0
    decisions_checked: int = 0
    invalid: int = 0
    proven: int = 0
    """Cycles where ours proved its decision optimal (the status ``optimal``)."""
    wall_clock: int = 0
    """Solves of ours where the wall clock may have cut the deterministic search
    (:attr:`Decision.wall_clock`; the cycle's decision, and for ``ours-migrate`` also its
    migration step's two solves); 0 means the run is reproducible whatever the load."""
    restricted: int = 0
    """Cycles where ours solved restricted models (:attr:`Decision.restricted`)."""
    decide_s: list[float] = field(default_factory=list)
    migrations: int = 0
    """Running pods moved (``ours-migrate``; each restarts: :data:`MIGRATION_RESTART_H`)."""
    restart_gpu_h: float = 0.0
    """GPU-hours the moved pods lost to their restarts."""
    migrate_cycles: int = 0
    """Cycles where ``ours-migrate`` solved the migration step (:func:`migrate`)."""
    migrate_applied: int = 0
    """Of those, cycles whose moves placed more waiting work (and were applied)."""
    runs: dict[str, list[list]] = field(default_factory=dict)
    """Per pod or gang, its runs (:attr:`_Cluster.runs`): for Kant's metrics."""


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


def decide(
    policy: str, instance: GpuInstance, deadline_s: float, start: GpuSolution | None = None
) -> Decision:
    """One cycle's decision of ``policy`` on ``instance`` (for ours, the instance with the
    aging priorities: :func:`ours_instance`).

    Ours solves in the portfolio's deterministic mode: one CP-SAT worker, seed 0, and every
    search stopped by CP-SAT's deterministic time (``deadline_s`` deterministic seconds for
    the whole solve), so the same cycle gives the same decision whatever the machine's load.
    The wall clock only guards against a runaway search (:func:`deterministic_wall_limit`);
    :attr:`Decision.wall_clock` says when it may have mattered. ``start``: a solution of
    ``instance`` to start ours' search from (a warm start: it does not limit the answer).
    """
    if policy.startswith("kueue-"):
        return Decision(kueue_one_at_a_time(instance, policy.removeprefix("kueue-")))
    if policy == "kai":
        return Decision(kai_one_at_a_time(instance))
    if policy == "volcano":
        return Decision(volcano_one_at_a_time(instance))
    if policy in (OURS, OURS_MIGRATE, OURS_NO_AGING):
        instance.topology_fit = True  # the opt-in fourth tier (docs/formulations/gpu.md)
        return _solve_deterministic(instance, deadline_s, start)
    raise ValueError(f"policy {policy!r} not in {KNOWN_POLICIES}")


def _solve_deterministic(
    instance: GpuInstance, budget_s: float, start: GpuSolution | None = None
) -> Decision:
    """Ours' solve of ``instance`` within ``budget_s`` deterministic seconds (see
    :func:`decide`), from ``start`` if given."""
    options = SolveOptions(time_limit_s=budget_s, deterministic=True, seed=0)
    t0 = time.perf_counter()
    hint = None if start is None else solution_to_message(instance, start)
    result = solve(instance, options, start=hint)
    wall = time.perf_counter() - t0
    sol = result.solution if result.solution is not None else GpuSolution({})
    greedy_s = result.phase_times_s.get("greedy", 0.0)
    return Decision(
        sol,
        result.status.value == "optimal",
        wall_clock=greedy_s >= budget_s or wall >= deterministic_wall_limit(0.0),
        restricted="restricted to candidate nodes" in result.message,
    )


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


Spots = list[tuple[int, tuple[int, ...]]]
"""(node, GPU indices) per worker."""


@dataclass
class _Running:
    spots: Spots
    end_h: float
    gpus: int
    """GPUs per worker."""
    movable: bool
    """A single-node pod: ``ours-migrate`` may move it (:func:`migrate`)."""
    version: int = 0


class _Cluster:
    """What runs where: the GPUs in use per node, the running pods and gangs, their ends."""

    def __init__(self, trace: TopologyTrace) -> None:
        per_node = trace.nodes[0].gpu_count
        self.used = [[0] * per_node for _ in trace.nodes]
        self.running: dict[str, _Running] = {}
        self._ends: list[tuple[float, str, int]] = []
        self.runs: dict[str, list[list]] = {}
        """Per pod or gang, its runs: [start h, end h, spots] each (a move ends one)."""
        for seq, (n, g, end) in enumerate(trace.initial):
            gpus = tuple(i for i in range(per_node) if not self.used[n][i])[:g]
            self.start(f"initial-{seq}", [(n, gpus)], 0.0, end, g, movable=True)

    def start(
        self, key: str, spots: Spots, t: float, end_h: float, gpus: int, movable: bool
    ) -> None:
        """Start ``key`` on ``spots`` at hour ``t``; it ends at ``end_h``."""
        self.running[key] = _Running(list(spots), end_h, gpus, movable)
        self.runs[key] = [[t, end_h, list(spots)]]
        self._hold(spots, MILLI)
        heapq.heappush(self._ends, (end_h, key, 0))

    def move(self, key: str, spots: Spots, t: float, delay_h: float) -> None:
        """Restart ``key`` on ``spots`` at hour ``t``; its run ends ``delay_h`` later than
        planned."""
        pod = self.running[key]
        self._hold(pod.spots, 0)
        self._hold(spots, MILLI)
        pod.spots, pod.end_h, pod.version = list(spots), pod.end_h + delay_h, pod.version + 1
        self.runs[key][-1][1] = t
        self.runs[key].append([t, pod.end_h, list(spots)])
        heapq.heappush(self._ends, (pod.end_h, key, pod.version))

    def depart(self, t: float) -> bool:
        """Free the GPUs of every run ended by ``t``; whether any ended."""
        ended = False
        while self._ends and self._ends[0][0] <= t:
            _, key, version = heapq.heappop(self._ends)
            pod = self.running.get(key)
            if pod is None or pod.version != version:
                continue  # moved since: its later end is queued
            self._hold(pod.spots, 0)
            del self.running[key]
            ended = True
        return ended

    def _hold(self, spots: Spots, milli: int) -> None:
        for n, gpus in spots:
            for i in gpus:
                self.used[n][i] = milli

    def free_gpus(self, n: int) -> int:
        return sum(1 for u in self.used[n] if not u)

    def view(self) -> list[tuple[int, ...]]:
        """The GPUs in use per node, as :meth:`TopologyTrace.instance` takes them."""
        return [tuple(row) for row in self.used]


MIGRATION_MAX_WORKERS = 4
"""``ours-migrate``: at most this many pods moved per cycle (the disruption budget)."""
MIGRATION_CANDIDATES = 32
"""The running pods the migration step may move: the single-node pods on the nodes with the
most free GPUs (moving one of them is what can empty a node), at most this many."""
MIGRATION_RESTART_H = 5 / 60
"""A moved pod restarts: its run ends this much later (its GPUs count as lost for it:
:attr:`CycleStats.restart_gpu_h`). Five minutes: an inference pod reloading its model, or a
training pod resuming from a recent checkpoint."""
MIGRATION_BUDGET_SHARE = 1.0
"""The migration step's deterministic budget, as a share of the cycle's (at half of it, the
re-optimization's greedy phase alone could take the budget's wall-clock time on a loaded
machine at 8,192 GPUs, and the solve then depends on the load)."""


def migrate(
    trace: TopologyTrace,
    cluster: _Cluster,
    pending: list[int],
    t: float,
    deadline_s: float,
    stats: CycleStats,
) -> GpuSolution | None:
    """``ours-migrate``'s second step, after the cycle's decision left ``pending`` waiting:
    may moving up to :data:`MIGRATION_MAX_WORKERS` running single-node pods place more of
    the waiting work?

    One re-optimization solve (docs/formulations/gpu.md section 13): the candidates
    (:data:`MIGRATION_CANDIDATES`) as running jobs, neither preemptible nor elastic, with
    their current placements; the waiting jobs with their aging priorities; the policy
    ``never`` and the budget of moved workers. Its first tier is the placed priority-weighted
    demand, its second the disruption, so it moves a pod only where that places more. The
    decision is checked on the same instance with every priority 1 (the checker validates the
    moves and the budget). When it places more, the moves are applied to ``cluster`` and the
    waiting jobs are solved again as the cycle's decision is (with ``topology_fit``), from the
    re-optimization's placements as the start; the placements returned are that solve's,
    checked on the cluster after the moves. None when nothing moves."""
    free = [cluster.free_gpus(n) for n in range(len(cluster.used))]
    if not pending or sum(free) < min(trace.jobs[k].demand for k in pending):
        return None
    candidates = sorted(
        (key for key, pod in cluster.running.items() if pod.movable and free[pod.spots[0][0]]),
        key=lambda key: (-free[cluster.running[key].spots[0][0]], cluster.running[key].gpus, key),
    )[:MIGRATION_CANDIDATES]
    if not candidates:
        return None
    stats.migrate_cycles += 1
    view = [list(row) for row in cluster.used]
    for key in candidates:
        n, gpus = cluster.running[key].spots[0]
        for i in gpus:
            view[n][i] = 0
    movable = [
        GpuJob(
            name=key,
            gpus=cluster.running[key].gpus,
            current=(WorkerPlacement(*cluster.running[key].spots[0]),),
            preemptible=False,
        )
        for key in candidates
    ]

    def instance(aging: bool) -> GpuInstance:
        jobs = [
            trace.jobs[k].as_job(aging_priority(t - trace.jobs[k].arrival_h) if aging else 1)
            for k in pending
        ]
        out = trace.instance(movable + jobs, [tuple(row) for row in view])
        out.disruption_budget = DisruptionBudget(max_migrated_workers=MIGRATION_MAX_WORKERS)
        return out

    result = _solve_deterministic(instance(True), MIGRATION_BUDGET_SHARE * deadline_s)
    stats.wall_clock += result.wall_clock
    solution, real = result.solution, instance(False)
    if not solution.placements:
        return None  # no solution (the portfolio's fallback keeps every pod: never expected)
    stats.decisions_checked += 1
    if not check(real, solution).feasible:
        stats.invalid += 1
        return None
    m = len(candidates)
    placed = {j - m: w for j, w in solution.placements.items() if j >= m}
    # the checker's own reading of which running jobs moved (kept, migrated, ...)
    moved = [d.job for d in running_decisions(real, solution)[0] if d.action == "migrate"]
    if not placed or not moved:
        return None  # nothing more placed, or placed without moving (the next cycle will)
    for j in moved:
        key = candidates[j]
        spots = [(w.node, tuple(w.gpus)) for w in solution.placements[j]]
        cluster.move(key, spots, t, MIGRATION_RESTART_H)
        stats.migrations += 1
        stats.restart_gpu_h += MIGRATION_RESTART_H * cluster.running[key].gpus
    stats.migrate_applied += 1
    after = trace.instance([trace.jobs[k].as_job() for k in pending], cluster.view())
    start = GpuSolution(placed)
    decision = decide(OURS, ours_instance(trace, pending, cluster.used, t), deadline_s, start)
    stats.wall_clock += decision.wall_clock
    stats.decisions_checked += 1
    report = check(after, decision.solution)
    if not report.feasible:
        stats.invalid += 1
    better = report.feasible and _demand(trace, pending, decision.solution) >= _demand(
        trace, pending, start
    )
    return decision.solution if better else start


def _demand(trace: TopologyTrace, pending: list[int], solution: GpuSolution) -> int:
    return sum(trace.jobs[pending[j]].demand for j in solution.placements)


def simulate(
    trace: TopologyTrace,
    policy: str,
    cycle_s: float = 60.0,
    deadline_s: float = 1.0,
) -> CycleStats:
    """Run ``policy`` over ``trace`` (``trace.hours`` of simulated time); see the module."""
    if policy not in KNOWN_POLICIES:
        raise ValueError(f"policy {policy!r} not in {KNOWN_POLICIES}")
    cluster = _Cluster(trace)
    stats = CycleStats(policy)
    pending: list[int] = []
    next_arrival = 0
    step = cycle_s / 3600.0
    cycles = int(np.ceil(trace.hours / step))
    rack_of = [node.groups[0] for node in trace.nodes]

    def place(instance: GpuInstance, solution: GpuSolution, t: float) -> set[int]:
        placed = set()
        for j, workers in solution.placements.items():
            k = pending[j]
            job = trace.jobs[k]
            spots = [(w.node, tuple(w.gpus)) for w in workers]
            cluster.start(f"job-{k}", spots, t, t + job.duration_h, job.gpus, job.workers == 1)
            stats.placed_at[k] = t
            stats.spans[k] = span_level(instance, "whole", spots)
            stats.cross_rack_gb[k] = cross_rack_gb(job, [rack_of[n] for n, _ in spots])
            stats.nodes_of[k] = tuple(n for n, _ in spots)
            placed.add(k)
        return placed

    for c in range(cycles + 1):
        t = c * step
        changed = cluster.depart(t) or c == 0
        while next_arrival < len(trace.jobs) and trace.jobs[next_arrival].arrival_h <= t:
            pending.append(next_arrival)
            next_arrival += 1
            changed = True
        if changed and pending:
            instance = trace.instance([trace.jobs[k].as_job() for k in pending], cluster.view())
            t0 = time.perf_counter()
            if policy in (OURS, OURS_MIGRATE):
                ours = ours_instance(trace, pending, cluster.used, t)
                decision = decide(policy, ours, deadline_s)
            else:
                decision = decide(policy, instance, deadline_s)
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
            placed = place(instance, solution, t)
            pending = [k for k in pending if k not in placed]
            if policy == OURS_MIGRATE:
                more = migrate(trace, cluster, pending, t, deadline_s, stats)
                if more is not None:  # checked by migrate on the cluster after its moves
                    placed = place(instance, more, t)  # span levels: the same nodes
                    pending = [k for k in pending if k not in placed]
            stats.decide_s.append(time.perf_counter() - t0)
            free = sum(cluster.free_gpus(n) for n in range(len(cluster.used)))
            for k in pending:
                if trace.jobs[k].demand <= free:
                    stats.fragmented += 1
                    stats.fragmented_gangs.add(k)
        stats.times_h.append(t)
        stats.allocated.append(sum(1 for row in cluster.used for u in row if u))
    stats.runs = cluster.runs
    return stats


def kant_of(trace: TopologyTrace, stats: CycleStats) -> KantMetrics:
    """Kant's metrics (:mod:`.kant`) of one run, over ``trace.hours`` (the pods running at
    time 0 count as background: in GAR, SOR and GFR only)."""
    nodes = {str(n): node.gpu_count for n, node in enumerate(trace.nodes)}

    def job_run(key: str, submit_h: float, demand: int) -> JobRun:
        runs = [
            (a * 3600.0, b * 3600.0, dict(Counter(str(n) for n, g in spots for _ in g)))
            for a, b, spots in stats.runs.get(key, ())
        ]
        if not runs:
            return JobRun(key, submit_h * 3600.0, gpus=demand)
        (a, b, where), later = runs[0], tuple(runs[1:])
        return JobRun(key, submit_h * 3600.0, a, b, where, gpus=demand, later=later)

    jobs = [job_run(f"job-{k}", job.arrival_h, job.demand) for k, job in enumerate(trace.jobs)]
    background = [job_run(key, 0.0, 0) for key in stats.runs if key.startswith("initial-")]
    return kant_metrics(nodes, jobs, window_end_s=trace.hours * 3600.0, background=background)


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
        "migrations": stats.migrations,
        "restart_gpu_h": round(stats.restart_gpu_h, 3),
        "waiting_and_restart_gpu_h": gpu_hours + stats.restart_gpu_h,
        "migrate_cycles": stats.migrate_cycles,
        "migrate_applied": stats.migrate_applied,
        "decide_mean_s": float(np.mean(stats.decide_s)) if stats.decide_s else 0.0,
        "decide_max_s": float(np.max(stats.decide_s)) if stats.decide_s else 0.0,
    }
