"""Typed instance and solution of the embedding-table sharding family, and their
``placement.v1`` messages.

An instance is a set of embedding tables (rows, dimension, bytes per element, pooling factor),
a per-device batch size, devices grouped in hosts (HBM bytes and bandwidth), and the constants
of the cost model (:class:`CostConstants`, TorchRec's planner constants by default). A solution
gives every table a sharding type and its shards: device, rows and columns of each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from placement.solver.errors import Shown, ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, register_ranges
from placement.solver.schema.v1 import sharding_pb2 as pb

TABLE_WISE = "table_wise"
ROW_WISE = "row_wise"
COLUMN_WISE = "column_wise"
TABLE_ROW_WISE = "table_row_wise"
DATA_PARALLEL = "data_parallel"
SHARDING_TYPES = (TABLE_WISE, ROW_WISE, COLUMN_WISE, TABLE_ROW_WISE, DATA_PARALLEL)
"""The sharding types, in the order of the proto's enum (value = index + 1)."""

# TorchRec's planner constants (torchrec/distributed/planner/constants.py, torchrec 1.9.2).
GIB = 1024**3
HBM_MEM_BW = 897 * GIB / 1000  # bytes/ms
INTRA_NODE_BANDWIDTH = 600 * GIB / 1000  # bytes/ms
CROSS_NODE_BANDWIDTH = 12.5 * GIB / 1000  # bytes/ms
BIGINT_DTYPE = 8
BATCH_SIZE = 512
BWD_COMPUTE_MULTIPLIER = 2.0
BATCHED_COPY_PERF_FACTOR = 2.455
DP_ELEMENTWISE_KERNELS_PERF_FACTOR = 9.22
MIN_CW_DIM = 128

MAX_ROWS = 2**40
MAX_DIM = 2**16
MAX_BYTES = 2**50
MAX_BANDWIDTH = 1e15
MAX_BATCH = 1_000_000

RANGES = register_ranges(
    {
        "ShardingTable.rows": FieldRange(1, MAX_ROWS, integer=True, unit="rows"),
        "ShardingTable.dim": FieldRange(1, MAX_DIM, integer=True, unit="columns"),
        "ShardingTable.bytes_per_element": FieldRange(0, 8, integer=True, unit="bytes, 0 = 4"),
        "ShardingTable.pooling_factor": FieldRange(0, 1e6, lo_open=True, unit="lookups/sample"),
        "ShardingTable.access_skew": FieldRange(0, 1, unit="share of lookups"),
        "ShardingDevice.hbm_bytes": FieldRange(1, MAX_BYTES, integer=True, unit="bytes"),
        "ShardingDevice.hbm_bandwidth_bytes_per_ms": FieldRange(
            0, MAX_BANDWIDTH, unit="bytes/ms, 0 = 897 GiB/s"
        ),
        "ShardingInstance.batch_size": FieldRange(
            0, MAX_BATCH, integer=True, unit="samples/device"
        ),
        "ShardingCostModel.intra_host_bandwidth_bytes_per_ms": FieldRange(0, MAX_BANDWIDTH),
        "ShardingCostModel.cross_host_bandwidth_bytes_per_ms": FieldRange(0, MAX_BANDWIDTH),
        "ShardingCostModel.input_bytes": FieldRange(0, 16, unit="bytes"),
        "ShardingCostModel.comm_bytes": FieldRange(0, 16, unit="bytes"),
        "ShardingCostModel.bwd_compute_multiplier": FieldRange(0, 100),
        "ShardingCostModel.batched_copy_factor": FieldRange(0, 100),
        "ShardingCostModel.dp_elementwise_factor": FieldRange(0, 1000),
        "ShardingCostModel.optimizer_multiplier": FieldRange(0, 100),
        "ShardingCostModel.min_column_shard_dim": FieldRange(0, MAX_DIM, integer=True),
    }
)
"""The documented range of every numeric field (0 means TorchRec's default where the proto
says so)."""


