"""What ``placement import k8s`` and ``placement export k8s`` offer, declared as data."""

from __future__ import annotations

import sys
from typing import Any

from placement.models.gpu.formats.k8s.exporter import export_k8s
from placement.models.gpu.formats.k8s.importer import import_k8s
from placement.models.gpu.formats.k8s.report import write_report
from placement.models.gpu.instance import GpuInstance
from placement.solver.hooks import Exporter, Importer, Parameter


def _build(params: dict[str, Any]) -> GpuInstance:
    instance, report = import_k8s(
        params["nodes"],
        params["pods"],
        params.get("topology"),
        params.get("pod_groups"),
        params.get("priority_classes"),
        name=params.get("name") or "k8s",
    )
    for line in report.lines():
        print(f"placement: import k8s: {line}", file=sys.stderr)
    if params.get("report"):
        write_report(params["report"], report.to_dict())
    return instance


_REPORT = Parameter(
    "report",
    "path",
    None,
    metavar="REPORT.json",
    help="also write the import report as JSON: what was read, assumed, left out and ignored, "
    "per node and pod",
)

IMPORTERS = (
    Importer(
        format="k8s",
        family="gpu",
        help="a Kubernetes cluster's nodes and pods (kubectl get ... -o json)",
        description=(
            "Read a Kubernetes cluster's state: the NodeList and PodList that 'kubectl get "
            "nodes -o json' and 'kubectl get pods -A -o json' print, optionally a Kueue or KAI "
            "Topology, KAI/Volcano/coscheduling PodGroups and the PriorityClassList. Running "
            "pods become used capacity, pending pods the jobs (gangs from pod groups, with "
            "their required or preferred topology level). What the instance cannot say is "
            "reported per node and pod on stderr (and with --report as JSON). See "
            "docs/formulations/gpu.md, 'From Kubernetes and Slurm'."
        ),
        parameters=(
            Parameter(
                "nodes",
                "path",
                required=True,
                metavar="NODES.json",
                help="kubectl get nodes -o json",
            ),
            Parameter(
                "pods",
                "path",
                required=True,
                metavar="PODS.json",
                help="kubectl get pods -A -o json",
            ),
            Parameter(
                "topology",
                "path",
                metavar="TOPOLOGY.yaml",
                help="a Kueue (kueue.x-k8s.io) or KAI (kai.scheduler) Topology, JSON or YAML",
            ),
            Parameter(
                "pod_groups",
                "path",
                metavar="PODGROUPS.json",
                help="KAI (scheduling.run.ai), Volcano (scheduling.volcano.sh) or "
                "coscheduling (scheduling.x-k8s.io) PodGroups",
            ),
            Parameter(
                "priority_classes",
                "path",
                metavar="PCS.json",
                help="kubectl get priorityclasses -o json (default: spec.priority of the "
                "pods, else 0)",
            ),
            _REPORT,
            Parameter("name", "str", "k8s", help="instance name (default: k8s)"),
        ),
        build=_build,
    ),
)

EXPORTERS = (
    Exporter(
        format="k8s",
        family="gpu",
        help="Kubernetes Bindings and pod status patches (a v1 List)",
        description=(
            "Write a checked solution of an instance made by 'placement import k8s' as a "
            "Kubernetes v1 List: a v1 Binding per placed pod (target: its Node) and, for every "
            "pod left pending, a Pod status patch with the condition PodScheduled=False, reason "
            "Unschedulable and why it is not placed. With --report (the import's), pending pods "
            "that were not imported get the condition too."
        ),
        parameters=(
            Parameter(
                "report",
                "path",
                None,
                metavar="REPORT.json",
                help="the import report of 'placement import k8s --report'",
            ),
        ),
        build=export_k8s,
    ),
)
