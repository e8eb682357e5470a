"""Why a model does not fit, and a cheap lower bound on the objective.

:func:`explain_infeasible` lists shortfalls (with ``name``, ``kind`` and ``message`` like every
family's unplaced work, plus the bytes needed, available and missing), most specific first: a
layer larger than every device; a colocation group (with, for contiguous splits, every layer
between its members) larger than every device; the whole model larger than all devices
together; and otherwise the longest prefix of layers a contiguous split can hold, and what is
left over.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.partition.dp import try_dp
from placement.models.partition.instance import PartitionInstance
from placement.models.partition.tables import build_tables


def _gib(nbytes: int) -> str:
    return f"{nbytes / 2**30:.2f} GiB"


def explain_infeasible(instance: PartitionInstance) -> list[dict[str, Any]]:
    """Shortfalls that keep ``instance`` from having any feasible split (empty if none found)."""
    layers = instance.layers
    mem = [instance.layer_memory_bytes(i) for i in range(len(layers))]
    biggest = max(d.memory_bytes for d in instance.devices)
    biggest_name = max(instance.devices, key=lambda d: d.memory_bytes).name
    total_capacity = sum(d.memory_bytes for d in instance.devices)
    out: list[dict[str, Any]] = []
    for i, m in enumerate(mem):
        if m > biggest:
            out.append(
                dict(
                    kind="layer",
                    name=layers[i].name,
                    needed_bytes=m,
                    available_bytes=biggest,
                    missing_bytes=m - biggest,
                    message=f"layer {layers[i].name!r} needs {_gib(m)}, the largest device "
                    f"({biggest_name}) has {_gib(biggest)}: {_gib(m - biggest)} missing",
                )
            )
    groups: dict[str, list[int]] = {}
    for i, lay in enumerate(layers):
        if lay.colocation_group:
            groups.setdefault(lay.colocation_group, []).append(i)
    for name, members in groups.items():
        span = range(min(members), max(members) + 1) if instance.workload.contiguous else members
        need = sum(mem[i] for i in span)
        if need > biggest and not any(mem[i] > biggest for i in members):
            out.append(
                dict(
                    kind="colocation_group",
                    name=name,
                    needed_bytes=need,
                    available_bytes=biggest,
                    missing_bytes=need - biggest,
                    message=f"colocation group {name!r} (layers {layers[span[0]].name}.."
                    f"{layers[span[-1]].name}) needs {_gib(need)} on one device, the largest "
                    f"has {_gib(biggest)}",
                )
            )
    need_all = sum(mem)
    if need_all > total_capacity:
        out.append(
            dict(
                kind="model",
                name=f"{layers[0].name}..{layers[-1].name}",
                needed_bytes=need_all,
                available_bytes=total_capacity,
                missing_bytes=need_all - total_capacity,
                message=f"the model needs {_gib(need_all)} under this workload, the "
                f"{len(instance.devices)} devices have {_gib(total_capacity)} together: "
                f"{_gib(need_all - total_capacity)} missing",
            )
        )
    if out or not instance.workload.contiguous:
        return out
    result = try_dp(instance)
    if result is not None:
        limit = instance.workload.max_stages
        if result.solution is None and result.min_stages is not None and limit is not None:
            out.append(
                dict(
                    kind="stages",
                    name=f"{layers[0].name}..{layers[-1].name}",
                    needed_bytes=need_all,
                    available_bytes=0,
                    missing_bytes=0,
                    message=f"the model needs at least {result.min_stages} stages (devices), "
                    f"in_flight_microbatches = {limit} allows {limit}: a serving pipeline "
                    "needs a micro-batch in flight per stage",
                )
            )
        elif result.solution is None and result.max_prefix < len(layers):
            p = result.max_prefix
            rest = sum(mem[p:])
            left = total_capacity - sum(mem[:p])
            out.append(
                dict(
                    kind="contiguous_split",
                    name=f"{layers[p].name}..{layers[-1].name}",
                    needed_bytes=rest,
                    available_bytes=max(0, left),
                    missing_bytes=max(0, rest - left),
                    message=f"contiguous stages hold at most layers {layers[0].name}.."
                    f"{layers[p - 1].name if p else '(none)'}; layers {layers[p].name}.."
                    f"{layers[-1].name} ({_gib(rest)}) are left over: the devices' memory "
                    "is fragmented by the layer sizes",
                )
            )
    return out


def quick_bound_ns(instance: PartitionInstance) -> int:
    """A cheap lower bound on the objective (ns): transfers ignored, every layer on its
    fastest device; for the bottleneck modes also the total spread over all devices."""
    t = build_tables(instance)
    fastest = t.time_ns.min(axis=0) if t.time_ns.size else np.zeros(0, dtype=np.int64)
    total = int(fastest.sum())
    if not instance.workload.mode.bottleneck:
        return total
    per_layer = int(fastest.max(initial=0))
    spread = -(-total // len(instance.devices))
    return max(per_layer, spread)
