"""The typed partition instance and solution, their JSON form, and validation.

What a layer and a transfer cost (the cost model, in integer nanoseconds) is
:mod:`.cost_model`; the solution's message, which the checker writes, is in :mod:`.check`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from placement.models.partition.cost_model import (
    MAX_TOTAL_BYTES,
    PartitionMode,
    check_magnitudes,
    check_tensor_times,
    seconds_to_ns,
)

# NS_PER_MS re-exported for the encodings that import it from here (cpsat.py, encoding.py).
from placement.models.partition.cost_model import NS_PER_MS as NS_PER_MS
from placement.models.partition.edge_split import RANGES as EDGE_SPLIT_RANGES
from placement.models.partition.edge_split import (
    EdgeSplitChoice,
    PartitionEdgeSplit,
    choice_from_message,
    edge_split_from_message,
    edge_split_rules,
    edge_split_to_message,
    instance_tables,
    table_magnitudes,
)
from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, finite, register_ranges
from placement.solver.schema.v1 import partition_pb2 as pb

MAX_LAYERS = 100_000
"""Most layers an instance may have."""
MAX_DEVICES = 10_000
"""Most devices an instance may have."""
MAX_BYTES = 2**50
"""Bytes of any one size (a PiB)."""
MAX_FLOPS = 10**21
MAX_TOKENS_PER_S = 10**12
"""Most tokens/s of a device or link in LLM_SERVING_FLOW mode (the max flow counts integers
of 1e-6 tokens/s)."""
MAX_SECONDS = 10**8
MAX_TENSOR_PARALLEL = 1024
"""Largest tensor-parallel degree a serving plan may allow."""

RANGES = register_ranges(
    {
        "PartitionLayerTime.forward_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "PartitionLayerTime.backward_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "PartitionLayer.param_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "PartitionLayer.activation_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "PartitionLayer.forward_flops": FieldRange(0, MAX_FLOPS, unit="FLOP"),
        "PartitionLayer.backward_flops": FieldRange(0, MAX_FLOPS, unit="FLOP"),
        "PartitionLayer.kv_cache_bytes_per_token": FieldRange(
            0, MAX_BYTES, integer=True, unit="bytes"
        ),
        "PartitionLayer.extra_memory_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "PartitionEdge.bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "PartitionEdge.transfer_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "PartitionDevice.memory_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "PartitionDevice.flops_per_s": FieldRange(0, MAX_FLOPS, unit="FLOP/s"),
        "PartitionLinks.inter_node_bandwidth_bytes_per_s": FieldRange(
            0, 10**15, unit="bytes per second"
        ),
        "PartitionLinks.intra_node_bandwidth_bytes_per_s": FieldRange(
            0, 10**15, unit="bytes per second"
        ),
        "PartitionWorkload.batch_size": FieldRange(1, 10**6, integer=True),
        "PartitionWorkload.context_length": FieldRange(0, 10**8, integer=True, unit="tokens"),
        "PartitionWorkload.in_flight_microbatches": FieldRange(1, 10**6, integer=True),
        "PartitionWorkload.gradient_bytes_per_param_byte": FieldRange(0, 100),
        "PartitionWorkload.optimizer_bytes_per_param_byte": FieldRange(0, 100),
        "PartitionFlowDeviceType.max_layers": FieldRange(1, MAX_LAYERS, integer=True),
        "PartitionFlowDeviceType.tokens_per_s": FieldRange(0, MAX_TOKENS_PER_S, unit="tokens/s"),
        "PartitionFlowLink.tokens_per_s": FieldRange(0, MAX_TOKENS_PER_S, unit="tokens/s"),
        "PartitionServingPlan.tensor_parallel_sizes": FieldRange(
            1, MAX_TENSOR_PARALLEL, integer=True
        ),
        "PartitionServingPlan.allreduce_latency_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        **EDGE_SPLIT_RANGES,
    }
)
"""The documented range of every numeric field (docs/library.md lists them); beyond them,
times and memory must add up to at most MAX_TOTAL_SECONDS and MAX_TOTAL_BYTES."""


class PartitionContiguity(StrEnum):
    """Which sets of layers one device may hold (``PartitionContiguity`` in partition.proto)."""

    ORDER = "CONTIGUITY_ORDER"
    """One contiguous range of the (forward) layer order: a pipeline stage."""
    CONVEX = "CONTIGUITY_CONVEX"
    """Tarnawski et al.'s contiguous splits: the devices' forward sets are the differences of
    a chain of ideals of the forward graph (contracting them leaves an acyclic graph)."""
    NONE = "CONTIGUITY_NONE"
    """Any set (Tarnawski et al.'s non-contiguous variant)."""


class PartitionTransferAccounting(StrEnum):
    """How a transfer is charged (``PartitionTransferAccounting`` in partition.proto)."""

    PER_EDGE = "TRANSFER_PER_EDGE"
    """Every cut edge costs its transfer time on both of its devices."""
    PER_TENSOR_VIA_HOST = "TRANSFER_PER_TENSOR_VIA_HOST"
    """Tarnawski et al.: layer u's output (one transfer time per layer) is paid once by u's
    device if some consumer is elsewhere and once by each distinct other device holding a
    consumer; host devices pay nothing."""


@dataclass(frozen=True)
class PartitionLayerTime:
    """Measured seconds of a layer on one device type."""

    device_type: str
    forward_s: float
    backward_s: float = 0.0


@dataclass(frozen=True)
class PartitionLayer:
    """A layer (or operator) of the model; see ``PartitionLayer`` in partition.proto."""

    name: str
    param_bytes: int = 0
    activation_bytes: int = 0
    forward_flops: float = 0.0
    backward_flops: float = 0.0
    kv_cache_bytes_per_token: int = 0
    extra_memory_bytes: int = 0
    colocation_group: str = ""
    times: tuple[PartitionLayerTime, ...] = ()
    allowed_device_types: tuple[str, ...] = ()
    """Non-empty: the only device types the layer may run on."""
    backward: bool = False
    """A backward node of a training graph: outside the contiguity rule (its colocation group
    binds it to its forward twin)."""

    def allowed_on(self, device_type: str) -> bool:
        """Whether the layer may run on a device of ``device_type``."""
        return not self.allowed_device_types or device_type in self.allowed_device_types

    def measured(self, device_type: str) -> PartitionLayerTime | None:
        """The measured time for ``device_type``, if any."""
        for t in self.times:
            if t.device_type == device_type:
                return t
        return None


@dataclass(frozen=True)
class PartitionEdge:
    """A data dependency: ``bytes`` (or a fixed ``transfer_s``) from layer ``src`` to ``dst``."""

    src: int
    dst: int
    bytes: int = 0
    transfer_s: float = 0.0


@dataclass(frozen=True)
class PartitionDevice:
    """An accelerator with ``memory_bytes`` for the model and ``flops_per_s`` of compute."""

    name: str
    type: str
    memory_bytes: int
    flops_per_s: float = 0.0
    node: str = ""
    host: bool = False
    """A host CPU: pays no transfers under TRANSFER_PER_TENSOR_VIA_HOST."""


@dataclass(frozen=True)
class PartitionLinks:
    """Bandwidth between devices, bytes/s: inter-node, and intra-node (0 = the same)."""

    inter_node_bandwidth_bytes_per_s: float = 0.0
    intra_node_bandwidth_bytes_per_s: float = 0.0


@dataclass(frozen=True)
class PartitionServingPlan:
    """LLM_SERVING plans: replicas allowed, the tensor-parallel degrees a stage may take
    (ascending, a divisibility chain) and an all-reduce's fixed latency (see partition.proto)."""

    replicas: bool = False
    tensor_parallel_sizes: tuple[int, ...] = (1,)
    allreduce_latency_s: float = 0.0


@dataclass(frozen=True)
class PartitionWorkload:
    """The mode and its memory accounting; see ``PartitionWorkload`` in partition.proto."""

    mode: PartitionMode = PartitionMode.TRAINING
    batch_size: int = 1
    context_length: int = 0
    in_flight_microbatches: int = 1
    gradient_bytes_per_param_byte: float = 1.0
    optimizer_bytes_per_param_byte: float = 2.0
    non_contiguous: bool = False
    contiguity_rule: PartitionContiguity | None = None
    """Set explicitly (proto field ``contiguity``); None: from ``non_contiguous``."""
    transfer_accounting: PartitionTransferAccounting = PartitionTransferAccounting.PER_EDGE
    serving_plan: PartitionServingPlan | None = None
    """LLM_SERVING: set, solutions are serving plans (pipelines of tensor-parallel stages)."""

    @property
    def plan(self) -> bool:
        """LLM_SERVING with a serving plan: solutions give pipelines, scored in tokens/s."""
        return self.serving_plan is not None and self.mode is PartitionMode.SERVING

    @property
    def edge_split(self) -> bool:
        """EDGE_SPLIT_QUANTIZED (QPART): solutions give a split point and bit-widths."""
        return self.mode is PartitionMode.EDGE_SPLIT

    @property
    def contiguity(self) -> PartitionContiguity:
        """The contiguity rule in force."""
        if self.contiguity_rule is not None:
            return self.contiguity_rule
        return PartitionContiguity.NONE if self.non_contiguous else PartitionContiguity.ORDER

    @property
    def contiguous(self) -> bool:
        """Each device holds one contiguous range of the (forward) layer order."""
        return self.contiguity is PartitionContiguity.ORDER

    @property
    def flow(self) -> bool:
        """LLM_SERVING_FLOW: solutions are layer ranges scored by max flow."""
        return self.mode is PartitionMode.SERVING_FLOW

    @property
    def max_stages(self) -> int | None:
        """Serving: at most ``in_flight_microbatches`` stages, so that the pipeline is full
        (each stage decodes its own micro-batch) and ``batch_size / step time`` is the rate."""
        return self.in_flight_microbatches if self.mode is PartitionMode.SERVING else None

    @property
    def comm_factor(self) -> int:
        """Edge bytes are multiplied by this: training also sends the gradient back; a serving
        step carries ``batch_size`` sequences."""
        if self.mode is PartitionMode.TRAINING:
            return 2
        return self.batch_size


SOURCE = "source"
"""The flow network's source: ``PartitionFlowLink.src`` of the links requests enter by."""
SINK = "sink"
"""The flow network's sink: ``PartitionFlowLink.dst`` of the links tokens leave by."""


@dataclass(frozen=True)
class PartitionFlowDeviceType:
    """LLM_SERVING_FLOW: tokens/s of a device of ``type`` holding k layers, at ``[k - 1]``;
    its length is the most layers such a device holds."""

    type: str
    tokens_per_s: tuple[float, ...]

    @property
    def max_layers(self) -> int:
        """Most layers a device of the type holds."""
        return len(self.tokens_per_s)


@dataclass(frozen=True)
class PartitionFlowLink:
    """LLM_SERVING_FLOW: the directed link ``src -> dst`` (device names, ``source`` or
    ``sink``) carries at most ``tokens_per_s``."""

    src: str
    dst: str
    tokens_per_s: float


@dataclass(frozen=True)
class PartitionServingFlow:
    """LLM_SERVING_FLOW's data beyond layers and devices (see partition.proto)."""

    device_types: tuple[PartitionFlowDeviceType, ...] = ()
    links: tuple[PartitionFlowLink, ...] = ()
    partial_inference: bool = False


@dataclass(eq=False)
class PartitionInstance:
    """A model (chain or DAG of layers), devices, links and a workload."""

    family_name = "partition"

    layers: list[PartitionLayer]
    devices: list[PartitionDevice]
    links: PartitionLinks = field(default_factory=PartitionLinks)
    workload: PartitionWorkload = field(default_factory=PartitionWorkload)
    edges: list[PartitionEdge] = field(default_factory=list)
    """Explicit DAG edges; empty for a chain (then :attr:`graph_edges` derives them)."""
    serving_flow: PartitionServingFlow | None = None
    """LLM_SERVING_FLOW mode's per-type throughputs and link capacities; None otherwise."""
    edge_split: PartitionEdgeSplit | None = None
    """EDGE_SPLIT_QUANTIZED mode's request (QPART); None otherwise."""
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)

    @cached_property
    def layer_index(self) -> dict[str, int]:
        """Layer name -> index."""
        return {layer.name: i for i, layer in enumerate(self.layers)}

    @cached_property
    def device_index(self) -> dict[str, int]:
        """Device name -> index."""
        return {d.name: i for i, d in enumerate(self.devices)}

    @cached_property
    def graph_edges(self) -> list[PartitionEdge]:
        """The edges of the model: the explicit ones, or the chain's (i -> i + 1)."""
        if self.edges:
            return list(self.edges)
        return [
            PartitionEdge(i, i + 1, self.layers[i].activation_bytes)
            for i in range(len(self.layers) - 1)
        ]

    @cached_property
    def tensor_times_ns(self) -> list[int]:
        """Per layer: the transfer time of its output under per-tensor accounting (ns)."""
        out = [0] * len(self.layers)
        for e in self.graph_edges:
            out[e.src] = max(out[e.src], seconds_to_ns(e.transfer_s))
        return out

    def layer_memory_bytes(self, layer: int) -> int:
        """Bytes layer ``layer`` needs on its device under the workload (see the formulation).

        training: extra + weights x (1 + gradient + optimiser factors) + activations x
        in-flight micro-batches; inference: extra + weights + (activations + KV cache of
        context tokens) x batch; serving: the same with batch x in-flight micro-batches
        sequences (every micro-batch in the pipeline keeps its KV cache on every stage).
        """
        lay, w = self.layers[layer], self.workload
        if w.mode is PartitionMode.TRAINING:
            state = math.ceil(
                lay.param_bytes
                * (1.0 + w.gradient_bytes_per_param_byte + w.optimizer_bytes_per_param_byte)
            )
            return lay.extra_memory_bytes + state + lay.activation_bytes * w.in_flight_microbatches
        sequences = w.batch_size * (
            w.in_flight_microbatches if w.mode is PartitionMode.SERVING else 1
        )
        per_sequence = lay.activation_bytes + lay.kv_cache_bytes_per_token * w.context_length
        return lay.extra_memory_bytes + lay.param_bytes + per_sequence * sequences

    def bandwidth(self, a: int, b: int) -> float:
        """Bytes/s between devices ``a`` and ``b`` (a != b)."""
        da, db = self.devices[a], self.devices[b]
        links = self.links
        if da.node and da.node == db.node and links.intra_node_bandwidth_bytes_per_s > 0:
            return links.intra_node_bandwidth_bytes_per_s
        return links.inter_node_bandwidth_bytes_per_s


