"""The rows ``placement solve``'s summary shows of a sharding plan, from its JSON form."""

from __future__ import annotations

from typing import Any

from placement.solver.text import natural_key

GIB = 1024**3


def summarize(section: dict[str, Any]) -> tuple[str, list[str]]:
    """Per device (by name): its cost, communication and HBM use; then the tables per
    sharding type."""
    shards_on: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for plan in section.get("plans", []):
        kind = str(plan.get("sharding_type", "?")).lower()
        kinds[kind] = kinds.get(kind, 0) + 1
        for s in plan.get("shards", []):
            shards_on[s.get("device", "?")] = shards_on.get(s.get("device", "?"), 0) + 1
    devices = sorted(section.get("devices", []), key=lambda d: natural_key(d.get("device", "?")))
    width = max((len(d.get("device", "?")) for d in devices), default=0)
    rows = []
    for d in devices:
        name = d.get("device", "?")
        used, cap = int(d.get("hbm_bytes", 0)), int(d.get("hbm_capacity_bytes", 0)) or 1
        rows.append(
            f"{name:<{width}}  cost {d.get('cost_ms', 0.0):.3f} ms (comm "
            f"{d.get('comm_ms', 0.0):.3f}), {shards_on.get(name, 0)} shard(s), HBM "
            f"{used / GIB:.2f} of {cap / GIB:.2f} GiB ({100 * used / cap:.0f}%)"
        )
    if kinds:
        rows.append("tables: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    return "devices", rows
