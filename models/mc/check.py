"""Independent checker of mixed-criticality partitions, in exact rational arithmetic.

It imports no encoding, no heuristic and not :mod:`.edfvd`: it sums each core's
utilisations as :class:`~fractions.Fraction` from the tasks' integer budgets and periods and
decides the core with the two cases of EDF-VD as Baruah et al. (ECRTS 2012) state them:

* ``U_LO^LO + U_HI^HI <= 1``: plain EDF with the HI budgets schedules the core (x = 1);
* otherwise, if ``U_LO^LO < 1``: with ``x = U_HI^LO / (1 - U_LO^LO)``, the core passes iff
  ``x U_LO^LO + U_HI^HI <= 1``;
* otherwise it fails.

Rules: every task is on a core of the instance it may use (pinning, exclusions), or dropped
if it may be (a LO task with ``drop_cost > 0``); every core passes.

Objective tiers: ``dropped_cost`` (min), then ``min_slack`` (max; the smallest over cores of
``(1 - U_LO^LO)(1 - U_HI^HI) - U_LO^LO U_HI^LO``, 1 for an empty core) or ``cores_used``
(min), as the instance asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from placement.models.mc.instance import MAX_MIN_SLACK, McInstance, McSolution
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import mc_pb2 as pb


@dataclass(frozen=True)
class CoreTest:
    """One core's utilisation sums, its slack and the test's verdict."""

    core: str
    lo: Fraction
    hi_lo: Fraction
    hi_hi: Fraction
    slack: Fraction
    passes: bool
    case: str
    """``edf`` (plain EDF suffices), ``edf-vd`` (virtual deadlines x < 1) or ``fails``."""


def edf_vd(lo: Fraction, hi_lo: Fraction, hi_hi: Fraction) -> tuple[bool, str]:
    """The paper's test on one core: (passes, case)."""
    if lo + hi_hi <= 1:
        return True, "edf"
    if lo >= 1:
        return False, "fails"
    x = hi_lo / (1 - lo)
    if x * lo + hi_hi <= 1:
        return True, "edf-vd"
    return False, "fails"


def core_tests(instance: McInstance, solution: McSolution) -> list[CoreTest]:
    """Every core's sums and verdict under ``solution`` (tasks not on a core are skipped)."""
    sums = [[Fraction(0), Fraction(0), Fraction(0)] for _ in instance.cores]
    for task, core in enumerate(solution.core_of):
        if not (isinstance(core, int) and 0 <= core < len(instance.cores)):
            continue
        t = instance.tasks[task]
        speed = Fraction(instance.cores[core].speed)
        if t.hi:
            sums[core][1] += Fraction(t.budget_lo, t.period) / speed
            sums[core][2] += Fraction(t.budget_hi, t.period) / speed
        else:
            sums[core][0] += Fraction(t.budget_lo, t.period) / speed
    out = []
    for c, (lo, hi_lo, hi_hi) in zip(instance.cores, sums, strict=True):
        ok, case = edf_vd(lo, hi_lo, hi_hi)
        out.append(
            CoreTest(c.name, lo, hi_lo, hi_hi, (1 - lo) * (1 - hi_hi) - lo * hi_lo, ok, case)
        )
    return out


def senses(instance: McInstance) -> tuple[str, ...]:
    """The sense of each tier."""
    return ("min", "max") if instance.objective == MAX_MIN_SLACK else ("min", "min")


def _terms(instance: McInstance, dropped: float, second: float) -> dict[str, float]:
    return {"dropped_cost": dropped, instance.objective: second}


def _infeasible(instance: McInstance, violations: list[str]) -> CheckReport:
    worst = float("-inf") if instance.objective == MAX_MIN_SLACK else float("inf")
    return CheckReport(False, violations, _terms(instance, float("inf"), worst), senses(instance))


def check(instance: McInstance, solution: McSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the tiers."""
    if not isinstance(solution, McSolution):
        return _infeasible(instance, [f"not an McSolution: {type(solution).__name__}"])
    core_of = tuple(solution.core_of)
    n_tasks, n_cores = len(instance.tasks), len(instance.cores)
    if len(core_of) != n_tasks:
        return _infeasible(instance, [f"{len(core_of)} task entries for {n_tasks} tasks"])
    violations: list[str] = []
    dropped = 0
    for i, core in enumerate(core_of):
        t = instance.tasks[i]
        if core == -1:
            if t.hi or t.drop_cost <= 0:
                violations.append(f"task {t.name!r} is dropped but may not be")
            dropped += t.drop_cost
        elif not (isinstance(core, int) and 0 <= core < n_cores):
            violations.append(f"task {t.name!r} is not placed on a core ({core!r})")
        elif t.pinned is not None and t.pinned != core:
            violations.append(
                f"task {t.name!r} is on {instance.cores[core].name!r}, pinned to "
                f"{instance.cores[t.pinned].name!r}"
            )
        elif core in t.excluded:
            violations.append(f"task {t.name!r} is on {instance.cores[core].name!r}, excluded")
    if violations:
        return _infeasible(instance, violations)
    tests = core_tests(instance, solution)
    for test in tests:
        if not test.passes:
            violations.append(
                f"core {test.core!r} fails EDF-VD: U_LO^LO = {float(test.lo):.6g}, "
                f"U_HI^LO = {float(test.hi_lo):.6g}, U_HI^HI = {float(test.hi_hi):.6g}"
            )
    if violations:
        return _infeasible(instance, violations)
    if instance.objective == MAX_MIN_SLACK:
        second = float(min(t.slack for t in tests))
    else:
        second = float(len({c for c in core_of if c >= 0}))
    return CheckReport(True, [], _terms(instance, float(dropped), second), senses(instance))


def solution_to_message(
    instance: McInstance,
    solution: McSolution,
    unplaced: list[dict[str, Any]] | None = None,
) -> pb.McSolution:
    """The ``placement.v1.McSolution`` message of a solution, with the checker's per-core
    figures and the reasons for the dropped tasks, if given."""
    msg = pb.McSolution()
    for task, core in enumerate(solution.core_of):
        if 0 <= core < len(instance.cores):
            msg.assignments.add(task=instance.tasks[task].name, core=instance.cores[core].name)
        elif core == -1:
            msg.dropped.append(instance.tasks[task].name)
    for test in core_tests(instance, solution):
        msg.cores.add(
            core=test.core,
            lo_utilisation=float(test.lo),
            hi_utilisation_lo_mode=float(test.hi_lo),
            hi_utilisation_hi_mode=float(test.hi_hi),
            slack=float(test.slack),
        )
    for reason in unplaced or []:
        msg.unplaced.add(**reason)
    return msg
