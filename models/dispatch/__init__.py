"""Jobs over time on a cluster (issue 39): each job is dispatched to one server on arrival
and served there first come, first served (or, in backfill mode, in any order its cores
allow); minimise the total weighted flow time. Budget mode: a parameter sweep on priced
servers under a deadline and a budget (Nimrod/G); bundle mode: jobs alone or in whole-node
bundles under a scheduler with a per-dispatch overhead (Byun et al.).

Parts: :mod:`.instance` (typed instance and solution, the message), :mod:`.schedule` (the
FCFS earliest-start schedule of a dispatch, optimal for its assignment; EASY backfilling;
the server queues an online policy sees), :mod:`.check` (independent checker and the solution message),
:mod:`.greedy` (earliest completion, earliest start), :mod:`.bound` (the own-service and
one-fast-machine SRPT lower bounds), :mod:`.encoding` with :mod:`.cpsat` and :mod:`.milp`
(the exact time-indexed model), :mod:`.dbc` (Nimrod/G's DBC heuristics), :mod:`.sweep`
(a sweep's per-core count model), :mod:`.patterns` (its configuration LP by column
generation, the ``colgen`` backend), :mod:`.bundling` (per-task, Byun's and our bundling),
:mod:`.explain` (why a job waited), :mod:`.generate`,
:mod:`.plot`, :mod:`.summary`, :mod:`.warm_start`; ``peers/`` (RR, JIQ, JSQ, LWL, SITA, JBT,
two-stage), ``sim/`` (the trace replay and our rollout dispatcher), ``formats/``
(SWF, Cirrus sacct CSV).
"""

from __future__ import annotations

from placement.models.dispatch import check as _check
from placement.models.dispatch import instance as _instance
from placement.models.dispatch.bound import lower_bound, sweep_bound
from placement.models.dispatch.formats import EXPORTERS, IMPORTERS
from placement.models.dispatch.generate import GENERATORS, generate
from placement.models.dispatch.greedy import greedy_solutions
from placement.models.dispatch.instance import (
    DispatchInstance,
    DispatchJob,
    DispatchServer,
    DispatchSolution,
)
from placement.models.dispatch.plot import draw
from placement.models.dispatch.summary import summarize
from placement.models.dispatch.warm_start import adapt_start
from placement.solver.errors import InputError, ValidationCollector
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class DispatchFamily(Family):
    """The dispatch family object registered as ``dispatch``."""

    name = "dispatch"
    sense = "min"
    instance_type = DispatchInstance
    encodings = {
        "cpsat": "placement.models.dispatch.cpsat:CpSatEncoding",
        "milp": "placement.models.dispatch.milp:MilpEncoding",
        "colgen": "placement.models.dispatch.patterns:PatternEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    solution_to_message = staticmethod(_check.solution_to_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(_check.check)

    def validate_fields(self, instance: DispatchInstance) -> None:
        """The mode of an instance built in code, named (the message's enum cannot carry
        other strings)."""
        if instance.mode not in _instance.MODES:
            raise InputError.single("dispatch.mode", instance.mode, " or ".join(_instance.MODES))
        if instance.budget_objective not in _instance.BUDGET_OBJECTIVES:
            raise InputError.single(
                "dispatch.budget.objective",
                instance.budget_objective,
                " or ".join(_instance.BUDGET_OBJECTIVES),
            )
        # The message reads 0 as 1 for these; a typed instance must say what it means.
        v = ValidationCollector()
        for k, s in enumerate(instance.servers):
            v.require(s.speed > 0, f"dispatch.servers[{k}].speed", s.speed, "a speed > 0")
        for i, j in enumerate(instance.jobs):
            v.require(j.cores >= 1, f"dispatch.jobs[{i}].cores", j.cores, "an integer >= 1")
            v.require(j.weight >= 1, f"dispatch.jobs[{i}].weight", j.weight, "an integer >= 1")
        v.raise_if_any()

    def auto_backend(self, instance: DispatchInstance) -> str:
        """``colgen`` on a sweep (``budget`` mode: the configuration LP's bound and its
        integer master, :mod:`.patterns`), else CP-SAT."""
        return "colgen" if instance.mode == _instance.BUDGET else "cpsat"

    def quick_bound(self, instance: DispatchInstance) -> float:
        """max(own service, one-fast-machine SRPT); in ``budget`` mode the cheapest cost or
        the longest shortest service: see :mod:`.bound`."""
        if instance.mode == _instance.BUDGET:
            return float(sweep_bound(instance))
        return float(lower_bound(instance))

    def size(self, instance: DispatchInstance) -> dict[str, int]:
        """Jobs and servers (the service's size limits)."""
        return {"jobs": len(instance.jobs), "servers": len(instance.servers)}

    def corrupt(self, instance: DispatchInstance, solution: DispatchSolution) -> DispatchSolution:
        """A solution made infeasible: its first job starts before it arrives."""
        start = list(solution.start)
        start[0] = instance.jobs[0].arrival - 1
        return DispatchSolution(solution.server_of, tuple(start))

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated trace."""
        solve(generate(6, 2, 0.9, seed=0), SolveOptions(time_limit_s=0.5, threads=1))

    generators = GENERATORS
    importers = IMPORTERS
    exporters = EXPORTERS

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = DispatchFamily()

__all__ = ["FAMILY", "DispatchInstance", "DispatchJob", "DispatchServer", "DispatchSolution"]
