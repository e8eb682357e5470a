"""Independent checker of GPU allocations: feasibility and the objective, from first principles.

It imports no encoding and no heuristic. Every solution that leaves the solver passes here,
and every objective the solver reports is the one computed here.

Objective (lexicographic, see docs/formulations/gpu.md):

1. ``placed_gpu_weighted`` (max): sum over placed jobs of priority x workers x GPU demand
   per worker, in GPUs.
2. ``comm_cost`` (min): sum over placed jobs of traffic_gb / bandwidth of the innermost
   topology level containing all of the job's GPUs (0 when they all share one GPU), plus
   ``locality_miss_penalty`` for each missed *preferred* locality.
3. ``fragmentation`` (min): expected free GPU capacity, in GPUs, that a job drawn from the
   expected mix cannot use (FGD-style; Weng et al., USENIX ATC 2023).
"""

from __future__ import annotations

from typing import Any

from placement.models.gpu.instance import MILLI, SPAN_SAME_GPU, GpuInstance, GpuSolution
from placement.solver.family import CheckReport

SENSES = ("max", "min", "min")


def span_level(
    instance: GpuInstance, job_kind: str, workers: list[tuple[int, tuple[int, ...]]]
) -> int:
    """Innermost level containing every GPU of a placed job (-1: they all share one GPU).

    ``workers`` holds (node index, GPU indices) per worker. When the job spans several groups
    of the outermost level, ``len(instance.levels)`` is returned ("beyond"); the outermost
    level's bandwidth applies to that traffic too.
    """
    nodes = {n for n, _ in workers}
    last = len(instance.levels) - 1
    if len(nodes) == 1:
        (n,) = nodes
        if job_kind == "cpu":
            return 1
        gpus = {g for _, gs in workers for g in gs}
        if len(gpus) == 1:
            return SPAN_SAME_GPU
        node = instance.nodes[n]
        domains = {node.nvlink_domain(g) for g in gpus}
        return 0 if len(domains) == 1 else 1
    for lv in range(2, last + 1):
        if len({instance.nodes[n].groups[lv - 2] for n in nodes}) == 1:
            return lv
    return last + 1


def comm_cost_of(instance: GpuInstance, job_index: int, span: int) -> float:
    """Communication cost of a placed job whose span level is ``span`` (without penalties)."""
    job = instance.jobs[job_index]
    if span == SPAN_SAME_GPU or job.traffic_gb == 0:
        return 0.0
    level = min(span, len(instance.levels) - 1)
    return job.traffic_gb / instance.levels[level].bandwidth_gbps


def node_fragmentation_milli(instance: GpuInstance, free_milli: list[int]) -> float:
    """Weighted unusable free milli-GPU of one node, summed over the mix (weights not normalised)."""
    total = 0.0
    full_free = sum(1 for f in free_milli if f == MILLI)
    partial = sum(f for f in free_milli if 0 < f < MILLI)
    for c in instance.mix:
        if c.gpus > 0:
            unusable = partial + (MILLI * full_free if full_free < c.gpus else 0)
        else:
            unusable = sum(f for f in free_milli if f < c.gpu_milli)
        total += c.weight * unusable
    return total


