"""Gangs: the pod groups of four dialects, and the jobs (all-or-nothing gangs) they become.

Kueue plain pod groups (a label and a total-count annotation), KAI PodGroups
(``scheduling.run.ai``), Volcano PodGroups (``scheduling.volcano.sh``) and scheduler-plugins
coscheduling (``scheduling.x-k8s.io``); a gang's topology level comes from Kueue's or KAI's
pod annotations, the KAI PodGroup's ``topologyConstraint`` or a Volcano network tier. The
pods of a group with different shapes become one gang per shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from placement.models.gpu.formats.k8s.objects import Source, read_items, typed_field
from placement.models.gpu.formats.k8s.pods import Pod
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.formats.k8s.topology import HOSTNAME_LABEL

KAI_GROUP = "pod-group-name"
KAI_REQUIRED = "kai.scheduler/topology-required-placement"
KAI_PREFERRED = "kai.scheduler/topology-preferred-placement"
KUEUE_GROUP = "kueue.x-k8s.io/pod-group-name"
KUEUE_TOTAL = "kueue.x-k8s.io/pod-group-total-count"
KUEUE_REQUIRED = "kueue.x-k8s.io/podset-required-topology"
KUEUE_PREFERRED = "kueue.x-k8s.io/podset-preferred-topology"
VOLCANO_GROUP = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_OWN = "scheduling.volcano.sh/group-name"
COSCHEDULING_GROUP = "scheduling.x-k8s.io/pod-group"
POD_GROUP_KINDS = {
    "scheduling.run.ai": "kai",
    "scheduling.volcano.sh": "volcano",
    "scheduling.x-k8s.io": "coscheduling",
}


@dataclass
class Group:
    """The pending pods of one pod group and what its dialect says of it."""

    key: str  # "kueue:ns/name" ...
    pods: list[Pod] = field(default_factory=list)
    min_member: int = 0
    total: int = 0
    required: str = ""  # a node label or "kubernetes.io/hostname" or "tier:N"
    preferred: str = ""
    running: int = 0


def read_pod_groups(path: str | None) -> dict[str, dict[str, Any]]:
    """``kind:namespace/name`` -> the PodGroup spec (KAI, Volcano, coscheduling)."""
    out: dict[str, dict[str, Any]] = {}
    if not path:
        return out
    for src, item in read_items(path, ("PodGroup",)):
        api = typed_field(src, item, "apiVersion", str, "")
        which = POD_GROUP_KINDS.get(api.split("/")[0])
        if which is None:
            raise src.fail("apiVersion", api, "a PodGroup of " + ", ".join(POD_GROUP_KINDS))
        spec = typed_field(src, item, "spec", dict, {})
        mm = spec.get("minMember", 0)
        if not isinstance(mm, int) or isinstance(mm, bool) or mm < 0:
            raise src.fail("spec.minMember", mm, "a non-negative integer")
        ns = src.name.split("/")[0] if "/" in src.name else "default"
        name = src.name.split("/", 1)[-1]
        group: dict[str, Any] = {"min_member": mm, "required": "", "preferred": ""}
        if which == "kai":
            typed_field(src, item, "spec.topologyConstraint", dict, {})
            for key, field_name in (("required", "requiredTopologyLevel"),
                                    ("preferred", "preferredTopologyLevel")):  # fmt: skip
                path = f"spec.topologyConstraint.{field_name}"
                group[key] = typed_field(src, item, path, str, "")
        elif which == "volcano" and spec.get("networkTopology"):
            nt = typed_field(src, item, "spec.networkTopology", dict, {})
            tier = nt.get("highestTierAllowed", 1)
            if not isinstance(tier, int) or isinstance(tier, bool) or tier < 1:
                raise src.fail("spec.networkTopology.highestTierAllowed", tier, "a tier >= 1")
            mode = nt.get("mode", "hard")
            if mode not in ("hard", "soft"):
                raise src.fail("spec.networkTopology.mode", mode, "hard or soft")
            group["required" if mode == "hard" else "preferred"] = f"tier:{tier}"
        out[f"{which}:{ns}/{name}"] = group
    return out


def group_key(pod: Pod) -> tuple[str, str]:
    """(gang key, the API it came from) or ("", "")."""
    ns = pod.key.split("/")[0]
    if KUEUE_GROUP in pod.labels:
        return f"kueue:{ns}/{pod.labels[KUEUE_GROUP]}", "kueue"
    if KAI_GROUP in pod.annotations:
        return f"kai:{ns}/{pod.annotations[KAI_GROUP]}", "kai"
    for key in (VOLCANO_GROUP, VOLCANO_GROUP_OWN):
        if key in pod.annotations:
            return f"volcano:{ns}/{pod.annotations[key]}", "volcano"
    if COSCHEDULING_GROUP in pod.labels:
        return f"coscheduling:{ns}/{pod.labels[COSCHEDULING_GROUP]}", "coscheduling"
    return "", ""


def level_of(value: str, labels: list[str], src: Source, path: str) -> str:
    """Our level name for a topology annotation's value."""
    if value == HOSTNAME_LABEL:
        return "node"
    if value.startswith("tier:"):
        tier = int(value[5:])
        if tier > len(labels):
            return ""  # above every level we know: no constraint
        return labels[tier - 1]
    if value in labels:
        return value
    expected = "a level of the topology: " + ", ".join([HOSTNAME_LABEL, *labels])
    if not labels:
        # Issue 41: the README's sample failed here with no hint of the missing flag.
        expected += " (no Topology was given: --topology names the cluster's Kueue or KAI one)"
    raise src.fail(path, value, expected)


