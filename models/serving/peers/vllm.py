"""The usual vLLM deployment: identical instances, each serving prefill and decode with
continuous batching, behind a load balancer that admits every request.

vLLM's documentation (docs.vllm.ai, "Data Parallel Deployment" and the production stack's
router, vllm-project/production-stack ``src/vllm_router/routers/routing_logic.py``:
``RoundRobinRouter``, and session/least-load routing) runs one engine per GPU group and
spreads requests over them; the routers themselves are :class:`..sim.routers.RoundRobinRouter`
and :class:`..sim.routers.LeastOutstandingRouter`. Here the cluster is the budget's GPUs of
one type as instances of its smallest tensor-parallel degree (the GPU type with the most
GPUs, or, with :func:`best_cluster`, the GPU type whose cluster serves the most goodput in
the simulator on the first ``SEARCH_REQUESTS`` requests, the search Splitwise's peer gets too).
"""

from __future__ import annotations

from typing import Any

from placement.models.serving.instance import (
    MIXED,
    Deployment,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.replay import SimRequest, build_instances, replay

SEARCH_REQUESTS = 600


def homogeneous_cluster(instance: ServingInstance, gpu_type: str | None = None) -> ServingSolution:
    """Identical mixed instances filling the budget (see the module docstring); no routes:
    the peer's router decides."""
    ks = kinds(instance)
    counts = {g.name: g.count for g in instance.gpu_types}
    name = (
        gpu_type
        or max(instance.gpu_types, key=lambda g: (g.count, -instance.gpu_index[g.name])).name
    )
    candidates = [
        (instance.profiles[k.profile].tensor_parallel, i)
        for i, k in enumerate(ks)
        if k.role == MIXED and instance.profiles[k.profile].gpu_type == name
    ]
    if not candidates:
        return ServingSolution()
    tp, kind = min(candidates)
    gpus = counts[name]
    if instance.gpu_budget:
        gpus = min(gpus, instance.gpu_budget)
    n = gpus // tp
    return ServingSolution((Deployment(kind, n),) if n else (), ())


def best_cluster(
    instance: ServingInstance, requests: list[SimRequest], router: Any
) -> ServingSolution:
    """The :func:`homogeneous_cluster` of the GPU type whose replay of the first
    ``SEARCH_REQUESTS`` requests with ``router`` (a router class) has the most goodput."""
    best = None
    for g in instance.gpu_types:
        cluster = homogeneous_cluster(instance, g.name)
        if not cluster.deployments:
            continue
        machines = build_instances(instance, cluster)
        goodput = replay(instance, machines, router(machines), requests[:SEARCH_REQUESTS])
        key = (round(goodput.goodput_per_s, 6), -instance.gpu_index[g.name])
        if best is None or key > best[0]:
            best = (key, cluster)
    return best[1] if best is not None else ServingSolution()
