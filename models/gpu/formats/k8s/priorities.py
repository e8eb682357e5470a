"""Priorities: a pod's ``PriorityClass`` value, and the instance's priority weights.

The class named by ``spec.priorityClassName``, else the pod's resolved ``spec.priority``,
else the class with ``globalDefault: true``, else 0; the distinct priorities of the pending
jobs become the weights 1, 2, ... in their order.
"""

from __future__ import annotations

from placement.models.gpu.formats.k8s.objects import read_items
from placement.models.gpu.formats.k8s.pods import Pod
from placement.models.gpu.formats.k8s.report import ImportReport
from placement.models.gpu.instance import MAX_PRIORITY
from placement.solver.errors import InputError

BUILTIN_PRIORITIES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
"""The two PriorityClasses every cluster has (k8s.io/api scheduling/v1 types)."""


def read_priority_classes(path: str | None, report: ImportReport) -> tuple[dict[str, int], int]:
    """Class name -> value, and the global default (0 without one)."""
    classes = dict(BUILTIN_PRIORITIES)
    default = 0
    if path:
        for src, item in read_items(path, ("PriorityClass",)):
            value = item.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                raise src.fail("value", value, "an integer priority")
            classes[src.name] = value
            if item.get("globalDefault") is True:
                default = value
        report.files["priority_classes"] = str(path)
    return classes, default


def pod_priority(
    pod: Pod, classes: dict[str, int], default: int, classes_given: bool, report: ImportReport
) -> int:
    """The priority of a pending pod; an unknown class is an error only when the classes were
    given (else reported, and the default is used)."""
    spec = pod.spec
    pcn = spec.get("priorityClassName") or ""
    if pcn and pcn in classes:
        return classes[pcn]
    if isinstance(spec.get("priority"), int):
        return spec["priority"]
    if pcn and classes_given:
        raise pod.src.fail("spec.priorityClassName", pcn, "a PriorityClass of PRIORITY_CLASSES")
    if pcn:
        report.ignore(f"Pod {pod.key}", "spec.priorityClassName (no class values given)", pcn)
    return default


def priority_weights(pods: list[Pod], pods_path: str, report: ImportReport) -> dict[int, int]:
    """Priority -> weight 1, 2, ... in increasing order (recorded in the report)."""
    pending_priorities = sorted({p.priority for p in pods})
    if len(pending_priorities) > MAX_PRIORITY:
        raise InputError.single(
            "spec.priority",
            len(pending_priorities),
            f"at most {MAX_PRIORITY} distinct priorities",
            file=str(pods_path),
        )
    weight = {p: i + 1 for i, p in enumerate(pending_priorities)}
    report.priorities = {str(p): w for p, w in weight.items()}
    return weight
