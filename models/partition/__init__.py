"""Model partitioning across memory-limited heterogeneous devices.

A DNN or LLM (a chain or DAG of layers, with weights, activations, FLOPs or measured times,
KV cache, colocation groups) is split into pipeline stages over devices (type, memory, speed,
node) for one of three workloads: training pipeline throughput, inference latency, LLM
serving tokens per second.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation, the cost model),
:mod:`.check` (independent checker and objective), :mod:`.tables` (numpy cost tables),
:mod:`.dp` (the exact DP for contiguous splits, the fast path), :mod:`.greedy` (the DP as the
fallback where it applies; bisection fill, Petals-style spans, PipeDream's planner),
:mod:`.encoding` with :mod:`.cpsat` and :mod:`.milp` (exact stage-path encodings),
:mod:`.explain` (why a model does not fit), :mod:`.generate` (seeded synthetic instances),
:mod:`.formats` (the public formats: Tarnawski's layer graphs, HF configs, the Helix
artifact), :mod:`.peers` (PipeDream's planner as Tarnawski ran it); :mod:`.serving_cluster`
(a Helix-style layer-placement max-flow instance in index form), scored by :mod:`.serving_flow` and
solved exactly by :mod:`.serving_milp`; QPART's quantized edge splits
(``EDGE_SPLIT_QUANTIZED``: :mod:`.edge_split` the request and its integer tables,
:mod:`.edge_split_check` the checker, :mod:`.edge_split_solve` the exact model,
:mod:`.peers.qpart` QPART's rule); serving plans (``workload.serving_plan``: replicas and
tensor-parallel stages) checked by :func:`.check.check_plan` and solved by
:mod:`.serving_plan_solve` over :mod:`.serving_tp`'s planner.
"""

from __future__ import annotations

from placement.models.partition import instance as _instance
from placement.models.partition.check import check, solution_to_message
from placement.models.partition.cost_model import NS_PER_MS
from placement.models.partition.edge_split import EdgeSplitChoice
from placement.models.partition.edge_split_solve import edge_quick_bound
from placement.models.partition.explain import quick_bound_ns
from placement.models.partition.formats import IMPORTERS
from placement.models.partition.generate import GENERATORS
from placement.models.partition.greedy import greedy_solutions
from placement.models.partition.instance import (
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionDevice,
    PartitionEdge,
    PartitionFlowDeviceType,
    PartitionFlowLink,
    PartitionInstance,
    PartitionLayer,
    PartitionLayerTime,
    PartitionLinks,
    PartitionMode,
    PartitionServingFlow,
    PartitionServingPlan,
    PartitionSolution,
    PartitionWorkload,
    Workload,
)
from placement.models.partition.plot import draw
from placement.models.partition.serving_plan_solve import plan_quick_bound
from placement.models.partition.summary import summarize
from placement.models.partition.warm_start import adapt_start
from placement.solver.family import Family


class PartitionFamily(Family):
    """The model-partitioning family object registered as ``partition``."""

    name = "partition"
    sense = "min"
    instance_type = PartitionInstance
    encodings = {
        "cpsat": "placement.models.partition.cpsat:CpSatEncoding",
        "milp": "placement.models.partition.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)
    solution_to_message = staticmethod(solution_to_message)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(check)

    def auto_backend(self, instance: PartitionInstance) -> str:
        """``milp`` in LLM_SERVING_FLOW mode (its one exact model is a HiGHS MILP), else
        ``cpsat``."""
        return "milp" if instance.workload.flow else "cpsat"

    def objective_sense(self, instance: PartitionInstance) -> str:
        """``max`` (tokens/s) in LLM_SERVING_FLOW mode and for serving plans, ``min``
        (milliseconds) otherwise."""
        return "max" if instance.workload.flow or instance.workload.plan else "min"

    def quick_bound(self, instance: PartitionInstance) -> float:
        """Cheap bound on the objective: a lower bound in ms (see
        :func:`.explain.quick_bound_ns`); in LLM_SERVING_FLOW mode an upper bound in tokens/s
        (:func:`.serving_milp.relaxation_bound`, valid under either edge rule)."""
        if instance.workload.flow:
            # imported here: the flow modules load networkx and HiGHS only for flow mode
            from placement.models.partition.serving_cluster import cluster_of
            from placement.models.partition.serving_milp import relaxation_bound

            return relaxation_bound(cluster_of(instance))
        if instance.workload.plan:
            return plan_quick_bound(instance)
        if instance.workload.edge_split:
            return edge_quick_bound(instance)
        return quick_bound_ns(instance) / NS_PER_MS

    generators = GENERATORS
    importers = IMPORTERS

    def corrupt(
        self, instance: PartitionInstance, solution: PartitionSolution
    ) -> PartitionSolution:
        """A solution made infeasible: layer 0 (flow mode: the first range) on a device that
        does not exist; a serving plan: its first stage); a quantized edge split: one layer
        more on the device than the model has."""
        if instance.workload.edge_split:
            n = len(instance.layers)
            return PartitionSolution(edge_split=EdgeSplitChoice(n + 1, (32,) * (n + 1)))
        if solution.pipelines:
            (devs, first, count), *rest = solution.pipelines[0]
            broken = (((len(instance.devices), *devs[1:]), first, count), *rest)
            return PartitionSolution(pipelines=(broken, *solution.pipelines[1:]))
        if solution.ranges:
            _, first, count = solution.ranges[0]
            return PartitionSolution(
                (), ((len(instance.devices), first, count),) + solution.ranges[1:]
            )
        return PartitionSolution((len(instance.devices), *solution.device_of[1:]))

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = PartitionFamily()

__all__ = [
    "FAMILY",
    "Device",
    "Edge",
    "Layer",
    "LayerTime",
    "Links",
    "Mode",
    "PartitionDevice",
    "PartitionEdge",
    "PartitionFlowDeviceType",
    "PartitionFlowLink",
    "PartitionInstance",
    "PartitionLayer",
    "PartitionLayerTime",
    "PartitionLinks",
    "PartitionMode",
    "PartitionServingFlow",
    "PartitionServingPlan",
    "PartitionSolution",
    "PartitionWorkload",
    "Workload",
    "check",
]
