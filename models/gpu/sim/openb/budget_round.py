"""An integer witness for the budget curve that scales with its columns (issue 42).

The master LP of :class:`.budget_curve.BudgetCurve` over tens of thousands of columns is
solved in seconds, but its integer master (HiGHS) and its dive can spend their whole time
without finding a better placement than the start: the class rows ask that every moved pod
find a slot of exactly its class, a matching over hundreds of classes that the branch and
bound does not reach (measured: a cycle whose LP promised 50.6 GPUs, 36 s of MIP and the dive
found nothing).

:func:`lp_rounding` rounds at the level of pods instead, guided by the LP: it takes the LP's
columns in the order of their weight and, one node at a time, tries the column on a node of
its group as it stands now -- the residents the column does not keep are taken off (they are
*homeless*), the column's incoming slots are filled (a homeless pod of the slot's class first,
else a failed pod of it), and every homeless pod still without a place goes where it fits
best (the node it leaves the least free milli-GPU on). The trial is kept when every homeless
pod found a place, the migrations stay within the budget and the allocation grows; else it is
undone. Failed pods are then placed where they fit, largest first. The result is read back as
columns (each node's kept residents and incoming slots), so it is a point of the integer master
itself: the caller compares it with the other witnesses, may start HiGHS from it, and realises
and checks it like any other (:meth:`.budget_curve.BudgetCurve._realise`).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from placement.models.gpu.peers.fgd import best_fit_gpus
from placement.models.gpu.sim.openb.replay import TraceState

BudgetCurve = Any
"""A :class:`.budget_curve.BudgetCurve` (that module imports this one)."""
Where = tuple[int, tuple[int, ...]]
Content = tuple[int, tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]
"""A node's configuration: (group, kept resident indices, incoming (class, GPUs) slots)."""


def best_node(state: TraceState, pods, p: int) -> Where | None:
    """Where pod ``p`` fits best now: the feasible node leaving the least free milli-GPU
    (then the least CPU), on the GPUs FGD's best fit takes there; None when it fits
    nowhere."""
    nodes = state.feasible(pods, p)
    if not len(nodes):
        return None
    k, m = int(pods.num_gpu[p]), int(pods.milli[p])
    free = np.where(state.exists[nodes], state.gpu_left[nodes], 0).sum(axis=1) - k * m
    node = int(nodes[np.lexsort((state.cpu_left[nodes], free))[0]])
    return node, tuple(best_fit_gpus(state.gpu_left[node], k, m))


class _Layout:
    """A placement of the curve's arrivals being rounded, with an undo log."""

    def __init__(self, curve: BudgetCurve) -> None:
        self.curve = curve
        self.state = TraceState(curve.cluster)
        self.where: dict[int, Where] = {}
        self.home: dict[int, Where] = {}
        self.on: list[set[int]] = [set() for _ in range(curve.cluster.n)]
        for a in np.flatnonzero(curve.node >= 0):
            a = int(a)
            self.home[a] = (int(curve.node[a]), curve.gpus[a])
            self._put(a, *self.home[a])
        self.pool: dict[int, list[int]] = {}
        """Failed arrivals not placed, by class."""
        for a in np.flatnonzero(curve.node < 0)[::-1]:  # popped in arrival order
            self.pool.setdefault(int(curve.cls[a]), []).append(int(a))
        self.moved = 0
        """Pods away from home whose moves count against the budget."""
        self.away = 0
        """Pods away from home, free ones included."""
        self.log: list[tuple[str, int, Where]] = []

    def _put(self, a: int, node: int, gpus: tuple[int, ...]) -> None:
        self.state.place(self.curve.pods, int(self.curve.arrived[a]), node, gpus)
        self.where[a] = (node, gpus)
        self.on[node].add(a)

    def place(self, a: int, node: int, gpus: tuple[int, ...]) -> None:
        home = self.home.get(a)
        if home is not None and home[0] == node and sorted(home[1]) == sorted(gpus):
            gpus = home[1]
        self._put(a, node, gpus)
        if home is None:
            self.pool[int(self.curve.cls[a])].remove(a)
        elif (node, gpus) != home:
            self.moved += int(self.curve.paid[a])
            self.away += 1
        self.log.append(("place", a, (node, gpus)))

    def remove(self, a: int) -> None:
        node, gpus = self.where.pop(a)
        self.state.remove(self.curve.pods, int(self.curve.arrived[a]), node, gpus)
        self.on[node].discard(a)
        if a not in self.home:
            self.pool[int(self.curve.cls[a])].append(a)
        elif (node, gpus) != self.home[a]:
            self.moved -= int(self.curve.paid[a])
            self.away -= 1
        self.log.append(("remove", a, (node, gpus)))

    def fits(self, a: int, node: int, gpus: tuple[int, ...]) -> bool:
        return self.state.fits(self.curve.pods, int(self.curve.arrived[a]), node, gpus)

    def undo(self, mark: int) -> None:
        while len(self.log) > mark:
            op, a, (node, gpus) = self.log.pop()
            if op == "place":
                self.remove(a)
            else:
                self.place(a, node, gpus)
            self.log.pop()  # the inverse's own entry


