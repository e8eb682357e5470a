"""The Lyra reclaim scenario: training jobs on loaned inference servers, and Lyra's greedy.

Li et al., "Lyra: Elastic Scheduling for Deep Learning Clusters", EuroSys 2023
(doi:10.1145/3552326.3587445; arXiv 2202.07896 as "Aryl"). Idle inference servers are lent
to training jobs, some of them elastic; when inference traffic returns, N servers must be
given back, and the jobs on them preempted -- or, for an elastic job that keeps at least its
base demand elsewhere, scaled in. Lyra defines a *server preemption cost* and reclaims
greedily the servers that cost least.

:func:`reclaim_instance` writes the scenario as a re-optimization instance: the training jobs
run (``current``), N pending inference jobs of one whole server each and a priority above
every training job, under ``LOWER_PRIORITY``; so our tier 1 places the N servers' inference
first and then keeps as many training GPUs as possible, and tier 2 loses the least work.

:func:`lyra_reclaim` is the peer, written from the paper's description (the abstract and
its server-reclaiming section: the preemption cost of a server is what reclaiming it would
preempt; the server with the least cost is reclaimed, the costs are updated, and so on until
N servers are back). The paper's text was not in our reference store; the details below
(the cost of a job as the work it loses, a scale-in costs nothing but breaks ties by the
workers removed, lowest server index last) are our reading, not the authors' code.
"""

from __future__ import annotations

import numpy as np

from placement.models.gpu.instance import (
    DisruptionBudget,
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
    WorkerPlacement,
)

INFERENCE_PRIORITY = 100
GPUS_PER_SERVER = 8


def reclaim_instance(
    seed: int, servers: int = 16, reclaim: int = 4, load: float = 0.9, elastic: float = 0.5
) -> GpuInstance:
    """A seeded Lyra scenario.

    Parameters
    ----------
    seed:
        The seed (numpy ``default_rng``).
    servers:
        Inference servers lent to training, ``GPUS_PER_SERVER`` GPUs each.
    reclaim:
        Servers the inference side needs back (pending jobs of one whole server each).
    load:
        Share of the GPUs the training jobs hold.
    elastic:
        Share of the training jobs that are elastic (down to half their workers).

    Returns
    -------
    GpuInstance
        Training jobs of 1-8 one-GPU workers spread over the servers (running, priority 1,
        preemption cost = GPU-seconds since their last checkpoint per worker, 60 GPU-seconds
        per restarted worker), ``reclaim`` inference jobs (priority 100, 8 GPUs on one
        server), policy ``LOWER_PRIORITY``, no budget.
    """
    rng = np.random.default_rng(seed)
    nodes = [
        GpuNode(
            name=f"srv{s:02d}",
            gpu_type="V100",
            gpu_count=GPUS_PER_SERVER,
            gpu_memory_mib=32_000,
            nvlink_domain_size=0,
            cpu_milli=96_000,
            memory_mib=768_000,
            groups=(f"rack{s // 8}",),
        )
        for s in range(servers)
    ]
    free = {s: list(range(GPUS_PER_SERVER)) for s in range(servers)}
    target = int(load * servers * GPUS_PER_SERVER)
    held = 0
    jobs: list[GpuJob] = []
    while held < target:
        size = int(rng.choice([1, 2, 4, 8], p=[0.3, 0.3, 0.25, 0.15]))
        size = min(size, target - held)
        # Workers go to a few servers, as a packing scheduler leaves them after churn.
        spots: list[WorkerPlacement] = []
        while len(spots) < size:
            open_ = [s for s in free if free[s]]
            s = int(rng.choice(open_))
            take = min(size - len(spots), len(free[s]), int(rng.integers(1, size + 1)))
            for _ in range(take):
                spots.append(WorkerPlacement(s, (free[s].pop(0),)))
        held += size
        is_elastic = size > 1 and rng.random() < elastic
        jobs.append(
            GpuJob(
                name=f"train-{len(jobs):03d}",
                workers=size,
                gpus=1,
                priority=1,
                current=tuple(spots),
                preemption_cost=int(rng.integers(600, 7200)),
                migration_cost=60,
                min_workers=max(1, size // 2) if is_elastic else 0,
            )
        )
    for k in range(reclaim):
        jobs.append(
            GpuJob(name=f"infer-{k}", workers=1, gpus=GPUS_PER_SERVER, priority=INFERENCE_PRIORITY)
        )
    return GpuInstance(
        levels=[TopologyLevel("nvlink", 300), TopologyLevel("node", 32), TopologyLevel("rack", 12)],
        nodes=nodes,
        jobs=jobs,
        preemption_policy="lower_priority",
        disruption_budget=DisruptionBudget(),
        name=f"lyra-s{servers}-n{reclaim}-seed{seed}",
    )


def lyra_reclaim(instance: GpuInstance) -> GpuSolution:
    """Lyra's server-reclaiming greedy on a :func:`reclaim_instance` (see the module).

    Repeatedly: for every server not yet reclaimed, the cost of reclaiming it is the work the
    jobs on it would lose (a job preempted loses ``preemption_cost`` per running worker; an
    elastic job that keeps at least ``min_workers`` elsewhere is scaled in at no cost); the
    cheapest server is reclaimed (ties: fewer workers removed, then the lower index), and
    the jobs on it are scaled in or preempted. Each inference job then takes one reclaimed
    server whole.
    """
    jobs = instance.jobs
    inference = [j for j, job in enumerate(jobs) if not job.running]
    alive: dict[int, list[WorkerPlacement]] = {
        j: list(jobs[j].current) for j in instance.running_jobs
    }
    chosen: list[int] = []
    for _ in range(len(inference)):
        best: tuple[float, int, int] | None = None
        for s in range(len(instance.nodes)):
            if s in chosen or instance.nodes[s].gpu_count < jobs[inference[0]].gpus:
                continue
            cost, removed = 0.0, 0
            for j, workers in alive.items():
                here = sum(1 for w in workers if w.node == s)
                if not here:
                    continue
                removed += here
                left = len(workers) - here
                if not (jobs[j].elastic and left >= jobs[j].min_workers):
                    cost += jobs[j].preemption_cost * len(workers)
            key = (cost, removed, s)
            if best is None or key < best:
                best = key
        if best is None:
            break
        s = best[2]
        chosen.append(s)
        for j in list(alive):
            workers = alive[j]
            left = [w for w in workers if w.node != s]
            if len(left) == len(workers):
                continue
            if jobs[j].elastic and len(left) >= jobs[j].min_workers:
                alive[j] = left
            else:
                del alive[j]
    placements: dict[int, tuple[WorkerPlacement, ...]] = {
        j: tuple(workers) for j, workers in alive.items()
    }
    for j, s in zip(inference, chosen, strict=False):
        placements[j] = (WorkerPlacement(s, tuple(range(jobs[j].gpus))),)
    return GpuSolution(placements)
