"""Why no plan exists: a table that fits no device under any of its sharding types.

For each table, the least HBM any of its options needs on one device (table-wise: the whole
table; column-wise: one column shard; row-wise: the largest row block over every device;
table-row-wise: over one host; data-parallel: a replica) against the largest device: what
table, which type came closest, on which device, short by how many bytes. Plans serve every
table, so a feasible solution has nothing to explain.
"""

from __future__ import annotations

from typing import Any

from placement.models.sharding.cost_model import Option, options
from placement.models.sharding.instance import ShardingInstance

GIB = 1024**3


def _deficit(instance: ShardingInstance, option: Option) -> tuple[int, int]:
    """(bytes short, device): the device the option overflows most (a free shard: the
    device of most room)."""
    hbm = [d.hbm_bytes for d in instance.devices]
    if option.fixed is not None:
        d = max(option.fixed, key=lambda k: option.fixed[k][1] - hbm[k])  # type: ignore[index]
        return option.fixed[d][1] - hbm[d], d
    d = max(range(len(hbm)), key=lambda k: hbm[k])
    return option.free_hbm - hbm[d], d


def _fits(instance: ShardingInstance, option: Option) -> bool:
    hbm = [d.hbm_bytes for d in instance.devices]
    if option.fixed is not None:
        return all(h <= hbm[d] for d, (_, h) in option.fixed.items())
    room = sum(min(option.free, hbm[d] // max(1, option.free_hbm)) for d in range(len(hbm)))
    return room >= option.free


def explain_infeasible(instance: ShardingInstance) -> list[dict[str, Any]]:
    """One reason (``name``, ``kind``, ``message``, ``needed_bytes``, ``device``,
    ``available_bytes``, ``short_bytes``) per table that no option fits; empty when every
    table fits alone (the tables may still not fit together: the exact encodings decide)."""
    out: list[dict[str, Any]] = []
    for t, table in enumerate(instance.tables):
        opts = options(instance, t)
        if not opts:
            out.append(
                {
                    "name": table.name,
                    "kind": "no_sharding_type",
                    "message": f"table {table.name!r}: none of its allowed sharding types "
                    f"({', '.join(table.allowed)}) applies on {instance.world_size} device(s)",
                }
            )
            continue
        if any(_fits(instance, o) for o in opts):
            continue
        deficits = [_deficit(instance, o) for o in opts]
        k = min(range(len(opts)), key=lambda i: deficits[i][0])
        best, (short, device) = opts[k], deficits[k]
        need = instance.devices[device].hbm_bytes + short
        out.append(
            {
                "name": table.name,
                "kind": "too_large",
                "message": (
                    f"table {table.name!r} ({table.rows} rows x {table.dim}, "
                    f"{table.bytes / GIB:.2f} GiB) fits no device even {best.kind.replace('_', '-')}"
                    f" sharded: it needs {need} bytes ({need / GIB:.2f} GiB) on device "
                    f"{instance.devices[device].name!r}, which has "
                    f"{instance.devices[device].hbm_bytes} "
                    f"({instance.devices[device].hbm_bytes / GIB:.2f} GiB): short by {short} "
                    f"bytes ({short / GIB:.2f} GiB)"
                ),
                "needed_bytes": need,
                "device": instance.devices[device].name,
                "available_bytes": instance.devices[device].hbm_bytes,
                "short_bytes": short,
            }
        )
    return out
