"""Volcano's network-topology-aware allocation with bin-packing, one gang at a time: a peer.

Written from volcano-sh/volcano:

* the ``allocate`` action's hard-topology path (``pkg/scheduler/actions/allocate/allocate.go``,
  the version with ``allocateResourcesForTasks`` / ``selectBestHyperNode`` /
  ``sumNodeScoresInHyperNode``): HyperNode tiers are tried from the lowest up to the job's
  ``highestTierAllowed``; in a tier, the gang is dry-run on every HyperNode's nodes, task by
  task on the best-scored node; the first tier where some HyperNode holds the whole gang
  wins, and of its HyperNodes the one whose chosen nodes scored highest in sum (Volcano
  iterates a Go map and breaks ties by its order; we take the first by name);
* ``pkg/scheduler/plugins/network-topology-aware/network_topology_aware.go`` at 00f36c3 for
  soft mode: each task's node score adds ``100`` when the node's HyperNode is the one the
  job already occupies, else ``100 (maxTier - tier(LCA)) / (maxTier - minTier)``, and, when
  several nodes share the best score, ``100 x`` the job's share of tasks already in that
  node's HyperNode;
* ``pkg/scheduler/plugins/binpack/binpack.go`` (``BinPackingScore``): for each resource the
  task requests and that has a weight, ``weight x (used + request) / allocatable``, summed,
  divided by the weights and scaled to ``100``; here CPU, memory and GPUs with weight 1 (the
  GPU is weighted only when the operator lists it in ``binpack.resources``, as GPU clusters
  do).

Our levels above the node are Volcano's HyperNode tiers (tier 1 = the first level above the
node). A job without a level is bin-packed over every node; gangs are all or nothing. GPU
indices inside a node as in :class:`~placement.models.gpu.remaining.Remaining`; the family's
checker judges the solution like every other.
"""

from __future__ import annotations

from placement.models.gpu.instance import MILLI, GpuInstance, GpuJob, GpuSolution, WorkerPlacement
from placement.models.gpu.remaining import Remaining

BASE_SCORE = 100.0


def _binpack(instance: GpuInstance, free: Remaining, n: int, job: GpuJob) -> float:
    """``BinPackingScore`` of one more worker of ``job`` on node ``n`` (0..100)."""
    node = instance.nodes[n]
    parts: list[float] = []
    if job.cpu_milli and node.cpu_milli:
        parts.append((node.cpu_milli - free.cpu[n] + job.cpu_milli) / node.cpu_milli)
    if job.memory_mib and node.memory_mib:
        parts.append((node.memory_mib - free.mem[n] + job.memory_mib) / node.memory_mib)
    if job.kind != "cpu" and node.gpu_count:
        used = node.gpu_count - free.free_gpus(n)
        parts.append((used + job.milli_per_worker / MILLI) / node.gpu_count)
    return BASE_SCORE * sum(parts) / len(parts) if parts else 0.0


def _tier_group(instance: GpuInstance, n: int, tier: int) -> str:
    """The HyperNode of node ``n`` at ``tier`` (1 = the first level above the node)."""
    groups = instance.nodes[n].groups
    return groups[tier - 1] if tier - 1 < len(groups) else "root"


def _topology_score(instance: GpuInstance, n: int, anchor: int, anchor_tier: int) -> float:
    """``networkTopologyAwareScore`` of node ``n``'s HyperNode (tier 1) against the job's
    allocated HyperNode (the tier-``anchor_tier`` group of node ``anchor``)."""
    tiers = len(instance.levels) - 2
    if anchor_tier == 1 and _tier_group(instance, n, 1) == _tier_group(instance, anchor, 1):
        return BASE_SCORE
    lca = next(
        (
            t
            for t in range(max(1, anchor_tier), tiers + 1)
            if _tier_group(instance, n, t) == _tier_group(instance, anchor, t)
        ),
        None,
    )
    if lca is None or tiers <= 1:
        return 0.0
    return BASE_SCORE * (tiers - lca) / (tiers - 1)


def _place(
    instance: GpuInstance, free: Remaining, job: GpuJob, nodes: list[int], soft: bool
) -> tuple[list[WorkerPlacement], float] | None:
    """The gang task by task on the best-scored node of ``nodes``, on a copy of ``free``;
    the workers and their summed scores, or None if the gang does not fit."""
    trial = free.copy()
    tiers = len(instance.levels) - 2
    workers: list[WorkerPlacement] = []
    total = 0.0
    anchor, anchor_tier = -1, 0  # the job's allocated HyperNode (soft mode)
    for _ in range(job.workers):
        fits = [n for n in nodes if trial.count_in(n, job) >= 1]
        if not fits:
            return None
        scores = {n: _binpack(instance, trial, n, job) for n in fits}
        if soft and anchor >= 0:
            topo = {n: _topology_score(instance, n, anchor, anchor_tier) for n in fits}
            best = max(topo.values())
            leaders = [n for n in fits if topo[n] == best]
            if len(leaders) > 1:  # scoreWithTaskNum: the job's share already in the HyperNode
                for n in leaders:
                    here = _tier_group(instance, n, 1)
                    mine = sum(1 for w in workers if _tier_group(instance, w.node, 1) == here)
                    topo[n] += BASE_SCORE * mine / job.workers
            for n in fits:
                scores[n] += topo[n]
        n = min(fits, key=lambda n: (-scores[n], instance.nodes[n].name))
        total += scores[n]
        workers.append(trial.take(n, job))
        if soft and tiers >= 1:
            if anchor < 0:
                anchor, anchor_tier = n, 1
            while anchor_tier <= tiers and _tier_group(instance, n, anchor_tier) != _tier_group(
                instance, anchor, anchor_tier
            ):
                anchor_tier += 1  # the LCA of the allocated HyperNode and this node's
    return workers, total


def volcano_one_at_a_time(instance: GpuInstance) -> GpuSolution:
    """Volcano's allocate action with network-topology-aware and binpack, jobs in order."""
    free = Remaining(instance)
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    every = list(range(len(instance.nodes)))
    tiers = len(instance.levels) - 2
    for j, job in enumerate(instance.jobs):
        level = instance.level_index.get(job.locality_level, -1)
        chosen: list[WorkerPlacement] | None = None
        if level >= 2 and job.locality_required:  # hard mode, highestTierAllowed = level - 1
            for tier in range(1, min(level - 1, tiers) + 1):
                found: dict[str, tuple[list[WorkerPlacement], float]] = {}
                hypernodes: dict[str, list[int]] = {}
                for n in every:
                    hypernodes.setdefault(_tier_group(instance, n, tier), []).append(n)
                for name in sorted(hypernodes):
                    result = _place(instance, free, job, hypernodes[name], soft=False)
                    if result is not None:
                        found[name] = result
                if found:
                    best = max(sorted(found), key=lambda h: found[h][1])
                    chosen = found[best][0]
                    break
        else:
            result = _place(instance, free, job, every, soft=level >= 2)
            chosen = result[0] if result is not None else None
        if chosen is not None:
            for w in chosen:
                free.take(w.node, job)
            placements[j] = tuple(chosen)
    return GpuSolution(placements)
