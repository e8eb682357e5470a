"""Kubernetes in and out: a cluster's own objects as a GPU instance, a solution as Bindings.

``placement import k8s`` reads what ``kubectl get nodes -o json`` and ``kubectl get pods -A
-o json`` print (a ``v1 NodeList`` and a ``v1 PodList``; a ``v1 List`` of the same items is
accepted too), optionally a topology, PodGroups and PriorityClasses, and writes an instance
of the GPU family; ``placement export k8s`` writes a checked solution back as a ``v1 List`` of
``Binding`` objects (one per placed pod) and pod status patches (``PodScheduled=False``,
reason ``Unschedulable``, our explanation as the message) for the pods left pending.

What is read, and from where (field names checked against the projects' own sources):

* **Nodes** (core/v1 ``Node``): ``status.allocatable`` ``cpu``, ``memory`` and
  ``nvidia.com/gpu`` in Kubernetes quantities (:func:`parse_quantity`); the GPU type from
  the GPU Feature Discovery label ``nvidia.com/gpu.product``, the memory per GPU from
  ``nvidia.com/gpu.memory`` (MiB); the multi-node NVLink domain from ``nvidia.com/gpu.clique``
  (a topology level of its own above the node unless the Topology names it). A node with
  ``spec.unschedulable`` or a ``Ready`` condition that is not ``True`` takes no new pod and is
  left out (reported). Taints are read as a restriction of the pods that do not tolerate
  them (see *Node restrictions*).
* **Topology**: a Kueue ``Topology`` (``kueue.x-k8s.io/v1alpha1`` or ``v1beta1``; kubernetes-sigs/kueue
  ``apis/kueue/v1alpha1/topology_types.go`` at 0645200) or a KAI ``Topology`` (``kai.scheduler/v1alpha1``;
  NVIDIA/KAI-Scheduler ``pkg/apis/kai/v1alpha1/topology_types.go`` at commit 3ca3526):
  ``spec.levels[].nodeLabel``, outermost first, ``kubernetes.io/hostname`` only as the last
  (our ``node`` level). A level's domain is the path of label values from the top (Kueue
  does not assume a rack label unique across blocks). Our levels, innermost first, are
  ``nvlink`` (inside a node), ``node``, then the Topology's labels (named by the label).
* **Pods** (core/v1 ``Pod``): a pod with ``spec.nodeName`` that has not finished is work
  already placed (its requests are used capacity of that node); a ``Pending`` pod without
  one is a job. The request of a pod is what kube-scheduler counts: the larger of the sum of
  its containers (plus restartable init "sidecar" containers) and each init container (plus
  the sidecars started before it), plus ``spec.overhead``; a request missing where a limit
  is set defaults to the limit. ``nvidia.com/gpu`` whole GPUs; a fraction of one GPU from
  KAI's pod annotation ``gpu-fraction`` (e.g. ``"0.5"``) and GPU memory from KAI's ``gpu-memory``
  annotation (MiB) (NVIDIA/KAI-Scheduler ``pkg/common/constants/constants.go`` at dafd3d8:
  ``GpuFraction``, ``GpuMemory``; ``gpu-fraction-num-devices``, fractions of several GPUs, is
  not modelled).
* **Gangs**: Kueue plain pod groups (label ``kueue.x-k8s.io/pod-group-name``, annotation
  ``kueue.x-k8s.io/pod-group-total-count``; kubernetes-sigs/kueue
  ``pkg/controller/jobs/pod/constants/constants.go`` at 1be1e83), KAI PodGroups (pod
  annotation ``pod-group-name``, ``PodGroupAnnotationForPod`` of the constants above;
  ``scheduling.run.ai/v2alpha2`` ``PodGroup``, ``spec.minMember``,
  ``spec.topologyConstraint.requiredTopologyLevel`` / ``preferredTopologyLevel``;
  NVIDIA/KAI-Scheduler ``pkg/apis/scheduling/v2alpha2/podgroup_types.go`` at 10965f0),
  Volcano PodGroups (pod annotation ``scheduling.k8s.io/group-name`` or
  ``scheduling.volcano.sh/group-name``, volcano-sh/apis ``pkg/apis/scheduling/v1beta1/labels.go``
  at 04ee883; ``scheduling.volcano.sh/v1beta1`` ``PodGroup``, ``spec.minMember``,
  ``spec.networkTopology.mode`` ``hard``/``soft`` and ``highestTierAllowed``, ``types.go`` at
  ed2d962) and scheduler-plugins coscheduling (label
  ``scheduling.x-k8s.io/pod-group``, ``scheduling.x-k8s.io/v1alpha1`` ``PodGroup``).
  Topology levels of a gang: Kueue's pod annotations
  ``kueue.x-k8s.io/podset-required-topology`` / ``podset-preferred-topology``
  (``apis/kueue/v1alpha1/tas_types.go`` at 191257f), KAI's
  ``kai.scheduler/topology-required-placement`` / ``topology-preferred-placement`` (on the
  pods, or the PodGroup's topologyConstraint), whose values are a level's node label; a
  Volcano tier ``t`` is our ``t``-th level above the node.
* **Priorities**: the ``PriorityClass`` (``scheduling.k8s.io/v1``) named by
  ``spec.priorityClassName`` in the given ``PriorityClassList``, else the pod's resolved
  ``spec.priority``, else the class with ``globalDefault: true``, else 0 (Kubernetes'
  default); ``system-cluster-critical`` and ``system-node-critical`` are built in. The
  distinct priorities of the pending jobs become the weights 1, 2, ... in their order (our
  objective weighs placed GPUs by priority; the order is kept, strict precedence is not).

*Node restrictions*: a pending pod's ``nodeSelector``, required node affinity and
tolerations (of ``NoSchedule``/``NoExecute`` taints) are evaluated on every node. When
they allow every node, nothing is lost; when the nodes they allow are exactly the nodes of
some GPU types, the job gets those types (exact); otherwise the restriction cannot be said
in the instance and is reported as ignored, per pod. Everything else a manifest may carry
that bears on placement and that we do not model (pod affinity, topology spread, DRA
``resourceClaims``, MIG and other extended resources, host ports, volumes, scheduling
gates, ...) is reported per pod or node in the import report (stderr, and ``--report`` as
JSON); a pending pod that asks for a resource we do not model is not imported.

Units: CPU in milli-cores rounded up (kube-scheduler's ``MilliValue``), memory in MiB,
requests rounded up and capacities down (a binding we make always fits the bytes).
Imported jobs carry no traffic, so the topology bandwidths (nominal) do not weigh; the
locality preference costs ``locality_miss_penalty``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.instance import (
    MAX_GPUS_PER_NODE,
    MAX_PRIORITY,
    MILLI,
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
)
from placement.solver.errors import InputError
from placement.solver.family import validate
from placement.solver.hooks import Exporter, Importer, Parameter

GPU = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_LABEL = "nvidia.com/gpu.memory"
CLIQUE_LABEL = "nvidia.com/gpu.clique"
HOSTNAME_LABEL = "kubernetes.io/hostname"
KAI_FRACTION = "gpu-fraction"
KAI_GPU_MEMORY = "gpu-memory"
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
TOPOLOGY_GROUPS = ("kueue.x-k8s.io", "kai.scheduler")
BUILTIN_PRIORITIES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
"""The two PriorityClasses every cluster has (k8s.io/api scheduling/v1 types)."""
IGNORED_RESOURCES = ("ephemeral-storage", "pods")
"""Node and pod resources we do not model but that never keep a pod from being imported."""
BANDWIDTH_GBPS = {"nvlink": 300.0, "node": 64.0, "first_above_node": 50.0}
"""Nominal bandwidths (Kubernetes states none): halved for each level further out."""
SHOWN_PER_LINE = 8
"""Objects named per line of the stderr report; ``--report`` lists them all."""


# -------------------------------------------------------------------------------------------
# Quantities

_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|m|k|M|G|T|P|E|)$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: Any) -> Fraction | None:
    """The exact value of a Kubernetes resource quantity, or None if it is not one.

    The grammar of k8s.io/apimachinery ``pkg/api/resource/quantity.go``: a signed decimal
    number (``1``, ``1.5``, ``.5``, ``5.``) then a binary suffix (``Ki`` .. ``Ei``, powers of
    1024), a decimal exponent (``e3``, ``E-2``) or a decimal suffix (``m`` milli, ``k``, ``M``,
    ``G``, ``T``, ``P``, ``E``; ``E`` alone is exa, ``E`` followed by digits an exponent).
    JSON numbers are accepted as the apimachinery decoder accepts them.

    Examples
    --------
    >>> parse_quantity("500m"), parse_quantity("64Gi") == 64 * 2**30, parse_quantity("1e3")
    (Fraction(1, 2), True, Fraction(1000, 1))
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if m is None:
        return None
    number = Fraction(m["number"] if not m["number"].endswith(".") else m["number"][:-1])
    suffix = m["suffix"]
    if suffix in _BINARY:
        number *= 1024 ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        number *= Fraction(10) ** _DECIMAL[suffix]
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > 100:
            return None
        number *= Fraction(10) ** exponent
    return -number if m["sign"] == "-" else number


