"""Independent checker of sharding plans.

It imports no encoding and no heuristic: from each plan's shards it checks the rules and
recomputes every figure with :mod:`.cost_model` (TorchRec's formulas, integer ns per shard).

Rules: every table has one plan of a type it may use; every shard is on a device of the
instance and inside its table; the shards of a table cover each of its cells exactly once
(a data-parallel plan: one full replica on every device); the layout is the type's
(table-wise: one shard; column-wise: full-row shards of ``min_column_shard_dim`` columns, or
one of the whole table when it is no wider;
row-wise: one full-column shard on every device; table-row-wise: one full-column shard on
every device of one host); each device's shards fit its HBM.

Objective tiers (both minimised): ``max_device_cost_ns``, the largest sum of shard costs on
a device (the step's bottleneck), then ``total_comm_ns``, the communication of every shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from placement.models.sharding.cost_model import (
    NS_PER_MS,
    column_shards,
    offered,
    shard_hbm,
    shard_perf,
)
from placement.models.sharding.instance import (
    COLUMN_WISE,
    DATA_PARALLEL,
    ROW_WISE,
    SHARDING_TYPES,
    TABLE_ROW_WISE,
    TABLE_WISE,
    Shard,
    ShardingInstance,
    ShardingSolution,
    Table,
)
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import sharding_pb2 as pb

TIERS = ("max_device_cost_ns", "total_comm_ns")
SENSES = ("min", "min")


@dataclass
class DeviceLoad:
    """A device's sums under a plan."""

    cost_ns: int = 0
    comm_ns: int = 0
    hbm_bytes: int = 0


def _infeasible(violations: list[str]) -> CheckReport:
    return CheckReport(False, violations, {t: float("inf") for t in TIERS}, SENSES)