def collect_groups(pods: list[Pod]) -> tuple[dict[str, Group], list[Pod]]:
    """The pods of each pod group (with the Kueue total and the topology annotations), and
    the pods of no group."""
    groups: dict[str, Group] = {}
    singles: list[Pod] = []
    for pod in pods:
        key, which = group_key(pod)
        if not key:
            singles.append(pod)
            continue
        g = groups.setdefault(key, Group(key))
        g.pods.append(pod)
        if which == "kueue":
            raw = pod.annotations.get(KUEUE_TOTAL, "")
            if not raw.isdigit() or int(raw) < 1:
                raise pod.src.fail(
                    f"metadata.annotations.{KUEUE_TOTAL}", raw or None, "a pod count >= 1"
                )
            g.total = int(raw)
        if pod.annotations.get(KUEUE_REQUIRED) or pod.annotations.get(KAI_REQUIRED):
            g.required = pod.annotations.get(KUEUE_REQUIRED) or pod.annotations[KAI_REQUIRED]
        if pod.annotations.get(KUEUE_PREFERRED) or pod.annotations.get(KAI_PREFERRED):
            g.preferred = pod.annotations.get(KUEUE_PREFERRED) or pod.annotations[KAI_PREFERRED]
    return groups, singles


@dataclass
class Gang:
    """The pods of one job of the instance (a gang of one shape, or a lone pod) and the
    topology level they must (``required``) or should share."""

    name: str
    pods: list[Pod]
    level: str = ""
    required: bool = False


def gangs(
    groups: dict[str, Group],
    singles: list[Pod],
    pod_groups: dict[str, dict[str, Any]],
    level_labels: list[str],
    report: ImportReport,
) -> list[Gang]:
    """The jobs of the pending pods: the gangs of each complete group, then the lone pods."""
    out: list[Gang] = []
    for g in groups.values():
        out += _group_gangs(g, pod_groups.get(g.key), level_labels, report)
    out += [Gang(p.key, [p]) for p in sorted(singles, key=lambda p: p.key)]
    return out


def _group_gangs(
    g: Group, spec: dict[str, Any] | None, level_labels: list[str], report: ImportReport
) -> list[Gang]:
    """One gang per shape of a complete group (none, reported, when it is incomplete)."""
    which, _, gname = g.key.partition(":")
    pods = sorted(g.pods, key=lambda p: p.key)
    src = pods[0].src
    if spec is not None:
        g.min_member = spec["min_member"]
        g.required = g.required or spec["required"]
        g.preferred = g.preferred or spec["preferred"]
    need = g.total or g.min_member or len(pods)
    if len(pods) < need:
        for p in pods:
            report.not_imported[p.key] = (
                f"pod group {gname} ({which}) incomplete: {len(pods)} pending of {need}"
            )
        return []
    required = (
        level_of(g.required, level_labels, src, "topology-required annotation")
        if g.required
        else ""
    )
    preferred = (
        level_of(g.preferred, level_labels, src, "topology-preferred annotation")
        if g.preferred
        else ""
    )
    level, is_required = (required, True) if required else (preferred, False)
    if required and preferred:
        report.ignore(f"PodGroup {gname}", "preferred level beside a required one", preferred)
    shapes: dict[tuple[Any, ...], list[Pod]] = {}
    for p in pods:
        shape = (
            p.gpus,
            p.gpu_milli,
            p.gpu_memory_mib,
            p.cpu_milli,
            p.memory_bytes,
            p.gpu_types,
            p.priority,
        )
        shapes.setdefault(shape, []).append(p)
    gang = gname
    if len(shapes) > 1:
        report.ignore(
            f"PodGroup {gname}",
            "all-or-nothing across pods of different shapes (one gang per shape)",
            f"{len(shapes)} shapes",
        )
    out: list[Gang] = []
    for k, members in enumerate(shapes.values()):
        job_name = gang if k == 0 else f"{gang}#{k + 1}"
        if g.min_member and g.min_member < len(members) and len(shapes) == 1:
            report.ignore(
                f"PodGroup {gname}",
                "minMember below the pods (a gang of all pending pods)",
                f"{g.min_member} < {len(members)}",
            )
        out.append(Gang(job_name, members, level, is_required))
    return out
