"""A cheap upper bound on the primary objective, valid for the whole instance.

Every placed job takes exactly its GPU demand (milli-GPU) out of what running work leaves
free, and a job that does not fit that free cluster on its own is unplaced in every feasible
solution. So the primary objective is at most the optimum of the fractional knapsack

    max  sum_j priority_j * demand_j * x_j
    s.t. sum_j demand_j * x_j <= free milli-GPU of the cluster,  0 <= x_j <= 1,
         x_j = 0 for jobs that do not fit alone,

which the greedy by priority solves exactly (every item has value / weight = priority).
"""

from __future__ import annotations

from placement.models.gpu.explain import fits_alone_now
from placement.models.gpu.instance import MILLI, GpuInstance


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
