"""Serving plans through the family contract: LLM_SERVING with ``workload.serving_plan``.

A solution is a set of disjoint pipelines of tensor-parallel stages (docs/formulations/
partition.md, "Serving plans"); the family's checker (:func:`.check.check_plan`) scores it in
tokens/s. This module connects the instance to the planner of :mod:`.serving_tp`:

* :func:`solve_plan`, the exact encoding: :func:`.serving_tp.best_tp_plan_and_bound` where its
  premises hold (:func:`exact_premises`: a chain ``embed, identical blocks, head``; devices of
  a type alike; the nodes of a type equal in GPU count and of one type), proving the optimum
  over every plan of the model to the bisection's relative 1e-11; elsewhere no proof, the
  greedy plans only;
* :func:`greedy_plans`, the fallback on any chain: one pipeline over all GPUs, separate
  pipelines per GPU type, and replicas built one after another, all of single-GPU stages,
  each pipeline's tiling by a bisection on the stage time with a greedy fill;
* :func:`plan_quick_bound`, a cheap upper bound on tokens/s.
"""

from __future__ import annotations

from dataclasses import replace

from placement.models.partition.check import plan_stage_bytes, plan_stage_seconds
from placement.models.partition.cost_model import layer_time_ns
from placement.models.partition.instance import PartitionInstance, PartitionSolution, PlanStage
from placement.models.partition.serving_tp import (
    TpModel,
    TpPlan,
    best_tp_plan_and_bound,
)
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason


def tp_model(instance: PartitionInstance) -> TpModel:
    """The planner's settings from the instance: the allowed degrees, every type's intra-node
    bandwidth (``links.intra_node_bandwidth_bytes_per_s``, 0: the inter-node one) and the
    all-reduce latency."""
    plan = instance.workload.serving_plan
    assert plan is not None, "serving-plan instances only"
    links = instance.links
    bw = links.intra_node_bandwidth_bytes_per_s or links.inter_node_bandwidth_bytes_per_s
    types = {d.type for d in instance.devices}
    return TpModel(
        degrees=plan.tensor_parallel_sizes,
        intra_node_bytes_per_s=dict.fromkeys(types, bw) if bw > 0 else {},
        allreduce_latency_s=plan.allreduce_latency_s,
    )


def to_solution(plan: TpPlan) -> PartitionSolution:
    """The family's solution of a planner's plan."""
    return PartitionSolution(
        pipelines=tuple(
            tuple((tuple(s.devices), s.first_layer, s.layer_count) for s in stages)
            for stages in plan.pipelines
        )
    )


def exact_premises(instance: PartitionInstance) -> str | None:
    """Why the planner is not exact on the instance (None: it is). Its premises: the layers
    are ``embed, blocks, head`` with identical blocks (equal in everything but the name) and
    no type restriction; the devices of a type have equal memory and speed."""
    layers = instance.layers
    if len(layers) < 3:
        return "fewer than 3 layers (the planner needs embed, blocks, head)"
    ref = replace(layers[1], name="")
    for lay in layers[1:-1]:
        if replace(lay, name="") != ref:
            return f"layer {lay.name!r} differs from {layers[1].name!r} (blocks must be alike)"
    if any(lay.allowed_device_types for lay in layers):
        return "a layer restricts its device types"
    seen: dict[str, tuple[int, float]] = {}
    for dev in instance.devices:
        key = (dev.memory_bytes, dev.flops_per_s)
        if seen.setdefault(dev.type, key) != key:
            return f"devices of type {dev.type!r} differ in memory or speed"
    return None


def solve_plan(instance: PartitionInstance, ctx: ExactContext, source: str) -> ExactOutcome:
    """The exact plan and its proof where :func:`exact_premises` hold (module docstring)."""
    why = exact_premises(instance)
    model = tp_model(instance)
    replicas = instance.workload.serving_plan.replicas
    if why is None:
        try:
            plan, bound = best_tp_plan_and_bound(
                instance,
                model,
                single_pipeline=not replicas,
                stop=lambda: ctx.time_left() <= 0.1 or ctx.cancel.cancelled,
            )
        except ValueError as error:
            why = str(error)
        except TimeoutError:
            return ExactOutcome(
                StopReason.CANCELLED if ctx.cancel.cancelled else StopReason.TIME_LIMIT,
                bound=plan_quick_bound(instance),
                message="serving plan: the exact planner was stopped (deadline or cancel) "
                "before its proof; greedy plans and the quick bound only",
            )
    if why is not None:
        return ExactOutcome(
            StopReason.HEURISTIC_ONLY,
            bound=plan_quick_bound(instance),
            message=f"serving plan: no exact planner here ({why}); greedy plans only",
        )
    what = "plans of disjoint pipelines" if replicas else "one-pipeline plans"
    degrees = ", ".join(str(t) for t in model.degrees)
    if not plan.pipelines:
        return ExactOutcome(
            StopReason.PROVEN,
            proven_infeasible=True,
            message=f"serving plan: no pipeline fits (every stage shape, degrees {degrees})",
        )
    solution = to_solution(plan)
    ctx.report(solution, source, bound)
    return ExactOutcome(
        StopReason.PROVEN,
        bound=bound,
        proven_optimal=True,
        proven_solution=solution,
        message=(
            f"serving plan: optimum over all {what} of the plan model (docs/formulations/"
            f"partition.md, 9b: stages of one node's GPUs, degrees {degrees}), by enumerating "
            "every multiset of stage shapes per pipeline and a DP over the GPUs left "
            "(models/partition/serving_tp.py); bound to a relative 1e-11"
        ),
    )


