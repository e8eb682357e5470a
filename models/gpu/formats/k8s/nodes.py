"""Nodes: read from a ``v1 NodeList``, charged with their running pods, and as GPU nodes.

A node's capacity is its ``status.allocatable``; its GPU type and memory come from the GPU
Feature Discovery labels. A node that takes no new pod is kept (its running pods are
counted) but never becomes a target.

A node's CPU capacity that falls with density (docs/formulations/gpu.md, §5a)
comes from two annotations: ``placement.io/cpu-overhead-per-pod`` (a CPU quantity, e.g.
``150m``: the effective CPU with k pods is allocatable minus k times it) and
``placement.io/cpu-capacity-curve`` (``PODS:CPU`` points, comma-separated, CPU a quantity:
``0:64,40:60,110:48`` or ``0:64000m,40:60000m``). Its running pods are ``pods_used``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from placement.models.gpu import density
from placement.models.gpu.density import CpuCapacityPoint
from placement.models.gpu.formats.k8s.objects import (
    GPU,
    IGNORED_RESOURCES,
    MIB,
    Source,
    get_field,
    milli_up,
    parse_quantity,
    read_items,
    string_map,
    typed_field,
)
from placement.models.gpu.formats.k8s.pods import Pod
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.instance import MAX_GPUS_PER_NODE, MILLI, GpuNode
from placement.solver.errors import ValidationCollector

OVERHEAD_ANNOTATION = "placement.io/cpu-overhead-per-pod"
CURVE_ANNOTATION = "placement.io/cpu-capacity-curve"
PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"


@dataclass
class Node:
    """A node as read; ``name`` is emptied when it takes no new pod."""

    name: str
    labels: dict[str, str]
    taints: list[dict[str, Any]]
    gpu_type: str
    gpus: int
    gpu_memory_mib: int
    cpu_milli: int
    memory_mib: int
    cpu_used: int = 0
    memory_used_bytes: int = 0
    gpu_milli_used: list[int] = field(default_factory=list)
    gpu_memory_used: list[int] = field(default_factory=list)
    pods: int = 0
    cpu_overhead_milli: int = 0
    cpu_curve: tuple[CpuCapacityPoint, ...] = ()


def _quantity(src: Source, obj: dict[str, Any], dotted: str, what: str) -> Fraction:
    raw = get_field(obj, dotted)
    q = parse_quantity(raw)
    if q is None or q < 0:
        raise src.fail(dotted, raw, f"a non-negative Kubernetes quantity ({what})")
    return q


def _density(src: Source, annotations: dict[str, str], cpu_milli: int) -> tuple[int, tuple]:
    """The node's per-pod CPU overhead and capacity curve from its annotations."""
    overhead = 0
    if OVERHEAD_ANNOTATION in annotations:
        raw = annotations[OVERHEAD_ANNOTATION]
        q = parse_quantity(raw)
        if q is None or q < 0:
            raise src.fail(
                f"metadata.annotations.{OVERHEAD_ANNOTATION}", raw, "a CPU quantity, e.g. 150m"
            )
        overhead = milli_up(q)
    points: list[CpuCapacityPoint] = []
    raw = annotations.get(CURVE_ANNOTATION, "")
    for part in raw.split(",") if CURVE_ANNOTATION in annotations else ():
        pods, _, cpu = part.strip().partition(":")
        q = parse_quantity(cpu.strip())
        if not pods.strip().isdigit() or q is None or q < 0:
            raise src.fail(
                f"metadata.annotations.{CURVE_ANNOTATION}",
                raw,
                "PODS:CPU points separated by commas, e.g. 0:64,40:60,110:48 (CPU a quantity)",
            )
        points.append(CpuCapacityPoint(int(pods), milli_up(q)))
    v = ValidationCollector()
    density.validate(v, "", cpu_milli, 0, 0, overhead, [(p.pods, p.cpu_milli) for p in points])
    if v.errors:
        raise src.fail(
            f"metadata.annotations.{CURVE_ANNOTATION}",
            raw,
            "points in increasing pods, a non-increasing and concave curve "
            f"({v.errors[0].expected})",
        )
    return overhead, tuple(points)


