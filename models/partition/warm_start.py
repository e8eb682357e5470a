"""A start solution (an earlier partition, by names) adapted to the instance being solved.

A partition must place every layer, so the start is completed rather than cut: each layer of
the start keeps its device if the layer and the device still exist; each run of other layers (new,
or their device gone) becomes a stage on a device the start leaves free, or joins the stage
before it when none is, which keeps the stages contiguous. The checker then judges memory
and the other rules.

In LLM_SERVING_FLOW mode a solution is a set of layer ranges, one per device, and any subset
of them is a placement, so the start is cut rather than completed: a range is kept where its
device still exists and it still fits the layers and the device type's layer limit.

A serving plan (``workload.serving_plan``) is a set of pipelines, and any subset of them is a
plan, so it is cut too: a pipeline is kept whole where its devices still exist, its stages
tile the layers and no kept pipeline uses its devices (the checker judges the rest).
"""

from __future__ import annotations

from typing import Any

from placement.models.partition.edge_split import EdgeSplitChoice
from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.solver.family import StartAdaptation, known_pieces


def adapt_start(instance: PartitionInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.PartitionSolution`` the instance admits (see the module)."""
    if instance.workload.edge_split:
        # QPART's plan is one piece, kept whole (the checker judges it against the request)
        if not msg.HasField("edge_split"):
            return StartAdaptation(None, 0, 0, [], "no edge_split in the start")
        choice = EdgeSplitChoice(msg.edge_split.device_layers, tuple(msg.edge_split.bits))
        return StartAdaptation(PartitionSolution(edge_split=choice), 1, 1)
    if instance.workload.flow:
        return _adapt_ranges(instance, msg)
    if instance.workload.plan:
        return _adapt_pipelines(instance, msg)
    device_of = [-1] * len(instance.layers)
    dropped: list[tuple[str, str]] = []
    for a, name, layer in known_pieces(
        msg.assignments, lambda a: a.layer, instance.layer_index, "layer", "assigned twice", dropped
    ):
        device = instance.device_index.get(a.device)
        if device is None:
            dropped.append((name, f"layer {name!r}: device {a.device!r} gone"))
            continue
        device_of[layer] = device
    kept = sum(d >= 0 for d in device_of)
    added = len(device_of) - kept
    if kept == 0:
        return StartAdaptation(None, len(msg.assignments), 0, dropped, "no layer kept")
    # Each run of layers without a device (a stage whose device is gone, new layers) becomes
    # a stage of its own on a device the start leaves free, the largest memory first; when
    # none is left it joins the stage before it (or after it, at the front).
    free = sorted(
        set(range(len(instance.devices))) - set(device_of),
        key=lambda d: (-instance.devices[d].memory_bytes, d),
    )
    i = 0
    while i < len(device_of):
        if device_of[i] >= 0:
            i += 1
            continue
        end = i
        while end < len(device_of) and device_of[end] < 0:
            end += 1
        neighbour = device_of[i - 1] if i > 0 else device_of[end]
        fill = free.pop(0) if free else neighbour
        device_of[i:end] = [fill] * (end - i)
        i = end
    note = f"{added} layer(s) placed anew" if added else ""
    return StartAdaptation(
        PartitionSolution(tuple(device_of)), len(msg.assignments), kept, dropped, note
    )


def _adapt_ranges(instance: PartitionInstance, msg: Any) -> StartAdaptation:
    """LLM_SERVING_FLOW: the start's ranges that still fit, by device name."""
    limits = {t.type: t.max_layers for t in instance.serving_flow.device_types}
    ranges: list[tuple[int, int, int]] = []
    dropped: list[tuple[str, str]] = []
    for r in msg.ranges:
        device = instance.device_index.get(r.device)
        if device is None:
            dropped.append((r.device, f"device {r.device!r} gone"))
            continue
        if any(d == device for d, _, _ in ranges):
            dropped.append((r.device, f"device {r.device!r} holds two ranges in the start"))
            continue
        limit = limits.get(instance.devices[device].type, 0)
        end = r.first_layer + r.layer_count
        if r.layer_count < 1 or r.layer_count > limit or end > len(instance.layers):
            dropped.append(
                (
                    r.device,
                    f"device {r.device!r}: layers {r.first_layer}..{end - 1} no longer fit "
                    f"({len(instance.layers)} layers, at most {limit} on this device)",
                )
            )
            continue
        ranges.append((device, int(r.first_layer), int(r.layer_count)))
    if not ranges:
        return StartAdaptation(None, len(msg.ranges), 0, dropped, "no range kept")
    return StartAdaptation(
        PartitionSolution((), tuple(ranges)), len(msg.ranges), len(ranges), dropped, ""
    )


def _adapt_pipelines(instance: PartitionInstance, msg: Any) -> StartAdaptation:
    """Serving plans: the start's pipelines that still apply, by device name."""
    pipelines = []
    dropped: list[tuple[str, str]] = []
    taken: set[int] = set()
    n = len(instance.layers)
    for p, pipe in enumerate(msg.pipelines):
        label = f"pipeline {p + 1}"
        stages = []
        at = 0
        why = ""
        for st in pipe.stages:
            devs = [instance.device_index.get(name) for name in st.devices]
            gone = [name for name, d in zip(st.devices, devs, strict=True) if d is None]
            if gone:
                why = f"device {gone[0]!r} gone"
                break
            if taken & set(devs):
                why = "a device already used by a kept pipeline"
                break
            if st.first_layer != at or st.layer_count < 1:
                why = f"stage at layer {st.first_layer}, expected {at}"
                break
            stages.append((tuple(int(d) for d in devs), at, int(st.layer_count)))
            at += st.layer_count
        if not why and at != n:
            why = f"its stages end at layer {at}, the model has {n} layers"
        if why or not stages:
            dropped.append((label, f"{label}: {why or 'no stages'}"))
            continue
        taken |= {d for devs, _, _ in stages for d in devs}
        pipelines.append(tuple(stages))
    if not pipelines:
        return StartAdaptation(None, len(msg.pipelines), 0, dropped, "no pipeline kept")
    if not instance.workload.serving_plan.replicas:
        dropped += [
            (f"pipeline {k + 2}", "one pipeline allowed") for k in range(len(pipelines) - 1)
        ]
        pipelines = pipelines[:1]
    return StartAdaptation(
        PartitionSolution(pipelines=tuple(pipelines)),
        len(msg.pipelines),
        len(pipelines),
        dropped,
        "",
    )
