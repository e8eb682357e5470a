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
* **The cycle's model** (:func:`solve_cycle`, CP-SAT), exact over a neighbourhood of nodes:
  the *source* nodes (for a misfit cycle, those where the pod would fit if their movable pods
  left, fewest milli-GPU to move first; for a consolidation cycle, those with the most
  milli-GPU free on partly used GPUs) whose movable pods -- shared-GPU and CPU-only pods;
  whole-GPU pods stay -- may move, and the *destination* nodes (where those pods fit tightest,
  best fit). Every resident pod of a source node is assigned exactly one place (pods are never
  removed); each pending pod at most one. GPU milli-GPU, CPU and memory of every node of the
  neighbourhood hold. Objective, lexicographic by weights: (1) the milli-GPU of pending pods
  placed; (2) ``FREE_WEIGHT`` per fully free GPU of the neighbourhood (FGD's fragmentation
  measure for the trace's dominant typical pod, one whole GPU: the milli-GPU free on partly
  used GPUs, which moves inside the neighbourhood trade for fully free GPUs one to one) minus
  ``MOVE_WEIGHT`` per pod migrated for the first time (a second move of a pod costs 1). The
  current placement is the hint: "move nothing" is feasible, so a cycle never has to apply
  anything worse than the state. A misfit cycle applies only if it places the pod; a
  consolidation cycle only if its objective beats moving nothing.
* **Check.** Every cycle's result passes :func:`check_cycle` before it is applied: from
  scratch, the capacities once the moved pods are taken off their old places, then
  :func:`.batch.check_placement` of the moved and new pods on them, every moved pod placed
  exactly once, and the budget. A cycle that fails counts in ``invalid`` and is not applied.

