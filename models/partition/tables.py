"""Numpy cost tables of an instance, shared by the DP, the heuristics and the exact encodings.

Built from the cost model's scalar definitions in :mod:`.instance` (the checker uses those
definitions directly and never these tables). A *stage* is a range ``[i, j)`` of the layer
order on one device; devices with the same type, memory and speed form a *class* and are
interchangeable.

For a range ``[i, j)`` (0 <= i < j <= n):

* time on class c: ``prefix_time[c][j] - prefix_time[c][i]``;
* memory: ``prefix_mem[j] - prefix_mem[i]``;
* transfers, with one bandwidth for every pair of devices: ``A[p]`` (:attr:`Tables.cross`)
  is the time of the edges crossing cut ``p`` (u < p <= v) and ``B(i, j)``
  (:meth:`Tables.over`) that of the edges passing over the whole range (u < i, v >= j). Then the edges with exactly one end inside cost
  ``A[i] + A[j] - 2 B(i, j)`` (bottleneck modes: sent and received both load the stage) and
  the edges entering it ``A[i] - B(i, j)`` (latency mode: each transfer counted once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from placement.models.partition.cost_model import layer_time_ns, seconds_to_ns
from placement.models.partition.instance import PartitionInstance

INF = np.int64(1) << np.int64(62)
"""Larger than any cost; marks a range that cannot be a stage."""
MAX_BAND_CELLS = 5_000_000
"""Stages one class may tabulate (ends x band width, ~0.5 s of DP); beyond this the DP does
not run (long chains on few devices: the greedies and the stage-path model take over)."""
MAX_DENSE_LAYERS = 4000
"""DAGs with more layers are not tabled densely (B(i, j) is an n x n table)."""


@dataclass
class DeviceClass:
    """Interchangeable devices: same type, memory and speed."""

    devices: list[int]
    """Indices of the devices of the class, in instance order."""
    memory_bytes: int
    representative: int
    """The first device of the class (whose times stand for all of them)."""


@dataclass
class Tables:
    """Per-class prefix sums, edge times and allowed cuts of one instance.

    ``bandwidth`` is the one bandwidth assumed between any two devices (see
    :func:`bandwidth_range`); with a single bandwidth in the instance the tables are exact.
    """

    instance: PartitionInstance
    classes: list[DeviceClass]
    time_ns: np.ndarray
    """time_ns[c, l]: layer l on class c."""
    prefix_time: np.ndarray
    """prefix_time[c, j] = sum of time_ns[c, :j]."""
    mem: np.ndarray
    """mem[l]: bytes layer l needs under the workload."""
    prefix_mem: np.ndarray
    """prefix_mem[j] = sum of mem[:j]."""
    edge_u: np.ndarray
    """Source layer of each edge of the model."""
    edge_v: np.ndarray
    """Destination layer of each edge."""
    edge_ns: np.ndarray
    """Transfer time of each edge between two distinct devices, at :attr:`bandwidth`."""
    cross: np.ndarray
    """cross[p] (``A[p]``): time of the edges with u < p <= v (p = 0..n)."""
    cut_ok: np.ndarray
    """cut_ok[p]: a stage may begin or end at p (no colocation group spans the cut)."""
    bottleneck: bool
    """The objective is the slowest stage (training, serving), not the sum (inference)."""
    bandwidth: float
    """Bytes/s assumed between any two devices."""
    overlap_comm: bool = False
    """PipeDream's cost model: a stage costs max(its compute, its incoming transfer) instead
    of their sum (used by the PipeDream-style planner only)."""
    _over: np.ndarray | None = field(default=None, repr=False)

    @property
    def n(self) -> int:
        """Number of layers."""
        return len(self.mem)

    def over(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """B(i, j): time of the edges passing over the whole range (u < i, v >= j); zero for
        a chain."""
        if self._over is None:
            return np.zeros(np.broadcast(i, j).shape, dtype=np.int64)
        return self._over[i, j]

    def stage_cost(self, c: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Cost of stage ``[i, j)`` on class ``c``: its load (bottleneck) or its share of the
        latency (its layers plus the transfers entering it)."""
        t = self.prefix_time[c][j] - self.prefix_time[c][i]
        b = self.over(i, j)
        if self.overlap_comm:
            return np.maximum(t, self.cross[i] - b)
        if self.bottleneck:
            return t + self.cross[i] + self.cross[j] - 2 * b
        return t + self.cross[i] - b


def device_classes(instance: PartitionInstance) -> list[DeviceClass]:
    """Devices grouped by (type, memory, speed), classes in order of first device."""
    groups: dict[tuple[str, int, float], list[int]] = {}
    for d, dev in enumerate(instance.devices):
        groups.setdefault((dev.type, dev.memory_bytes, dev.flops_per_s), []).append(d)
    return [DeviceClass(ds, instance.devices[ds[0]].memory_bytes, ds[0]) for ds in groups.values()]


def bandwidth_range(instance: PartitionInstance) -> tuple[float, float]:
    """(slowest, fastest) bandwidth between two distinct devices (equal when uniform)."""
    links = instance.links
    inter, intra = links.inter_node_bandwidth_bytes_per_s, links.intra_node_bandwidth_bytes_per_s
    nodes = [d.node for d in instance.devices]
    shared = any(n and nodes.count(n) > 1 for n in set(nodes))
    separate = len(instance.devices) > 1 and (any(not n for n in nodes) or len(set(nodes)) > 1)
    values = []
    if shared:
        values.append(intra if intra > 0 else inter)
    if separate or not values:
        values.append(inter)
    return min(values), max(values)