# -------------------------------------------------------------------------------------------
# Solution


PlanStage = tuple[tuple[int, ...], int, int]
"""A serving plan's stage: (device indices, first layer, layer count)."""


@dataclass
class PartitionSolution:
    """The device of every layer (``device_of[layer]`` is a device index); in
    LLM_SERVING_FLOW mode ``ranges`` instead: (device, first layer, layer count) per used
    device, a layer possibly held by several devices, and ``device_of`` empty."""

    device_of: tuple[int, ...] = ()
    ranges: tuple[tuple[int, int, int], ...] = ()
    pipelines: tuple[tuple[PlanStage, ...], ...] = ()
    """Serving plans (``workload.serving_plan``): disjoint pipelines, each its stages in
    order; ``device_of`` and ``ranges`` empty."""
    edge_split: EdgeSplitChoice | None = None
    """EDGE_SPLIT_QUANTIZED: the split and the device layers' bit-widths; the rest empty."""

    def stages(self) -> list[tuple[int, int, int]]:
        """Maximal runs of consecutive layers on one device: (device, first, last)."""
        out: list[tuple[int, int, int]] = []
        for i, d in enumerate(self.device_of):
            if out and out[-1][0] == d and out[-1][2] == i - 1:
                out[-1] = (d, out[-1][1], i)
            else:
                out.append((d, i, i))
        return out


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