def lp_rounding(
    curve: BudgetCurve, budget: int, x: np.ndarray, time_limit_s: float
) -> dict[Content, int] | None:
    """The rounding of the module docstring from the master LP's solution ``x`` (over
    ``curve.columns``), within ``time_limit_s``, as the nodes' configurations and how many
    nodes hold each; None when it improves nothing."""
    deadline = time.perf_counter() + time_limit_s
    lay = _Layout(curve)
    pods = curve.pods
    start = lay.state.used_milli
    tried: set[int] = set()  # nodes a column was kept on
    order = sorted(
        (int(j) for j in np.flatnonzero(x > 1e-6) if _changes(curve.columns[int(j)], curve)),
        key=lambda j: -x[j],
    )
    want = {j: math.ceil(x[j] - 1e-6) for j in order}
    best = (start, 0)  # (milli-GPU, the log's length then)
    pairs = _rounded(curve, x, order)
    if pairs and time.perf_counter() < deadline:  # all the LP's changes at once, or a prefix
        lo, hi, mark = 0, len(pairs), len(lay.log)
        while lo < hi and time.perf_counter() < deadline:
            mid = (lo + hi + 1) // 2
            if _trial(lay, curve, _cols(curve, pairs[:mid]), budget):
                lay.undo(mark)
                lo = mid
            else:
                hi = mid - 1
        if lo and _trial(lay, curve, _cols(curve, pairs[:lo]), budget):
            for node, j in pairs[:lo]:
                tried.add(node)
                want[j] -= 1
            best = (lay.state.used_milli, len(lay.log))
    progress = True
    while progress and time.perf_counter() < deadline:
        progress = False
        for j in order:
            col = curve.columns[int(j)]
            for node in curve.groups[col.group].nodes:
                if want[j] == 0 or time.perf_counter() > deadline:
                    break
                if node not in tried and _trial(lay, curve, [(node, col)], budget):
                    tried.add(node)
                    want[j] -= 1
                    progress = True
                    if lay.state.used_milli > best[0]:
                        best = (lay.state.used_milli, len(lay.log))
    lay.undo(best[1])  # the trials after the last gain only spent migrations
    for a in sorted(
        (a for c in lay.pool.values() for a in c),
        key=lambda a: -int(pods.demand[curve.arrived[a]]),
    ):
        spot = best_node(lay.state, pods, int(curve.arrived[a]))
        if spot is not None:
            lay.place(a, *spot)
    if lay.state.used_milli <= start:
        return None
    return _contents(curve, lay)


def _cols(curve: BudgetCurve, pairs: list[tuple[int, int]]) -> list[tuple[int, object]]:
    return [(node, curve.columns[j]) for node, j in pairs]


