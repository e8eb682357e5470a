"""A configuration LP of the first tier over per-node packings, by column generation, and its
Lagrangian bound, valid at every iteration.

The first tier maximises ``sum_j v_j x_j`` (``v_j`` = priority x GPU demand of gang ``j`` in
milli-GPU, ``x_j`` in {0, 1}: all ``W_j`` workers placed or none). The LP of
:func:`placement.models.gpu.bound.relaxation_bound` lets a worker be split over nodes and a
node's GPUs be shared by fractions of workers, so on the generated instances it equals the
capacity bound: every free GPU carries the most valuable demand. What it misses is that a
node takes *whole* workers: a node with 7 fully free GPUs hosts an 8-GPU worker not at all,
and 4 + 2 + 1 GPUs only if such workers are left to place.

**Node packings.** For a node ``n`` let ``P_n`` be the integer vectors ``k`` (workers of each
job on ``n``) with

* ``k_j <= cap_{j,n}`` (:meth:`~.eligibility.FreeCapacity.node_caps`: type, GPU memory,
  CPU and memory for the job's workers alone, and for a job with a required locality only
  the nodes of groups that can hold all of it, as in the LP bound);
* ``sum_{whole j} g_j k_j <= FF_n`` (fully free GPUs);
* ``sum_{whole j} 1000 g_j k_j + sum_{fractional j} f_j k_j <= phi_n`` (free milli-GPU of the
  node, ``phi_n = sum_g phi_g``).

Every feasible placement puts on each node a vector of ``P_n`` (a fractional worker uses
``f_j`` of one GPU's free milli; a whole worker ``g_j`` fully free GPUs, each 1000 milli
free). ``P_n`` drops the per-GPU split of shares and the joint CPU and memory rows, so it is
a relaxation; it keeps the integrality of workers on a node, which is what the LP lacks.

**The master** (Gilmore and Gomory's configuration LP; nodes with the same data form a
class ``q`` of ``N_q`` nodes)::

    max  sum_j v_j x_j
    s.t. W_j x_j - sum_{q, c} a_{j,c} lambda_{q,c} <= 0     (pi_j >= 0)  every job j
         sum_c lambda_{q,c} <= N_q                          (mu_q >= 0)  every class q
         0 <= x_j <= 1,  lambda >= 0

with columns ``c`` = packings of ``P_q``. A placement gives a feasible point (``x`` its
placed jobs, ``lambda`` one per node on the node's packing), so the LP optimum bounds tier 1.

**The bound at every iteration.** For *any* ``pi >= 0``, relaxing the job rows,

    L(pi) = sum_j max(0, v_j - W_j pi_j) + sum_q N_q max(0, max_{k in P_q} pi . k)

is at least the value of every placement (the Lagrangian bound; Lübbecke and Desrosiers,
"Selected topics in column generation", Operations Research 53(6), 2005, Section 2.1; the
same as :mod:`placement.models.mc.colgen`). The inner maximum is the pricing problem; it is
solved *exactly* over ``P_q`` (below), so ``L`` holds whatever the master's state, and the
driver keeps the smallest. At convergence it equals the master's optimum.

**Pricing** (:func:`_price`). Whole workers of equal size ``s`` are interchangeable but for
their dual ``pi_j``, so the best ``t`` of them are the top ``t`` duals (each job up to its
cap): a prefix sum ``P_s(t)``. The best whole packing on ``u`` fully free GPUs is the
max-plus convolution of the ``P_s`` over ``u = 0..FF``; the same for fractional sizes over
milli-GPU (on a grid of their gcd with 1000), and the node's value is
``max_u W(u) + F(phi - 1000 u)``. Exact, in ``O(FF^2 + (phi/unit)^2)`` per class at worst.

**Validity beyond today's instance.** The model relaxes the instance as it is today: jobs are
pending work, running work only takes capacity. An instance with fields this module does not
know (e.g. running jobs that may be moved or preempted, which would free capacity) is not
bounded here: :func:`configuration_bound` returns None and the caller keeps the LP bound.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from placement.models.gpu.bound import holding_nodes
from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.greedy import complete, required_limit, span_of
from placement.models.gpu.instance import (
    MILLI,
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    WorkerPlacement,
)
from placement.models.gpu.remaining import Remaining
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions, deterministic_wall_limit

KNOWN_FIELDS = {
    GpuInstance: {
        "levels",
        "nodes",
        "jobs",
        "expected_mix",
        "locality_miss_penalty",
        "name",
        "description",
        "validated",
    },
    GpuNode: {
        "name",
        "gpu_type",
        "gpu_count",
        "gpu_memory_mib",
        "nvlink_domain_size",
        "cpu_milli",
        "memory_mib",
        "cpu_milli_used",
        "memory_mib_used",
        "groups",
        "gpu_milli_used",
        "gpu_memory_mib_used",
    },
    GpuJob: {
        "name",
        "workers",
        "gpus",
        "gpu_milli",
        "gpu_memory_mib",
        "cpu_milli",
        "memory_mib",
        "gpu_types",
        "priority",
        "locality_level",
        "locality_required",
        "traffic_gb",
        "worker_names",
    },
}
"""The fields whose meaning this relaxation was derived for. A field outside these with a
value other than its default (say, running jobs that may move) may change what is feasible,
so the bound is then not computed."""

DETERMINISTIC_ITERATIONS = 30
"""Column generation iterations in deterministic mode (see :func:`configuration_search`)."""

CANDIDATES_PER_CLASS = 6
"""Nodes per class that :meth:`ConfigurationLP.lp_candidates` offers a job the LP places
there."""

REDUCED_COST_TOL = 1e-6
"""A column enters the master when its reduced cost exceeds this (relative to the duals)."""


@dataclass
class ConfigBound:
    """What :func:`configuration_bound` found."""

    bound: int | None
    """Proven upper bound on tier 1 (weighted milli-GPU), or None when not computed."""
    lp_value: float | None = None
    """The last master LP value (weighted milli-GPU)."""
    iterations: int = 0
    columns: int = 0
    classes: int = 0
    converged: bool = False
    seconds: float = 0.0
    message: str = ""
    history: list[tuple[float, float]] = field(default_factory=list)
    """(seconds, best bound so far) after every iteration."""
    placed: dict[int, float] = field(default_factory=dict)
    """The last master's ``x_j`` per job index (the jobs it places, wholly or in part)."""