_MODES = {
    0: PartitionMode.TRAINING,
    1: PartitionMode.TRAINING,
    2: PartitionMode.INFERENCE,
    3: PartitionMode.SERVING,
    4: PartitionMode.SERVING_FLOW,
    5: PartitionMode.EDGE_SPLIT,
}


_CONTIGUITY: dict[int, PartitionContiguity | None] = {
    0: None,
    1: PartitionContiguity.ORDER,
    2: PartitionContiguity.CONVEX,
    3: PartitionContiguity.NONE,
}
_CONTIGUITY_VALUES = {c: k for k, c in _CONTIGUITY.items() if c is not None}
_ACCOUNTING = {
    0: PartitionTransferAccounting.PER_EDGE,
    1: PartitionTransferAccounting.PER_EDGE,
    2: PartitionTransferAccounting.PER_TENSOR_VIA_HOST,
}
_ACCOUNTING_VALUES = {
    PartitionTransferAccounting.PER_EDGE: 1,
    PartitionTransferAccounting.PER_TENSOR_VIA_HOST: 2,
}


def _clamp_int(value: int) -> int:
    """A count out of range as 0 (its RANGES entry reported it), so validation goes on."""
    return max(0, int(value))


def _clamp_float(value: float) -> float:
    """A number out of range as 0.0 (its RANGES entry reported it)."""
    return float(value) if finite(value) and value >= 0 else 0.0


