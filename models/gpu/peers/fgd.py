"""The six peer policies of the FGD paper, for :func:`.replay.replay`.

Each follows the score plugin of the public simulator of Weng et al. (USENIX ATC 2023),
hkust-adsl/kubernetes-scheduler-simulator, as configured for the paper's experiments
(``experiments/run_scripts/generate_run_scripts.py`` and ``scripts/generate_config_and_run.py``:
one score plugin of weight 1000, every default Kubernetes score plugin disabled, GPU
selection ``best`` unless noted). The Go sources were read to learn the definitions; this is
our own Python. What they share:

* Scores are Go ``int64`` values in [0, 100] (a float score is truncated), so equal scores
  are common. Among the highest the simulator takes the node with the smallest name: its
  vendored ``pkg/scheduler/core/generic_scheduler.go`` patches ``selectHost`` ("for
  reproducibility, choose the smallest lexicographical order"), and ``syncClusterResourceList``
  prefixes every node name with its place in a random permutation (``rand.Perm``). So ties go
  to the first node of one random order fixed for the whole run (``TraceState.rank``),
  which packs; stock Kubernetes draws uniformly (``tie_break="uniform"`` in
  :func:`.replay.replay`), which spreads.
  Plugins with a ``NormalizeScore`` (BestFit) rescale min..max to 0..100, which keeps the
  set of best nodes unchanged, so it is left out.
* Which GPUs a pod gets inside the chosen node (``Open-Gpu-Share`` ``Reserve``): with the
  ``best`` selection a shared pod takes the fitting GPU with the least free milli-GPU, the
  first such index on ties (``allocateGpuIdBasedOnBestFit``); a whole-GPU pod takes the
  lowest-indexed fully free GPUs (``AllocateExclusiveGpuId``).
* ``MaxSpecCpu`` = 128,000 milli-cores and ``MaxSpecGpu`` = 8,000 milli-GPU normalise
  CPU and GPU (``pkg/type/open-gpu-share/utils/const.go``). Memory enters no score.
* A pod's CPU in the scores is Kubernetes' non-zero request (:data:`.replay.NONZERO_MILLI_CPU`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.replay import PodSet, TraceState

MAX_SCORE = 100
MAX_SPEC_CPU = 128_000
MAX_SPEC_GPU = 8_000
TYPICAL_POPULARITY = 95
"""FGD's typical pods cover this share (%) of the pod list (``--pod-popularity-threshold``)."""


def _pick_best(
    scores: np.ndarray, nodes: np.ndarray, state: TraceState, rng: np.random.Generator
) -> int:
    """The node with the highest score; among equals, the one of lowest ``state.rank`` (the
    simulator's patched ``selectHost``: smallest name, names carrying a random rank), or
    one drawn uniformly when ``state.rank`` is None (stock Kubernetes)."""
    best = nodes[scores == scores.max()]
    if len(best) == 1:
        return int(best[0])
    if state.rank is not None:
        return int(best[np.argmin(state.rank[best])])
    return int(best[int(rng.integers(len(best)))])


def best_fit_gpus(left: np.ndarray, num_gpu: int, milli: int) -> list[int]:
    """``allocateGpuIdBasedOnBestFit``: the tightest fitting GPU for a shared pod (first on
    ties), the lowest-indexed fully free GPUs for whole GPUs; none for a CPU-only pod."""
    if num_gpu == 0:
        return []
    if milli < MILLI:
        fit = np.where(left >= milli, left, MILLI + 1)
        return [int(np.argmin(fit))]
    return [int(g) for g in np.flatnonzero(left == MILLI)[:num_gpu]]


def random_fit_gpus(
    left: np.ndarray, num_gpu: int, milli: int, rng: np.random.Generator
) -> list[int]:
    """``allocateGpuIdBasedOnRandomFit``: a uniformly random fitting GPU for a shared pod;
    the lowest-indexed fully free GPUs for whole GPUs."""
    if num_gpu == 0:
        return []
    if milli < MILLI:
        fit = np.flatnonzero(left >= milli)
        return [int(fit[int(rng.integers(len(fit)))])]
    return [int(g) for g in np.flatnonzero(left == MILLI)[:num_gpu]]


