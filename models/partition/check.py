"""Independent checker of model partitions: feasibility and the objective, from first principles.

It imports no encoding, no DP and no heuristic: it walks the solution layer by layer with
plain integers, using only the cost model's definitions in :mod:`.cost_model`
(:func:`~.cost_model.layer_time_ns`, :func:`~.cost_model.edge_time_ns`) and
:meth:`~.instance.PartitionInstance.layer_memory_bytes`. The solution's message
(:func:`solution_to_message`) is written here too, as in every family.

Rules (docs/formulations/partition.md, "The checker"):

1. every layer is placed exactly once, on a device of the instance;
2. the memory a device's layers need is at most its ``memory_bytes``;
3. layers of one colocation group share a device;
4. contiguity (``workload.contiguity``): ORDER, the forward layers of each device form one
   contiguous range of the layer order; CONVEX (Tarnawski et al.), each device's forward
   layers are convex in the forward graph and contracting them leaves an acyclic graph (the
   sets are the differences of a chain of ideals); NONE, any sets. Backward layers are
   outside the rule (their colocation groups bind them);
5. serving: at most ``in_flight_microbatches`` devices are used (one micro-batch per stage);
6. a layer with ``allowed_device_types`` runs only on those types.

EDGE_SPLIT_QUANTIZED (QPART's split and bit-widths) is checked and scored by
:mod:`.edge_split_check`: the objective is ``request_cost`` (minimised).

LLM_SERVING_FLOW (Helix's model) is checked and scored by :mod:`.serving_flow` instead: each
range's device exists and holds one range, ``1 <= count <=`` its type's limit, the range lies
inside the layer order; the objective is ``tokens_per_s``, the max flow (maximised).

Serving plans (LLM_SERVING with ``workload.serving_plan``) by :func:`check_plan`: devices
used once, a stage's devices one type on one node with an allowed degree dividing the node's
GPU count, each pipeline's ranges tiling the layers in order, memory per GPU; the objective
is ``tokens_per_s``, the sum over pipelines of ``batch_size`` / the slowest stage (maximised).

Objective (milliseconds, minimised; the nanosecond sums are exact):

* training and serving: ``step_time_ms``, the largest device load, where a device's load is
  the time of its layers plus its transfers: per edge (default), every edge with exactly one
  end on it (sent or received); per tensor via host (Tarnawski et al.), once per layer output
  it sends to other devices and once per layer output it receives from another device, host
  devices paying none; serving adds ``tokens_per_s`` = batch_size / step time;
* inference: ``latency_ms``, the time of every layer plus every transfer once.
"""

from __future__ import annotations

from typing import Any