def instance_from_message(msg: Any, name: str = "", description: str = "") -> PartitionInstance:
    """Build and validate a :class:`PartitionInstance` from a ``PartitionInstance`` message.

    Raises :class:`InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    P = "partition"
    check_ranges(msg, RANGES, P, v)
    wl = msg.workload
    mode = _MODES.get(int(wl.mode))
    if mode is None:
        v.add(
            f"{P}.workload.mode",
            int(wl.mode),
            "TRAINING_PIPELINE, INFERENCE_LATENCY, LLM_SERVING, LLM_SERVING_FLOW or "
            "EDGE_SPLIT_QUANTIZED",
        )
        mode = PartitionMode.TRAINING
    batch = wl.batch_size if wl.HasField("batch_size") else 1
    inflight = wl.in_flight_microbatches if wl.HasField("in_flight_microbatches") else 1
    grad = wl.gradient_bytes_per_param_byte if wl.HasField("gradient_bytes_per_param_byte") else 1.0
    opt = (
        wl.optimizer_bytes_per_param_byte if wl.HasField("optimizer_bytes_per_param_byte") else 2.0
    )
    grad = _clamp_float(grad)
    opt = _clamp_float(opt)
    contiguity = _CONTIGUITY.get(int(wl.contiguity), "bad")
    if contiguity == "bad":
        v.add(
            f"{P}.workload.contiguity",
            int(wl.contiguity),
            "CONTIGUITY_ORDER, CONTIGUITY_CONVEX or CONTIGUITY_NONE",
        )
        contiguity = None
    elif contiguity is not None and wl.non_contiguous:
        v.require(
            contiguity is not PartitionContiguity.ORDER,
            f"{P}.workload.non_contiguous",
            True,
            "false with contiguity CONTIGUITY_ORDER (set one of them)",
        )
    accounting = _ACCOUNTING.get(int(wl.transfer_accounting))
    if accounting is None:
        v.add(
            f"{P}.workload.transfer_accounting",
            int(wl.transfer_accounting),
            "TRANSFER_PER_EDGE or TRANSFER_PER_TENSOR_VIA_HOST",
        )
        accounting = PartitionTransferAccounting.PER_EDGE
    plan = _serving_plan_from_message(wl, mode, v)
    workload = PartitionWorkload(
        serving_plan=plan,
        mode=mode,
        batch_size=max(1, batch),
        context_length=max(0, wl.context_length),
        in_flight_microbatches=max(1, inflight),
        gradient_bytes_per_param_byte=grad,
        optimizer_bytes_per_param_byte=opt,
        non_contiguous=bool(wl.non_contiguous),
        contiguity_rule=contiguity if isinstance(contiguity, PartitionContiguity) else None,
        transfer_accounting=accounting,
    )
    training = mode is PartitionMode.TRAINING

    devices: list[PartitionDevice] = []
    device_names: set[str] = set()
    v.require(
        0 < len(msg.devices) <= MAX_DEVICES,
        f"{P}.devices",
        len(msg.devices),
        f"1 to {MAX_DEVICES} devices",
    )
    for i, d in enumerate(msg.devices):
        path = f"{P}.devices[{i}]"
        v.unique_name(f"{path}.name", d.name, device_names, "device")
        device_names.add(d.name)
        v.require(bool(d.type), f"{path}.type", d.type, "a device type name")
        mem = _clamp_int(d.memory_bytes)
        # The solvers add memory in int64: a capacity near 2**64 would wrap around.
        mem = min(mem, MAX_TOTAL_BYTES)
        flops = _clamp_float(d.flops_per_s)
        devices.append(PartitionDevice(d.name, d.type, mem, flops, d.node, bool(d.host)))

    layers: list[PartitionLayer] = []
    layer_names: set[str] = set()
    v.require(
        0 < len(msg.layers) <= MAX_LAYERS,
        f"{P}.layers",
        len(msg.layers),
        f"1 to {MAX_LAYERS} layers",
    )
    for i, lay in enumerate(msg.layers):
        path = f"{P}.layers[{i}]"
        v.unique_name(f"{path}.name", lay.name, layer_names, "layer")
        layer_names.add(lay.name)
        times: list[PartitionLayerTime] = []
        seen_types: set[str] = set()
        for k, t in enumerate(lay.times):
            tp = f"{path}.times[{k}]"
            v.require(bool(t.device_type), f"{tp}.device_type", t.device_type, "a device type name")
            v.require(
                t.device_type not in seen_types,
                f"{tp}.device_type",
                t.device_type,
                "each device type timed once per layer",
            )
            seen_types.add(t.device_type)
            fwd = _clamp_float(t.forward_s)
            bwd = _clamp_float(t.backward_s)
            times.append(PartitionLayerTime(t.device_type, fwd, bwd))
        layer = PartitionLayer(
            name=lay.name,
            param_bytes=_clamp_int(lay.param_bytes),
            activation_bytes=_clamp_int(lay.activation_bytes),
            forward_flops=_clamp_float(lay.forward_flops),
            backward_flops=_clamp_float(lay.backward_flops),
            kv_cache_bytes_per_token=_clamp_int(lay.kv_cache_bytes_per_token),
            extra_memory_bytes=_clamp_int(lay.extra_memory_bytes),
            colocation_group=lay.colocation_group,
            times=tuple(times),
            allowed_device_types=tuple(lay.allowed_device_types),
            backward=bool(lay.backward),
        )
        if layer.allowed_device_types:
            v.require(
                any(layer.allowed_on(d.type) for d in devices),
                f"{path}.allowed_device_types",
                list(layer.allowed_device_types),
                "a device type of some device of the instance",
            )
        # Every device must be able to time the layer: measured, or FLOPs over a speed.
        flops = layer.forward_flops + (layer.backward_flops if training else 0.0)
        if flops > 0:
            for k, d in enumerate(devices):
                if layer.measured(d.type) is None and d.flops_per_s <= 0:
                    v.add(
                        f"{P}.devices[{k}].flops_per_s",
                        d.flops_per_s,
                        f"FLOP/s > 0 (layer {layer.name!r} has FLOPs and no measured time "
                        f"for type {d.type!r})",
                    )
                    break
        layers.append(layer)

    index = {layer.name: i for i, layer in enumerate(layers)}
    edges: list[PartitionEdge] = []
    needs_bandwidth = False
    for k, e in enumerate(msg.edges):
        path = f"{P}.edges[{k}]"
        src, dst = index.get(e.src), index.get(e.dst)
        ok = v.require(src is not None, f"{path}.src", e.src, "the name of a layer")
        ok = v.require(dst is not None, f"{path}.dst", e.dst, "the name of a layer") and ok
        if ok and src is not None and dst is not None:
            v.require(
                src < dst,
                f"{path}.dst",
                e.dst,
                f"a layer listed after {e.src!r} (layers are in topological order)",
            )
        nbytes = _clamp_int(e.bytes)
        transfer = _clamp_float(e.transfer_s)
        needs_bandwidth |= nbytes > 0 and transfer == 0
        if ok and src is not None and dst is not None:
            edges.append(PartitionEdge(src, dst, nbytes, transfer))
    if not msg.edges:
        needs_bandwidth = any(lay.activation_bytes > 0 for lay in layers[:-1])
    inter = _clamp_float(msg.links.inter_node_bandwidth_bytes_per_s)
    intra = _clamp_float(msg.links.intra_node_bandwidth_bytes_per_s)
    if needs_bandwidth and len(devices) > 1:
        v.require(
            inter > 0,
            f"{P}.links.inter_node_bandwidth_bytes_per_s",
            inter,
            "bytes/s > 0 (edges send bytes between devices)",
        )
    flow = _serving_flow_from_message(msg, mode, devices, v)
    edge = edge_split_from_message(
        msg,
        mode is PartitionMode.EDGE_SPLIT,
        [lay.name for lay in layers],
        [d.name for d in devices],
        v,
    )
    if edge is not None:
        edge_split_rules(layers, len(msg.edges), v)
        v.require(
            inter > 0,
            f"{P}.links.inter_node_bandwidth_bytes_per_s",
            inter,
            "bytes/s > 0 (the channel's capacity, EDGE_SPLIT_QUANTIZED)",
        )
    if plan is not None:
        # The plan model cuts a chain between consecutive layers (docs/formulations).
        v.require(
            not msg.edges,
            f"{P}.edges",
            f"{len(msg.edges)} edges",
            "none (serving plans split a chain)",
        )
        for i, lay in enumerate(layers):
            v.require(
                not lay.colocation_group and not lay.backward,
                f"{P}.layers[{i}]",
                lay.name,
                "no colocation_group and not backward (serving plans split a chain)",
            )
    v.raise_if_any()
    instance = PartitionInstance(
        layers=layers,
        devices=devices,
        links=PartitionLinks(inter, intra),
        workload=workload,
        edges=edges,
        serving_flow=flow,
        edge_split=edge,
        name=name,
        description=description,
        validated=True,
    )
    check_magnitudes(instance, v)
    if edge is not None:
        table_magnitudes(instance_tables(instance), v)
    if accounting is PartitionTransferAccounting.PER_TENSOR_VIA_HOST:
        check_tensor_times(instance, v)
    v.raise_if_any()
    return instance


def _serving_plan_from_message(
    wl: Any, mode: PartitionMode, v: ValidationCollector
) -> PartitionServingPlan | None:
    """The workload's serving plan section (LLM_SERVING only; degrees a divisibility chain)."""
    if not wl.HasField("serving_plan"):
        return None
    sp = wl.serving_plan
    P = "partition.workload.serving_plan"  # noqa: N806 - the JSON path
    v.require(
        mode is PartitionMode.SERVING,
        P,
        "present",
        f"absent (serving plans are for LLM_SERVING; mode is {mode.name})",
    )
    sizes = tuple(int(t) for t in sp.tensor_parallel_sizes) or (1,)
    ok = all(1 <= t <= MAX_TENSOR_PARALLEL for t in sizes)
    if ok:
        v.require(
            all(b > a and b % a == 0 for a, b in zip(sizes, sizes[1:], strict=False)),
            f"{P}.tensor_parallel_sizes",
            list(sizes),
            "ascending degrees, each dividing the next (e.g. [1, 2, 4, 8])",
        )
    latency = _clamp_float(sp.allreduce_latency_s)
    return PartitionServingPlan(bool(sp.replicas), sizes, latency)


