"""Workflow (ETL) DAG mapping onto heterogeneous machines, and grid scheduling.

Tasks (work or an ETC row, cores, memory, release, deadline, data locality) and edges (data
volumes) onto machines (type, speed, slots, memory, price) in zones joined by links.
Independent tasks (no edges) are the grid-scheduling special case.

Parts: :mod:`.instance` (typed instance and solution, JSON form, validation), :mod:`.check`
(independent checker and objective), :mod:`.greedy` (HEFT, the fallback; PEFT, CPOP; MCT,
Min-Min, Max-Min, Sufferage), :mod:`.cpsat` and :mod:`.milp` (exact encodings),
:mod:`.rcmax` (the R||Cmax search run beside HiGHS), :mod:`.bound` (cheap lower
bounds; with :mod:`.energetic`, the counting bound, and :mod:`.assignment_lp`, the
certified assignment LP), :mod:`.explain` (the deadline or limit no schedule meets), :mod:`.generate` (seeded
random DAGs), :mod:`.formats` (STG, Braun, WfCommons, the HEFT paper's example), :mod:`.plot`
(Gantt chart).
"""

from __future__ import annotations

import numpy as np

from placement.models.dag import instance as _instance
from placement.models.dag.bound import lower_bound
from placement.models.dag.check import check, solution_to_message
from placement.models.dag.explain import explain_infeasible, explained
from placement.models.dag.formats import IMPORTERS
from placement.models.dag.generate import GENERATORS
from placement.models.dag.instance import (
    DagEdge,
    DagInstance,
    DagLink,
    DagMachine,
    DagSolution,
    DagTask,
)
from placement.models.dag.layer import family_greedies
from placement.models.dag.plot import draw
from placement.models.dag.rcmax.encoding import auto_backend
from placement.models.dag.summary import summarize
from placement.models.dag.warm_start import adapt_start
from placement.solver.family import ExactContext, ExactEncoding, ExactOutcome, Family
from placement.solver.result import StopReason


class DagFamily(Family):
    """The DAG-scheduling family object registered as ``dag``."""

    name = "dag"
    sense = "min"
    instance_type = DagInstance
    encodings = {
        "cpsat": "placement.models.dag.cpsat:CpSatEncoding",
        "milp": "placement.models.dag.milp:MilpEncoding",
        "rcmax": "placement.models.dag.rcmax.encoding:RcmaxEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)
    solution_to_message = staticmethod(solution_to_message)

    greedy = staticmethod(family_greedies)
    check = staticmethod(check)
    quick_bound = staticmethod(lower_bound)
    """A cheap lower bound on the makespan: see :mod:`.bound`."""

    auto_backend = staticmethod(auto_backend)
    """R||Cmax instances (independent tasks, makespan) go to the R||Cmax search beside
    HiGHS (``rcmax``), which beats CP-SAT there; everything else to CP-SAT."""

    generators = GENERATORS
    importers = IMPORTERS

    def corrupt(self, instance: DagInstance, solution: DagSolution) -> DagSolution:
        """A solution made infeasible: task 0 on a machine that does not exist."""
        machine = np.array(solution.machine, copy=True)
        machine[0] = len(instance.machines)
        return DagSolution(machine, np.array(solution.start_s, copy=True))

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)

    def exact(self, backend: str) -> ExactEncoding:
        """The encoding ``backend``, behind the check that says which deadline or limit
        cannot be met, and by how much, when one cannot (:mod:`.explain`)."""
        return _Explaining(super().exact(backend))


class _Explaining:
    """An exact encoding that first looks for a deadline or limit no schedule can meet
    (:func:`.explain.explain_infeasible`): when one is found the instance is proved
    infeasible, with the reason, without a search."""

    def __init__(self, encoding: ExactEncoding) -> None:
        self.encoding = encoding

    def __getattr__(self, name: str) -> object:
        # Statistics and the like the callers read from the encoding itself.
        return getattr(self.encoding, name)

    def solve(self, instance: DagInstance, ctx: ExactContext) -> ExactOutcome:
        shortfalls = explain_infeasible(instance)
        if shortfalls:
            # Each shortfall is a proof that no schedule exists: no search can find one.
            return ExactOutcome(
                StopReason.PROVEN, proven_infeasible=True, message=explained(shortfalls)
            )
        return self.encoding.solve(instance, ctx)


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
