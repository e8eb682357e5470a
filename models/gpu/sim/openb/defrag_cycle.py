"""One defragmentation cycle on the openb replay: its model, its check, and a cycle within a
wall-time budget.

:func:`solve_cycle` is the cycle's CP-SAT model over a neighbourhood of source and destination
nodes, :func:`check_cycle` the independent check every cycle's answer passes before it is
applied (both as :mod:`.defrag` describes them, with the replay that runs them), and
:class:`Book` where every arrival is. :func:`budgeted_consolidation` runs one consolidation
cycle within a wall-time budget on a large cluster (issue 18): a greedy of lone moves, then the
largest neighbourhood whose model fits the budget.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.replay import (
    PodSet,
    TraceState,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
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


# --- A consolidation cycle within a wall-time budget (issue 18) --------------------------

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