def comm_is_uniform(instance: PartitionInstance) -> bool:
    """True when every transfer costs the same between any two distinct devices."""
    slow, fast = bandwidth_range(instance)
    if slow == fast:
        return True
    return all(e.transfer_s > 0 or e.bytes == 0 for e in instance.graph_edges)


def build_tables(instance: PartitionInstance, bandwidth: float | None = None) -> Tables:
    """The tables, with ``bandwidth`` between any two devices (default: the slowest link)."""
    n = len(instance.layers)
    classes = device_classes(instance)
    time_ns = np.zeros((len(classes), n), dtype=np.int64)
    for c, cls in enumerate(classes):
        time_ns[c] = [layer_time_ns(instance, layer, cls.representative) for layer in range(n)]
    prefix_time = np.zeros((len(classes), n + 1), dtype=np.int64)
    np.cumsum(time_ns, axis=1, out=prefix_time[:, 1:])
    mem = np.array([instance.layer_memory_bytes(layer) for layer in range(n)], dtype=np.int64)
    prefix_mem = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(mem, out=prefix_mem[1:])

    bw = bandwidth_range(instance)[0] if bandwidth is None else bandwidth
    edges = instance.graph_edges
    edge_u = np.array([e.src for e in edges], dtype=np.int64)
    edge_v = np.array([e.dst for e in edges], dtype=np.int64)
    factor = instance.workload.comm_factor
    edge_ns = np.array(
        [
            seconds_to_ns(e.transfer_s)
            if e.transfer_s > 0
            else (seconds_to_ns(e.bytes * factor / bw) if e.bytes and bw > 0 else 0)
            for e in edges
        ],
        dtype=np.int64,
    )
    diff = np.zeros(n + 2, dtype=np.int64)
    np.add.at(diff, edge_u + 1, edge_ns)
    np.add.at(diff, edge_v + 1, -edge_ns)
    cross = np.cumsum(diff)[: n + 1]

    cut_ok = np.ones(n + 1, dtype=bool)
    spans: dict[str, list[int]] = {}
    for layer, lay in enumerate(instance.layers):
        if lay.colocation_group:
            spans.setdefault(lay.colocation_group, []).append(layer)
    for members in spans.values():
        lo, hi = min(members), max(members)
        cut_ok[lo + 1 : hi + 1] = False

    over = None
    chain_like = bool(np.all(edge_v == edge_u + 1)) if len(edges) else True
    if not chain_like:
        if n > MAX_DENSE_LAYERS:
            raise ValueError(f"DAG of {n} layers: more than {MAX_DENSE_LAYERS} to table densely")
        grid = np.zeros((n + 2, n + 2), dtype=np.int64)
        # Edge (u, v) counts in B(i, j) for i >= u + 1 and j <= v.
        np.add.at(grid, (edge_u + 1, edge_v), edge_ns)
        over = np.cumsum(grid, axis=0)  # sum over a <= i
        over = np.cumsum(over[:, ::-1], axis=1)[:, ::-1]  # sum over b >= j
        over = over[: n + 1, : n + 1]
    return Tables(
        instance=instance,
        classes=classes,
        time_ns=time_ns,
        prefix_time=prefix_time,
        mem=mem,
        prefix_mem=prefix_mem,
        edge_u=edge_u,
        edge_v=edge_v,
        edge_ns=edge_ns,
        cross=cross,
        cut_ok=cut_ok,
        bottleneck=instance.workload.mode.bottleneck,
        bandwidth=bw,
        _over=over,
    )


@dataclass
class Band:
    """The stages ``[i, j)`` one class may hold, laid out per end ``j`` (a band of width W).

    ``start[j, w] = j - 1 - w``; ``cost[j, w]`` is the stage cost, INF where the stage is not
    allowed (memory, a colocation cut, or a cost above the upper bound).
    """

    start: np.ndarray
    cost: np.ndarray


def band(tables: Tables, c: int, upper_bound_ns: int | None = None) -> Band:
    """The allowed stages of class ``c``, pruned by memory, cuts and ``upper_bound_ns``.

    A stage whose own cost exceeds a known solution's objective cannot be part of a better
    solution (costs are non-negative), so pruning keeps at least one optimal solution.
    """
    n = tables.n
    cap = tables.classes[c].memory_bytes
    j = np.arange(n + 1, dtype=np.int64)
    # Smallest start allowed by memory (the prefix sums are non-decreasing).
    lo = np.searchsorted(tables.prefix_mem, tables.prefix_mem - cap, side="left")
    if upper_bound_ns is not None:
        lo_t = np.searchsorted(
            tables.prefix_time[c], tables.prefix_time[c] - upper_bound_ns, side="left"
        )
        lo = np.maximum(lo, lo_t)
    width = int(max(1, (j - lo).max(initial=1)))
    if width * (n + 1) > MAX_BAND_CELLS:
        raise ValueError(
            f"{n + 1} x {width} stages to tabulate, more than {MAX_BAND_CELLS} (give an upper "
            "bound, or the model is too long for the DP)"
        )
    w = np.arange(width, dtype=np.int64)
    start = j[:, None] - 1 - w[None, :]
    valid = (start >= lo[:, None]) & (start >= 0)
    safe = np.where(valid, start, 0)
    jj = np.broadcast_to(j[:, None], start.shape)
    cost = tables.stage_cost(c, safe, jj)
    valid &= tables.cut_ok[safe] & tables.cut_ok[jj]
    if upper_bound_ns is not None:
        valid &= cost <= upper_bound_ns
    return Band(start=safe, cost=np.where(valid, cost, INF))
