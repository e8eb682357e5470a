"""Device assignment for concurrent federated-learning jobs (issue 40).

Every round of a horizon, each FL job that has not converged gets exactly its
``devices_per_round`` devices (a device serves at most one job per round); a job's round
time is its slowest device's download + training + upload time; the objective is the least
sum over rounds and jobs of the round times, which under the convergence model (job ``j``
completes after its ``rounds`` rounds, run back to back) is the number of jobs times their
average completion time; every round's devices cover the job's data classes and no device
serves more rounds than the participation limit.

Parts: :mod:`.instance` (typed instance and solution, the message), :mod:`.timing` (device
times in integer microseconds, eligibility, lower bounds), :mod:`.check` (independent
checker, Jain's index, the solution message), :mod:`.greedy` (the fastest covering devices
round by round: the fallback), :mod:`.encoding` with :mod:`.cpsat` and :mod:`.milp` (the
threshold model, per round or over the horizon), :mod:`.explain` (a job no device set can
serve), :mod:`.generate`, :mod:`.summary`, :mod:`.plot`, :mod:`.warm_start`; :mod:`.peers`
(FedACT's alignment-score greedy, FedAvg's random selection). No public instance format
exists for this problem, so the family has no ``formats/``.
"""

from __future__ import annotations

from typing import Any

from placement.models.fl import check as _check
from placement.models.fl import instance as _instance
from placement.models.fl.explain import explain_infeasible
from placement.models.fl.generate import GENERATORS, generate
from placement.models.fl.greedy import greedy_solutions
from placement.models.fl.instance import Device, FlInstance, FlSolution, Job
from placement.models.fl.plot import draw
from placement.models.fl.summary import summarize
from placement.models.fl.timing import quick_bound
from placement.models.fl.warm_start import adapt_start
from placement.solver.family import Family
from placement.solver.options import SolveOptions
from placement.solver.portfolio import solve


class FlFamily(Family):
    """The FL device-assignment family object registered as ``fl``."""

    name = "fl"
    sense = "min"
    instance_type = FlInstance
    encodings = {
        "cpsat": "placement.models.fl.cpsat:CpSatEncoding",
        "milp": "placement.models.fl.milp:MilpEncoding",
    }

    instance_from_message = staticmethod(_instance.instance_from_message)
    instance_to_message = staticmethod(_instance.instance_to_message)
    solution_from_message = staticmethod(_instance.solution_from_message)
    solution_to_message = staticmethod(_check.solution_to_message)
    named_solution = staticmethod(_instance.named_solution)
    adapt_start = staticmethod(adapt_start)

    greedy = staticmethod(greedy_solutions)
    check = staticmethod(_check.check)

    def quick_bound(self, instance: FlInstance) -> float:
        """The sum over rounds and running jobs of each job's least round time alone (see
        :func:`.timing.quick_bound`)."""
        return quick_bound(instance)

    def explain_unplaced(
        self, instance: FlInstance, solution: Any, stop: Any = None
    ) -> list[dict[str, Any]]:
        """A reason per job that cannot be served: what it needs, what is there, by how
        much it is short."""
        del solution, stop
        return explain_infeasible(instance)

    def size(self, instance: FlInstance) -> dict[str, int]:
        """Jobs, devices and rounds (the service's size limits)."""
        return {
            "jobs": len(instance.jobs),
            "devices": len(instance.devices),
            "rounds": instance.rounds,
        }

    def corrupt(self, instance: FlInstance, solution: FlSolution) -> FlSolution:
        """A solution made infeasible: the first running job of the first round loses its
        first device, so it has one device fewer than it needs."""
        rows = [list(row) for row in solution.assign]
        for j, devs in enumerate(rows[0]):
            if devs:
                rows[0][j] = devs[1:]
                break
        return FlSolution(tuple(tuple(row) for row in rows))

    def warm_up(self) -> None:
        """Run every code path of a solve once on a small generated instance."""
        solve(
            generate(30, 2, rounds=2, classes=4, min_k=3, max_k=5),
            SolveOptions(time_limit_s=0.5),
        )

    generators = GENERATORS

    plot = staticmethod(draw)
    summarize = staticmethod(summarize)


FAMILY = FlFamily()

__all__ = ["FAMILY", "Device", "FlInstance", "FlSolution", "Job", "generate"]
