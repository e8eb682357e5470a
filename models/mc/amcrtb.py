"""The AMC-rtb uniprocessor test of Baruah, Burns and Davis (RTSS 2011), with Audsley's
optimal priority assignment, in exact integer arithmetic.

Baruah, Burns, Davis, "Response-time analysis for mixed criticality systems", RTSS 2011.
On one core under fixed priorities (``hp(i)``: the tasks of higher priority than ``i``;
``hpH``/``hpL``: its HI/LO ones), every task needs its LO-mode response time

    R_i^LO = C_i(LO) + sum_{j in hp(i)} ceil(R_i^LO / T_j) C_j(LO)  <=  D_i,

and every HI task the AMC-rtb bound on its response time across the mode switch

    R_i^* = C_i(HI) + sum_{j in hpH(i)} ceil(R_i^* / T_j) C_j(HI)
                    + sum_{k in hpL(i)} ceil(R_i^LO / T_k) C_k(LO)  <=  D_i,

each the least fixed point of its recurrence (iterated from below; stopped once it exceeds
``D_i``). Both depend on the *set* ``hp(i)`` only, not its order, and grow with it, so
Audsley's algorithm is optimal for the test (as the paper shows): fill the priority levels
from the lowest, each with any remaining task that passes there with all other remaining
tasks above it; the core passes iff every level is filled.

On a core of speed ``p/q`` a budget ``C`` takes ``C q / p``: every time is multiplied by
``p`` (``C q``, ``T p``, ``D p``), so the arithmetic stays in integers.

This module serves the heuristics and the encodings' exactness loop; :mod:`.check`
re-implements the test independently.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from placement.models.mc.instance import McInstance


@dataclass(frozen=True)
class Job:
    """One task on one core, its times scaled to integers for the core's speed."""

    task: int
    c_lo: int
    c_hi: int
    period: int
    deadline: int
    hi: bool


def jobs(instance: McInstance, tasks: list[int], speed: Fraction) -> list[Job]:
    """The tasks' scaled times on a core of ``speed``."""
    p, q = speed.numerator, speed.denominator
    out = []
    for i in tasks:
        t = instance.tasks[i]
        out.append(
            Job(i, t.budget_lo * q, t.budget_hi * q, t.period * p, t.relative_deadline * p, t.hi)
        )
    return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def response_lo(job: Job, higher: list[Job]) -> int | None:
    """``R^LO`` of ``job`` below ``higher``, or None once it exceeds the deadline."""
    r = job.c_lo + sum(h.c_lo for h in higher)
    while r <= job.deadline:
        nxt = job.c_lo + sum(_ceil_div(r, h.period) * h.c_lo for h in higher)
        if nxt == r:
            return r
        r = nxt
    return None


def response_star(job: Job, higher: list[Job], r_lo: int) -> int | None:
    """AMC-rtb's ``R^*`` of a HI ``job`` below ``higher``, or None past the deadline."""
    lo_part = sum(_ceil_div(r_lo, h.period) * h.c_lo for h in higher if not h.hi)
    hi_higher = [h for h in higher if h.hi]
    r = max(r_lo, job.c_hi + lo_part + sum(h.c_hi for h in hi_higher))
    while r <= job.deadline:
        nxt = job.c_hi + lo_part + sum(_ceil_div(r, h.period) * h.c_hi for h in hi_higher)
        if nxt <= r:
            return r
        r = nxt
    return None


def passes_at_lowest(job: Job, higher: list[Job]) -> bool:
    """Whether ``job`` meets AMC-rtb with every task of ``higher`` above it."""
    r_lo = response_lo(job, higher)
    if r_lo is None:
        return False
    return not job.hi or response_star(job, higher, r_lo) is not None


def audsley(core_jobs: list[Job]) -> list[int] | None:
    """Audsley's optimal priority assignment: the tasks from the highest priority to the
    lowest, or None when no assignment passes AMC-rtb."""
    remaining = list(core_jobs)
    lowest_first: list[int] = []
    while remaining:
        # Try the longest deadlines first at each level (any order is optimal).
        for pos in sorted(range(len(remaining)), key=lambda p: -remaining[p].deadline):
            job = remaining[pos]
            others = remaining[:pos] + remaining[pos + 1 :]
            if passes_at_lowest(job, others):
                lowest_first.append(job.task)
                remaining = others
                break
        else:
            return None
    return lowest_first[::-1]


def priority_order(instance: McInstance, tasks: list[int], speed: Fraction) -> list[int] | None:
    """The tasks on a core of ``speed`` from the highest priority down, or None when the
    core fails AMC-rtb under every priority assignment."""
    return audsley(jobs(instance, tasks, speed))


def core_passes(instance: McInstance, tasks: list[int], speed: Fraction) -> bool:
    """Whether a core of ``speed`` holding ``tasks`` passes AMC-rtb (with OPA)."""
    return priority_order(instance, tasks, speed) is not None


def minimal_failing(instance: McInstance, tasks: list[int], speed: Fraction) -> list[int]:
    """A subset of a failing ``tasks`` that still fails and loses that property when any
    one task is removed (deletion filter; the test is monotone in the task set, so every
    superset of the result fails too: the encodings' no-good cut)."""
    keep = list(tasks)
    for i in sorted(tasks, key=lambda i: instance.tasks[i].u_own):
        trial = [j for j in keep if j != i]
        if not core_passes(instance, trial, speed):
            keep = trial
    return keep