from placement.models.partition.cost_model import NS_PER_MS, edge_time_ns, layer_time_ns
from placement.models.partition.edge_split_check import OBJECTIVE, check_edge_split
from placement.models.partition.instance import (
    Mode,
    PartitionContiguity,
    PartitionInstance,
    PartitionSolution,
    PartitionTransferAccounting,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import partition_pb2 as pb


def objective_name(instance: PartitionInstance) -> str:
    """The primary objective's name for the instance's mode."""
    if instance.workload.edge_split:
        return OBJECTIVE
    if instance.workload.flow or instance.workload.plan:
        return "tokens_per_s"
    return "latency_ms" if instance.workload.mode is Mode.INFERENCE else "step_time_ms"


def _terms(instance: PartitionInstance, objective_ns: int | None) -> dict[str, float]:
    value = float("inf") if objective_ns is None else objective_ns / NS_PER_MS
    terms = {objective_name(instance): value}
    if instance.workload.mode is Mode.SERVING:
        ok = objective_ns is not None and objective_ns > 0
        terms["tokens_per_s"] = instance.workload.batch_size * 1e9 / objective_ns if ok else 0.0
    return terms


def senses(instance: PartitionInstance) -> tuple[str, ...]:
    """The sense of each term."""
    if instance.workload.edge_split:
        return ("min",)
    if instance.workload.flow or instance.workload.plan:
        return ("max",)
    return ("min", "max") if instance.workload.mode is Mode.SERVING else ("min",)


def objective_ns(instance: PartitionInstance, device_of: tuple[int, ...]) -> int:
    """The objective in nanoseconds of a complete assignment (no feasibility check)."""
    n_dev = len(instance.devices)
    load = [0] * n_dev
    total = 0
    for layer, d in enumerate(device_of):
        t = layer_time_ns(instance, layer, d)
        load[d] += t
        total += t
    if instance.workload.transfer_accounting is PartitionTransferAccounting.PER_TENSOR_VIA_HOST:
        # One charge per layer output to its device and to each distinct consumer device.
        consumers: dict[int, set[int]] = {}
        for e in instance.graph_edges:
            consumers.setdefault(e.src, set()).add(device_of[e.dst])
        tau = instance.tensor_times_ns
        for u, where in consumers.items():
            a = device_of[u]
            others = where - {a}
            if not others or not tau[u]:
                continue
            for d in (a, *others):
                if not instance.devices[d].host:
                    load[d] += tau[u]
                    total += tau[u]
    else:
        for e in instance.graph_edges:
            a, b = device_of[e.src], device_of[e.dst]
            if a != b:
                t = edge_time_ns(instance, e, a, b)
                load[a] += t
                load[b] += t
                total += t
    if instance.workload.mode.bottleneck:
        return max(load)
    return total


def check(instance: PartitionInstance, solution: PartitionSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the objective."""
    sense = senses(instance)
    if not isinstance(solution, PartitionSolution):
        return CheckReport(
            False,
            [f"not a PartitionSolution: {type(solution).__name__}"],
            _terms(instance, None),
            sense,
        )
    if instance.workload.flow:
        return check_flow(instance, solution)
    if instance.workload.plan:
        return check_plan(instance, solution)
    if instance.workload.edge_split:
        return check_edge_split(instance, solution)
    violations: list[str] = []
    layers, devices = instance.layers, instance.devices
    if solution.ranges:
        violations.append(
            f"{len(solution.ranges)} layer ranges: only LLM_SERVING_FLOW solutions give ranges"
        )
    if solution.pipelines:
        violations.append(
            f"{len(solution.pipelines)} pipelines: only serving-plan solutions "
            "(workload.serving_plan) give pipelines"
        )
    device_of = tuple(solution.device_of)
    if len(device_of) != len(layers):
        violations.append(f"{len(device_of)} layer assignments for {len(layers)} layers")
        return CheckReport(False, violations, _terms(instance, None), sense)
    for layer, d in enumerate(device_of):
        if not (isinstance(d, int) and 0 <= d < len(devices)):
            violations.append(f"layer {layers[layer].name!r} is not placed on a device ({d!r})")
    if violations:
        return CheckReport(False, violations, _terms(instance, None), sense)

    used = [0] * len(devices)
    for layer, d in enumerate(device_of):
        used[d] += instance.layer_memory_bytes(layer)
    for d, dev in enumerate(devices):
        if used[d] > dev.memory_bytes:
            violations.append(
                f"device {dev.name!r}: layers need {used[d]} bytes, it has {dev.memory_bytes} "
                f"({used[d] - dev.memory_bytes} bytes over)"
            )

    group_device: dict[str, int] = {}
    for layer, d in enumerate(device_of):
        group = layers[layer].colocation_group
        if not group:
            continue
        first = group_device.setdefault(group, d)
        if first != d:
            violations.append(
                f"colocation group {group!r}: layer {layers[layer].name!r} on "
                f"{devices[d].name!r}, an earlier member on {devices[first].name!r}"
            )

    for layer, d in enumerate(device_of):
        lay = layers[layer]
        if not lay.allowed_on(devices[d].type):
            violations.append(
                f"layer {lay.name!r} on {devices[d].name!r} of type {devices[d].type!r}; it "
                f"runs only on {', '.join(lay.allowed_device_types)}"
            )

    rule = instance.workload.contiguity
    if rule is PartitionContiguity.CONVEX:
        violations += convexity_violations(instance, device_of)
    if rule is PartitionContiguity.ORDER:
        seen_ranges: dict[int, int] = {}
        previous = -1
        for layer, d in enumerate(device_of):
            if layers[layer].backward:
                continue
            if d != previous:
                seen_ranges[d] = seen_ranges.get(d, 0) + 1
                if seen_ranges[d] == 2:
                    violations.append(
                        f"device {devices[d].name!r} holds more than one contiguous range of "
                        f"layers (again from layer {layers[layer].name!r})"
                    )
            previous = d

    limit = instance.workload.max_stages
    if limit is not None and len(set(device_of)) > limit:
        violations.append(
            f"{len(set(device_of))} stages, at most in_flight_microbatches = {limit} "
            "(a serving pipeline needs a micro-batch per stage)"
        )

    value = objective_ns(instance, device_of)
    return CheckReport(not violations, violations, _terms(instance, value), sense)


def convexity_violations(instance: PartitionInstance, device_of: tuple[int, ...]) -> list[str]:
    """Tarnawski et al.'s contiguity over the forward graph (layers not ``backward``, edges
    between them): each device's set is convex (no path leaves it and comes back), and the
    graph of devices (an arc d -> d' for every edge from d to d') is acyclic, so the sets
    are the differences of a chain of ideals. Returns one message per violation found."""
    layers, devices = instance.layers, instance.devices
    succ: dict[int, list[int]] = {}
    for e in instance.graph_edges:
        if not layers[e.src].backward and not layers[e.dst].backward:
            succ.setdefault(e.src, []).append(e.dst)
    out: list[str] = []
    members: dict[int, list[int]] = {}
    for layer, d in enumerate(device_of):
        if not layers[layer].backward:
            members.setdefault(d, []).append(layer)
    for d, mine in members.items():
        # Layers reachable from the set through a layer on another device.
        stack = [w for u in mine for w in succ.get(u, ()) if device_of[w] != d]
        seen = set(stack)
        while stack:
            w = stack.pop()
            for x in succ.get(w, ()):
                if device_of[x] == d:
                    out.append(
                        f"device {devices[d].name!r}: its layers are not convex (a path leaves "
                        f"them through layer {layers[w].name!r} and comes back to layer "
                        f"{layers[x].name!r})"
                    )
                    stack = []
                    break
                if x not in seen:
                    seen.add(x)
                    stack.append(x)
    if out:
        return out
    arcs: dict[int, set[int]] = {d: set() for d in members}
    for u, ws in succ.items():
        for w in ws:
            if device_of[u] != device_of[w]:
                arcs[device_of[u]].add(device_of[w])
    indegree = dict.fromkeys(arcs, 0)
    for targets in arcs.values():
        for t in targets:
            indegree[t] += 1
    ready = [d for d, k in indegree.items() if k == 0]
    done = 0
    while ready:
        d = ready.pop()
        done += 1
        for t in arcs[d]:
            indegree[t] -= 1
            if indegree[t] == 0:
                ready.append(t)
    if done < len(arcs):
        cycle = sorted(devices[d].name for d, k in indegree.items() if k > 0)
        out.append(
            f"devices {', '.join(repr(c) for c in cycle)} depend on each other in a cycle: the "
            "forward layers of the devices must be the differences of a chain of ideals"
        )
    return out


def check_flow(instance: PartitionInstance, solution: PartitionSolution) -> CheckReport:
    """LLM_SERVING_FLOW: check the ranges and score their max flow (tokens/s, maximised) with
    the one evaluator, :func:`.serving_flow.score_placement`."""
    # imported here: the flow evaluator loads networkx, which the other modes never need
    from placement.models.partition.serving_cluster import cluster_of
    from placement.models.partition.serving_flow import score_placement

    violations: list[str] = []
    if solution.device_of:
        violations.append(
            f"{len(solution.device_of)} layer assignments: an LLM_SERVING_FLOW solution gives "
            "ranges (device, first layer, layer count)"
        )
    n = len(instance.devices)
    placement: dict[int, tuple[int, int]] = {}
    for device, first, count in solution.ranges:
        if not (isinstance(device, int) and 0 <= device < n):
            violations.append(f"range on device {device!r}: not a device of the instance")
        elif device in placement:
            violations.append(
                f"device {instance.devices[device].name!r} holds more than one layer range"
            )
        else:
            placement[device] = (int(first), int(count))
    if violations:
        return CheckReport(False, violations, {"tokens_per_s": 0.0}, ("max",))
    cluster = cluster_of(instance)
    score = score_placement(cluster, placement, cluster.partial)
    return CheckReport(
        score.feasible, list(score.errors), {"tokens_per_s": score.tokens_per_s}, ("max",)
    )


# --- serving plans ------------------------------------------------------------------------


def plan_allreduces(instance: PartitionInstance, layer: int) -> int:
    """All-reduces a tensor-parallel stage does per decode step for ``layer``: two for a
    transformer block (a layer with KV cache: attention, then the MLP), one for any other
    layer (the embedding's vocabulary-parallel lookup, the head's logits)."""
    return 2 if instance.layers[layer].kv_cache_bytes_per_token > 0 else 1


def plan_stage_seconds(
    instance: PartitionInstance, devices: tuple[int, ...], first: int, count: int
) -> float:
    """Seconds one micro-batch's decode step takes on a plan stage (docs/formulations/
    partition.md, "Serving plans"): its layers' time on its GPU type split ``t`` ways, the
    all-reduces when ``t > 1``, and the activations received from the stage before and sent
    to the stage after at the inter-node bandwidth."""
    w = instance.workload
    t = len(devices)
    batch = w.batch_size
    inter = instance.links.inter_node_bandwidth_bytes_per_s
    intra = instance.links.intra_node_bandwidth_bytes_per_s or inter
    latency = w.serving_plan.allreduce_latency_s if w.serving_plan is not None else 0.0
    compute_ns = 0
    comm = 0.0
    for layer in range(first, first + count):
        compute_ns += layer_time_ns(instance, layer, devices[0])
        if t > 1:
            ring = 2.0 * (t - 1) / t * batch * instance.layers[layer].activation_bytes
            comm += plan_allreduces(instance, layer) * (latency + ring / intra)
    seconds = compute_ns / 1e9 / t + comm
    if first > 0:
        seconds += batch * instance.layers[first - 1].activation_bytes / inter
    if first + count < len(instance.layers):
        seconds += batch * instance.layers[first + count - 1].activation_bytes / inter
    return seconds


def plan_stage_bytes(
    instance: PartitionInstance, t: int, first: int, count: int, stages: int
) -> float:
    """Bytes on each of a stage's ``t`` GPUs in a pipeline of ``stages`` stages: weights and
    KV cache split ``t`` ways, activations and fixed memory whole, for the ``stages`` micro-
    batches of ``batch_size`` sequences the pipeline keeps in flight."""
    w = instance.workload
    sequences = w.batch_size * stages
    need = 0.0
    for layer in range(first, first + count):
        lay = instance.layers[layer]
        kv = lay.kv_cache_bytes_per_token * w.context_length * sequences
        need += lay.extra_memory_bytes + lay.activation_bytes * sequences
        need += (lay.param_bytes + kv) / t
    return need


def check_plan(instance: PartitionInstance, solution: PartitionSolution) -> CheckReport:
    """A serving plan: every rule of docs/formulations/partition.md, "Serving plans", and its
    tokens/s (the sum over pipelines of ``batch_size`` over the slowest stage's seconds).

    Written from the formulation, apart from :mod:`.serving_tp` (whose planner it checks)."""
    violations: list[str] = []
    if solution.device_of or solution.ranges:
        violations.append(
            "layer assignments or ranges given: a serving plan's solution gives pipelines"
        )
    plan = instance.workload.serving_plan
    assert plan is not None, "check_plan is for serving-plan instances"
    if not solution.pipelines:
        violations.append("no pipeline: a plan serves the model at least once")
    if len(solution.pipelines) > 1 and not plan.replicas:
        violations.append(
            f"{len(solution.pipelines)} pipelines; serving_plan.replicas is false (one pipeline)"
        )
    devices, layers = instance.devices, instance.layers
    node_size: dict[str, int] = {}
    for dev in devices:
        if dev.node:
            node_size[dev.node] = node_size.get(dev.node, 0) + 1
    owner: dict[int, str] = {}
    total = 0.0
    for p, stages in enumerate(solution.pipelines):
        where = f"pipeline {p + 1}"
        if not stages:
            violations.append(f"{where}: no stages")
            continue
        expect = 0
        slowest = 0.0
        broken = False
        for s, (devs, first, count) in enumerate(stages):
            at = f"{where}, stage {s + 1}"
            bad = [d for d in devs if not (isinstance(d, int) and 0 <= d < len(devices))]
            if not devs or bad:
                violations.append(f"{at}: devices {list(devs)!r} are not devices of the instance")
                broken = True
                continue
            for d in devs:
                if d in owner:
                    violations.append(
                        f"{at}: device {devices[d].name!r} is used twice (also in {owner[d]})"
                    )
                    broken = True
                owner[d] = at
            t = len(devs)
            names = ", ".join(repr(devices[d].name) for d in devs)
            if len({devices[d].type for d in devs}) > 1:
                violations.append(f"{at}: devices {names} are of different types")
                broken = True
            node = devices[devs[0]].node
            if t > 1 and (not node or any(devices[d].node != node for d in devs)):
                violations.append(f"{at}: devices {names} are not all on one node")
                broken = True
            on_node = node_size.get(node, 1) if node else 1
            if t not in plan.tensor_parallel_sizes or on_node % t:
                violations.append(
                    f"{at}: tensor-parallel degree {t}; allowed "
                    f"{list(plan.tensor_parallel_sizes)} dividing its node's {on_node} GPU(s)"
                )
                broken = True
            if count < 1 or first != expect:
                gap = "a gap" if first > expect else "an overlap"
                violations.append(
                    f"{at}: layers from {first} ({count} layer(s)), expected layer {expect} on: "
                    f"{gap if first != expect else 'no layers'}"
                )
                broken = True
                if count < 1:
                    continue
            if first < 0 or first + count > len(layers):
                violations.append(
                    f"{at}: layers {first}..{first + count - 1} outside 0..{len(layers) - 1}"
                )
                broken = True
                continue
            expect = first + count
            bad_type = [
                layers[i].name
                for i in range(first, first + count)
                if not layers[i].allowed_on(devices[devs[0]].type)
            ]
            if bad_type:
                violations.append(
                    f"{at}: layer {bad_type[0]!r} may not run on type {devices[devs[0]].type!r}"
                )
                broken = True
            need = plan_stage_bytes(instance, t, first, count, len(stages))
            for d in devs:
                if need > devices[d].memory_bytes:
                    violations.append(
                        f"{at}: device {devices[d].name!r} needs {need:.0f} bytes, it has "
                        f"{devices[d].memory_bytes} ({need - devices[d].memory_bytes:.0f} over)"
                    )
                    broken = True
            slowest = max(slowest, plan_stage_seconds(instance, devs, first, count))
        if expect != len(layers):
            violations.append(
                f"{where}: its stages end at layer {expect}, the model has {len(layers)} layers"
            )
            broken = True
        if not broken and slowest > 0:
            total += instance.workload.batch_size / slowest
    feasible = not violations
    return CheckReport(feasible, violations, {"tokens_per_s": total if feasible else 0.0}, ("max",))


def solution_to_message(
    instance: PartitionInstance,
    solution: PartitionSolution,
) -> Any:
    """The ``placement.v1.PartitionSolution`` message of a solution."""
    msg = pb.PartitionSolution()
    if solution.edge_split is not None:
        msg.edge_split.device_layers = solution.edge_split.device_layers
        msg.edge_split.bits.extend(solution.edge_split.bits)
    n_dev = len(instance.devices)
    for stages in solution.pipelines:
        pipe = msg.pipelines.add()
        for devs, first, count in stages:
            pipe.stages.add(
                devices=[instance.devices[d].name for d in devs if 0 <= d < n_dev],
                first_layer=first,
                layer_count=count,
            )
    for device, first, count in solution.ranges:
        if 0 <= device < len(instance.devices):
            msg.ranges.add(
                device=instance.devices[device].name, first_layer=first, layer_count=count
            )
    for layer, device in enumerate(solution.device_of):
        if 0 <= device < len(instance.devices):
            msg.assignments.add(
                layer=instance.layers[layer].name, device=instance.devices[device].name
            )
    return msg
