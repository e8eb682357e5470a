"""Large-neighbourhood search on the first tier of a large instance: free a few nodes, re-solve.

On the 1,024-GPU instances the placements the 5-s search finds are 1-1.5 % below the
configuration LP's bound, and what they lose is of one kind (docs/benchmarks.md, issue 19):
every fully free GPU is used, but partly by priority-1 work, while priority-2 jobs with
8-GPU workers (often restricted to one GPU type) stay unplaced because no node has 8 GPUs
free for them. Placing one of them means emptying whole nodes of its GPU type and moving
what ran there into the holes other nodes leave. Rack windows
(:func:`~placement.models.gpu.candidates.select_candidates`) cannot do that when the nodes
to empty and the holes lie in different racks.

A *neighbourhood* (:func:`neighbourhood`) is built around one unplaced job, the *target*
(drawn at random, the likelier the more one of its workers adds, priority squared times
GPUs):

* the nodes that could host a worker of the target in an empty cluster, cheapest to empty
  first (least priority-weighted work on them, ties broken at random), and
* the nodes with the most room to take what moves: GPU shares the incumbent leaves free and
  work of a lower priority than the target's, ties broken at random,

as many of the first as the target has workers, then the two in turn, until the exact model would exceed its size. Every job with a worker on those
nodes is free to move among them (and the nodes it uses now); then the target and the
other unplaced jobs that fit there, the most valuable first, while the size allows. Every
other job stays where the incumbent puts it. The exact model of that neighbourhood
(:class:`~placement.models.gpu.model.GpuModel` with candidates and fixed jobs), hinted with
the incumbent, can only keep or improve the first tier; the caller solves it and keeps the
checked result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.greedy import complete
from placement.models.gpu.instance import GpuInstance, GpuJob, GpuSolution


@dataclass
class Neighbourhood:
    """One neighbourhood of the incumbent (see the module docstring)."""

    candidates: list[list[int]]
    """Sorted candidate nodes per job (empty for fixed and left-out jobs)."""
    fixed: GpuSolution
    """The placements of the jobs that do not move."""
    target: int
    """The unplaced job the neighbourhood was built for."""
    nodes: list[int]
    """The freed nodes."""
    size: int
    """Placement variables of the model (as :func:`~.candidates.placement_weights` counts)."""


def neighbourhood(
    instance: GpuInstance,
    cluster: FreeCapacity,
    incumbent: GpuSolution,
    weights: list[np.ndarray],
    rng: np.random.Generator,
    target_vars: int,
    target: int | None = None,
) -> Neighbourhood | None:
    """A neighbourhood of ``incumbent`` of about ``target_vars`` placement variables around
    one unplaced job (see the module docstring). ``cluster`` is the instance's free capacity,
    ``weights`` :func:`~.candidates.placement_weights` on it. ``target``: the job to build
    it around (unplaced by ``incumbent``), else drawn. None when every job that adds value is
    placed (or ``target`` cannot be)."""
    jobs = instance.jobs
    n_nodes = len(instance.nodes)
    placements = {j: w for j, w in incumbent.placements.items() if w}
    on_node: list[list[int]] = [[] for _ in range(n_nodes)]
    load = np.zeros(n_nodes)  # priority-weighted milli-GPU placed on each node
    for j, workers in placements.items():
        job = jobs[j]
        for w in workers:
            if j not in on_node[w.node]:
                on_node[w.node].append(j)
            load[w.node] += job.priority * job.milli_per_worker
    unplaced = [
        j
        for j, job in enumerate(jobs)
        if j not in placements and job.weighted_demand_milli > 0 and weights[j].any()
    ]
    # A job with a required locality that no group can hold is never placed: not a target.
    unplaced = [j for j in unplaced if _one_group(instance, cluster, jobs[j]) is not False]
    if not unplaced or (target is not None and target not in unplaced):
        return None
    # The likelier, the more one worker adds: a gang too large for a small neighbourhood
    # is drawn rarely.
    value = np.array(
        [jobs[j].priority * jobs[j].weighted_demand_milli / jobs[j].workers for j in unplaced],
        dtype=float,
    )
    if target is None:
        target = int(unplaced[rng.choice(len(unplaced), p=value / value.sum())])
    tjob = jobs[target]

    # Nodes to empty for the target, the cheapest first: the least priority-weighted work,
    # workers at least as large as the target's counted twice (they need such a node too).
    cost = np.zeros(n_nodes)
    for j, workers in placements.items():
        job = jobs[j]
        big = 2.0 if job.milli_per_worker >= tjob.milli_per_worker else 1.0
        for w in workers:
            cost[w.node] += big * job.priority * job.milli_per_worker
    hosts = np.flatnonzero(weights[target] > 0)
    hosts = hosts[np.lexsort((rng.random(len(hosts)), cost[hosts]))]
    group = _one_group(instance, cluster, tjob, hosts, cost, rng)
    if group is not None and group is not False:
        hosts = group
    host_units = [[int(n)] for n in hosts]
    # Room for what moves out: each job of a lower priority than the target's with all its
    # nodes (dropping it frees them all), and the nodes with GPU shares left free; the most
    # room first, give or take half at random.
    residual = cluster.residual(GpuSolution(placements))
    free = np.bincount(cluster.gpu_node, np.maximum(residual.free0, 0), n_nodes)
    room_units: list[tuple[float, list[int]]] = []
    for j, workers in placements.items():
        if jobs[j].priority < tjob.priority:
            room_units.append((jobs[j].demand_milli, sorted({w.node for w in workers})))
    room_units += [(float(free[n]), [int(n)]) for n in np.flatnonzero(free > 0)]
    noise = rng.uniform(0.5, 1.5, len(room_units))
    by_room = np.argsort([-r * u for (r, _), u in zip(room_units, noise, strict=True)])
    hole_units = [room_units[k][1] for k in by_room.tolist()]

    chosen = np.zeros(n_nodes, dtype=bool)
    free_jobs: set[int] = set()
    size = 0
    # As many hosts as the target has workers first, then hosts and room in turn.
    k = tjob.workers
    order = host_units[:k] + [u for pair in _interleave(host_units[k:], hole_units) for u in pair]
    for unit in order:
        added = [n for n in unit if not chosen[n]]
        if not added:
            continue
        trial = chosen.copy()
        trial[added] = True
        new_jobs = {j for n in added for j in on_node[n] if j not in free_jobs}
        grown = size + sum(int(weights[j][added].sum()) for j in free_jobs)
        grown += sum(int(weights[j][trial].sum()) for j in new_jobs)
        if grown > target_vars and chosen.any():
            if len(added) > 1:
                continue  # a large unit: a smaller one may still fit
            break
        chosen, size = trial, grown
        free_jobs.update(new_jobs)
    # The target first, then the other unplaced jobs by value, while the size allows.
    for j in [target] + [j for j in unplaced if j != target]:
        extra = int(weights[j][chosen].sum())
        if extra and (j == target or size + extra <= target_vars):
            free_jobs.add(j)
            size += extra

    candidates: list[list[int]] = []
    fixed = {}
    for j in range(len(jobs)):
        if j not in free_jobs:
            if j in placements:
                fixed[j] = placements[j]
            candidates.append([])
            continue
        nodes = set(np.flatnonzero(chosen & (weights[j] > 0)).tolist())
        nodes.update(w.node for w in placements.get(j, ()))
        candidates.append(sorted(nodes))
    return Neighbourhood(
        candidates, GpuSolution(fixed), target, np.flatnonzero(chosen).tolist(), size
    )


def _one_group(
    instance: GpuInstance,
    cluster: FreeCapacity,
    job: GpuJob,
    hosts: np.ndarray | None = None,
    cost: np.ndarray | None = None,
    rng: np.random.Generator | None = None,
) -> np.ndarray | bool | None:
    """For a job with a required locality: the hosts (in their order) of one group of that
    level that can hold all its workers in the empty cluster, the group whose cheapest hosts
    cost least, give or take 30 % at random; False when no group can. None for a job without
    a required locality. Without ``hosts``: only whether a group can (True / False)."""
    if not (job.locality_required and job.locality_level):
        return None
    level = instance.level_of_name(job.locality_level)
    group = instance.group_ids[level - 2] if level >= 2 else np.arange(len(instance.nodes))
    caps = cluster.node_caps(job)
    room = np.bincount(group, caps)
    if hosts is None or cost is None or rng is None:
        return bool((room >= job.workers).any())
    best, best_score = None, np.inf
    for g in np.unique(group[hosts]).tolist():
        if room[g] < job.workers:
            continue
        members = hosts[group[hosts] == g]
        score = cost[members[: job.workers]].mean() * rng.uniform(0.7, 1.3)
        if score < best_score:
            best, best_score = g, score
    return hosts[group[hosts] == best] if best is not None else False


def _interleave(first: list[list[int]], second: list[list[int]]) -> list[tuple[list[int], ...]]:
    """``first[0], second[0], first[1], ...`` as pairs (the longer list's tail alone)."""
    out: list[tuple[list[int], ...]] = list(zip(first, second, strict=False))
    k = len(out)
    out.extend((n,) for n in first[k:])
    out.extend((n,) for n in second[k:])
    return out


def graft(
    instance: GpuInstance, incumbent: GpuSolution, donor: GpuSolution, jobs: list[int]
) -> GpuSolution | None:
    """``incumbent`` with the ``jobs`` it leaves out placed as ``donor`` places them: every
    other job with a worker on their nodes is taken out, then best fit
    (:func:`~.greedy.complete`) places what is unplaced. None when ``donor`` places none of
    them. The caller checks the result."""
    moved = [j for j in jobs if donor.placements.get(j) and not incumbent.placements.get(j)]
    if not moved:
        return None
    nodes = {w.node for j in moved for w in donor.placements[j]}
    kept = {
        j: workers
        for j, workers in incumbent.placements.items()
        if workers and not any(w.node in nodes for w in workers)
    }
    kept.update({j: donor.placements[j] for j in moved})
    return complete(instance, GpuSolution(kept))
