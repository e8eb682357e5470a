"""Pods: what a pod asks for, as kube-scheduler counts it, and what else bears on placement.

The request of a pod is the larger of its containers (plus restartable init "sidecar"
containers) and each init container (plus the sidecars started before it), plus
``spec.overhead``; KAI's ``gpu-fraction`` and ``gpu-memory`` annotations ask for a share of
one GPU. Fields that bear on placement and that the instance cannot say are reported.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from placement.models.gpu.formats.k8s.objects import (
    GPU,
    IGNORED_RESOURCES,
    Source,
    get_field,
    milli_up,
    parse_quantity,
    string_map,
    typed_field,
)
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.instance import MILLI

KAI_FRACTION = "gpu-fraction"
KAI_GPU_MEMORY = "gpu-memory"


@dataclass
class Pod:
    """A pod as read, with its effective requests; ``priority`` and ``gpu_types`` are set
    when a pending pod is judged importable."""

    key: str  # namespace/name
    src: Source
    item: dict[str, Any]
    annotations: dict[str, str]
    labels: dict[str, str]
    node_name: str
    phase: str
    cpu_milli: int = 0
    memory_bytes: int = 0
    gpus: int = 0
    gpu_milli: int = 0
    gpu_memory_mib: int = 0
    unmodelled: list[str] = field(default_factory=list)
    priority: int = 0
    spec: dict[str, Any] = field(default_factory=dict)
    gpu_types: tuple[str, ...] = ()
    """The GPU types its node restrictions single out (empty: every node)."""


_MODELLED = ("cpu", "memory", GPU)


def _container_requests(src: Source, c: dict[str, Any], where: str) -> dict[str, Fraction]:
    """A container's requests, a missing request defaulting to its limit (core/v1 defaulting)."""
    req = typed_field(src, c, "resources.requests", dict, {})
    lim = typed_field(src, c, "resources.limits", dict, {})
    out: dict[str, Fraction] = {}
    for res in set(req) | set(lim):
        source, raw = ("requests", req[res]) if res in req else ("limits", lim[res])
        q = parse_quantity(raw)
        if q is None or q < 0:
            raise src.fail(
                f"{where}.resources.{source}.{res}", raw, "a non-negative Kubernetes quantity"
            )
        out[res] = q
    return out


