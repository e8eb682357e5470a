"""Node restrictions of a pod: ``nodeSelector``, required node affinity and tolerations.

They are evaluated on every node (core/v1 semantics); the instance can say them only when
they allow every node or exactly the nodes of some GPU types.
"""

from __future__ import annotations

from typing import Any

from placement.models.gpu.formats.k8s.nodes import Node
from placement.models.gpu.formats.k8s.objects import get_field, string_map, typed_field
from placement.models.gpu.formats.k8s.pods import Pod


def _expression_holds(expr: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op = expr.get("key", ""), expr.get("operator", "")
    values = expr.get("values") or []
    if op == "In":
        return key in labels and labels[key] in values
    if op == "NotIn":
        return key not in labels or labels[key] not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if op == "Gt" else have < want
    return False


def _tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for t in tolerations:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        op = t.get("operator") or "Equal"
        if op == "Exists" and not t.get("key"):
            return True
        if t.get("key") != taint.get("key"):
            continue
        if op == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def allowed_nodes(pod: Pod, nodes: list[Node]) -> list[bool]:
    """Per node: whether the pod's nodeSelector, required node affinity and tolerations
    allow it (core/v1 semantics: terms are ORed, expressions ANDed)."""
    src, spec = pod.src, pod.spec
    selector = string_map(src, pod.item, "spec.nodeSelector")
    terms = get_field(
        spec,
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    )
    tolerations = typed_field(src, pod.item, "spec.tolerations", list, [])
    out = []
    for node in nodes:
        ok = all(node.labels.get(k) == v for k, v in selector.items())
        if ok and terms:
            ok = any(
                all(_expression_holds(e, node.labels) for e in t.get("matchExpressions") or [])
                and all(
                    _expression_holds(e, {"metadata.name": node.name})
                    for e in t.get("matchFields") or []
                )
                for t in terms
                if isinstance(t, dict)
            )
        if ok:
            ok = all(_tolerates(tolerations, taint) for taint in node.taints)
        out.append(ok)
    return out


def restricted_gpu_types(pod: Pod, nodes: list[Node]) -> tuple[tuple[str, ...], str]:
    """The GPU types the pod's node restrictions single out (empty when they allow every
    node), and why the pod cannot be imported ("" when it can)."""
    allowed = allowed_nodes(pod, nodes)
    if not any(allowed):
        return (), "no node satisfies its nodeSelector, node affinity and tolerations"
    if all(allowed):
        return (), ""
    ok_types = {n.gpu_type for n, a in zip(nodes, allowed, strict=True) if a}
    exact = pod.gpus + pod.gpu_milli > 0 and all(
        a == (n.gpu_type in ok_types) for n, a in zip(nodes, allowed, strict=True)
    )
    if not exact:
        return (), (
            "its nodeSelector, node affinity and tolerations allow nodes the instance "
            "cannot single out (not GPU types)"
        )
    return tuple(sorted(ok_types)), ""
