"""DistServe's placement for disaggregated prefill and decode (Zhong et al., "DistServe:
Disaggregating Prefill and Decoding for Goodput-optimized Large Language Model Serving", OSDI
2024; LLMServe/DistServe, ``simdistserve/`` and the paper's Algorithm 1, high node-affinity):
for each phase, every parallelism candidate's instance is simulated alone to find the largest
rate whose SLO attainment (the share of requests meeting that phase's target) reaches the
target percentile; the candidate with the most goodput per GPU is kept for each phase, and the
phases are replicated, ``n = ceil(rate / goodput)``, to carry the rate. Under a GPU budget or
GPU counts that do not allow that, the pairing and replica counts that carry the most
(``min(rate, n_p goodput_p, n_d goodput_d)``) within them are kept.

Here the candidates are the instance's profiles (the measured ones have one degree, 8); the
simulator is ours, each phase alone (a decode instance fed by prefills that take no time), on
the first ``SEARCH_REQUESTS`` requests with their arrival times scaled to each trial rate.
"""

from __future__ import annotations

import math

from placement.models.serving.instance import (
    DECODE,
    PREFILL,
    Deployment,
    Kind,
    Profile,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.replay import SimInstance, SimRequest, build_instances, replay
from placement.models.serving.sim.routers import PoolRouter

SEARCH_REQUESTS = 400
STEPS = 12


def _attained(instance: ServingInstance, kind: int, requests: list[SimRequest]) -> bool:
    """Whether one instance of ``kind`` alone meets its phase's target at the percentile."""
    k = kinds(instance)[kind]
    machines = build_instances(instance, ServingSolution((Deployment(kind, 1),), ()))
    # the other phase takes no time: prefills that feed a decode instance, or decodes that
    # drain a prefill instance
    instant = Profile("instant", 1, ((1, 1e-9),), 0.0, 0.0, 0.0, 1, 0)
    other = PREFILL if k.role == DECODE else DECODE
    machines.append(SimInstance(1, Kind(f"instant-{other}", -1, other), instant, 1 << 62))
    r = replay(instance, machines, PoolRouter(machines), requests)
    if not r.served:
        return False
    if k.role == PREFILL:
        met = sum(1 for s in r.served if s.ttft_ms <= instance.slo.ttft_ms)
    else:
        met = sum(1 for s in r.served if s.tpot_ms <= instance.slo.tpot_ms)
    return met >= instance.slo.percentile / 100 * len(requests)


def phase_goodput(instance: ServingInstance, kind: int, requests: list[SimRequest]) -> float:
    """The largest rate (req/s) one instance of ``kind`` carries within its phase's target
    at the percentile (bisection on the rate, the requests' times scaled)."""
    sample = requests[:SEARCH_REQUESTS]
    span = max(1e-9, sample[-1].arrival_s - sample[0].arrival_s)
    base = len(sample) / span

    def at(rate: float) -> list[SimRequest]:
        f = base / rate
        return [
            SimRequest(r.id, r.arrival_s * f, r.input_tokens, r.output_tokens, r.cls)
            for r in sample
        ]

    lo, hi = 0.0, base
    while _attained(instance, kind, at(hi)) and hi < 1e4:
        lo, hi = hi, 2 * hi
    for _ in range(STEPS):
        mid = (lo + hi) / 2
        if _attained(instance, kind, at(mid)):
            lo = mid
        else:
            hi = mid
    return lo


def placement(instance: ServingInstance, requests: list[SimRequest]) -> ServingSolution:
    """DistServe's configuration for the instance's rate (module docstring): per phase
    candidate its simulated goodput; per pairing of a prefill and a decode candidate the
    fewest replicas that carry the rate, or, when the GPUs or the budget do not allow them,
    the replicas within them that carry the most; the pairing that carries the most, then
    with the fewest GPUs."""
    ks = kinds(instance)
    goodput = {
        i: phase_goodput(instance, i, requests)
        for i, k in enumerate(ks)
        if k.role in (PREFILL, DECODE)
    }
    counts = {g.name: g.count for g in instance.gpu_types}
    rate = instance.arrival_rate_per_s
    best = None
    for p, gp in goodput.items():
        for d, gd in goodput.items():
            if ks[p].role != PREFILL or ks[d].role != DECODE or min(gp, gd) <= 0:
                continue
            pp, pd = instance.profiles[ks[p].profile], instance.profiles[ks[d].profile]
            cap_p = counts[pp.gpu_type] // pp.tensor_parallel
            cap_d = counts[pd.gpu_type] // pd.tensor_parallel
            for a in range(1, min(cap_p, math.ceil(rate / gp)) + 1):
                for b in range(1, min(cap_d, math.ceil(rate / gd)) + 1):
                    used = a * pp.tensor_parallel + b * pd.tensor_parallel
                    if pp.gpu_type == pd.gpu_type and used > counts[pp.gpu_type]:
                        continue
                    if instance.gpu_budget and used > instance.gpu_budget:
                        continue
                    key = (min(rate, a * gp, b * gd), -used, gp / pp.tensor_parallel)
                    if best is None or key > best[0]:
                        best = (key, p, a, d, b)
    if best is None:
        return ServingSolution()
    _, p, a, d, b = best
    return ServingSolution((Deployment(p, a), Deployment(d, b)), ())