def read_nodes(path: str, report: ImportReport) -> list[Node]:
    """The nodes of a NodeList file; one that takes no new pod is kept nameless (reported)."""
    nodes: list[Node] = []
    seen: set[str] = set()
    for src, item in read_items(path, ("Node",)):
        name = src.name
        obj = f"Node {name}"
        if name in seen:
            raise src.fail("metadata.name", name, "a node name used once")
        seen.add(name)
        labels = string_map(src, item, "metadata.labels")
        allocatable = typed_field(src, item, "status.allocatable", dict, None)
        if allocatable is None:
            raise src.fail("status.allocatable", None, "the node's allocatable resources")
        cpu = _quantity(src, item, "status.allocatable.cpu", "CPU, e.g. 64 or 63500m")
        memory = _quantity(src, item, "status.allocatable.memory", "memory, e.g. 512Gi")
        gpus_q = parse_quantity(allocatable.get(GPU, 0))
        if gpus_q is None or gpus_q < 0 or gpus_q.denominator != 1:
            raise src.fail(
                f"status.allocatable.{GPU}", allocatable.get(GPU), "a whole number of GPUs"
            )
        gpus = int(gpus_q)
        if gpus > MAX_GPUS_PER_NODE:
            raise src.fail(f"status.allocatable.{GPU}", str(gpus_q), f"at most {MAX_GPUS_PER_NODE}")
        for res in allocatable:
            if res in ("cpu", "memory", GPU):
                continue
            if res in IGNORED_RESOURCES or res.startswith("hugepages-"):
                continue  # reported where a pod asks for it
            if parse_quantity(allocatable[res]) == 0:
                continue
            if res.startswith("nvidia.com/mig-"):
                report.ignore(obj, "status.allocatable MIG profiles", res)
            else:
                report.ignore(obj, "status.allocatable extended resources", res)
        taints = typed_field(src, item, "spec.taints", list, [])
        for k, t in enumerate(taints):
            if not isinstance(t, dict) or not isinstance(t.get("key", ""), str):
                raise src.fail(f"spec.taints[{k}]", t, "a taint {key, value, effect}")
        gpu_type = labels.get(PRODUCT_LABEL, "")
        if gpus > 0 and not gpu_type:
            gpu_type = GPU
            report.ignore(obj, f"labels.{PRODUCT_LABEL} (missing: GPU type {GPU!r})")
        gpu_memory = 0
        if GPU_MEMORY_LABEL in labels:
            raw = labels[GPU_MEMORY_LABEL]
            if not raw.isdigit():
                raise src.fail(f"metadata.labels.{GPU_MEMORY_LABEL}", raw, "MiB as an integer")
            gpu_memory = int(raw)
        if labels.get("nvidia.com/gpu.replicas", "1") not in ("", "1"):
            report.ignore(obj, "GPU time-slicing (nvidia.com/gpu.replicas): replicas as GPUs")
        excluded = ""
        if typed_field(src, item, "spec.unschedulable", bool, False):
            excluded = "spec.unschedulable"
        conditions = typed_field(src, item, "status.conditions", list, [])
        for c in conditions:
            if isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") != "True":
                excluded = excluded or f"Ready condition {c.get('status')}"
        node = Node(
            name=name,
            labels=labels,
            taints=[t for t in taints if t.get("effect") in ("NoSchedule", "NoExecute")],
            gpu_type=gpu_type,
            gpus=gpus,
            gpu_memory_mib=gpu_memory,
            cpu_milli=milli_up(cpu),
            memory_mib=int(memory // MIB),
            gpu_milli_used=[0] * gpus,
            gpu_memory_used=[0] * gpus,
        )
        annotations = string_map(src, item, "metadata.annotations")
        node.cpu_overhead_milli, node.cpu_curve = _density(src, annotations, node.cpu_milli)
        if excluded:
            report.excluded_nodes[name] = excluded
            node.name = ""  # kept to account for its pods, never a target
        nodes.append(node)
    return nodes


def place_running(pod: Pod, node: Node, report: ImportReport) -> None:
    """Count a running pod on its node; GPU indices are not in the API, so whole GPUs take the
    lowest free ones and shares the first GPU with room (reported when over capacity)."""
    node.cpu_used += pod.cpu_milli
    node.pods += 1
    node.memory_used_bytes += pod.memory_bytes
    need_whole, short = pod.gpus, 0
    for g in range(node.gpus):
        if need_whole and node.gpu_milli_used[g] == 0:
            node.gpu_milli_used[g] = MILLI
            node.gpu_memory_used[g] = node.gpu_memory_mib
            need_whole -= 1
    short += need_whole
    if pod.gpu_milli:
        fits = [
            g
            for g in range(node.gpus)
            if node.gpu_milli_used[g] + pod.gpu_milli <= MILLI
            and node.gpu_memory_used[g] + pod.gpu_memory_mib <= node.gpu_memory_mib
        ]
        if fits:
            g = max(fits, key=lambda g: node.gpu_milli_used[g])  # fullest first: shares pack
            node.gpu_milli_used[g] += pod.gpu_milli
            node.gpu_memory_used[g] += pod.gpu_memory_mib
        else:
            short += 1
    if short:
        report.ignore(f"Pod {pod.key}", "GPUs beyond its node's allocatable", node.name)


def gpu_nodes(nodes: list[Node], level_labels: list[str], report: ImportReport) -> list[GpuNode]:
    """The instance's nodes: capacity, used capacity (capped) and the domain of each level
    above the node (the path of label values from the outermost level)."""
    outer_first = list(reversed(level_labels))
    out: list[GpuNode] = []
    for n in nodes:
        path: list[str] = []
        groups_outer: list[str] = []
        for label in outer_first:
            value = n.labels.get(label)
            if value is None:
                value = f"{n.name} (no {label})"
                report.ignore(f"Node {n.name}", f"labels.{label} (missing: a domain of its own)")
            path.append(value)
            groups_outer.append("/".join(path))
        memory_used = -(-n.memory_used_bytes // MIB)
        if n.cpu_used > n.cpu_milli or memory_used > n.memory_mib:
            report.ignore(f"Node {n.name}", "running pods' requests beyond allocatable (capped)")
        node = GpuNode(
            name=n.name,
            gpu_type=n.gpu_type,
            gpu_count=n.gpus,
            gpu_memory_mib=n.gpu_memory_mib,
            nvlink_domain_size=0,
            cpu_milli=n.cpu_milli,
            memory_mib=n.memory_mib,
            cpu_milli_used=min(n.cpu_used, n.cpu_milli),
            memory_mib_used=min(memory_used, n.memory_mib),
            groups=tuple(reversed(groups_outer)),
            gpu_milli_used=tuple(n.gpu_milli_used),
            gpu_memory_mib_used=tuple(min(m, n.gpu_memory_mib) for m in n.gpu_memory_used),
            pods_used=n.pods,
            cpu_overhead_milli_per_pod=n.cpu_overhead_milli,
            cpu_capacity_curve=n.cpu_curve,
        )
        out.append(_within_density(node, report))
    return out


def _within_density(node: GpuNode, report: ImportReport) -> GpuNode:
    """``node`` with its running pods' CPU capped at the effective capacity of its density
    annotations (reported), as requests beyond allocatable are."""
    used, pods = node.cpu_milli_used, node.pods_used
    if node.cpu_fits(used, pods):
        return node
    report.ignore(
        f"Node {node.name}", "running pods' CPU beyond the effective capacity at their density"
    )
    used = max(0, min(used, int(node.effective_cpu_milli(pods))))
    while pods > 0 and not node.cpu_fits(used, pods):
        pods -= 1
    return replace(node, cpu_milli_used=used, pods_used=pods)