@dataclass(frozen=True)
class Table:
    """An embedding table (an EmbeddingBag: pooled lookups)."""

    name: str
    rows: int
    dim: int
    pooling_factor: float
    bytes_per_element: int = 4
    access_skew: float = 0.0
    allowed: tuple[str, ...] = SHARDING_TYPES
    """The sharding types this table may use."""

    @property
    def bytes(self) -> int:
        """The table's weights, bytes."""
        return self.rows * self.dim * self.bytes_per_element


@dataclass(frozen=True)
class Device:
    """An accelerator in a host."""

    name: str
    host: str
    hbm_bytes: int
    hbm_bandwidth_bytes_per_ms: float = HBM_MEM_BW


@dataclass(frozen=True)
class CostConstants:
    """The cost model's constants (TorchRec's defaults; see the proto for each)."""

    intra_host_bandwidth_bytes_per_ms: float = INTRA_NODE_BANDWIDTH
    cross_host_bandwidth_bytes_per_ms: float = CROSS_NODE_BANDWIDTH
    input_bytes: float = BIGINT_DTYPE
    comm_bytes: float = 0.0
    """0: the table's bytes per element."""
    bwd_compute_multiplier: float = BWD_COMPUTE_MULTIPLIER
    batched_copy_factor: float = BATCHED_COPY_PERF_FACTOR
    dp_elementwise_factor: float = DP_ELEMENTWISE_KERNELS_PERF_FACTOR
    optimizer_multiplier: float = 0.0
    min_column_shard_dim: int = MIN_CW_DIM


@dataclass(eq=False)
class ShardingInstance:
    """Tables, devices (grouped in hosts), the batch size and the cost model's constants."""

    family_name = "sharding"

    tables: list[Table]
    devices: list[Device]
    batch_size: int = BATCH_SIZE
    cost: CostConstants = field(default_factory=CostConstants)
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)

    @cached_property
    def table_index(self) -> dict[str, int]:
        return {t.name: i for i, t in enumerate(self.tables)}

    @cached_property
    def device_index(self) -> dict[str, int]:
        return {d.name: i for i, d in enumerate(self.devices)}

    @cached_property
    def hosts(self) -> list[list[int]]:
        """Device indices per host, hosts in order of first appearance."""
        order: dict[str, list[int]] = {}
        for k, d in enumerate(self.devices):
            order.setdefault(d.host, []).append(k)
        return list(order.values())

    @property
    def world_size(self) -> int:
        """Number of devices (TorchRec's world size)."""
        return len(self.devices)

    @property
    def local_world_size(self) -> int:
        """Devices per host (every host holds the same number)."""
        return len(self.hosts[0]) if self.devices else 1


@dataclass(frozen=True)
class Shard:
    """A block of a table on a device: rows ``[row_offset, row_offset + rows)`` and columns
    ``[col_offset, col_offset + cols)``."""

    device: int
    row_offset: int
    rows: int
    col_offset: int
    cols: int


@dataclass(frozen=True)
class TablePlan:
    """A table's sharding type and its shards."""

    sharding_type: str
    shards: tuple[Shard, ...]


@dataclass(frozen=True)
class ShardingSolution:
    """One plan per table, in the instance's table order (None: the table has no plan)."""

    plans: tuple[TablePlan | None, ...] = ()


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

P = "sharding"
MIN_BANDWIDTH = 1e3
"""Bytes per ms below which a bandwidth is refused (1 MB/s; 0 means TorchRec's default)."""
BANDWIDTH_EXPECTED = "0 (the default) or a number in [1000, 1e15] (bytes/ms)"
MAX_COST_MS = 1e9
"""Largest cost of one table's shards (ms, about 11.6 days): the integer ns sums of the
checker and the encodings stay far inside int64."""


MAX_SHARD_BYTES = 2**52
"""Largest HBM one table's shard may need (weights, optimizer state, buffers)."""


def hbm_ceiling(table: Table, devices: list[Device], batch: int, c: CostConstants) -> float:
    """An upper bound on the HBM bytes any shard of ``table`` needs."""
    W = len(devices)
    b = float(batch)
    a = c.comm_bytes or table.bytes_per_element
    buffers = b * table.pooling_factor * W * c.input_bytes + b * W * table.dim * a
    return table.bytes * (1 + c.optimizer_multiplier) + buffers + 2


