"""A start solution (an earlier partition, by names) adapted to the instance being solved.

A partition must place every layer, so the start is completed rather than cut: each layer of
the start keeps its device if the layer and the device still exist; every other layer (new,
or its device gone) joins the stage of the nearest kept layer before it in pipeline order (or
after it, at the front), which keeps the stages contiguous. The checker then judges memory
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
    # Fill the gaps: forward from the first kept layer, then the front from it.
    last = -1
    for i, d in enumerate(device_of):
        if d >= 0:
            last = d
        elif last >= 0:
            device_of[i] = last
    first = next(d for d in device_of if d >= 0)
    device_of = [first if d < 0 else d for d in device_of]
    note = f"{added} layer(s) joined a neighbouring stage" if added else ""
    return StartAdaptation(
        PartitionSolution(tuple(device_of)), len(msg.assignments), kept, dropped, note
    )
