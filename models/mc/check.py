"""Independent checker of mixed-criticality partitions, in exact rational arithmetic.

It imports no encoding, no heuristic and not :mod:`.edfvd`: it sums each core's
utilisations as :class:`~fractions.Fraction` from the tasks' integer budgets and periods and
decides the core with the two cases of EDF-VD as Baruah et al. (ECRTS 2012) state them:

* ``U_LO^LO + U_HI^HI <= 1``: plain EDF with the HI budgets schedules the core (x = 1);
* otherwise, if ``U_LO^LO < 1``: with ``x = U_HI^LO / (1 - U_LO^LO)``, the core passes iff
  ``x U_LO^LO + U_HI^HI <= 1``;
* otherwise it fails.

Under the instance's ``test: AMC_RTB`` each core is instead decided by fixed-priority
response-time analysis, AMC-rtb (Baruah, Burns, Davis, RTSS 2011), with the priorities that
Audsley's algorithm finds (:func:`amc_rtb_order`, written here afresh from the paper in
rational time, not :mod:`.amcrtb`'s scaled integers): ``R^LO_i = C_i(LO) + sum_{hp}
ceil(R^LO_i/T_j) C_j(LO) <= D_i`` for every task and, for HI tasks, ``R*_i = C_i(HI) +
sum_{hpH} ceil(R*_i/T_j) C_j(HI) + sum_{hpL} ceil(R^LO_i/T_k) C_k(LO) <= D_i``.

Rules: every task is on a core of the instance it may use (pinning, exclusions), or dropped
if it may be (a LO task with ``drop_cost > 0``); every core passes.

Objective tiers: ``dropped_cost`` (min), then ``min_slack`` (max; the smallest over cores of
``(1 - U_LO^LO)(1 - U_HI^HI) - U_LO^LO U_HI^LO``, 1 for an empty core) or ``cores_used``
(min), as the instance asks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from placement.models.mc.instance import AMC_RTB, MAX_MIN_SLACK, McInstance, McSolution
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
    """``edf`` (plain EDF suffices), ``edf-vd`` (virtual deadlines x < 1), ``amc-rtb`` (the
    fixed-priority test passes with :attr:`priority_order`) or ``fails``."""
    priority_order: tuple[str, ...] = ()
    """AMC-rtb: the core's task names, highest priority first."""


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


def _fixed_point(base: Fraction, interference: list[tuple[Fraction, Fraction]], limit: Fraction):
    """The least ``r = base + sum ceil(r / T) C`` over ``(T, C)``, or None past ``limit``."""
    r = base
    while True:
        nxt = base + sum((math.ceil(r / period) * c for period, c in interference), Fraction(0))
        if nxt > limit:
            return None
        if nxt == r:
            return r
        r = nxt


def _meets(task: Any, speed: Fraction, higher: list[Any]) -> bool:
    """AMC-rtb for ``task`` below every task of ``higher`` on a core of ``speed``."""
    deadline = Fraction(task.deadline or task.period)
    lo = [(Fraction(h.period), Fraction(h.budget_lo) / speed) for h in higher]
    r_lo = _fixed_point(Fraction(task.budget_lo) / speed, lo, deadline)
    if r_lo is None:
        return False
    if not task.hi:
        return True
    carried = sum(
        (math.ceil(r_lo / h.period) * Fraction(h.budget_lo) / speed for h in higher if not h.hi),
        Fraction(0),
    )
    hi = [(Fraction(h.period), Fraction(h.budget_hi) / speed) for h in higher if h.hi]
    return _fixed_point(Fraction(task.budget_hi) / speed + carried, hi, deadline) is not None


def amc_rtb_order(instance: McInstance, tasks: list[int], speed: Fraction) -> list[int] | None:
    """Audsley's assignment for AMC-rtb on one core: task indices from the highest priority
    down, or None when some priority level takes no remaining task."""
    left = list(tasks)
    order: list[int] = []
    while left:
        for i in left:
            rest = [instance.tasks[j] for j in left if j != i]
            if _meets(instance.tasks[i], speed, rest):
                order.insert(0, i)
                left.remove(i)
                break
        else:
            return None
    return order


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
    for k, (c, (lo, hi_lo, hi_hi)) in enumerate(zip(instance.cores, sums, strict=True)):
        names: tuple[str, ...] = ()
        if instance.test == AMC_RTB:
            on = [i for i, core in enumerate(solution.core_of) if core == k]
            order = amc_rtb_order(instance, on, Fraction(c.speed))
            ok, case = (order is not None), ("amc-rtb" if order is not None else "fails")
            names = tuple(instance.tasks[i].name for i in order or [])
        else:
            ok, case = edf_vd(lo, hi_lo, hi_hi)
        out.append(
            CoreTest(c.name, lo, hi_lo, hi_hi, (1 - lo) * (1 - hi_hi) - lo * hi_lo, ok, case, names)
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
        if not test.passes and instance.test == AMC_RTB:
            violations.append(
                f"core {test.core!r} fails AMC-rtb under every priority assignment (Audsley)"
            )
        elif not test.passes:
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
            priority_order=list(test.priority_order),
        )
    for reason in unplaced or []:
        msg.unplaced.add(**reason)
    return msg
