"""Mixed-criticality task partitioning onto multicore processors.

Dual-criticality (LO/HI) sporadic tasks (implicit deadlines; constrained ones under AMC-rtb)
are assigned to cores (identical, or with speed factors; tasks may be pinned or excluded, LO
tasks may be droppable at a cost) so that every core passes the EDF-VD test of Baruah et al.
(ECRTS 2012) or, with the instance's ``test: AMC_RTB``, fixed-priority AMC-rtb (Baruah,
Burns, Davis, RTSS 2011) with Audsley's priority assignment; then the smallest slack of the
cores' EDF-VD tests is maximised, or the number of cores used minimised.

Parts: :mod:`.instance` (typed instance and solution, the message), :mod:`.edfvd` (the test
in exact rationals; the per-core load the heuristics use), :mod:`.amcrtb` (AMC-rtb and OPA in
exact integers), :mod:`.check` (independent checker, the paper's two cases, and the
solution message), :mod:`.greedy` (first/best/worst-fit decreasing, criticality-aware
variants, the utilisation-difference heuristic of Ramanathan and Easwaran), :mod:`.encoding`
with :mod:`.cpsat` and :mod:`.milp` (exact encodings; their per-core rows in :mod:`.rows`),
:mod:`.colgen` (column generation over per-core task sets: the configuration LP's proofs and
bounds, the encodings' first phase), :mod:`.explain` (why a set is unschedulable), :mod:`.generate` (the literature's seeded protocol), :mod:`.plot`.
"""

from __future__ import annotations

from placement.models.mc import check as _check
from placement.models.mc import instance as _instance
from placement.models.mc.explain import explain_unplaced
from placement.models.mc.generate import GENERATORS, generate
from placement.models.mc.greedy import greedy_solutions
from placement.models.mc.instance import McCore, McInstance, McSolution, McTask
from placement.models.mc.plot import draw
from placement.models.mc.summary import summarize
from placement.models.mc.warm_start import adapt_start
from placement.solver.errors import InputError
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class McFamily(Family):
    """The mixed-criticality partitioning family object registered as ``mc``."""

    name = "mc"
    sense = "min"
    instance_type = McInstance
    encodings = {
        "cpsat": "placement.models.mc.cpsat:CpSatEncoding",
        "milp": "placement.models.mc.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    solution_to_message = staticmethod(_check.solution_to_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(_check.check)
    explain_unplaced = staticmethod(explain_unplaced)

    def validate_fields(self, instance: McInstance) -> None:
        """The test and the objective of an instance built in code, named (the message's
        enums cannot carry other strings)."""
        if instance.test not in _instance.TESTS:
            raise InputError.single("mc.test", instance.test, " or ".join(_instance.TESTS))
        if instance.objective not in _instance.OBJECTIVES:
            raise InputError.single(
                "mc.objective", instance.objective, " or ".join(_instance.OBJECTIVES)
            )

    def quick_bound(self, instance: McInstance) -> float:
        """The dropped cost is never below 0 (the primary tier)."""
        del instance
        return 0.0

    def size(self, instance: McInstance) -> dict[str, int]:
        """Tasks and cores (the service's size limits)."""
        return {"tasks": len(instance.tasks), "cores": len(instance.cores)}

    def corrupt(self, instance: McInstance, solution: McSolution) -> McSolution:
        """A solution made infeasible: its first task on a core the instance lacks."""
        return McSolution((len(instance.cores), *solution.core_of[1:]))

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated task set."""
        solve(generate(6, 2, 0.7, seed=0), SolveOptions(time_limit_s=0.5, threads=1))

    generators = GENERATORS

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = McFamily()

__all__ = ["FAMILY", "McCore", "McInstance", "McSolution", "McTask"]
