"""Entanglement routing in quantum repeater networks.

Each time slot, every source-destination request gets a set of paths and a width (channels)
per path; the objective is the weighted expected number of end-to-end entangled pairs (EXT,
as in Q-CAST), under qubit and channel capacities and Werner-model fidelity thresholds.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker, EXT by Q-CAST's recursion), :mod:`.paths` (path quantities shared by
heuristics and encodings), :mod:`.greedy` (Q-CAST's greedy, the fallback), :mod:`.peers.reps`
(REPS-style LP relaxation and rounding), :mod:`.encoding`, :mod:`.milp` and :mod:`.cpsat`
(candidate-path x width models), :mod:`.explain` (why a request is unserved),
:mod:`.sim.slots` (Monte Carlo time slots, the ground truth), :mod:`.generate` (Q-CAST's
synthetic setup), :mod:`.formats.topology_zoo` (GML / GraphML loaders) and :mod:`.plot` (a drawing of
a routing).
"""

from __future__ import annotations

from placement.models.entanglement import instance as _instance
from placement.models.entanglement.check import check, solution_to_message
from placement.models.entanglement.explain import capacity_bound, explain_unplaced
from placement.models.entanglement.formats import IMPORTERS
from placement.models.entanglement.generate import GENERATORS
from placement.models.entanglement.greedy import qcast_greedy
from placement.models.entanglement.instance import (
    EntanglementInstance,
    EntanglementRequest,
    EntanglementSolution,
    QuantumLink,
    QuantumNode,
    Request,
    RoutedPath,
)
from placement.models.entanglement.plot import draw
from placement.models.entanglement.summary import summarize
from placement.models.entanglement.warm_start import adapt_start
from placement.solver.family import Family
from placement.solver.options import SolveOptions


class EntanglementFamily(Family):
    """The entanglement-routing family object registered as ``entanglement``."""

    name = "entanglement"
    sense = "max"
    instance_type = EntanglementInstance
    encodings = {
        "cpsat": "placement.models.entanglement.cpsat:CpSatEncoding",
        "milp": "placement.models.entanglement.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)
    solution_to_message = staticmethod(solution_to_message)
    validate_fields = staticmethod(_instance.validate_fields)

    def greedy(
        self, instance: EntanglementInstance, options: SolveOptions
    ) -> list[tuple[str, EntanglementSolution]]:
        """Q-CAST's greedy (the fallback). The REPS-style peer (:mod:`.peers.reps`) is not run here:
        it solves an LP that costs the exact phase seconds and, on every benchmark so far,
        scores below Q-CAST's greedy; benchmarks and tests call it directly."""
        del options
        return [("qcast", qcast_greedy(instance))]

    check = staticmethod(check)
    explain_unplaced = staticmethod(explain_unplaced)
    quick_bound = staticmethod(capacity_bound)
    """Cheap upper bound on the primary objective: see :func:`.explain.capacity_bound`."""

    def auto_backend(self, instance: EntanglementInstance) -> str:
        """The MILP: it proves the candidate-path model exactly, where CP-SAT's integer
        rounding of EXT leaves slack in its bound."""
        del instance
        return "milp"

    generators = GENERATORS
    importers = IMPORTERS

    def corrupt(
        self, instance: EntanglementInstance, solution: EntanglementSolution
    ) -> EntanglementSolution:
        """A solution made infeasible: a path for a request that does not exist."""
        extra = RoutedPath(len(instance.requests), (0, 1), 1)
        return EntanglementSolution((*solution.paths, extra))

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = EntanglementFamily()

__all__ = [
    "FAMILY",
    "EntanglementInstance",
    "EntanglementRequest",
    "EntanglementSolution",
    "QuantumLink",
    "QuantumNode",
    "Request",
    "RoutedPath",
    "check",
]
