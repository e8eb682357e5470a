"""Upper bounds on the primary objective, valid for the whole instance.

:func:`capacity_bound` is the cheap one (the portfolio's quick bound). Every placed job
takes exactly its GPU demand (milli-GPU) out of what running work leaves free, and a job
that does not fit that free cluster on its own is unplaced in every feasible solution. So
the primary objective is at most the optimum of the fractional knapsack

    max  sum_j priority_j * demand_j * x_j
    s.t. sum_j demand_j * x_j <= free milli-GPU of the cluster,  0 <= x_j <= 1,
         x_j = 0 for jobs that do not fit alone,

which the greedy by priority solves exactly (every item has value / weight = priority).

:func:`relaxation_bound` is the LP relaxation of the first tier over every eligible (job,
place) pair: the bound of an exact search restricted to candidate nodes, whose own bound
is not one for the whole instance.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.explain import fits_alone_now
from placement.models.gpu.instance import MILLI, GpuInstance, GpuJob
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel


def capacity_bound(instance: GpuInstance) -> float:
    """Upper bound on ``placed_gpu_weighted`` (GPUs): the fractional knapsack above."""
    free = sum(MILLI - used for node in instance.nodes for used in node.gpu_milli_used)
    fits = fits_alone_now(instance)
    # Highest priority, then largest demand first; whether a job fits is asked only of the
    # jobs reached before the free capacity runs out.
    order = sorted(
        (j for j in instance.jobs if j.demand_milli > 0),
        key=lambda j: (j.priority, j.demand_milli),
        reverse=True,
    )
    value = 0.0
    for job in order:
        if free <= 0:
            break
        if not fits(job):
            continue
        priority, demand = job.priority, job.demand_milli
        take = min(demand, free)
        value += priority * take
        free -= take
    return value / MILLI


NODE_LP_LIMIT = 250_000
"""Up to this many eligible (job, node) pairs the bound model works per node, above per class
of identical nodes."""


def relaxation_bound(
    instance: GpuInstance,
    cluster: FreeCapacity,
    options: Any,
    cancel: Any,
    time_limit_s: float,
    node_level_limit: int = NODE_LP_LIMIT,
) -> int | None:
    """A proven upper bound on the primary objective (milli-GPU, weighted), whole instance.

    A relaxation of tier 1 over every eligible (job, place) pair, where a place is a node
    or, when there are more than ``node_level_limit`` pairs, a class of nodes of equal GPU
    type and GPU memory: ``0 <= x_j <= 1`` and ``w[j, p] >= 0`` (continuous, at most what
    ``p`` can host) with ``sum_p w[j, p] = workers_j x_j``. Each place offers its fully free
    GPUs to whole workers, its free milli-GPU and free GPU memory to GPU work and its free
    CPU and memory to every worker; per class, whole workers of >= g GPUs only use nodes
    with >= g fully free GPUs; per node, a job with a required locality only uses nodes of
    groups that can hold all of it. Every feasible placement maps to a feasible point, so
    the LP optimum (HiGHS, through the backend wrapper, within ``time_limit_s``) bounds the
    instance. None when it is not proved.

    The LP goes to HiGHS as arrays (a pure LP, so no MIP machinery runs); ``options`` is
    unused and kept for the callers.
    """
    del options
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
    capacity = {"ff": ff, "milli": milli, "gmem": gmem, "cpu": cpu, "mem": mem}
    capacity.update({f"ff>={g}": ff_at_least[g] for g in sizes})

    # Column-wise arrays: per job an x column, then its w columns. Rows: the job rows
    # (sum_p w - workers x = 0) first, then the capacity rows as they are first used.
    cost: list[float] = []
    upper: list[float] = []
    col_start: list[int] = [0]
    index: list[int] = []
    value: list[float] = []
    job_rows = 0
    cap_row: dict[tuple[str, int], int] = {}
    cap_upper: list[float] = []
    entries: list[tuple[int, float]] = []  # (capacity row key index, coef) of one w column

    def cap(name: str, p: int, coef: float) -> None:
        if coef:
            k = cap_row.get((name, p))
            if k is None:
                k = cap_row[(name, p)] = len(cap_upper)
                cap_upper.append(float(capacity[name][p]))
            entries.append((k, coef))

    cap_cols: list[list[tuple[int, float]]] = []
    for j, job in enumerate(instance.jobs):
        node_cap = caps[j]
        if per_node and job.locality_level and job.locality_required:
            node_cap = holding_nodes(instance, cluster, job, node_cap)
        cap_p = np.bincount(place, node_cap, n_places)
        if cap_p.sum() < job.workers or job.weighted_demand_milli == 0:
            continue
        row = job_rows
        job_rows += 1
        cost.append(float(job.weighted_demand_milli))
        upper.append(1.0)
        cap_cols.append([])
        index.append(row)
        value.append(-float(job.workers))
        col_start.append(len(index))
        for p in np.flatnonzero(cap_p).tolist():
            entries.clear()
            if job.kind == "whole":
                cap("ff", p, job.gpus)
                for g in sizes:
                    if g <= job.gpus:
                        cap(f"ff>={g}", p, job.gpus)
            if job.kind == "fractional":
                cap("gmem", p, job.gpu_memory_mib)
            cap("milli", p, job.milli_per_worker)
            cap("cpu", p, job.cpu_milli)
            cap("mem", p, job.memory_mib)
            cost.append(0.0)
            upper.append(float(min(cap_p[p], job.workers)))
            index.append(row)
            value.append(1.0)
            cap_cols.append(list(entries))
            col_start.append(len(index))
    if not cost:
        return 0
    # Shift the capacity rows behind the job rows.
    n_cols = len(cost)
    starts, idx, val = [0], [], []
    for c in range(n_cols):
        idx.extend(index[col_start[c] : col_start[c + 1]])
        val.extend(value[col_start[c] : col_start[c + 1]])
        for k, coef in cap_cols[c]:
            idx.append(job_rows + k)
            val.append(coef)
        starts.append(len(idx))
    lp = HighsModel()
    lp.load(
        np.array(cost),
        np.zeros(n_cols),
        np.array(upper),
        np.concatenate((np.zeros(job_rows), np.full(len(cap_upper), -math.inf))),
        np.concatenate((np.zeros(job_rows), np.array(cap_upper))),
        np.array(starts),
        np.array(idx),
        np.array(val),
        maximize=True,
    )
    run = lp.run(max(time_limit_s, 0.1), cancel=cancel, bounded=True)
    if run.status != RunStatus.OPTIMAL or run.objective is None:
        return None
    value_lp = run.objective
    # The integer optimum is at most the LP optimum: round down, after a slack larger than
    # any floating-point error of the LP solve.
    return int(math.floor(value_lp + 1.0 + 1e-7 * abs(value_lp)))


def holding_nodes(
    instance: GpuInstance, cluster: FreeCapacity, job: GpuJob, caps: np.ndarray
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
