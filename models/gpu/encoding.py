"""The shared core of the two exact GPU encodings (CP-SAT and MILP).

One integer linear model, built once here and translated one-to-one by
:mod:`placement.models.gpu.cpsat` and :mod:`placement.models.gpu.milp`, so both backends
solve exactly the same mathematics (docs/formulations/gpu.md):

* eligibility of a node for a job and the workers it can take (:class:`Cluster`);
* the candidate restriction for large instances (:func:`select_candidates`) and the bound
  that stays valid for the whole instance when it is used (:func:`relaxation_bound`);
* the model itself (:class:`GpuModel`): aggregated counts per job and node / NVLink domain
  / GPU, span indicators for the communication tier, and an exact linearisation of the
  fragmentation measure of :func:`placement.models.gpu.check.node_fragmentation_milli`;
* a hint from a solution (:meth:`GpuModel.values_from_solution`) and the decoding of counts
  into a placement (:meth:`GpuModel.decode`);
* the lexicographic stage driver (:func:`solve_staged`), which talks to a backend through
  the small :class:`StageBackend` protocol.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from placement.models.gpu.instance import MILLI, GpuInstance, GpuJob, GpuSolution, WorkerPlacement
from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.cancel import CancellationToken
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.options import deterministic_wall_limit
from placement.solver.result import StopReason

log = logging.getLogger(__name__)

TIERS = ("placed_gpu_weighted", "comm_cost", "fragmentation")
"""The checker's objective tiers, in lexicographic order."""

MAX_PLACEMENT_VARS = 50_000
"""Above this many placement variables (job x node pairs, plus job x GPU pairs for
fractional jobs, plus job x NVLink-domain pairs on multi-domain nodes), each job is
restricted to a candidate set of nodes and optimality is no longer claimed. The limit also
shrinks with the time left (``StageBackend.vars_per_second``)."""

CPSAT_VARS_PER_SECOND = 1_000
"""Measured with 2 search workers: CP-SAT's presolve takes 0.1-0.2 ms per variable of this
model (more on larger ones) and its search needs several times that; larger models stall in
presolve."""

MILP_VARS_PER_SECOND = 1_000
"""HiGHS presolves faster than CP-SAT but its search slows down on the same sizes."""

CPSAT_COMM_SCALE = 1_000_000
"""CP-SAT needs integer objective coefficients: communication costs are multiplied by this
and rounded, so CP-SAT proves the communication tier at 1e-6 resolution per job."""

SPAN_SAME_GPU = -1

Values = Sequence[float]


# -------------------------------------------------------------------------------------------
# Cluster state and eligibility