def check(instance: GpuInstance, solution: GpuSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the objective."""
    violations: list[str] = []
    nodes, jobs = instance.nodes, instance.jobs
    n_nodes = len(nodes)
    free_milli = [[MILLI - u for u in node.gpu_milli_used] for node in nodes]
    gpu_mem_used = [list(node.gpu_memory_mib_used) for node in nodes]
    whole_taken = [[False] * node.gpu_count for node in nodes]
    fractional_on = [[False] * node.gpu_count for node in nodes]
    cpu_used = [node.cpu_milli_used for node in nodes]
    mem_used = [node.memory_mib_used for node in nodes]
    placed = 0
    comm = 0.0

    if not isinstance(solution, GpuSolution):
        return CheckReport(
            False, [f"not a GpuSolution: {type(solution).__name__}"], _terms(0, 0.0, 0.0), SENSES
        )

    for j, workers in sorted(solution.placements.items()):
        if not (isinstance(j, int) and 0 <= j < len(jobs)):
            violations.append(f"placement for unknown job index {j!r}")
            continue
        job = jobs[j]
        where = f"job {job.name!r}"
        if len(workers) != job.workers:
            violations.append(
                f"{where}: {len(workers)} of {job.workers} workers placed (a gang is all or nothing)"
            )
            continue
        job_ok = True
        spots: list[tuple[int, tuple[int, ...]]] = []
        for k, w in enumerate(workers):
            wh = f"{where} worker {k}"
            n = w.node
            if not (isinstance(n, int) and 0 <= n < n_nodes):
                violations.append(f"{wh}: unknown node index {n!r}")
                job_ok = False
                continue
            node = nodes[n]
            gpus = tuple(w.gpus)
            spots.append((n, gpus))
            if job.kind != "cpu" and not job.allows(node.gpu_type):
                violations.append(
                    f"{wh}: node {node.name!r} has GPU type {node.gpu_type!r}, allowed {list(job.gpu_types)}"
                )
                job_ok = False
            cpu_used[n] += job.cpu_milli
            mem_used[n] += job.memory_mib
            expected = job.gpus if job.kind == "whole" else (1 if job.kind == "fractional" else 0)
            if len(gpus) != expected:
                violations.append(f"{wh}: {len(gpus)} GPU indices given, {expected} expected")
                job_ok = False
                continue
            if len(set(gpus)) != len(gpus):
                violations.append(f"{wh}: a GPU index repeated in {list(gpus)}")
                job_ok = False
                continue
            for g in gpus:
                if not (isinstance(g, int) and 0 <= g < node.gpu_count):
                    violations.append(
                        f"{wh}: GPU index {g!r} not in node {node.name!r} (0..{node.gpu_count - 1})"
                    )
                    job_ok = False
                    continue
                if job.kind == "whole":
                    busy = whole_taken[n][g] or fractional_on[n][g]
                    if busy or free_milli[n][g] < MILLI or gpu_mem_used[n][g] > 0:
                        violations.append(
                            f"{wh}: GPU {g} of node {node.name!r} is not entirely free"
                        )
                        job_ok = False
                    if node.gpu_memory_mib < job.gpu_memory_mib:
                        violations.append(
                            f"{wh}: GPU {g} of node {node.name!r} has {node.gpu_memory_mib} MiB, "
                            f"the job needs {job.gpu_memory_mib} MiB"
                        )
                        job_ok = False
                    whole_taken[n][g] = True
                    free_milli[n][g] = 0
                    gpu_mem_used[n][g] = node.gpu_memory_mib
                else:
                    if whole_taken[n][g]:
                        violations.append(
                            f"{wh}: GPU {g} of node {node.name!r} is held by a whole-GPU worker"
                        )
                        job_ok = False
                    fractional_on[n][g] = True
                    free_milli[n][g] -= job.gpu_milli
                    gpu_mem_used[n][g] += job.gpu_memory_mib
        if not job_ok or len(spots) != job.workers:
            continue
        span = span_level(instance, job.kind, spots)
        if job.locality_level:
            limit = instance.level_of_name(job.locality_level)
            if span > limit:
                if job.locality_required:
                    spanned = (
                        instance.levels[span].name if span < len(instance.levels) else "cluster"
                    )
                    violations.append(
                        f"{where}: workers span level {spanned!r}, "
                        f"required inside one {job.locality_level!r}"
                    )
                    continue
                comm += instance.locality_miss_penalty
        placed += job.weighted_demand_milli
        comm += comm_cost_of(instance, j, span)

    frag_total = 0.0
    for n, node in enumerate(nodes):
        for g in range(node.gpu_count):
            if free_milli[n][g] < 0:
                violations.append(
                    f"node {node.name!r} GPU {g}: oversubscribed by {-free_milli[n][g]} milli-GPU"
                )
            if gpu_mem_used[n][g] > node.gpu_memory_mib:
                violations.append(
                    f"node {node.name!r} GPU {g}: GPU memory {gpu_mem_used[n][g]} MiB > {node.gpu_memory_mib} MiB"
                )
        if cpu_used[n] > node.cpu_milli:
            violations.append(
                f"node {node.name!r}: CPU {cpu_used[n]} milli > capacity {node.cpu_milli}"
            )
        if mem_used[n] > node.memory_mib:
            violations.append(
                f"node {node.name!r}: memory {mem_used[n]} MiB > capacity {node.memory_mib}"
            )
        frag_total += node_fragmentation_milli(instance, [max(0, f) for f in free_milli[n]])
    weight = sum(c.weight for c in instance.mix) or 1
    frag = frag_total / weight / MILLI
    return CheckReport(not violations, violations, _terms(placed / MILLI, comm, frag), SENSES)


def _terms(placed_gpus: float, comm: float, frag: float) -> dict[str, Any]:
    return {"placed_gpu_weighted": placed_gpus, "comm_cost": comm, "fragmentation": frag}
