"""Bounds on what any consolidation of the whole cluster could gain (issue 18).

:func:`cluster_bound` bounds the objective of a consolidation cycle (:mod:`.defrag_cycle`:
``FREE_WEIGHT`` per GPU freed, net, minus the move costs) over every set of migrations of the
movable pods, by the smaller of a counting argument (with :func:`bins_lower_bound`) and the
pattern LP of :func:`pattern_bound`. The benchmark compares a budgeted cycle's gain with it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.defrag_cycle import FREE_WEIGHT, MOVE_WEIGHT, Book
from placement.models.gpu.sim.openb.replay import (
    PodSet,
    TraceState,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel


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
      (``MOVE_WEIGHT`` per pod, 1 for a pod migrated before, as in
      :func:`.defrag_cycle.solve_cycle`).

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