def cost_ceiling_ms(table: Table, devices: list[Device], batch: int, c: CostConstants) -> float:
    """An upper bound (ms) on what any shard of ``table`` costs under the cost model (every
    term of every sharding type at its largest: the whole global batch, the slowest link)."""
    W = len(devices)
    b, p = float(batch), table.pooling_factor
    e = float(table.bytes_per_element)
    a = c.comm_bytes or e
    slow = min(d.hbm_bandwidth_bytes_per_ms for d in devices) / 2  # the dense kernel's half
    link = min(c.intra_host_bandwidth_bytes_per_ms, c.cross_host_bandwidth_bytes_per_ms)
    moved = b * p * W * (c.input_bytes + max(table.dim, 32) * e) + 2 * b * W * table.dim * a
    compute = moved * 1.75 * (1 + c.bwd_compute_multiplier) / slow
    comms = 4 * b * W * table.dim * a * (1 / link + c.batched_copy_factor / slow)
    replica = table.bytes * (4 / link + c.dp_elementwise_factor / slow)
    return compute + comms + replica + 1.0


def _or(value: float, default: float) -> float:
    return float(value) if value else float(default)


def instance_from_message(msg: Any, name: str = "", description: str = "") -> ShardingInstance:
    """Build and validate a :class:`ShardingInstance` from a ``ShardingInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    check_ranges(msg, RANGES, P, v)
    v.require(len(msg.devices) > 0, f"{P}.devices", [], "at least one device")
    v.require(len(msg.tables) > 0, f"{P}.tables", [], "at least one table")
    devices: list[Device] = []
    names: dict[str, int] = {}
    for k, d in enumerate(msg.devices):
        path = f"{P}.devices[{k}]"
        v.unique_name(f"{path}.name", d.name, names, "device")
        names.setdefault(d.name, k)
        v.require(bool(d.host), f"{path}.host", d.host, "the name of the device's host")
        hbm = d.hbm_bytes if RANGES["ShardingDevice.hbm_bytes"].contains(d.hbm_bytes) else 1
        bw = d.hbm_bandwidth_bytes_per_ms
        bw = bw if RANGES["ShardingDevice.hbm_bandwidth_bytes_per_ms"].contains(bw) else 0
        devices.append(Device(d.name, d.host, int(hbm), _or(bw, HBM_MEM_BW)))
    per_host: dict[str, int] = {}
    for d in devices:
        per_host[d.host] = per_host.get(d.host, 0) + 1
    if len(set(per_host.values())) > 1:
        v.add(
            f"{P}.devices",
            Shown(", ".join(f"{h}: {n} devices" for h, n in per_host.items())),
            "every host holding the same number of devices (TorchRec's local world size)",
        )
    c = msg.cost_model
    ranges_ok = {
        f: RANGES[f"ShardingCostModel.{f}"].contains(getattr(c, f))
        for f in (
            "intra_host_bandwidth_bytes_per_ms",
            "cross_host_bandwidth_bytes_per_ms",
            "input_bytes",
            "comm_bytes",
            "bwd_compute_multiplier",
            "batched_copy_factor",
            "dp_elementwise_factor",
            "optimizer_multiplier",
            "min_column_shard_dim",
        )
    }

    def val(f: str, default: float) -> float:
        return _or(getattr(c, f), default) if ranges_ok[f] else float(default)

    cost = CostConstants(
        intra_host_bandwidth_bytes_per_ms=val(
            "intra_host_bandwidth_bytes_per_ms", INTRA_NODE_BANDWIDTH
        ),
        cross_host_bandwidth_bytes_per_ms=val(
            "cross_host_bandwidth_bytes_per_ms", CROSS_NODE_BANDWIDTH
        ),
        input_bytes=val("input_bytes", BIGINT_DTYPE),
        comm_bytes=float(c.comm_bytes) if ranges_ok["comm_bytes"] else 0.0,
        bwd_compute_multiplier=val("bwd_compute_multiplier", BWD_COMPUTE_MULTIPLIER),
        batched_copy_factor=val("batched_copy_factor", BATCHED_COPY_PERF_FACTOR),
        dp_elementwise_factor=val("dp_elementwise_factor", DP_ELEMENTWISE_KERNELS_PERF_FACTOR),
        optimizer_multiplier=float(c.optimizer_multiplier)
        if ranges_ok["optimizer_multiplier"]
        else 0.0,
        min_column_shard_dim=int(val("min_column_shard_dim", MIN_CW_DIM)),
    )
    tables: list[Table] = []
    table_names: set[str] = set()
    for i, t in enumerate(msg.tables):
        path = f"{P}.tables[{i}]"
        v.unique_name(f"{path}.name", t.name, table_names, "table")
        table_names.add(t.name)
        rows = t.rows if RANGES["ShardingTable.rows"].contains(t.rows) else 1
        dim = t.dim if RANGES["ShardingTable.dim"].contains(t.dim) else 1
        bpe = t.bytes_per_element
        if RANGES["ShardingTable.bytes_per_element"].contains(bpe):
            v.require(bpe in (0, 1, 2, 4, 8), f"{path}.bytes_per_element", bpe, "0, 1, 2, 4 or 8")
        bpe = bpe if bpe in (1, 2, 4, 8) else 4
        pooling = t.pooling_factor
        pooling = pooling if RANGES["ShardingTable.pooling_factor"].contains(pooling) else 1.0
        skew = t.access_skew if RANGES["ShardingTable.access_skew"].contains(t.access_skew) else 0
        allowed: list[str] = []
        for j, value in enumerate(t.allowed):
            if v.require(
                1 <= int(value) <= len(SHARDING_TYPES),
                f"{path}.allowed[{j}]",
                int(value),
                "TABLE_WISE, ROW_WISE, COLUMN_WISE, TABLE_ROW_WISE or DATA_PARALLEL",
            ):
                kind = SHARDING_TYPES[int(value) - 1]
                if kind not in allowed:
                    allowed.append(kind)
        tables.append(
            Table(
                t.name,
                int(rows),
                int(dim),
                float(pooling),
                int(bpe),
                float(skew),
                tuple(k for k in SHARDING_TYPES if k in allowed) if allowed else SHARDING_TYPES,
            )
        )
    batch = msg.batch_size if RANGES["ShardingInstance.batch_size"].contains(msg.batch_size) else 0
    for k, d in enumerate(msg.devices):
        bw = d.hbm_bandwidth_bytes_per_ms
        if (
            RANGES["ShardingDevice.hbm_bandwidth_bytes_per_ms"].contains(bw)
            and 0 < bw < MIN_BANDWIDTH
        ):
            v.add(f"{P}.devices[{k}].hbm_bandwidth_bytes_per_ms", bw, BANDWIDTH_EXPECTED)
    for f in ("intra_host_bandwidth_bytes_per_ms", "cross_host_bandwidth_bytes_per_ms"):
        bw = getattr(c, f)
        if ranges_ok[f] and 0 < bw < MIN_BANDWIDTH:
            v.add(f"{P}.cost_model.{f}", bw, BANDWIDTH_EXPECTED)
    if not v.errors and devices:
        total = 0.0
        for i, t in enumerate(tables):
            ceiling = cost_ceiling_ms(t, devices, int(batch) or BATCH_SIZE, cost)
            total += ceiling
            if (
                ceiling > MAX_COST_MS
                or hbm_ceiling(t, devices, int(batch) or BATCH_SIZE, cost) > MAX_SHARD_BYTES
            ):
                v.add(
                    f"{P}.tables[{i}]",
                    Shown(f"a table of {t.rows} x {t.dim}, pooling {t.pooling_factor:g}"),
                    f"a table whose shards cost less than {MAX_COST_MS:g} ms and need less "
                    f"than {MAX_SHARD_BYTES} bytes under the cost model (rows, dim, pooling, "
                    "batch size and bandwidths too large together: the sums would leave 64-bit "
                    "integers)",
                )
                break
        else:
            if total > MAX_COST_MS:
                v.add(
                    f"{P}.tables",
                    Shown(f"{len(tables)} tables"),
                    f"tables whose shards cost less than {MAX_COST_MS:g} ms together under "
                    "the cost model",
                )
    v.raise_if_any()
    return ShardingInstance(
        tables,
        devices,
        int(batch) or BATCH_SIZE,
        cost,
        name,
        description,
        validated=True,
    )


def instance_to_message(instance: ShardingInstance) -> Any:
    """The ``placement.v1.ShardingInstance`` message of an instance (defaults written out)."""
    msg = pb.ShardingInstance(batch_size=instance.batch_size)
    for t in instance.tables:
        m = msg.tables.add(
            name=t.name,
            rows=t.rows,
            dim=t.dim,
            bytes_per_element=t.bytes_per_element,
            pooling_factor=t.pooling_factor,
            access_skew=t.access_skew,
        )
        if tuple(t.allowed) != SHARDING_TYPES:
            m.allowed.extend(SHARDING_TYPES.index(k) + 1 for k in t.allowed)
    for d in instance.devices:
        msg.devices.add(
            name=d.name,
            host=d.host,
            hbm_bytes=d.hbm_bytes,
            hbm_bandwidth_bytes_per_ms=d.hbm_bandwidth_bytes_per_ms,
        )
    c = instance.cost
    msg.cost_model.CopyFrom(
        pb.ShardingCostModel(
            intra_host_bandwidth_bytes_per_ms=c.intra_host_bandwidth_bytes_per_ms,
            cross_host_bandwidth_bytes_per_ms=c.cross_host_bandwidth_bytes_per_ms,
            input_bytes=c.input_bytes,
            comm_bytes=c.comm_bytes,
            bwd_compute_multiplier=c.bwd_compute_multiplier,
            batched_copy_factor=c.batched_copy_factor,
            dp_elementwise_factor=c.dp_elementwise_factor,
            optimizer_multiplier=c.optimizer_multiplier,
            min_column_shard_dim=c.min_column_shard_dim,
        )
    )
    return msg


def solution_from_message(instance: ShardingInstance, msg: Any) -> ShardingSolution:
    """A :class:`ShardingSolution` from a ``ShardingSolution`` message.

    Names must exist in the instance (InputError otherwise); a table without a plan, or a plan
    that does not cover its table, is the checker's business.
    """
    v = ValidationCollector()
    plans: list[TablePlan | None] = [None] * len(instance.tables)
    for i, p in enumerate(msg.plans):
        path = f"{P}.plans[{i}]"
        table = instance.table_index.get(p.table)
        ok = v.require(table is not None, f"{path}.table", p.table, "the name of a table")
        kind_ok = v.require(
            1 <= int(p.sharding_type) <= len(SHARDING_TYPES),
            f"{path}.sharding_type",
            int(p.sharding_type),
            "TABLE_WISE, ROW_WISE, COLUMN_WISE, TABLE_ROW_WISE or DATA_PARALLEL",
        )
        shards = []
        for j, s in enumerate(p.shards):
            device = instance.device_index.get(s.device)
            if v.require(
                device is not None, f"{path}.shards[{j}].device", s.device, "a device's name"
            ):
                shards.append(
                    Shard(
                        int(device), int(s.row_offset), int(s.rows), int(s.col_offset), int(s.cols)
                    )
                )  # type: ignore[arg-type]
        if ok and kind_ok and table is not None:
            v.require(plans[table] is None, f"{path}.table", p.table, "one plan per table")
            plans[table] = TablePlan(SHARDING_TYPES[int(p.sharding_type) - 1], tuple(shards))
    v.raise_if_any()
    return ShardingSolution(tuple(plans))


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedShardingSolution:
    """A :class:`ShardingSolution` by name: ``sharding_type["t3"] == "row_wise"`` and
    ``devices["t3"]`` the device of each shard, in shard order."""

    sharding_type: dict[str, str]
    devices: dict[str, tuple[str, ...]]


def named_solution(instance: ShardingInstance, solution: ShardingSolution) -> NamedShardingSolution:
    """The plan of each table keyed by its name."""
    kinds: dict[str, str] = {}
    devices: dict[str, tuple[str, ...]] = {}
    for table, plan in zip(instance.tables, solution.plans, strict=False):
        if plan is None:
            continue
        kinds[table.name] = plan.sharding_type
        devices[table.name] = tuple(instance.devices[s.device].name for s in plan.shards)
    return NamedShardingSolution(kinds, devices)