def _serving_flow_from_message(
    msg: Any, mode: PartitionMode, devices: list[PartitionDevice], v: ValidationCollector
) -> PartitionServingFlow | None:
    """The LLM_SERVING_FLOW section, validated against the devices (None in other modes)."""
    P = "partition.serving_flow"  # noqa: N806 - the JSON path, as in instance_from_message
    has = msg.HasField("serving_flow")
    if mode is not PartitionMode.SERVING_FLOW:
        v.require(not has, P, "set", "absent unless workload.mode is LLM_SERVING_FLOW")
        return None
    if not v.require(has, P, "absent", "the flow section (workload.mode is LLM_SERVING_FLOW)"):
        return None
    sf = msg.serving_flow
    types: list[PartitionFlowDeviceType] = []
    seen: set[str] = set()
    for i, t in enumerate(sf.device_types):
        path = f"{P}.device_types[{i}]"
        v.require(bool(t.type), f"{path}.type", t.type, "a device type name")
        v.require(t.type not in seen, f"{path}.type", t.type, "each device type listed once")
        seen.add(t.type)
        v.require(
            len(t.tokens_per_s) == t.max_layers,
            f"{path}.tokens_per_s",
            f"{len(t.tokens_per_s)} entries",
            f"max_layers = {t.max_layers} entries (tokens/s holding 1, 2, ... layers)",
        )
        types.append(
            PartitionFlowDeviceType(t.type, tuple(_clamp_float(x) for x in t.tokens_per_s))
        )
    for k, d in enumerate(devices):
        v.require(
            d.type in seen,
            f"partition.devices[{k}].type",
            d.type,
            f"a type of serving_flow.device_types ({', '.join(sorted(seen)) or 'none listed'})",
        )
        v.require(
            d.name not in (SOURCE, SINK),
            f"partition.devices[{k}].name",
            d.name,
            f"a name other than {SOURCE!r} and {SINK!r} (the flow network's ends)",
        )
    names = {d.name for d in devices}
    links: list[PartitionFlowLink] = []
    pairs: set[tuple[str, str]] = set()
    for i, link in enumerate(sf.links):
        path = f"{P}.links[{i}]"
        ok = v.require(
            link.src in names or link.src == SOURCE,
            f"{path}.src",
            link.src,
            f"a device name or {SOURCE!r}",
        )
        ok = (
            v.require(
                link.dst in names or link.dst == SINK,
                f"{path}.dst",
                link.dst,
                f"a device name or {SINK!r}",
            )
            and ok
        )
        ok = ok and v.require(link.src != link.dst, f"{path}.dst", link.dst, "not the src")
        ok = ok and v.require(
            not (link.src == SOURCE and link.dst == SINK),
            f"{path}.dst",
            link.dst,
            "a device (source -> sink passes no layer)",
        )
        ok = ok and v.require(
            (link.src, link.dst) not in pairs, f"{path}.dst", link.dst, "each link listed once"
        )
        pairs.add((link.src, link.dst))
        if ok:
            links.append(PartitionFlowLink(link.src, link.dst, _clamp_float(link.tokens_per_s)))
    return PartitionServingFlow(tuple(types), tuple(links), bool(sf.partial_inference))


