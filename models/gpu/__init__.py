"""Topology-aware GPU allocation.

Jobs (whole, fractional or CPU-only workers, gangs, GPU types, priorities, locality) onto a
cluster whose GPUs sit in NVLink domains, nodes, racks and spines.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker and objective), :mod:`.greedy` (topology-aware best fit, the fallback,
and an FGD-style policy), :mod:`.cpsat` and :mod:`.milp` (exact encodings), :mod:`.explain`
(why a job is unplaced), :mod:`.generate` (seeded synthetic clusters and job mixes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from placement.models.gpu.check import check
from placement.models.gpu.instance import (
    GpuInstance,
    GpuJob,
    GpuNode,
    GpuSolution,
    TopologyLevel,
    WorkerPlacement,
    WorkloadClass,
    instance_from_message,
    instance_to_dict,
    solution_from_message,
    solution_to_message,
    validate,
)
from placement.solver.family import CheckReport, ExactEncoding
from placement.solver.jsonform import message_to_dict
from placement.solver.options import SolveOptions


class GpuFamily:
    """The GPU-allocation family object registered as ``gpu``."""

    name = "gpu"
    sense = "max"
    instance_type = GpuInstance

    def instance_from_message(self, msg: Any, name: str = "", description: str = "") -> GpuInstance:
        """The validated instance from a ``placement.v1.GpuInstance`` message."""
        return instance_from_message(msg, name=name, description=description)

    def validate(self, instance: GpuInstance) -> None:
        """Validate an instance built in code (the same rules as for files)."""
        validate(instance)

    def instance_to_dict(self, instance: GpuInstance) -> dict[str, Any]:
        """The JSON form of the ``gpu`` section."""
        return instance_to_dict(instance)

    def solution_from_message(self, instance: GpuInstance, msg: Any) -> GpuSolution:
        """The typed solution from a ``placement.v1.GpuSolution`` message."""
        return solution_from_message(instance, msg)

    def solution_to_dict(
        self,
        instance: GpuInstance,
        solution: GpuSolution,
        unplaced: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The JSON form of the ``gpu`` section of a solution."""
        return message_to_dict(solution_to_message(instance, solution, unplaced))

    def greedy(self, instance: GpuInstance, options: SolveOptions) -> Iterator[tuple[str, GpuSolution]]:
        """Named heuristic solutions; the first (topology-aware best fit) is the fallback."""
        from placement.models.gpu.greedy import greedy_solutions

        return greedy_solutions(instance, options)

    def check(self, instance: GpuInstance, solution: GpuSolution) -> CheckReport:
        """The independent checker."""
        return check(instance, solution)

    def exact(self, backend: str) -> ExactEncoding:
        """The CP-SAT (``cpsat``) or MILP (``milp``) encoding."""
        if backend == "cpsat":
            from placement.models.gpu.cpsat import CpSatEncoding

            return CpSatEncoding()
        if backend == "milp":
            from placement.models.gpu.milp import MilpEncoding

            return MilpEncoding()
        raise ValueError(f"no exact backend {backend!r} for the gpu family (cpsat, milp)")

    def explain_unplaced(
        self, instance: GpuInstance, solution: GpuSolution
    ) -> list[dict[str, Any]]:
        """A structured reason for every unplaced job."""
        from placement.models.gpu.explain import explain_unplaced

        return explain_unplaced(instance, solution)

    def quick_bound(self, instance: GpuInstance) -> float:
        """Cheap upper bound on the primary objective (GPUs): see :mod:`.bound`."""
        from placement.models.gpu.bound import capacity_bound

        return capacity_bound(instance)

    def size(self, instance: GpuInstance) -> dict[str, int]:
        """What the service's size limits count: jobs, nodes and GPUs."""
        return {
            "jobs": len(instance.jobs),
            "nodes": len(instance.nodes),
            "gpus": sum(n.gpu_count for n in instance.nodes),
        }

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated instance (a service
        worker does this at start, so its first request pays no first-call costs)."""
        from placement.models.gpu.generate import generate
        from placement.solver import SolveOptions, solve

        instance = generate(64, 24, seed=0)
        solve(instance, SolveOptions(time_limit_s=0.5, threads=1))

    # Command-line hooks, imported on demand (the generators and loaders pull in numpy,
    # networkx; a solve needs none of them).
    @property
    def generators(self) -> tuple[Any, ...]:
        """``placement generate gpu``."""
        from placement.models.gpu.generate import GENERATORS  # on demand: see above

        return GENERATORS

    @property
    def importers(self) -> tuple[Any, ...]:
        """``placement import`` formats of the family."""
        from placement.models.gpu.openb import IMPORTERS  # on demand: see above

        return IMPORTERS

    @property
    def plot(self) -> Any:
        """``draw(instance, solution, out_path)`` for ``placement plot``, or None."""
        return None


FAMILY = GpuFamily()

__all__ = [
    "FAMILY",
    "GpuInstance",
    "GpuJob",
    "GpuNode",
    "GpuSolution",
    "TopologyLevel",
    "WorkerPlacement",
    "WorkloadClass",
    "check",
]