def plan_quick_bound(instance: PartitionInstance) -> float:
    """Tokens/s no plan exceeds: a stage of ``t`` GPUs over layers ``R`` takes at least
    ``sum_R tau_l / t`` (``tau_l`` the layer's least time on any device), so a pipeline of
    rate ``r`` has ``r x sum_R tau_l <= B x t`` on every stage; summing over its stages and
    then over pipelines, the plan serves at most ``B x GPUs / sum_l tau_l``."""
    n_dev = len(instance.devices)
    least = sum(
        min(layer_time_ns(instance, lay, d) for d in range(n_dev))
        for lay in range(len(instance.layers))
    )
    if least <= 0:
        return float("inf")
    return instance.workload.batch_size * n_dev * 1e9 / least


# --- greedy plans ----------------------------------------------------------------------------


class _Prefix:
    """Prefix sums for single-GPU stages: per device the layer times (ns), and the bytes a
    layer needs besides its sequences' share, and per sequence."""

    def __init__(self, instance: PartitionInstance) -> None:
        self.instance = instance
        w = instance.workload
        n = len(instance.layers)
        self.time: dict[int, list[int]] = {}
        self.fixed = [0.0] * (n + 1)
        self.per_seq = [0.0] * (n + 1)
        for i, lay in enumerate(instance.layers):
            self.fixed[i + 1] = self.fixed[i] + lay.extra_memory_bytes + lay.param_bytes
            self.per_seq[i + 1] = self.per_seq[i] + (
                lay.kv_cache_bytes_per_token * w.context_length + lay.activation_bytes
            )
        inter = instance.links.inter_node_bandwidth_bytes_per_s
        self.hop = [
            w.batch_size * lay.activation_bytes / inter if inter else 0.0 for lay in instance.layers
        ]

    def times(self, d: int) -> list[int]:
        if d not in self.time:
            out = [0]
            for lay in range(len(self.instance.layers)):
                out.append(out[-1] + layer_time_ns(self.instance, lay, d))
            self.time[d] = out
        return self.time[d]

    def seconds(self, d: int, a: int, b: int) -> float:
        """Layers ``a .. b - 1`` on device ``d`` alone (the checker's formula, degree 1)."""
        pre = self.times(d)
        out = (pre[b] - pre[a]) / 1e9
        if a > 0:
            out += self.hop[a - 1]
        if b < len(self.instance.layers):
            out += self.hop[b - 1]
        return out


def _fill(pre: _Prefix, devices: list[int], tau: float) -> tuple[PlanStage, ...] | None:
    """Stages of single GPUs ``devices`` in order, each taking the most layers within ``tau``
    seconds and its memory (counted for ``len(devices)`` stages, which bounds the memory of
    the fewer stages used); None when the layers do not fit."""
    instance = pre.instance
    n = len(instance.layers)
    seqs = instance.workload.batch_size * len(devices)
    stages: list[PlanStage] = []
    at = 0
    for d in devices:
        if at == n:
            break
        cap = instance.devices[d].memory_bytes
        times = pre.times(d)
        best = 0
        for b in range(at + 1, n + 1):
            need = pre.fixed[b] - pre.fixed[at] + (pre.per_seq[b] - pre.per_seq[at]) * seqs
            if need > cap or (times[b] - times[at]) / 1e9 > tau:
                break
            if pre.seconds(d, at, b) <= tau:
                best = b - at
        if best == 0:
            return None
        stages.append(((d,), at, best))
        at += best
    return tuple(stages) if at == n else None