Why migration can help, and how much (the study in ``docs/benchmarks.md``): at 100 % arrived
the unallocated GPUs are the demand of the pods that failed, and what made them fail is free
milli-GPU in fragments. On the default trace, seed 42, 276 of the ~300 free GPUs are partly
used GPUs and 189 of those are the 190 milli-GPU beside each lone 810-milli pod: only the
trace's few pods of <= 190 milli-GPU fit there, and no migration changes that. What
migration can consolidate is the rest (pairs of half-empty GPUs: 470, 320 + 470, ...).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.replay import (
    TUNE_RATIO,
    Curve,
    PodSet,
    Policy,
    TraceCluster,
    TraceState,
    start_replay,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions

FREE_WEIGHT = 10
"""Objective weight of one fully free GPU in the neighbourhood."""
MOVE_WEIGHT = 4
"""Objective weight of one pod's first migration: a GPU freed pays for two moves, not three."""
SOURCES = 4
"""Source nodes of a misfit cycle."""
DESTINATIONS = 12
"""Destination nodes of a cycle."""
CONSOLIDATE_SOURCES = 6
"""Source nodes of a consolidation cycle."""

LIGHT_PRESOLVE = {"symmetry_level": 0, "cp_model_probing_level": 0, "max_presolve_iterations": 1}
"""CP-SAT parameters of a cycle within a wall-time budget (:func:`budgeted_consolidation`).
Measured on the 1,213-node cluster: with the full presolve a 2,056-variable cycle returned
no solution at 0.2 s (presolve took it all); without presolve, 8,817 variables returned
none in 0.5 s nor 41,489 in 3 s; with this light presolve both returned improving moves."""

Where = tuple[int, tuple[int, ...]]
"""(node, GPUs)."""


class Book:
    """Where every arrival is (``node[a]`` -1: not placed) and who is on each node."""

    def __init__(self, n_arrivals: int, n_nodes: int) -> None:
        self.node = np.full(n_arrivals, -1, dtype=np.int64)
        self.gpus: list[tuple[int, ...]] = [()] * n_arrivals
        self.on: list[set[int]] = [set() for _ in range(n_nodes)]

    def put(self, a: int, node: int, gpus: tuple[int, ...]) -> None:
        self.node[a], self.gpus[a] = node, gpus
        self.on[node].add(a)

    def take(self, a: int) -> None:
        self.on[int(self.node[a])].discard(a)
        self.node[a], self.gpus[a] = -1, ()

    def copy(self) -> Book:
        """An independent copy."""
        new = Book.__new__(Book)
        new.node, new.gpus, new.on = self.node.copy(), list(self.gpus), [set(s) for s in self.on]
        return new


def movable(pods: PodSet, p: int) -> bool:
    """Shared-GPU and CPU-only pods may move; whole-GPU pods stay where they are."""
    return int(pods.milli[p]) < MILLI


@dataclass
class CycleOutcome:
    """One cycle's answer: ``moves`` {arrival: new place} of residents that move,
    ``placed`` {arrival: place} of pending pods placed."""

    moves: dict[int, Where]
    placed: dict[int, Where]
    status: str
    """CP-SAT's ``optimal`` / ``feasible``, or ``no_solution``."""
    seconds: float = 0.0
    objective: float = 0.0
    bound: float = 0.0
    baseline: float = 0.0
    """The objective of moving nothing (the hint)."""
    variables: int = 0
    nodes: int = 0
    build_seconds: float = 0.0
    """Building the model (``seconds`` is CP-SAT's solve alone)."""

    @property
    def gap(self) -> float:
        """(bound - objective) / |bound| of the cycle's model (0 when proved optimal; NaN
        when CP-SAT returned no solution: the cycle then moves nothing and proves nothing)."""
        if self.status == "no_solution":
            return math.nan
        if self.status == "optimal":
            return 0.0
        return (self.bound - self.objective) / max(abs(self.bound), 1.0)


def check_cycle(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    moves: dict[int, Where],
    placed: dict[int, Where],
    budget_left: int | None,
    migrated: set[int],
) -> list[str]:
    """Everything wrong with applying a cycle to ``state`` ([] if valid), recomputed from
    scratch: the moved pods must be placed now (never removed) and move somewhere new; once
    they are taken off their places, the moved and the newly placed pods must fit together
    (:func:`.batch.check_placement`: GPU type, CPU, memory, distinct GPUs, milli-GPU per
    GPU); pods migrated for the first time must be at most ``budget_left``."""
    errors: list[str] = []
    released = state.copy()
    for a, (node, gpus) in moves.items():
        if a in placed:
            errors.append(f"arrival {a} both moved and newly placed")
        if book.node[a] < 0:
            errors.append(f"arrival {a} moved but not placed")
            continue
        if (int(book.node[a]), tuple(book.gpus[a])) == (node, tuple(gpus)):
            errors.append(f"arrival {a} 'moved' to where it is")
        p, old = int(order[a]), int(book.node[a])
        m = int(pods.milli[p])
        released.cpu_left[old] += pods.cpu_milli[p]
        released.mem_left[old] += pods.memory_mib[p]
        for g in book.gpus[a]:
            released.gpu_left[old, g] += m
    for a in placed:
        if book.node[a] >= 0:
            errors.append(f"arrival {a} placed again while placed")
    items = [*moves, *placed]
    placement = [(i, *(moves | placed)[a]) for i, a in enumerate(items)]
    errors += check_placement(released, pods, [int(order[a]) for a in items], placement)
    new = sum(1 for a in moves if a not in migrated)
    if budget_left is not None and new > budget_left:
        errors.append(f"{new} pods migrated for the first time > budget left {budget_left}")
    return errors


def _gpu_usage(state: TraceState, pods: PodSet, order: np.ndarray, book: Book, nodes, mov):
    """Per node of ``nodes``: milli-GPU per GPU, CPU and memory held by the movable residents."""
    slots = state.cluster.slots
    use = {n: np.zeros(slots, dtype=np.int64) for n in nodes}
    cpu = dict.fromkeys(nodes, 0)
    mem = dict.fromkeys(nodes, 0)
    for a in mov:
        n, p = int(book.node[a]), int(order[a])
        for g in book.gpus[a]:
            use[n][g] += int(pods.milli[p])
        cpu[n] += int(pods.cpu_milli[p])
        mem[n] += int(pods.memory_mib[p])
    return use, cpu, mem


@dataclass
class _Neighbourhood:
    """A cycle's nodes, their movable residents and what the nodes hold once those left."""

    nodes: list[int]
    mov: list[int]
    """Arrivals on the source nodes that may move (:func:`movable`), ascending."""
    cap: np.ndarray
    """``cap[i, g]``: milli-GPU GPU ``g`` of ``nodes[i]`` holds once ``mov`` left (0: no GPU)."""
    cpu_cap: np.ndarray
    mem_cap: np.ndarray

    def fits(self, state: TraceState, pods: PodSet, ps: np.ndarray) -> np.ndarray:
        """``fits[j, i, g]``: pod ``ps[j]`` (shared-GPU or CPU-only) may take GPU ``g`` of
        ``nodes[i]`` (for a CPU-only pod: slot 0 stands for the node), by CPU, memory, GPU
        type and milli-GPU -- the options of :func:`solve_cycle`, all at once."""
        types = state.cluster.type_of[self.nodes]
        node_ok = (pods.cpu_milli[ps][:, None] <= self.cpu_cap[None, :]) & (
            pods.memory_mib[ps][:, None] <= self.mem_cap[None, :]
        )
        gpu = pods.num_gpu[ps] > 0
        node_ok &= ~gpu[:, None] | pods.type_ok[ps][:, types]
        out = node_ok[:, :, None] & (self.cap[None, :, :] >= pods.milli[ps][:, None, None])
        cpu_only = np.zeros(self.cap.shape[1], dtype=bool)
        cpu_only[0] = True
        out[~gpu] = node_ok[~gpu][:, :, None] & cpu_only[None, None, :]
        return out


def _neighbourhood(
    state: TraceState, pods: PodSet, order: np.ndarray, book: Book, sources, destinations
) -> _Neighbourhood:
    nodes = sorted(set(sources) | set(destinations))
    mov = sorted(a for n in sources for a in book.on[n] if movable(pods, int(order[a])))
    use, mcpu, mmem = _gpu_usage(state, pods, order, book, nodes, mov)
    cap = np.array(
        [np.where(state.exists[n], state.gpu_left[n] + use[n], 0) for n in nodes], dtype=np.int64
    ).reshape(len(nodes), state.cluster.slots)
    cpu_cap = np.array([int(state.cpu_left[n]) + mcpu[n] for n in nodes], dtype=np.int64)
    mem_cap = np.array([int(state.mem_left[n]) + mmem[n] for n in nodes], dtype=np.int64)
    return _Neighbourhood(nodes, mov, cap, cpu_cap, mem_cap)


def cycle_variables(
    state: TraceState, pods: PodSet, order: np.ndarray, book: Book, sources, destinations
) -> int:
    """The placement variables :func:`solve_cycle` would create for a consolidation cycle
    (no pending pod) over ``sources`` and ``destinations``, counted with numpy, unbuilt."""
    hood = _neighbourhood(state, pods, order, book, sources, destinations)
    if not hood.mov:
        return 0
    return int(hood.fits(state, pods, order[hood.mov]).sum())


def solve_cycle(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    sources: list[int],
    destinations: list[int],
    pending: list[int],
    budget_left: int | None,
    migrated: set[int],
    time_limit: float,
    workers: int = 1,
    seed: int = 0,
    light: bool = False,
    deadline: float | None = None,
) -> CycleOutcome:
    """The cycle's CP-SAT model over ``sources`` (movable residents) and ``destinations``
    for the ``pending`` arrivals (module docstring); the current placement is the hint.
    ``time_limit`` is CP-SAT's; the model's build time is reported apart (``build_seconds``).
    ``light``: CP-SAT's presolve does one pass, without probing or symmetry detection
    (:data:`LIGHT_PRESOLVE`); the full presolve alone can take more than a short limit on a
    model of a few thousand variables, and then no solution comes back at all.
    ``deadline`` (a :func:`time.perf_counter` instant): CP-SAT's limit is cut to end there,
    and no solve starts if the build already passed it."""
    from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by cycles only

    built = time.perf_counter()
    cluster = state.cluster
    hood = _neighbourhood(state, pods, order, book, sources, destinations)
    nodes, mov = hood.nodes, hood.mov
    row = {n: i for i, n in enumerate(nodes)}
    cap = {n: hood.cap[i] for i, n in enumerate(nodes)}
    cpu_cap = {n: int(hood.cpu_cap[i]) for i, n in enumerate(nodes)}
    mem_cap = {n: int(hood.mem_cap[i]) for i, n in enumerate(nodes)}
    model = cp_model.CpModel()
    gpu_terms: dict[tuple[int, int], list] = {}
    cpu_terms: dict[int, list] = {}
    mem_terms: dict[int, list] = {}
    options: dict[int, list[tuple[Where, object]]] = {}  # arrival -> [(place, var)]
    hint_vars: list[int] = []
    hint_values: list[int] = []

    def option(a: int, p: int, node: int, gpus: tuple[int, ...], hinted: bool):
        x = model.new_bool_var("")
        m = int(pods.milli[p])
        for g in gpus:
            gpu_terms.setdefault((node, g), []).append((m, x))
        cpu_terms.setdefault(node, []).append((int(pods.cpu_milli[p]), x))
        mem_terms.setdefault(node, []).append((int(pods.memory_mib[p]), x))
        hint_vars.append(x.index)
        hint_values.append(int(hinted))
        options.setdefault(a, []).append(((node, gpus), x))
        return x

    def places(p: int) -> list[Where]:
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        out: list[Where] = []
        for n in nodes:
            if int(pods.cpu_milli[p]) > cpu_cap[n] or int(pods.memory_mib[p]) > mem_cap[n]:
                continue
            if k == 0:
                out.append((n, ()))
                continue
            if not pods.type_ok[p, cluster.type_of[n]]:
                continue
            fit = np.flatnonzero(cap[n] >= m)
            if m < MILLI:
                out += [(n, (int(g),)) for g in fit]
            elif len(fit) >= k:  # whole GPUs: the lowest-indexed free ones (GPUs are alike)
                out.append((n, tuple(int(g) for g in fit[:k])))
        return out

    # The movable pods' options at once (numpy; the order of places() above: node, GPU).
    fits = hood.fits(state, pods, order[mov]) if mov else np.zeros((0, 0, 0), dtype=bool)
    moved_new, moved_old = [], []
    stays: dict[int, Any] = {}  # movable arrival -> its "stay where it is" variable
    for j, a in enumerate(mov):
        p = int(order[a])
        here = (int(book.node[a]), tuple(book.gpus[a]))
        if int(pods.num_gpu[p]):
            spots = [(nodes[i], (int(g),)) for i, g in zip(*np.nonzero(fits[j]), strict=True)]
        else:
            spots = [(nodes[i], ()) for i in np.flatnonzero(fits[j, :, 0])]
        if here not in spots:
            spots.append(here)
        xs = [option(a, p, n, g, (n, g) == here) for n, g in spots]
        model.add_exactly_one(xs)
        stay = stays[a] = next(x for (w, x) in options[a] if w == here)
        (moved_old if a in migrated else moved_new).append(stay.Not())
    placed_terms = []
    for a in pending:
        p = int(order[a])
        xs = [option(a, p, n, g, False) for n, g in places(p)]
        if xs:
            model.add_at_most_one(xs)
            placed_terms += [(int(pods.demand[p]), x) for x in xs]

    def at_most(terms: list, bound: int) -> None:
        if sum(c for c, _ in terms) > bound:
            coefs, xs = zip(*terms, strict=True)
            model.add(cp_model.LinearExpr.weighted_sum(xs, coefs) <= bound)

    for (n, g), terms in gpu_terms.items():
        at_most(terms, int(cap[n][g]))
    for n, terms in cpu_terms.items():
        at_most(terms, cpu_cap[n])
    for n, terms in mem_terms.items():
        at_most(terms, mem_cap[n])
    free = []
    for n in nodes:
        for g in np.flatnonzero(cap[n] == MILLI):
            f = model.new_bool_var("")
            for _c, x in gpu_terms.get((n, int(g)), []):
                model.add_implication(x, f.Not())
            hint_vars.append(f.index)
            hint_values.append(int(state.gpu_left[n, g] == MILLI))
            free.append(f)
    model.proto.solution_hint.vars.extend(hint_vars)
    model.proto.solution_hint.values.extend(hint_values)
    if budget_left is not None:
        model.add(sum(moved_new) <= budget_left)
    big = FREE_WEIGHT * len(free) + (MOVE_WEIGHT + 1) * len(mov) + 1
    model.maximize(
        big * sum(c * x for c, x in placed_terms)
        + FREE_WEIGHT * sum(free)
        - MOVE_WEIGHT * sum(moved_new)
        - sum(moved_old)
    )
    nvars = len(hint_vars) - len(free)
    baseline = float(
        FREE_WEIGHT
        * sum(
            int(state.gpu_left[n, g] == MILLI)
            for n in nodes
            for g in np.flatnonzero(hood.cap[row[n]] == MILLI)
        )
    )
    t0 = time.perf_counter()
    built = t0 - built
    if deadline is not None:
        time_limit = min(time_limit, deadline - t0)
    run = None
    if time_limit > 0:  # else the build used the time up: no solve, "move nothing"
        options_ = SolveOptions(time_limit_s=time_limit, threads=workers, seed=seed)
        run = CpSat.run(
            model,
            options_,
            CancellationToken(),
            time_limit,
            single_strategy=True,
            parameters=LIGHT_PRESOLVE if light else None,
        )
    seconds = time.perf_counter() - t0
    if run is None or not run.has_solution:
        return CycleOutcome(
            {},
            {},
            "no_solution",
            seconds,
            baseline,
            baseline,
            baseline,
            nvars,
            len(nodes),
            built,
        )
    solver = run.solver  # type: ignore[attr-defined]
    value = np.asarray(solver.response_proto.solution, dtype=np.int64)  # by variable index
    moves: dict[int, Where] = {}
    placed: dict[int, Where] = {}
    for a, opts in options.items():
        if a in stays and value[stays[a].index]:
            continue  # stays where it is (most do): no need to look at its other options
        chosen = [w for w, x in opts if value[x.index]]
        if not chosen:
            continue
        if a in pending:
            placed[a] = chosen[0]
        elif chosen[0] != (int(book.node[a]), tuple(book.gpus[a])):
            moves[a] = chosen[0]
    status = "optimal" if run.status == RunStatus.OPTIMAL else "feasible"
    return CycleOutcome(
        moves,
        placed,
        status,
        seconds,
        float(solver.ObjectiveValue()),
        float(solver.BestObjectiveBound()),
        baseline,
        nvars,
        len(nodes),
        built,
    )


def _fit_after(state: TraceState, pods: PodSet, order, book: Book, p: int) -> list[int]:
    """Source nodes for a misfit pod ``p``: nodes where it would fit if their movable pods
    left, fewest milli-GPU to move first (then most CPU free)."""
    cluster = state.cluster
    k, m = int(pods.num_gpu[p]), int(pods.milli[p])
    scored = []
    for n in range(cluster.n):
        if k and not pods.type_ok[p, cluster.type_of[n]]:
            continue
        mov = [a for a in book.on[n] if movable(pods, int(order[a]))]
        use = np.zeros(cluster.slots, dtype=np.int64)
        cpu, mem = int(state.cpu_left[n]), int(state.mem_left[n])
        for a in mov:
            q = int(order[a])
            for g in book.gpus[a]:
                use[g] += int(pods.milli[q])
            cpu += int(pods.cpu_milli[q])
            mem += int(pods.memory_mib[q])
        if cpu < pods.cpu_milli[p] or mem < pods.memory_mib[p]:
            continue
        cap = np.where(state.exists[n], state.gpu_left[n] + use, -1)
        if k:
            ok = np.sort(cap[cap >= m])[::-1]
            if len(ok) < k:
                continue
            # milli-GPU to move off the k roomiest GPUs, at least what the pod lacks there
            move = int((ok[:k] - state.gpu_left[n][np.argsort(-cap)[:k]]).sum())
        else:
            move = 0
        need_cpu = max(0, int(pods.cpu_milli[p]) - int(state.cpu_left[n]))
        scored.append((move, need_cpu, -cpu, n))
    scored.sort()
    return [n for *_, n in scored[:SOURCES]]


def _destinations(
    state: TraceState, pods: PodSet, order, book: Book, sources: list[int], count: int
) -> list[int]:
    """Nodes (not sources) where the sources' movable pods fit tightest, best fit first."""
    cluster = state.cluster
    chosen: dict[int, int] = {}
    src = set(sources)
    for s in sources:
        for a in sorted(book.on[s]):
            p = int(order[a])
            if not movable(pods, p):
                continue
            m = int(pods.milli[p])
            ok = (state.cpu_left >= pods.cpu_milli[p]) & (state.mem_left >= pods.memory_mib[p])
            if m:
                ok &= pods.type_ok[p][cluster.type_of]
                left = np.where(state.gpu_left >= m, state.gpu_left - m, MILLI + 1).min(axis=1)
            else:
                left = -state.cpu_left  # CPU-only: the most CPU free
            ok[list(src)] = False
            cand = np.flatnonzero(ok)
            for n in cand[np.argsort(left[cand], kind="stable")[:3]]:
                chosen[int(n)] = min(chosen.get(int(n), 10**9), int(left[n]))
    return [n for n, _ in sorted(chosen.items(), key=lambda kv: kv[1])[:count]]


def _fragmented(state: TraceState, count: int) -> list[int]:
    """Consolidation sources: nodes with the most milli-GPU free on partly used GPUs."""
    part = np.where((state.gpu_left > 0) & (state.gpu_left < MILLI), state.gpu_left, 0).sum(1)
    cand = np.flatnonzero(part > 0)
    return [int(n) for n in cand[np.argsort(-part[cand], kind="stable")[:count]]]


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
    """Each cycle's :attr:`CycleOutcome.gap` (NaN where CP-SAT returned no solution)."""
    statuses: dict[str, int] = field(default_factory=dict)
    invalid: int = 0
    migrated_at_100: int = 0
    arrived_pods_at_100: int = 0


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
    if budget is not None and not 0 <= budget <= 1:
        raise ValueError(f"budget must be a fraction in [0, 1] or None, not {budget!r}")
    order, state, rng = start_replay(cluster, pods, policy, seed, ratio, protocol, order, tie_break)
    order = np.asarray(order, dtype=np.int64)
    n = len(order)
    book = Book(n, cluster.n)
    arrived = np.cumsum(pods.demand[order]) if n else np.zeros(0, dtype=np.int64)
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

    if stop is not None and n:
        n = min(n, int(np.searchsorted(arrived, stop * target, side="right")) + 1)
        order, arrived, used = order[:n], arrived[:n], used[:n]
        book.node, book.gpus = book.node[:n], book.gpus[:n]
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


# --- A cycle within a wall-time budget, and a bound for the whole cluster (issue 18) ------

BUILD_SECONDS_PER_VARIABLE = 30e-6
"""Wall time to build one placement variable of :func:`solve_cycle` (its options in numpy,
then the CP-SAT model in Python), measured on the 1,213-node openb cluster: 0.16 s for 7,257
variables, 0.68 s for 25,953, 3.1 s for 101,792 (load average 3 on 2 cores)."""
SOLVE_SECONDS_PER_VARIABLE = 15e-6
"""Wall time CP-SAT (:data:`LIGHT_PRESOLVE`, one worker) needs per variable to load such a
model, presolve it and return a first solution (measured as above)."""
MODEL_SHARE = 0.6
"""The share of a cycle's budget its model may take at those rates (build + first
solution); the rest goes to choosing the nodes, CP-SAT's search, decoding and the check."""
FINISH_SECONDS = 0.005
"""Kept back from CP-SAT's limit for checking the answer (measured: 2-11 ms)."""
FINISH_SECONDS_PER_VARIABLE = 10e-6
"""Also kept back, per variable, for CP-SAT running past its limit, decoding the answer and
freeing the model (measured at ~42,000 variables: CP-SAT up to 0.28 s past its limit, then
0.04-0.14 s to decode and free; at 2,000 variables, a few ms)."""
GROWTH = 1.5
"""The neighbourhood grows by this factor (source nodes) while its model fits the budget."""


@dataclass
class TimedCycle:
    """A consolidation cycle run within a budget: its answer, where the time went, and the
    check's verdict (``errors`` [] : the answer may be applied)."""

    outcome: CycleOutcome
    """CP-SAT's part (on the state after the greedy moves)."""
    moves: dict[int, Where]
    """The cycle's answer: {arrival: new place}, the greedy's and CP-SAT's moves together."""
    greedy_moves: int
    freed: int
    """GPUs fully freed by ``moves`` (net), recomputed from the state; 0 when the answer is
    not applied (the check failed)."""
    gain: float
    """``FREE_WEIGHT`` x ``freed`` minus the move costs of ``moves``; 0 when the answer is not
    applied."""
    sources: list[int]
    destinations: list[int]
    errors: list[str]
    select_seconds: float
    """The greedy and choosing the neighbourhood (sizing it to the budget included)."""
    build_seconds: float
    solve_seconds: float
    total_seconds: float
    """Everything: greedy, choice, build, solve, decode and :func:`check_cycle`."""


def _lone_moves(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    limit: int | None,
    migrated: set[int],
) -> dict[int, Where]:
    """A greedy over the whole cluster, applied to ``state`` and ``book`` as it goes: each
    shared pod alone on its GPU (smallest first) moves to the partly used GPU elsewhere
    that holds it with the least room left, on a node whose free CPU and memory hold it
    (its own node's always do) and whose GPU type it accepts. Each move empties a GPU and
    fills none: a gain of ``FREE_WEIGHT`` minus the move's cost. At most ``limit`` pods
    not migrated before move (None: no limit)."""
    cluster = state.cluster
    slots = cluster.slots
    count = np.zeros((cluster.n, slots), dtype=np.int64)
    who: dict[tuple[int, int], int] = {}
    for a in np.flatnonzero(book.node >= 0):
        p = int(order[a])
        if 0 < pods.milli[p] < MILLI:
            key = (int(book.node[a]), int(book.gpus[a][0]))
            count[key] += 1
            who[key] = int(a)
    lone = sorted((int(pods.milli[order[a]]), key) for key, a in who.items() if count[key] == 1)
    partly = state.exists & (state.gpu_left > 0) & (state.gpu_left < MILLI)
    most_room = int(state.gpu_left[partly].max()) if partly.any() else 0
    moves: dict[int, Where] = {}
    for m, (n, g) in lone:
        if m > most_room:  # rooms only shrink: no later (larger) pod fits either
            break
        a = who[(n, g)]
        if count[n, g] != 1 or (limit is not None and a not in migrated and limit <= 0):
            continue
        p = int(order[a])
        left = state.gpu_left
        room = state.exists & (left >= m) & (left < MILLI)
        room[n, g] = False
        node_ok = (state.cpu_left >= pods.cpu_milli[p]) & (state.mem_left >= pods.memory_mib[p])
        node_ok[n] = True  # its own CPU and memory are already there
        room &= (node_ok & pods.type_ok[p][cluster.type_of])[:, None]
        cand = np.flatnonzero(room.ravel())
        if not len(cand):
            continue
        n2, g2 = divmod(int(cand[np.argmin(left.ravel()[cand])]), slots)
        state.remove(pods, p, n, [g])
        state.place(pods, p, n2, [g2])
        book.take(a)
        book.put(a, n2, (g2,))
        count[n, g], count[n2, g2] = 0, count[n2, g2] + 1
        moves[a] = (n2, (g2,))
        if limit is not None and a not in migrated:
            limit -= 1
    return moves


def _gain(state: TraceState, pods: PodSet, order, book: Book, moves, migrated) -> tuple[int, float]:
    """The GPUs fully freed (net) and the consolidation objective's change if ``moves`` are
    applied to ``state``."""
    after = state.copy()
    for a in moves:
        after.remove(pods, int(order[a]), int(book.node[a]), book.gpus[a])
    for a, (node, gpus) in moves.items():
        after.place(pods, int(order[a]), node, list(gpus))

    def free(s: TraceState) -> int:
        return int((s.exists & (s.gpu_left == MILLI)).sum())

    cost = sum(1 if a in migrated else MOVE_WEIGHT for a in moves)
    freed = free(after) - free(state)
    return freed, float(FREE_WEIGHT * freed - cost)


def budgeted_consolidation(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    ranked: list[int],
    budget_s: float,
    budget_left: int | None = None,
    migrated: set[int] | None = None,
    seed: int = 0,
) -> TimedCycle:
    """A consolidation cycle whose wall time, from its first step to checking its answer,
    stays within ``budget_s`` plus a small overhead:

    1. the greedy of :func:`_lone_moves` over the whole cluster (on copies of the state);
    2. :func:`solve_cycle` (no pending pod) on the state after it: the source nodes are the
       longest prefix of ``ranked`` (grown by :data:`GROWTH`) whose model -- its variables
       counted in numpy before anything is built (:func:`cycle_variables`) -- costs at most
       :data:`MODEL_SHARE` of the budget at the measured per-variable rates; CP-SAT
       (:data:`LIGHT_PRESOLVE`) gets what is left after the build, less what decoding and
       checking take (:data:`FINISH_SECONDS`, :data:`FINISH_SECONDS_PER_VARIABLE`);
    3. both parts' moves together, checked from scratch against the original state
       (:func:`check_cycle`), and their gain recomputed (:func:`_gain`)."""
    start = time.perf_counter()
    migrated = set() if migrated is None else migrated
    work, work_book = state.copy(), book.copy()
    greedy = _lone_moves(work, pods, order, work_book, budget_left, migrated)
    work_migrated = migrated | set(greedy)
    work_left = None
    if budget_left is not None:
        work_left = budget_left - sum(a not in migrated for a in greedy)
    afford = MODEL_SHARE * budget_s / (BUILD_SECONDS_PER_VARIABLE + SOLVE_SECONDS_PER_VARIABLE)
    chosen: tuple[list[int], list[int], int] = ([], [], 0)
    k = 1
    while ranked:
        sources = ranked[:k]
        dests = _destinations(work, pods, order, work_book, sources, DESTINATIONS)
        count = cycle_variables(work, pods, order, work_book, sources, dests)
        if chosen[0] and count > afford:
            break
        chosen = (sources, dests, count)
        if k >= len(ranked):
            break
        k = min(len(ranked), max(k + 1, int(k * GROWTH)))
    sources, dests, count = chosen
    selected = time.perf_counter()
    finish = FINISH_SECONDS + FINISH_SECONDS_PER_VARIABLE * count
    out = solve_cycle(
        work,
        pods,
        order,
        work_book,
        sources,
        dests,
        [],
        work_left,
        work_migrated,
        budget_s,
        1,
        seed,
        light=True,
        deadline=start + budget_s - finish,
    )
    moves = {
        a: w
        for a, w in (greedy | out.moves).items()
        if w != (int(book.node[a]), tuple(book.gpus[a]))
    }
    errors = check_cycle(state, pods, order, book, moves, {}, budget_left, migrated)
    freed, gain = (0, 0.0) if errors else _gain(state, pods, order, book, moves, migrated)
    return TimedCycle(
        out,
        moves,
        len(greedy),
        freed,
        gain,
        sources,
        dests,
        errors,
        selected - start,
        out.build_seconds,
        out.seconds,
        time.perf_counter() - start,
    )


def bins_lower_bound(sizes: np.ndarray, capacity: int = MILLI) -> int:
    """Martello and Toth's L2: a lower bound on the bins of ``capacity`` that items of
    ``sizes`` (each at most ``capacity``) need. For every threshold ``t`` <= capacity / 2,
    the items above ``capacity - t`` and those in (capacity / 2, capacity - t] each need a
    bin of their own, and the items in [t, capacity / 2] fill what those leave free first."""
    s = np.sort(np.asarray(sizes, dtype=np.int64))
    best = -(-int(s.sum()) // capacity)
    half = capacity // 2
    for t in {0, *(int(x) for x in s[s <= half])}:
        big = s > capacity - t
        mid = (s > half) & ~big
        small = s[(s >= t) & (s <= half)]
        room = int(mid.sum()) * capacity - int(s[mid].sum())
        best = max(
            best, int(big.sum() + mid.sum()) + max(0, -(-(int(small.sum()) - room) // capacity))
        )
    return best


@dataclass
class ClusterBound:
    """What any consolidation of the whole cluster could reach (:func:`cluster_bound`)."""

    free_now: int
    """Fully free GPUs of the cluster now."""
    free_max: int
    """At most this many GPUs can be fully free after any migration of the movable pods."""
    counting_gain: float
    """The counting bound on the gain (:func:`cluster_bound`)."""
    lp_gain: float | None
    """The pattern LP's bound on the gain (:func:`pattern_bound`; None if not computed)."""

    @property
    def gain(self) -> float:
        """At most this gain in the cycle's objective (``FREE_WEIGHT`` per GPU freed, net,
        minus the move costs) for any set of migrations over the whole cluster."""
        return self.counting_gain if self.lp_gain is None else min(self.counting_gain, self.lp_gain)


def cluster_bound(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    migrated: set[int] | None = None,
    lp: bool = True,
) -> ClusterBound:
    """An upper bound on the consolidation objective over the whole cluster, valid for any
    migrations of the movable pods (budget ignored: a relaxation); the smaller of two, the
    second (``lp``) the pattern LP of :func:`pattern_bound`. The first, a counting argument:

    * The whole-GPU pods stay, each GPU they hold is never free; every shared-GPU pod stays
      placed, on one GPU, so the shared pods need at least :func:`bins_lower_bound` of
      their milli-GPU sizes GPUs (CPU, memory, GPU types and nodes relaxed). Hence
      ``free_max`` = GPUs - GPUs of whole-GPU pods - that bound.
    * A GPU busy now and free after has had every pod on it migrated, and a shared pod
      sits on one GPU: a net gain of ``d`` free GPUs migrates the pods of at least ``d``
      distinct busy GPUs, costing at least the ``d`` cheapest GPUs' move costs
      (``MOVE_WEIGHT`` per pod, 1 for a pod migrated before, as in :func:`solve_cycle`).

    So ``gain <= max over 0 <= d <= free_max - free_now of FREE_WEIGHT d - (the d cheapest
    GPUs' costs)``."""
    migrated = set() if migrated is None else migrated
    exists = state.exists
    placed = np.flatnonzero(book.node >= 0)
    milli = pods.milli[order[placed]]
    whole = int(sum(len(book.gpus[a]) for a in placed[milli >= MILLI]))
    shared = placed[(milli > 0) & (milli < MILLI)]
    free_now = int((exists & (state.gpu_left == MILLI)).sum())
    free_max = int(exists.sum()) - whole - bins_lower_bound(pods.milli[order[shared]])
    cost: dict[tuple[int, int], int] = {}
    for a in shared:
        key = (int(book.node[a]), int(book.gpus[a][0]))
        cost[key] = cost.get(key, 0) + (1 if int(a) in migrated else MOVE_WEIGHT)
    costs = np.sort(list(cost.values()))
    d_max = max(0, min(free_max - free_now, len(costs)))
    gains = FREE_WEIGHT * np.arange(d_max + 1) - np.concatenate(([0], np.cumsum(costs[:d_max])))
    lp_gain = pattern_bound(state, pods, order, book, migrated) if lp else None
    return ClusterBound(free_now, free_max, float(gains.max()), lp_gain)


MAX_PATTERNS = 50_000
"""Final patterns the pattern LP may enumerate; beyond, the sizes are rounded down."""


def _maximal_patterns(sizes: list[int], capacity: int = MILLI) -> np.ndarray | None:
    """Every multiset of ``sizes`` (as counts, one column per size) that fits ``capacity``
    and where no size fits beside it any more; None if there are more than
    :data:`MAX_PATTERNS`."""
    out: list[list[int]] = []
    smallest = min(sizes)

    def extend(i: int, left: int, counts: list[int]) -> bool:
        if i == len(sizes):
            if left < smallest:
                out.append(counts)
            return len(out) <= MAX_PATTERNS
        return all(
            extend(i + 1, left - c * sizes[i], [*counts, c])
            for c in range(left // sizes[i], -1, -1)
        )

    if not extend(0, capacity, []):
        return None
    return np.array(out, dtype=np.int64).reshape(len(out), len(sizes))


def pattern_bound(
    state: TraceState,
    pods: PodSet,
    order: np.ndarray,
    book: Book,
    migrated: set[int] | None = None,
) -> float:
    """An upper bound on the consolidation gain over the whole cluster: an LP relaxation of
    the GPUs' contents (CPU, memory, GPU types and nodes relaxed), solved by HiGHS.

    The GPUs that hold no whole-GPU pod, each with its **pattern** now ``P`` (its shared
    pods: (milli, move cost) each), ``N_P`` GPUs of each. After any consolidation each such
    GPU **kept** some of its pods, ``K`` (a sub-multiset of ``P``; the others migrated, at
    their move cost), and holds a final multiset of sizes ``Q`` that contains ``K``'s sizes
    (``k``) and fits 1,000 milli; every shared pod is on exactly one GPU. Counting the
    GPUs by (P, K) (``z``) and by (k, Q) (``w``)::

        max  FREE_WEIGHT sum w[(), ()] - sum cost(P - K) z[P, K]
        s.t. sum_K z[P, K] = N_P                            for every pattern P now
             sum_{P, K of sizes k} z[P, K] = sum_Q w[k, Q]  for every kept multiset k
             sum_{k, Q} Q_s w[k, Q] >= n_s                  for every size s
             z, w >= 0

    where Q ranges over the empty multiset and the *maximal* ones (nothing more fits): a
    final pattern can be replaced by a maximal one containing it, covering more, so the
    ``>=`` rows keep every real consolidation feasible and the LP's optimum bounds them
    all. Gains are integers: the LP's optimum rounded down (after 1e-6 of slack for its
    tolerances) minus ``FREE_WEIGHT`` x the free GPUs now is returned. If the sizes have
    more than :data:`MAX_PATTERNS` maximal patterns (many small sizes), the sizes in ``k``,
    ``Q`` and the size rows are rounded down to a grid (1, 2, 4, ... milli) until they do
    not: smaller pods only pack better, so the LP stays a relaxation."""
    migrated = set() if migrated is None else migrated
    placed = np.flatnonzero(book.node >= 0)
    milli = pods.milli[order[placed]]
    held = {(int(book.node[a]), g) for a in placed[milli >= MILLI] for g in book.gpus[a]}
    content: dict[tuple[int, int], list[tuple[int, int]]] = {
        (int(n), int(g)): [] for n, g in zip(*np.nonzero(state.exists), strict=True)
    }
    for a in placed[(milli > 0) & (milli < MILLI)]:
        key = (int(book.node[a]), int(book.gpus[a][0]))
        content[key].append((int(pods.milli[order[a]]), 1 if int(a) in migrated else MOVE_WEIGHT))
    now: dict[tuple, int] = {}
    for key, items in content.items():
        if key not in held:
            pattern = tuple(sorted(items))
            now[pattern] = now.get(pattern, 0) + 1
    free_now = now.get((), 0)
    if not any(now_pattern for now_pattern in now):
        return 0.0  # no shared pod: nothing to consolidate
    grid = 1  # sizes rounded down to multiples of it (a relaxation: smaller pods pack better)
    while True:
        sizes = sorted({m // grid * grid for pattern in now for m, _ in pattern} - {0})
        q = _maximal_patterns(sizes) if sizes else np.zeros((0, 0), dtype=np.int64)
        if q is not None:
            break
        grid *= 2

    def rounded(items) -> tuple[int, ...]:
        return tuple(sorted(m // grid * grid for m, _ in items if m >= grid))

    col = {m: i for i, m in enumerate(sizes)}
    need = np.zeros(len(sizes), dtype=np.int64)
    for pattern, n in now.items():
        for m in rounded(pattern):
            need[col[m]] += n
    # z columns: (P, K) with their kept (rounded) sizes
    z_cols: list[tuple[tuple, tuple[int, ...], float]] = []
    kept: dict[tuple[int, ...], int] = {(): 0}
    for pattern in now:
        items = sorted(set(pattern))
        counts = [pattern.count(item) for item in items]
        subsets = [  # every sub-multiset, once
            tuple(item for item, c in zip(items, chosen, strict=True) for _ in range(c))
            for chosen in itertools.product(*(range(n + 1) for n in counts))
        ]
        for k in subsets:
            moved = sum(c for _, c in pattern) - sum(c for _, c in k)
            sizes_k = rounded(k)
            kept.setdefault(sizes_k, len(kept))
            z_cols.append((pattern, sizes_k, float(moved)))
    kvec = np.zeros((len(kept), len(sizes)), dtype=np.int64)
    for sizes_k, i in kept.items():
        for m in sizes_k:
            kvec[i, col[m]] += 1
    contains = (q[None, :, :] >= kvec[:, None, :]).all(axis=2)  # [k, Q]: Q holds k's sizes
    w_k, w_q = np.nonzero(contains)
    empty = kept[()]
    nz, nw = len(z_cols), len(w_k)
    lp = HighsModel()
    n_cols = nz + nw + 1  # the last: w[(), ()], a GPU left empty
    costs = [-c for _, _, c in z_cols] + [0.0] * nw + [float(FREE_WEIGHT)]
    lp.add_columns(np.array(costs), np.zeros(n_cols), np.full(n_cols, math.inf))
    lp.maximize()
    by_pattern: dict[tuple, list[int]] = {}
    by_kept: dict[int, list[int]] = {}
    for j, (pattern, sizes_k, _) in enumerate(z_cols):
        by_pattern.setdefault(pattern, []).append(j)
        by_kept.setdefault(kept[sizes_k], []).append(j)
    for pattern, idx in by_pattern.items():
        n = float(now[pattern])
        lp.add_row(n, n, idx, [1.0] * len(idx))
    for i in range(len(kept)):
        zs = by_kept.get(i, [])
        ws = [nz + int(j) for j in np.flatnonzero(w_k == i)] + ([n_cols - 1] if i == empty else [])
        lp.add_row(0.0, 0.0, zs + ws, [1.0] * len(zs) + [-1.0] * len(ws))
    for s in range(len(sizes)):
        counts = q[w_q, s]
        idx = np.flatnonzero(counts)
        lp.add_row(float(need[s]), math.inf, nz + idx, counts[idx].astype(float))
    run = lp.run()
    if run.status != RunStatus.OPTIMAL or run.objective is None:
        raise RuntimeError(
            f"pattern LP: HiGHS ended {run.status} ({run.message or run.stop_reason})"
        )
    value = run.objective
    return float(math.floor(value + 1e-6) - FREE_WEIGHT * free_now)
