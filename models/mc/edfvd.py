"""The EDF-VD uniprocessor test of Baruah et al. (ECRTS 2012), in exact rational arithmetic.

Baruah, Bonifaci, D'Angelo, Li, Marchetti-Spaccamela, van der Ster, Stougie, "The preemptive
uniprocessor scheduling of mixed-criticality implicit-deadline sporadic task systems",
ECRTS 2012: with ``L = U_LO^LO`` (the LO tasks' utilisation), ``HL = U_HI^LO`` (the HI tasks'
LO-mode utilisation) and ``HH = U_HI^HI`` (their HI-mode utilisation) on one core, EDF-VD
schedules the tasks if ``L + HH <= 1`` (plain EDF with HI budgets), or else if ``L < 1`` and,
with the deadline scaling factor ``x = HL / (1 - L)``, ``x L + HH <= 1``.

Multiplying the second case by ``1 - L > 0`` gives one polynomial condition that also covers
the first (docs/formulations/mc.md derives it)::

    L <= 1,  HH <= 1,  slack = (1 - L)(1 - HH) - L * HL >= 0

(at ``L = 1`` also ``HH = 0``, implied for real task sets: see :func:`passes`),

equivalently ``1 - L - HH + L * D >= 0`` with ``D = HH - HL`` (the HI tasks' utilisation
difference). This module computes that form; :mod:`.check` decides each core with the
paper's two cases independently.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from placement.models.mc.amcrtb import core_passes
from placement.models.mc.instance import AMC_RTB, McInstance

ZERO = Fraction(0)
ONE = Fraction(1)


def slack(lo: Fraction, hi_lo: Fraction, hi_hi: Fraction) -> Fraction:
    """``(1 - L)(1 - HH) - L * HL``: the margin of the test's polynomial form."""
    return (1 - lo) * (1 - hi_hi) - lo * hi_lo


def passes(lo: Fraction, hi_lo: Fraction, hi_hi: Fraction) -> bool:
    """The EDF-VD test on one core (polynomial form, see the module docstring).

    At ``L = 1`` the paper passes only ``HH = 0``, the polynomial any ``HL = 0``: they differ
    only for sums no task set has (a HI task has ``C(LO) >= 1``, so ``HL > 0`` with ``HH > 0``),
    and the last clause makes them agree everywhere."""
    if lo == 1 and hi_hi > 0:
        return False
    return lo <= 1 and hi_hi <= 1 and slack(lo, hi_lo, hi_hi) >= 0


def headroom(lo: Fraction, hi_lo: Fraction, hi_hi: Fraction) -> Fraction:
    """``1 - max(U_LO^LO + U_HI^LO, U_HI^HI)``: the margin of AMC-rtb's necessary
    utilisation conditions (the heuristics' best/worst-fit measure under AMC-rtb)."""
    return 1 - max(lo + hi_lo, hi_hi)


@dataclass
class CoreLoad:
    """The three utilisation sums of one core and its tasks, updated as tasks are added.

    :meth:`fits` is the instance's per-core test: EDF-VD on the sums, or AMC-rtb with
    Audsley's priority assignment (:mod:`.amcrtb`) on the tasks; :meth:`slack_with` and
    :attr:`slack` are EDF-VD's slack, or under AMC-rtb the utilisation :func:`headroom`."""

    speed: Fraction
    lo: Fraction = ZERO
    hi_lo: Fraction = ZERO
    hi_hi: Fraction = ZERO
    tasks: list[int] = field(default_factory=list)
    amc: bool = False
    """Whether the sums' margin is :func:`headroom` (AMC-rtb) rather than EDF-VD's slack."""

    def with_task(self, instance: McInstance, task: int) -> tuple[Fraction, Fraction, Fraction]:
        """The sums if ``task`` were added."""
        t = instance.tasks[task]
        if t.hi:
            return self.lo, self.hi_lo + t.u_lo / self.speed, self.hi_hi + t.u_hi / self.speed
        return self.lo + t.u_lo / self.speed, self.hi_lo, self.hi_hi

    def fits(self, instance: McInstance, task: int) -> bool:
        """Whether the core still passes the instance's test with ``task`` added."""
        if instance.test == AMC_RTB:
            sums = self.with_task(instance, task)
            if sums[0] + sums[1] > 1 or sums[2] > 1:
                return False  # necessary for AMC-rtb; saves the response times
            return core_passes(instance, [*self.tasks, task], self.speed)
        return passes(*self.with_task(instance, task))

    def slack_with(self, instance: McInstance, task: int) -> Fraction:
        """The core's slack (AMC-rtb: headroom) with ``task`` added."""
        if instance.test == AMC_RTB:
            return headroom(*self.with_task(instance, task))
        return slack(*self.with_task(instance, task))

    def add(self, instance: McInstance, task: int) -> None:
        """Add ``task`` to the core."""
        self.lo, self.hi_lo, self.hi_hi = self.with_task(instance, task)
        self.tasks.append(task)
        self.amc = instance.test == AMC_RTB

    @property
    def slack(self) -> Fraction:
        """The core's slack (AMC-rtb: headroom) now."""
        if self.amc:
            return headroom(self.lo, self.hi_lo, self.hi_hi)
        return slack(self.lo, self.hi_lo, self.hi_hi)

    def passes(self, instance: McInstance) -> bool:
        """Whether the core passes the instance's test as it is."""
        if instance.test == AMC_RTB:
            return core_passes(instance, self.tasks, self.speed)
        return passes(self.lo, self.hi_lo, self.hi_hi)

    @property
    def difference(self) -> Fraction:
        """``U_HI^HI - U_HI^LO``: the HI tasks' utilisation difference on the core."""
        return self.hi_hi - self.hi_lo


def loads(instance: McInstance, core_of: tuple[int, ...] | list[int]) -> list[CoreLoad]:
    """The sums of every core under an assignment (-1 / -2: not placed)."""
    out = [CoreLoad(c.speed_exact) for c in instance.cores]
    for task, core in enumerate(core_of):
        if 0 <= core < len(out):
            out[core].add(instance, task)
    return out
