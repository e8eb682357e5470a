"""Heuristics for model partitioning: the DP where it applies, and greedies where it does not.

None calls a solver. Each returns a contiguous split (also valid when non-contiguous splits
are allowed) or None when it finds no split that fits:

* :func:`dp_split` -- the exact DP of :mod:`.dp` (with several link speeds: the DP over the
  slowest link, a feasible split but not a proven optimum). The fallback where it applies.
* :func:`bisection` -- devices fastest first; binary search on the bottleneck time ``T``,
  each device taking the longest next range whose cost is at most ``T`` and that fits its
  memory (exact for chains without transfers on a fixed device order).
* :func:`petals` -- Petals-style span assignment (Borzunov et al., "Distributed Inference and
  Fine-tuning of Large Language Models Over the Internet", NeurIPS 2023): devices join
  fastest first and each serves the longest span of not yet served layers its memory holds.
* :func:`pipedream` -- PipeDream's planner (Narayanan et al., SOSP 2019) without
  replication: the DP with PipeDream's cost model, where a transfer overlaps compute (a
  stage costs max(compute, incoming transfer)); its split is then scored by the checker's
  model, where transfers add to the stage.
* :func:`petals_flow` -- LLM_SERVING_FLOW (Helix's model, where a solution gives layer
  ranges): Petals' span rule again, devices fastest first each taking the next span of not
  yet served layers up to its type's layer limit, and once every layer is served, the next
  device starts a new pipeline at layer 0 (Petals lets later servers add throughput to the
  spans served least; under Helix's edge rule a span adds flow only where it meets others'
  boundaries, so whole pipelines are laid). A pipeline left unfinished when the devices run
  out is dropped (it could carry no flow). Two orders: by tokens/s at the type's layer
  limit, and by layer-tokens/s (layers x tokens/s) at it.
"""

from __future__ import annotations

import numpy as np

from placement.models.partition.check import objective_ns
from placement.models.partition.dp import dp_applies, try_dp
from placement.models.partition.edge_split_greedy import uniform_width_plan
from placement.models.partition.ideals import needs_layer_graph
from placement.models.partition.instance import (
    PartitionFlowDeviceType,
    PartitionInstance,
    PartitionSolution,
)
from placement.models.partition.layergraph_exact import order_split
from placement.models.partition.serving_plan_solve import greedy_plans
from placement.models.partition.tables import Tables, build_tables
from placement.solver.options import SolveOptions


def _speed_order(t: Tables) -> list[tuple[int, int]]:
    """(class, device) pairs, fastest class first (least total time), then by device index."""
    order = np.argsort(t.prefix_time[:, -1], kind="stable")
    return [(int(c), d) for c in order for d in t.classes[int(c)].devices]


def _longest_stage(t: Tables, c: int, i: int, limit_ns: int | None) -> int:
    """The largest end j > i such that stage [i, j) fits class c's memory, ends at an allowed
    cut and costs at most ``limit_ns`` (None: no time limit); i when there is none."""
    n = t.n
    cap = t.classes[c].memory_bytes
    hi = int(np.searchsorted(t.prefix_mem, t.prefix_mem[i] + cap, side="right")) - 1
    if limit_ns is not None:
        hi_t = int(np.searchsorted(t.prefix_time[c], t.prefix_time[c][i] + limit_ns, "right")) - 1
        hi = min(hi, hi_t)
    hi = min(hi, n)
    if hi <= i:
        return i
    js = np.arange(i + 1, hi + 1, dtype=np.int64)
    ok = t.cut_ok[js]
    if limit_ns is not None:
        ok &= t.stage_cost(c, np.full_like(js, i), js) <= limit_ns
    good = js[ok]
    return int(good[-1]) if len(good) else i


def _fill(t: Tables, order: list[tuple[int, int]], limit_ns: int | None) -> list[int] | None:
    """Devices in ``order`` each take the longest next stage; None if layers remain."""
    device_of = [-1] * t.n
    i = 0
    limit = t.instance.workload.max_stages
    for c, d in order if limit is None else order[:limit]:
        if i >= t.n:
            break
        j = _longest_stage(t, c, i, limit_ns)
        device_of[i:j] = [d] * (j - i)
        i = j
    return device_of if i >= t.n else None


def petals(instance: PartitionInstance, tables: Tables | None = None) -> PartitionSolution | None:
    """Petals-style span assignment (see the module docstring)."""
    t = tables or build_tables(instance)
    device_of = _fill(t, _speed_order(t), None)
    return None if device_of is None else PartitionSolution(tuple(device_of))


