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
from placement.solver.backends.milp import MILP_SOLVERS


def capacity_bound(instance: GpuInstance) -> float:
    """Upper bound on ``placed_gpu_weighted`` (GPUs): the fractional knapsack above."""
    free = sum(MILLI - used for node in instance.nodes for used in node.gpu_milli_used)
    items = sorted(
        (
            (job.priority, job.demand_milli)
            for job, fits in zip(instance.jobs, fits_alone_now(instance), strict=True)
            if fits and job.demand_milli > 0
        ),
        reverse=True,
    )
    value = 0.0
    for priority, demand in items:
        if free <= 0:
            break
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
    """
    import pulp  # deferred: 0.26 s to import, paid only by a restricted search

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