def milli_up(q: Fraction) -> int:
    """Milli-units rounded up, as ``Quantity.MilliValue``."""
    return math.ceil(q * 1000)


MIB = 2**20


# -------------------------------------------------------------------------------------------
# Reading objects, with the path of every field


@dataclass
class _Source:
    """One input file and where an object sits in it, for error messages."""

    file: str
    path: str
    kind: str
    name: str

    def fail(self, field_path: str, value: Any, expected: str) -> InputError:
        where = f"{self.path}.{field_path}" if field_path else self.path
        label = f"{self.kind} {self.name}" if self.name else self.kind
        return InputError.single(f"{where} ({label})", value, expected, file=self.file)


def _get(obj: dict[str, Any], dotted: str) -> Any:
    """``obj["a"]["b"]`` for ``a.b``; None where a step is missing."""
    cur: Any = obj
    for key in dotted.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def _typed(src: _Source, obj: dict[str, Any], dotted: str, kind: type, default: Any) -> Any:
    """The field ``dotted`` of ``obj`` if of type ``kind``; ``default`` when absent."""
    value = _get(obj, dotted)
    if value is None:
        return default
    if kind is int and isinstance(value, bool):
        raise src.fail(dotted, value, "an integer")
    if not isinstance(value, kind):
        expected = {dict: "a JSON object", list: "a JSON list", str: "a string", int: "an integer"}
        raise src.fail(dotted, value, expected.get(kind, kind.__name__))
    return value


