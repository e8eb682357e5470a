"""EDGE_SPLIT_QUANTIZED: QPART's request, its typed section, reader and message.

QPART (Xiangchen Li, Saeid Ghafouri, Bo Ji, Hans Vandierendonck, Deepu John, Dimitrios S.
Nikolopoulos, "QPART: Adaptive Model Quantization and Dynamic Workload Balancing for
Accuracy-aware Edge Inference", arXiv:2506.23934v1, 30 June 2025) answers one inference
request: the server picks a partition point ``p`` and a bit-width for each of the first
``p`` layers, sends those layers quantized to the edge device, the device runs them and
sends layer ``p``'s (quantized) output back, and the server runs the rest at full
precision; the choice weighs time, device energy and server cost under the device's
compute, the channel's capacity and an accuracy budget. The model written here is in
docs/formulations/partition.md ("Quantized edge splits (QPART)"), which says what is taken
from the paper and what is ours; no public code of the paper was found (searched: code
index, GitHub names).

This module holds the section as read from ``PartitionInstance.edge_split`` and its rules;
the integer cost tables are :mod:`.edge_split_costs`, the checker :mod:`.edge_split_check`,
the exact model :mod:`.edge_split_solve`, QPART's own algorithm :mod:`.peers.qpart`.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import FieldRange, finite

MAX_BITS = 64
"""Widest full precision a request may name."""

RANGES = {
    "PartitionEdgeSplit.full_precision_bits": FieldRange(0, MAX_BITS, integer=True, unit="bits"),
    "PartitionEdgeSplit.bit_widths": FieldRange(1, MAX_BITS - 1, integer=True, unit="bits"),
    "PartitionEdgeSplit.accuracy_budget_pp": FieldRange(0, 100, unit="percentage points"),
    "PartitionEdgeSplit.input_bytes": FieldRange(0, 2**40, integer=True, unit="bytes"),
    "PartitionEdgeSplit.device_compute_budget_s": FieldRange(0, 10**6, unit="seconds"),
    "PartitionEdgeSplit.channel_budget_s": FieldRange(0, 10**6, unit="seconds"),
    "PartitionEdgeSplit.time_weight": FieldRange(0, 10**6),
    "PartitionEdgeSplit.energy_weight": FieldRange(0, 10**6),
    "PartitionEdgeSplit.cost_weight": FieldRange(0, 10**6),
    "PartitionEdgeSplit.device_joules_per_flop": FieldRange(0, 1.0, unit="J/FLOP"),
    "PartitionEdgeSplit.transmit_power_w": FieldRange(0, 10**4, unit="W"),
    "PartitionEdgeSplit.server_cost_per_flop": FieldRange(0, 1.0, unit="per FLOP"),
    "PartitionLayerLoss.loss_pp": FieldRange(0, 100, unit="percentage points"),
}
"""The documented range of every numeric field of the section (merged into the family's)."""


@dataclass(frozen=True)
class PartitionEdgeSplit:
    """QPART's request (``PartitionEdgeSplit`` in partition.proto), by index.

    ``loss_pp[l][k]`` is layer ``l``'s accuracy loss at ``bit_widths[k]``; full precision
    (``full_precision_bits``) is always allowed and loses nothing.
    """

    device: int
    server: int
    full_precision_bits: int
    bit_widths: tuple[int, ...]
    loss_pp: tuple[tuple[float, ...], ...]
    accuracy_budget_pp: float
    input_bytes: int = 0
    device_compute_budget_s: float = 0.0
    channel_budget_s: float = 0.0
    time_weight: float = 1.0
    energy_weight: float = 0.0
    cost_weight: float = 0.0
    device_joules_per_flop: float = 0.0
    transmit_power_w: float = 0.0
    server_cost_per_flop: float = 0.0

    @property
    def options(self) -> tuple[int, ...]:
        """Every bit-width a device layer may take: the lower ones, then full precision."""
        return (*self.bit_widths, self.full_precision_bits)

    def loss_of(self, layer: int, bits: int) -> float:
        """Layer ``layer``'s loss at ``bits`` (0 at full precision); ``bits`` is allowed."""
        if bits == self.full_precision_bits:
            return 0.0
        return self.loss_pp[layer][self.bit_widths.index(bits)]


@dataclass(frozen=True)
class EdgeSplitChoice:
    """A solution of the mode: the first ``device_layers`` layers run on the device, layer
    ``l`` of them at ``bits[l]`` bits (``PartitionEdgeSplitChoice`` in partition.proto)."""

    device_layers: int
    bits: tuple[int, ...] = ()


def _number(value: float) -> float:
    """A value out of range as 0.0 (its RANGES entry reported it)."""
    return float(value) if finite(value) and value >= 0 else 0.0


def edge_split_from_message(
    msg: Any,
    is_mode: bool,
    layer_names: list[str],
    device_names: list[str],
    v: ValidationCollector,
) -> PartitionEdgeSplit | None:
    """The section, validated against the layers and devices (None outside the mode).

    ``msg`` is the ``PartitionInstance`` message; ``is_mode`` says whether the workload's
    mode is EDGE_SPLIT_QUANTIZED.
    """
    P = "partition.edge_split"  # noqa: N806 - the JSON path
    has = msg.HasField("edge_split")
    if not is_mode:
        v.require(not has, P, "set", "absent unless workload.mode is EDGE_SPLIT_QUANTIZED")
        return None
    if not v.require(has, P, "absent", "the request (workload.mode is EDGE_SPLIT_QUANTIZED)"):
        return None
    es = msg.edge_split
    v.require(
        len(device_names) == 2,
        "partition.devices",
        f"{len(device_names)} devices",
        "2 devices: the edge device and the server (EDGE_SPLIT_QUANTIZED)",
    )
    index = {name: i for i, name in enumerate(device_names)}
    device = index.get(es.device)
    server = index.get(es.server)
    v.require(device is not None, f"{P}.device", es.device, "the name of a device")
    v.require(server is not None, f"{P}.server", es.server, "the name of a device")
    if device is not None and server is not None:
        v.require(device != server, f"{P}.server", es.server, "a device other than the edge one")
    full = int(es.full_precision_bits) or 32
    widths = tuple(int(b) for b in es.bit_widths)
    v.require(
        all(a < b for a, b in zip(widths, widths[1:], strict=False)),
        f"{P}.bit_widths",
        list(widths),
        "ascending bit-widths, each listed once (e.g. [2, 4, 8])",
    )
    v.require(
        all(1 <= b < full for b in widths),
        f"{P}.bit_widths",
        list(widths),
        f"bit-widths from 1 to {full - 1} (below full_precision_bits = {full})",
    )
    losses: list[tuple[float, ...]] = []
    v.require(
        len(es.accuracy_loss) == len(layer_names),
        f"{P}.accuracy_loss",
        f"{len(es.accuracy_loss)} entries",
        f"one entry per layer ({len(layer_names)}), in layer order",
    )
    for i, entry in enumerate(es.accuracy_loss):
        path = f"{P}.accuracy_loss[{i}]"
        if i < len(layer_names):
            v.require(
                entry.layer == layer_names[i],
                f"{path}.layer",
                entry.layer,
                f"{layer_names[i]!r} (entries in layer order)",
            )
        v.require(
            len(entry.loss_pp) == len(widths),
            f"{path}.loss_pp",
            f"{len(entry.loss_pp)} entries",
            f"one loss per bit-width ({len(widths)}: {list(widths)})",
        )
        losses.append(tuple(_number(x) for x in entry.loss_pp))
    weights = [_number(es.time_weight), _number(es.energy_weight), _number(es.cost_weight)]
    if not any(weights):
        weights = [1.0, 0.0, 0.0]
    return PartitionEdgeSplit(
        device=device if device is not None else 0,
        server=server if server is not None else 0,
        full_precision_bits=full,
        bit_widths=widths,
        loss_pp=tuple(losses),
        accuracy_budget_pp=_number(es.accuracy_budget_pp),
        input_bytes=max(0, int(es.input_bytes)),
        device_compute_budget_s=_number(es.device_compute_budget_s),
        channel_budget_s=_number(es.channel_budget_s),
        time_weight=weights[0],
        energy_weight=weights[1],
        cost_weight=weights[2],
        device_joules_per_flop=_number(es.device_joules_per_flop),
        transmit_power_w=_number(es.transmit_power_w),
        server_cost_per_flop=_number(es.server_cost_per_flop),
    )


def edge_split_rules(layers: list[Any], edges: int, v: ValidationCollector) -> None:
    """The model's own rules in this mode: a chain (no edges) of forward layers timed by
    FLOPs (no measured times, no colocation groups)."""
    v.require(
        edges == 0,
        "partition.edges",
        f"{edges} edges",
        "none (a quantized edge split cuts a chain)",
    )
    for i, lay in enumerate(layers):
        v.require(
            not lay.times and not lay.colocation_group and not lay.backward,
            f"partition.layers[{i}]",
            lay.name,
            "no times, colocation_group or backward (EDGE_SPLIT_QUANTIZED times layers by "
            "forward_flops over the device's flops_per_s)",
        )


def edge_split_to_message(section: PartitionEdgeSplit, layer_names: list[str], msg: Any) -> None:
    """Write the section into ``msg.edge_split`` (``msg`` a ``PartitionInstance``)."""
    es = msg.edge_split
    es.SetInParent()
    names = [d.name for d in msg.devices]
    es.device = names[section.device]
    es.server = names[section.server]
    es.full_precision_bits = section.full_precision_bits
    es.bit_widths.extend(section.bit_widths)
    for name, row in zip(layer_names, section.loss_pp, strict=True):
        es.accuracy_loss.add(layer=name, loss_pp=list(row))
    es.accuracy_budget_pp = section.accuracy_budget_pp
    es.input_bytes = section.input_bytes
    es.device_compute_budget_s = section.device_compute_budget_s
    es.channel_budget_s = section.channel_budget_s
    es.time_weight = section.time_weight
    es.energy_weight = section.energy_weight
    es.cost_weight = section.cost_weight
    es.device_joules_per_flop = section.device_joules_per_flop
    es.transmit_power_w = section.transmit_power_w
    es.server_cost_per_flop = section.server_cost_per_flop


def choice_from_message(msg: Any, v: ValidationCollector) -> EdgeSplitChoice:
    """The choice of a ``PartitionSolution`` message's ``edge_split`` (the checker judges
    the values; only the form is read here)."""
    v.require(
        not msg.assignments and not msg.ranges and not msg.pipelines,
        "partition.assignments",
        f"{len(msg.assignments)} assignments",
        "none (an EDGE_SPLIT_QUANTIZED solution gives edge_split)",
    )
    choice = msg.edge_split
    return EdgeSplitChoice(int(choice.device_layers), tuple(int(b) for b in choice.bits))


def finite_budget(seconds: float) -> float:
    """A budget of 0 (no limit) as infinity."""
    return seconds if seconds > 0 else math.inf


# -------------------------------------------------------------------------------------------
# The cost model in integers (every term rounded once, then sums are exact)

UNITS = 10**9
"""Time in nanoseconds; the objective in 1e-9 of its unit."""
LOSS_UNITS = 10**6
"""Accuracy loss in 1e-6 percentage points."""
MAX_SUM = 4 * 10**15
"""Largest sum a row or the objective may reach (below 2**53: a MILP's doubles are exact)."""


@dataclass(frozen=True)
class EdgeTables:
    """QPART's request as integer tables; layer ``l``, option ``k`` (``options[k]`` bits).

    ``dev_ns``: device compute time (FLOPs x bits / full bits over its speed); ``down_ns``:
    sending the layer's weights at those bits down the channel; ``up_ns``: sending its output
    at those bits up (when it is the last device layer); ``srv_ns``: the server running the
    layer at full precision; ``in_ns``: the input sent up (no device layer). The ``*_obj``
    tables are the objective's terms (weighted time, energy and server cost, in 1e-9 of
    the objective's unit); ``*_bits`` the payload on the channel.
    """

    options: tuple[int, ...]
    dev_ns: tuple[tuple[int, ...], ...]
    down_ns: tuple[tuple[int, ...], ...]
    up_ns: tuple[tuple[int, ...], ...]
    loss: tuple[tuple[int, ...], ...]
    dev_obj: tuple[tuple[int, ...], ...]
    up_obj: tuple[tuple[int, ...], ...]
    down_bits: tuple[tuple[int, ...], ...]
    up_bits: tuple[tuple[int, ...], ...]
    srv_ns: tuple[int, ...]
    srv_obj: tuple[int, ...]
    in_ns: int
    in_obj: int
    in_bits: int
    device_budget_ns: int | None
    channel_budget_ns: int | None
    loss_budget: int

    @property
    def layers(self) -> int:
        """Layers of the model."""
        return len(self.srv_ns)

    def server_obj_from(self, p: int) -> int:
        """The server's objective terms when it runs layers ``p..L-1``."""
        return sum(self.srv_obj[p:])


def edge_tables(
    section: PartitionEdgeSplit,
    flops: list[float],
    param_bytes: list[int],
    activation_bytes: list[int],
    device_flops_per_s: float,
    server_flops_per_s: float,
    channel_bytes_per_s: float,
) -> EdgeTables:
    """The integer tables of a request (see :class:`EdgeTables` and the formulation)."""
    s = section
    full = s.full_precision_bits
    options = s.options
    alpha, beta, gamma = s.time_weight, s.energy_weight, s.cost_weight
    up_rate = alpha + beta * s.transmit_power_w  # per second of sending up
    dev_speed = device_flops_per_s if device_flops_per_s > 0 else math.inf
    srv_speed = server_flops_per_s if server_flops_per_s > 0 else math.inf
    cap = channel_bytes_per_s if channel_bytes_per_s > 0 else math.inf

    def rnd(x: float) -> int:
        return int(round(x))

    dev_ns, down_ns, up_ns, loss, dev_obj, up_obj, down_bits, up_bits = ([] for _ in range(8))
    for lay in range(len(flops)):
        row: dict[str, list[int]] = {
            k: [] for k in ("dn", "dw", "up", "ls", "do", "uo", "db", "ub")
        }
        for b in options:
            frac = b / full
            t_dev = flops[lay] * frac / dev_speed
            t_down = param_bytes[lay] * frac / cap
            t_up = activation_bytes[lay] * frac / cap
            row["dn"].append(rnd(t_dev * UNITS))
            row["dw"].append(rnd(t_down * UNITS))
            row["up"].append(rnd(t_up * UNITS))
            row["ls"].append(rnd(s.loss_of(lay, b) * LOSS_UNITS))
            energy = s.device_joules_per_flop * flops[lay] * frac
            row["do"].append(rnd((alpha * (t_dev + t_down) + beta * energy) * UNITS))
            row["uo"].append(rnd(up_rate * t_up * UNITS))
            row["db"].append(rnd(param_bytes[lay] * 8 * frac))
            row["ub"].append(rnd(activation_bytes[lay] * 8 * frac))
        for table, key in (
            (dev_ns, "dn"),
            (down_ns, "dw"),
            (up_ns, "up"),
            (loss, "ls"),
            (dev_obj, "do"),
            (up_obj, "uo"),
            (down_bits, "db"),
            (up_bits, "ub"),
        ):
            table.append(tuple(row[key]))
    srv_ns = tuple(rnd(f / srv_speed * UNITS) for f in flops)
    srv_obj = tuple(
        rnd((alpha * f / srv_speed + gamma * s.server_cost_per_flop * f) * UNITS) for f in flops
    )
    t_in = s.input_bytes / cap
    return EdgeTables(
        options=options,
        dev_ns=tuple(dev_ns),
        down_ns=tuple(down_ns),
        up_ns=tuple(up_ns),
        loss=tuple(loss),
        dev_obj=tuple(dev_obj),
        up_obj=tuple(up_obj),
        down_bits=tuple(down_bits),
        up_bits=tuple(up_bits),
        srv_ns=srv_ns,
        srv_obj=srv_obj,
        in_ns=rnd(t_in * UNITS),
        in_obj=rnd(up_rate * t_in * UNITS),
        in_bits=s.input_bytes * 8,
        device_budget_ns=(
            int(math.floor(s.device_compute_budget_s * UNITS))
            if s.device_compute_budget_s > 0
            else None
        ),
        channel_budget_ns=(
            int(math.floor(s.channel_budget_s * UNITS)) if s.channel_budget_s > 0 else None
        ),
        loss_budget=rnd(s.accuracy_budget_pp * LOSS_UNITS),
    )


def table_magnitudes(t: EdgeTables, v: ValidationCollector) -> None:
    """Every sum a plan can reach stays below :data:`MAX_SUM` (else the request names the
    field to scale)."""
    P = "partition.edge_split"  # noqa: N806 - the JSON path
    worst = {
        "objective (weights x times, energy and cost)": sum(max(r) for r in t.dev_obj)
        + max((max(r) for r in t.up_obj), default=0)
        + sum(t.srv_obj)
        + t.in_obj,
        "device compute time": sum(max(r) for r in t.dev_ns),
        "channel time": sum(max(r) for r in t.down_ns)
        + max((max(r) for r in t.up_ns), default=0)
        + t.in_ns,
        "accuracy loss": sum(max(r) for r in t.loss),
    }
    for what, value in worst.items():
        v.require(
            value <= MAX_SUM,
            P,
            f"{what} up to {value:.3g} (1e-9 units)",
            f"at most {MAX_SUM:.0e} in 1e-9 units: scale the request's weights or sizes down",
        )


_TABLES: weakref.WeakKeyDictionary[Any, EdgeTables] = weakref.WeakKeyDictionary()


def instance_tables(instance: Any) -> EdgeTables:
    """The tables of an EDGE_SPLIT_QUANTIZED ``PartitionInstance`` (computed once)."""
    tables = _TABLES.get(instance)
    if tables is None:
        section = instance.edge_split
        assert section is not None, "EDGE_SPLIT_QUANTIZED instances carry edge_split"
        layers, devices = instance.layers, instance.devices
        tables = edge_tables(
            section,
            [lay.forward_flops for lay in layers],
            [lay.param_bytes for lay in layers],
            [lay.activation_bytes for lay in layers],
            devices[section.device].flops_per_s,
            devices[section.server].flops_per_s,
            instance.links.inter_node_bandwidth_bytes_per_s,
        )
        _TABLES[instance] = tables
    return tables