def _rounded(curve: BudgetCurve, x: np.ndarray, order: list[int]) -> list[tuple[int, int]]:
    """The LP's changing columns rounded to whole nodes (largest remainder within each group,
    the group's other nodes kept as they are): (node, column index) pairs in ``order``."""
    by_group: dict[int, list[int]] = {}
    for j in np.flatnonzero(x > 1e-6):
        by_group.setdefault(curve.columns[int(j)].group, []).append(int(j))
    count: dict[int, int] = {}
    for g, cols in by_group.items():
        room = len(curve.groups[g].nodes)
        for j in cols:
            count[j] = int(math.floor(x[j] + 1e-6))
        room -= sum(count[j] for j in cols)
        for j in sorted(cols, key=lambda j: -(x[j] - math.floor(x[j] + 1e-6))):
            if room <= 0:
                break
            count[j] += 1
            room -= 1
    free = {g: list(curve.groups[g].nodes) for g in by_group}
    rank = {j: r for r, j in enumerate(order)}
    pairs = []
    for j in sorted(count, key=lambda j: -count[j]):  # identity columns take their nodes too
        col = curve.columns[j]
        for _ in range(count[j]):
            node = free[col.group].pop(0)
            if j in rank:
                pairs.append((node, j))
    return sorted(pairs, key=lambda nj: rank[nj[1]])


def _changes(col, curve: BudgetCurve) -> bool:
    """Whether a column differs from keeping its node as it is."""
    return bool(col.incoming) or len(col.keep) < len(curve.groups[col.group].residents)


def _trial(lay: _Layout, curve: BudgetCurve, pairs: list[tuple[int, object]], budget: int) -> bool:
    """Try the columns of ``pairs`` (node, column) together on their nodes as they stand
    (module docstring): every resident they do not keep off, then their incoming slots filled
    by homeless pods of the slot's class (a pod's own slot first), every other homeless pod
    where it fits best, failed pods in the slots left; kept when every homeless pod found a
    place within the budget and the allocation grew (or held while pods moved: a step of a
    chain), else undone."""
    mark, before, away = len(lay.log), lay.state.used_milli, lay.away
    cls, pods, arrived = curve.cls, curve.pods, curve.arrived
    homeless: dict[int, list[int]] = {}
    for node, col in pairs:
        keep = set(col.keep)
        for i, a in enumerate(curve.residents_of[node]):
            if i not in keep and lay.where.get(a) == lay.home[a]:
                lay.remove(a)
                homeless.setdefault(int(cls[a]), []).append(a)
    slots = [(node, c, tuple(gs)) for node, col in pairs for c, gs in col.incoming]
    left = []
    for node, c, gs in slots:  # a homeless pod back in its own slot has not moved
        mine = next((a for a in homeless.get(c, ()) if lay.home[a] == (node, gs)), None)
        if mine is not None and lay.fits(mine, node, gs):
            homeless[c].remove(mine)
            lay.place(mine, node, gs)
        else:
            left.append((node, c, gs))
    slots, left = left, []
    for node, c, gs in slots:
        mine = next((a for a in homeless.get(c, ()) if lay.fits(a, node, gs)), None)
        if mine is not None:
            homeless[c].remove(mine)
            lay.place(mine, node, gs)
        else:
            left.append((node, c, gs))
    ok = True
    for a in sorted(
        (a for group in homeless.values() for a in group),
        key=lambda a: -int(pods.demand[arrived[a]]),
    ):
        spot = best_node(lay.state, pods, int(arrived[a]))
        if spot is None:
            ok = False
            break
        lay.place(a, *spot)
    if ok:
        for node, c, gs in left:
            pool = lay.pool.get(c, [])
            if pool and lay.fits(pool[-1], node, gs):
                lay.place(pool[-1], node, gs)
    gain = lay.state.used_milli - before
    if ok and lay.moved <= budget and (gain > 0 or (gain == 0 and lay.away > away)):
        return True
    lay.undo(mark)
    return False


def _contents(curve: BudgetCurve, lay: _Layout) -> dict[Content, int]:
    """The layout as configurations: how many nodes hold each."""
    group_of = np.empty(curve.cluster.n, dtype=np.int64)
    for g, group in enumerate(curve.groups):
        group_of[group.nodes] = g
    counts: dict[Content, int] = {}
    for n in range(curve.cluster.n):
        residents = curve.residents_of[n]
        keep = tuple(i for i, a in enumerate(residents) if lay.where.get(a) == lay.home[a])
        kept = {residents[i] for i in keep}
        incoming = tuple(
            sorted((int(curve.cls[a]), lay.where[a][1]) for a in lay.on[n] if a not in kept)
        )
        key = (int(group_of[n]), keep, incoming)
        counts[key] = counts.get(key, 0) + 1
    return counts