def understood(instance: GpuInstance) -> str | None:
    """None when every field of the instance has a meaning this relaxation knows; else the
    first field that does not (with a value other than its default)."""
    objects: list[tuple[type, Any]] = [(GpuInstance, instance)]
    objects += [(GpuNode, n) for n in instance.nodes]
    objects += [(GpuJob, j) for j in instance.jobs]
    for cls, obj in objects:
        known = KNOWN_FIELDS[cls]
        for f in dataclasses.fields(obj):
            if f.name in known:
                continue
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                return f"{cls.__name__}.{f.name}"
            if value != default:
                return f"{cls.__name__}.{f.name}"
    return None


class _Class:
    """Nodes with equal pricing data: caps per job, fully free GPUs, free milli-GPU."""

    def __init__(self, ff: int, milli: int, caps: np.ndarray, count: int) -> None:
        self.ff = ff
        self.milli = milli
        self.caps = caps  # per job in the LP (0 = not eligible)
        self.count = count


def _job_caps(instance: GpuInstance, cluster: FreeCapacity, job: GpuJob) -> np.ndarray:
    caps = cluster.node_caps(job)
    if job.locality_level and job.locality_required:
        # The LP bound's own restriction for required localities (one place for that rule).
        caps = holding_nodes(instance, cluster, job, caps)
    return caps


