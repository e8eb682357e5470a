"""``export_k8s``: a checked solution as Kubernetes Bindings and pod status patches."""

from __future__ import annotations

from typing import Any

from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.formats.k8s.objects import load_document
from placement.models.gpu.instance import GpuInstance, GpuSolution
from placement.solver.errors import InputError


def _split(name: str, path: str) -> tuple[str, str]:
    ns, sep, pod = name.partition("/")
    if not sep or not ns or not pod:
        raise InputError.single(path, name, "a Kubernetes pod as namespace/name")
    return ns, pod


def export_k8s(
    instance: GpuInstance, solution: GpuSolution, params: dict[str, Any]
) -> dict[str, Any]:
    """A checked solution as a Kubernetes ``v1 List``.

    One ``v1 Binding`` per pod of a placed job (``metadata`` the pod's name and namespace,
    ``target`` the ``Node``), and for every pod of an unplaced job a ``Pod`` status patch
    with the condition ``PodScheduled=False``, reason ``Unschedulable`` and our explanation
    as the message (``kubectl patch pod --subresource=status`` applies it). With a
    ``--report`` of the import, pending pods it did not import get the same condition with
    its reason.

    Raises
    ------
    InputError
        When a job's workers are not named as pods (``gpu.jobs[i].worker_names``).
    """
    items: list[dict[str, Any]] = []
    reasons = {r["name"]: r for r in explain_unplaced(instance, solution)}
    for j, job in enumerate(instance.jobs):
        names = job.worker_names or (job.name,)
        pods = [_split(n, f"gpu.jobs[{j}].worker_names") for n in names]
        if j in solution.placements:
            for (ns, pod), w in zip(pods, solution.placements[j], strict=True):
                items.append(
                    {
                        "apiVersion": "v1",
                        "kind": "Binding",
                        "metadata": {"name": pod, "namespace": ns},
                        "target": {
                            "apiVersion": "v1",
                            "kind": "Node",
                            "name": instance.nodes[w.node].name,
                        },
                    }
                )
        else:
            message = reasons.get(job.name, {}).get("message", "not placed")
            for ns, pod in pods:
                items.append(_unschedulable(ns, pod, f"placement: job {job.name}: {message}"))
    report = params.get("report")
    if report:
        data = load_document(report)
        left = data.get("not_imported") if isinstance(data, dict) else None
        if not isinstance(left, dict):
            raise InputError.single(
                "not_imported", left, "the import report's pods", file=str(report)
            )
        for pod_key, why in sorted(left.items()):
            if "schedulingGates" in str(why):
                continue  # gated pods already say SchedulingGated; they are not ours to judge
            ns, pod = _split(pod_key, "not_imported")
            items.append(_unschedulable(ns, pod, f"placement: not imported: {why}"))
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}


def _unschedulable(namespace: str, pod: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod, "namespace": namespace},
        "status": {
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                }
            ]
        },
    }