class Cluster:
    """Free capacity of every node and GPU as numpy arrays, for fast eligibility tests.

    Built from an instance (the initial state) or, with :meth:`residual`, from what a
    solution leaves free.
    """

    def __init__(self, instance: GpuInstance) -> None:
        nodes = instance.nodes
        self.instance = instance
        n_nodes = len(nodes)
        self.gpu_count = np.array([nd.gpu_count for nd in nodes], dtype=np.int64)
        self.gpu_offset = np.concatenate(([0], np.cumsum(self.gpu_count)))[:-1].astype(np.int64)
        self.gpu_node = np.repeat(np.arange(n_nodes, dtype=np.int64), self.gpu_count)
        milli_used = np.concatenate(
            [_per_gpu(nd.gpu_milli_used, nd.gpu_count) for nd in nodes] or [np.zeros(0)]
        ).astype(np.int64)
        mem_used = np.concatenate(
            [_per_gpu(nd.gpu_memory_mib_used, nd.gpu_count) for nd in nodes] or [np.zeros(0)]
        ).astype(np.int64)
        node_gpu_mem = np.array([nd.gpu_memory_mib for nd in nodes], dtype=np.int64)
        self.node_gpu_mem = node_gpu_mem
        self.free0 = MILLI - milli_used
        self.memfree = node_gpu_mem[self.gpu_node] - mem_used
        # A whole-GPU worker needs a GPU with nothing running on it (check.py: no milli and
        # no memory in use).
        self.fully_free = (milli_used == 0) & (mem_used == 0)
        self.ff_count = np.bincount(self.gpu_node[self.fully_free], minlength=n_nodes).astype(
            np.int64
        )
        self.cpu_free = np.array([nd.cpu_milli_free for nd in nodes], dtype=np.int64)
        self.mem_free = np.array([nd.memory_mib_free for nd in nodes], dtype=np.int64)
        types = sorted({nd.gpu_type for nd in nodes})
        self.type_code = {t: i for i, t in enumerate(types)}
        self.node_type = np.array([self.type_code[nd.gpu_type] for nd in nodes], dtype=np.int64)

    def residual(self, solution: GpuSolution | None) -> Cluster:
        """A copy of this state minus what ``solution`` uses (for the candidate choice)."""
        out = object.__new__(Cluster)
        out.__dict__.update(self.__dict__)
        out.free0 = self.free0.copy()
        out.memfree = self.memfree.copy()
        out.fully_free = self.fully_free.copy()
        out.cpu_free = self.cpu_free.copy()
        out.mem_free = self.mem_free.copy()
        if solution is not None:
            jobs = self.instance.jobs
            for j, workers in solution.placements.items():
                job = jobs[j]
                for w in workers:
                    out.cpu_free[w.node] -= job.cpu_milli
                    out.mem_free[w.node] -= job.memory_mib
                    for g in w.gpus:
                        k = self.gpu_offset[w.node] + g
                        out.fully_free[k] = False
                        if job.kind == "whole":
                            out.free0[k] = 0
                            out.memfree[k] = 0
                        else:
                            out.free0[k] -= job.gpu_milli
                            out.memfree[k] -= job.gpu_memory_mib
        out.ff_count = np.bincount(
            self.gpu_node[out.fully_free], minlength=len(self.gpu_count)
        ).astype(np.int64)
        return out

    def type_mask(self, job: GpuJob) -> np.ndarray:
        """Nodes whose GPUs the job may use (every node for a CPU-only job)."""
        if job.kind == "cpu":
            return np.ones(len(self.gpu_count), dtype=bool)
        mask = self.gpu_count > 0
        if job.gpu_types:
            codes = [self.type_code[t] for t in job.gpu_types if t in self.type_code]
            mask &= np.isin(self.node_type, codes)
        return mask

    def worker_cap(self, job: GpuJob) -> np.ndarray:
        """Per node, the workers of ``job`` that its free CPU and memory can take."""
        cap = np.full(len(self.gpu_count), job.workers, dtype=np.int64)
        if job.cpu_milli > 0:
            cap = np.minimum(cap, np.maximum(self.cpu_free, 0) // job.cpu_milli)
        if job.memory_mib > 0:
            cap = np.minimum(cap, np.maximum(self.mem_free, 0) // job.memory_mib)
        return cap

    def gpu_caps(self, job: GpuJob) -> np.ndarray:
        """Per GPU, the workers of fractional ``job`` it can host (0 for other kinds)."""
        if job.kind != "fractional":
            return np.zeros(len(self.free0), dtype=np.int64)
        ok = (self.free0 >= job.gpu_milli) & (self.memfree >= job.gpu_memory_mib)
        cap = np.where(ok, np.maximum(self.free0, 0) // job.gpu_milli, 0)
        if job.gpu_memory_mib > 0:
            cap = np.minimum(cap, np.maximum(self.memfree, 0) // job.gpu_memory_mib)
        cap = np.minimum(cap, job.workers)
        return cap * self.type_mask(job)[self.gpu_node]

    def node_caps(self, job: GpuJob, gpu_caps: np.ndarray | None = None) -> np.ndarray:
        """Per node, the most workers of ``job`` it can host alone (0 = not eligible).

        Eligibility follows check.py: an allowed GPU type, per-worker CPU and memory, and for
        a whole-GPU worker ``gpus`` fully free GPUs with enough memory each; for a fractional
        worker a GPU with enough free milli-GPU and free GPU memory.
        """
        cap = self.worker_cap(job) * self.type_mask(job)
        if job.kind == "whole":
            cap = np.minimum(cap, self.ff_count // job.gpus)
            cap = np.where(self.node_gpu_mem >= job.gpu_memory_mib, cap, 0)
        elif job.kind == "fractional":
            per_gpu = self.gpu_caps(job) if gpu_caps is None else gpu_caps
            cap = np.minimum(cap, np.bincount(self.gpu_node, per_gpu, len(cap)).astype(np.int64))
        return np.maximum(cap, 0)


def _per_gpu(values: tuple[int, ...], count: int) -> np.ndarray:
    """Per-GPU usage; an empty tuple means nothing in use."""
    if len(values) == count:
        return np.asarray(values, dtype=np.int64)
    return np.zeros(count, dtype=np.int64)


def eligible_nodes(instance: GpuInstance, cluster: Cluster | None = None) -> list[list[int]]:
    """For each job, the nodes that could host at least one of its workers on their own.

    Parameters
    ----------
    instance:
        The instance.
    cluster:
        Its :class:`Cluster` (built when omitted).

    Returns
    -------
    list of list of int
        ``out[j]`` holds the eligible node indices of job ``j``, ascending.
    """
    cluster = cluster or Cluster(instance)
    return [np.flatnonzero(cluster.node_caps(job)).tolist() for job in instance.jobs]


# -------------------------------------------------------------------------------------------
# Candidate restriction and a bound valid for the whole instance


def placement_var_count(instance: GpuInstance, cluster: Cluster) -> int:
    """Number of placement variables the full model would have (the size test)."""
    multi_dom = _multi_domain_counts(instance, cluster)
    total = 0
    for job in instance.jobs:
        if job.kind == "fractional":
            total += int(np.count_nonzero(cluster.gpu_caps(job)))
            continue
        caps = cluster.node_caps(job)
        elig = caps > 0
        total += int(np.count_nonzero(elig))
        if job.kind == "whole":
            total += int(multi_dom[elig].sum())
    return total


def _multi_domain_counts(instance: GpuInstance, cluster: Cluster) -> np.ndarray:
    """Per node, the number of NVLink domains holding fully free GPUs if more than one."""
    out = np.zeros(len(instance.nodes), dtype=np.int64)
    for n, node in enumerate(instance.nodes):
        start = cluster.gpu_offset[n]
        doms = {
            node.nvlink_domain(g) for g in range(node.gpu_count) if cluster.fully_free[start + g]
        }
        out[n] = len(doms) if len(doms) > 1 else 0
    return out


def select_candidates(
    instance: GpuInstance,
    cluster: Cluster,
    incumbent: GpuSolution | None,
    *,
    target_vars: int,
    skip_groups: set[int] | None = None,
    best_fit: int = 3,
    rank: str = "room",
) -> tuple[list[list[int]], list[int], GpuSolution]:
    """Candidate nodes per job for one pass of the restricted model of a large instance.

    The pass re-optimises a *window*: whole groups of the first level above the node (racks;
    blocks of 8 nodes without such a level), skipping ``skip_groups``, added until the model
    would exceed ``target_vars`` placement variables. With ``rank="room"`` the groups with
    the most free milli-GPU the incumbent leaves come first (room for unplaced jobs); with
    ``rank="priority"`` those whose placed work has the lowest priority per GPU (where more
    valuable unplaced jobs could take its place). A job is *free* when the incumbent leaves it unplaced (the most valuable
    first, while the budget lasts) or has a worker in the window. Every other placed job is
    *fixed* where the incumbent puts it (it gets no variables). A free job may use the
    nodes the incumbent gives it (so the incumbent stays a feasible hint), every eligible
    node of the window, and the ``best_fit`` nodes that fit it most tightly in what the
    incumbent leaves free. Inside the window the model is exact, so it can swap jobs,
    consolidate fragments and place gangs inside one rack.

    Returns
    -------
    (list of list of int, list of int, GpuSolution)
        Sorted candidate node indices per job (empty for fixed jobs), the window's groups,
        and the fixed jobs' placements.
    """
    residual = cluster.residual(incumbent)
    n_nodes = len(instance.nodes)
    if len(instance.levels) > 2:
        group_of = instance.group_ids[0]
    else:
        group_of = np.arange(n_nodes, dtype=np.int64) // 8
    n_groups = int(group_of.max()) + 1 if n_nodes else 0
    multi_dom = _multi_domain_counts(instance, cluster)
    node_ids = np.arange(n_nodes, dtype=np.int64)
    placed_nodes: dict[int, set[int]] = {}
    if incumbent is not None:
        for j, workers in incumbent.placements.items():
            placed_nodes[j] = {w.node for w in workers}

    # Per job: placement variables per node (0 = not eligible), and per group.
    weights: list[np.ndarray] = []
    for job in instance.jobs:
        if job.kind == "fractional":
            gcap = cluster.gpu_caps(job)
            caps = cluster.node_caps(job, gcap)
            wt = np.bincount(cluster.gpu_node, gcap > 0, n_nodes).astype(np.int64)
        else:
            caps = cluster.node_caps(job)
            wt = np.ones(n_nodes, dtype=np.int64) + (multi_dom if job.kind == "whole" else 0)
        weights.append(np.where(caps > 0, wt, 0))

    if rank == "priority":
        # Priority-weighted placed milli-GPU per placed milli-GPU, lowest first.
        weighted = np.zeros(n_groups)
        plain = np.zeros(n_groups)
        for j, workers in incumbent.placements.items() if incumbent is not None else ():
            job = instance.jobs[j]
            for w in workers:
                weighted[group_of[w.node]] += job.priority * job.milli_per_worker
                plain[group_of[w.node]] += job.milli_per_worker
        key = np.where(plain > 0, weighted / np.maximum(plain, 1), np.inf)
    else:
        # Room left (free milli-GPU), most first.
        key = -np.bincount(group_of[cluster.gpu_node], np.maximum(residual.free0, 0), n_groups)
    order = [int(k) for k in np.argsort(key, kind="stable") if int(k) not in (skip_groups or ())]
    unplaced = [j for j in range(len(instance.jobs)) if j not in placed_nodes]
    unplaced.sort(key=lambda j: -instance.jobs[j].weighted_demand_milli)

    window: list[int] = []
    in_window = np.zeros(n_nodes, dtype=bool)
    for k in order or [0]:
        trial = in_window | (group_of == k)
        inside = {j for j, ns in placed_nodes.items() if any(trial[n] for n in ns)}
        size = sum(int(weights[j][trial].sum()) for j in inside)
        if window and size > target_vars:
            break
        window.append(k)
        in_window = trial
        if size > target_vars:
            break
    free = {j for j, ns in placed_nodes.items() if any(in_window[n] for n in ns)}
    size = sum(int(weights[j][in_window].sum()) for j in free)
    for j in unplaced:
        extra = int(weights[j][in_window].sum())
        if extra and size + extra <= target_vars:
            free.add(j)
            size += extra

    out: list[list[int]] = []
    fixed: dict[int, tuple[WorkerPlacement, ...]] = {}
    for j, job in enumerate(instance.jobs):
        chosen = set(placed_nodes.get(j, ()))
        if j not in free and incumbent is not None and j in incumbent.placements:
            fixed[j] = incumbent.placements[j]
            chosen = set()
        if j in free:
            elig = weights[j] > 0
            chosen.update(np.flatnonzero(elig & in_window).tolist())
            rcaps = residual.node_caps(job) * elig
            fits = np.flatnonzero(rcaps)
            if len(fits) and best_fit > 0:
                take = np.minimum(rcaps[fits], job.workers)
                tie = (node_ids[fits] * 2654435761 + (j + 1) * 40503) % 4294967291
                order_fit = np.lexsort((tie, _leftover(job, residual, fits, take)))
                chosen.update(fits[order_fit[:best_fit]].tolist())
        out.append(sorted(chosen))
    return out, window, GpuSolution(fixed)


def _leftover(job: GpuJob, state: Cluster, nodes: np.ndarray, take: np.ndarray) -> np.ndarray:
    """Capacity a node would have left after taking ``take`` workers (best-fit score)."""
    if job.kind == "whole":
        return state.ff_count[nodes] - job.gpus * take
    if job.kind == "fractional":
        free = np.bincount(state.gpu_node, np.maximum(state.free0, 0), len(state.gpu_count))
        return free[nodes] - job.gpu_milli * take
    return state.cpu_free[nodes] - job.cpu_milli * take


NODE_LP_LIMIT = 250_000
"""Up to this many eligible (job, node) pairs the bound model works per node, above per class
of identical nodes."""


def relaxation_bound(
    instance: GpuInstance,
    cluster: Cluster,
    options: Any,
    cancel: Any,
    time_limit_s: float,
    node_level_limit: int = NODE_LP_LIMIT,
) -> int | None:
    """A proven upper bound on the primary objective (milli-GPU, weighted), whole instance.

    A relaxation of stage 1 over every eligible (job, place) pair, where a place is a node
    or, when there are more than ``node_level_limit`` pairs, a class of nodes of equal GPU
    type and GPU memory: ``0 <= x_j <= 1`` and ``w[j, p] >= 0`` (continuous, at most what
    ``p`` can host) with ``sum_p w[j, p] = workers_j x_j``. Each place offers its fully free
    GPUs to whole workers, its free milli-GPU and free GPU memory to GPU work and its free
    CPU and memory to every worker; per class, whole workers of >= g GPUs only use nodes
    with >= g fully free GPUs; per node, a job with a required locality only uses nodes of
    groups that can hold all of it. Every feasible placement maps to a feasible point, so
    the LP optimum (HiGHS, through the backend wrapper, within ``time_limit_s``) bounds the
    instance. None when it is not proved.
    """
    import pulp

    from placement.solver.backends.milp import MILP_SOLVERS

    n_nodes = len(instance.nodes)
    caps = [cluster.node_caps(job) for job in instance.jobs]
    pairs = sum(int(np.count_nonzero(c)) for c in caps)
    per_node = pairs <= node_level_limit
    if per_node:
        place = np.arange(n_nodes, dtype=np.int64)
    else:
        key: dict[tuple[str, int], int] = {}
        place = np.array(
            [key.setdefault((nd.gpu_type, nd.gpu_memory_mib), len(key)) for nd in instance.nodes],
            dtype=np.int64,
        )
    n_places = int(place.max()) + 1 if n_nodes else 0
    ff = np.bincount(place, cluster.ff_count, n_places)
    milli = np.bincount(place[cluster.gpu_node], np.maximum(cluster.free0, 0), n_places)
    gmem = np.bincount(place[cluster.gpu_node], np.maximum(cluster.memfree, 0), n_places)
    cpu = np.bincount(place, np.maximum(cluster.cpu_free, 0), n_places)
    mem = np.bincount(place, np.maximum(cluster.mem_free, 0), n_places)
    sizes = sorted({job.gpus for job in instance.jobs if job.kind == "whole"})
    ff_at_least = {
        g: np.bincount(place, cluster.ff_count * (cluster.ff_count >= g), n_places) for g in sizes
    }

    prob = pulp.LpProblem("gpu_bound", pulp.LpMaximize)
    objective: list[tuple[Any, int]] = []
    rows: dict[tuple[str, int], list[tuple[Any, float]]] = {}

    def put(name: str, p: int, var: Any, coef: float) -> None:
        if coef:
            rows.setdefault((name, p), []).append((var, coef))

    for j, job in enumerate(instance.jobs):
        node_cap = caps[j]
        if per_node and job.locality_level and job.locality_required:
            node_cap = _holding_nodes(instance, cluster, job, node_cap)
        cap = np.bincount(place, node_cap, n_places)
        if cap.sum() < job.workers or job.weighted_demand_milli == 0:
            continue
        x = pulp.LpVariable(f"x{j}", 0, 1)
        objective.append((x, job.weighted_demand_milli))
        parts: list[tuple[Any, float]] = [(x, -job.workers)]
        for p in np.flatnonzero(cap).tolist():
            w = pulp.LpVariable(f"w{j}_{p}", 0, float(min(cap[p], job.workers)))
            parts.append((w, 1))
            if job.kind == "whole":
                put("ff", p, w, job.gpus)
                for g in sizes:
                    if g <= job.gpus:
                        put(f"ff>={g}", p, w, job.gpus)
            if job.kind == "fractional":
                put("gmem", p, w, job.gpu_memory_mib)
            put("milli", p, w, job.milli_per_worker)
            put("cpu", p, w, job.cpu_milli)
            put("mem", p, w, job.memory_mib)
        prob += pulp.LpAffineExpression(parts) == 0
    if not objective:
        return 0
    capacity = {"ff": ff, "milli": milli, "gmem": gmem, "cpu": cpu, "mem": mem}
    capacity.update({f"ff>={g}": ff_at_least[g] for g in sizes})
    for (name, p), terms in rows.items():
        prob += pulp.LpAffineExpression(terms) <= float(capacity[name][p])
    # One fixed integer column: the HiGHS wrapper reads the MIP dual bound, which a pure LP
    # does not set, so a pure LP would never map to OPTIMAL.
    prob += pulp.LpVariable("fixed", 0, 0, cat=pulp.LpInteger) + objective[0][0] <= 1
    prob.setObjective(pulp.LpAffineExpression(objective))
    run = MILP_SOLVERS["highs"].run(prob, options, cancel, max(time_limit_s, 0.1))
    if run.status != RunStatus.OPTIMAL or run.objective is None:
        return None
    value = max(run.objective, run.bound if run.bound is not None else run.objective)
    # The integer optimum is at most the LP optimum: round down, after a slack larger than
    # any floating-point error of the LP solve.
    return int(math.floor(value + 1.0 + 1e-7 * abs(value)))


def _holding_nodes(
    instance: GpuInstance, cluster: Cluster, job: GpuJob, caps: np.ndarray
) -> np.ndarray:
    """For a job with a required locality: its caps on nodes of groups that can hold all of
    it, 0 elsewhere (an NVLink-domain locality asks for a node with a domain of enough fully
    free GPUs for a whole-GPU job)."""
    level = instance.level_of_name(job.locality_level)
    out = np.zeros_like(caps)
    if level <= 1:
        for n in np.flatnonzero(caps >= job.workers).tolist():
            if level == 0 and job.kind == "whole":
                node = instance.nodes[n]
                start = cluster.gpu_offset[n]
                per_dom: dict[int, int] = {}
                for g in range(node.gpu_count):
                    if cluster.fully_free[start + g]:
                        d = node.nvlink_domain(g)
                        per_dom[d] = per_dom.get(d, 0) + 1
                if max(per_dom.values(), default=0) < job.gpus * job.workers:
                    continue
            out[n] = caps[n]
        return out
    ids = instance.group_ids[level - 2]
    room = np.bincount(ids, caps)
    holds = room[ids] >= job.workers
    out[holds] = caps[holds]
    return out


# -------------------------------------------------------------------------------------------
# The linear model container


class LinearModel:
    """Integer variables with finite bounds and linear rows with integer coefficients."""

    def __init__(self) -> None:
        self.lb: list[int] = []
        self.ub: list[int] = []
        self.kind: list[str] = []
        self.rows: list[tuple[list[int], list[int], int | None, int | None]] = []
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def num_vars(self) -> int:
        """Number of variables."""
        return len(self.lb)

    def var(self, lb: int, ub: int, kind: str) -> int:
        """A new integer variable in ``[lb, ub]``; ``kind`` names its family (x, w, y, ...)."""
        self.lb.append(int(lb))
        self.ub.append(int(ub))
        self.kind.append(kind)
        return len(self.lb) - 1

    def row(self, terms: Sequence[tuple[int, int]], lo: int | None, hi: int | None) -> None:
        """Add ``lo <= sum(coef * var) <= hi`` (None = unbounded); merges repeated variables."""
        merged: dict[int, int] = {}
        for i, c in terms:
            merged[i] = merged.get(i, 0) + int(c)
        idx = [i for i, c in merged.items() if c != 0]
        if not idx:
            if (lo is not None and lo > 0) or (hi is not None and hi < 0):
                raise ValueError("an empty row that no assignment satisfies")
            return
        coef = [merged[i] for i in idx]
        # Every variable is integer: dividing by the gcd of the coefficients and rounding the
        # bounds inwards is exact, and keeps MiB-sized coefficients small for the solvers.
        g = math.gcd(*coef)
        if g > 1:
            coef = [c // g for c in coef]
            lo = None if lo is None else -((-lo) // g)
            hi = None if hi is None else hi // g
        self.rows.append((idx, coef, lo, hi))
        self._csr = None

    def violated_rows(self, values: Values) -> list[int]:
        """Indices of rows (and -1 - index of variable bounds) that ``values`` violates."""
        v = np.asarray(values, dtype=np.float64)
        bad = np.flatnonzero((v < np.asarray(self.lb) - 1e-6) | (v > np.asarray(self.ub) + 1e-6))
        out = [-1 - int(i) for i in bad]
        if not self.rows:
            return out
        if self._csr is None:
            starts = np.cumsum([0] + [len(r[0]) for r in self.rows])[:-1]
            idx = np.fromiter((i for r in self.rows for i in r[0]), dtype=np.int64)
            coef = np.fromiter((c for r in self.rows for c in r[1]), dtype=np.float64)
            lo = np.array([-np.inf if r[2] is None else r[2] for r in self.rows], dtype=np.float64)
            hi = np.array([np.inf if r[3] is None else r[3] for r in self.rows], dtype=np.float64)
            self._csr = (starts, idx, coef, lo, hi)
        starts, idx, coef, lo, hi = self._csr
        act = np.add.reduceat(v[idx] * coef, starts)
        tol = 1e-6 * np.maximum(1.0, np.abs(act))
        out.extend(np.flatnonzero((act < lo - tol) | (act > hi + tol)).tolist())
        return out


@dataclass
class Objective:
    """A linear objective over model variables: ``sum(coef * var) + constant``."""

    terms: dict[int, float] = field(default_factory=dict)
    constant: float = 0.0

    def add(self, var: int, coef: float) -> None:
        """Add ``coef * var``."""
        if coef:
            self.terms[var] = self.terms.get(var, 0) + coef

    def value(self, values: Values) -> float:
        """The objective at ``values``."""
        return self.constant + sum(c * values[i] for i, c in self.terms.items())

    @property
    def is_constant(self) -> bool:
        """True when no variable has a non-zero coefficient."""
        return not any(self.terms.values())


# -------------------------------------------------------------------------------------------
# The model


@dataclass
class _SpanLevel:
    """One level at which a job's span indicator is modelled."""

    level: int
    mode: str  # "var": c is a variable; "always": c == x; "never": c == 0
    c: int = -1
    groups: list[Any] = field(default_factory=list)
    u: dict[Any, int] = field(default_factory=dict)


class GpuModel:
    """The integer model of one GPU instance (possibly restricted to candidate nodes).

    Variables are aggregated by symmetry: per job a placement binary ``x``; per (job, node)
    a worker count ``w`` for whole and CPU-only jobs, per (job, node, NVLink domain) a GPU
    count ``a`` on nodes with fully free GPUs in several domains, per (job, GPU) a worker
    count ``y`` for fractional jobs; per fully free GPU that both whole and fractional work
    can use a binary ``z`` (given to whole workers). Everything else (span indicators,
    fragmentation terms) is derived. See docs/formulations/gpu.md.

    Parameters
    ----------
    instance:
        The instance.
    cluster:
        Its :class:`Cluster`.
    candidates:
        Per job, the nodes it may use; None for the full model (every eligible node).
    fixed:
        Jobs kept exactly where this solution places them (a restricted model's jobs outside
        its window). They get no variables: ``cluster`` must be the state they leave
        (:meth:`Cluster.residual`); their objective terms are constants and :meth:`decode`
        adds them back.
    """

    def __init__(
        self,
        instance: GpuInstance,
        cluster: Cluster | None = None,
        candidates: list[list[int]] | None = None,
        fixed: GpuSolution | None = None,
    ) -> None:
        self.instance = instance
        self.cluster = cluster or Cluster(instance)
        self.restricted = candidates is not None or fixed is not None
        self.fixed: dict[int, tuple[WorkerPlacement, ...]] = dict(fixed.placements) if fixed else {}
        self.lm = LinearModel()
        self.last = len(instance.levels) - 1
        self.x: dict[int, int] = {}
        self.w: dict[tuple[int, int], int] = {}
        self.a: dict[tuple[int, int, int], int] = {}
        self.y: dict[tuple[int, int, int], int] = {}
        self.z: dict[tuple[int, int], int] = {}
        self.fv: dict[tuple[int, int], int] = {}
        self.e: dict[tuple[int, int], int] = {}
        self.t: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.F: dict[int, int] = {}
        self.hq: dict[tuple[int, int], tuple[int, int]] = {}
        self.job_nodes: dict[int, list[int]] = {}
        self.job_gpus: dict[tuple[int, int], list[int]] = {}
        self.spans: dict[int, list[_SpanLevel]] = {}
        self.ff: list[dict[int, list[int]]] = []
        self.doms: list[list[int]] = []
        self.count_domains: set[tuple[int, int]] = set()
        self.sym_groups: list[tuple[int, list[int]]] = []
        self.tier1 = Objective()
        self.comm = Objective()
        self.frag = Objective()
        self.frag_divisor = MILLI * (sum(c.weight for c in instance.mix) or 1)
        self._build(candidates)

    # --- building -------------------------------------------------------------------------
    def _build(self, candidates: list[list[int]] | None) -> None:
        inst, cl, lm = self.instance, self.cluster, self.lm
        for n, node in enumerate(inst.nodes):
            start = cl.gpu_offset[n]
            ff: dict[int, list[int]] = {}
            for g in range(node.gpu_count):
                if cl.fully_free[start + g]:
                    ff.setdefault(node.nvlink_domain(g), []).append(g)
            self.ff.append(ff)
            self.doms.append(sorted(ff))

        plans: dict[int, dict[str, Any]] = {}
        for j, job in enumerate(inst.jobs):
            if j in self.fixed:
                continue
            plan = self._plan_job(j, job, None if candidates is None else candidates[j])
            if plan is not None:
                plans[j] = plan
        if self.fixed:
            from placement.models.gpu.check import span_level

            for j, workers in self.fixed.items():
                job = inst.jobs[j]
                self.tier1.constant += job.weighted_demand_milli
                spots = [(w.node, tuple(w.gpus)) for w in workers]
                self.comm.constant += self.span_cost(job, span_level(inst, job.kind, spots))

        whole_on: dict[int, list[int]] = {}  # node -> whole jobs with variables there
        frac_gpus: dict[tuple[int, int], list[int]] = {}  # (node, gpu) -> fractional jobs
        for j, plan in plans.items():
            job = inst.jobs[j]
            for n in plan["nodes"]:
                if job.kind == "whole":
                    whole_on.setdefault(n, []).append(j)
                elif job.kind == "fractional":
                    for g in plan["gpus"][n]:
                        frac_gpus.setdefault((n, g), []).append(j)

        self.frac_gpus = frac_gpus
        # Placement variables and the gang rows: sum over nodes = workers * x.
        for j, plan in plans.items():
            job = inst.jobs[j]
            x = self.x[j] = lm.var(0, 1, "x")
            self.job_nodes[j] = plan["nodes"]
            terms: list[tuple[int, int]] = [(x, -job.workers)]
            for n in plan["nodes"]:
                cap = int(plan["caps"][n])
                if job.kind == "fractional":
                    gpus = plan["gpus"][n]
                    self.job_gpus[(j, n)] = gpus
                    for g in gpus:
                        y = self.y[(j, n, g)] = lm.var(0, int(plan["gcaps"][n][g]), "y")
                        terms.append((y, 1))
                    continue
                w = self.w[(j, n)] = lm.var(0, cap, "w")
                terms.append((w, 1))
                if job.kind == "whole" and len(self.doms[n]) > 1:
                    parts: list[tuple[int, int]] = [(w, -job.gpus)]
                    for d in self.doms[n]:
                        a = self.a[(j, n, d)] = lm.var(
                            0, min(len(self.ff[n][d]), job.gpus * cap), "a"
                        )
                        parts.append((a, 1))
                    lm.row(parts, 0, 0)
            lm.row(terms, 0, 0)
            self.tier1.add(x, job.weighted_demand_milli)

        # Fully free GPUs of each NVLink domain: whole workers use exactly the z = 1 ones, or
        # at most all of them where no fractional job can use the domain (count domains).
        for n, jobs_here in whole_on.items():
            for d in self.doms[n]:
                use = self._whole_use(n, d, jobs_here)
                gpus = self.ff[n][d]
                if any((n, g) in frac_gpus for g in gpus):
                    for g in gpus:
                        self.z[(n, g)] = lm.var(0, 1, "z")
                    lm.row(use + [(self.z[(n, g)], -1) for g in gpus], 0, 0)
                else:
                    self.count_domains.add((n, d))
                    most = sum(c * lm.ub[v] for v, c in use)
                    if most > len(gpus):
                        lm.row(use, None, len(gpus))

        # Each GPU that fractional work can use: milli-GPU and GPU memory capacity. (The final
        # free milli-GPU fv = free0 - used gets a variable only in the fragmentation layer:
        # defining it by an equality here sends HiGHS 1.16's presolve aggregator into a loop
        # that ignores the time limit.)
        for (n, g), js in frac_gpus.items():
            k = cl.gpu_offset[n] + g
            lm.row(self._used_milli(n, g), None, int(cl.free0[k]))
            mem = [(self.y[(j, n, g)], inst.jobs[j].gpu_memory_mib) for j in js]
            memfree = int(cl.memfree[k])
            if sum(c * lm.ub[v] for v, c in mem) > memfree:
                lm.row(mem, None, memfree)

        # Identical GPUs (same node, NVLink domain, free milli and free memory) are
        # interchangeable: order them by used milli-GPU, most used first (symmetry breaking).
        by_class: dict[tuple[int, int, int, int], list[int]] = {}
        for n, g in sorted(frac_gpus):
            k = cl.gpu_offset[n] + g
            key = (n, inst.nodes[n].nvlink_domain(g), int(cl.free0[k]), int(cl.memfree[k]))
            by_class.setdefault(key, []).append(g)
        for (n, *_), gpus in by_class.items():
            if len(gpus) > 1:
                self.sym_groups.append((n, gpus))
                for g1, g2 in zip(gpus, gpus[1:], strict=False):
                    used2 = [(v, -c) for v, c in self._used_milli(n, g2)]
                    lm.row(self._used_milli(n, g1) + used2, 0, None)

        # Node CPU and memory.
        on_node: dict[int, list[tuple[int, int]]] = {}
        for j in plans:
            job = inst.jobs[j]
            for n in self.job_nodes[j]:
                on_node.setdefault(n, []).extend(self._worker_vars(j, n))
        for n, pairs in on_node.items():
            for attr, cap in (("cpu_milli", cl.cpu_free[n]), ("memory_mib", cl.mem_free[n])):
                terms = []
                for j, v in pairs:
                    c = getattr(inst.jobs[j], attr)
                    if c:
                        terms.append((v, c))
                if sum(c * lm.ub[v] for v, c in terms) > cap:
                    lm.row(terms, None, int(cap))

        self.plans, self.whole_on, self.frac_gpus = plans, whole_on, frac_gpus
        for j, plan in plans.items():
            self.spans[j] = plan["span"]
            for sl in plan["span"]:
                if sl.level == plan["required"] and sl.mode == "var":
                    self._span_var(j, sl)
                    self.lm.row([(sl.c, 1), (self.x[j], -1)], 0, 0)  # required locality

        whole_cls: dict[int, int] = {}
        frac_cls: dict[int, int] = {}
        for c in inst.mix:
            if c.gpus > 0:
                whole_cls[c.gpus] = whole_cls.get(c.gpus, 0) + c.weight
            else:
                frac_cls[c.gpu_milli] = frac_cls.get(c.gpu_milli, 0) + c.weight
        self.whole_classes = sorted(whole_cls.items())
        self.frac_classes = sorted(frac_cls.items())
        # Which later tiers depend on the decisions (else their stage is skipped). Costs are
        # non-decreasing in the span, so all are 0 when the widest span costs nothing.
        self.comm_active = any(
            self.span_cost(inst.jobs[j], self._possible_spans(inst.jobs[j])[-1]) > 0 for j in plans
        )
        self.frag_active = bool(inst.mix) and bool(whole_on or frac_gpus)
        self.layers: set[str] = {"placed_gpu_weighted"}

    def ensure_layer(self, tier: str) -> bool:
        """Add the variables and rows tier ``tier`` needs (once); True if anything was added.

        Stage 1 needs only placement and capacity (and the span indicators of required
        localities); the span indicators of the communication cost and the fragmentation
        terms are added just before the stage that optimises them, so the first stages work
        on a much smaller model.
        """
        if tier in self.layers:
            return False
        self.layers.add(tier)
        if tier == "comm_cost":
            for j in self.plans:
                self._build_span(j)
        elif tier == "fragmentation":
            self._build_fragmentation(self.whole_on, self.frac_gpus)
        return True

    def _plan_job(self, j: int, job: GpuJob, cand: list[int] | None) -> dict[str, Any] | None:
        """Nodes, worker caps and span structure of one job; None when it cannot be placed."""
        cl = self.cluster
        gcaps_all = cl.gpu_caps(job) if job.kind == "fractional" else None
        caps = cl.node_caps(job, gcaps_all)
        if cand is not None:
            mask = np.zeros(len(caps), dtype=bool)
            mask[cand] = True
            caps = np.where(mask, caps, 0)
        nodes = np.flatnonzero(caps).tolist()
        if int(caps.sum()) < job.workers:
            return None
        plan: dict[str, Any] = {"nodes": nodes, "caps": caps}
        if job.kind == "fractional":
            gpus: dict[int, list[int]] = {}
            gcaps: dict[int, dict[int, int]] = {}
            for n in nodes:
                start = cl.gpu_offset[n]
                row = gcaps_all[start : start + self.instance.nodes[n].gpu_count]
                gs = np.flatnonzero(row).tolist()
                gpus[n] = gs
                gcaps[n] = {g: int(row[g]) for g in gs}
            plan["gpus"], plan["gcaps"] = gpus, gcaps
        levels = self._span_levels(j, job, plan)
        if levels is None:
            return None
        plan["span"] = levels
        return plan

    def _possible_spans(self, job: GpuJob) -> list[int]:
        """Span levels a placement of ``job`` can have (check.span_level's rules; ``last + 1``
        is "beyond": several groups of the outermost level)."""
        w, beyond = job.workers, self.last + 1
        if job.kind == "whole":
            if job.gpus * w == 1:
                return [SPAN_SAME_GPU]
            return [0, 1] if w == 1 else list(range(0, beyond + 1))
        if job.kind == "fractional":
            return [SPAN_SAME_GPU] if w == 1 else list(range(SPAN_SAME_GPU, beyond + 1))
        return [1] if w == 1 else list(range(1, beyond + 1))

    def span_cost(self, job: GpuJob, span: int) -> float:
        """Communication cost plus preferred-locality penalty at span level ``span``."""
        cost = 0.0
        if span != SPAN_SAME_GPU and job.traffic_gb:
            # Beyond the outermost level its bandwidth still applies (check.comm_cost_of).
            level = min(span, self.last)
            cost = job.traffic_gb / self.instance.levels[level].bandwidth_gbps
        preferred = job.locality_level and not job.locality_required
        if preferred and span > self.instance.level_of_name(job.locality_level):
            cost += self.instance.locality_miss_penalty
        return cost

    def _span_levels(self, j: int, job: GpuJob, plan: dict[str, Any]) -> list[_SpanLevel] | None:
        """The levels whose indicator changes the cost or carries a required locality."""
        spans = self._possible_spans(job)
        required = None
        if job.locality_level and job.locality_required:
            limit = self.instance.level_of_name(job.locality_level)
            inside = [s for s in spans if s <= limit]
            if not inside:
                return None  # e.g. a CPU-only job required inside one NVLink domain
            if inside[-1] != spans[-1]:
                required = inside[-1]
        out: list[_SpanLevel] = []
        for i, s in enumerate(spans[:-1]):
            gain = self.span_cost(job, spans[i + 1]) - self.span_cost(job, s)
            if gain <= 0 and s != required:
                continue
            groups_any, groups_all = self._groups(j, job, plan, s)
            if len(groups_any) == 1 and groups_all:
                mode = "always"
            elif groups_all:
                mode = "var"
            else:
                mode = "never"
            if s == required and mode == "never":
                return None
            out.append(_SpanLevel(s, mode, groups=groups_all))
        plan["required"] = required
        return out

    def _groups(
        self, j: int, job: GpuJob, plan: dict[str, Any], level: int
    ) -> tuple[set[Any], list[Any]]:
        """Groups at ``level`` where the job has variables, and those that can hold all of it."""
        inst, W = self.instance, job.workers
        caps, nodes = plan["caps"], plan["nodes"]
        any_groups: set[Any] = set()
        all_groups: list[Any] = []
        if level == SPAN_SAME_GPU:
            for n in nodes:
                for g in plan["gpus"][n]:
                    any_groups.add((n, g))
                    if plan["gcaps"][n][g] >= W and caps[n] >= W:
                        all_groups.append((n, g))
        elif level == 0:
            for n in nodes:
                if job.kind == "whole":
                    for d in self.doms[n]:
                        any_groups.add((n, d))
                        if len(self.ff[n][d]) >= job.gpus * W and caps[n] >= W:
                            all_groups.append((n, d))
                else:
                    per_dom: dict[int, int] = {}
                    for g in plan["gpus"][n]:
                        d = inst.nodes[n].nvlink_domain(g)
                        per_dom[d] = per_dom.get(d, 0) + plan["gcaps"][n][g]
                    for d, room in sorted(per_dom.items()):
                        any_groups.add((n, d))
                        if room >= W and caps[n] >= W:
                            all_groups.append((n, d))
        elif level == 1:
            any_groups.update(nodes)
            all_groups = [n for n in nodes if caps[n] >= W]
        else:
            ids = inst.group_ids[level - 2]
            room: dict[int, int] = {}
            for n in nodes:
                room[int(ids[n])] = room.get(int(ids[n]), 0) + int(caps[n])
            any_groups.update(room)
            all_groups = [k for k, r in sorted(room.items()) if r >= W]
        return any_groups, all_groups

    def _used_milli(self, n: int, g: int) -> list[tuple[int, int]]:
        """Terms of the milli-GPU that new work uses on GPU ``g`` of node ``n``."""
        jobs = self.instance.jobs
        terms = [(self.y[(j, n, g)], jobs[j].gpu_milli) for j in self.frac_gpus[(n, g)]]
        if (n, g) in self.z:
            terms.append((self.z[(n, g)], MILLI))
        return terms

    def _whole_use(self, n: int, d: int, jobs_here: list[int]) -> list[tuple[int, int]]:
        """Terms counting the fully free GPUs of domain ``d`` of node ``n`` given to whole jobs."""
        out = []
        for j in jobs_here:
            if (j, n, d) in self.a:
                out.append((self.a[(j, n, d)], 1))
            else:
                out.append((self.w[(j, n)], self.instance.jobs[j].gpus))
        return out

    def _worker_vars(self, j: int, n: int) -> list[tuple[int, int]]:
        """(job, variable) pairs whose sum is the number of workers of ``j`` on node ``n``."""
        if (j, n) in self.w:
            return [(j, self.w[(j, n)])]
        return [(j, self.y[(j, n, g)]) for g in self.job_gpus.get((j, n), [])]

    def _usage(
        self, j: int, job: GpuJob, level: int, key: Any
    ) -> tuple[list[tuple[int, int]], int]:
        """Terms of job ``j``'s usage of group ``key`` at ``level`` and the usage of all of it."""
        W = job.workers
        if level == SPAN_SAME_GPU:
            n, g = key
            return [(self.y[(j, n, g)], 1)], W
        if level == 0:
            n, d = key
            if job.kind == "whole":
                if (j, n, d) in self.a:
                    return [(self.a[(j, n, d)], 1)], job.gpus * W
                return [(self.w[(j, n)], 1)], W
            node = self.instance.nodes[n]
            gpus = [g for g in self.job_gpus[(j, n)] if node.nvlink_domain(g) == d]
            return [(self.y[(j, n, g)], 1) for g in gpus], W
        if level == 1:
            return [(v, 1) for _, v in self._worker_vars(j, key)], W
        ids = self.instance.group_ids[level - 2]
        terms = []
        for n in self.job_nodes[j]:
            if int(ids[n]) == key:
                terms.extend((v, 1) for _, v in self._worker_vars(j, n))
        return terms, W

    def _span_var(self, j: int, sl: _SpanLevel) -> None:
        """c[j, L] and its group choice u[j, L, k]: u = 1 only if group k holds all of j."""
        job, lm = self.instance.jobs[j], self.lm
        c = sl.c = lm.var(0, 1, "c")
        if len(sl.groups) == 1:
            sl.u = {sl.groups[0]: c}
        else:
            sl.u = {key: lm.var(0, 1, "u") for key in sl.groups}
            lm.row([(u, 1) for u in sl.u.values()] + [(c, -1)], 0, 0)
        for key, u in sl.u.items():
            terms, need = self._usage(j, job, sl.level, key)
            lm.row(terms + [(u, -need)], 0, None)

    def _build_span(self, j: int) -> None:
        """The comm cost of job ``j``: cost(widest span) x - sum of gains x c[j, L]."""
        job, lm, x = self.instance.jobs[j], self.lm, self.x[j]
        spans = self._possible_spans(job)
        self.comm.add(x, self.span_cost(job, spans[-1]))
        prev: int | None = None
        for sl in self.spans[j]:
            nxt = spans[spans.index(sl.level) + 1]
            gain = self.span_cost(job, nxt) - self.span_cost(job, sl.level)
            if sl.mode == "always":
                self.comm.add(x, -gain)
                sl.c = x
                if prev is not None:
                    lm.row([(prev, 1), (x, -1)], None, 0)
                    prev = None  # every wider level holds the job too
            elif sl.mode == "var":
                if sl.c < 0:
                    self._span_var(j, sl)
                self.comm.add(sl.c, -gain)
                if prev is not None:
                    # Inside one group of a level => inside one group of the next level.
                    lm.row([(prev, 1), (sl.c, -1)], None, 0)
                prev = sl.c

    def _build_fragmentation(
        self, whole_on: dict[int, list[int]], frac_gpus: dict[tuple[int, int], list[int]]
    ) -> None:
        """Tier 3: the weighted unusable free milli-GPU of every node, linearised exactly."""
        inst, cl, lm = self.instance, self.cluster, self.lm
        var_gpus_of: dict[int, list[int]] = {}
        for n, g in sorted(frac_gpus):
            var_gpus_of.setdefault(n, []).append(g)
        for n, g in sorted(frac_gpus):
            free0 = int(cl.free0[cl.gpu_offset[n] + g])
            fv = self.fv[(n, g)] = lm.var(0, free0, "fv")
            lm.row([(fv, 1)] + self._used_milli(n, g), free0, free0)
        for n, node in enumerate(inst.nodes):
            start = cl.gpu_offset[n]
            var_gpus = var_gpus_of.get(n, [])
            var_set = set(var_gpus)
            count_doms = [d for d in self.doms[n] if (n, d) in self.count_domains]
            count_set = {g for d in count_doms for g in self.ff[n][d]}
            const_free = [
                int(cl.free0[start + g])
                for g in range(node.gpu_count)
                if g not in var_set and g not in count_set
            ]
            if not var_gpus and not count_doms:
                self.frag.constant += self._const_node_frag(const_free)
                continue
            const_full = sum(1 for f in const_free if f == MILLI)
            const_partial = sum(f for f in const_free if 0 < f < MILLI)
            capacity = sum(len(self.ff[n][d]) for d in count_doms)
            use = [t for d in count_doms for t in self._whole_use(n, d, whole_on.get(n, []))]
            es = []
            for g in var_gpus:
                if int(cl.free0[start + g]) == MILLI:
                    fv = self.fv[(n, g)]
                    e = self.e[(n, g)] = lm.var(0, 1, "e")
                    lm.row([(fv, 1), (e, -MILLI)], 0, None)  # e = 1 => fully free
                    lm.row([(fv, 1), (e, -1)], None, MILLI - 1)  # fully free => e = 1
                    es.append(e)
            # partial = const_partial + sum(fv) - 1000 sum(e);  F = free whole GPUs
            partial: list[tuple[int, int]] = [(self.fv[(n, g)], 1) for g in var_gpus]
            partial += [(e, -MILLI) for e in es]
            f_const = const_full + capacity
            f_terms: list[tuple[int, int]] = [(e, 1) for e in es] + [(v, -c) for v, c in use]
            f_lo, f_hi = const_full, const_full + capacity + len(es)
            for k, weight in self.whole_classes:
                self.frag.constant += weight * const_partial
                for v, c in partial:
                    self.frag.add(v, weight * c)
                if k <= 1 or f_lo >= k:
                    continue  # F < k never holds with F >= k, and F < 1 means F = 0
                if not f_terms or f_hi < k:
                    # F < k always (or F constant): 1000 * F counts directly.
                    if f_hi < k or f_const < k:
                        self.frag.constant += weight * MILLI * f_const
                        for v, c in f_terms:
                            self.frag.add(v, weight * MILLI * c)
                    continue
                if n not in self.F:
                    F = self.F[n] = lm.var(f_lo, f_hi, "F")
                    lm.row([(F, 1)] + [(v, -c) for v, c in f_terms], f_const, f_const)
                F = self.F[n]
                h, q = lm.var(0, 1, "h"), lm.var(0, k - 1, "q")
                self.hq[(n, k)] = (h, q)
                lm.row([(F, 1), (h, k)], k, None)  # h = 0 => F >= k
                lm.row([(F, 1), (h, f_hi - k + 1)], None, f_hi)  # h = 1 => F <= k - 1
                lm.row([(q, 1), (h, -(k - 1))], None, 0)  # q <= (k-1) h
                lm.row([(q, 1), (F, -1)], None, 0)  # q <= F
                lm.row([(q, 1), (F, -1), (h, -f_hi)], -f_hi, None)  # q >= F - F_max (1 - h)
                self.frag.add(q, weight * MILLI)
            for fm, weight in self.frac_classes:
                self.frag.constant += weight * sum(f for f in const_free if f < fm)
                for g in var_gpus:
                    fv = self.fv[(n, g)]
                    free0 = int(cl.free0[start + g])
                    if free0 < fm:
                        self.frag.add(fv, weight)  # always below the class's demand
                        continue
                    t, r = lm.var(0, 1, "t"), lm.var(0, fm - 1, "r")
                    self.t[(n, g, fm)] = (t, r)
                    lm.row([(fv, 1), (t, fm)], fm, None)  # t = 0 => fv >= fm
                    lm.row([(fv, 1), (t, free0 - fm + 1)], None, free0)  # t = 1 => fv < fm
                    lm.row([(r, 1), (t, -(fm - 1))], None, 0)  # r <= (fm-1) t
                    lm.row([(r, 1), (fv, -1)], None, 0)  # r <= fv
                    lm.row([(r, 1), (fv, -1), (t, -free0)], -free0, None)  # r >= fv - free0 (1-t)
                    self.frag.add(r, weight)

    def _const_node_frag(self, free: list[int]) -> int:
        """check.node_fragmentation_milli of a node whose free capacity cannot change."""
        full = sum(1 for f in free if f == MILLI)
        partial = sum(f for f in free if 0 < f < MILLI)
        total = 0
        for k, weight in self.whole_classes:
            total += weight * (partial + (MILLI * full if full < k else 0))
        for fm, weight in self.frac_classes:
            total += weight * sum(f for f in free if f < fm)
        return total

    # --- evaluation -------------------------------------------------------------------------
    def terms(self, values: Values) -> dict[str, float]:
        """The three tiers at ``values``, in the checker's units (GPUs, cost units, GPUs)."""
        return {
            "placed_gpu_weighted": self.tier1.value(values) / MILLI,
            "comm_cost": self.comm.value(values),
            "fragmentation": self.frag.value(values) / self.frag_divisor,
        }

    # --- decoding ---------------------------------------------------------------------------
    def decode(self, values: Values) -> GpuSolution:
        """The placement the counts ``values`` describe.

        Per NVLink domain, the GPUs given to whole workers (z = 1, or the first ones of a
        count domain) are handed out job by job, a[j, n, d] each; a job's GPUs on a node are
        then cut into its w[j, n] workers, ``gpus`` each (a worker may straddle domains).
        A fractional job's y[j, g] workers run on GPU g.
        """
        inst = self.instance
        val = [int(round(v)) for v in values]
        pools: dict[tuple[int, int], list[int]] = {}
        for n, ff in enumerate(self.ff):
            for d, gpus in ff.items():
                if (n, d) in self.count_domains:
                    pools[(n, d)] = list(gpus)
                else:
                    z = self.z
                    pools[(n, d)] = [g for g in gpus if (n, g) in z and val[z[(n, g)]] == 1]
        taken: dict[tuple[int, int], int] = {}
        placements: dict[int, tuple[WorkerPlacement, ...]] = dict(self.fixed)
        for j in sorted(self.x):
            if val[self.x[j]] != 1:
                continue
            job = inst.jobs[j]
            workers: list[WorkerPlacement] = []
            for n in self.job_nodes[j]:
                if job.kind == "fractional":
                    for g in self.job_gpus[(j, n)]:
                        workers.extend([WorkerPlacement(n, (g,))] * val[self.y[(j, n, g)]])
                    continue
                count = val[self.w[(j, n)]]
                if count <= 0:
                    continue
                if job.kind == "cpu":
                    workers.extend([WorkerPlacement(n, ())] * count)
                    continue
                gpus: list[int] = []
                for d in self.doms[n]:
                    want = val[self.a[(j, n, d)]] if (j, n, d) in self.a else job.gpus * count
                    pos = taken.get((n, d), 0)
                    gpus.extend(pools[(n, d)][pos : pos + want])
                    taken[(n, d)] = pos + want
                for k in range(count):
                    share = tuple(gpus[k * job.gpus : (k + 1) * job.gpus])
                    workers.append(WorkerPlacement(n, share))
            placements[j] = tuple(workers)
        return GpuSolution(placements)

    # --- hints --------------------------------------------------------------------------------
    def canonical(self, solution: GpuSolution) -> GpuSolution:
        """``solution`` with identical GPUs renumbered so the symmetry-breaking rows hold."""
        if not self.sym_groups:
            return solution
        inst = self.instance
        used: dict[tuple[int, int], int] = {}
        for j, workers in solution.placements.items():
            if j in self.fixed:
                continue  # already in the cluster state
            job = inst.jobs[j]
            for w in workers:
                for g in w.gpus:
                    add = MILLI if job.kind == "whole" else job.gpu_milli
                    used[(w.node, g)] = used.get((w.node, g), 0) + add
        remap: dict[tuple[int, int], int] = {}
        for n, gpus in self.sym_groups:
            # Most used first: final free milli-GPU ascending along the group.
            order = sorted(gpus, key=lambda g, n=n: -used.get((n, g), 0))
            for new, old in zip(gpus, order, strict=True):
                if new != old:
                    remap[(n, old)] = new
        if not remap:
            return solution
        return GpuSolution(
            {
                j: workers
                if j in self.fixed
                else tuple(
                    WorkerPlacement(w.node, tuple(remap.get((w.node, g), g) for g in w.gpus))
                    for w in workers
                )
                for j, workers in solution.placements.items()
            }
        )

    def values_from_solution(self, solution: GpuSolution | None) -> list[int] | None:
        """A complete assignment of every model variable describing ``solution``.

        Used as the CP-SAT hint / MILP warm start and to normalise a stage's best solution.
        Auxiliary variables get their exact values (maximal span indicators, exact
        fragmentation terms), so the model's objectives equal the checker's. Returns None
        when the solution cannot be expressed (a node outside a job's candidates, ...).
        """
        if solution is None:
            return None
        from placement.models.gpu.check import span_level

        inst, cl = self.instance, self.cluster
        sol = self.canonical(solution)
        val = [0] * self.lm.num_vars
        whole_gpu: set[tuple[int, int]] = set()
        frac_load: dict[tuple[int, int], int] = {}
        if any(sol.placements.get(j) != workers for j, workers in self.fixed.items()):
            return None  # a fixed job moved: not this model's solution
        try:
            for j, workers in sol.placements.items():
                if j in self.fixed:
                    continue
                job = inst.jobs[j]
                val[self.x[j]] = 1
                for wp in workers:
                    n = wp.node
                    if job.kind == "fractional":
                        (g,) = wp.gpus
                        val[self.y[(j, n, g)]] += 1
                        frac_load[(n, g)] = frac_load.get((n, g), 0) + job.gpu_milli
                        continue
                    val[self.w[(j, n)]] += 1
                    for g in wp.gpus:
                        whole_gpu.add((n, g))
                        d = inst.nodes[n].nvlink_domain(g)
                        if (j, n, d) in self.a:
                            val[self.a[(j, n, d)]] += 1
                spots = [(wp.node, tuple(wp.gpus)) for wp in workers]
                span = span_level(inst, job.kind, spots)
                for sl in self.spans.get(j, []):
                    if sl.mode != "var" or sl.c < 0:
                        continue
                    key = self._group_key(job, sl.level, spots) if span <= sl.level else None
                    if key is not None and key in sl.u:
                        val[sl.c] = 1
                        val[sl.u[key]] = 1
        except (KeyError, ValueError):
            return None
        for (n, g), z in self.z.items():
            val[z] = 1 if (n, g) in whole_gpu else 0
        for (n, g), fv in self.fv.items():
            k = cl.gpu_offset[n] + g
            f = int(cl.free0[k]) - frac_load.get((n, g), 0) - (MILLI if (n, g) in whole_gpu else 0)
            val[fv] = f
            if (n, g) in self.e:
                val[self.e[(n, g)]] = 1 if f == MILLI else 0
        for (n, g, fm), (t, r) in self.t.items():
            f = val[self.fv[(n, g)]]
            val[t] = 1 if f < fm else 0
            val[r] = f if f < fm else 0
        for n, F in self.F.items():
            node = inst.nodes[n]
            start = cl.gpu_offset[n]
            free = sum(
                1
                for g in range(node.gpu_count)
                if (n, g) not in whole_gpu
                and int(cl.free0[start + g]) - frac_load.get((n, g), 0) == MILLI
            )
            val[F] = free
        for (n, k), (h, q) in self.hq.items():
            f = val[self.F[n]]
            val[h] = 1 if f < k else 0
            val[q] = f if f < k else 0
        return val

    def _group_key(self, job: GpuJob, level: int, spots: list[tuple[int, tuple[int, ...]]]) -> Any:
        """The group at ``level`` holding every worker of a placed job (its span is <= level)."""
        n = spots[0][0]
        if level == SPAN_SAME_GPU:
            return (n, spots[0][1][0])
        if level == 0:
            return (n, self.instance.nodes[n].nvlink_domain(spots[0][1][0]))
        if level == 1:
            return n
        return int(self.instance.group_ids[level - 2][n])

    def feasible(self, values: Values) -> bool:
        """Whether ``values`` satisfies every row and bound of the model."""
        return not self.lm.violated_rows(values)


# -------------------------------------------------------------------------------------------
# The lexicographic stage driver


MIN_EXACT_SECONDS = 0.05
"""Below this many seconds left, the exact model is not built (nor the LP bound solved)."""


class StageBackend(Protocol):
    """What :func:`solve_staged` needs from a solver (CP-SAT or a MILP solver)."""

    source: str
    integer_objective: bool
    """True when objective and row coefficients must be integers (CP-SAT)."""
    vars_per_second: float
    """Model size (placement variables) per second of time left that the solver handles
    well; above it the model is restricted to candidate nodes."""

    def load(self, model: LinearModel) -> None:
        """Create the variables and rows of ``model`` not created yet (called again after a
        layer was added)."""
        ...

    def add_row(self, terms: dict[int, float], lo: float | None, hi: float | None) -> None:
        """Add a stage row ``lo <= sum(coef * var) <= hi``."""
        ...

    def run(
        self,
        sense: str,
        objective: dict[int, float],
        constant: float,
        hint: list[int] | None,
        time_limit_s: float,
        cancel: CancellationToken,
        on_values: Callable[[list[float], float | None], None],
    ) -> tuple[BackendRun, list[float] | None]:
        """Optimise until ``time_limit_s`` or ``cancel``; call ``on_values(values, bound)`` on
        improving solutions when the solver can; return the mapped run and the final values
        (None without a solution)."""
        ...


@dataclass
class _Stage:
    name: str
    sense: str
    active: bool


@dataclass
class _Pass:
    """What one pass of the stages (full model, or one window of the restricted one) did."""

    proven: dict[str, bool]
    bound1: int | None = None
    stop: StopReason | None = None
    messages: list[str] = field(default_factory=list)
    tier_bounds: dict[str, float] = field(default_factory=dict)
    best: list[int] | None = None
    error: bool = False


class _Clock:
    """Time left for the exact search.

    Normally the portfolio's wall clock. In deterministic mode it is virtual: the time limit
    less the stage budgets already handed out, so that every decision that depends on time
    (full or restricted model, windows, stage budgets) is the same on every run; CP-SAT then
    stops each stage by deterministic time, and the wall clock is only a guard.
    """

    def __init__(self, ctx: ExactContext) -> None:
        self.ctx = ctx
        self.deterministic = bool(ctx.options.deterministic)
        self.spent = 0.0

    def left(self) -> float:
        """Seconds left."""
        if self.deterministic:
            return max(0.0, float(self.ctx.options.time_limit_s) - self.spent)
        return self.ctx.time_left()

    def now(self) -> float:
        """The current time on this clock."""
        return self.spent if self.deterministic else time.monotonic()

    def charge(self, seconds: float) -> None:
        """Count a stage budget as spent (deterministic mode)."""
        self.spent += seconds


def solve_staged(
    instance: GpuInstance,
    ctx: ExactContext,
    make_backend: Callable[[], StageBackend],
    *,
    max_placement_vars: int = MAX_PLACEMENT_VARS,
    stats: dict[str, Any] | None = None,
) -> ExactOutcome:
    """Solve the three tiers lexicographically, by sequential stages.

    Stage 1 maximises the weighted placed GPU demand; stage 2 fixes it at no less than the
    best value found and minimises the communication cost; stage 3 also fixes that and
    minimises fragmentation. Each stage is hinted with the best solution so far (first the
    portfolio's incumbent), gets half of the time left (the last one all of it), and every
    decoded improving solution goes to ``ctx.report``. Constant stages are skipped.

    When the full model is too large for the time left (``max_placement_vars``, scaled by
    the backend's ``vars_per_second``), the stages run on restricted models instead, one
    window of racks after another (:func:`select_candidates`), each starting from the best
    solution so far, until the time is up; optimality is then not claimed and the bound is
    :func:`relaxation_bound`, valid for the whole instance.

    Parameters
    ----------
    instance:
        The instance.
    ctx:
        The portfolio's :class:`~placement.solver.family.ExactContext`.
    make_backend:
        Makes a fresh :class:`StageBackend` (one per model).
    max_placement_vars:
        Upper limit on the full model's size (see :data:`MAX_PLACEMENT_VARS`).
    stats:
        If given, filled with what happened (model sizes, stage statuses, objectives).

    Returns
    -------
    ExactOutcome
        Stop reason, proven bound on the primary objective (whole instance), whether every
        tier was proved optimal, and the proved solution.
    """
    stats = stats if stats is not None else {}
    started = time.monotonic()
    cancel = ctx.cancel
    clock = _Clock(ctx)
    if clock.left() < MIN_EXACT_SECONDS and not cancel.cancelled:
        # Not even a model build fits: return at once rather than overrun the deadline.
        return ExactOutcome(
            StopReason.TIME_LIMIT,
            message=f"the exact model did not run: {clock.left() * 1e3:.0f} ms left",
        )
    cluster = Cluster(instance)
    backend = make_backend()
    size = placement_var_count(instance, cluster)
    # CP-SAT's presolve alone grows quickly with the model: the full model is used only
    # while it stays small for the time at hand, else restricted ones of about that size.
    limit = int(min(max_placement_vars, backend.vars_per_second * max(clock.left(), 0.1)))
    restricted = size > limit
    stats.update(
        placement_vars=size,
        full_model_limit=limit,
        restricted=restricted,
        passes=[],
        hint_fallbacks=0,
    )
    if cancel.cancelled:
        return ExactOutcome(StopReason.CANCELLED, message="cancelled before the exact model ran")

    if not restricted:
        model = GpuModel(instance, cluster, None)
        result = _run_pass(instance, ctx, clock, backend, model, None, None, stats)
        best_model, passes = model, [result]
    else:
        # A bound for the whole instance: a restricted model's own bound is not one.
        # A short deadline gets no LP bound rather than an overrun (the portfolio still
        # has its quick bound).
        lp_budget = 0.15 * clock.left()
        lp_bound = (
            relaxation_bound(instance, cluster, ctx.options, cancel, lp_budget)
            if lp_budget >= MIN_EXACT_SECONDS
            else None
        )
        stats["relaxation_bound_s"] = time.monotonic() - started
        passes, tried = [], set()
        best_model = None
        while not cancel.cancelled:
            left = clock.left()
            # Several windows when there is time; each gets enough for all of its stages.
            if passes and left < 2.0:
                break
            pass_time = left if left < 6.0 else max(3.0, 0.3 * left)
            pass_deadline = None if left < 6.0 else clock.now() + pass_time
            target = int(min(limit, backend.vars_per_second * pass_time))
            candidates, window, fixed = select_candidates(
                instance,
                cluster,
                ctx.incumbent(),
                target_vars=target,
                skip_groups=tried,
                rank="room" if len(passes) % 2 == 0 else "priority",
            )
            tried.update(window)
            model = GpuModel(instance, cluster.residual(fixed), candidates, fixed)
            backend = backend if not passes else make_backend()
            result = _run_pass(instance, ctx, clock, backend, model, lp_bound, pass_deadline, stats)
            stats["passes"][-1]["window"] = window
            passes.append(result)
            best_model = model
            if result.error or result.best is None or len(tried) >= _group_count(instance):
                break
        for result in passes:
            result.bound1 = lp_bound
            result.tier_bounds = {}
    final = passes[-1]
    assert best_model is not None
    proven = {name: all(p.proven.get(name, False) for p in passes) for name in TIERS}
    all_proven = not restricted and all(final.proven.values()) and not cancel.cancelled
    stop = final.stop
    messages = [m for p in passes for m in p.messages]
    if cancel.cancelled:
        stop, all_proven = StopReason.CANCELLED, False
    bound1 = final.bound1
    tier_bounds = dict(final.tier_bounds)
    if bound1 is not None:
        tier_bounds["placed_gpu_weighted"] = bound1 / MILLI
    if restricted:
        messages.append(
            f"restricted to candidate nodes ({len(passes)} window(s); {size} placement "
            f"variables > {limit}): optimality over the whole instance is not claimed"
        )
        if stop is None or stop == StopReason.PROVEN:
            # Every window finished before the deadline: no proof for the whole instance.
            stop = StopReason.SEARCH_EXHAUSTED
    if all_proven:
        stop = StopReason.PROVEN
    elif stop is None or stop == StopReason.PROVEN:
        stop = StopReason.TIME_LIMIT
    solution = best_model.decode(final.best) if final.best is not None else None
    stats["proven"] = dict(final.proven) if not restricted else proven
    stats["solution"] = solution
    stats["total_s"] = time.monotonic() - started
    summary = ", ".join(
        f"{name}={'proved' if ok else 'not proved'}" for name, ok in final.proven.items()
    )
    where = " (last window, others fixed)" if restricted else ""
    messages.insert(0, f"{backend.source}{where}: {summary}")
    return ExactOutcome(
        stop_reason=stop,
        bound=None if bound1 is None else bound1 / MILLI,
        proven_optimal=all_proven,
        proven_solution=solution if all_proven else None,
        message="; ".join(messages),
        tier_bounds=tier_bounds,
    )


def _group_count(instance: GpuInstance) -> int:
    """Number of windows' groups (racks, or blocks of 8 nodes without a rack level)."""
    if len(instance.levels) > 2 and len(instance.nodes):
        return int(instance.group_ids[0].max()) + 1
    return (len(instance.nodes) + 7) // 8


def _run_pass(
    instance: GpuInstance,
    ctx: ExactContext,
    clock: _Clock,
    backend: StageBackend,
    model: GpuModel,
    lp_bound: int | None,
    deadline: float | None,
    stats: dict[str, Any],
) -> _Pass:
    """Run the active stages on ``model`` until ``deadline`` (or the portfolio's deadline)."""
    cancel = ctx.cancel
    pass_stats: dict[str, Any] = {"stages": {}, "restricted": model.restricted}
    stats["passes"].append(pass_stats)
    t0 = time.monotonic()
    backend.load(model.lm)
    pass_stats["build_s"] = time.monotonic() - t0

    def time_left() -> float:
        left = clock.left()
        return left if deadline is None else min(left, deadline - clock.now())

    def normalise(values: Values | None) -> list[int] | None:
        """Decode then re-encode: exact auxiliary values and the canonical GPU numbering."""
        if values is None:
            return None
        exact = model.values_from_solution(model.decode(values))
        if exact is not None and model.feasible(exact):
            return exact
        stats["hint_fallbacks"] += 1
        if len(values) != model.lm.num_vars:
            return None
        rounded = [int(round(v)) for v in values]
        return rounded if model.feasible(rounded) else None

    incumbent = ctx.incumbent()
    best = model.values_from_solution(incumbent) if incumbent is not None else None
    if best is not None and not model.feasible(best):
        log.warning("the incumbent does not satisfy the %s model; not used", backend.source)
        stats["hint_fallbacks"] += 1
        best = None
    pass_stats["hinted"] = best is not None
    if best is None:
        # Placing nothing is always feasible: a valid start and a floor for every stage.
        best = model.values_from_solution(GpuSolution())
    assert best is not None

    stages = [
        _Stage("placed_gpu_weighted", "max", not model.tier1.is_constant),
        _Stage("comm_cost", "min", model.comm_active),
        _Stage("fragmentation", "min", model.frag_active),
    ]
    objectives = {"placed_gpu_weighted": model.tier1, "comm_cost": model.comm}
    active = [st for st in stages if st.active]
    result = _Pass(proven={st.name: not st.active for st in stages})
    if model.tier1.is_constant and not model.restricted:
        result.bound1 = 0  # no job with a positive weight can be placed
    lock = threading.Lock()
    post_s = 0.0

    for pos, stage in enumerate(active):
        if cancel.cancelled:
            result.stop = StopReason.CANCELLED
            break
        if model.ensure_layer(stage.name):
            backend.load(model.lm)
            best = normalise(best) or model.values_from_solution(GpuSolution())
            assert best is not None
        objective = objectives.get(stage.name, model.frag)
        if objective.is_constant:
            # Only known once the layer exists (e.g. a mix of 1-GPU classes only): nothing to
            # optimise, and every solution is optimal for this tier.
            result.proven[stage.name] = True
            continue
        if backend.integer_objective and stage.name == "comm_cost":
            # CP-SAT takes integer coefficients: costs at 1e-6 resolution.
            coefs = {i: round(c * CPSAT_COMM_SCALE) for i, c in objective.terms.items()}
            const = round(objective.constant * CPSAT_COMM_SCALE)
        else:
            coefs, const = dict(objective.terms), objective.constant
        if stage.name == "placed_gpu_weighted" and not model.restricted:
            # The incumbent already meets a proven bound (e.g. the portfolio's capacity
            # bound when every job fits): the tier is optimal without a search.
            known = ctx.proven_bound()
            best1 = round(model.tier1.value(best))
            if known is not None and best1 >= _floor_bound(known * MILLI):
                result.proven[stage.name] = True
                result.bound1 = best1
                pass_stats["stages"][stage.name] = {"status": "proved by the bound"}
                if pos < len(active) - 1:
                    backend.add_row(coefs, sum(c * best[i] for i, c in coefs.items()), None)
                continue
        left = time_left()
        # Keep time for the work after each remaining stage (decoding, normalising and
        # checking candidates): measured on the previous stage, estimated from size before.
        size_now = model.lm.num_vars + len(model.lm.rows)
        # (Deterministic mode: from size only, so that budgets do not depend on timing.)
        measured = 0.0 if clock.deterministic else post_s
        post = max(measured, 2e-6 * size_now * (1 + len(active) - pos))
        reserve = 0.05 + 0.03 * left + post * (len(active) - pos)
        # The primary tier first: 60% of the time left for stage 1, half of the rest for
        # stage 2, everything after for the last stage.
        share = 1.0 if pos == len(active) - 1 else (0.6 if pos == 0 else 0.5)
        budget = share * (left - reserve)
        if budget < 0.05:
            result.stop = StopReason.TIME_LIMIT
            result.messages.append(f"no time left for stage {stage.name}")
            break
        clock.charge(budget + reserve / max(1, len(active) - pos))
        latest: list[list[float] | None] = [None]
        last_report = [0.0]
        throttle = 0.0 if model.lm.num_vars < 20_000 else 0.25
        in_stage1 = stage.name == "placed_gpu_weighted"

        def on_values(
            values: list[float],
            bound: float | None,
            latest: list[list[float] | None] = latest,
            last_report: list[float] = last_report,
            in_stage1: bool = in_stage1,
            throttle: float = throttle,
            const_now: float = const if not model.restricted else 0.0,
        ) -> None:
            with lock:
                latest[0] = values
                now = time.monotonic()
                if now - last_report[0] < throttle:
                    return
                last_report[0] = now
            valid = None
            if in_stage1:
                # A solver bound is a bound on the instance only for the full model.
                valid = lp_bound if model.restricted else bound
                valid = None if valid is None else _floor_bound(valid + const_now) / MILLI
            ctx.report(model.decode(values), backend.source, valid)

        # The stage's own cancellation: the portfolio's, or the stage deadline (some solvers
        # overrun their time limit on large models; their interrupt hooks still work).
        stage_cancel = CancellationToken()
        unhook = cancel.add_callback(stage_cancel.cancel)
        # (Deterministic mode: the deterministic budget must end the search, so the stage
        # deadline is no tighter than CP-SAT's own wall-clock guard. At twice the budget it
        # cut a 1.1 s stage on a loaded CI machine and two identical solves differed.)
        guard = deterministic_wall_limit(budget) if clock.deterministic else budget
        disarm = stage_cancel.cancel_after(guard * 1.05 + 0.1)
        try:
            # Objectives go to the solver without their constant (CBC's logged bound omits
            # it); run.objective and run.bound are shifted back below.
            run, final = backend.run(stage.sense, coefs, 0.0, best, budget, stage_cancel, on_values)
        finally:
            disarm()
            unhook()
        if run.stop_reason == StopReason.CANCELLED and not cancel.cancelled:
            run.stop_reason = StopReason.TIME_LIMIT  # our stage deadline, not the caller
        if run.objective is not None:
            run.objective += const
        if run.bound is not None:
            run.bound += const
        post_started = time.monotonic()
        proved = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        stage_stats: dict[str, Any] = {
            "status": run.status.value,
            "stop": run.stop_reason.value,
            "objective": run.objective,
            "bound": run.bound,
            "wall_s": run.wall_s,
            "budget_s": budget,
            "variables": model.lm.num_vars,
            "rows": len(model.lm.rows),
        }
        pass_stats["stages"][stage.name] = stage_stats
        if run.status == RunStatus.ERROR:
            result.stop, result.error = StopReason.ERROR, True
            result.messages.append(f"{backend.source} stage {stage.name} failed: {run.message}")
            break
        if run.status == RunStatus.INFEASIBLE:
            # x = 0 is always feasible and every stage row holds for the hint: a model bug.
            result.stop, result.error = StopReason.ERROR, True
            result.messages.append(f"{backend.source} reported stage {stage.name} infeasible")
            break
        final_exact = normalise(final)
        found = [v for v in (final_exact, normalise(latest[0]), best) if v is not None]
        # The lexicographically best candidate over all three tiers, as the checker ranks
        # them (the layers of later tiers may not exist yet, so the model cannot rank ties).
        # Every candidate satisfies the earlier stages' rows; when those stages were proved
        # the candidates tie there, and the best ties or beats the solver's final solution in
        # this stage's objective, so a proof of this stage covers it too.
        best = max(found, key=lambda v: _lex_key(instance, model, v))
        ctx.report(model.decode(best), backend.source, None)
        result.proven[stage.name] = proved and final_exact is not None
        earlier_proven = all(result.proven[st.name] for st in stages[: stages.index(stage)])
        if in_stage1 and not model.restricted:
            best1 = round(model.tier1.value(best))
            if result.proven[stage.name]:
                result.bound1 = best1
            elif run.bound is not None:
                result.bound1 = max(best1, _floor_bound(run.bound))
        elif earlier_proven and not model.restricted and run.bound is not None:
            if stage.name == "comm_cost" and backend.integer_objective:
                # Each rounded cost coefficient is off by at most 0.5e-6.
                slack = 0.5 * len(coefs) / CPSAT_COMM_SCALE
                result.tier_bounds["comm_cost"] = max(0.0, run.bound / CPSAT_COMM_SCALE - slack)
            elif stage.name == "comm_cost":
                result.tier_bounds["comm_cost"] = max(0.0, run.bound - 1e-6)
            else:
                result.tier_bounds["fragmentation"] = run.bound / model.frag_divisor
        # Fix this tier for the next stages at the best value found (exactly in integers; with
        # a 1e-6 tolerance for a floating-point communication cost).
        if pos < len(active) - 1:
            value = sum(c * best[i] for i, c in coefs.items())
            if stage.sense == "max":
                backend.add_row(coefs, value, None)
            elif backend.integer_objective:
                backend.add_row(coefs, None, value)
            else:
                backend.add_row(coefs, None, value + 1e-6 * max(1.0, abs(value)))
        if not result.proven[stage.name] and result.stop is None:
            result.stop = run.stop_reason
        post_s = max(post_s, time.monotonic() - post_started)
        stage_stats["post_s"] = time.monotonic() - post_started

    result.best = best
    terms = model.terms(best)
    pass_stats["objectives"] = {k: v for k, v in terms.items() if k in model.layers}
    stats["objectives"] = pass_stats["objectives"]
    stats["variables"] = model.lm.num_vars
    stats["rows"] = len(model.lm.rows)
    return result


def _lex_key(instance: GpuInstance, model: GpuModel, values: Values) -> tuple[float, ...]:
    """The checker's lexicographic score of the decoded ``values`` (larger is better)."""
    from placement.models.gpu.check import check

    report = check(instance, model.decode(values))
    if not report.feasible:
        return (-math.inf,)
    return report.score()


def _floor_bound(bound: float) -> int:
    """An integer bound on an integer objective from a floating-point solver bound."""
    return int(math.floor(bound + 1e-4 + 1e-9 * abs(bound)))


class StagedEncoding:
    """An exact encoding of the GPU family: :func:`solve_staged` over one backend.

    Subclasses name their :class:`StageBackend` factory in ``stage_backend``.

    Parameters
    ----------
    max_placement_vars:
        Above this model size each job is restricted to candidate nodes (see
        :data:`MAX_PLACEMENT_VARS`).
    """

    stage_backend: Callable[[ExactContext], StageBackend]

    def __init__(self, max_placement_vars: int = MAX_PLACEMENT_VARS) -> None:
        self.max_placement_vars = max_placement_vars
        self.last_stats: dict[str, Any] = {}

    def solve(self, instance: GpuInstance, ctx: ExactContext) -> ExactOutcome:
        """Solve the three objective tiers lexicographically.

        Parameters
        ----------
        instance:
            The instance.
        ctx:
            The portfolio context: options, cancellation, deadline, incumbent, reporting.

        Returns
        -------
        ExactOutcome
            See :func:`solve_staged`; ``last_stats`` keeps the stage statuses, model size and
            the model's objective values.
        """
        self.last_stats = {}
        factory = type(self).stage_backend
        return solve_staged(
            instance,
            ctx,
            lambda: factory(ctx),
            max_placement_vars=self.max_placement_vars,
            stats=self.last_stats,
        )