def _layout_errors(
    instance: ShardingInstance, table: Table, kind: str, shards: tuple[Shard, ...]
) -> list[str]:
    """What is wrong with the shards of ``table`` under ``kind`` (empty: nothing)."""
    n_dev = instance.world_size
    out: list[str] = []
    name = table.name
    for s in shards:
        if not (isinstance(s.device, int) and 0 <= s.device < n_dev):
            return [f"table {name!r}: a shard on device {s.device!r}, which the instance lacks"]
        if (
            s.rows < 0
            or s.cols <= 0
            or s.row_offset < 0
            or s.col_offset < 0
            or s.row_offset + s.rows > table.rows
            or s.col_offset + s.cols > table.dim
        ):
            return [
                f"table {name!r}: shard rows [{s.row_offset}, +{s.rows}) x cols "
                f"[{s.col_offset}, +{s.cols}) is not inside its {table.rows} x {table.dim}"
            ]
    full = all(s.row_offset == 0 and s.rows == table.rows for s in shards)
    full_cols = all(s.col_offset == 0 and s.cols == table.dim for s in shards)
    devices = [s.device for s in shards]
    if kind == DATA_PARALLEL:
        if not (full and full_cols and sorted(devices) == list(range(n_dev))):
            out.append(f"table {name!r}: data-parallel needs one full replica on every device")
        return out
    if kind == TABLE_WISE and len(shards) != 1:
        out.append(f"table {name!r}: table-wise has one shard, not {len(shards)}")
    if kind == COLUMN_WISE:
        k = column_shards(instance, table)
        if len(shards) != k or not full or any(s.cols != table.dim // max(k, 1) for s in shards):
            out.append(
                f"table {name!r}: column-wise needs {k} full-row shard(s) of "
                f"{table.dim // max(k, 1)} columns"
            )
    if kind == ROW_WISE and (not full_cols or sorted(devices) != list(range(n_dev))):
        out.append(f"table {name!r}: row-wise needs one full-column shard on every device")
    if kind == TABLE_ROW_WISE:
        hosts = [sorted(h) for h in instance.hosts]
        if not full_cols or sorted(devices) not in hosts:
            out.append(
                f"table {name!r}: table-row-wise needs one full-column shard on every device "
                "of one host"
            )
    # Exact cover: inside (above), pairwise disjoint, and the areas add up.
    area = sum(s.rows * s.cols for s in shards)
    if area != table.rows * table.dim:
        out.append(f"table {name!r}: its shards cover {area} of its {table.rows * table.dim} cells")
    ordered = sorted(shards, key=lambda s: (s.row_offset, s.col_offset))
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if b.row_offset >= a.row_offset + a.rows:
                break
            if (
                a.rows
                and b.rows
                and (a.col_offset < b.col_offset + b.cols and b.col_offset < a.col_offset + a.cols)
            ):
                out.append(f"table {name!r}: two of its shards overlap")
                return out
    return out


def device_loads(instance: ShardingInstance, solution: ShardingSolution) -> list[DeviceLoad]:
    """Every device's cost, communication and HBM under ``solution`` (plans assumed valid)."""
    loads = [DeviceLoad() for _ in instance.devices]
    for table, plan in zip(instance.tables, solution.plans, strict=True):
        if plan is None:
            continue
        for s in plan.shards:
            perf = shard_perf(instance, table, plan.sharding_type, s.cols, s.device)
            load = loads[s.device]
            load.cost_ns += perf.cost_ns
            load.comm_ns += perf.comm_ns
            load.hbm_bytes += shard_hbm(instance, table, plan.sharding_type, s.rows, s.cols)
    return loads


def check(instance: ShardingInstance, solution: ShardingSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the tiers."""
    if not isinstance(solution, ShardingSolution):
        return _infeasible([f"not a ShardingSolution: {type(solution).__name__}"])
    if len(solution.plans) != len(instance.tables):
        return _infeasible([f"{len(solution.plans)} plans for {len(instance.tables)} tables"])
    violations: list[str] = []
    for table, plan in zip(instance.tables, solution.plans, strict=True):
        if plan is None:
            violations.append(f"table {table.name!r} has no plan")
            continue
        if plan.sharding_type not in SHARDING_TYPES:
            violations.append(f"table {table.name!r}: unknown type {plan.sharding_type!r}")
            continue
        if plan.sharding_type not in offered(instance, table):
            violations.append(
                f"table {table.name!r}: type {plan.sharding_type} is not allowed for it here"
            )
            continue
        violations.extend(_layout_errors(instance, table, plan.sharding_type, plan.shards))
    if violations:
        return _infeasible(violations)
    loads = device_loads(instance, solution)
    for device, load in zip(instance.devices, loads, strict=True):
        if load.hbm_bytes > device.hbm_bytes:
            violations.append(
                f"device {device.name!r}: HBM {load.hbm_bytes} bytes used of "
                f"{device.hbm_bytes} (over by {load.hbm_bytes - device.hbm_bytes})"
            )
    if violations:
        return _infeasible(violations)
    terms = {
        "max_device_cost_ns": float(max(load.cost_ns for load in loads)),
        "total_comm_ns": float(sum(load.comm_ns for load in loads)),
    }
    return CheckReport(True, [], terms, SENSES)


def solution_to_message(instance: ShardingInstance, solution: ShardingSolution) -> Any:
    """The ``placement.v1.ShardingSolution`` message, with the checker's per-shard and
    per-device figures."""
    msg = pb.ShardingSolution()
    for table, plan in zip(instance.tables, solution.plans, strict=False):
        if plan is None:
            continue
        m = msg.plans.add(
            table=table.name, sharding_type=SHARDING_TYPES.index(plan.sharding_type) + 1
        )
        for s in plan.shards:
            valid = 0 <= s.device < instance.world_size
            perf = (
                shard_perf(instance, table, plan.sharding_type, s.cols, s.device) if valid else None
            )
            m.shards.add(
                device=instance.devices[s.device].name if valid else str(s.device),
                row_offset=s.row_offset,
                rows=s.rows,
                col_offset=s.col_offset,
                cols=s.cols,
                cost_ms=perf.cost_ns / NS_PER_MS if perf else 0.0,
                comm_ms=perf.comm_ns / NS_PER_MS if perf else 0.0,
                hbm_bytes=shard_hbm(instance, table, plan.sharding_type, s.rows, s.cols),
            )
    if all(p is not None for p in solution.plans) and len(solution.plans) == len(instance.tables):
        ok = all(
            0 <= s.device < instance.world_size
            for p in solution.plans
            if p is not None
            for s in p.shards
        )
        if ok:
            for device, load in zip(
                instance.devices, device_loads(instance, solution), strict=True
            ):
                msg.devices.add(
                    device=device.name,
                    cost_ms=load.cost_ns / NS_PER_MS,
                    comm_ms=load.comm_ns / NS_PER_MS,
                    hbm_bytes=load.hbm_bytes,
                    hbm_capacity_bytes=device.hbm_bytes,
                )
    return msg
