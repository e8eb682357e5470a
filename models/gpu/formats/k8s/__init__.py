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
  them (see *Node restrictions*). CPU capacity that falls with density (our own annotations,
  docs/formulations/gpu.md §5a): ``placement.io/cpu-overhead-per-pod`` (a CPU quantity lost
  per pod) and ``placement.io/cpu-capacity-curve`` (``PODS:CPU`` points, e.g.
  ``0:64,40:60,110:48``); the node's running pods are its ``pods_used``.
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

The package, in the order of the import: :mod:`.objects` (quantities, files, typed fields),
:mod:`.report` (:class:`ImportReport`), :mod:`.nodes`, :mod:`.topology`, :mod:`.pods`,
:mod:`.node_restrictions`, :mod:`.priorities`, :mod:`.gangs` (the four gang dialects),
:mod:`.importer` (:func:`import_k8s`, the steps), :mod:`.exporter` (:func:`export_k8s`) and
:mod:`.hooks` (``IMPORTERS`` and ``EXPORTERS``, what the command line offers).
"""

from __future__ import annotations

from placement.models.gpu.formats.k8s.exporter import export_k8s
from placement.models.gpu.formats.k8s.hooks import EXPORTERS, IMPORTERS
from placement.models.gpu.formats.k8s.importer import import_k8s
from placement.models.gpu.formats.k8s.objects import parse_quantity
from placement.models.gpu.formats.k8s.report import ImportReport

__all__ = ["EXPORTERS", "IMPORTERS", "ImportReport", "export_k8s", "import_k8s", "parse_quantity"]
