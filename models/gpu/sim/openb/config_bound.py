"""A configuration-LP bound on the GPU demand any packing of the arrived openb pods can hold.

The question: with all arrived pods known (offline; any order; any number of migrations;
a pod may be left out), how much milli-GPU can the cluster hold at most? Every policy of the
FGD protocol -- online, batch, with migrations, even unlimited ones -- holds, at any moment, an
integer packing of a subset of the arrived pods, so this maximum bounds every policy's
allocation, and ``total - maximum`` bounds its unallocated GPUs from below.

**Exactly the simulator's feasibility** (:meth:`.replay.TraceState.feasible` / ``place``,
and :func:`.batch.check_placement`): a node takes a set of pods when their CPU requests sum
to at most its CPU, their memory requests to at most its memory, each GPU pod accepts the
node's GPU type, every pod of ``k`` whole GPUs gets ``k`` distinct GPUs that nothing else
uses, and every shared pod one GPU, the shared milli on each GPU summing to at most 1000.
CPU-only pods are dropped: they add nothing to the objective, and leaving a pod out keeps a
packing feasible, so the maximum is unchanged.

**Classes.** Pods of equal (GPUs ``k``, milli per GPU ``m``, CPU, memory, accepted types)
are interchangeable: class ``c`` with ``n_c`` arrived pods and value ``d_c = k_c m_c``. Nodes
of equal (GPU type, GPU count ``G``, CPU, memory) likewise: class ``q`` of ``N_q`` nodes. A
**packing** of ``q`` is a vector ``y`` (pods of each class on one node) that one node of ``q``
can hold as above, with ``y_c <= n_c``; ``P_q`` is the set of them (finite).

**Master** (the configuration LP of Gilmore and Gomory; ``lambda_{q,y}`` = nodes of ``q``
that hold ``y``)::

    max  sum_{q, y in P_q} (sum_c d_c y_c) lambda_{q,y}
    s.t. sum_{q, y} y_c lambda_{q,y} <= n_c      (pi_c >= 0)   for every pod class c
         sum_{y in P_q} lambda_{q,y}  <= N_q      (mu_q >= 0)   for every node class q
         lambda >= 0

An integer packing of the cluster gives an integer feasible ``lambda`` (count the nodes of
each class per packing), so the LP optimum bounds the integer one. **Lagrangian bound**,
valid for every ``pi >= 0`` (not only at convergence; weak duality of the master with the
node rows kept)::

    L(pi) = sum_c pi_c n_c + sum_q N_q max(0, z_q(pi)),
    z_q(pi) = max_{y in P_q} sum_c (d_c - pi_c) y_c            (the pricing problem)

**Pricing** (per node class, a small integer model solved by CP-SAT with the profits rounded
*up* to multiples of 1 / :data:`PROFIT_SCALE` milli, so that CP-SAT's integer bound on the
rounded model bounds the real ``z_q``; that bound enters ``L``, so a pricing run stopped by
its time limit still gives a valid bound): variables ``y_c`` (only classes with
``d_c - pi_c > 0``: the others are 0 in some optimum), ``w_g`` in {0, 1} (GPU ``g`` taken by a
whole-GPU pod), ``x_{s,g}`` (shared pods of ``s`` milli on GPU ``g``)::

    max  sum_c (d_c - pi_c) y_c
    s.t. sum_c cpu_c y_c <= CPU_q,   sum_c mem_c y_c <= MEM_q
         sum_{c whole} k_c y_c = sum_g w_g
         sum_{c shared, m_c = s} y_c = sum_g x_{s,g}               for every size s
         sum_s s x_{s,g} + 1000 w_g <= 1000                       for every GPU g
         w_g >= w_{g+1},  load_g <= load_{g+1}                    (symmetry: GPUs are equal)
         0 <= y_c <= n_c, integer

This is exact: a whole-GPU pod needs ``k`` GPUs free of anything else, and shared pods of
one size are interchangeable on the GPUs (their CPU and memory are counted per node).

**Column generation**: from single-class packings and the nodes of ``start`` placements
(e.g. replays of the arrived pods: a warm start only), solve the master, price every node
class at Wentges-smoothed duals (:data:`SMOOTHING`; at the master's own on a mispricing), add
the packings of positive reduced value, keep the smallest ``L`` seen; stop when it is within
:data:`CONVERGED_MILLI` (or the caller's gap) of the master's optimum, or at the time limit
(``L`` is valid whenever it stops). The bound is ``min L`` plus a slack of :data:`SLACK` of
the capacity for floating point, floored to a multiple of the gcd of the ``d_c``.

**Witness**: the integer master over the generated columns (HiGHS MIP), realised as a
placement (each packing on distinct nodes of its class, each pod class's slots given actual
arrived pods) and re-checked from scratch by :func:`.batch.check_placement`. Its demand is
what *some* policy -- an offline one -- can hold: the optimum lies between it and the bound.

Compared with :mod:`.offline_bound` (one LP over classes with valid inequalities), the
configuration LP keeps each node's CPU, memory and per-GPU packing integral together; it is
never weaker than any relaxation whose rows are valid per node.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import reduce

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel

SLACK = 1e-7
"""Relative slack (of the cluster's milli-GPU) added to the bound before it is floored: the
master LP (HiGHS) and the Lagrangian sum work in floating point."""
PRICING_TIME_S = 20.0
"""Time limit of one pricing run (its bound is used if it stops there)."""
REDUCED_TOL = 1e-6
"""A packing enters the master when its reduced value exceeds this (milli-GPU)."""
CONVERGED_MILLI = 1.0
"""The column generation has converged when the Lagrangian value is within this of the
master's (milli-GPU; pod values are multiples of 10)."""
MAX_PODS_PER_NODE = 1_000
"""A generous cap on the pods of one packing, for the rounding of the pricing profits."""
SMOOTHING = 0.5
"""Wentges' smoothing factor: the weight of the best Lagrangian duals in the pricing point."""
PROFIT_SCALE = 10_000
"""Pricing profits are rounded up to multiples of 1 / PROFIT_SCALE milli-GPU."""


@dataclass(frozen=True)
class Packing:
    """One node's worth of pods: ``slots[i] = (pod class, GPUs)``, one entry per pod."""

    node_class: int
    slots: tuple[tuple[int, tuple[int, ...]], ...]

    def counts(self, n_classes: int) -> np.ndarray:
        out = np.zeros(n_classes, dtype=np.int64)
        for c, _ in self.slots:
            out[c] += 1
        return out


@dataclass
class ConfigBoundResult:
    """The outcome of :meth:`ConfigBound.at`; milli-GPU throughout."""

    bound_milli: int
    """Valid upper bound on the milli-GPU any packing of the arrived pods holds."""
    lagrangian_milli: float
    """The smallest Lagrangian value seen (before the slack and the floor)."""
    master_milli: float
    """The last restricted master LP's optimum (equals the bound at convergence)."""
    converged: bool
    """The bound is within :data:`CONVERGED_MILLI` of the master's optimum (or nothing
    priced positive at its duals): the master is the configuration LP."""
    iterations: int
    columns: int
    seconds: float
    witness_milli: int | None = None
    """Demand of the checked integer packing from the integer master (None: not run)."""
    witness: list[tuple[int, int, tuple[int, ...]]] = field(default_factory=list)
    """``(pod index, node, gpus)`` of that packing."""
    witness_errors: list[str] = field(default_factory=list)
    """What :func:`.batch.check_placement` found wrong with it ([] when valid)."""


def forced_prefix(arrived: np.ndarray, placed: Sequence[np.ndarray]) -> np.ndarray:
    """The arrivals a *never-refusing* policy must hold at the end: the longest prefix of
    ``arrived`` (in arrival order) that one of the replays ``placed`` (per arrival, the node
    or -1, as :attr:`.replay.Curve.node`) holds wholly.

    Why every such policy holds them: call a policy never-refusing when it places an
    arriving pod whenever *some* re-packing of what it holds plus that pod exists (any pod
    may move: unlimited migration). That prefix is jointly packable (the replay is the
    witness), so when any of its pods arrives, what the policy holds is a subset of the
    earlier arrivals of the prefix, and together with the pod a subset of a packable set:
    packable, since removing pods keeps a packing feasible. Pods are never removed, so the
    policy still holds all of them at the end. Forcing them into :meth:`ConfigBound.at`
    bounds every never-refusing policy; the unforced bound, every policy."""
    best = 0
    for nodes in placed:
        failed = np.flatnonzero(np.asarray(nodes)[: len(arrived)] < 0)
        best = max(best, int(failed[0]) if len(failed) else len(arrived))
    return np.asarray(arrived[:best], dtype=np.int64)


def node_classes(cluster: TraceCluster) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """(keys [Q, 4]: type, GPUs, CPU, memory; count per class; the nodes of each class)."""
    keys = np.stack([cluster.type_of, cluster.gpu_count, cluster.cpu_milli, cluster.memory_mib], 1)
    uniq, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    members = [np.flatnonzero(inverse == q) for q in range(len(uniq))]
    return uniq, counts, members


class ConfigBound:
    """The bound above for one cluster and pod list; :meth:`at` computes it for a multiset
    of arrived pods."""

    def __init__(self, cluster: TraceCluster, pods: PodSet) -> None:
        self.cluster = cluster
        self.pods = pods
        self.node_keys, self.node_count, self.node_members = node_classes(cluster)
        self.node_class = np.empty(cluster.n, dtype=np.int64)
        """The class of each node."""
        for q, members in enumerate(self.node_members):
            self.node_class[members] = q
        keys = np.concatenate(
            [
                np.stack([pods.num_gpu, pods.milli, pods.cpu_milli, pods.memory_mib], 1),
                pods.type_ok.astype(np.int64),
            ],
            axis=1,
        )
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        self.pod_class = inverse.reshape(-1)
        self.k, self.m, self.cpu, self.mem = (uniq[:, i].astype(np.int64) for i in range(4))
        self.type_ok = uniq[:, 4:].astype(bool)
        self.value = self.k * self.m
        self.n_classes = len(uniq)
        q_count = len(self.node_keys)
        # fits[c, q]: one pod of class c fits an empty node of class q (and has a GPU).
        self.fits = np.zeros((self.n_classes, q_count), dtype=bool)
        for q, (t, g, ncpu, nmem) in enumerate(self.node_keys):
            self.fits[:, q] = (
                (self.k > 0)
                & (self.k <= g)
                & self.type_ok[:, t]
                & (self.cpu <= ncpu)
                & (self.mem <= nmem)
            )

    # -- pricing ---------------------------------------------------------------------------

    def _cap(self, c: int, q: int, n: int) -> int:
        """Most pods of class ``c`` (of ``n`` arrived) that one node of ``q`` holds alone."""
        _t, g, ncpu, nmem = (int(v) for v in self.node_keys[q])
        cap = n
        if self.cpu[c]:
            cap = min(cap, ncpu // int(self.cpu[c]))
        if self.mem[c]:
            cap = min(cap, nmem // int(self.mem[c]))
        if self.m[c] >= MILLI:
            cap = min(cap, g // int(self.k[c]))
        else:
            cap = min(cap, g * (MILLI // int(self.m[c])))
        return max(cap, 0)

    def _single(self, c: int, q: int, count: int) -> Packing:
        """``count`` pods of class ``c`` alone on a node of ``q`` (``count`` <= :meth:`_cap`)."""
        k, m = int(self.k[c]), int(self.m[c])
        if m >= MILLI:
            slots = tuple((c, tuple(range(i * k, (i + 1) * k))) for i in range(count))
        else:
            per = MILLI // m
            slots = tuple((c, (i // per,)) for i in range(count))
        return Packing(q, slots)

    def price(
        self, q: int, profit: np.ndarray, counts: np.ndarray, time_limit_s: float = PRICING_TIME_S
    ) -> tuple[float, float, Packing | None]:
        """Solve the pricing problem of node class ``q``: (upper bound on ``z_q``, the best
        packing's value, that packing or None). ``profit[c] = d_c - pi_c``."""
        _t, g, ncpu, nmem = (int(v) for v in self.node_keys[q])
        classes = [
            c
            for c in np.flatnonzero(self.fits[:, q] & (profit > REDUCED_TOL) & (counts > 0))
            if self._cap(int(c), q, int(counts[c])) > 0
        ]
        if not classes:
            return 0.0, 0.0, None
        # OR-Tools loads a large native library: imported on first use.
        from ortools.sat.python import cp_model

        whole = [int(c) for c in classes if self.m[c] >= MILLI]
        sizes = sorted({int(self.m[c]) for c in classes if self.m[c] < MILLI})
        model = cp_model.CpModel()
        y = {
            int(c): model.new_int_var(0, self._cap(int(c), q, int(counts[c])), f"y{c}")
            for c in classes
        }
        w = [model.new_bool_var(f"w{gi}") for gi in range(g)] if whole else []
        x = {
            (s, gi): model.new_int_var(0, MILLI // s, f"x{s}_{gi}")
            for s in sizes
            for gi in range(g)
        }
        model.add(sum(int(self.cpu[c]) * v for c, v in y.items()) <= ncpu)
        model.add(sum(int(self.mem[c]) * v for c, v in y.items()) <= nmem)
        if whole:
            model.add(sum(int(self.k[c]) * y[c] for c in whole) == sum(w))
            for gi in range(g - 1):  # the whole-GPU pods' GPUs first
                model.add(w[gi] >= w[gi + 1])
        for s in sizes:
            model.add(
                sum(v for c, v in y.items() if self.m[c] == s) == sum(x[s, gi] for gi in range(g))
            )
        loads = [sum(s * x[s, gi] for s in sizes) for gi in range(g)]
        for gi in range(g):
            model.add(loads[gi] + (MILLI * w[gi] if whole else 0) <= MILLI)
        for gi in range(g - 1):  # then the shared GPUs by ascending load (GPUs are equal)
            model.add(loads[gi] <= loads[gi + 1])
        # Profits rounded up to integers of 1 / PROFIT_SCALE milli: CP-SAT's integer bound on
        # the rounded problem is a rigorous upper bound on the real one (y >= 0).
        scaled = {c: int(math.ceil(float(profit[c]) * PROFIT_SCALE)) for c in y}
        model.maximize(sum(scaled[c] * v for c, v in y.items()))
        run = CpSat.run_subproblem(model, time_limit_s, workers=1)
        if not run.has_solution:
            if run.status == RunStatus.NO_SOLUTION:
                # Stopped before its search began, CP-SAT proved no bound: none (inf) here.
                bound = math.inf if run.bound is None else run.bound / PROFIT_SCALE
                return bound, 0.0, None
            raise RuntimeError(f"pricing model of node class {q}: {run.message or run.status}")
        solver = run.solver  # type: ignore[attr-defined]
        bound = float(run.bound) / PROFIT_SCALE  # type: ignore[arg-type]  # set with a solution
        ycount = {c: int(solver.value(v)) for c, v in y.items()}
        slots: list[tuple[int, tuple[int, ...]]] = []
        free_whole = [gi for gi in range(len(w)) if solver.value(w[gi])]
        for c in whole:
            k = int(self.k[c])
            for _ in range(ycount[c]):
                slots.append((c, tuple(free_whole[:k])))
                free_whole = free_whole[k:]
        for s in sizes:
            gpu_slots = [gi for gi in range(g) for _ in range(int(solver.value(x[s, gi])))]
            for c, n in ycount.items():
                if self.m[c] == s:
                    for _ in range(n):
                        slots.append((c, (gpu_slots.pop(),)))
        packing = Packing(q, tuple(slots))
        value = float(profit @ packing.counts(self.n_classes))
        return bound, value, packing

    def packings(self, placement: Sequence[tuple[int, int, tuple[int, ...]]]) -> list[Packing]:
        """Each node's GPU pods in ``placement`` (``(pod, node, gpus)``) as a packing."""
        by_node: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
        for pod, node, gpus in placement:
            if self.k[self.pod_class[pod]]:
                by_node.setdefault(int(node), []).append(
                    (int(self.pod_class[pod]), tuple(int(g) for g in gpus))
                )
        return [
            Packing(int(self.node_class[node]), tuple(slots)) for node, slots in by_node.items()
        ]

    # -- column generation -----------------------------------------------------------------

    def at(
        self,
        arrived: Sequence[int] | np.ndarray,
        time_limit_s: float = 600.0,
        witness: bool = True,
        witness_time_s: float = 60.0,
        max_iterations: int = 10_000,
        progress: Callable[[int, float, float, int], None] | None = None,
        start: Sequence[Sequence[tuple[int, int, tuple[int, ...]]]] = (),
        pricing_time_s: float = PRICING_TIME_S,
        stop_gap_milli: float = 0.0,
        forced: Sequence[int] | np.ndarray = (),
    ) -> ConfigBoundResult:
        """The bound for the pods ``arrived`` (indices into the pod list; repeats allowed).

        ``start``: placements ``[(pod, node, gpus), ...]`` of (some of) the arrived pods,
        e.g. a replay's; each node's pods become a first column (any placement is only a
        warm start: the bound does not depend on it). ``pricing_time_s``: the time limit of
        one pricing run (its bound still enters the Lagrangian value when it stops early).

        ``forced``: arrived pods every packing must hold (the bound is then over the packings
        that hold them: see :func:`forced_prefix`). Only their GPU pods are imposed; leaving
        the CPU-only ones free relaxes the problem, so the bound stays valid. One ``start``
        placement must hold them all (the master's first feasible point).

        Raises
        ------
        ValueError
            ``forced`` is not a sub-multiset of ``arrived``, or no ``start`` column set
            holds the forced pods.
        """
        t0 = time.perf_counter()
        arrived = np.asarray(arrived, dtype=np.int64)
        counts = np.bincount(self.pod_class[arrived], minlength=self.n_classes)
        counts[self.k == 0] = 0  # CPU-only pods add nothing
        need = np.bincount(
            self.pod_class[np.asarray(forced, dtype=np.int64)], minlength=self.n_classes
        )
        need[self.k == 0] = 0  # not imposed: a relaxation
        forced_copies = np.bincount(np.asarray(forced, dtype=np.int64), minlength=self.pods.n)
        if np.any(forced_copies > np.bincount(arrived, minlength=self.pods.n)):
            raise ValueError("forced: every forced pod must be among the arrived pods")
        live = np.flatnonzero(counts > 0)
        q_count = len(self.node_keys)
        total = self.cluster.total_gpu_milli
        step = reduce(math.gcd, (int(v) for v in self.value[live]), 0) or 1
        columns: list[Packing] = []
        seen: set[tuple] = set()
        master = HighsModel()
        master.maximize()
        # rows 0..C-1: pod classes (need_c <= placed <= n_c); C..C+Q-1: node classes
        lower = np.concatenate([need.astype(float), np.full(q_count, -math.inf)])
        lower[: self.n_classes][need == 0] = -math.inf
        master.add_rows(lower, np.concatenate([counts, self.node_count]).astype(float))

        def add(p: Packing) -> bool:
            key = (p.node_class, tuple(sorted(c for c, _ in p.slots)))
            if key in seen or not p.slots:
                return False
            seen.add(key)
            y = p.counts(self.n_classes)
            nz = np.flatnonzero(y)
            master.add_column(
                float(self.value @ y),
                0.0,
                math.inf,
                np.concatenate([nz, [self.n_classes + p.node_class]]),
                np.concatenate([y[nz].astype(float), [1.0]]),
            )
            columns.append(p)
            return True

        for q in range(q_count):
            for c in live:
                if self.fits[c, q]:
                    cap = self._cap(int(c), q, int(counts[c]))
                    if cap:
                        add(self._single(int(c), q, cap))
        for placement in start:
            for packing in self.packings(placement):
                if np.all(packing.counts(self.n_classes) <= counts):
                    add(packing)
        best = math.inf
        center: np.ndarray | None = None
        master_value = 0.0
        converged = False
        iterations = 0
        pricing_s = pricing_time_s
        while iterations < max_iterations and time.perf_counter() - t0 < time_limit_s:
            iterations += 1
            run = master.run(None)
            if run.status == RunStatus.INFEASIBLE and need.any():
                raise ValueError(
                    "forced: no start placement holds every forced pod (pass one in start)"
                )
            if run.status != RunStatus.OPTIMAL or run.row_dual is None:
                raise RuntimeError(f"configuration master LP not solved: {run.message}")
            master_value = float(run.objective)
            # HiGHS's duals of a maximisation: >= 0 on a row at its upper bound, <= 0 at its
            # lower bound (a forced class). Any pi gives a valid Lagrangian value below.
            dual = run.row_dual
            pi_lp = dual[: self.n_classes].copy()
            if not need.any():
                pi_lp = np.abs(pi_lp)
            mu_lp = np.maximum(dual[self.n_classes :], 0.0)
            # Wentges smoothing: price at a point between the best Lagrangian duals so far
            # and the master's; on a mispricing (nothing enters) price at the master's.
            alpha = SMOOTHING if center is not None else 0.0
            while True:
                pi = pi_lp if center is None else alpha * center + (1 - alpha) * pi_lp
                # L(pi) = sum_c (pi_c^+ n_c - pi_c^- need_c) + sum_q N_q max(0, z_q(pi))
                lagr = float(np.maximum(pi, 0.0) @ counts + np.minimum(pi, 0.0) @ need)
                proven = True
                added = 0
                for q in range(q_count):
                    left = time_limit_s - (time.perf_counter() - t0)
                    zq, _val, packing = self.price(
                        q, self.value - pi, counts, max(0.5, min(pricing_s, left))
                    )
                    lagr += float(self.node_count[q]) * max(0.0, zq)
                    if zq > mu_lp[q] + REDUCED_TOL + MAX_PODS_PER_NODE / PROFIT_SCALE:
                        proven = False
                    if packing is None:
                        continue
                    y = packing.counts(self.n_classes)
                    if (self.value - pi_lp) @ y > mu_lp[q] + REDUCED_TOL and add(packing):
                        added += 1
                if lagr < best:
                    best, center = lagr, pi.copy()
                if added or alpha == 0.0 or time.perf_counter() - t0 > time_limit_s:
                    break
                alpha = 0.0
            if progress is not None:
                progress(iterations, master_value, best, added)
            if best - master_value <= CONVERGED_MILLI:
                converged = True  # the master is the configuration LP, to within 1 milli
                break
            if alpha == 0.0 and proven:
                converged = True  # at the master's duals nothing prices positive
                break
            if not added:
                pricing_s *= 2  # the pricing runs stopped before finding a column
            if best - master_value <= stop_gap_milli:
                break
        bound = min(best, float(total))
        floored = int(math.floor((bound + SLACK * total) / step)) * step
        result = ConfigBoundResult(
            bound_milli=min(floored, total),
            lagrangian_milli=best,
            master_milli=master_value,
            converged=converged,
            iterations=iterations,
            columns=len(columns),
            seconds=0.0,
        )
        if witness:
            self._witness(result, columns, counts, arrived, witness_time_s, need, forced)
        result.seconds = round(time.perf_counter() - t0, 2)
        return result

    # -- the integer master, realised and checked ------------------------------------------

    def _witness(
        self,
        result: ConfigBoundResult,
        columns: list[Packing],
        counts: np.ndarray,
        arrived: np.ndarray,
        time_limit_s: float,
        need: np.ndarray,
        forced: Sequence[int] | np.ndarray,
    ) -> None:
        q_count = len(self.node_keys)
        ys = [p.counts(self.n_classes) for p in columns]
        starts = [0]
        index: list[int] = []
        values: list[float] = []
        for p, y in zip(columns, ys, strict=True):
            nz = np.flatnonzero(y)
            index += [int(i) for i in nz] + [self.n_classes + p.node_class]
            values += [float(v) for v in y[nz]] + [1.0]
            starts.append(len(index))
        model = HighsModel(mip_rel_gap=1e-6)
        model.load(
            np.array([float(self.value @ y) for y in ys]),
            np.zeros(len(columns)),
            np.full(len(columns), math.inf),
            np.concatenate([np.where(need > 0, need, -math.inf), np.full(q_count, -math.inf)]),
            np.concatenate([counts, self.node_count]).astype(float),
            np.array(starts),
            np.array(index),
            np.array(values),
            integer=np.ones(len(columns), dtype=bool),
            maximize=True,
        )
        run = model.run(time_limit_s)
        if run.x is None:
            return
        lam = np.rint(run.x).astype(np.int64)
        # Each class's slots take its forced arrivals first (pop() takes from the end): per
        # pod, its unforced copies, then the forced ones at the end of the class's pool.
        must = np.bincount(np.asarray(forced, dtype=np.int64), minlength=self.pods.n)
        copies = np.bincount(arrived, minlength=self.pods.n)
        pool: dict[int, list[int]] = {}
        for p in np.flatnonzero(copies):
            pool.setdefault(int(self.pod_class[p]), []).extend([int(p)] * int(copies[p] - must[p]))
        for p in np.flatnonzero(must):
            pool.setdefault(int(self.pod_class[p]), []).extend([int(p)] * int(must[p]))
        free_nodes = [list(m) for m in self.node_members]
        placement: list[tuple[int, int, tuple[int, ...]]] = []
        for p, times in zip(columns, lam, strict=True):
            for _ in range(int(times)):
                node = int(free_nodes[p.node_class].pop())
                for c, gpus in p.slots:
                    placement.append((pool[c].pop(), node, gpus))
        items = [pod for pod, _, _ in placement]
        errors = check_placement(
            TraceState(self.cluster),
            self.pods,
            items,
            [(i, node, gpus) for i, (_, node, gpus) in enumerate(placement)],
        )
        held = np.bincount(np.asarray(items, dtype=np.int64), minlength=self.pods.n)
        missing = [int(p) for p in np.flatnonzero(must > held) if self.k[self.pod_class[p]] > 0]
        if missing:
            errors = [*errors, f"forced pods not held: {missing[:10]}"]
        result.witness = placement
        result.witness_errors = errors
        result.witness_milli = int(sum(int(self.pods.demand[p]) for p in items))
