"""The candidate restriction of a large instance: one window of racks re-optimised at a time.

When the full model is too large for the time left, each pass of the exact search works on
a restricted model (:func:`select_candidates`): the jobs of one window of groups are free
to move, every other placed job stays where the incumbent puts it. Optimality over the whole
instance is then not claimed; :func:`placement.models.gpu.bound.relaxation_bound` gives the
bound instead.
"""

from __future__ import annotations

import numpy as np

from placement.models.gpu.eligibility import FreeCapacity, multi_domain_counts
from placement.models.gpu.instance import GpuInstance, GpuJob, GpuSolution, WorkerPlacement


def window_groups(instance: GpuInstance) -> np.ndarray:
    """Per node, its window group: the first level above the node (racks), or blocks of 8
    nodes without such a level."""
    if len(instance.levels) > 2:
        return instance.group_ids[0]
    return np.arange(len(instance.nodes), dtype=np.int64) // 8


def window_count(instance: GpuInstance) -> int:
    """Number of window groups (see :func:`window_groups`)."""
    if len(instance.levels) > 2 and len(instance.nodes):
        return int(instance.group_ids[0].max()) + 1
    return (len(instance.nodes) + 7) // 8


def select_candidates(
    instance: GpuInstance,
    cluster: FreeCapacity,
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
    group_of = window_groups(instance)
    n_groups = window_count(instance)
    node_ids = np.arange(n_nodes, dtype=np.int64)
    placed_nodes: dict[int, set[int]] = {}
    if incumbent is not None:
        for j, workers in incumbent.placements.items():
            placed_nodes[j] = {w.node for w in workers}

    weights = placement_weights(instance, cluster)

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


def placement_weights(instance: GpuInstance, cluster: FreeCapacity) -> list[np.ndarray]:
    """Per job, the exact model's placement variables on each node (0: not eligible)."""
    n_nodes = len(instance.nodes)
    multi_dom = multi_domain_counts(instance, cluster)
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
    return weights


def _leftover(job: GpuJob, state: FreeCapacity, nodes: np.ndarray, take: np.ndarray) -> np.ndarray:
    """Capacity a node would have left after taking ``take`` workers (best-fit score)."""
    if job.kind == "whole":
        return state.ff_count[nodes] - job.gpus * take
    if job.kind == "fractional":
        free = np.bincount(state.gpu_node, np.maximum(state.free0, 0), len(state.gpu_count))
        return free[nodes] - job.gpu_milli * take
    return state.cpu_free[nodes] - job.cpu_milli * take
