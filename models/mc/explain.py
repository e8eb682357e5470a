"""Why a task set is unschedulable: the utilisation sums that make the per-core test fail.

:func:`explain_unschedulable` gives, in order, the first reason that applies:

1. a task that fails alone on every core it may use (its own sums fail the test);
2. a total that no partition can fit: the LO-mode utilisation of all tasks that may not be
   dropped, or the HI tasks' HI-mode utilisation, above the cores' total speed (each core
   needs ``U_LO^LO + U_HI^LO <= 1`` and ``U_HI^HI <= 1``);
3. otherwise the sums of criticality-aware worst-fit decreasing at the first task it cannot
   place: on every allowed core, ``(U_LO^LO, U_HI^LO, U_HI^HI)`` with the task added (under
   AMC-rtb: the core's task set with it, which no priority assignment schedules).

When an exact backend proves the set unschedulable, its message adds this explanation to the
certificate (the model, a relaxation of the test, is infeasible).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from placement.models.mc.edfvd import CoreLoad, loads
from placement.models.mc.greedy import criticality_aware
from placement.models.mc.instance import AMC_RTB, McInstance, McSolution


def _fmt(x: Fraction) -> str:
    return f"{float(x):.4g}"


def alone_failures(instance: McInstance) -> list[int]:
    """Tasks that may not be dropped and fail the test alone on every core they may use."""
    out = []
    for i, t in enumerate(instance.tasks):
        if t.droppable:
            continue
        if not any(
            instance.allowed(i, k) and CoreLoad(c.speed_exact).fits(instance, i)
            for k, c in enumerate(instance.cores)
        ):
            out.append(i)
    return out


def explain_unschedulable(instance: McInstance) -> str:
    """One sentence: why the set is unschedulable (see the module docstring)."""
    alone = alone_failures(instance)
    if alone:
        t = instance.tasks[alone[0]]
        return (
            f"task {t.name!r} (C(LO)/T = {_fmt(t.u_lo)}, C(HI)/T = {_fmt(t.u_hi)}) fails {instance.test_label} "
            "alone on every core it may use"
        )
    capacity = sum((c.speed_exact for c in instance.cores), Fraction(0))
    lo_mode = sum((t.u_lo for t in instance.tasks if not t.droppable), Fraction(0))
    hi_mode = sum((t.u_hi for t in instance.tasks if t.hi), Fraction(0))
    if lo_mode > capacity:
        return (
            f"the LO-mode utilisation of the tasks that may not be dropped, {_fmt(lo_mode)}, "
            f"exceeds the cores' total speed {_fmt(capacity)}"
        )
    if hi_mode > capacity:
        return (
            f"the HI tasks' HI-mode utilisation {_fmt(hi_mode)} exceeds the cores' total speed "
            f"{_fmt(capacity)}"
        )
    loads = [CoreLoad(c.speed_exact) for c in instance.cores]
    for task in criticality_aware(instance):
        fits = [
            k
            for k in range(len(loads))
            if instance.allowed(task, k) and loads[k].fits(instance, task)
        ]
        if fits:
            k = max(fits, key=lambda k: loads[k].slack_with(instance, task))
            loads[k].add(instance, task)
            continue
        if instance.tasks[task].droppable:
            continue
        sums = "; ".join(
            f"{instance.cores[k].name}: "
            + ", ".join(_fmt(x) for x in loads[k].with_task(instance, task))
            for k in range(len(loads))
            if instance.allowed(task, k)
        )
        if instance.test == AMC_RTB:
            sets = "; ".join(
                f"{instance.cores[k].name}: "
                + ", ".join(instance.tasks[i].name for i in [*loads[k].tasks, task])
                for k in range(len(loads))
                if instance.allowed(task, k)
            )
            return (
                f"criticality-aware worst fit cannot place task {instance.tasks[task].name!r}: "
                f"with it, no priority assignment passes AMC-rtb on any core it may use ({sets})"
            )
        return (
            f"criticality-aware worst fit cannot place task {instance.tasks[task].name!r}: "
            f"with it, each core's (U_LO^LO, U_HI^LO, U_HI^HI) fails {instance.test_label} ({sums})"
        )
    return "a heuristic schedules it; no explanation needed"


def explain_unplaced(
    instance: McInstance, solution: McSolution, stop: object = None
) -> list[dict[str, Any]]:
    """One reason (``name``, ``kind``, ``message``, ``drop_cost``) per dropped task (each is
    cheap: ``stop`` is not needed)."""
    del stop
    sums = loads(instance, solution.core_of)
    out = []
    for i, core in enumerate(solution.core_of):
        if core != -1:
            continue
        t = instance.tasks[i]
        allowed = [k for k in range(len(instance.cores)) if instance.allowed(i, k)]
        if not any(CoreLoad(instance.cores[k].speed_exact).fits(instance, i) for k in allowed):
            kind = "alone_fails"
            message = (
                f"LO task {t.name!r} fails {instance.test_label} alone on every core it may use"
            )
        else:
            fits = [instance.cores[k].name for k in allowed if sums[k].fits(instance, i)]
            kind = "crowded_out" if not fits else "dropped"
            detail = "; ".join(
                f"{instance.cores[k].name}: "
                + ", ".join(_fmt(x) for x in sums[k].with_task(instance, i))
                for k in allowed
            )
            message = (
                f"LO task {t.name!r} dropped (cost {t.drop_cost}): with it, each core's "
                f"(U_LO^LO, U_HI^LO, U_HI^HI) would be {detail}"
                + (f"; it would fit on {', '.join(fits)}" if fits else "")
                + (f" (no core passes {instance.test_label} with it)" if not fits else "")
            )
        out.append({"name": t.name, "kind": kind, "message": message, "drop_cost": t.drop_cost})
    return out
