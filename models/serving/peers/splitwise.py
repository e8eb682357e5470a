"""Splitwise's phase-split cluster (Patel et al., "Splitwise: Efficient Generative LLM
Inference Using Phase Splitting", ISCA 2024; simulator Mutinifni/splitwise-sim @ 3780880,
``scheduler.py`` and ``configs/experiment/splitwise_*.yaml``): a prompt pool and a token pool
of whole machines, a request's prompt to the prompt machine with the fewest requests in flight
and its decode to the token machine with the fewest (the JSQ scheduler:
:class:`..sim.routers.PoolRouter`), every request admitted. The paper provisions the pools by
searching, with its simulator, over the numbers of prompt and token machines of each GPU
type pairing (Splitwise-AA, -HH, -HA) under a power, cost or count budget; this peer does the
same search under the GPU budget in our simulator, on the first ``SEARCH_REQUESTS`` requests,
and keeps the design with the most goodput (then the fewest GPUs).
"""

from __future__ import annotations

from placement.models.serving.instance import (
    DECODE,
    PREFILL,
    Deployment,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.replay import SimRequest, build_instances, replay
from placement.models.serving.sim.routers import PoolRouter

SEARCH_REQUESTS = 600


def designs(instance: ServingInstance) -> list[ServingSolution]:
    """Every pool design within the GPUs and the budget: one prefill kind and one decode kind
    (any GPU types), at least one machine each."""
    ks = kinds(instance)
    pre = [i for i, k in enumerate(ks) if k.role == PREFILL]
    dec = [i for i, k in enumerate(ks) if k.role == DECODE]
    counts = {g.name: g.count for g in instance.gpu_types}
    out = []
    for p in pre:
        for d in dec:
            pp, pd = instance.profiles[ks[p].profile], instance.profiles[ks[d].profile]
            for n_p in range(1, counts[pp.gpu_type] // pp.tensor_parallel + 1):
                for n_d in range(1, counts[pd.gpu_type] // pd.tensor_parallel + 1):
                    gp, gd = n_p * pp.tensor_parallel, n_d * pd.tensor_parallel
                    if pp.gpu_type == pd.gpu_type and gp + gd > counts[pp.gpu_type]:
                        continue
                    if instance.gpu_budget and gp + gd > instance.gpu_budget:
                        continue
                    out.append(ServingSolution((Deployment(p, n_p), Deployment(d, n_d)), ()))
    return out


def pool_sizing(instance: ServingInstance, requests: list[SimRequest]) -> ServingSolution | None:
    """The design with the most simulated goodput on the first ``SEARCH_REQUESTS`` requests
    (then the fewest GPUs; None when no design fits)."""
    sample = requests[:SEARCH_REQUESTS]
    best = None
    for design in designs(instance):
        machines = build_instances(instance, design)
        r = replay(instance, machines, PoolRouter(machines), sample)
        gpus = sum(m.profile.tensor_parallel for m in machines)
        key = (round(r.goodput_per_s, 6), -gpus)
        if best is None or key > best[0]:
            best = (key, design)
    return None if best is None else best[1]
