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

An instance with ``topology_fit`` set (opt-in) has a fourth tier, ranked after
``comm_cost`` and before ``fragmentation`` (FIT_SENSES):

``topology_fit`` (min), in GPU^2: for each placed job, ``S x (racks used - 1)``, with
   ``S`` the most GPUs in one rack (the innermost level above the node) times the sum over
   the levels above the node of the most GPUs in one group (so an extra rack costs more than
   the best-fit term of a rack's worth of GPUs anywhere); plus,
   for each whole GPU placed, the fully free GPUs, before the decision, of its node's group at
   every level above the node (rack, block, ...): best fit per level, as Kueue's
   LeastFreeCapacity, which keeps the emptier racks whole for later gangs.

A re-optimization (an instance with running jobs or queues, ``instance.reopt``) has four
tiers: ``placed_gpu_weighted`` (running jobs count like pending ones, elastic jobs by the
workers they get), then ``disruption_cost`` (min: preemption_cost per preempted worker plus
migration_cost per restarted worker), then the two above. When a queue has a priority, a
tier ``queue_priority_gpu`` (max: the same sum with each job's queue priority in place of its
own, so among equal first tiers the higher-priority queues' demand is placed) comes second
(REOPT_QUEUE_SENSES). Its solutions must also respect the
preemption policy, the queues' quotas and the disruption budget (:func:`running_decisions`).

An instance with at least one CPU-only job (a job asking no GPU, running or pending) has one
more tier, :data:`CPU_TIER` ``placed_cpu_jobs`` (max): the sum over placed CPU-only jobs of
priority x workers placed (an integer). It ranks directly after the GPU placement tiers
(``placed_gpu_weighted`` and, when present, ``queue_priority_gpu``) and before every cost
(``disruption_cost``, ``comm_cost``, ...): CPU-only jobs add nothing to the first tier, and
without it an optimal solution could leave one pending though it fits. Instances without
CPU-only jobs keep exactly the tiers above.

Feasibility includes each node's density model where it has one (:mod:`.density`): the CPU
used must fit the effective capacity at the node's pod count, ``pods_used`` plus every worker
the solution places there.

The solution's message (:func:`solution_to_message`) is written here too, since it carries
the checker's decisions on the running jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from placement.models.gpu.instance import (
    MILLI,
    SPAN_SAME_GPU,
    GpuInstance,
    GpuNode,
    GpuSolution,
    preemption_rule,
    queue_caps,
    queue_usage,
    queue_usage_before,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import gpu_pb2 as pb

SENSES = ("max", "min", "min")
FIT_SENSES = ("max", "min", "min", "min")
REOPT_SENSES = ("max", "min", "min", "min")
REOPT_QUEUE_SENSES = ("max", "max", "min", "min", "min")

CPU_TIER = "placed_cpu_jobs"
"""The tier of instances with CPU-only jobs: priority x workers of the placed ones (max)."""


def has_cpu_tier(instance: GpuInstance) -> bool:
    """Whether the objective of ``instance`` has the :data:`CPU_TIER` tier: some job (running
    or pending) asks no GPU."""
    return any(job.kind == "cpu" for job in instance.jobs)


def with_cpu_tier(
    terms: dict[str, float], senses: tuple[str, ...], placed_cpu: int, after: str
) -> tuple[dict[str, float], tuple[str, ...]]:
    """``terms`` and ``senses`` with :data:`CPU_TIER` (max, value ``placed_cpu``) inserted
    directly after the tier named ``after``."""
    names = list(terms)
    at = names.index(after) + 1
    items = list(terms.items())
    items.insert(at, (CPU_TIER, float(placed_cpu)))
    return dict(items), senses[:at] + ("max",) + senses[at:]


@dataclass
class RunningDecision:
    """What a solution does to one running job (the checker's reading of it)."""

    job: int
    action: str
    """``keep``, ``migrate``, ``resize`` or ``preempt``."""
    workers_before: int
    workers_after: int
    migrated_workers: int = 0
    preempted_workers: int = 0
    cost: int = 0
    made_room_for: list[int] = field(default_factory=list)
    """Placed pending jobs with a worker on a node the job held."""
    rule: str = ""
    """The policy rule that allowed the preemption (``lower_priority`` or ``reclaim``)."""


def _spots(workers) -> list[tuple[int, tuple[int, ...]]]:
    return sorted((w.node, tuple(w.gpus)) for w in workers)


def running_decisions(
    instance: GpuInstance, solution: GpuSolution
) -> tuple[list[RunningDecision], list[str]]:
    """Per running job what ``solution`` does to it, and every violation of the preemption
    policy, the queues' quotas and the disruption budget (placements assumed checked)."""
    jobs, placements = instance.jobs, solution.placements
    out: list[RunningDecision] = []
    violations: list[str] = []
    holders: dict[int, list[int]] = {}  # node -> placed pending jobs with a worker there
    for i, workers in placements.items():
        if 0 <= i < len(jobs) and not jobs[i].running:
            for n in {w.node for w in workers}:
                holders.setdefault(n, []).append(i)
    for j in instance.running_jobs:
        job = jobs[j]
        now = placements.get(j, ())
        before, after = len(job.current), len(now)
        d = RunningDecision(j, "keep", before, after)
        if after and _spots(now) == _spots(job.current):
            out.append(d)
            continue
        d.preempted_workers = max(0, before - after)
        d.migrated_workers = min(before, after)
        d.action = "preempt" if not after else ("migrate" if after == before else "resize")
        d.cost = d.preempted_workers * job.preemption_cost + d.migrated_workers * job.migration_cost
        nodes = {w.node for w in job.current}
        room = sorted({i for n in nodes for i in holders.get(n, [])})
        d.made_room_for = room
        if d.preempted_workers:
            rules = [r for r in (preemption_rule(instance, j, i) for i in room) if r]
            if rules:
                d.rule = "reclaim" if "reclaim" in rules else rules[0]
            else:
                why = (
                    "the policy is never"
                    if instance.preemption_policy == "never"
                    else "the job is not preemptible"
                    if not job.preemptible
                    else "no placed pending job on its nodes may preempt it under "
                    + instance.preemption_policy
                )
                violations.append(
                    f"job {job.name!r}: {d.preempted_workers} worker(s) preempted, but {why}"
                )
        out.append(d)
    # Quotas: no queue above max(guarantee + borrowing limit, what it holds now); under
    # reclaim, no borrowing queue pushed below its guarantee.
    if instance.queues:
        before_q = queue_usage_before(instance)
        after_q = queue_usage(instance, placements)
        caps = queue_caps(instance)
        for q in instance.queues:
            cap = caps[q.name]
            if cap is not None and after_q[q.name] > cap:
                violations.append(
                    f"queue {q.name!r}: uses {after_q[q.name]} milli-GPU, above its limit "
                    f"{cap} (guarantee + borrowing limit)"
                )
            reclaiming = instance.preemption_policy == "reclaim_within_quota"
            borrowing = before_q[q.name] > q.guaranteed_milli
            if reclaiming and borrowing and after_q[q.name] < q.guaranteed_milli:
                violations.append(
                    f"queue {q.name!r}: reclaimed down to {after_q[q.name]} milli-GPU, below "
                    f"its guarantee {q.guaranteed_milli}"
                )
    budget = instance.disruption_budget
    for total, limit, what in (
        (sum(d.migrated_workers for d in out), budget.max_migrated_workers, "migrated workers"),
        (sum(d.preempted_workers for d in out), budget.max_preempted_workers, "preempted workers"),
        (sum(d.cost for d in out), budget.max_disruption_cost, "disruption cost"),
    ):
        if limit is not None and total > limit:
            violations.append(f"disruption budget: {total} {what} > {limit}")
    return out, violations


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


def effective_cpu_milli(node: GpuNode, pods: int) -> Fraction:
    """The CPU node ``node`` delivers with ``pods`` pods, from its fields (not from the
    model's pieces): ``cpu_milli``, less ``pods`` x the per-pod overhead, and at most the
    capacity curve interpolated at ``pods`` (its first value before its first point, its last
    segment extended beyond its last)."""
    cap = Fraction(node.cpu_milli - node.cpu_overhead_milli_per_pod * pods)
    points = node.cpu_capacity_curve
    if points:
        value = Fraction(points[0].cpu_milli)
        if len(points) > 1 and pods > points[0].pods:
            i = 0
            while i + 2 < len(points) and points[i + 1].pods <= pods:
                i += 1
            a, b = points[i], points[i + 1]
            value = a.cpu_milli + Fraction(
                (b.cpu_milli - a.cpu_milli) * (pods - a.pods), b.pods - a.pods
            )
        cap = min(cap, value)
    return cap


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
    pods = [node.pods_used for node in nodes]  # the density curve's count (density.py)
    mem_used = [node.memory_mib_used for node in nodes]
    placed = 0
    queue_placed = 0
    queue_priority = instance.queue_priorities
    placed_cpu = 0  # priority x workers of the placed CPU-only jobs
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
        if not job.fewest_workers <= len(workers) <= job.workers:
            if job.elastic:
                violations.append(
                    f"{where}: {len(workers)} workers placed, the elastic job takes "
                    f"{job.fewest_workers}..{job.workers}"
                )
            else:
                violations.append(
                    f"{where}: {len(workers)} of {job.workers} workers placed "
                    "(a gang is all or nothing)"
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
            pods[n] += 1
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
        if not job_ok or len(spots) != len(workers):
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
        placed += job.value_milli(len(workers))
        if job.kind == "cpu":
            placed_cpu += job.priority * len(workers)
        if queue_priority is not None:
            queue_placed += queue_priority[j] * job.gpu_value_milli(len(workers))
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
        elif cpu_used[n] > (cap := effective_cpu_milli(node, pods[n])):
            violations.append(
                f"node {node.name!r} overloaded by density: {pods[n]} pods, CPU {cpu_used[n]} "
                f"milli > effective capacity {float(cap):.0f} milli "
                f"({float(cap) / 1000:.1f} cores at that density)"
            )
        if mem_used[n] > node.memory_mib:
            violations.append(
                f"node {node.name!r}: memory {mem_used[n]} MiB > capacity {node.memory_mib}"
            )
        frag_total += node_fragmentation_milli(instance, [max(0, f) for f in free_milli[n]])
    weight = sum(c.weight for c in instance.mix) or 1
    frag = frag_total / weight / MILLI
    terms = _terms(placed / MILLI, comm, frag)
    senses = SENSES
    if instance.topology_fit and not instance.reopt:
        fit = float(topology_fit_of(instance, solution)) if not violations else 0.0
        terms = {
            "placed_gpu_weighted": terms["placed_gpu_weighted"],
            "comm_cost": comm,
            "topology_fit": fit,
            "fragmentation": frag,
        }
        senses = FIT_SENSES
    elif instance.reopt:
        decisions, broken = running_decisions(instance, solution)
        violations.extend(broken)
        terms = {"placed_gpu_weighted": terms["placed_gpu_weighted"]}
        if queue_priority is not None:
            terms["queue_priority_gpu"] = queue_placed / MILLI
        terms |= {
            "disruption_cost": float(sum(d.cost for d in decisions)),
            "comm_cost": comm,
            "fragmentation": frag,
        }
        senses = REOPT_SENSES if queue_priority is None else REOPT_QUEUE_SENSES
    if has_cpu_tier(instance):
        after = "queue_priority_gpu" if "queue_priority_gpu" in terms else "placed_gpu_weighted"
        terms, senses = with_cpu_tier(terms, senses, placed_cpu, after)
    return CheckReport(not violations, violations, terms, senses)


def topology_fit_of(instance: GpuInstance, solution: GpuSolution) -> int:
    """The ``topology_fit`` tier of ``solution`` (GPU^2; see the module), from the instance's
    used GPUs before the decision; 0 on an instance with no level above the node."""
    nodes = instance.nodes
    extra = len(instance.levels) - 2
    if extra <= 0:
        return 0
    free_in: list[dict[str, int]] = [{} for _ in range(extra)]
    gpus_in: list[dict[str, int]] = [{} for _ in range(extra)]
    for node in nodes:
        free = sum(
            1
            for g in range(node.gpu_count)
            if node.gpu_milli_used[g] == 0 and node.gpu_memory_mib_used[g] == 0
        )
        for lv in range(extra):
            key = node.groups[lv]
            free_in[lv][key] = free_in[lv].get(key, 0) + free
            gpus_in[lv][key] = gpus_in[lv].get(key, 0) + node.gpu_count
    spread = max(gpus_in[0].values()) * sum(max(level.values()) for level in gpus_in)
    total = 0
    for j, workers in solution.placements.items():
        racks = {nodes[w.node].groups[0] for w in workers}
        total += spread * (len(racks) - 1)
        if instance.jobs[j].kind != "whole":
            continue
        for w in workers:
            node = nodes[w.node]
            total += len(w.gpus) * sum(free_in[lv][node.groups[lv]] for lv in range(extra))
    return total


def _terms(placed_gpus: float, comm: float, frag: float) -> dict[str, Any]:
    return {"placed_gpu_weighted": placed_gpus, "comm_cost": comm, "fragmentation": frag}


def solution_to_message(
    instance: GpuInstance, solution: GpuSolution, unplaced: list[dict[str, Any]] | None = None
) -> Any:
    """The ``placement.v1.GpuSolution`` message of a solution."""
    msg = pb.GpuSolution()
    for j in solution.placed_jobs():
        jp = msg.placements.add(job=instance.jobs[j].name)
        for w in solution.placements[j]:
            jp.workers.add(node=instance.nodes[w.node].name, gpus=list(w.gpus))
    for reason in unplaced or []:
        msg.unplaced.add(**reason)
    if instance.reopt:
        # The checker's reading of what happens to each running job.
        jobs = instance.jobs
        for d in running_decisions(instance, solution)[0]:
            room = [jobs[i].name for i in d.made_room_for]
            msg.decisions.add(
                job=jobs[d.job].name,
                action=d.action,
                workers_before=d.workers_before,
                workers_after=d.workers_after,
                migrated_workers=d.migrated_workers,
                preempted_workers=d.preempted_workers,
                cost=d.cost,
                made_room_for=room if d.action != "keep" else [],
                rule=d.rule,
                message=_decision_line(jobs[d.job].name, d.action, room, d.rule),
            )
    return msg


def _decision_line(name: str, action: str, room: list[str], rule: str) -> str:
    """One line for people on what happened to a running job."""
    if action == "keep":
        return f"{name} keeps its placement"
    why = f" to make room for {', '.join(room)}" if room else ""
    how = f" (allowed by {rule})" if rule else ""
    return f"{name}: {action}{why}{how}"
