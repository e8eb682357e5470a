"""The index form of a Helix-style serving cluster (an LLM_SERVING_FLOW partition instance):
nodes, per-type throughput tables ``T(type, k)`` and link capacities, as the flow evaluator
(:mod:`.serving_flow`), the MILP (:mod:`.serving_milp`), its cover bound and the replica plans
read it. The Helix artifact's reader (:mod:`placement.models.partition.formats.helix`) builds
one from the published files; :func:`cluster_of` builds one from any instance of the mode.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from placement.models.partition.instance import (
    SINK,
    SOURCE,
    PartitionDevice,
    PartitionFlowDeviceType,
    PartitionFlowLink,
    PartitionInstance,
    PartitionLayer,
    PartitionMode,
    PartitionServingFlow,
    PartitionWorkload,
)


@dataclass(frozen=True)
class HelixNode:
    """A compute node: its name in the artifact (``compute_node_<i + offset>``) and type."""

    name: str
    type: str


@dataclass(frozen=True)
class HelixCluster:
    """The index form of an LLM_SERVING_FLOW partition instance: nodes, per-type throughput
    tables, link capacities. The reader builds it from the artifact and
    :meth:`to_instance` makes the family instance (what files hold); :func:`cluster_of` is
    the way back, which the flow evaluator, the MILP and the replica plans read.

    ``throughput[type][k - 1]`` is T(type, k) in tokens/s; its length is the type's layer
    limit. ``links[(u, v)]`` is the capacity (tokens/s) of the directed edge ``u -> v``,
    ``u`` a node index or ``"source"``, ``v`` a node index or ``"sink"``.
    """

    name: str
    num_layers: int
    nodes: tuple[HelixNode, ...]
    throughput: dict[str, tuple[float, ...]]
    links: dict[tuple[int | str, int | str], float]
    notes: tuple[str, ...] = field(default=())
    partial: bool = False
    """Helix's partial-inference edge rule (``PartitionServingFlow.partial_inference``)."""

    def limit(self, node: int) -> int:
        """Most layers node ``node`` may hold."""
        return len(self.throughput[self.nodes[node].type])

    def node_throughput(self, node: int, count: int) -> float:
        """T(type, count) of node ``node`` (tokens/s)."""
        return self.throughput[self.nodes[node].type][count - 1]

    def index(self) -> dict[str, int]:
        """Node name -> index."""
        return {n.name: i for i, n in enumerate(self.nodes)}

    def restricted(self, keep: list[int], name: str) -> HelixCluster:
        """The sub-cluster of nodes ``keep`` (in that order), with the links among them."""
        new = {old: i for i, old in enumerate(keep)}
        links: dict[tuple[int | str, int | str], float] = {}
        for (u, v), cap in self.links.items():
            nu = u if u == SOURCE else new.get(u)  # type: ignore[arg-type]
            nv = v if v == SINK else new.get(v)  # type: ignore[arg-type]
            if nu is not None and nv is not None:
                links[(nu, nv)] = cap
        return HelixCluster(
            name=name,
            num_layers=self.num_layers,
            nodes=tuple(self.nodes[i] for i in keep),
            throughput=self.throughput,
            links=links,
            notes=self.notes,
            partial=self.partial,
        )

    def to_instance(self) -> PartitionInstance:
        """The partition instance (mode LLM_SERVING_FLOW) this cluster is the index form of:
        layers ``layer0``..., the nodes as devices, the tables and links in ``serving_flow``."""
        names = [n.name for n in self.nodes]

        def end(x: int | str) -> str:
            return x if isinstance(x, str) else names[x]

        flow = PartitionServingFlow(
            device_types=tuple(
                PartitionFlowDeviceType(t, tuple(v)) for t, v in sorted(self.throughput.items())
            ),
            links=tuple(
                PartitionFlowLink(end(u), end(v), cap)
                for (u, v), cap in sorted(self.links.items(), key=lambda kv: str(kv[0]))
            ),
            partial_inference=self.partial,
        )
        return PartitionInstance(
            layers=[PartitionLayer(f"layer{i}") for i in range(self.num_layers)],
            devices=[PartitionDevice(n.name, n.type, 0) for n in self.nodes],
            workload=PartitionWorkload(mode=PartitionMode.SERVING_FLOW),
            serving_flow=flow,
            name=self.name,
            description="; ".join(self.notes),
        )


_VIEWS: weakref.WeakKeyDictionary[PartitionInstance, HelixCluster] = weakref.WeakKeyDictionary()


def cluster_of(instance: PartitionInstance) -> HelixCluster:
    """The index form of an LLM_SERVING_FLOW instance (what the flow evaluator and the MILP
    work on), built once per instance."""
    view = _VIEWS.get(instance)
    if view is None:
        flow = instance.serving_flow
        if flow is None:
            raise ValueError("not an LLM_SERVING_FLOW instance (no serving_flow section)")
        index = instance.device_index

        def end(x: str) -> int | str:
            return x if x in (SOURCE, SINK) else index[x]

        view = HelixCluster(
            name=instance.name or "partition",
            num_layers=len(instance.layers),
            nodes=tuple(HelixNode(d.name, d.type) for d in instance.devices),
            throughput={t.type: tuple(t.tokens_per_s) for t in flow.device_types},
            links={(end(lk.src), end(lk.dst)): lk.tokens_per_s for lk in flow.links},
            notes=(instance.description,) if instance.description else (),
            partial=flow.partial_inference,
        )
        _VIEWS[instance] = view
    return view