def _string_map(src: _Source, obj: dict[str, Any], dotted: str) -> dict[str, str]:
    value = _typed(src, obj, dotted, dict, {})
    for k, v in value.items():
        if not isinstance(v, str):
            raise src.fail(f"{dotted}.{k}", v, "a string (labels and annotations are strings)")
    return value


def _load(path: str | Path) -> Any:
    """The JSON or YAML document of ``path`` (YAML by suffix)."""
    file = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError.single("", file, "an existing file", file=file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError.single("", str(exc), "a readable UTF-8 file", file=file) from None
    if file.endswith((".yaml", ".yml")):
        # pyyaml is needed only for YAML inputs; JSON (kubectl -o json) needs nothing.
        import yaml

        try:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as exc:
            raise InputError.single("", str(exc).splitlines()[0], "valid YAML", file=file) from None
        if len(docs) == 1:
            return docs[0]
        return {"apiVersion": "v1", "kind": "List", "items": docs}
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError.single(
            f"line {exc.lineno} column {exc.colno}", exc.msg, "valid JSON", file=file
        ) from None


def _items(path: str | Path, kinds: tuple[str, ...]) -> list[tuple[_Source, dict[str, Any]]]:
    """The objects of a list file (``XList`` or ``List``) or a single object, each with its
    source; every item must be one of ``kinds``."""
    file = str(path)
    doc = _load(path)
    if not isinstance(doc, dict):
        raise InputError.single("", type(doc).__name__, "a Kubernetes object or list", file=file)
    kind = doc.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and "items" in doc:
        items = doc["items"]
        if not isinstance(items, list):
            raise InputError.single("items", type(items).__name__, "a JSON list", file=file)
        pairs = [(f"items[{i}]", item) for i, item in enumerate(items)]
    else:
        pairs = [("", doc)]
    out = []
    for where, item in pairs:
        if not isinstance(item, dict):
            raise InputError.single(where, item, "a Kubernetes object", file=file)
        item_kind = item.get("kind") or (kind[: -len("List")] if kind and kind != "List" else "")
        meta = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        name = meta.get("name") if isinstance(meta.get("name"), str) else ""
        ns = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
        src = _Source(
            file, where or "$", str(item_kind or "object"), f"{ns}/{name}" if ns else name
        )
        if item_kind not in kinds:
            raise src.fail("kind", item_kind, "one of " + ", ".join(kinds))
        if not name:
            raise src.fail("metadata.name", meta.get("name"), "a non-empty name")
        out.append((src, item))
    return out


# -------------------------------------------------------------------------------------------
# The import report


@dataclass
class ImportReport:
    """What the import read, assumed, left out and ignored, per object (JSON: ``to_dict``)."""

    files: dict[str, str] = field(default_factory=dict)
    levels: list[dict[str, Any]] = field(default_factory=list)
    priorities: dict[str, int] = field(default_factory=dict)
    assumptions: list[str] = field(default_factory=list)
    ignored: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """object (``Node n1`` / ``Pod ns/p``) -> field -> details."""
    excluded_nodes: dict[str, str] = field(default_factory=dict)
    not_imported: dict[str, str] = field(default_factory=dict)
    """Pending pod ``ns/name`` -> why it is not a job of the instance."""
    jobs: dict[str, list[str]] = field(default_factory=dict)
    """Job name -> its pods."""

    def ignore(self, obj: str, field_name: str, detail: str = "") -> None:
        self.ignored.setdefault(obj, {}).setdefault(field_name, []).append(detail)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "levels": self.levels,
            "priorities": self.priorities,
            "assumptions": self.assumptions,
            "excluded_nodes": self.excluded_nodes,
            "not_imported": self.not_imported,
            "ignored": self.ignored,
            "jobs": self.jobs,
        }

    def lines(self) -> list[str]:
        """The report for people: one line per kind of finding, naming its objects."""

        def names(objs: list[str]) -> str:
            shown = ", ".join(objs[:SHOWN_PER_LINE])
            more = len(objs) - SHOWN_PER_LINE
            return shown + (f" and {more} more" if more > 0 else "")

        out = [f"assumed: {a}" for a in self.assumptions]
        by_reason: dict[str, list[str]] = {}
        for node, why in self.excluded_nodes.items():
            by_reason.setdefault(why, []).append(node)
        out += [f"left out (no new pods): {why}: {names(ns)}" for why, ns in by_reason.items()]
        by_reason = {}
        for pod, why in self.not_imported.items():
            by_reason.setdefault(why, []).append(pod)
        out += [f"pending pods not imported: {why}: {names(ps)}" for why, ps in by_reason.items()]
        by_field: dict[str, list[str]] = {}
        for obj, fields in self.ignored.items():
            for f in fields:
                by_field.setdefault(f, []).append(obj)
        out += [f"ignored {f} of {len(objs)}: {names(objs)}" for f, objs in by_field.items()]
        return out


