"""KAI-Scheduler's topology-aware allocation with bin-packing, one gang at a time: a peer.

Written from NVIDIA/KAI-Scheduler:

* ``pkg/scheduler/plugins/topology/job_filtering.go`` at commit 04b6432
  (``subSetNodesFn``, ``calcSubTreeAllocatable``, ``calcNodeAccommodation``,
  ``getJobAllocatableDomains``, ``calculateRelevantDomainLevels``,
  ``improveChoiceForPreference``, ``getJobAllocatableChildrenSubset``): every domain counts
  the gang's pods its nodes can hold; the relevant levels run from the preferred level up to
  the required one (or to the root, the whole cluster, without one); at the first of them
  where some domains hold the whole gang, the first such domain is chosen (KAI iterates a Go
  map, in no fixed order; we take the first by name, one of the orders KAI may use); when
  that level is above the preferred one, KAI instead takes, of those domains, the one whose
  children (sorted by the pods they hold, most first) cover the gang with the fewest
  children, and allows the nodes of those children;
* ``pkg/scheduler/plugins/nodeplacement/nodeplacement.go`` at 8b3b89c with its
  ``nodeResourcePack`` and ``getScoreOfCurrentNode`` (the default ``binpack`` strategy): each
  pod goes to the allowed node with the fewest non-allocated GPUs (CPU for a CPU-only pod)
  that still fits it, ties by node name; the gang is placed whole or not at all.

A gang without a topology constraint is bin-packed over every node. GPU indices inside a
node as in :class:`~placement.models.gpu.remaining.Remaining`; the family's checker judges
the solution like every other.
"""

from __future__ import annotations

from placement.models.gpu.instance import GpuInstance, GpuJob, GpuSolution, WorkerPlacement
from placement.models.gpu.remaining import Remaining


def _domains(instance: GpuInstance, level: int) -> dict[str, list[int]]:
    """Our level index -> domain name -> node indices (the whole cluster past the top)."""
    out: dict[str, list[int]] = {}
    for n, node in enumerate(instance.nodes):
        if level <= 1:
            key = node.name
        elif level - 2 < len(node.groups):
            key = node.groups[level - 2]
        else:
            key = "root"
        out.setdefault(key, []).append(n)
    return out


def _allowed_nodes(instance: GpuInstance, free: Remaining, job: GpuJob) -> list[int] | None:
    """The nodes KAI's topology plugin lets the gang use, or None when no domain holds it."""
    if not job.locality_level:
        return list(range(len(instance.nodes)))
    level = max(1, instance.level_index[job.locality_level])
    top = len(instance.levels)  # the root: the whole cluster
    relevant = [level] if job.locality_required else list(range(level, top + 1))
    holds = {n: free.count_in(n, job) for n in range(len(instance.nodes))}
    for lv in relevant:
        domains = _domains(instance, lv)
        fitting = [
            name for name in sorted(domains) if sum(holds[n] for n in domains[name]) >= job.workers
        ]
        if not fitting:
            continue
        if lv == level or job.locality_required:
            return domains[fitting[0]]
        # improveChoiceForPreference: the fewest children (one level down) covering the gang
        children = _domains(instance, lv - 1)
        best: list[str] = []
        for name in fitting:
            mine = [c for c in children if set(children[c]) <= set(domains[name])]
            mine.sort(key=lambda c: -sum(holds[n] for n in children[c]))  # stable, as KAI
            subset, total = [], 0
            for c in mine:
                subset.append(c)
                total += sum(holds[n] for n in children[c])
                if total >= job.workers:
                    break
            if not best or len(subset) < len(best):
                best = subset
        return [n for c in best for n in children[c]]
    return None


def kai_one_at_a_time(instance: GpuInstance) -> GpuSolution:
    """KAI's topology plugin and bin-packing admitting the jobs in their order."""
    free = Remaining(instance)
    placements: dict[int, tuple[WorkerPlacement, ...]] = {}
    for j, job in enumerate(instance.jobs):
        allowed = _allowed_nodes(instance, free, job)
        if allowed is None:
            continue
        trial = free.copy()
        workers = []
        for _ in range(job.workers):
            fits = [n for n in allowed if trial.count_in(n, job) >= 1]
            if not fits:
                break
            if job.kind == "cpu":
                n = min(fits, key=lambda n: (trial.cpu[n], instance.nodes[n].name))
            else:
                n = min(fits, key=lambda n: (trial.free_gpus(n), instance.nodes[n].name))
            workers.append(trial.take(n, job))
        if len(workers) == job.workers:
            placements[j] = tuple(workers)
            free = trial
    return GpuSolution(placements)
