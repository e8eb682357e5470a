"""Workflow (ETL) DAG mapping onto heterogeneous machines, and grid scheduling.

Tasks (work or an ETC row, cores, memory, release, deadline, data locality) and edges (data
volumes) onto machines (type, speed, slots, memory, price) in zones joined by links.
Independent tasks (no edges) are the grid-scheduling special case.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker and objective), :mod:`.greedy` (HEFT, the fallback; PEFT, CPOP; MCT,
Min-Min, Max-Min, Sufferage), :mod:`.cpsat` and :mod:`.milp` (exact encodings),
:mod:`.rcmax` (the R||Cmax search run beside HiGHS), :mod:`.bound` (cheap lower
bounds), :mod:`.generate` (seeded random DAGs), :mod:`.loaders` (STG, Braun, WfCommons, the
HEFT paper's example), :mod:`.plot` (Gantt chart).
"""

from __future__ import annotations

from typing import Any

from placement.models.dag.check import check, solution_to_message
from placement.models.dag.instance import (
    DagEdge,
    DagInstance,
    DagLink,
    DagMachine,
    DagSolution,
    DagTask,
    instance_from_message,
    instance_to_dict,
    solution_from_message,
    validate,
)
from placement.solver.family import CheckReport, ExactEncoding
from placement.solver.jsonform import message_to_dict
from placement.solver.options import SolveOptions


class DagFamily:
    """The DAG-scheduling family object registered as ``dag``."""

    name = "dag"
    sense = "min"
    instance_type = DagInstance

    def instance_from_message(self, msg: Any, name: str = "", description: str = "") -> DagInstance:
        """The validated instance from a ``placement.v1.DagInstance`` message."""
        return instance_from_message(msg, name=name, description=description)

    def validate(self, instance: DagInstance) -> None:
        """Validate an instance built in code (the same rules as for files)."""
        validate(instance)

    def instance_to_dict(self, instance: DagInstance) -> dict[str, Any]:
        """The JSON form of the ``dag`` section."""
        return instance_to_dict(instance)

    def solution_from_message(self, instance: DagInstance, msg: Any) -> DagSolution:
        """The typed solution from a ``placement.v1.DagSolution`` message."""
        return solution_from_message(instance, msg)

    def solution_to_dict(
        self,
        instance: DagInstance,
        solution: DagSolution,
        unplaced: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The JSON form of the ``dag`` section of a solution (every task is scheduled, so
        there are no reasons for unplaced work)."""
        del unplaced
        return message_to_dict(solution_to_message(instance, solution))

    def greedy(self, instance: DagInstance, options: SolveOptions) -> list[tuple[str, DagSolution]]:
        """Named heuristic solutions; the first (HEFT) is the fallback."""
        from placement.models.dag.greedy import greedy_solutions

        return greedy_solutions(instance, options)

    def check(self, instance: DagInstance, solution: DagSolution) -> CheckReport:
        """The independent checker."""
        return check(instance, solution)

    def exact(self, backend: str) -> ExactEncoding:
        """The CP-SAT (``cpsat``) or MILP (``milp``) encoding; under ``auto``, R||Cmax
        instances go to the search of :mod:`.rcmax` instead of CP-SAT."""
        if backend == "cpsat":
            from placement.models.dag.cpsat import CpSatEncoding
            from placement.models.dag.rcmax import AutoEncoding

            return AutoEncoding(CpSatEncoding())
        if backend == "milp":
            from placement.models.dag.milp import MilpEncoding

            return MilpEncoding()
        raise ValueError(f"no exact backend {backend!r} for the dag family (cpsat, milp)")

    def explain_unplaced(
        self, instance: DagInstance, solution: DagSolution
    ) -> list[dict[str, Any]]:
        """Nothing: a schedule runs every task (an instance where some task cannot run at
        all is refused when it is read)."""
        del instance, solution
        return []

    def quick_bound(self, instance: DagInstance) -> float:
        """A cheap lower bound on the objective: see :mod:`.bound`."""
        from placement.models.dag.bound import lower_bound

        return lower_bound(instance)


FAMILY = DagFamily()

__all__ = [
    "FAMILY",
    "DagEdge",
    "DagInstance",
    "DagLink",
    "DagMachine",
    "DagSolution",
    "DagTask",
    "check",
]