class _Pricer:
    """Exact pricing over the node packings of each class (module docstring)."""

    def __init__(self, jobs: list[GpuJob], classes: list[_Class]) -> None:
        self.jobs = jobs
        self.classes = classes
        unit = MILLI
        for job in jobs:
            if job.kind == "fractional":
                unit = math.gcd(unit, job.gpu_milli)
        self.unit = unit
        # Per class, the eligible jobs of each kind: (job, size, most workers that fit).
        self.whole: list[list[tuple[int, int, int]]] = []
        self.frac: list[list[tuple[int, int, int]]] = []
        for cls in classes:
            ff = min(cls.ff, cls.milli // MILLI)
            units = cls.milli // unit
            whole, frac = [], []
            for i in np.flatnonzero(cls.caps).tolist():
                job = jobs[i]
                if job.kind == "whole" and job.gpus <= ff:
                    whole.append((i, job.gpus, min(int(cls.caps[i]), ff // job.gpus)))
                elif job.kind == "fractional":
                    step = job.gpu_milli // unit
                    if step <= units:
                        frac.append((i, step, min(int(cls.caps[i]), units // step)))
            self.whole.append(whole)
            self.frac.append(frac)

    def price(self, q: int, pi: np.ndarray) -> tuple[float, dict[int, int]]:
        """The best packing of class ``q`` at duals ``pi`` (per job): (value, {job: workers})."""
        cls = self.classes[q]
        ff = min(cls.ff, cls.milli // MILLI)
        units = cls.milli // self.unit
        pil = pi.tolist()
        # Whole workers: a 0/1 knapsack over u = 0..ff fully free GPUs ("at most u"), over
        # the workers that can matter: of each size, the best duals, as many as fit.
        w_items = _best_workers(self.whole[q], pil, lambda size: ff // size)
        w_val = [0.0] * (ff + 1)
        w_take: list[list[bool]] = []
        for value, size, _i in w_items:
            row = [False] * (ff + 1)
            for u in range(ff, size - 1, -1):
                cand = w_val[u - size] + value
                if cand > w_val[u]:
                    w_val[u] = cand
                    row[u] = True
            w_take.append(row)
        # Shares: the same over the node's milli-GPU on the grid of ``unit``.
        f_items = _best_workers(self.frac[q], pil, lambda step: units // step)
        f_val = np.zeros(units + 1)
        f_take: list[np.ndarray] = []
        for value, step, _i in f_items:
            cand = f_val[: units + 1 - step] + value
            better = cand > f_val[step:]
            f_val[step:] = np.where(better, cand, f_val[step:])
            f_take.append(better)
        # Combine: u whole GPUs leave (milli - 1000 u) for the shares.
        rest = [(cls.milli - MILLI * u) // self.unit for u in range(ff + 1)]
        f_list = f_val.tolist()
        totals = [w_val[u] + f_list[rest[u]] for u in range(ff + 1)]
        best_u = max(range(ff + 1), key=totals.__getitem__)
        column: dict[int, int] = {}
        u = best_u
        for k in range(len(w_items) - 1, -1, -1):
            if w_take[k][u]:
                i = w_items[k][2]
                column[i] = column.get(i, 0) + 1
                u -= w_items[k][1]
        m = rest[best_u]
        for k in range(len(f_items) - 1, -1, -1):
            step = f_items[k][1]
            if m >= step and f_take[k][m - step]:
                i = f_items[k][2]
                column[i] = column.get(i, 0) + 1
                m -= step
        return totals[best_u], column


def _best_workers(
    eligible: list[tuple[int, int, int]], pi: list[float], room: Any
) -> list[tuple[float, int, int]]:
    """(dual, size, job) per worker that can be in a best packing: of each size, the workers
    with the highest positive duals (each job up to its count), at most ``room(size)``."""
    by_size: dict[int, list[tuple[float, int, int]]] = {}
    for i, size, most in eligible:
        if pi[i] > 0:
            by_size.setdefault(size, []).append((pi[i], most, i))
    out: list[tuple[float, int, int]] = []
    for size, group in by_size.items():
        group.sort(key=lambda t: (-t[0], t[2]))
        left = room(size)
        for value, most, i in group:
            take = min(most, left)
            out.extend([(value, size, i)] * take)
            left -= take
            if left <= 0:
                break
    return out


class ConfigurationLP:
    """The configuration LP of one instance: its node classes, its master and its columns.

    :meth:`bound` runs the column generation (and may be called again to continue it);
    :meth:`integer_solution` solves the integer master over the columns generated so far and
    turns its packings into a placement (price and branch).
    """

    def __init__(
        self,
        instance: GpuInstance,
        cluster: FreeCapacity | None = None,
        incumbent: GpuSolution | None = None,
        base: GpuSolution | None = None,
    ) -> None:
        self.instance = instance
        # ``base``: jobs already placed (a dive's fixings); ``cluster`` is then what they
        # leave free and the model is over the other jobs.
        self.base = base if base is not None else GpuSolution()
        self.unknown = understood(instance)
        self.seconds = 0.0
        self.best = math.inf
        self.result = ConfigBound(None)
        self.columns: list[tuple[int, dict[int, int]]] = []
        self.last_x: np.ndarray | None = None  # also when not built (lp_candidates reads it)
        if self.unknown is not None:
            self.result.message = f"not computed: the instance sets {self.unknown}"
            return
        started = time.monotonic()
        cluster = cluster if cluster is not None else FreeCapacity(instance)
        self.cluster = cluster
        # Jobs that add value and fit the cluster alone; the others are 0 in every placement
        # (CPU-only jobs add nothing, and dropping them only frees capacity).
        picked: list[int] = []
        caps_rows: list[np.ndarray] = []
        for j, job in enumerate(instance.jobs):
            if job.weighted_demand_milli <= 0 or job.kind == "cpu" or j in self.base.placements:
                continue
            caps = np.minimum(_job_caps(instance, cluster, job), job.workers)
            if caps.sum() < job.workers:
                continue
            picked.append(j)
            caps_rows.append(caps)
        self.picked = picked
        self.jobs = jobs = [instance.jobs[j] for j in picked]
        n_nodes = len(instance.nodes)
        caps = np.array(caps_rows, dtype=np.int64).reshape(len(picked), n_nodes)
        milli = np.bincount(cluster.gpu_node, np.maximum(cluster.free0, 0), n_nodes)
        milli = milli.astype(np.int64)
        # A job with a required locality above the node keeps all its workers in one group
        # of that level: it gets a supply row per group, so nodes are classed by group too.
        self.level = np.array(
            [
                instance.level_of_name(job.locality_level)
                if job.locality_required and job.locality_level
                else -1
                for job in jobs
            ],
            dtype=np.int64,
        )
        grouped = sorted({int(lv) for lv in self.level if lv >= 2})
        group_of = {lv: instance.group_ids[lv - 2] for lv in grouped}
        keys: dict[bytes, int] = {}
        self.node_class = np.zeros(n_nodes, dtype=np.int64)
        for n in range(n_nodes):
            groups = [group_of[lv][n] if caps[self.level == lv, n].any() else -1 for lv in grouped]
            key = np.concatenate(([cluster.ff_count[n], milli[n]], groups, caps[:, n]))
            self.node_class[n] = keys.setdefault(key.tobytes(), len(keys))
        counts = np.bincount(self.node_class, minlength=len(keys))
        self.classes: list[_Class] = []
        first = {int(q): n for n, q in reversed(list(enumerate(self.node_class.tolist())))}
        self.class_node = [first[q] for q in range(len(keys))]
        for q in range(len(keys)):
            n = first[q]
            self.classes.append(
                _Class(int(cluster.ff_count[n]), int(milli[n]), caps[:, n], int(counts[q]))
            )
        # Supply rows: one per job, or one per (job, group) for a grouped job.
        self.rows: list[tuple[int, int]] = []  # (job, group or -1)
        row_of: dict[tuple[int, int], int] = {}
        for i, job in enumerate(jobs):
            lv = int(self.level[i])
            if lv < 2:
                row_of[(i, -1)] = len(self.rows)
                self.rows.append((i, -1))
                continue
            ids = group_of[lv]
            room = np.bincount(ids, caps[i])
            for r in np.flatnonzero(room >= job.workers).tolist():
                row_of[(i, r)] = len(self.rows)
                self.rows.append((i, r))
        # class_row[q, i]: the supply row a worker of job i on a node of class q feeds.
        self.class_row = np.full((len(keys), len(jobs)), -1, dtype=np.int64)
        for q, n in enumerate(self.class_node):
            for i in np.flatnonzero(caps[:, n]).tolist():
                lv = int(self.level[i])
                r = -1 if lv < 2 else int(group_of[lv][n])
                self.class_row[q, i] = row_of.get((i, r), -1)
                if self.class_row[q, i] < 0:
                    self.classes[q].caps = self.classes[q].caps.copy()
                    self.classes[q].caps[i] = 0  # a group that cannot hold the job
        self.pricer = _Pricer(jobs, self.classes)
        self.value = np.array([float(job.weighted_demand_milli) for job in jobs])
        self.workers = np.array([float(job.workers) for job in jobs])
        self._seen: set[tuple[int, tuple[tuple[int, int], ...]]] = set()
        self._index: dict[tuple[int, tuple[tuple[int, int], ...]], int] = {}
        # Master: supply rows, class rows, one "at most once" row per grouped job; the x
        # columns (one per supply row) first.
        n_rows, n_cls = len(self.rows), len(self.classes)
        self.once = {i: n_rows + n_cls + k for k, i in enumerate(np.flatnonzero(self.level >= 2))}
        self.lp = HighsModel()
        self.lp.add_rows(np.full(n_rows, -math.inf), np.zeros(n_rows))
        self.lp.add_rows(np.full(n_cls, -math.inf), counts.astype(float))
        self.lp.add_rows(np.full(len(self.once), -math.inf), np.ones(len(self.once)))
        self.lp.maximize()
        for row, (i, _r) in enumerate(self.rows):
            index, coef = [row], [self.workers[i]]
            if i in self.once:
                index.append(self.once[i])
                coef.append(1.0)
            self.lp.add_column(self.value[i], 0.0, 1.0, np.array(index), np.array(coef))
        if incumbent is not None:
            for q, column in self._packings(incumbent):
                self._add(q, column)
        self.result.classes = n_cls
        self.seconds = time.monotonic() - started

    def _packings(self, solution: GpuSolution) -> list[tuple[int, dict[int, int]]]:
        """The (class, packing) of every node that ``solution`` uses."""
        index = {j: i for i, j in enumerate(self.picked)}
        per_node: dict[int, dict[int, int]] = {}
        for j, placed in solution.placements.items():
            if j in index:
                for w in placed:
                    col = per_node.setdefault(w.node, {})
                    col[index[j]] = col.get(index[j], 0) + 1
        out = []
        for n, col in per_node.items():
            q = int(self.node_class[n])
            out.append((q, {i: k for i, k in col.items() if self.class_row[q, i] >= 0}))
        return out

    def _add(self, q: int, column: dict[int, int]) -> bool:
        key = (q, tuple(sorted(column.items())))
        if not column or key in self._seen:
            return False
        self._seen.add(key)
        self._index[key] = len(self.columns)
        self.columns.append((q, column))
        rows = np.array([*(self.class_row[q, i] for i in column), len(self.rows) + q])
        coefs = np.array([-float(c) for c in column.values()] + [1.0])
        self.lp.add_column(0.0, 0.0, math.inf, rows, coefs)
        return True

    def bound(
        self,
        time_limit_s: float,
        cancel: CancellationToken | None = None,
        max_iterations: int = 10_000,
    ) -> ConfigBound:
        """Column generation until no column improves (the master is then optimal over every
        packing), ``time_limit_s`` or ``cancel``; one priced column per node class and
        iteration. ``bound`` is the smallest Lagrangian bound seen (module docstring), valid
        at every iteration; None when the instance has a field this relaxation does not
        know."""
        out = self.result
        if self.unknown is not None or out.converged:
            return out
        started = time.monotonic()
        cancel = cancel if cancel is not None else CancellationToken()
        n_rows, n_cls = len(self.rows), len(self.classes)
        if not self.jobs:
            out.bound, out.lp_value, out.converged = 0, 0.0, True
            out.message = "no job can be placed"
            return out
        row_job = np.array([i for i, _ in self.rows], dtype=np.int64)
        iterations = 0
        while iterations < max_iterations and not cancel.cancelled:
            left = time_limit_s - (time.monotonic() - started)
            if left <= 0:
                break
            run = self.lp.run(max(0.01, left), cancel=cancel)
            if run.status != RunStatus.OPTIMAL or run.row_dual is None or run.x is None:
                break
            out.lp_value = float(run.objective) if run.objective is not None else None
            self.last_x = run.x
            placed = np.bincount(row_job, run.x[:n_rows], len(self.jobs))
            out.placed = {self.picked[i]: float(v) for i, v in enumerate(placed) if v > 1e-9}
            # Any pi >= 0 gives a bound; HiGHS's sign convention for a maximisation does not
            # matter for validity.
            duals = np.abs(run.row_dual)
            pi = np.append(duals[:n_rows], 0.0)  # index -1: no row (cap 0 there)
            mu = duals[n_rows : n_rows + n_cls]
            iterations += 1
            # Each job alone: its best supply row (a grouped job picks one group or none).
            gain = np.maximum(0.0, self.value[row_job] - self.workers[row_job] * pi[:n_rows])
            per_job = np.zeros(len(self.jobs))
            np.maximum.at(per_job, row_job, gain)
            bound = float(per_job.sum())
            added = 0
            for q in range(n_cls):
                best_q, column = self.pricer.price(q, pi[self.class_row[q]])
                bound += self.classes[q].count * max(0.0, best_q)
                if best_q > mu[q] + REDUCED_COST_TOL * max(1.0, best_q) and self._add(q, column):
                    added += 1
            self.best = min(self.best, bound)
            out.history.append((self.seconds + time.monotonic() - started, self.best))
            if added == 0:
                out.converged = True
                break
        out.iterations += iterations
        out.columns = len(self.columns)
        self.seconds += time.monotonic() - started
        out.seconds = self.seconds
        if math.isfinite(self.best):
            # L(pi) holds for any pi, so only the arithmetic computing it may err (a few ulps
            # per term); the objective is an integer (milli-GPU): round down after a slack
            # far above that error.
            out.bound = int(math.floor(self.best + 1e-6 + 1e-9 * abs(self.best)))
        elif not out.message:
            out.message = "the master LP was not solved in time"
        return out

    def integer_solution(
        self,
        time_limit_s: float,
        cancel: CancellationToken | None = None,
        start: GpuSolution | None = None,
    ) -> GpuSolution | None:
        """A placement from the integer master over the columns so far (binary ``x``,
        integer ``lambda``): each chosen packing goes to a node of its class, each chosen
        job's workers to the nodes whose packings hold them (in its chosen group, for a
        required locality; most valuable jobs first, a job kept only when all its workers
        fit there), and best fit (:func:`.greedy.complete`) places what is left. ``start``
        (a placement, e.g. the incumbent) is the master's start when its packings are
        columns. None when the master found nothing in time. The caller checks the
        placement."""
        if self.unknown is not None or not self.columns:
            return None
        n_rows, n_cls = len(self.rows), len(self.classes)
        n_x = n_rows
        n_cols = n_x + len(self.columns)
        cost = np.concatenate((self.value[[i for i, _ in self.rows]], np.zeros(len(self.columns))))
        upper = np.concatenate(
            (np.ones(n_x), [float(self.classes[q].count) for q, _ in self.columns])
        )
        col_start, index, coef = [0], [], []
        for row, (i, _r) in enumerate(self.rows):
            index.append(row)
            coef.append(self.workers[i])
            if i in self.once:
                index.append(self.once[i])
                coef.append(1.0)
            col_start.append(len(index))
        for q, column in self.columns:
            for i, c in column.items():
                index.append(int(self.class_row[q, i]))
                coef.append(-float(c))
            index.append(n_rows + q)
            coef.append(1.0)
            col_start.append(len(index))
        row_upper = np.concatenate(
            (np.zeros(n_rows), [float(c.count) for c in self.classes], np.ones(len(self.once)))
        )
        x0 = self._start_vector(start) if start is not None else None
        mip = HighsModel(mip_rel_gap=1e-4, threads=1)
        mip.load(
            cost,
            np.zeros(n_cols),
            upper,
            np.full(len(row_upper), -math.inf),
            row_upper,
            np.array(col_start),
            np.array(index),
            np.array(coef),
            integer=np.ones(n_cols, dtype=bool),
            maximize=True,
        )
        if x0 is not None:
            mip.set_start(x0)
        values = mip.run(max(0.01, time_limit_s), cancel=cancel, bounded=True).x
        if values is None:
            return None
        run_x = values
        # The chosen jobs (and the group of a grouped one), and the packings' nodes.
        chosen = {self.rows[row][0]: self.rows[row][1] for row in range(n_rows) if run_x[row] > 0.5}
        supply: dict[int, list[tuple[int, int]]] = {}
        free_nodes: dict[int, list[int]] = {q: [] for q in range(n_cls)}
        for n, q in enumerate(self.node_class.tolist()):
            free_nodes[q].append(n)
        for c, (q, column) in enumerate(self.columns):
            for _ in range(int(round(run_x[n_x + c]))):
                if not free_nodes[q]:
                    break
                n = free_nodes[q].pop(0)
                for i, k in column.items():
                    if i in chosen and self.rows[self.class_row[q, i]][1] == chosen[i]:
                        supply.setdefault(i, []).append((n, k))
        order = sorted(
            chosen, key=lambda i: (-self.jobs[i].priority, -self.jobs[i].demand_milli, i)
        )
        # Beyond its packings' nodes, a job may take any node that can host it (in its
        # chosen group), in best-fit order, those no chosen packing uses first.
        used = {n for nodes in supply.values() for n, _ in nodes}
        alternatives: dict[int, list[list[tuple[int, int]]]] = {}
        for i in order:
            extra = [
                (n, 0)
                for n in range(len(self.node_class))
                if self.class_row[self.node_class[n], i] >= 0
                and self.rows[self.class_row[self.node_class[n], i]][1] == chosen[i]
            ]
            alternatives[i] = [supply.get(i, []) + extra]
        return _realise(self.instance, self.picked, self.jobs, order, alternatives, reserved=used)

    def lp_rounding(self, finish: bool = True, wholly: bool = False) -> GpuSolution | None:
        """A placement rounded from the last master LP.

        Per class, its packings get ``floor(lambda)`` nodes each, then one more node each in
        order of the largest remainders while the class has nodes. Jobs go in order of
        their LP value ``x`` (then the scarcest first: least room in the cluster per
        worker; then priority, then demand); a job's workers first on the
        nodes whose rounded packings hold it (in the group the LP gives most of a required
        locality), then on any node of a class that can take it; a job is kept only when
        all its workers fit. Best fit (:func:`.greedy.complete`) places what is left (with
        ``finish``). ``wholly``: only the jobs the LP places wholly. The placement includes
        ``base``. None before the first master solve."""
        if self.last_x is None:
            return None
        n_rows, n_jobs = len(self.rows), len(self.jobs)
        x = self.last_x
        row_job = np.array([i for i, _ in self.rows], dtype=np.int64)
        placed = np.bincount(row_job, x[:n_rows], n_jobs)
        lam = np.zeros(len(self.columns))
        solved = min(len(lam), len(x) - n_rows)
        lam[:solved] = x[n_rows : n_rows + solved]
        free_nodes: dict[int, list[int]] = {}
        for n, q in enumerate(self.node_class.tolist()):
            free_nodes.setdefault(q, []).append(n)
        by_class: dict[int, list[int]] = {}
        for c in np.flatnonzero(lam > 1e-9).tolist():
            by_class.setdefault(self.columns[c][0], []).append(c)
        assigned: list[tuple[int, int]] = []  # (node, column)
        for q, cols in by_class.items():
            nodes = free_nodes[q]
            counts = {c: int(math.floor(lam[c] + 1e-6)) for c in cols}
            for c in sorted(cols, key=lambda c: (-(lam[c] - counts[c]), c)):
                if sum(counts.values()) >= len(nodes):
                    break
                if lam[c] - counts[c] > 1e-6:
                    counts[c] += 1
            for c in sorted(cols, key=lambda c: (-lam[c], c)):
                for _ in range(counts[c]):
                    if nodes:
                        assigned.append((nodes.pop(0), c))
        best_group: dict[int, int] = {}
        for row, (i, r) in enumerate(self.rows):
            if r >= 0 and (i not in best_group or x[row] > x[self._row_of(i, best_group[i])]):
                best_group[i] = r
        supply: dict[int, list[tuple[int, int]]] = {}
        for n, c in assigned:
            for i, k in self.columns[c][1].items():
                supply.setdefault(i, []).append((n, k))
        # The jobs the LP places wholly first, the scarcest (fewest workers' room in the
        # cluster per worker) first among them, then by priority and demand.
        room = np.array([self.classes[q].caps for q in self.node_class.tolist()]).sum(axis=0)
        order = sorted(
            (i for i in range(n_jobs) if placed[i] > (1 - 1e-6 if wholly else 1e-6)),
            key=lambda i: (
                -round(float(placed[i]), 6),
                float(room[i]) / self.jobs[i].workers,
                -self.jobs[i].priority,
                -self.jobs[i].demand_milli,
                i,
            ),
        )
        eligible_nodes = {
            i: [
                n for n in range(len(self.node_class)) if self.class_row[self.node_class[n], i] >= 0
            ]
            for i in order
        }
        # A job's own nodes first, then nodes no rounded packing uses, then the others, each
        # tightest first (so that a job that needs more room takes it where it hurts the
        # rounding least).
        packed = {n for n, _ in assigned}
        alternatives: dict[int, list[list[tuple[int, int]]]] = {}
        for i in order:
            own = supply.get(i, [])
            others = eligible_nodes[i]
            extra = [(n, 0) for n in others]  # 0: placed in best-fit order (see _realise)
            lv = int(self.level[i])
            if lv >= 2:
                ids = self.instance.group_ids[lv - 2]
                groups = [best_group.get(i, -1)] + sorted({int(ids[n]) for n in others})
                alternatives[i] = [
                    [(n, k) for n, k in own + extra if ids[n] == r]
                    for r in dict.fromkeys(groups)
                    if r >= 0
                ]
            else:
                alternatives[i] = [own + extra]
        return _realise(
            self.instance, self.picked, self.jobs, order, alternatives, self.base, finish, packed
        )

    def lp_candidates(
        self, solutions: list[GpuSolution], per_class: int = CANDIDATES_PER_CLASS
    ) -> list[list[int]] | None:
        """Candidate nodes per job of the instance for a restricted exact model guided by
        the last master LP: for a job the LP places, up to ``per_class`` nodes of every
        class whose packings (with ``lambda > 0``) hold it, and every node that one of
        ``solutions`` gives it (so that each of them stays a feasible hint). None before
        the first master solve."""
        if self.last_x is None:
            return None
        n_rows = len(self.rows)
        x = self.last_x
        nodes_of: dict[int, list[int]] = {}
        for n, q in enumerate(self.node_class.tolist()):
            nodes_of.setdefault(q, []).append(n)
        out: list[set[int]] = [set() for _ in self.instance.jobs]
        for c, (q, column) in enumerate(self.columns):
            if n_rows + c >= len(x) or x[n_rows + c] <= 1e-9:
                continue
            for i in column:
                out[self.picked[i]].update(nodes_of[q][:per_class])
        for solution in solutions:
            for j, placed in solution.placements.items():
                out[j].update(w.node for w in placed)
        return [sorted(nodes) for nodes in out]

    def _row_of(self, i: int, r: int) -> int:
        """The supply row of job ``i`` in group ``r``."""
        for row, key in enumerate(self.rows):
            if key == (i, r):
                return row
        return -1

    def _start_vector(self, solution: GpuSolution) -> np.ndarray | None:
        """``solution`` as a point of the integer master (None when a packing of it is not a
        column)."""
        x = np.zeros(len(self.rows) + len(self.columns))
        row_of = {row: k for k, row in enumerate(self.rows)}
        index = {j: i for i, j in enumerate(self.picked)}
        for j, placed in solution.placements.items():
            if j not in index or not placed:
                continue
            i = index[j]
            q = int(self.node_class[placed[0].node])
            row = int(self.class_row[q, i])
            if row < 0 or row_of.get(self.rows[row]) is None:
                return None
            x[row] = 1.0
        for q, column in self._packings(solution):
            c = self._index.get((q, tuple(sorted(column.items()))))
            if c is None:
                return None
            x[len(self.rows) + c] += 1.0
        return x


def _realise(
    instance: GpuInstance,
    picked: list[int],
    jobs: list[GpuJob],
    order: list[int],
    alternatives: dict[int, list[list[tuple[int, int]]]],
    base: GpuSolution | None = None,
    finish: bool = True,
    reserved: set[int] | None = None,
) -> GpuSolution:
    """Workers of the jobs in ``order`` on their supplied nodes: per job, its alternatives in
    turn (each a list of (node, most workers there)) until one holds all its workers within
    its required locality, on top of ``base``; then best fit for the rest (with
    ``finish``). Entries ``(node, 0)`` of an alternative come after its others, nodes not
    in ``reserved`` first, each group in best-fit order (the least room left first), as
    many workers as fit."""
    rem = Remaining(instance)
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    for j, placed in (base.placements if base is not None else {}).items():
        placements[j] = placed
        for w in placed:
            _take_exactly(rem, instance.jobs[j], w)
    for i in order:
        job = jobs[i]
        limit = required_limit(instance, job)
        for supply in alternatives.get(i, []):
            workers: list[WorkerPlacement] = []
            own = [(n, k) for n, k in supply if k > 0]
            rest = sorted(
                (n for n, k in supply if k == 0),
                key=lambda n: (reserved is not None and n in reserved, _room(rem, n, job), n),
            )
            for n, k in own + [(n, job.workers) for n in rest]:
                while k > 0 and len(workers) < job.workers and rem.count_in(n, job) > 0:
                    workers.append(rem.take(n, job))
                    k -= 1
            ok = len(workers) == job.workers and (
                limit is None or span_of(instance, job, workers) <= limit
            )
            if ok:
                placements[picked[i]] = tuple(workers)
                break
            for w in workers:
                _give_back(rem, job, w)
    solution = GpuSolution(placements)
    return complete(instance, solution) if finish else solution


def _room(rem: Remaining, n: int, job: GpuJob) -> int:
    """What node ``n`` has left for ``job``'s kind: fully free GPUs, or free milli-GPU."""
    if job.kind == "whole":
        return sum(1 for m in rem.milli[n] if m == MILLI)
    return sum(rem.milli[n])


def _take_exactly(rem: Remaining, job: GpuJob, worker: WorkerPlacement) -> None:
    """:meth:`Remaining.take` on the worker's own GPUs."""
    n = worker.node
    rem.cpu[n] -= job.cpu_milli
    rem.mem[n] -= job.memory_mib
    for g in worker.gpus:
        rem.milli[n][g] = 0 if job.kind == "whole" else rem.milli[n][g] - job.gpu_milli
        rem.gpu_mem[n][g] -= job.gpu_memory_mib


def _give_back(rem: Remaining, job: GpuJob, worker: WorkerPlacement) -> None:
    """Undo :meth:`Remaining.take`."""
    n = worker.node
    rem.cpu[n] += job.cpu_milli
    rem.mem[n] += job.memory_mib
    for g in worker.gpus:
        if job.kind == "whole":
            rem.milli[n][g] = MILLI
            rem.gpu_mem[n][g] += job.gpu_memory_mib
        else:
            rem.milli[n][g] += job.gpu_milli
            rem.gpu_mem[n][g] += job.gpu_memory_mib


def configuration_bound(
    instance: GpuInstance,
    cluster: FreeCapacity | None = None,
    time_limit_s: float = 2.0,
    cancel: CancellationToken | None = None,
    incumbent: GpuSolution | None = None,
) -> ConfigBound:
    """A proven upper bound on tier 1 (weighted milli-GPU) by the configuration LP: see
    :meth:`ConfigurationLP.bound`, started from the incumbent's packings when given."""
    return ConfigurationLP(instance, cluster, incumbent).bound(time_limit_s, cancel)


@dataclass
class ConfigSearch:
    """What :func:`configuration_search` found."""

    bound: ConfigBound
    solutions: list[tuple[str, GpuSolution]] = field(default_factory=list)
    """Placements made from the LP, each with how (``rounding``, ``integer master``); the
    caller checks them."""
    candidates: list[list[int]] | None = None
    """Candidate nodes per job for a restricted exact model around the LP's support
    (:meth:`ConfigurationLP.lp_candidates`, holding the incumbent and these placements)."""


def configuration_search(
    instance: GpuInstance,
    cluster: FreeCapacity | None,
    incumbent: GpuSolution | None,
    time_limit_s: float,
    cancel: CancellationToken | None = None,
    bound_share: float = 0.6,
    options: SolveOptions | None = None,
) -> ConfigSearch:
    """The configuration LP's bound (column generation on ``bound_share`` of the time),
    then placements from it: the LP rounded (:meth:`ConfigurationLP.lp_rounding`) and the
    integer master over its columns (the rest of the time).

    With ``options.deterministic`` the column generation stops after
    :data:`DETERMINISTIC_ITERATIONS` iterations (the time limit is only a guard, the one of
    every deterministic search: :func:`~placement.solver.options.deterministic_wall_limit`), the rounding is offered only when the iterations, not the clock, ended it, and
    the integer master (a time-limited search) does not run: the same instance gives the
    same placements on every run."""
    started = time.monotonic()
    deterministic = options is not None and options.deterministic
    clp = ConfigurationLP(instance, cluster, incumbent)
    if deterministic:
        guard = deterministic_wall_limit(time_limit_s)
        bound = clp.bound(guard, cancel, max_iterations=DETERMINISTIC_ITERATIONS)
    else:
        bound = clp.bound(bound_share * time_limit_s - clp.seconds, cancel)
    out = ConfigSearch(bound)
    if cancel is not None and cancel.cancelled:
        return out
    if not deterministic or bound.converged or bound.iterations >= DETERMINISTIC_ITERATIONS:
        rounded = clp.lp_rounding()
        if rounded is not None:
            out.solutions.append(("rounding", rounded))
    if not deterministic and clp.last_x is not None:
        left = time_limit_s - (time.monotonic() - started)
        dived = lp_dive(instance, clp.cluster, 0.5 * left, cancel, first=clp)
        if dived is not None:
            out.solutions.append(("dive", dived))
    left = time_limit_s - (time.monotonic() - started)
    if left > 0.05 and not deterministic:
        # No start: with the incumbent as its start HiGHS stayed there (measured on the
        # 1,024-GPU instances); from scratch it finds placements near the LP's value.
        solution = clp.integer_solution(left, cancel)
        if solution is not None:
            out.solutions.append(("integer master", solution))
    known = [incumbent] if incumbent is not None else []
    out.candidates = clp.lp_candidates(known + [sol for _, sol in out.solutions])
    return out


def lp_dive(
    instance: GpuInstance,
    cluster: FreeCapacity,
    time_limit_s: float,
    cancel: CancellationToken | None = None,
    first: ConfigurationLP | None = None,
) -> GpuSolution | None:
    """A placement by diving on the configuration LP: the jobs the LP places wholly are
    placed (:meth:`ConfigurationLP.lp_rounding`) and fixed; the LP of what they leave free
    over the other jobs is solved again; when it places none wholly, its most valuable
    fractional job is placed (or dropped when it does not fit); until the LP places
    nothing, then best fit for the rest. ``first``: the LP of the whole instance, solved
    already. None when no LP was solved in time."""
    started = time.monotonic()
    fixed = GpuSolution()
    dropped: set[int] = set()
    clp = first
    while not (cancel is not None and cancel.cancelled):
        left = time_limit_s - (time.monotonic() - started)
        if left <= 0:
            break
        if clp is None:
            skip = GpuSolution({**fixed.placements, **{j: () for j in dropped}})
            clp = ConfigurationLP(instance, cluster.residual(fixed), None, skip)
            clp.bound(left, cancel)
        if clp.last_x is None or not clp.result.placed:
            break
        placed = clp.result.placed
        after = clp.lp_rounding(finish=False, wholly=True)
        if after is not None:
            after = GpuSolution({j: w for j, w in after.placements.items() if w})
        if after is None or len(after.placements) == len(fixed.placements):
            # Nothing wholly placed: the most valuable fractional job, or drop it.
            j = max(
                (j for j in placed if j not in fixed.placements and j not in dropped),
                key=lambda j: (placed[j] * instance.jobs[j].weighted_demand_milli, -j),
                default=None,
            )
            if j is None:
                break
            forced = clp.lp_rounding(finish=False, wholly=False)
            if forced is not None and forced.placements.get(j):
                fixed = GpuSolution({**fixed.placements, j: forced.placements[j]})
            else:
                dropped.add(j)
        else:
            fixed = after
        clp = None
    return complete(instance, fixed) if (fixed.placements or first is not None) else None