def _pipeline(
    pre: _Prefix, devices: list[int], fewest: bool = False
) -> tuple[float, tuple[PlanStage, ...]] | None:
    """The best pipeline :func:`_fill` finds on the first ``p`` of ``devices`` for any ``p``
    (``fewest``: the smallest ``p`` that fits): (tokens/s, stages); None if none fits."""
    instance = pre.instance
    n = len(instance.layers)
    batch = instance.workload.batch_size
    whole = 2.0 * max(pre.seconds(d, 0, n) for d in devices) + 2.0 * sum(pre.hop) + 1e-9
    best: tuple[float, tuple[PlanStage, ...]] | None = None
    for p in range(1, min(len(devices), n) + 1):
        use = devices[:p]
        hi = whole
        found = _fill(pre, use, hi)
        if found is None:
            continue
        lo = 0.0
        for _ in range(40):
            mid = (lo + hi) / 2
            got = _fill(pre, use, mid)
            if got is None:
                lo = mid
            else:
                hi, found = mid, got
        slowest = max(plan_stage_seconds(instance, s[0], s[1], s[2]) for s in found)
        rate = batch / slowest
        if best is None or rate > best[0]:
            best = (rate, found)
        if fewest:
            break
    return best


def _order(instance: PartitionInstance, devices: list[int]) -> list[int]:
    """Largest memory first, then fastest (least time over the whole model)."""
    n = len(instance.layers)
    return sorted(
        devices,
        key=lambda d: (
            -instance.devices[d].memory_bytes,
            sum(layer_time_ns(instance, lay, d) for lay in range(n)),
            d,
        ),
    )


def _whole_model_groups(instance: PartitionInstance) -> tuple[tuple[PlanStage, ...], ...]:
    """One-stage pipelines holding the whole model on ``t`` GPUs of a node, ``t`` the largest
    allowed degree dividing the node's GPU count, every such group that fits its memory
    (without replicas: the fastest one)."""
    plan = instance.workload.serving_plan
    n = len(instance.layers)
    nodes: dict[str, list[int]] = {}
    for d, dev in enumerate(instance.devices):
        nodes.setdefault(dev.node or f"\0{dev.name}", []).append(d)
    out: list[tuple[float, tuple[PlanStage, ...]]] = []
    for devs in nodes.values():
        if len({instance.devices[d].type for d in devs}) > 1:
            continue
        t = max(k for k in (1, *plan.tensor_parallel_sizes) if len(devs) % k == 0)
        if t not in plan.tensor_parallel_sizes:
            continue
        for g in range(0, len(devs), t):
            group = tuple(devs[g : g + t])
            need = plan_stage_bytes(instance, t, 0, n, 1)
            if all(need <= instance.devices[d].memory_bytes for d in group):
                seconds = plan_stage_seconds(instance, group, 0, n)
                out.append((seconds, ((group, 0, n),)))
    out.sort(key=lambda x: x[0])
    if not plan.replicas:
        out = out[:1]
    return tuple(stages for _, stages in out)


def greedy_plans(instance: PartitionInstance) -> list[tuple[str, PartitionSolution]]:
    """Named greedy plans (module docstring): ``plan-tensor-parallel`` (whole-model stages of
    the largest degree each node allows), then of single-GPU stages ``plan-one-pipeline``;
    with replicas, ``plan-per-type`` (separate pipelines per GPU type) and
    ``plan-replicas`` (pipelines of the fewest GPUs that fit, one after another)."""
    out: list[tuple[str, PartitionSolution]] = []
    whole = _whole_model_groups(instance)
    if whole:
        out.append(("plan-tensor-parallel", PartitionSolution(pipelines=whole)))
    pre = _Prefix(instance)
    every = _order(instance, list(range(len(instance.devices))))
    one = _pipeline(pre, every)
    if one is not None:
        out.append(("plan-one-pipeline", PartitionSolution(pipelines=(one[1],))))
    if not instance.workload.serving_plan.replicas:
        return out
    per_type = []
    for kind in sorted({d.type for d in instance.devices}):
        found = _pipeline(pre, [d for d in every if instance.devices[d].type == kind])
        if found is not None:
            per_type.append(found[1])
    if per_type:
        out.append(("plan-per-type", PartitionSolution(pipelines=tuple(per_type))))
    left = list(every)
    replicas = []
    while left:
        found = _pipeline(pre, left, fewest=True)
        if found is None:
            break
        replicas.append(found[1])
        used = {d for devs, _, _ in found[1] for d in devs}
        left = [d for d in left if d not in used]
    if replicas:
        out.append(("plan-replicas", PartitionSolution(pipelines=tuple(replicas))))
    return out
