"""``import_k8s``: a cluster's Kubernetes objects as a GPU instance, step by step.

Read the nodes and the topology levels above them; the priority classes and pod groups;
the pods (running ones are used capacity of their node, pending ones are candidates); keep
the pending pods the instance can say; group them into gangs; then write the cluster.
"""

from __future__ import annotations

from pathlib import Path

from placement.models.gpu.formats.k8s.gangs import Gang, collect_groups, gangs, read_pod_groups
from placement.models.gpu.formats.k8s.node_restrictions import restricted_gpu_types
from placement.models.gpu.formats.k8s.nodes import (
    Node,
    gpu_nodes,
    place_running,
    read_nodes,
)
from placement.models.gpu.formats.k8s.objects import MIB, read_items
from placement.models.gpu.formats.k8s.pods import Pod, read_pod, report_unmodelled_fields
from placement.models.gpu.formats.k8s.priorities import (
    pod_priority,
    priority_weights,
    read_priority_classes,
)
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.formats.k8s.topology import instance_levels, read_topology
from placement.models.gpu.instance import GpuInstance, GpuJob
from placement.solver.errors import InputError
from placement.solver.family import validate


def import_k8s(
    nodes_path: str,
    pods_path: str,
    topology_path: str | None = None,
    pod_groups_path: str | None = None,
    priority_classes_path: str | None = None,
    name: str = "k8s",
) -> tuple[GpuInstance, ImportReport]:
    """Read a cluster's Kubernetes objects into a GPU instance and an import report.

    Parameters
    ----------
    nodes_path, pods_path:
        ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json`` output.
    topology_path:
        A Kueue or KAI ``Topology`` (JSON or YAML), or None (levels ``nvlink`` and ``node``,
        plus the NVLink clique if nodes carry ``nvidia.com/gpu.clique``).
    pod_groups_path:
        KAI / Volcano / coscheduling ``PodGroup`` objects, or None.
    priority_classes_path:
        A ``PriorityClassList`` (``kubectl get priorityclasses -o json``), or None.

    Returns
    -------
    tuple
        The validated instance and the :class:`ImportReport`.

    Raises
    ------
    InputError
        A malformed object: the file, the object's kind and namespace/name and the JSON path.
    """
    report = ImportReport(files={"nodes": str(nodes_path), "pods": str(pods_path)})
    nodes = _schedulable_nodes(nodes_path, report)
    level_labels = read_topology(topology_path, nodes, report)
    classes, default_priority = read_priority_classes(priority_classes_path, report)
    pod_groups = read_pod_groups(pod_groups_path)
    if pod_groups_path:
        report.files["pod_groups"] = str(pod_groups_path)

    importable: list[Pod] = []
    for pod in _pending_pods(pods_path, nodes, report):
        pod.priority = pod_priority(
            pod, classes, default_priority, bool(priority_classes_path), report
        )
        if _importable(pod, nodes, report):
            importable.append(pod)

    groups, singles = collect_groups(importable)
    weight = priority_weights(importable, pods_path, report)
    jobs: list[GpuJob] = []
    for gang in gangs(groups, singles, pod_groups, level_labels, report):
        jobs.append(_job(gang, weight))
        report.jobs[gang.name] = [p.key for p in gang.pods]

    levels = instance_levels(level_labels, report)
    cluster = gpu_nodes(nodes, level_labels, report)
    report.assumptions.append(
        "each node is one NVLink domain; GPU indices of running pods are not in the API "
        "(whole GPUs take the lowest free, shares the fullest GPU with room)"
    )
    report.assumptions.append("status.allocatable.pods (pods per node) is not checked")
    report.assumptions.append(
        "priority weights: pending priorities in increasing order become 1, 2, ... "
        f"(without a class: {default_priority})"
    )
    instance = GpuInstance(
        levels=levels,
        nodes=cluster,
        jobs=jobs,
        name=name,
        description=(
            f"Kubernetes cluster state from {Path(nodes_path).name} and {Path(pods_path).name}: "
            f"{len(cluster)} nodes, {len(jobs)} jobs of {sum(len(v) for v in report.jobs.values())} "
            f"pending pods ({len(report.not_imported)} not imported)"
        ),
    )
    validate(instance)
    return instance, report


def _schedulable_nodes(nodes_path: str, report: ImportReport) -> list[Node]:
    """The nodes that take new pods (at least one, else an error)."""
    kept = [n for n in read_nodes(nodes_path, report) if n.name]
    if not kept:
        raise InputError.single(
            "items", 0, "at least one schedulable, Ready node", file=str(nodes_path)
        )
    return kept


def _pending_pods(pods_path: str, nodes: list[Node], report: ImportReport) -> list[Pod]:
    """The pending pods without a node; a running pod is counted on its node instead."""
    node_of = {n.name: n for n in nodes}
    excluded_names = set(report.excluded_nodes)
    pending: list[Pod] = []
    for src, item in read_items(pods_path, ("Pod",)):
        pod = read_pod(src, item, report)
        finished = pod.phase in ("Succeeded", "Failed")
        if finished:
            continue
        if pod.node_name:
            node = node_of.get(pod.node_name)
            if node is not None:
                place_running(pod, node, report)
                if pod.unmodelled:
                    report.ignore(
                        f"Pod {pod.key}", "resources (not modelled)", ", ".join(pod.unmodelled)
                    )
            elif pod.node_name not in excluded_names:
                report.ignore(
                    f"Pod {pod.key}", "spec.nodeName (not a node of NODES)", pod.node_name
                )
            continue
        if pod.phase != "Pending":
            report.ignore(f"Pod {pod.key}", f"status.phase {pod.phase} without spec.nodeName")
            continue
        pending.append(pod)
    return pending


def _importable(pod: Pod, nodes: list[Node], report: ImportReport) -> bool:
    """Whether the instance can say a pending pod (if not, the report says why); sets the
    GPU types its node restrictions single out."""
    if pod.spec.get("schedulingGates"):
        report.not_imported[pod.key] = "spec.schedulingGates (not ready to be scheduled)"
        return False
    if pod.unmodelled:
        report.not_imported[pod.key] = (
            "requests " + ", ".join(sorted(pod.unmodelled)) + " (not modelled)"
        )
        return False
    pod.gpu_types, why_not = restricted_gpu_types(pod, nodes)
    if why_not:
        report.not_imported[pod.key] = why_not
        return False
    report_unmodelled_fields(pod, report)
    return True


def _job(gang: Gang, weight: dict[int, int]) -> GpuJob:
    """The instance's job for a gang: the shape of its (identical) pods."""
    p = gang.pods[0]
    return GpuJob(
        name=gang.name,
        workers=len(gang.pods),
        gpus=p.gpus,
        gpu_milli=p.gpu_milli,
        gpu_memory_mib=p.gpu_memory_mib,
        cpu_milli=p.cpu_milli,
        memory_mib=-(-p.memory_bytes // MIB),
        gpu_types=p.gpu_types,
        priority=weight[p.priority],
        locality_level=gang.level,
        locality_required=gang.required,
        worker_names=tuple(q.key for q in gang.pods),
    )