def _pod_requests(src: Source, item: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective request per resource, as kube-scheduler computes it."""
    containers = typed_field(src, item, "spec.containers", list, None)
    if not containers:
        raise src.fail("spec.containers", containers, "a non-empty list of containers")
    total: dict[str, Fraction] = {}

    def add(into: dict[str, Fraction], req: dict[str, Fraction]) -> None:
        for res, q in req.items():
            into[res] = into.get(res, Fraction(0)) + q

    for k, c in enumerate(containers):
        if not isinstance(c, dict):
            raise src.fail(f"spec.containers[{k}]", c, "a container object")
        add(total, _container_requests(src, c, f"spec.containers[{k}]"))
    sidecars: dict[str, Fraction] = {}
    init_peak: dict[str, Fraction] = {}
    for k, c in enumerate(typed_field(src, item, "spec.initContainers", list, [])):
        if not isinstance(c, dict):
            raise src.fail(f"spec.initContainers[{k}]", c, "a container object")
        req = _container_requests(src, c, f"spec.initContainers[{k}]")
        if c.get("restartPolicy") == "Always":  # a sidecar runs beside everything after it
            add(sidecars, req)
            add(total, req)
            continue
        for res in set(req) | set(sidecars):
            need = req.get(res, Fraction(0)) + sidecars.get(res, Fraction(0))
            init_peak[res] = max(init_peak.get(res, Fraction(0)), need)
    for res, q in init_peak.items():
        total[res] = max(total.get(res, Fraction(0)), q)
    overhead = typed_field(src, item, "spec.overhead", dict, {})
    for res, raw in overhead.items():
        q = parse_quantity(raw)
        if q is None or q < 0:
            raise src.fail(f"spec.overhead.{res}", raw, "a non-negative Kubernetes quantity")
        total[res] = total.get(res, Fraction(0)) + q
    return total


def read_pod(src: Source, item: dict[str, Any], report: ImportReport) -> Pod:
    """A pod of a PodList: its effective requests, GPU share and what is not modelled."""
    obj = f"Pod {src.name}"
    pod = Pod(
        key=src.name,
        src=src,
        item=item,
        annotations=string_map(src, item, "metadata.annotations"),
        labels=string_map(src, item, "metadata.labels"),
        node_name=typed_field(src, item, "spec.nodeName", str, ""),
        phase=typed_field(src, item, "status.phase", str, "Pending"),
        spec=typed_field(src, item, "spec", dict, {}),
    )
    _check_shapes(src, pod.spec)
    requests = _pod_requests(src, item)
    pod.cpu_milli = milli_up(requests.get("cpu", Fraction(0)))
    pod.memory_bytes = math.ceil(requests.get("memory", Fraction(0)))
    gpus = requests.get(GPU, Fraction(0))
    if gpus.denominator != 1:
        raise src.fail(f"resources {GPU}", str(gpus), "a whole number of GPUs")
    pod.gpus = int(gpus)
    for res in requests:
        if res in _MODELLED:
            continue
        if requests[res] == 0:
            continue
        if res in IGNORED_RESOURCES or res.startswith("hugepages-"):
            report.ignore(obj, f"resources.{res}")
        else:
            pod.unmodelled.append(res)
    fraction = pod.annotations.get(KAI_FRACTION)
    if fraction is not None:
        f = parse_quantity(fraction)
        path = f"metadata.annotations.{KAI_FRACTION}"
        if f is None or not 0 < f <= 1:
            raise src.fail(path, fraction, "a GPU fraction in (0, 1], e.g. 0.5")
        if pod.gpus:
            raise src.fail(path, fraction, f"no {GPU} request beside a GPU fraction")
        milli = math.ceil(f * MILLI)
        if milli >= MILLI:
            pod.gpus = 1
        else:
            pod.gpu_milli = milli
    memory = pod.annotations.get(KAI_GPU_MEMORY)
    if memory is not None:
        path = f"metadata.annotations.{KAI_GPU_MEMORY}"
        if not memory.isdigit() or int(memory) == 0:
            raise src.fail(path, memory, "GPU memory in MiB, a positive integer")
        if pod.gpus:
            raise src.fail(path, memory, f"no {GPU} request beside a GPU memory share")
        pod.gpu_memory_mib = int(memory)
        if not pod.gpu_milli:
            pod.gpu_milli = 1  # KAI limits such a pod by memory alone
    if "gpu-fraction-num-devices" in pod.annotations:
        pod.unmodelled.append("gpu-fraction-num-devices (fractions of several GPUs)")
    return pod


_SPEC_LISTS = (
    "tolerations",
    "topologySpreadConstraints",
    "resourceClaims",
    "volumes",
    "schedulingGates",
)
_SPEC_STRINGS = ("priorityClassName", "nodeName", "schedulerName")


def _check_shapes(src: Source, spec: dict[str, Any]) -> None:
    """The pod spec fields the importer reads have their core/v1 JSON types."""
    for key in _SPEC_LISTS:
        value = spec.get(key)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, dict) for v in value)
        ):
            raise src.fail(f"spec.{key}", value, "a list of objects")
    for key in _SPEC_STRINGS:
        if spec.get(key) is not None and not isinstance(spec[key], str):
            raise src.fail(f"spec.{key}", spec[key], "a string")
    if spec.get("priority") is not None and (
        not isinstance(spec["priority"], int) or isinstance(spec["priority"], bool)
    ):
        raise src.fail("spec.priority", spec["priority"], "an integer")
    affinity = spec.get("affinity")
    if affinity is not None and not isinstance(affinity, dict):
        raise src.fail("spec.affinity", affinity, "an object")
    node_affinity = (affinity or {}).get("nodeAffinity")
    if node_affinity is not None and not isinstance(node_affinity, dict):
        raise src.fail("spec.affinity.nodeAffinity", node_affinity, "an object")
    required = (node_affinity or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = required.get("nodeSelectorTerms") if isinstance(required, dict) else None
        where = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        if not isinstance(terms, list) or not all(isinstance(t, dict) for t in terms):
            raise src.fail(f"{where}.nodeSelectorTerms", terms, "a list of node selector terms")
        for i, term in enumerate(terms):
            for kind in ("matchExpressions", "matchFields"):
                exprs = term.get(kind, [])
                ok = isinstance(exprs, list) and all(
                    isinstance(e, dict)
                    and isinstance(e.get("key"), str)
                    and isinstance(e.get("operator"), str)
                    and isinstance(e.get("values", []), list)
                    for e in exprs
                )
                if not ok:
                    raise src.fail(
                        f"{where}.nodeSelectorTerms[{i}].{kind}",
                        exprs,
                        "a list of {key, operator, values}",
                    )
    for group in ("containers", "initContainers"):
        if spec.get(group) is not None and not isinstance(spec[group], list):
            raise src.fail(f"spec.{group}", spec[group], "a list of containers")
        for k, c in enumerate(spec.get(group) or []):
            ports = c.get("ports") if isinstance(c, dict) else None
            if ports is not None and not (
                isinstance(ports, list) and all(isinstance(p, dict) for p in ports)
            ):
                raise src.fail(f"spec.{group}[{k}].ports", ports, "a list of container ports")


def report_unmodelled_fields(pod: Pod, report: ImportReport) -> None:
    """Report what bears on placement and that no part of the instance says."""
    obj = f"Pod {pod.key}"
    spec = pod.spec
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind):
            report.ignore(obj, f"spec.affinity.{kind}")
    if get_field(affinity, "nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"):
        report.ignore(obj, "spec.affinity.nodeAffinity.preferred (soft)")
    if spec.get("topologySpreadConstraints"):
        report.ignore(obj, "spec.topologySpreadConstraints")
    if spec.get("resourceClaims"):
        report.ignore(obj, "spec.resourceClaims (DRA)")
    for group in ("containers", "initContainers"):
        for c in spec.get(group) or []:
            if any(isinstance(p, dict) and p.get("hostPort") for p in c.get("ports") or []):
                report.ignore(obj, "hostPort")
    for v in spec.get("volumes") or []:
        if isinstance(v, dict) and "persistentVolumeClaim" in v:
            report.ignore(obj, "spec.volumes persistentVolumeClaim (volume node affinity)")
