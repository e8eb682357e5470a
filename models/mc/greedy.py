"""Partitioning heuristics for mixed-criticality task sets; the peers of the literature.

None calls a solver. Each places tasks one at a time on a core whose test (the instance's:
EDF-VD, :mod:`.edfvd`, exact rationals, or AMC-rtb with Audsley's priorities, :mod:`.amcrtb`)
still passes with the task added; a task no core takes is dropped if it may be, and otherwise
the heuristic fails (returns None). Under AMC-rtb, best and worst fit rank the cores by the
utilisation headroom ``1 - max(U_LO^LO + U_HI^LO, U_HI^HI)`` instead of EDF-VD's slack.

* ``ffd`` / ``bfd`` / ``wfd``: first-, best- and worst-fit decreasing by the utilisation at
  the task's own level (``C(HI)/T`` for HI tasks); best fit takes the core left with the
  least EDF-VD slack, worst fit the most.
* ``ca-ffd`` / ``ca-bfd`` / ``ca-wfd``: the criticality-aware orders of Kelly, Aydin and
  Zhao ("On partitioning of mixed-criticality systems", 2011): every HI task first
  (decreasing ``C(HI)/T``), then the LO tasks (decreasing ``C(LO)/T``).
* ``udp``: the utilisation-difference heuristic of Ramanathan and Easwaran, "Utilization
  Difference Based Partitioned Scheduling of Mixed-Criticality Systems", DATE 2017
  (Section IV, the MC-UDP allocation, as we read it): the HI tasks in decreasing order of
  their utilisation difference ``C(HI)/T - C(LO)/T``, each on the core with the smallest
  accumulated difference ``U_HI^HI - U_HI^LO`` where it fits (spreading the difference
  evenly, so that no core's HI mode is overloaded), then the LO tasks in decreasing
  ``C(LO)/T``, each on the core of largest slack where it fits (worst fit). The paper's
  own tie rules and its variants are not reproduced.

Every heuristic that succeeds is yielded, ``wfd`` first (the fallback: in
``placement bench mc-partition`` the decreasing-utilisation orders schedule the most sets,
and worst fit leaves the most slack); the portfolio keeps the best by the checker's tiers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction

from placement.models.mc.edfvd import CoreLoad
from placement.models.mc.instance import McInstance, McSolution
from placement.solver.options import SolveOptions

Chooser = Callable[[McInstance, list[CoreLoad], int, list[int]], int]
"""(instance, loads, task, cores where it fits) -> the chosen core."""


def _first(instance: McInstance, loads: list[CoreLoad], task: int, fits: list[int]) -> int:
    del instance, loads, task
    return fits[0]


def _best(instance: McInstance, loads: list[CoreLoad], task: int, fits: list[int]) -> int:
    return min(fits, key=lambda k: (loads[k].slack_with(instance, task), k))


def _worst(instance: McInstance, loads: list[CoreLoad], task: int, fits: list[int]) -> int:
    return min(fits, key=lambda k: (-loads[k].slack_with(instance, task), k))


def _least_difference(
    instance: McInstance, loads: list[CoreLoad], task: int, fits: list[int]
) -> int:
    del instance, task
    return min(fits, key=lambda k: (loads[k].difference, -loads[k].slack, k))


def _own_util(instance: McInstance, task: int) -> Fraction:
    return instance.tasks[task].u_own


def decreasing(instance: McInstance) -> list[int]:
    """Tasks by decreasing utilisation at their own level (ties: index)."""
    return sorted(range(len(instance.tasks)), key=lambda i: (-_own_util(instance, i), i))


def criticality_aware(instance: McInstance) -> list[int]:
    """HI tasks first, then LO tasks, each by decreasing own-level utilisation."""
    return sorted(
        range(len(instance.tasks)),
        key=lambda i: (not instance.tasks[i].hi, -_own_util(instance, i), i),
    )


def place(
    instance: McInstance, order: list[int], choose: Chooser | list[Chooser]
) -> McSolution | None:
    """Place tasks in ``order`` with ``choose`` (one chooser, or one per task of ``order``);
    None when a task that may not be dropped fits nowhere."""
    loads = [CoreLoad(c.speed_exact) for c in instance.cores]
    core_of = [-1] * len(instance.tasks)
    for pos, task in enumerate(order):
        fits = [
            k
            for k in range(len(loads))
            if instance.allowed(task, k) and loads[k].fits(instance, task)
        ]
        if not fits:
            if instance.tasks[task].droppable:
                continue
            return None
        pick = choose[pos] if isinstance(choose, list) else choose
        k = pick(instance, loads, task, fits)
        loads[k].add(instance, task)
        core_of[task] = k
    return McSolution(tuple(core_of))


def udp(instance: McInstance) -> McSolution | None:
    """The utilisation-difference heuristic (see the module docstring)."""
    hi = [i for i, t in enumerate(instance.tasks) if t.hi]
    lo = [i for i, t in enumerate(instance.tasks) if not t.hi]
    hi.sort(key=lambda i: (-(instance.tasks[i].u_hi - instance.tasks[i].u_lo), i))
    lo.sort(key=lambda i: (-instance.tasks[i].u_lo, i))
    choosers: list[Chooser] = [_least_difference] * len(hi) + [_worst] * len(lo)
    return place(instance, hi + lo, choosers)


HEURISTICS: dict[str, Callable[[McInstance], McSolution | None]] = {
    "wfd": lambda inst: place(inst, decreasing(inst), _worst),
    "ffd": lambda inst: place(inst, decreasing(inst), _first),
    "bfd": lambda inst: place(inst, decreasing(inst), _best),
    "udp": udp,
    "ca-wfd": lambda inst: place(inst, criticality_aware(inst), _worst),
    "ca-ffd": lambda inst: place(inst, criticality_aware(inst), _first),
    "ca-bfd": lambda inst: place(inst, criticality_aware(inst), _best),
}
"""Every heuristic by name, the fallback first."""


def greedy_solutions(
    instance: McInstance, options: SolveOptions | None = None
) -> Iterator[tuple[str, McSolution]]:
    """Named heuristic solutions, the fallback first (those that fail are skipped)."""
    del options
    for name, heuristic in HEURISTICS.items():
        solution = heuristic(instance)
        if solution is not None:
            yield name, solution