_MODE_VALUES = {
    PartitionMode.TRAINING: 1,
    PartitionMode.INFERENCE: 2,
    PartitionMode.SERVING: 3,
    PartitionMode.SERVING_FLOW: 4,
    PartitionMode.EDGE_SPLIT: 5,
}


def instance_to_message(instance: PartitionInstance) -> Any:
    """The ``placement.v1.PartitionInstance`` message of an instance."""
    msg = pb.PartitionInstance()
    for lay in instance.layers:
        m = msg.layers.add(
            name=lay.name,
            param_bytes=lay.param_bytes,
            activation_bytes=lay.activation_bytes,
            forward_flops=lay.forward_flops,
            backward_flops=lay.backward_flops,
            kv_cache_bytes_per_token=lay.kv_cache_bytes_per_token,
            extra_memory_bytes=lay.extra_memory_bytes,
            colocation_group=lay.colocation_group,
            allowed_device_types=list(lay.allowed_device_types),
            backward=lay.backward,
        )
        for t in lay.times:
            m.times.add(device_type=t.device_type, forward_s=t.forward_s, backward_s=t.backward_s)
    for e in instance.edges:
        msg.edges.add(
            src=instance.layers[e.src].name,
            dst=instance.layers[e.dst].name,
            bytes=e.bytes,
            transfer_s=e.transfer_s,
        )
    for d in instance.devices:
        msg.devices.add(
            name=d.name,
            type=d.type,
            memory_bytes=d.memory_bytes,
            flops_per_s=d.flops_per_s,
            node=d.node,
            host=d.host,
        )
    msg.links.inter_node_bandwidth_bytes_per_s = instance.links.inter_node_bandwidth_bytes_per_s
    msg.links.intra_node_bandwidth_bytes_per_s = instance.links.intra_node_bandwidth_bytes_per_s
    w = instance.workload
    msg.workload.mode = _MODE_VALUES[PartitionMode(w.mode)]
    msg.workload.batch_size = w.batch_size
    msg.workload.context_length = w.context_length
    msg.workload.in_flight_microbatches = w.in_flight_microbatches
    msg.workload.gradient_bytes_per_param_byte = w.gradient_bytes_per_param_byte
    msg.workload.optimizer_bytes_per_param_byte = w.optimizer_bytes_per_param_byte
    msg.workload.non_contiguous = w.non_contiguous
    if w.contiguity_rule is not None:
        msg.workload.contiguity = _CONTIGUITY_VALUES[w.contiguity_rule]
    if w.transfer_accounting is not PartitionTransferAccounting.PER_EDGE:
        msg.workload.transfer_accounting = _ACCOUNTING_VALUES[w.transfer_accounting]
    if w.serving_plan is not None:
        msg.workload.serving_plan.SetInParent()
        msg.workload.serving_plan.replicas = w.serving_plan.replicas
        msg.workload.serving_plan.tensor_parallel_sizes.extend(w.serving_plan.tensor_parallel_sizes)
        msg.workload.serving_plan.allreduce_latency_s = w.serving_plan.allreduce_latency_s
    if instance.serving_flow is not None:
        sf = instance.serving_flow
        msg.serving_flow.SetInParent()
        for t in sf.device_types:
            msg.serving_flow.device_types.add(
                type=t.type, max_layers=len(t.tokens_per_s), tokens_per_s=list(t.tokens_per_s)
            )
        for link in sf.links:
            msg.serving_flow.links.add(src=link.src, dst=link.dst, tokens_per_s=link.tokens_per_s)
        msg.serving_flow.partial_inference = sf.partial_inference
    if instance.edge_split is not None:
        edge_split_to_message(instance.edge_split, [lay.name for lay in instance.layers], msg)
    return msg


