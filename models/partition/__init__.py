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
:mod:`.tarnawski` and :mod:`.hf` (loaders and builders for public formats).
"""

from __future__ import annotations

from typing import Any

from placement.models.partition.check import NS_PER_MS, check
from placement.models.partition.instance import (
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionInstance,
    PartitionSolution,
    Workload,
    instance_from_message,
    instance_to_dict,
    solution_from_message,
    solution_to_message,
    validate,
)
from placement.solver.family import CheckReport, ExactEncoding
from placement.solver.jsonform import message_to_dict
from placement.solver.options import SolveOptions


class PartitionFamily:
    """The model-partitioning family object registered as ``partition``."""

    name = "partition"
    sense = "min"
    instance_type = PartitionInstance

    def instance_from_message(
        self, msg: Any, name: str = "", description: str = ""
    ) -> PartitionInstance:
        """The validated instance from a ``placement.v1.PartitionInstance`` message."""
        return instance_from_message(msg, name=name, description=description)

    def validate(self, instance: PartitionInstance) -> None:
        """Validate an instance built in code (the same rules as for files)."""
        validate(instance)

    def instance_to_dict(self, instance: PartitionInstance) -> dict[str, Any]:
        """The JSON form of the ``partition`` section."""
        return instance_to_dict(instance)

    def solution_from_message(self, instance: PartitionInstance, msg: Any) -> PartitionSolution:
        """The typed solution from a ``placement.v1.PartitionSolution`` message."""
        return solution_from_message(instance, msg)

    def solution_to_dict(
        self,
        instance: PartitionInstance,
        solution: PartitionSolution,
        unplaced: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The JSON form of the ``partition`` section of a solution."""
        return message_to_dict(solution_to_message(instance, solution, unplaced))

    def greedy(
        self, instance: PartitionInstance, options: SolveOptions
    ) -> list[tuple[str, PartitionSolution]]:
        """Named heuristic solutions; the first (the DP where it applies) is the fallback."""
        from placement.models.partition.greedy import greedy_solutions

        return greedy_solutions(instance, options)

    def check(self, instance: PartitionInstance, solution: PartitionSolution) -> CheckReport:
        """The independent checker."""
        return check(instance, solution)

    def exact(self, backend: str) -> ExactEncoding:
        """The CP-SAT (``cpsat``) or MILP (``milp``) encoding, each with the DP fast path."""
        if backend == "cpsat":
            from placement.models.partition.cpsat import CpSatEncoding

            return CpSatEncoding()
        if backend == "milp":
            from placement.models.partition.milp import MilpEncoding

            return MilpEncoding()
        raise ValueError(f"no exact backend {backend!r} for the partition family (cpsat, milp)")

    def explain_unplaced(
        self, instance: PartitionInstance, solution: PartitionSolution
    ) -> list[dict[str, Any]]:
        """Every layer of a checked solution is placed: nothing to explain."""
        del instance, solution
        return []

    def quick_bound(self, instance: PartitionInstance) -> float:
        """Cheap lower bound on the objective (ms): see :func:`.explain.quick_bound_ns`."""
        from placement.models.partition.explain import quick_bound_ns

        return quick_bound_ns(instance) / NS_PER_MS

    # Command-line hooks, imported on demand (the generators and loaders pull in numpy,
    # networkx; a solve needs none of them).
    @property
    def generators(self) -> tuple[Any, ...]:
        """``placement generate partition``."""
        from placement.models.partition.generate import GENERATORS  # on demand: see above

        return GENERATORS

    @property
    def importers(self) -> tuple[Any, ...]:
        """``placement import`` formats of the family."""
        from placement.models.partition import (
            hf,  # on demand: see above
            tarnawski,  # on demand: see above
        )

        return tarnawski.IMPORTERS + hf.IMPORTERS

    @property
    def plot(self) -> Any:
        """``draw(instance, solution, out_path)`` for ``placement plot``, or None."""
        from placement.models.partition.plot import draw  # on demand: see above

        return draw


FAMILY = PartitionFamily()

__all__ = [
    "FAMILY",
    "Device",
    "Edge",
    "Layer",
    "LayerTime",
    "Links",
    "Mode",
    "PartitionInstance",
    "PartitionSolution",
    "Workload",
    "check",
]
