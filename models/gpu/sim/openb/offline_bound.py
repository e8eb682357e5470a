"""An upper bound on the GPU demand any placement of the arrived pods can allocate.

With all pods known (offline, any order, any node), the most milli-GPU the first ``i``
arrivals can occupy is at most the optimum of this linear programme over **pod classes**
c (equal GPU count k_c, per-GPU milli-GPU m_c, CPU, memory; n_c of them arrived) and **node
classes** q (N_q equal nodes of G_q GPUs, CPU_q, MEM_q each); x_cq = how many pods of c go
to nodes of q (relaxed to reals):

    max  sum_cq k_c m_c x_cq
    s.t. sum_q x_cq <= n_c                                            (each pod once)
         sum_c cpu_c x_cq <= N_q CPU_q,   sum_c mem_c x_cq <= N_q MEM_q   (CPU, memory)
         sum_c k_c m_c x_cq <= 1000 N_q G_q                            (GPU milli-GPU)
         r sum_{c whole} k_c x_cq + sum_{c shared, m_c > 1000/(r+1)} x_cq <= r N_q G_q
                                                          for r = 1..4  (per-GPU packing)
         sum_c k_c u_eps(m_c) x_cq <= 1000 N_q G_q       for eps = 50, 100, ..., 500
         sum_{c whole: k_c > G_q / 2} x_cq <= N_q          (at most one such gang per node)
         x_cq = 0 if pod c alone does not fit a node of q (GPU count, type, CPU, memory)

The packing rows hold because a GPU that no whole-GPU pod takes holds at most r pods of more
than 1000/(r+1) milli-GPU each; the u_eps rows because u_eps is a dual feasible function
(Fekete and Schepers, "New classes of fast lower bounds for bin packing problems", Math.
Program. 91, 2001): the u_eps-values of the pods on one GPU sum to at most 1000. (The
trace's GPU types never restrict a pod in the openb files, but the rows respect them.) Every integral placement gives a feasible x, so the optimum
bounds the allocation of every policy, online or batch, at that arrival. It is a relaxation
(fractional counts, nodes aggregated per class), not an achievable placement: the distance
between a policy and it is an upper bound on what any policy could still gain.

Solved with HiGHS (:class:`~placement.solver.backends.highs.HighsModel`); between arrival
levels only the row bounds n_c change, so each level re-solves from the previous basis.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel

PACKING_R = (1, 2, 3, 4)
DFF_EPS = (50, 100, 150, 200, 250, 300, 350, 400, 450, 500)
"""The epsilons (milli-GPU) of the dual feasible functions u_eps of Fekete and Schepers."""


def dff(m: np.ndarray, eps: int) -> np.ndarray:
    """u_eps(m) = 1000 if m > 1000 - eps, m if eps <= m <= 1000 - eps, else 0 (per GPU; a
    dual feasible function for 0 <= eps <= 500: GPU contents whose milli sum to <= 1000 have
    u-values summing to <= 1000)."""
    return np.where(m > MILLI - eps, MILLI, np.where(m >= eps, m, 0))


def _node_classes(cluster: TraceCluster) -> tuple[np.ndarray, np.ndarray]:
    """(keys [Q, 4]: type, GPUs, CPU, memory; count per class)."""
    keys = np.stack([cluster.type_of, cluster.gpu_count, cluster.cpu_milli, cluster.memory_mib], 1)
    return np.unique(keys, axis=0, return_counts=True)


def _pod_classes(pods: PodSet) -> tuple[np.ndarray, np.ndarray]:
    """(keys [C, 5 + types]: GPUs, milli, CPU, memory, type mask ...; class of each pod)."""
    keys = np.concatenate(
        [
            np.stack([pods.num_gpu, pods.milli, pods.cpu_milli, pods.memory_mib], 1),
            pods.type_ok.astype(np.int64),
        ],
        axis=1,
    )
    uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


class OfflineBound:
    """The LP above for one cluster and pod list; :meth:`at` solves it for a multiset of pods."""

    def __init__(self, cluster: TraceCluster, pods: PodSet) -> None:
        self.cluster = cluster
        self.pods = pods
        nkeys, ncount = _node_classes(cluster)
        pkeys, self.pod_class = _pod_classes(pods)
        self.n_classes = len(pkeys)
        k, m, cpu, mem = (pkeys[:, i] for i in range(4))
        type_ok = pkeys[:, 4:].astype(bool)
        demand = k * m
        cols: list[tuple[int, int]] = []  # (pod class, node class)
        for c in range(len(pkeys)):
            for q in range(len(nkeys)):
                t, g, ncpu, nmem = (int(v) for v in nkeys[q])
                if cpu[c] > ncpu or mem[c] > nmem or k[c] > g:
                    continue
                if k[c] and not type_ok[c, t]:
                    continue
                cols.append((c, q))
        self.cols = cols
        rows: list[list[tuple[int, float]]] = []
        upper: list[float] = []
        self.count_row = {}
        by_class: dict[int, list[int]] = {}
        by_node: dict[int, list[int]] = {}
        for j, (c, q) in enumerate(cols):
            by_class.setdefault(c, []).append(j)
            by_node.setdefault(q, []).append(j)
        for c, js in by_class.items():
            self.count_row[c] = len(rows)
            rows.append([(j, 1.0) for j in js])
            upper.append(0.0)
        for q, js in by_node.items():
            _t, g, ncpu, nmem = (int(v) for v in nkeys[q])
            nq = int(ncount[q])
            c_of = [cols[j][0] for j in js]
            rows.append([(j, float(cpu[c])) for j, c in zip(js, c_of, strict=True)])
            upper.append(float(nq * ncpu))
            rows.append([(j, float(mem[c])) for j, c in zip(js, c_of, strict=True)])
            upper.append(float(nq * nmem))
            rows.append([(j, float(demand[c])) for j, c in zip(js, c_of, strict=True) if demand[c]])
            upper.append(float(nq * g * MILLI))
            for r in PACKING_R:
                terms = []
                for j, c in zip(js, c_of, strict=True):
                    if m[c] == MILLI:
                        terms.append((j, float(r * k[c])))
                    elif m[c] > 0 and m[c] * (r + 1) > MILLI:
                        terms.append((j, 1.0))
                if terms:
                    rows.append(terms)
                    upper.append(float(r * nq * g))
            for eps in DFF_EPS:
                u = dff(m, eps) * k
                terms = [(j, float(u[c])) for j, c in zip(js, c_of, strict=True) if u[c]]
                if terms:
                    rows.append(terms)
                    upper.append(float(nq * g * MILLI))
            # Two whole-GPU pods of more than half the node's GPUs never share it; shared
            # pods (one GPU, part of it) may: a 1-GPU node holds several.
            gang = [
                (j, 1.0) for j, c in zip(js, c_of, strict=True) if m[c] == MILLI and 2 * k[c] > g
            ]
            if gang:
                rows.append(gang)
                upper.append(float(nq))
        lp = HighsModel()
        inf = float("inf")
        lp.add_columns(
            np.array([-float(demand[c]) for c, _ in cols]),
            np.zeros(len(cols)),
            np.full(len(cols), inf),
        )
        for terms, hi in zip(rows, upper, strict=True):
            lp.add_row(-inf, hi, [j for j, _ in terms], [v for _, v in terms])
        self.lp = lp

    def at(self, arrived: Sequence[int] | np.ndarray) -> float:
        """The bound (milli-GPU) for the pods ``arrived`` (indices into the pod list; a pod
        may occur more than once)."""
        counts = np.bincount(
            self.pod_class[np.asarray(arrived, dtype=np.int64)], minlength=self.n_classes
        )
        inf = float("inf")
        for c, row in self.count_row.items():
            self.lp.set_row_bounds(row, -inf, float(counts[c]))
        run = self.lp.run()
        if run.status != RunStatus.OPTIMAL or run.objective is None:
            raise RuntimeError(
                f"offline bound LP not solved to optimality: {run.message or run.status}"
            )
        return -run.objective

    def curve(self, order: np.ndarray, top: int = 130) -> np.ndarray:
        """Per level x = 0..``top`` % of the cluster's GPUs: the bound (% of the GPUs) for the
        arrivals of ``order`` up to the last one that :meth:`.replay.Curve.at` averages over
        at x (arrived demand rounding to x, else within x +- 1; if none, the last arrival at
        or below x %). The bound grows with the arrivals, so this value bounds every
        policy's discretised curve at x."""
        total = self.cluster.total_gpu_milli
        arrived = np.cumsum(self.pods.demand[order])
        out = np.full(top + 1, np.nan)
        for x in range(top + 1):
            i = window_end(arrived, total, x)
            if i is None:
                break  # the workload ended below this level
            out[x] = self.at(order[:i]) / total * 100 if i else 0.0
        return out


def window_end(arrived: np.ndarray, total: int, x: int) -> int | None:
    """How many arrivals (a prefix) a bound at ``x`` % must cover: up to the last one that
    :meth:`.replay.Curve.at` averages over at x (arrived demand rounding to x, else within
    x +- 1; if none, the last arrival at or below x %); None when the workload (cumulative
    demand ``arrived``, milli-GPU) ended below x %. The most any placement holds only grows
    with the arrivals, so a bound there bounds the policy's mean over the window."""
    rounded = np.round(arrived / total * 100)
    window = np.flatnonzero(rounded == x)
    if not len(window):
        window = np.flatnonzero((rounded >= x - 1) & (rounded <= x + 1))
    if len(window):
        return int(window[-1]) + 1
    if len(arrived) and arrived[-1] < x / 100 * total:
        return None
    return int(np.searchsorted(arrived, x / 100 * total, side="right"))
