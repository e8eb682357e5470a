"""The partition cost model: what a layer costs on a device, what crossing an edge costs, in
integer nanoseconds, and the limits their sums must respect.

The cost model is defined here, once, by the scalar functions :func:`layer_time_ns`,
:func:`edge_time_ns` and :func:`tensor_time_ns` (and the memory a layer needs,
:meth:`PartitionInstance.layer_memory_bytes`). The checker evaluates solutions with them; the
solvers build their numpy tables from them (:mod:`.tables`). The workload's mode decides what
a layer costs (training counts its backward pass, serving a batch per decode step), so
:class:`PartitionMode` is defined here too.

Times are integers in nanoseconds: each layer time and each transfer time is rounded to the
nearest nanosecond once, and every sum after that is exact, so the DP, CP-SAT, the MILP and
the checker agree to the last unit. This module sits below :mod:`.instance` (which validates
instances with :func:`check_magnitudes` and :func:`check_tensor_times`): it reads a
``PartitionInstance`` by its attributes and imports nothing of the family.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import finite

NS_PER_S = 1_000_000_000
"""Nanoseconds per second: the time resolution of the family."""
NS_PER_MS = 1_000_000
"""Nanoseconds per millisecond: objectives and bounds are reported in milliseconds."""
MAX_TOTAL_SECONDS = 1e9
"""Most seconds all layers and transfers of an instance may take together (~31 years): the
solvers count nanoseconds in int64."""
MAX_TOTAL_BYTES = 2**62
"""Most bytes all layers of an instance may need together (int64 in the solvers)."""


class PartitionMode(StrEnum):
    """The workload: what the split is for."""

    TRAINING = "TRAINING_PIPELINE"
    """Minimise the bottleneck stage time per micro-batch (forward + backward + transfers)."""
    INFERENCE = "INFERENCE_LATENCY"
    """Minimise the end-to-end time of one sample."""
    SERVING = "LLM_SERVING"
    """Maximise decode tokens per second: minimise the bottleneck time of one decode step."""
    SERVING_FLOW = "LLM_SERVING_FLOW"
    """Maximise tokens per second as the max flow through devices holding layer ranges
    (Helix); the data is in :attr:`PartitionInstance.serving_flow`."""
    EDGE_SPLIT = "EDGE_SPLIT_QUANTIZED"
    """QPART: one request's split between an edge device and a server and the device layers'
    bit-widths; the data is in :attr:`PartitionInstance.edge_split`."""

    @property
    def bottleneck(self) -> bool:
        """True when the objective is the slowest stage (pipelining), False for a sum."""
        return self is not PartitionMode.INFERENCE


def seconds_to_ns(seconds: float) -> int:
    """Seconds -> the nearest nanosecond (the family's one rounding step)."""
    return int(round(seconds * NS_PER_S))


def layer_time_ns(instance: Any, layer: int, device: int) -> int:
    """Nanoseconds layer ``layer`` takes on device ``device`` in the instance's workload.

    A measured time for the device's type wins; otherwise FLOPs / ``flops_per_s`` (serving:
    forward FLOPs per token x ``batch_size``). Training counts forward and backward.
    """
    lay, dev, w = instance.layers[layer], instance.devices[device], instance.workload
    measured = lay.measured(dev.type)
    training = w.mode is PartitionMode.TRAINING
    if measured is not None:
        seconds = measured.forward_s + (measured.backward_s if training else 0.0)
        return seconds_to_ns(seconds)
    flops = lay.forward_flops + (lay.backward_flops if training else 0.0)
    if w.mode is PartitionMode.SERVING:
        flops *= w.batch_size
    if flops == 0:
        return 0
    return seconds_to_ns(flops / dev.flops_per_s)


def edge_time_ns(instance: Any, edge: Any, a: int, b: int) -> int:
    """Nanoseconds to move ``edge``'s data from device ``a`` to device ``b`` (0 if a == b)."""
    if a == b:
        return 0
    if edge.transfer_s > 0:
        return seconds_to_ns(edge.transfer_s)
    if edge.bytes == 0:
        return 0
    nbytes = edge.bytes * instance.workload.comm_factor
    return seconds_to_ns(nbytes / instance.bandwidth(a, b))


def check_tensor_times(instance: Any, v: ValidationCollector) -> None:
    """Per-tensor accounting charges one fixed time per layer output: every edge out of a
    layer carries the same ``transfer_s`` and none is sized in bytes only (Tarnawski et al.'s
    loaders refuse a node with two different outgoing costs)."""
    first: dict[int, float] = {}
    for k, e in enumerate(instance.graph_edges):
        where = (
            f"partition.edges[{k}]"
            if instance.edges
            else f"partition.layers[{e.src}].activation_bytes"
        )
        if e.bytes > 0 and e.transfer_s == 0:
            v.add(
                where,
                e.bytes,
                "a fixed transfer_s (TRANSFER_PER_TENSOR_VIA_HOST charges fixed times)",
            )
            return
        seen = first.setdefault(e.src, e.transfer_s)
        if seen != e.transfer_s:
            v.add(
                f"{where}.transfer_s",
                e.transfer_s,
                f"{seen} like the other edges out of layer {instance.layers[e.src].name!r} "
                "(one transfer time per layer output under TRANSFER_PER_TENSOR_VIA_HOST)",
            )
            return


def tensor_time_ns(instance: Any, layer: int) -> int:
    """Per-tensor accounting: nanoseconds to move layer ``layer``'s output through the host
    (the ``transfer_s`` of its out-edges, equal by validation; 0 without out-edges)."""
    return instance.tensor_times_ns[layer]


def check_magnitudes(instance: Any, v: ValidationCollector) -> None:
    """Times and memory the solvers compute in int64 nanoseconds and bytes must fit: the sum
    of every layer's time on the slowest device and every transfer on the slowest link at
    most :data:`MAX_TOTAL_SECONDS`, the memory of all layers at most :data:`MAX_TOTAL_BYTES`.
    Each value alone can be valid and still overflow (1e300 FLOPs, 1e-300 FLOP/s)."""
    P = "partition"  # noqa: N806 - the JSON root, as in instance.instance_from_message
    speeds = [d.flops_per_s for d in instance.devices if d.flops_per_s > 0]
    slowest = min(speeds) if speeds else 0.0
    w = instance.workload
    total_s = 0.0
    total_bytes = 0
    for i, lay in enumerate(instance.layers):
        path = f"{P}.layers[{i}]"
        training = w.mode is PartitionMode.TRAINING
        worst = max(
            (t.forward_s + (t.backward_s if training else 0.0) for t in lay.times), default=0.0
        )
        flops = lay.forward_flops + (lay.backward_flops if training else 0.0)
        if w.mode is PartitionMode.SERVING:
            flops *= w.batch_size
        if flops > 0 and slowest > 0:
            worst = max(worst, flops / slowest)
        total_s += worst
        if not finite(total_s) or total_s > MAX_TOTAL_SECONDS:
            v.add(
                path,
                f"{worst:.3g} s on the slowest device",
                f"layer and transfer times that add up to at most {MAX_TOTAL_SECONDS:g} s",
            )
            return
        try:
            mem = instance.layer_memory_bytes(i)
        except OverflowError:
            mem = MAX_TOTAL_BYTES + 1
        total_bytes += mem
        if total_bytes > MAX_TOTAL_BYTES:
            v.add(path, f"{mem:.3g} bytes", "memory needs adding up to at most 2**62 bytes")
            return
    links = instance.links
    bandwidths = [
        b
        for b in (links.inter_node_bandwidth_bytes_per_s, links.intra_node_bandwidth_bytes_per_s)
        if b > 0
    ]
    slowest_link = min(bandwidths) if bandwidths else 0.0
    for k, e in enumerate(instance.graph_edges):
        t = e.transfer_s
        if not t and e.bytes and slowest_link > 0:
            t = e.bytes * w.comm_factor / slowest_link
        total_s += t
        if not finite(total_s) or total_s > MAX_TOTAL_SECONDS:
            where = f"{P}.edges[{k}]" if instance.edges else f"{P}.layers[{e.src}].activation_bytes"
            v.add(
                where,
                f"{t:.3g} s on the slowest link",
                f"layer and transfer times that add up to at most {MAX_TOTAL_SECONDS:g} s",
            )
            return