# -------------------------------------------------------------------------------------------
# Nodes


@dataclass
class _Node:
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


def _quantity(src: _Source, obj: dict[str, Any], dotted: str, what: str) -> Fraction:
    raw = _get(obj, dotted)
    q = parse_quantity(raw)
    if q is None or q < 0:
        raise src.fail(dotted, raw, f"a non-negative Kubernetes quantity ({what})")
    return q


def _read_nodes(path: str, report: ImportReport) -> list[_Node]:
    nodes: list[_Node] = []
    seen: set[str] = set()
    for src, item in _items(path, ("Node",)):
        name = src.name
        obj = f"Node {name}"
        if name in seen:
            raise src.fail("metadata.name", name, "a node name used once")
        seen.add(name)
        labels = _string_map(src, item, "metadata.labels")
        allocatable = _typed(src, item, "status.allocatable", dict, None)
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
        taints = _typed(src, item, "spec.taints", list, [])
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
        if _typed(src, item, "spec.unschedulable", bool, False):
            excluded = "spec.unschedulable"
        conditions = _typed(src, item, "status.conditions", list, [])
        for c in conditions:
            if isinstance(c, dict) and c.get("type") == "Ready" and c.get("status") != "True":
                excluded = excluded or f"Ready condition {c.get('status')}"
        node = _Node(
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
        if excluded:
            report.excluded_nodes[name] = excluded
            node.name = ""  # kept to account for its pods, never a target
        nodes.append(node)
    return nodes


# -------------------------------------------------------------------------------------------
# Topology


def _read_topology(path: str | None, nodes: list[_Node], report: ImportReport) -> list[str]:
    """The node labels of the topology levels above the node, innermost first."""
    labels: list[str] = []
    if path:
        objs = _items(path, ("Topology",))
        if len(objs) != 1:
            raise InputError.single("items", len(objs), "exactly one Topology", file=path)
        src, item = objs[0]
        api = _typed(src, item, "apiVersion", str, "")
        if api.split("/")[0] not in TOPOLOGY_GROUPS:
            raise src.fail(
                "apiVersion", api, "kueue.x-k8s.io/v1alpha1|v1beta1 or kai.scheduler/v1alpha1"
            )
        levels = _typed(src, item, "spec.levels", list, None)
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


# -------------------------------------------------------------------------------------------
# Pods


@dataclass
class _Pod:
    key: str  # namespace/name
    src: _Source
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


_MODELLED = ("cpu", "memory", GPU)


def _container_requests(src: _Source, c: dict[str, Any], where: str) -> dict[str, Fraction]:
    """A container's requests, a missing request defaulting to its limit (core/v1 defaulting)."""
    req = _typed(src, c, "resources.requests", dict, {})
    lim = _typed(src, c, "resources.limits", dict, {})
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


def _pod_requests(src: _Source, item: dict[str, Any]) -> dict[str, Fraction]:
    """The pod's effective request per resource, as kube-scheduler computes it."""
    containers = _typed(src, item, "spec.containers", list, None)
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
    for k, c in enumerate(_typed(src, item, "spec.initContainers", list, [])):
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
    overhead = _typed(src, item, "spec.overhead", dict, {})
    for res, raw in overhead.items():
        q = parse_quantity(raw)
        if q is None or q < 0:
            raise src.fail(f"spec.overhead.{res}", raw, "a non-negative Kubernetes quantity")
        total[res] = total.get(res, Fraction(0)) + q
    return total


def _read_pod(src: _Source, item: dict[str, Any], report: ImportReport) -> _Pod:
    obj = f"Pod {src.name}"
    pod = _Pod(
        key=src.name,
        src=src,
        item=item,
        annotations=_string_map(src, item, "metadata.annotations"),
        labels=_string_map(src, item, "metadata.labels"),
        node_name=_typed(src, item, "spec.nodeName", str, ""),
        phase=_typed(src, item, "status.phase", str, "Pending"),
        spec=_typed(src, item, "spec", dict, {}),
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


def _check_shapes(src: _Source, spec: dict[str, Any]) -> None:
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


def _unmodelled_placement_fields(pod: _Pod, report: ImportReport) -> None:
    """Report what bears on placement and that no part of the instance says."""
    obj = f"Pod {pod.key}"
    spec = pod.spec
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if affinity.get(kind):
            report.ignore(obj, f"spec.affinity.{kind}")
    if _get(affinity, "nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"):
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


# -------------------------------------------------------------------------------------------
# Node restrictions of a pod: nodeSelector, required node affinity, tolerations


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


def _allowed_nodes(pod: _Pod, nodes: list[_Node]) -> list[bool]:
    """Per node: whether the pod's nodeSelector, required node affinity and tolerations
    allow it (core/v1 semantics: terms are ORed, expressions ANDed)."""
    src, spec = pod.src, pod.spec
    selector = _string_map(src, pod.item, "spec.nodeSelector")
    terms = _get(
        spec,
        "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    )
    tolerations = _typed(src, pod.item, "spec.tolerations", list, [])
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


# -------------------------------------------------------------------------------------------
# Priorities


def _read_priority_classes(path: str | None, report: ImportReport) -> tuple[dict[str, int], int]:
    """Class name -> value, and the global default (0 without one)."""
    classes = dict(BUILTIN_PRIORITIES)
    default = 0
    if path:
        for src, item in _items(path, ("PriorityClass",)):
            value = item.get("value")
            if not isinstance(value, int) or isinstance(value, bool):
                raise src.fail("value", value, "an integer priority")
            classes[src.name] = value
            if item.get("globalDefault") is True:
                default = value
        report.files["priority_classes"] = str(path)
    return classes, default


# -------------------------------------------------------------------------------------------
# Pod groups


@dataclass
class _Group:
    key: str  # "kueue:ns/name" ...
    pods: list[_Pod] = field(default_factory=list)
    min_member: int = 0
    total: int = 0
    required: str = ""  # a node label or "kubernetes.io/hostname" or "tier:N"
    preferred: str = ""
    running: int = 0


def _read_pod_groups(path: str | None) -> dict[str, dict[str, Any]]:
    """``kind:namespace/name`` -> the PodGroup spec (KAI, Volcano, coscheduling)."""
    out: dict[str, dict[str, Any]] = {}
    if not path:
        return out
    for src, item in _items(path, ("PodGroup",)):
        api = _typed(src, item, "apiVersion", str, "")
        which = POD_GROUP_KINDS.get(api.split("/")[0])
        if which is None:
            raise src.fail("apiVersion", api, "a PodGroup of " + ", ".join(POD_GROUP_KINDS))
        spec = _typed(src, item, "spec", dict, {})
        mm = spec.get("minMember", 0)
        if not isinstance(mm, int) or isinstance(mm, bool) or mm < 0:
            raise src.fail("spec.minMember", mm, "a non-negative integer")
        ns = src.name.split("/")[0] if "/" in src.name else "default"
        name = src.name.split("/", 1)[-1]
        group: dict[str, Any] = {"min_member": mm, "required": "", "preferred": ""}
        if which == "kai":
            _typed(src, item, "spec.topologyConstraint", dict, {})
            for key, field_name in (("required", "requiredTopologyLevel"),
                                    ("preferred", "preferredTopologyLevel")):  # fmt: skip
                path = f"spec.topologyConstraint.{field_name}"
                group[key] = _typed(src, item, path, str, "")
        elif which == "volcano" and spec.get("networkTopology"):
            nt = _typed(src, item, "spec.networkTopology", dict, {})
            tier = nt.get("highestTierAllowed", 1)
            if not isinstance(tier, int) or isinstance(tier, bool) or tier < 1:
                raise src.fail("spec.networkTopology.highestTierAllowed", tier, "a tier >= 1")
            mode = nt.get("mode", "hard")
            if mode not in ("hard", "soft"):
                raise src.fail("spec.networkTopology.mode", mode, "hard or soft")
            group["required" if mode == "hard" else "preferred"] = f"tier:{tier}"
        out[f"{which}:{ns}/{name}"] = group
    return out


def _group_key(pod: _Pod) -> tuple[str, str]:
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


# -------------------------------------------------------------------------------------------
# The import


def _place_running(pod: _Pod, node: _Node, report: ImportReport) -> None:
    """Count a running pod on its node; GPU indices are not in the API, so whole GPUs take the
    lowest free ones and shares the first GPU with room (reported when over capacity)."""
    node.cpu_used += pod.cpu_milli
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


def _level_of(value: str, labels: list[str], src: _Source, path: str) -> str:
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
    raise src.fail(path, value, "a level of the topology: " + ", ".join([HOSTNAME_LABEL, *labels]))


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
    raw_nodes = _read_nodes(nodes_path, report)
    kept = [n for n in raw_nodes if n.name]
    node_of = {n.name: n for n in kept}
    excluded_names = set(report.excluded_nodes)
    if not kept:
        raise InputError.single(
            "items", 0, "at least one schedulable, Ready node", file=str(nodes_path)
        )
    level_labels = _read_topology(topology_path, kept, report)
    classes, default_priority = _read_priority_classes(priority_classes_path, report)
    pod_groups = _read_pod_groups(pod_groups_path)
    if pod_groups_path:
        report.files["pod_groups"] = str(pod_groups_path)

    pending: list[_Pod] = []
    for src, item in _items(pods_path, ("Pod",)):
        pod = _read_pod(src, item, report)
        finished = pod.phase in ("Succeeded", "Failed")
        if finished:
            continue
        if pod.node_name:
            node = node_of.get(pod.node_name)
            if node is not None:
                _place_running(pod, node, report)
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

    # Priorities, restrictions and what keeps a pending pod out.
    importable: list[_Pod] = []
    restrictions: dict[str, tuple[str, ...]] = {}
    for pod in pending:
        spec = pod.spec
        pcn = spec.get("priorityClassName") or ""
        if pcn and pcn in classes:
            pod.priority = classes[pcn]
        elif isinstance(spec.get("priority"), int):
            pod.priority = spec["priority"]
        elif pcn and priority_classes_path:
            raise pod.src.fail("spec.priorityClassName", pcn, "a PriorityClass of PRIORITY_CLASSES")
        else:
            pod.priority = default_priority
            if pcn:
                report.ignore(
                    f"Pod {pod.key}", "spec.priorityClassName (no class values given)", pcn
                )
        if spec.get("schedulingGates"):
            report.not_imported[pod.key] = "spec.schedulingGates (not ready to be scheduled)"
            continue
        if pod.unmodelled:
            report.not_imported[pod.key] = (
                "requests " + ", ".join(sorted(pod.unmodelled)) + " (not modelled)"
            )
            continue
        allowed = _allowed_nodes(pod, kept)
        if not any(allowed):
            report.not_imported[pod.key] = (
                "no node satisfies its nodeSelector, node affinity and tolerations"
            )
            continue
        types: tuple[str, ...] = ()
        if not all(allowed):
            ok_types = {n.gpu_type for n, a in zip(kept, allowed, strict=True) if a}
            exact = pod.gpus + pod.gpu_milli > 0 and all(
                a == (n.gpu_type in ok_types) for n, a in zip(kept, allowed, strict=True)
            )
            if not exact:
                report.not_imported[pod.key] = (
                    "its nodeSelector, node affinity and tolerations allow nodes the instance "
                    "cannot single out (not GPU types)"
                )
                continue
            types = tuple(sorted(ok_types))
        restrictions[pod.key] = types
        _unmodelled_placement_fields(pod, report)
        importable.append(pod)

    # Gangs.
    groups: dict[str, _Group] = {}
    singles: list[_Pod] = []
    for pod in importable:
        key, which = _group_key(pod)
        if not key:
            singles.append(pod)
            continue
        g = groups.setdefault(key, _Group(key))
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
    jobs: list[GpuJob] = []
    pending_priorities = sorted({p.priority for p in importable})
    if len(pending_priorities) > MAX_PRIORITY:
        raise InputError.single(
            "spec.priority",
            len(pending_priorities),
            f"at most {MAX_PRIORITY} distinct priorities",
            file=str(pods_path),
        )
    weight = {p: i + 1 for i, p in enumerate(pending_priorities)}
    report.priorities = {str(p): w for p, w in weight.items()}

    def job_of(name: str, pods: list[_Pod], level: str, required: bool) -> GpuJob:
        p = pods[0]
        return GpuJob(
            name=name,
            workers=len(pods),
            gpus=p.gpus,
            gpu_milli=p.gpu_milli,
            gpu_memory_mib=p.gpu_memory_mib,
            cpu_milli=p.cpu_milli,
            memory_mib=-(-p.memory_bytes // MIB),
            gpu_types=restrictions[p.key],
            priority=weight[p.priority],
            locality_level=level,
            locality_required=required,
            worker_names=tuple(q.key for q in pods),
        )

    for g in groups.values():
        which, _, gname = g.key.partition(":")
        spec = pod_groups.get(g.key)
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
            continue
        required = (
            _level_of(g.required, level_labels, src, "topology-required annotation")
            if g.required
            else ""
        )
        preferred = (
            _level_of(g.preferred, level_labels, src, "topology-preferred annotation")
            if g.preferred
            else ""
        )
        level, is_required = (required, True) if required else (preferred, False)
        if required and preferred:
            report.ignore(f"PodGroup {gname}", "preferred level beside a required one", preferred)
        shapes: dict[tuple[Any, ...], list[_Pod]] = {}
        for p in pods:
            shape = (
                p.gpus,
                p.gpu_milli,
                p.gpu_memory_mib,
                p.cpu_milli,
                p.memory_bytes,
                restrictions[p.key],
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
        for k, members in enumerate(shapes.values()):
            job_name = gang if k == 0 else f"{gang}#{k + 1}"
            if g.min_member and g.min_member < len(members) and len(shapes) == 1:
                report.ignore(
                    f"PodGroup {gname}",
                    "minMember below the pods (a gang of all pending pods)",
                    f"{g.min_member} < {len(members)}",
                )
            jobs.append(job_of(job_name, members, level, is_required))
            report.jobs[job_name] = [p.key for p in members]
    for p in sorted(singles, key=lambda p: p.key):
        jobs.append(job_of(p.key, [p], "", False))
        report.jobs[p.key] = [p.key]

    # The cluster.
    levels = [
        TopologyLevel("nvlink", BANDWIDTH_GBPS["nvlink"]),
        TopologyLevel("node", BANDWIDTH_GBPS["node"]),
    ]
    bw = BANDWIDTH_GBPS["first_above_node"]
    for label in level_labels:
        levels.append(TopologyLevel(label, bw))
        bw /= 2
    report.levels = [{"name": lv.name, "bandwidth_gbps": lv.bandwidth_gbps} for lv in levels]
    outer_first = list(reversed(level_labels))
    nodes: list[GpuNode] = []
    for n in kept:
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
        nodes.append(
            GpuNode(
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
            )
        )
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
        nodes=nodes,
        jobs=jobs,
        name=name,
        description=(
            f"Kubernetes cluster state from {Path(nodes_path).name} and {Path(pods_path).name}: "
            f"{len(nodes)} nodes, {len(jobs)} jobs of {sum(len(v) for v in report.jobs.values())} "
            f"pending pods ({len(report.not_imported)} not imported)"
        ),
    )
    validate(instance)
    return instance, report


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


def write_report(path: str, data: dict[str, Any]) -> None:
    """Write an import report as indented JSON."""
    try:
        Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    except OSError as exc:
        raise InputError.single(
            "", exc.strerror or str(exc), "a writable file", file=path
        ) from None


# -------------------------------------------------------------------------------------------
# Export


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
        data = _load(report)
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
