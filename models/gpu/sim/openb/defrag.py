"""Defragmentation on the openb trace: re-optimization cycles that migrate placed pods.

The FGD protocol (:mod:`.replay`: pods arrive one at a time, none is ever removed), with one
more decision: a **cycle** may move pods already placed (a migration: the pod restarts on
another node or GPU), within a **budget** on the fraction of pods ever migrated.

* **When.** When an arriving pod fits no node as the cluster stands (a *misfit* cycle: can
  moving pods make room for it?), and, if ``every`` > 0, after every ``every``-th arrival (a
  *consolidation* cycle: can moving pods empty partly used GPUs?). Online, every pod that
  fits is placed by the online policy (:mod:`.online`) as in the plain replay.
* **Budget.** After arrival ``i`` the distinct pods ever migrated are at most
  ``floor(budget x (i + 1))`` (``budget`` None: unlimited). A pod moved before may move again
  without counting twice (the budget counts pods, as the report does).
* **The cycle's model** (:func:`.defrag_cycle.solve_cycle`, CP-SAT), exact over a
  neighbourhood of nodes: the *source* nodes (for a misfit cycle, those where the pod would
  fit if their movable pods left, fewest milli-GPU to move first; for a consolidation cycle,
  those with the most milli-GPU free on partly used GPUs) whose movable pods -- shared-GPU
  and CPU-only pods; whole-GPU pods stay -- may move, and the *destination* nodes (where
  those pods fit tightest, best fit). Every resident pod of a source node is assigned
  exactly one place (pods are never removed); each pending pod at most one. GPU milli-GPU,
  CPU and memory of every node of the neighbourhood hold. Objective, lexicographic by
  weights: (1) the milli-GPU of pending pods placed; (2) ``FREE_WEIGHT`` per fully free GPU
  of the neighbourhood (FGD's fragmentation measure for the trace's dominant typical pod,
  one whole GPU: the milli-GPU free on partly used GPUs, which moves inside the
  neighbourhood trade for fully free GPUs one to one) minus ``MOVE_WEIGHT`` per pod migrated
  for the first time (a second move of a pod costs 1). The current placement is the hint:
  "move nothing" is feasible, so a cycle never has to apply anything worse than the state. A
  misfit cycle applies only if it places the pod; a consolidation cycle only if its
  objective beats moving nothing.
* **Check.** Every cycle's result passes :func:`.defrag_cycle.check_cycle` before it is
  applied: from scratch, the capacities once the moved pods are taken off their old places,
  then :func:`.batch.check_placement` of the moved and new pods on them, every moved pod
  placed exactly once, and the budget. A cycle that fails counts in ``invalid`` and is not
  applied.

Why migration can help, and how much (the study in ``docs/benchmarks.md``): at 100 % arrived
the unallocated GPUs are the demand of the pods that failed, and what made them fail is free
milli-GPU in fragments. On the default trace, seed 42, 276 of the ~300 free GPUs are partly
used GPUs and 189 of those are the 190 milli-GPU beside each lone 810-milli pod: only the
trace's few pods of <= 190 milli-GPU fit there, and no migration changes that. What
migration can consolidate is the rest (pairs of half-empty GPUs: 470, 320 + 470, ...).

This module is the replay with cycles (:func:`replay_defrag`); one cycle, its check and a
cycle within a wall-time budget are :mod:`.defrag_cycle`, and the bounds on what any
consolidation of the whole cluster could gain are :mod:`.defrag_bound`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from placement.models.gpu.sim.openb.defrag_cycle import (
    CONSOLIDATE_SOURCES,
    DESTINATIONS,
    Book,
    _destinations,
    _fit_after,
    _fragmented,
    check_cycle,
    solve_cycle,
)
from placement.models.gpu.sim.openb.replay import (
    TUNE_RATIO,
    Curve,
    PodSet,
    Policy,
    TraceCluster,
    TraceState,
    start_replay,
)


@dataclass
class DefragCurve(Curve):
    """A defragmenting replay: a :class:`.replay.Curve` (``node`` / ``gpus``: where each
    arrival ends) with the cycles' statistics."""

    budget: float | None = None
    every: int = 0
    migrated: int = 0
    """Distinct pods ever migrated."""
    migrations: int = 0
    """Moves in all (a pod moved twice counts twice)."""
    cycles: int = 0
    applied: int = 0
    cycle_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gaps: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Each cycle's :attr:`.defrag_cycle.CycleOutcome.gap` (NaN where CP-SAT returned no
    solution)."""
    statuses: dict[str, int] = field(default_factory=dict)
    invalid: int = 0
    migrated_at_100: int = 0
    arrived_pods_at_100: int = 0


def start_budgeted(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    budget: float | None,
    ratio: float,
    protocol: str,
    order: np.ndarray | None,
    tie_break: str,
    stop: float | None,
) -> tuple[np.ndarray, TraceState, np.random.Generator, np.ndarray]:
    """The start of a replay with migrations (:func:`replay_defrag`,
    :func:`.repack.replay_repack`): ``budget`` checked, the seed's workload and state
    (:func:`.replay.start_replay`), the arrived demand after each arrival, both cut after
    ``stop`` (see :func:`replay_defrag`)."""
    if budget is not None and not 0 <= budget <= 1:
        raise ValueError(f"budget must be a fraction in [0, 1] or None, not {budget!r}")
    order, state, rng = start_replay(cluster, pods, policy, seed, ratio, protocol, order, tie_break)
    order = np.asarray(order, dtype=np.int64)
    arrived = np.cumsum(pods.demand[order]) if len(order) else np.zeros(0, dtype=np.int64)
    if stop is not None and len(order):
        n = int(np.searchsorted(arrived, stop * cluster.total_gpu_milli, side="right")) + 1
        order, arrived = order[:n], arrived[:n]
    return order, state, rng, arrived


def replay_defrag(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    budget: float | None,
    every: int = 0,
    time_limit: float = 1.0,
    ratio: float = TUNE_RATIO,
    protocol: str = "simulator",
    order: np.ndarray | None = None,
    tie_break: str = "rank",
    workers: int = 1,
    stop: float | None = None,
) -> DefragCurve:
    """The FGD protocol with migration cycles (module docstring); ``budget``: the fraction
    of arrived pods that may ever be migrated (None: unlimited; 0: no cycle runs).
    ``stop``: end the replay after the first arrival taking the arrived demand above
    ``stop`` x the cluster's GPUs (1.01 ends it after the window of :meth:`Curve.at` (100))."""
    order, state, rng, arrived = start_budgeted(
        cluster, pods, policy, seed, budget, ratio, protocol, order, tie_break, stop
    )
    n = len(order)
    book = Book(n, cluster.n)
    target = cluster.total_gpu_milli
    used = np.zeros(n, dtype=np.int64)
    migrated: set[int] = set()
    moves_total = 0
    seconds, gaps = [], []
    statuses: dict[str, int] = {}
    invalid = applied = 0
    at_100 = (0, 0)

    hopeless: set[tuple] = set()
    """Specs of pods whose misfit cycle was proved to place nothing since the last applied
    cycle: skipped (placements only take capacity; a speed rule, not a proof)."""

    def spec(p: int) -> tuple:
        return (
            int(pods.num_gpu[p]),
            int(pods.milli[p]),
            int(pods.cpu_milli[p]),
            int(pods.memory_mib[p]),
            pods.spec[p],
        )

    def run_cycle(i: int, sources: list[int], pending: list[int]) -> bool:
        nonlocal invalid, applied, moves_total
        left = None if budget is None else int(budget * (i + 1)) - len(migrated)
        if left is not None and left <= 0:  # the budget is spent: no cycle can move a new pod
            return False
        t0 = time.perf_counter()
        dests = _destinations(state, pods, order, book, sources, DESTINATIONS)
        out = solve_cycle(
            state,
            pods,
            order,
            book,
            sources,
            dests,
            pending,
            left,
            migrated,
            time_limit,
            workers,
            seed + i,
        )
        statuses[out.status] = statuses.get(out.status, 0) + 1
        gaps.append(out.gap)
        useful = (out.placed if pending else out.objective > out.baseline) and out.moves
        if useful or (pending and out.placed):
            errors = check_cycle(state, pods, order, book, out.moves, out.placed, left, migrated)
            if errors:
                invalid += 1
            else:
                for a in out.moves:  # take every moved pod off first, then place them
                    p = int(order[a])
                    node = int(book.node[a])
                    state.remove(pods, p, node, book.gpus[a])
                    policy.placed(state, pods, p, node)
                    book.take(a)
                for a, (node, gpus) in (out.moves | out.placed).items():
                    p = int(order[a])
                    state.place(pods, p, node, list(gpus))
                    policy.placed(state, pods, p, node)
                    book.put(a, node, tuple(gpus))
                moves_total += len(out.moves)
                migrated.update(out.moves)
                applied += 1
                hopeless.clear()
        elif pending and out.status == "optimal":
            hopeless.add(spec(int(order[pending[0]])))
        seconds.append(time.perf_counter() - t0)
        return bool(out.placed)

    for i in range(n):
        p = int(order[i])
        nodes = state.feasible(pods, p)
        if len(nodes):
            node, gpus = policy.choose(state, pods, p, nodes, rng)
            state.place(pods, p, node, gpus)
            policy.placed(state, pods, p, node)
            book.put(i, int(node), tuple(int(g) for g in gpus))
        elif budget != 0 and spec(p) not in hopeless:
            sources = _fit_after(state, pods, order, book, p)
            if sources:
                run_cycle(i, sources, [i])
        if every and budget != 0 and (i + 1) % every == 0:
            run_cycle(i, _fragmented(state, CONSOLIDATE_SOURCES), [])
        used[i] = state.used_milli
        if arrived[i] <= target:
            at_100 = (len(migrated), i + 1)
    return DefragCurve(
        policy=f"{policy.name} defrag {'unlimited' if budget is None else f'{budget:g}'}",
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
        applied=applied,
        cycle_seconds=np.array(seconds),
        gaps=np.array(gaps),
        statuses=statuses,
        invalid=invalid,
        migrated_at_100=at_100[0],
        arrived_pods_at_100=at_100[1],
    )
