"""Routing length classes onto a fixed set of deployments under the fluid model, greedily (no
solver): what a configuration serves, used by the heuristics, the warm start and the peers."""

from __future__ import annotations

from placement.models.serving.fluid import Rows, cost_milli, gpu_type_of, gpus_of, rows
from placement.models.serving.instance import (
    DECODE,
    MIXED,
    PREFILL,
    Deployment,
    Route,
    ServingInstance,
    ServingSolution,
    kinds,
)


def _fits(rem: list[int], coefs: list[int | None]) -> int:
    """How many milli-requests per second the remaining capacities take."""
    best = None
    for cap, coef in zip(rem, coefs, strict=True):
        if coef is None:
            return 0
        n = cap // coef
        best = n if best is None else min(best, n)
    return max(0, best or 0)


def route_fill(instance: ServingInstance, counts: dict[int, int]) -> ServingSolution:
    """A solution deploying ``counts`` (kind -> instances, zero counts dropped) with the
    classes routed greedily: classes by increasing tokens, each first onto mixed
    deployments, then onto prefill-decode pairs, as much as the rows leave."""
    ks = kinds(instance)
    rs = rows(instance)
    deps = [Deployment(k, n) for k, n in sorted(counts.items()) if n > 0]
    pre = {i: d.instances * rs[d.kind].prefill_cap for i, d in enumerate(deps)}
    busy = {i: d.instances * rs[d.kind].busy_cap for i, d in enumerate(deps)}
    dec = {i: d.instances * rs[d.kind].decode_cap for i, d in enumerate(deps)}
    kv = {i: d.instances * rs[d.kind].kv_cap for i, d in enumerate(deps)}
    mixed = [i for i, d in enumerate(deps) if ks[d.kind].role == MIXED]
    prefills = [i for i, d in enumerate(deps) if ks[d.kind].role == PREFILL]
    decodes = [i for i, d in enumerate(deps) if ks[d.kind].role == DECODE]
    rates: dict[tuple[int, int], int] = {}
    order = sorted(
        range(len(instance.classes)),
        key=lambda c: (instance.classes[c].input_tokens + instance.classes[c].output_tokens, c),
    )
    for c in order:
        left = instance.class_rates_milli[c]
        for i in mixed:
            if left <= 0:
                break
            r: Rows = rs[deps[i].kind]
            take = min(
                left,
                _fits(
                    [pre[i], busy[i], dec[i], kv[i]],
                    [r.prefill[c], r.busy[c], r.decode[c], r.kv[c]],
                ),
            )
            if take > 0:
                pre[i] -= take * (r.prefill[c] or 0)
                busy[i] -= take * (r.busy[c] or 0)
                dec[i] -= take * (r.decode[c] or 0)
                kv[i] -= take * (r.kv[c] or 0)
                rates[(c, i)] = rates.get((c, i), 0) + take
                left -= take
        for p in prefills:
            for d in decodes:
                if left <= 0:
                    break
                rp, rd = rs[deps[p].kind], rs[deps[d].kind]
                take = min(
                    left,
                    _fits([pre[p], dec[d], kv[d]], [rp.prefill[c], rd.decode[c], rd.kv[c]]),
                )
                if take > 0:
                    pre[p] -= take * (rp.prefill[c] or 0)
                    dec[d] -= take * (rd.decode[c] or 0)
                    kv[d] -= take * (rd.kv[c] or 0)
                    rates[(c, p)] = rates.get((c, p), 0) + take
                    rates[(c, d)] = rates.get((c, d), 0) + take
                    left -= take
    routes = tuple(Route(c, i, v) for (c, i), v in sorted(rates.items()) if v > 0)
    return ServingSolution(tuple(deps), routes)


def served_milli(instance: ServingInstance, solution: ServingSolution) -> int:
    """Milli-requests per second the solution serves (mixed and prefill routes)."""
    ks = kinds(instance)
    return sum(
        r.rate_milli
        for r in solution.routes
        if ks[solution.deployments[r.deployment].kind].role != DECODE
    )


def gpus_fit(instance: ServingInstance, counts: dict[int, int]) -> bool:
    """Whether ``counts`` keeps every GPU type's count and the budget."""
    ks = kinds(instance)
    per_type = [0] * len(instance.gpu_types)
    for k, n in counts.items():
        per_type[gpu_type_of(instance, ks[k])] += n * gpus_of(instance, ks[k])
    if any(u > g.count for u, g in zip(per_type, instance.gpu_types, strict=True)):
        return False
    return not instance.gpu_budget or sum(per_type) <= instance.gpu_budget


def counts_cost_milli(instance: ServingInstance, counts: dict[int, int]) -> int:
    """Hourly cost of ``counts``, thousandths."""
    ks = kinds(instance)
    return sum(n * cost_milli(instance, ks[k]) for k, n in counts.items())


def counts_gpus(instance: ServingInstance, counts: dict[int, int]) -> int:
    """GPUs ``counts`` holds."""
    ks = kinds(instance)
    return sum(n * gpus_of(instance, ks[k]) for k, n in counts.items())