def bisection(
    instance: PartitionInstance, tables: Tables | None = None
) -> PartitionSolution | None:
    """Binary search on the bottleneck with a fastest-first fill (see the module docstring)."""
    t = tables or build_tables(instance)
    order = _speed_order(t)
    if _fill(t, order, None) is None:
        return None
    lo = 0
    hi = int(t.prefix_time[:, -1].max() + 2 * t.cross.sum() + 1)
    best = _fill(t, order, hi)
    while lo < hi:
        mid = (lo + hi) // 2
        found = _fill(t, order, mid)
        if found is None:
            lo = mid + 1
        else:
            hi, best = mid, found
    return None if best is None else PartitionSolution(tuple(best))


def pipedream(
    instance: PartitionInstance, tables: Tables | None = None
) -> PartitionSolution | None:
    """PipeDream's planner: the DP under PipeDream's overlapped-transfer cost model."""
    if dp_applies(instance) is not None:
        return None
    t = tables or build_tables(instance)
    t_pd = Tables(**{**t.__dict__, "overlap_comm": True})
    result = try_dp(instance, tables=t_pd)
    return None if result is None else result.solution


def dp_split(
    instance: PartitionInstance, upper_bound_ns: int | None = None
) -> PartitionSolution | None:
    """The DP's split (exact with uniform links; over the slowest link otherwise)."""
    result = try_dp(instance, upper_bound_ns)
    return None if result is None else result.solution


def petals_flow(instance: PartitionInstance, by_layers: bool = False) -> PartitionSolution:
    """Petals-style pipelines for LLM_SERVING_FLOW (see the module docstring); ``by_layers``
    orders devices by layers x tokens/s at their limit instead of tokens/s."""
    flow = instance.serving_flow
    assert flow is not None, "LLM_SERVING_FLOW instances carry serving_flow (validated)"
    types: dict[str, PartitionFlowDeviceType] = {t.type: t for t in flow.device_types}

    def speed(d: int) -> float:
        t = types[instance.devices[d].type]
        top = t.tokens_per_s[-1] if t.tokens_per_s else 0.0
        return top * t.max_layers if by_layers else top

    order = sorted(range(len(instance.devices)), key=lambda d: (-speed(d), d))
    n = len(instance.layers)
    done: list[tuple[int, int, int]] = []
    current: list[tuple[int, int, int]] = []
    at = 0
    for d in order:
        limit = types[instance.devices[d].type].max_layers
        if limit <= 0:
            continue
        count = min(limit, n - at)
        current.append((d, at, count))
        at += count
        if at == n:
            done += current
            current, at = [], 0
    return PartitionSolution((), tuple(sorted(done)))


def greedy_solutions(
    instance: PartitionInstance, options: SolveOptions | None = None
) -> list[tuple[str, PartitionSolution]]:
    """Named heuristic solutions, the fallback first: the DP where it applies, then the
    bisection fill, Petals-style spans and PipeDream's planner (LLM_SERVING_FLOW: the two
    orders of :func:`petals_flow`)."""
    del options
    if instance.workload.edge_split:
        # one width per split (QPART's own rule is a peer: peers.qpart, run by the bench)
        return [("uniform-width", uniform_width_plan(instance))]
    if instance.workload.plan:
        return greedy_plans(instance)
    if instance.workload.flow:
        return [
            ("petals-flow", petals_flow(instance)),
            ("petals-flow-layers", petals_flow(instance, by_layers=True)),
        ]
    out: list[tuple[str, PartitionSolution]] = []
    if needs_layer_graph(instance):
        # Tarnawski et al.'s rules: the stage heuristics below ignore CPUs, backward twins
        # and per-tensor transfers; the DP over the prefixes of the layer order is a valid
        # (convex) split and exact under ORDER contiguity.
        seed = order_split(instance)
        if seed is not None and seed.solution is not None:
            out.append(("ideals-order", seed.solution))
    t = build_tables(instance)
    candidates = [("bisection", bisection(instance, t)), ("petals", petals(instance, t))]
    for name, sol in candidates:
        if sol is not None:
            out.append((name, sol))
    upper = None
    if out:
        upper = min(objective_ns(instance, sol.device_of) for _, sol in out)
    if dp_applies(instance) is None:
        sol = dp_split(instance, upper)
        if sol is not None:
            out.insert(0, ("dp", sol))
        pd = pipedream(instance, t)
        if pd is not None:
            out.append(("pipedream", pd))
    return out
