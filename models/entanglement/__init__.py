"""Entanglement routing in quantum repeater networks.

Each time slot, every source-destination request gets a set of paths and a width (channels)
per path; the objective is the weighted expected number of end-to-end entangled pairs (EXT,
as in Q-CAST), under qubit and channel capacities and Werner-model fidelity thresholds.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker, EXT by Q-CAST's recursion), :mod:`.paths` (path quantities shared by
heuristics and encodings), :mod:`.greedy` (Q-CAST's greedy, the fallback), :mod:`.reps`
(REPS-style LP relaxation and rounding), :mod:`.encoding`, :mod:`.milp` and :mod:`.cpsat`
(candidate-path x width models), :mod:`.explain` (why a request is unserved),
:mod:`.simulate` (Monte Carlo time slots, the ground truth), :mod:`.generate` (Q-CAST's
synthetic setup), :mod:`.topology` (GML / GraphML loaders) and :mod:`.plot` (a drawing of
a routing).
"""

from __future__ import annotations

from typing import Any

from placement.models.entanglement.check import check, solution_to_message
from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementSolution,
    QuantumLink,
    QuantumNode,
    Request,
    RoutedPath,
    instance_from_message,
    instance_to_dict,
    solution_from_message,
    validate,
)
from placement.solver.family import CheckReport, ExactEncoding
from placement.solver.jsonform import message_to_dict
from placement.solver.options import SolveOptions


class EntanglementFamily:
    """The entanglement-routing family object registered as ``entanglement``."""

    name = "entanglement"
    sense = "max"
    instance_type = EntanglementInstance
    auto_backend = "milp"
    """``--backend auto`` runs the MILP: it proves the candidate-path model exactly, where
    CP-SAT's integer rounding of EXT leaves slack in its bound."""

    def instance_from_message(
        self, msg: Any, name: str = "", description: str = ""
    ) -> EntanglementInstance:
        """The validated instance from a ``placement.v1.EntanglementInstance`` message."""
        return instance_from_message(msg, name=name, description=description)

    def validate(self, instance: EntanglementInstance) -> None:
        """Validate an instance built in code (the same rules as for files)."""
        validate(instance)

    def instance_to_dict(self, instance: EntanglementInstance) -> dict[str, Any]:
        """The JSON form of the ``entanglement`` section."""
        return instance_to_dict(instance)

    def solution_from_message(
        self, instance: EntanglementInstance, msg: Any
    ) -> EntanglementSolution:
        """The typed solution from a ``placement.v1.EntanglementSolution`` message."""
        return solution_from_message(instance, msg)

    def solution_to_dict(
        self,
        instance: EntanglementInstance,
        solution: EntanglementSolution,
        unplaced: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The JSON form of the ``entanglement`` section of a solution."""
        return message_to_dict(solution_to_message(instance, solution, unplaced))

    def greedy(
        self, instance: EntanglementInstance, options: SolveOptions
    ) -> list[tuple[str, EntanglementSolution]]:
        """Q-CAST's greedy (the fallback). The REPS-style peer (:mod:`.reps`) is not run here:
        it solves an LP that costs the exact phase seconds and, on every benchmark so far,
        scores below Q-CAST's greedy; benchmarks and tests call it directly."""
        from placement.models.entanglement.greedy import qcast_greedy

        del options
        return [("qcast", qcast_greedy(instance))]

    def check(self, instance: EntanglementInstance, solution: EntanglementSolution) -> CheckReport:
        """The independent checker."""
        return check(instance, solution)

    def exact(self, backend: str) -> ExactEncoding:
        """The CP-SAT (``cpsat``) or MILP (``milp``) encoding."""
        if backend == "cpsat":
            from placement.models.entanglement.cpsat import CpSatEncoding

            return CpSatEncoding()
        if backend == "milp":
            from placement.models.entanglement.milp import MilpEncoding

            return MilpEncoding()
        raise ValueError(f"no exact backend {backend!r} for the entanglement family (cpsat, milp)")

    def explain_unplaced(
        self, instance: EntanglementInstance, solution: EntanglementSolution
    ) -> list[dict[str, Any]]:
        """A structured reason for every unserved request."""
        from placement.models.entanglement.explain import explain_unserved

        return explain_unserved(instance, solution)

    def quick_bound(self, instance: EntanglementInstance) -> float:
        """Cheap upper bound on the primary objective: see :func:`.explain.capacity_bound`."""
        from placement.models.entanglement.explain import capacity_bound

        return capacity_bound(instance)


FAMILY = EntanglementFamily()

__all__ = [
    "FAMILY",
    "EntanglementInstance",
    "EntanglementSolution",
    "QuantumLink",
    "QuantumNode",
    "Request",
    "RoutedPath",
    "check",
]
