"""The topology levels: a Kueue or KAI ``Topology`` (or the NVLink clique label) as the
instance's levels above the node."""

from __future__ import annotations

from placement.models.gpu.formats.k8s.nodes import Node
from placement.models.gpu.formats.k8s.objects import read_items, typed_field
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.instance import TopologyLevel
from placement.solver.errors import InputError

CLIQUE_LABEL = "nvidia.com/gpu.clique"
HOSTNAME_LABEL = "kubernetes.io/hostname"
TOPOLOGY_GROUPS = ("kueue.x-k8s.io", "kai.scheduler")
BANDWIDTH_GBPS = {"nvlink": 300.0, "node": 64.0, "first_above_node": 50.0}
"""Nominal bandwidths (Kubernetes states none): halved for each level further out."""


def read_topology(path: str | None, nodes: list[Node], report: ImportReport) -> list[str]:
    """The node labels of the topology levels above the node, innermost first."""
    labels: list[str] = []
    if path:
        objs = read_items(path, ("Topology",))
        if len(objs) != 1:
            raise InputError.single("items", len(objs), "exactly one Topology", file=path)
        src, item = objs[0]
        api = typed_field(src, item, "apiVersion", str, "")
        if api.split("/")[0] not in TOPOLOGY_GROUPS:
            raise src.fail(
                "apiVersion", api, "kueue.x-k8s.io/v1alpha1|v1beta1 or kai.scheduler/v1alpha1"
            )
        levels = typed_field(src, item, "spec.levels", list, None)
        if not levels:
            raise src.fail("spec.levels", levels, "a non-empty list of {nodeLabel}")
        for k, lv in enumerate(levels):
            label = lv.get("nodeLabel") if isinstance(lv, dict) else None
            if not isinstance(label, str) or not label:
                raise src.fail(f"spec.levels[{k}].nodeLabel", label, "a node label name")
            if label in labels:
                raise src.fail(f"spec.levels[{k}].nodeLabel", label, "a label used once")
            if label == HOSTNAME_LABEL and k != len(levels) - 1:
                raise src.fail(
                    f"spec.levels[{k}].nodeLabel", label, "hostname only as the last level"
                )
            labels.append(label)
        report.files["topology"] = f"{api} Topology {src.name}"
    labels = [lb for lb in labels if lb != HOSTNAME_LABEL]
    labels.reverse()
    if CLIQUE_LABEL not in labels and any(CLIQUE_LABEL in n.labels for n in nodes):
        labels.insert(0, CLIQUE_LABEL)
        report.assumptions.append(
            f"{CLIQUE_LABEL} (multi-node NVLink domain) is a level just above the node"
        )
    return labels


def instance_levels(level_labels: list[str], report: ImportReport) -> list[TopologyLevel]:
    """``nvlink`` and ``node``, then one level per label, innermost first."""
    levels = [
        TopologyLevel("nvlink", BANDWIDTH_GBPS["nvlink"]),
        TopologyLevel("node", BANDWIDTH_GBPS["node"]),
    ]
    bw = BANDWIDTH_GBPS["first_above_node"]
    for label in level_labels:
        levels.append(TopologyLevel(label, bw))
        bw /= 2
    report.levels = [{"name": lv.name, "bandwidth_gbps": lv.bandwidth_gbps} for lv in levels]
    return levels