def solution_from_message(instance: PartitionInstance, msg: Any) -> PartitionSolution:
    """A :class:`PartitionSolution` from a ``PartitionSolution`` message.

    Names must exist in the instance (InputError otherwise); a layer given twice or left out
    is the checker's business (it is kept as -1, "unplaced").
    """
    v = ValidationCollector()
    if instance.workload.edge_split or msg.HasField("edge_split"):
        choice = choice_from_message(msg, v)
        v.raise_if_any()
        return PartitionSolution(edge_split=choice)
    if instance.workload.plan or msg.pipelines:
        pipelines: list[tuple[PlanStage, ...]] = []
        for p, pipe in enumerate(msg.pipelines):
            stages: list[PlanStage] = []
            for s, st in enumerate(pipe.stages):
                devs: list[int] = []
                for k, name in enumerate(st.devices):
                    device = instance.device_index.get(name)
                    if v.require(
                        device is not None,
                        f"partition.pipelines[{p}].stages[{s}].devices[{k}]",
                        name,
                        "the name of a device",
                    ):
                        devs.append(int(device))
                stages.append((tuple(devs), int(st.first_layer), int(st.layer_count)))
            pipelines.append(tuple(stages))
        v.require(
            not msg.assignments and not msg.ranges,
            "partition.assignments",
            f"{len(msg.assignments)} assignments, {len(msg.ranges)} ranges",
            "none (a serving plan's solution gives pipelines)",
        )
        v.raise_if_any()
        return PartitionSolution(pipelines=tuple(pipelines))
    if instance.workload.flow or msg.ranges:
        ranges: list[tuple[int, int, int]] = []
        for i, r in enumerate(msg.ranges):
            device = instance.device_index.get(r.device)
            if v.require(
                device is not None,
                f"partition.ranges[{i}].device",
                r.device,
                "the name of a device",
            ):
                ranges.append((int(device), int(r.first_layer), int(r.layer_count)))
        v.require(
            not msg.assignments,
            "partition.assignments",
            f"{len(msg.assignments)} entries",
            "none (an LLM_SERVING_FLOW solution gives ranges)",
        )
        v.raise_if_any()
        return PartitionSolution((), tuple(ranges))
    device_of = [-1] * len(instance.layers)
    for i, a in enumerate(msg.assignments):
        path = f"partition.assignments[{i}]"
        layer = instance.layer_index.get(a.layer)
        device = instance.device_index.get(a.device)
        ok = v.require(layer is not None, f"{path}.layer", a.layer, "the name of a layer")
        ok = (
            v.require(device is not None, f"{path}.device", a.device, "the name of a device") and ok
        )
        if ok and layer is not None and device is not None:
            v.require(device_of[layer] == -1, f"{path}.layer", a.layer, "each layer assigned once")
            device_of[layer] = device
    v.raise_if_any()
    return PartitionSolution(tuple(device_of))


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedPartitionSolution:
    """A :class:`PartitionSolution` by name: ``device_of["layer-3"] == "gpu-1"``; ``stages``
    lists each used device's layers in pipeline order."""

    device_of: dict[str, str]
    stages: dict[str, tuple[str, ...]]
    ranges: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """LLM_SERVING_FLOW: each used device's layers, first to last (``device_of`` and
    ``stages`` stay empty: a layer may be held by several devices)."""
    pipelines: tuple[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...], ...] = ()
    """Serving plans: per pipeline, per stage (its devices, its layers), by name."""
    edge_split: dict[str, int] = field(default_factory=dict)
    """EDGE_SPLIT_QUANTIZED: each device layer's bit-width by layer name (the rest run on
    the server at full precision)."""