class _Base:
    name = "base"

    def reset(self, state: TraceState, pods: PodSet) -> None:
        pass

    def placed(self, state: TraceState, pods: PodSet, p: int, node: int) -> None:
        pass

    def gpus(
        self, state: TraceState, pods: PodSet, p: int, node: int, rng: np.random.Generator
    ) -> list[int]:
        return best_fit_gpus(state.gpu_left[node], int(pods.num_gpu[p]), int(pods.milli[p]))

    def scores(self, state: TraceState, pods: PodSet, p: int, nodes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def choose(
        self,
        state: TraceState,
        pods: PodSet,
        p: int,
        nodes: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[int, list[int]]:
        node = _pick_best(self.scores(state, pods, p, nodes), nodes, state, rng)
        return node, self.gpus(state, pods, p, node, rng)


class RandomPolicy(_Base):
    """``random_score.go``: one feasible node drawn uniformly (``PreScore``) scores 100, the
    rest 0; GPU selection ``random`` (a uniformly random fitting GPU for a shared pod)."""

    name = "Random"

    def choose(self, state, pods, p, nodes, rng):  # noqa: D102
        node = int(nodes[int(rng.integers(len(nodes)))])
        left = state.gpu_left[node]
        return node, random_fit_gpus(left, int(pods.num_gpu[p]), int(pods.milli[p]), rng)


class DotProdPolicy(_Base):
    """``dot_product_score.go`` with ``dimExtMethod=merge``, ``normMethod=max`` (Tetris-style
    alignment, as the paper's artifact runs it): node vector (free CPU / 128,000, free
    milli-GPU of the node / 8,000), pod vector (CPU / 128,000, total milli-GPU / 8,000);
    score = int(100 x (1 - dot / 2)): the node whose free resources align *least* with the
    request (the fullest) wins. GPU selection ``best``."""

    name = "DotProd"

    def scores(self, state, pods, p, nodes):  # noqa: D102
        cpu_free = state.cpu_left[nodes] / MAX_SPEC_CPU
        gpu_free = state.gpu_left[nodes].sum(axis=1) / MAX_SPEC_GPU
        cpu_req = pods.cpu_score[p] / MAX_SPEC_CPU
        gpu_req = pods.demand[p] / MAX_SPEC_GPU
        dot = (cpu_free * cpu_req + gpu_free * gpu_req) / 2
        return np.trunc(MAX_SCORE * (1 - dot))


class GpuClusteringPolicy(_Base):
    """``gpu_clustering_score.go``: keep pods of the same kind (shared GPU, 1 GPU, 2 GPUs, ...)
    together. With b = 25 x (8,000 - free milli-GPU) // 8,000 (integer arithmetic): b + 75 on
    a node holding only this kind, b + 50 on a node holding this kind among others, b + 25 on
    a node without GPU pods, b on a node holding only other kinds; 0 everywhere for a CPU-only
    pod. GPU selection ``best``."""

    name = "GpuClustering"

    def scores(self, state, pods, p, nodes):  # noqa: D102
        kind = state.affinity_kind(int(pods.num_gpu[p]), int(pods.milli[p]))
        if kind < 0:
            return np.zeros(len(nodes))
        aff = state.affinity[nodes]
        base = (MAX_SCORE // 4) * (MAX_SPEC_GPU - state.gpu_left[nodes].sum(axis=1)) // MAX_SPEC_GPU
        kinds = (aff > 0).sum(axis=1)
        same = aff[:, kind] > 0
        offset = np.where(same, np.where(kinds == 1, 75, 50), np.where(kinds == 0, 25, 0))
        return base + offset


class GpuPackingPolicy(_Base):
    """``gpu_packing_score.go``: prefer (1) shared GPUs already in use, (2) free GPUs on a
    node already in use, (3) an idle node. Walking the node's GPUs from least to most free
    and taking those that fit: if every GPU of the node is free, max(33 - free GPUs, free
    GPUs); else if some taken GPU is fully free, max(50 - fully free taken, 33); else
    max(100 - (sum of taken GPUs' free milli x 100 // 1000) // 10, 50). 0 for a CPU-only pod.
    GPU selection ``best``."""

    name = "GpuPacking"

    def scores(self, state, pods, p, nodes):  # noqa: D102
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        if k == 0 or m <= 0:
            return np.zeros(len(nodes))
        left = state.gpu_left[nodes]
        exists = state.exists[nodes]
        free = ((left == MILLI) & exists).sum(axis=1)
        count = state.cluster.gpu_count[nodes]
        idle = np.maximum(MAX_SCORE // 3 - free, free)
        if m == MILLI:  # only fully free GPUs fit: k of them are taken
            used = np.full(len(nodes), max(MAX_SCORE // 2 - k, MAX_SCORE // 3))
            return np.where(free == count, idle, used)
        tight = np.where(left >= m, left, MILLI + 1).min(axis=1)  # the GPU taken (k = 1)
        shared = np.maximum(MAX_SCORE - (tight * 100 // MILLI) // 10, MAX_SCORE // 2)
        new_gpu = max(MAX_SCORE // 2 - 1, MAX_SCORE // 3)
        return np.where(free == count, idle, np.where(tight == MILLI, new_gpu, shared))


class BestFitPolicy(_Base):
    """``best_fit_score.go``: int(100 x (1 - (0.5 (free CPU - CPU) / 128,000 + 0.5 (free
    milli-GPU - milli-GPU) / 8,000))): the node left with the least weighted free capacity
    wins. GPU selection ``best``."""

    name = "BestFit"

    def scores(self, state, pods, p, nodes):  # noqa: D102
        cpu = (state.cpu_left[nodes] - pods.cpu_score[p]) / MAX_SPEC_CPU * 0.5
        gpu = (state.gpu_left[nodes].sum(axis=1) - pods.demand[p]) / MAX_SPEC_GPU * 0.5
        return np.trunc((1.0 - (cpu + gpu)) * MAX_SCORE)


def typical_pods(pods: PodSet, threshold: float = TYPICAL_POPULARITY) -> list[tuple]:
    """FGD's workload distribution (``GetTypicalPods`` in ``pkg/utils/frag.go`` with
    ``isInvolvedCpuPods=true``, ``podPopularityThreshold=95``, ``podIncreaseStep=1``,
    ``gpuResWeight=0``): the pod specs (CPU, per-GPU milli-GPU, GPU count, GPU types) of the
    whole trace, most frequent first (ties: the larger spec first), taken until they cover
    ``threshold`` % of the pods, with frequencies renormalised to sum to 1.

    Returns ``[(cpu, milli, num_gpu, spec, frequency), ...]``.
    """
    counts = Counter(
        (int(pods.cpu_score[p]), int(pods.milli[p]), int(pods.num_gpu[p]), pods.spec[p])
        for p in range(pods.n)
    )
    ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
    total = sum(counts.values())
    chosen, cum = [], 0
    for spec, count in ranked:
        if cum >= threshold * total / 100:
            break
        chosen.append((spec, count))
        cum += count
    return [(*spec, count / cum) for spec, count in chosen]


class FGDPolicy(_Base):
    """Fragmentation Gradient Descent (``fgd_score.go``, ``NodeGpuShareFragAmountScore`` in
    ``pkg/utils/frag.go``; GPU selection by FGD itself, ``dimExtMethod=share``).

    A node's fragmentation against the typical pods t (frequency p_t) is
    F = sum_t p_t f_t, where f_t is the node's free milli-GPU in total unless t fits the
    node (t asks for GPUs, accepts the node's GPU type, the node has enough CPU and t's GPU
    count of GPUs each with t's milli-GPU free), in which case f_t is the free milli-GPU of
    the GPUs too small for t. A CPU-only typical pod always counts the node's whole free
    milli-GPU. The score of placing the pod is int(100 x sigmoid((F_before - F_after) /
    1000)); a shared pod is tried on each fitting GPU, the node scores its best GPU and gets
    the first GPU with that score; whole GPUs are the lowest-indexed free ones.

    Per node the counts of GPUs that fit each typical pod and the free milli-GPU of those
    that do not are cached, so a candidate is evaluated from a one-GPU change in O(T).
    """

    name = "FGD"

    def reset(self, state: TraceState, pods: PodSet) -> None:  # noqa: D102
        typical = typical_pods(pods)
        self.t_cpu = np.array([t[0] for t in typical], dtype=np.int64)
        self.t_milli = np.array([t[1] for t in typical], dtype=np.int64)
        self.t_num = np.array([t[2] for t in typical], dtype=np.int64)
        self.t_freq = np.array([t[4] for t in typical], dtype=np.float64)
        self.t_gpu = self.t_milli > 0
        types = state.cluster.types
        t_access = np.array(
            [[not t[3] or ty in t[3].split("|") for ty in types] for t in typical], dtype=bool
        ).reshape(len(typical), len(types))
        self.access = t_access.T[state.cluster.type_of]  # [node, t]
        n = state.cluster.n
        self.fit = np.zeros((n, len(typical)), dtype=np.int64)
        self.small = np.zeros((n, len(typical)), dtype=np.int64)
        self.frag = np.zeros(n)
        self._refresh(state, np.arange(n))

    def _refresh(self, state: TraceState, nodes: np.ndarray) -> None:
        left = state.gpu_left[nodes][:, :, None]  # padding slots hold 0: neither fit nor add
        tm = self.t_milli[None, None, :]
        self.fit[nodes] = (left >= tm).sum(axis=1)
        self.small[nodes] = (left * (left < tm)).sum(axis=1)
        self.frag[nodes] = self._frag(
            state.cpu_left[nodes],
            state.gpu_left[nodes].sum(axis=1),
            self.fit[nodes],
            self.small[nodes],
            self.access[nodes],
        )

    def _frag(self, cpu_left, total_left, fit, small, access) -> np.ndarray:
        q3 = (
            self.t_gpu[None, :]
            & access
            & (fit >= self.t_num[None, :])
            & (cpu_left[:, None] >= self.t_cpu[None, :])
        )
        amount = np.where(q3, small, total_left[:, None])
        return amount @ self.t_freq

    def placed(self, state, pods, p, node):  # noqa: D102
        self._refresh(state, np.array([node]))

    @staticmethod
    def _score(delta: np.ndarray) -> np.ndarray:
        return np.floor(MAX_SCORE / (1.0 + np.exp(-delta / 1000.0)))

    def _candidates(self, state, pods, p, nodes):
        """FGD's score of every candidate placement of pod ``p`` on ``nodes``:
        ``(rows, cols, score, left)`` with ``rows`` indexing ``nodes``. A whole-GPU or
        CPU-only pod has one candidate per node (``cols`` None, ``left`` 0); a shared pod one
        per node and distinct free amount (``cols`` its GPU, ``left`` the milli-GPU it leaves
        there)."""
        k, m, cpu = int(pods.num_gpu[p]), int(pods.milli[p]), int(pods.cpu_score[p])
        cpu_new = state.cpu_left[nodes] - cpu
        total = state.gpu_left[nodes].sum(axis=1)
        if k == 0 or m == MILLI:
            fit = self.fit[nodes]
            if k:  # k fully free GPUs drop to 0: each fitted every GPU typical pod
                fit = fit - k * self.t_gpu[None, :]
            new = self._frag(cpu_new, total - k * m, fit, self.small[nodes], self.access[nodes])
            rows = np.arange(len(nodes))
            return rows, None, self._score(self.frag[nodes] - new), np.zeros(len(nodes), np.int64)
        # A shared pod: one candidate per node and distinct free amount (equal GPUs of a
        # node give equal scores; the first of them is the one the simulator keeps).
        left = state.gpu_left[nodes]
        slots = left.shape[1]
        earlier = np.tril(np.ones((slots, slots), dtype=bool), -1)
        dup = ((left[:, :, None] == left[:, None, :]) & earlier[None, :, :]).any(axis=2)
        rows, cols = np.nonzero((left >= m) & state.exists[nodes] & ~dup)
        old = left[rows, cols][:, None]
        new_left = old - m
        tm = self.t_milli[None, :]
        fit = self.fit[nodes][rows] - (old >= tm) + (new_left >= tm)
        small = self.small[nodes][rows] - old * (old < tm) + new_left * (new_left < tm)
        new = self._frag(cpu_new[rows], total[rows] - m, fit, small, self.access[nodes][rows])
        return rows, cols, self._score(self.frag[nodes][rows] - new), new_left[:, 0]

    def choose(self, state, pods, p, nodes, rng):  # noqa: D102
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        rows, cols, score, _ = self._candidates(state, pods, p, nodes)
        if cols is None:
            node = _pick_best(score, nodes, state, rng)
            return node, best_fit_gpus(state.gpu_left[node], k, m)
        node_best = np.full(len(nodes), -np.inf)
        np.maximum.at(node_best, rows, score)
        node = _pick_best(node_best, nodes, state, rng)
        local = int(np.searchsorted(nodes, node))
        mine = np.flatnonzero((rows == local) & (score == node_best[local]))
        return node, [int(cols[mine].min())]


POLICIES: dict[str, type[_Base]] = {
    cls.name: cls
    for cls in (
        RandomPolicy,
        DotProdPolicy,
        GpuClusteringPolicy,
        GpuPackingPolicy,
        BestFitPolicy,
        FGDPolicy,
    )
}
"""The six peers in the paper's order."""


def make(name: str) -> _Base:
    """A fresh policy by its paper name (Random, DotProd, GpuClustering, GpuPacking, BestFit,
    FGD)."""
    try:
        return POLICIES[name]()
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; one of {', '.join(POLICIES)}") from None
