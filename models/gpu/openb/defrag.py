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

import time
from dataclasses import dataclass, field

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.openb.batch import check_placement
from placement.models.gpu.openb.replay import (
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

    @property
    def gap(self) -> float:
        """(bound - objective) / |bound| of the cycle's model (0 when proved optimal)."""
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
) -> CycleOutcome:
    """The cycle's CP-SAT model over ``sources`` (movable residents) and ``destinations``
    for the ``pending`` arrivals (module docstring); the current placement is the hint."""
    from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by cycles only

    cluster = state.cluster
    nodes = sorted(set(sources) | set(destinations))
    mov = sorted(a for n in sources for a in book.on[n] if movable(pods, int(order[a])))
    use, mcpu, mmem = _gpu_usage(state, pods, order, book, nodes, mov)
    cap = {n: np.where(state.exists[n], state.gpu_left[n] + use[n], 0) for n in nodes}
    cpu_cap = {n: int(state.cpu_left[n]) + mcpu[n] for n in nodes}
    mem_cap = {n: int(state.mem_left[n]) + mmem[n] for n in nodes}
    model = cp_model.CpModel()
    gpu_terms: dict[tuple[int, int], list] = {}
    cpu_terms: dict[int, list] = {}
    mem_terms: dict[int, list] = {}
    options: dict[int, list[tuple[Where, object]]] = {}  # arrival -> [(place, var)]
    nvars = 0

    def option(a: int, p: int, node: int, gpus: tuple[int, ...], hinted: bool):
        nonlocal nvars
        x = model.NewBoolVar(f"x{a}_{node}_{'_'.join(map(str, gpus))}")
        nvars += 1
        m = int(pods.milli[p])
        for g in gpus:
            gpu_terms.setdefault((node, g), []).append((m, x))
        cpu_terms.setdefault(node, []).append((int(pods.cpu_milli[p]), x))
        mem_terms.setdefault(node, []).append((int(pods.memory_mib[p]), x))
        model.AddHint(x, hinted)
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

    moved_new, moved_old = [], []
    for a in mov:
        p = int(order[a])
        here = (int(book.node[a]), tuple(book.gpus[a]))
        spots = places(p)
        if here not in spots:
            spots.append(here)
        xs = [option(a, p, n, g, (n, g) == here) for n, g in spots]
        model.AddExactlyOne(xs)
        stay = next(x for (w, x) in options[a] if w == here)
        (moved_old if a in migrated else moved_new).append(stay.Not())
    placed_terms = []
    for a in pending:
        p = int(order[a])
        xs = [option(a, p, n, g, False) for n, g in places(p)]
        if xs:
            model.AddAtMostOne(xs)
            placed_terms += [(int(pods.demand[p]), x) for x in xs]
    for (n, g), terms in gpu_terms.items():
        if sum(c for c, _ in terms) > cap[n][g]:
            model.Add(sum(c * x for c, x in terms) <= int(cap[n][g]))
    for n, terms in cpu_terms.items():
        if sum(c for c, _ in terms) > cpu_cap[n]:
            model.Add(sum(c * x for c, x in terms) <= cpu_cap[n])
    for n, terms in mem_terms.items():
        if sum(c for c, _ in terms) > mem_cap[n]:
            model.Add(sum(c * x for c, x in terms) <= mem_cap[n])
    free = []
    for n in nodes:
        for g in np.flatnonzero(cap[n] == MILLI):
            f = model.NewBoolVar(f"f{n}_{g}")
            for _c, x in gpu_terms.get((n, int(g)), []):
                model.AddImplication(x, f.Not())
            model.AddHint(f, bool(state.gpu_left[n, g] == MILLI))
            free.append(f)
    if budget_left is not None:
        model.Add(sum(moved_new) <= budget_left)
    big = FREE_WEIGHT * len(free) + (MOVE_WEIGHT + 1) * len(mov) + 1
    model.Maximize(
        big * sum(c * x for c, x in placed_terms)
        + FREE_WEIGHT * sum(free)
        - MOVE_WEIGHT * sum(moved_new)
        - sum(moved_old)
    )
    baseline = float(
        FREE_WEIGHT
        * sum(
            int(state.gpu_left[n, g] == MILLI)
            for n in nodes
            for g in np.flatnonzero(cap[n] == MILLI)
        )
    )
    options_ = SolveOptions(time_limit_s=time_limit, threads=workers, seed=seed)
    t0 = time.perf_counter()
    run = CpSat.run(model, options_, CancellationToken(), time_limit, single_strategy=True)
    seconds = time.perf_counter() - t0
    if not run.has_solution:
        return CycleOutcome(
            {}, {}, "no_solution", seconds, baseline, baseline, baseline, nvars, len(nodes)
        )
    solver = run.solver  # type: ignore[attr-defined]
    moves: dict[int, Where] = {}
    placed: dict[int, Where] = {}
    for a, opts in options.items():
        chosen = [w for w, x in opts if solver.Value(x)]
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