def named_solution(
    instance: PartitionInstance, solution: PartitionSolution
) -> NamedPartitionSolution:
    """The assignment keyed by layer name, and the stages keyed by device name."""
    if solution.edge_split is not None:
        names = [lay.name for lay in instance.layers]
        bits = dict(zip(names, solution.edge_split.bits, strict=False))
        return NamedPartitionSolution({}, {}, edge_split=bits)
    if solution.pipelines:
        n_dev = len(instance.devices)
        plan = tuple(
            tuple(
                (
                    tuple(instance.devices[d].name for d in devs if 0 <= d < n_dev),
                    tuple(lay.name for lay in instance.layers[s : s + k]),
                )
                for devs, s, k in stages
            )
            for stages in solution.pipelines
        )
        return NamedPartitionSolution({}, {}, {}, plan)
    if solution.ranges:
        held = {
            instance.devices[d].name: tuple(lay.name for lay in instance.layers[s : s + k])
            for d, s, k in solution.ranges
            if 0 <= d < len(instance.devices)
        }
        return NamedPartitionSolution({}, {}, held)
    device_of: dict[str, str] = {}
    stages: dict[str, list[str]] = {}
    for layer, device in enumerate(solution.device_of):
        if 0 <= device < len(instance.devices):
            name, dev = instance.layers[layer].name, instance.devices[device].name
            device_of[name] = dev
            stages.setdefault(dev, []).append(name)
    return NamedPartitionSolution(device_of, {d: tuple(ls) for d, ls in stages.items()})


# The names before the family-prefixed convention (docs/library.md, "Names"), kept for callers.
LayerTime = PartitionLayerTime
Mode = PartitionMode
Layer = PartitionLayer
Edge = PartitionEdge
Device = PartitionDevice
Links = PartitionLinks
Workload = PartitionWorkload
