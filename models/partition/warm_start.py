"""A start solution (an earlier partition, by names) adapted to the instance being solved.

A partition must place every layer, so the start is completed rather than cut: each layer of
the start keeps its device if the layer and the device still exist; each run of other layers (new,
or their device gone) becomes a stage on a device the start leaves free, or joins the stage
before it when none is, which keeps the stages contiguous. The checker then judges memory
and the other rules.
"""

from __future__ import annotations

from typing import Any

from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.solver.family import StartAdaptation


def adapt_start(instance: PartitionInstance, msg: Any) -> StartAdaptation:
    """What of a ``placement.v1.PartitionSolution`` the instance admits (see the module)."""
    device_of = [-1] * len(instance.layers)
    dropped: list[tuple[str, str]] = []
    for a in msg.assignments:
        name = a.layer
        layer = instance.layer_index.get(name)
        if layer is None:
            dropped.append((name, f"layer {name!r} no longer in the instance"))
            continue
        if device_of[layer] >= 0:
            dropped.append((name, f"layer {name!r} assigned twice in the start"))
            continue
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
