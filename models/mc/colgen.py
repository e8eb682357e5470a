"""Column generation over per-core task sets: the configuration LP of mixed-criticality
partitioning, its Lagrangian (Farkas) bound at every iteration, and an integer master over the
columns it generated (price and branch).

A *configuration* of a core type ``t`` (cores of one speed that allow the same tasks) is a set
of tasks that passes the instance's per-core test on a core of that type. Since both tests are
monotone (a subset of a passing set passes; docs/formulations/mc.md), a schedule is a choice
of at most ``m_t`` configurations per type that covers every task not dropped. The LP
(Gilmore and Gomory's, over these columns, ``lambda >= 0``):

* **cores mode** (one core type, no droppable task: the benchmark's case)::

      min  sum_S lambda_S   s.t.  sum_{S ∋ i} lambda_S >= 1   (pi_i)   for every task i

  For any ``pi >= 0`` and any ``z >= max_S pi(S)`` a schedule with ``q`` cores has
  ``sum_i pi_i <= sum_{cores} pi(S_k) <= q z``, so ``q >= ceil(sum pi / z)`` (the Farkas
  bound); the set is unschedulable on ``m`` cores when ``sum pi > m z``.

* **capacity mode** (several core types, or droppable tasks), with costs normalised by
  ``C = 1 + sum of the drop costs``::

      min  sum_i a_i + sum_{droppable} (c_i / C) drop_i
      s.t. sum_{t, S ∋ i} lambda_{t,S} + drop_i + a_i >= 1        (pi_i)
           sum_S lambda_{t,S} <= m_t                               (mu_t)

  (``a_i`` artificial). For any ``pi >= 0`` and ``z_t >= max_S pi(S)`` the Lagrangian bound

      L(pi) = sum_i pi_i + sum_{droppable} min(0, c_i / C - pi_i) - sum_t m_t z_t

  is at most ``dropped cost / C`` of every schedule (relax the cover rows; a schedule is a
  point of the remaining polytope with ``a = 0``), so ``ceil(C L)`` bounds the dropped cost
  and ``C L > sum c_i`` proves that no schedule exists.

Both bounds hold for *any* multipliers, so they are valid at every iteration, not only at
convergence; the multipliers are the master's duals rounded down to multiples of
``1/PRICE_SCALE`` (integers for the pricing model), and ``z_t`` is an upper bound on the
pricing optimum that CP-SAT proves (:class:`Pricer`): every comparison that concludes is in
integers or :class:`~fractions.Fraction`.

**Pricing** (per core type): ``max sum_i w_i x_i`` over task sets that pass the test, as a
CP-SAT model with the rows of the exact encodings for one core (:func:`.cpsat.add_core_rows`):
EDF-VD's exact linearisation, or AMC-rtb's necessary utilisation rows plus no-good cuts of
minimal failing subsets. Where the rows are rounded (scale ``10^6``) they are optimistic, so
the model is a relaxation of the test: its proven optimum is an upper bound on the pricing
optimum, whatever the rounding. A model solution is checked with the exact test; one that
fails gets a no-good cut and the model is solved again (the bound from before the cut stays
valid). A greedy pricing (exact test, a few orders) runs first; the exact pricing runs when it
finds no improving column (and every :data:`EXACT_PRICING_EVERY` iterations).

**Integer master.** The generated columns that pass the exact test, as a set-covering model
(``sum_{S ∋ i} y_S + drop_i >= 1``, ``sum_{S of t} y_S <= m_t``, binary ``y``) in CP-SAT: a
solution is a schedule (a task in two chosen sets stays in the first: its other sets still
pass, by monotonicity), which the encoding reports through the checker.

This is the classical configuration LP of bin packing (Gilmore and Gomory, "A linear
programming approach to the cutting-stock problem", Operations Research 9(6), 1961) with the
bin's capacity replaced by the per-core test; the Farkas / Lagrangian bound at every
iteration is the standard one of column generation (e.g. Lübbecke and Desrosiers,
"Selected topics in column generation", Operations Research 53(6), 2005, Section 2.1).
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from placement.models.mc.amcrtb import core_passes, jobs, minimal_failing, passes_at_lowest
from placement.models.mc.edfvd import CoreLoad
from placement.models.mc.greedy import greedy_solutions
from placement.models.mc.instance import AMC_RTB, McInstance
from placement.models.mc.rows import add_core_rows, scaled_utilisations
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions, deterministic_wall_limit

PRICE_SCALE = 10**6
"""The master's duals are rounded down to multiples of ``1/PRICE_SCALE`` (the pricing
model's integer weights; the bound is computed for these rounded multipliers)."""
EXACT_PRICING_EVERY = 8
"""Exact pricing runs at least every this many iterations, even when the greedy pricing
finds improving columns (each exact pricing gives a bound)."""
IMPROVEMENT_TOLERANCE = 1e-9
"""A greedy column enters the master when its dual value exceeds the threshold by this."""
PRICING_TIME_S = 2.0
"""Time limit of one CP-SAT or branch-and-bound pricing (the bound of a pricing stopped early,
CP-SAT's proven bound or the largest open node's, is still valid, only weaker)."""
COLUMNS_PER_PRICING = 5
"""Improving columns one exact pricing may add (the heaviest passing sets it saw)."""
ENUMERATION_LIMIT = 1_000_000
"""HI task sets the EDF-VD enumeration pricing may hold; beyond it CP-SAT prices."""
VERDICT_CACHE = 200_000
"""AMC-rtb verdicts one pricer remembers."""
DETERMINISTIC_NODES = 20_000
"""Nodes one AMC-rtb branch-and-bound pricing may visit in deterministic mode."""
DETERMINISTIC_ITERATIONS_PER_S = 40
"""Master iterations per second of column generation's budget in deterministic mode."""
SMOOTHING = 0.5
"""Weight of the best multipliers so far in the smoothed multipliers exact pricing tries
first (Wentges' dual smoothing; 0: price at the master's duals only)."""
CORES = "cores"
CAPACITY = "capacity"


@dataclass(frozen=True)
class CoreType:
    """Cores of one speed that allow the same tasks (their configurations are the same)."""

    speed: Fraction
    cores: tuple[int, ...]
    tasks: tuple[int, ...]
    """The tasks the cores allow (pinning, exclusions) that pass the test alone on them."""


def core_types(instance: McInstance) -> list[CoreType]:
    """The cores grouped into types, in order of their first core."""
    groups: dict[tuple[Fraction, tuple[int, ...]], list[int]] = {}
    for k, core in enumerate(instance.cores):
        speed = core.speed_exact
        alone = CoreLoad(speed)
        tasks = tuple(
            i
            for i in range(len(instance.tasks))
            if instance.allowed(i, k) and alone.fits(instance, i)
        )
        groups.setdefault((speed, tasks), []).append(k)
    return [CoreType(speed, tuple(cores), tasks) for (speed, tasks), cores in groups.items()]


FLOAT_MARGIN = 1e-9
"""Float sums decide the EDF-VD test only when they clear the boundary by this much (their
rounding error is below 1e-13); closer cases are decided in exact rationals."""


def passes(instance: McInstance, tasks: list[int] | tuple[int, ...], speed: Fraction) -> bool:
    """Whether ``tasks`` pass the instance's test together on a core of ``speed`` (exact:
    float sums decide only outside a margin of :data:`FLOAT_MARGIN`)."""
    lo = hl = hh = 0.0
    for i in tasks:
        t = instance.tasks[i]
        if t.hi:
            hl += t.budget_lo / t.period
            hh += t.budget_hi / t.period
        else:
            lo += t.budget_lo / t.period
    s = float(speed)
    lo, hl, hh = lo / s, hl / s, hh / s
    if instance.test == AMC_RTB:
        if lo + hl > 1 + FLOAT_MARGIN or hh > 1 + FLOAT_MARGIN:
            return False  # necessary for AMC-rtb; saves the response times
        return core_passes(instance, list(tasks), speed)
    margin = (1 - lo) * (1 - hh) - lo * hl
    if lo < 1 - FLOAT_MARGIN and hh < 1 - FLOAT_MARGIN and margin > FLOAT_MARGIN:
        return True
    if lo > 1 + FLOAT_MARGIN or hh > 1 + FLOAT_MARGIN or margin < -FLOAT_MARGIN:
        return False
    load = CoreLoad(speed)
    for i in tasks:
        load.add(instance, i)
    return load.passes(instance)


@dataclass
class Priced:
    """What one exact pricing of one core type found."""

    columns: list[frozenset[int]]
    """Passing task sets whose weight exceeds the threshold (empty when none does)."""
    upper: int | None
    """A proven upper bound on ``max w(S)`` over passing sets ``S`` (None: none proved)."""


def _lo_frontier(u: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The LO task sets on the Pareto frontier of (utilisation, weight): utilisations
    ascending, weights strictly ascending, and each set as a bit mask of positions.

    Sets are extended one task at a time and dominated ones dropped as they appear (a set
    that another beats, lighter and no less valuable, is beaten by it with any tasks added).
    Floats, with every utilisation bound relaxed by :data:`FLOAT_MARGIN`, so no set that
    passes in exact arithmetic is lost."""
    util = np.zeros(1)
    weight = np.zeros(1)
    mask = np.zeros(1, dtype=np.int64)
    for j in np.argsort(-u):
        grown = util + u[j]
        keep = grown <= 1 + FLOAT_MARGIN
        util = np.concatenate([util, grown[keep]])
        weight = np.concatenate([weight, weight[keep] + w[j]])
        mask = np.concatenate([mask, mask[keep] | (1 << int(j))])
        order = np.lexsort((-weight, util))
        util, weight, mask = util[order], weight[order], mask[order]
        best = np.maximum.accumulate(weight)
        keep = np.empty(len(weight), dtype=bool)
        keep[0] = True
        keep[1:] = weight[1:] > best[:-1]
        util, weight, mask = util[keep], weight[keep], mask[keep]
    return util, weight, mask


def _lo_cap(hl: np.ndarray, hh: np.ndarray) -> np.ndarray:
    """The largest LO utilisation EDF-VD allows beside HI sums (HL, HH): the test solved for
    ``L``, ``L <= (1 - HH) / (1 - HH + HL)``, plus :data:`FLOAT_MARGIN`."""
    den = 1 - hh + hl
    safe = np.where(den > 0, den, 1.0)
    return np.where(den > 0, np.clip((1 - hh) / safe, 0.0, 1.0), 0.0) + FLOAT_MARGIN


def _hi_sets(
    a: np.ndarray,
    b: np.ndarray,
    w: np.ndarray,
    lo_util: np.ndarray,
    lo_weight: np.ndarray,
    above: int,
    limit: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The HI task sets (HL, HH, weight, bit mask) with ``U_HI^LO <= 1`` and
    ``U_HI^HI <= 1`` (relaxed by :data:`FLOAT_MARGIN`) that may still lead to the heaviest
    total, or None past ``limit`` sets.

    Sets are grown one task at a time (by decreasing ``C(HI)/T``); a set is dropped when even
    its best completion cannot reach the heaviest total seen (nor exceed ``above``): its
    weight, plus the fractional knapsack of the tasks still to come into ``1 - HH``, plus
    the LO frontier's best within its LO cap (adding HI tasks only lowers the cap). Every
    set kept is itself a candidate, so the heaviest total survives."""
    order = np.argsort(-b)
    # The fractional knapsack of the tasks from position j on, as a piecewise linear curve.
    curves = []
    for j in range(len(order) + 1):
        rest = order[j:]
        rest = rest[np.argsort(-w[rest] / np.maximum(b[rest], 1e-12))]
        curves.append(
            (
                np.concatenate([[0.0], np.cumsum(b[rest])]),
                np.concatenate([[0.0], np.cumsum(w[rest])]),
            )
        )
    hl = np.zeros(1)
    hh = np.zeros(1)
    weight = np.zeros(1)
    mask = np.zeros(1, dtype=np.int64)
    lower = float(above)
    for step, j in enumerate(order):
        grown = hh + b[j]
        keep = (grown <= 1 + FLOAT_MARGIN) & (hl + a[j] <= 1 + FLOAT_MARGIN)
        hl = np.concatenate([hl, hl[keep] + a[j]])
        hh = np.concatenate([hh, grown[keep]])
        weight = np.concatenate([weight, weight[keep] + w[j]])
        mask = np.concatenate([mask, mask[keep] | (1 << int(j))])
        lo_best = lo_weight[np.searchsorted(lo_util, _lo_cap(hl, hh), side="right") - 1]
        total = weight + lo_best
        lower = max(lower, float(total.max()))
        xs, ys = curves[step + 1]
        best_case = total + np.interp(1 - hh + FLOAT_MARGIN, xs, ys)
        # Totals are integers: a set whose best case is below lower - 1/2 cannot reach it.
        alive = best_case >= lower - 0.5
        hl, hh, weight, mask = hl[alive], hh[alive], weight[alive], mask[alive]
        if len(hl) > limit:
            return None
    return hl, hh, weight, mask


def _bits(mask: int, items: list[int]) -> list[int]:
    return [t for pos, t in enumerate(items) if mask >> pos & 1]


class Pricer:
    """The exact pricing of one core type (see the module docstring)."""

    def __init__(self, instance: McInstance, ctype: CoreType) -> None:
        self.instance = instance
        self.ctype = ctype
        items = {i: (i, ctype.speed) for i in ctype.tasks}
        self.scale, self.exact, self.lo, self.hl, self.hh, self.d = scaled_utilisations(
            instance, items
        )
        speed = float(ctype.speed)
        self.u_lo = {
            i: instance.tasks[i].budget_lo / instance.tasks[i].period / speed for i in ctype.tasks
        }
        self.u_hi = {
            i: instance.tasks[i].budget_hi / instance.tasks[i].period / speed for i in ctype.tasks
        }
        self.nogoods: list[frozenset[int]] = []
        """Task sets that fail on this core type (found by the exactness check)."""
        self._verdicts: dict[frozenset[int], bool] = {}
        self.solves = 0

    def passes(
        self, tasks: list[int] | tuple[int, ...] | frozenset[int], prefix_passes: bool = False
    ) -> bool:
        """The exact test on this core type (AMC-rtb verdicts remembered).

        ``prefix_passes``: the caller knows that ``tasks`` without its last task passes. Under
        AMC-rtb the last task is then tried first at the lowest priority below the others:
        if it meets its deadlines there the set passes (the others keep a passing order of
        their own, and a task below them changes none of their response times); otherwise
        OPA decides."""
        key = frozenset(tasks)
        verdict = self._verdicts.get(key)
        if verdict is None:
            amc = self.instance.test == AMC_RTB
            ordered = list(tasks)
            if amc and prefix_passes and len(ordered) > 1 and self._fits_below(ordered):
                verdict = True
            else:
                verdict = passes(self.instance, sorted(key), self.ctype.speed)
            if len(self._verdicts) < VERDICT_CACHE and amc:
                self._verdicts[key] = verdict
        return verdict

    def _fits_below(self, tasks: list[int]) -> bool:
        """Whether the last task meets AMC-rtb at the lowest priority under all the others."""
        core = jobs(self.instance, tasks, self.ctype.speed)
        return passes_at_lowest(core[-1], core[:-1])

    def price(
        self,
        weights: dict[int, int],
        above: int,
        deadline: float,
        options: SolveOptions,
        cancel: CancellationToken,
    ) -> Priced:
        """Passing sets of weight above ``above`` (the heaviest first; none when there is
        none), and a proven upper bound on the largest weight of a passing set."""
        tasks = [i for i in self.ctype.tasks if weights.get(i, 0) > 0]
        if not tasks:
            return Priced([], 0)
        self.solves += 1
        if self.instance.test == AMC_RTB:
            stop = min(deadline, time.monotonic() + PRICING_TIME_S)
            if options.deterministic:
                # A node budget, not the clock, ends the search (the wall clock only guards).
                stop = time.monotonic() + deterministic_wall_limit(PRICING_TIME_S)
            nodes = DETERMINISTIC_NODES if options.deterministic else None
            return self._branch_and_bound(tasks, weights, above, stop, cancel, nodes)
        priced = self._enumerate(tasks, weights, above)
        if priced is not None:
            return priced
        return self._cpsat(tasks, weights, above, deadline, options, cancel)

    def _branch_and_bound(
        self,
        tasks: list[int],
        weights: dict[int, int],
        above: int,
        deadline: float,
        cancel: CancellationToken,
        nodes: int | None = None,
    ) -> Priced:
        """AMC-rtb pricing by depth-first branch and bound over task sets: a node's children
        add one later task within the utilisation limits; a node whose set fails AMC-rtb
        (OPA) is cut with its subtree (by monotonicity every superset fails); a node is
        pruned when its weight plus the fractional knapsack of its candidates into the
        LO-mode utilisation left (``U_LO^LO + U_HI^LO <= 1`` is necessary) cannot exceed the
        best. Exact when it finishes; stopped at the
        deadline, the largest bound of the nodes left is the (valid) upper bound."""
        u = self.u_lo
        order = sorted(tasks, key=lambda i: -weights[i] / max(u[i], 1e-12))
        hh_of = {i: (self.u_hi[i] if self.instance.tasks[i].hi else 0.0) for i in order}

        def bound(w: float, used: float, cand: list[int]) -> float:
            room = 1 + FLOAT_MARGIN - used
            for i in cand:
                if u[i] <= room:
                    room -= u[i]
                    w += weights[i]
                else:
                    return w + weights[i] * room / u[i]
            return w

        best, best_set = above, None
        root = ((), 0, 0.0, 0.0, order)
        stack = [(float(bound(0, 0.0, order)), root)]
        found: list[tuple[int, tuple[int, ...]]] = []
        steps = 0
        while stack:
            steps += 1
            out_of_nodes = nodes is not None and steps > nodes
            if out_of_nodes or (
                steps % 64 == 0 and (time.monotonic() > deadline or cancel.cancelled)
            ):
                upper = max(best, math.floor(max(b for b, _ in stack) + FLOAT_MARGIN))
                return Priced(self._verified(found, above), upper)
            node_bound, (chosen, w, used, hh, cand) = stack.pop()
            # A node's set is tested when it is reached, not when it is made: most are pruned
            # by their bound before (the test is the expensive part).
            if node_bound <= best or (chosen and not self.passes(chosen, prefix_passes=True)):
                continue
            if w > best:
                best, best_set = w, chosen
                found.append((w, chosen))
            fits = [
                i
                for i in cand
                if used + u[i] <= 1 + FLOAT_MARGIN and hh + hh_of[i] <= 1 + FLOAT_MARGIN
            ]
            children = []
            for pos, i in enumerate(fits):
                rest = fits[pos + 1 :]
                cw, cu = w + weights[i], used + u[i]
                b = bound(cw, cu, rest)
                if b > best:
                    children.append((b, ((*chosen, i), cw, cu, hh + hh_of[i], rest)))
            stack.extend(reversed(children))
        del best_set
        return Priced(self._verified(found, above), best)

    def _verified(
        self, found: list[tuple[int, tuple[int, ...]]], above: int
    ) -> list[frozenset[int]]:
        """The heaviest sets found above ``above`` (each passed OPA when it was made)."""
        found.sort(key=lambda f: -f[0])
        return [frozenset(s) for w, s in found[:COLUMNS_PER_PRICING] if w > above]

    def _enumerate(self, tasks: list[int], weights: dict[int, int], above: int) -> Priced | None:
        """EDF-VD pricing by enumeration: for each HI set ``B`` (HL, HH), the LO tasks may
        add up to ``L <= (1 - HH) / (1 - HH + HL)`` (the test solved for ``L``), so the best
        set with ``B`` is ``B`` plus the heaviest LO frontier set within that; the largest
        total over every ``B`` is the pricing optimum (with the float margin: an upper bound
        on it), or at most ``above`` when the upper bound returned is ``above`` (sets that
        cannot exceed it are pruned, :func:`_hi_sets`). None when the HI sets exceed
        :data:`ENUMERATION_LIMIT`."""
        lo = [i for i in tasks if not self.instance.tasks[i].hi]
        hi = [i for i in tasks if self.instance.tasks[i].hi]
        util, lo_w, lo_mask = _lo_frontier(
            np.array([self.u_lo[i] for i in lo]), np.array([float(weights[i]) for i in lo])
        )
        sets = _hi_sets(
            np.array([self.u_lo[i] for i in hi]),
            np.array([self.u_hi[i] for i in hi]),
            np.array([float(weights[i]) for i in hi]),
            util,
            lo_w,
            above,
            ENUMERATION_LIMIT,
        )
        if sets is None:
            return None
        hl, hh, hi_w, hi_mask = sets
        pick = np.searchsorted(util, _lo_cap(hl, hh), side="right") - 1
        total = hi_w + lo_w[pick]
        # Weights are integers below 2^53: their float sums are exact.
        upper = max(above, int(total.max())) if len(total) else above
        columns: list[frozenset[int]] = []
        if upper > above:
            count = min(len(total), 4 * COLUMNS_PER_PRICING)
            top = np.argpartition(-total, count - 1)[:count]
            for r in top[np.argsort(-total[top])]:
                if total[r] <= above or len(columns) >= COLUMNS_PER_PRICING:
                    break
                column = frozenset(_bits(int(hi_mask[r]), hi) + _bits(int(lo_mask[pick[r]]), lo))
                if column not in columns and self.passes(column):
                    columns.append(column)
        return Priced(columns, upper)

    def _cpsat(
        self,
        tasks: list[int],
        weights: dict[int, int],
        above: int,
        deadline: float,
        options: SolveOptions,
        cancel: CancellationToken,
        together: list[tuple[int, int]] = (),  # type: ignore[assignment]
        apart: list[tuple[int, int]] = (),  # type: ignore[assignment]
    ) -> Priced:
        """Pricing by CP-SAT over the core's rows and the no-good cuts (AMC-rtb, or an
        EDF-VD enumeration too large), over the sets that hold both or neither task of each
        ``together`` pair and not both of an ``apart`` pair (branch and price's rules; their
        tasks must be among ``tasks``, whose weights may be 0)."""
        # ortools loads in 0.85 s: only when a pricing model is built
        from ortools.sat.python import cp_model

        upper: int | None = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or cancel.cancelled:
                return Priced([], upper)
            cpm = cp_model.CpModel()
            x = {i: cpm.new_bool_var(f"x{i}") for i in tasks}
            inst = self.instance
            lo = [(x[i], self.lo[i]) for i in tasks if not inst.tasks[i].hi]
            hi = [(x[i], self.hl[i], self.hh[i], self.d[i]) for i in tasks if inst.tasks[i].hi]
            add_core_rows(cpm, self.scale, lo, hi, inst.test == AMC_RTB)
            for cut in self.nogoods:
                if cut <= x.keys():
                    cpm.add(sum(x[i] for i in cut) <= len(cut) - 1)
            for i, j in together:
                cpm.add(x[i] == x[j])
            for i, j in apart:
                cpm.add(x[i] + x[j] <= 1)
            value = sum(weights.get(i, 0) * x[i] for i in tasks)
            cpm.add(value >= above + 1)
            cpm.maximize(value)
            limit = PRICING_TIME_S if options.deterministic else min(left, PRICING_TIME_S)
            run = CpSat.run(cpm, options, cancel, limit)
            if run.status == RunStatus.INFEASIBLE:
                # No relaxed set, so no passing set, weighs more than ``above``.
                return Priced([], above if upper is None else min(upper, above))
            if run.bound is not None and math.isfinite(run.bound):
                # CP-SAT's bound on an integer objective; rounding to the nearest integer
                # keeps it an upper bound (its float error is far below 1/2).
                proved = max(above, math.floor(run.bound + 0.5))
                upper = proved if upper is None else min(upper, proved)
            if not run.has_solution:
                return Priced([], upper)
            solver = run.solver  # type: ignore[attr-defined]
            chosen = [i for i in tasks if solver.boolean_value(x[i])]
            if self.passes(chosen):
                return Priced([frozenset(chosen)], upper)
            # The rounded rows let through a set that fails by less than the rounding (or,
            # under AMC-rtb, one the utilisation rows cannot see): cut it off and solve again.
            if inst.test == AMC_RTB:
                chosen = minimal_failing(inst, chosen, self.ctype.speed)
            self.nogoods.append(frozenset(chosen))


def _size(instance: McInstance, task: int) -> float:
    t = instance.tasks[task]
    return float(t.u_own)


def greedy_columns(
    instance: McInstance,
    ctype: CoreType,
    pi: np.ndarray,
    threshold: float,
    fits: Callable[[list[int]], bool],
) -> list[frozenset[int]]:
    """Passing task sets of ``ctype`` whose dual value exceeds ``threshold``: first fit in a
    few orders (by dual value per utilisation, by dual value), each set filled up with the
    tasks of zero dual value that still fit (fuller columns serve the integer master)."""
    tasks = [i for i in ctype.tasks if pi[i] > 0]
    rest = [i for i in ctype.tasks if pi[i] <= 0]
    rest.sort(key=lambda i: -_size(instance, i))
    orders = [
        sorted(tasks, key=lambda i: -pi[i] / max(_size(instance, i), 1e-12)),
        sorted(tasks, key=lambda i: -pi[i]),
    ]
    # Starting from each of the few most valuable tasks diversifies the columns.
    for first in orders[0][:3]:
        orders.append([first] + [i for i in orders[0] if i != first])
    found: list[frozenset[int]] = []
    for order in orders:
        chosen: list[int] = []
        for i in order:
            if fits([*chosen, i]):
                chosen.append(i)
        if sum(pi[i] for i in chosen) <= threshold + IMPROVEMENT_TOLERANCE:
            continue
        for i in rest:
            if fits([*chosen, i]):
                chosen.append(i)
        column = frozenset(chosen)
        if column not in found:
            found.append(column)
    return found


def first_fit_columns(instance: McInstance, ctype: CoreType) -> list[frozenset[int]]:
    """The cores first-fit decreasing opens when it may open as many as it needs: an initial
    cover of the type's tasks."""
    bins: list[list[int]] = []
    for i in sorted(ctype.tasks, key=lambda i: -_size(instance, i)):
        for b in bins:
            if passes(instance, [*b, i], ctype.speed):
                b.append(i)
                break
        else:
            bins.append([i])
    return [frozenset(b) for b in bins]


class Master:
    """The restricted master LP in HiGHS (see the module docstring), grown by columns."""

    def __init__(self, instance: McInstance, types: list[CoreType], mode: str) -> None:
        self.instance = instance
        self.types = types
        self.mode = mode
        n = len(instance.tasks)
        self.n = n
        self.lp = HighsModel()
        self.lp.add_rows(np.ones(n), np.full(n, math.inf))
        self.columns: list[tuple[int, frozenset[int]]] = []
        self._index: set[tuple[int, frozenset[int]]] = set()
        if mode == CAPACITY:
            self.lp.add_rows(
                np.full(len(types), -math.inf), np.array([float(len(t.cores)) for t in types])
            )
            self.cost_scale = 1 + sum(t.drop_cost for t in instance.tasks if t.droppable)
            for i, t in enumerate(instance.tasks):
                self.lp.add_column(1.0, 0.0, math.inf, np.array([i]), np.array([1.0]))
                if t.droppable:
                    self.lp.add_column(
                        t.drop_cost / self.cost_scale, 0.0, 1.0, np.array([i]), np.array([1.0])
                    )

    def add(self, t: int, tasks: frozenset[int]) -> bool:
        """Add the column of type ``t`` (False when it is there already)."""
        key = (t, tasks)
        if key in self._index or not tasks:
            return False
        self._index.add(key)
        self.columns.append(key)
        rows = sorted(tasks)
        cost = 1.0
        if self.mode == CAPACITY:
            rows.append(self.n + t)
            cost = 0.0
        self.lp.add_column(cost, 0.0, math.inf, np.array(rows), np.ones(len(rows)))
        return True

    def solve(self, time_limit_s: float) -> tuple[float, np.ndarray, list[float]] | None:
        """(LP value, cover duals ``pi >= 0``, each type's threshold), or None when the LP
        was not solved in time. A column of type ``t`` improves iff ``pi(S)`` exceeds the
        threshold: 1 in cores mode, ``mu_t`` (the capacity row's price) in capacity mode."""
        run = self.lp.run(max(0.01, time_limit_s))
        if run.status != RunStatus.OPTIMAL or run.objective is None or run.row_dual is None:
            return None
        duals = run.row_dual
        pi = np.maximum(0.0, duals[: self.n])
        if self.mode == CORES:
            thresholds = [1.0] * len(self.types)
        else:
            thresholds = [max(0.0, -float(v)) for v in duals[self.n : self.n + len(self.types)]]
        return float(run.objective), pi, thresholds


@dataclass
class Configurations:
    """What a column generation run found."""

    mode: str
    types: list[CoreType]
    columns: list[tuple[int, frozenset[int]]] = field(default_factory=list)
    """Every column of the master (type, tasks): each passes the exact test."""
    proven_infeasible: bool = False
    cores_bound: int | None = None
    """Cores mode: a proven lower bound on the cores any schedule uses (Farkas)."""
    drop_bound: int | None = None
    """Capacity mode: a proven lower bound on the dropped cost of any schedule."""
    lp_value: float | None = None
    lagrangian: Fraction | None = None
    """The best bound as computed (cores mode: cores; capacity mode: ``L(pi)``)."""
    converged: bool = False
    """The last exact pricing found no improving column: the LP is solved."""
    unprovable: bool = False
    """The master's value shows that the LP cannot prove the set unschedulable."""
    iterations: int = 0
    pricing_solves: int = 0
    seconds: float = 0.0
    history: list[tuple[float, float, float | None]] = field(default_factory=list)
    """(seconds, LP value, bound of that iteration or None) per iteration."""

    def describe(self, instance: McInstance) -> str:
        """One sentence: the proof (or the bound), as a certificate."""
        m = len(instance.cores)
        if self.mode == CORES and self.lagrangian is not None:
            return (
                f"the configuration LP (column generation over per-core task sets, "
                f"{len(self.columns)} columns) needs at least {float(self.lagrangian):.4f} "
                f"cores, more than the {m} there are"
                if self.proven_infeasible
                else f"the configuration LP needs at least {float(self.lagrangian):.4f} cores"
            )
        if self.lagrangian is not None:
            return (
                f"the configuration LP's Lagrangian bound ({len(self.columns)} columns) "
                f"exceeds every schedule's dropped cost"
                if self.proven_infeasible
                else f"the configuration LP bounds the dropped cost by {self.drop_bound}"
            )
        return "a task fails the test alone on every core it may use"


def configuration_bound(
    instance: McInstance,
    deadline: float,
    cancel: CancellationToken,
    options: SolveOptions,
    *,
    until_converged: bool = False,
    iterations: int | None = None,
) -> Configurations:
    """Column generation on the configuration LP until it proves the set unschedulable, the
    LP is solved, the master shows that no proof will come (unless ``until_converged`` or
    some task is droppable: the cores or dropped-cost bound keeps improving until the LP is
    solved), or ``deadline`` (``time.monotonic()``), or after ``iterations`` master solves
    (deterministic mode: the work budget ends the run, the deadline is only a guard)."""
    started = time.monotonic()
    types = core_types(instance)
    covered = {i for t in types for i in t.tasks}
    mode = CORES if len(types) == 1 and not instance.any_droppable else CAPACITY
    out = Configurations(mode, types)
    if any(i not in covered and not t.droppable for i, t in enumerate(instance.tasks)):
        out.proven_infeasible = True
        return out
    one = SolveOptions(threads=1, seed=options.seed, deterministic=options.deterministic)
    pricers = [Pricer(instance, t) for t in types]
    master = Master(instance, types, mode)
    for k, t in enumerate(types):
        for column in first_fit_columns(instance, t):
            master.add(k, column)
    # The heuristics' cores too: the integer master then has every schedule they find.
    type_of = {core: k for k, t in enumerate(types) for core in t.cores}
    for _, solution in greedy_solutions(instance):
        for core, k in type_of.items():
            master.add(k, frozenset(i for i, c in enumerate(solution.core_of) if c == core))
    m = len(instance.cores)
    drop_total = sum(t.drop_cost for t in instance.tasks if t.droppable)
    since_exact = 0
    center: np.ndarray | None = None
    best_bound: Fraction | None = None
    while time.monotonic() < deadline and not cancel.cancelled:
        if iterations is not None and out.iterations >= iterations:
            break
        solved = master.solve(deadline - time.monotonic())
        if solved is None:
            break
        out.iterations += 1
        value, pi, thresholds = solved
        out.lp_value = value
        # The restricted master's value bounds the LP's from above: once it is within the
        # cores (cores mode) or without artificial use (capacity mode), no proof will come.
        if mode == CORES:
            out.unprovable = value <= m + 1e-7
        else:
            out.unprovable = value <= drop_total / master.cost_scale + 1e-7
        if out.unprovable and not until_converged and not instance.any_droppable:
            break  # (with droppable tasks the run is for the bound on the dropped cost)
        added = 0
        for k, t in enumerate(types):
            fits = functools.partial(pricers[k].passes, prefix_passes=True)
            for column in greedy_columns(instance, t, pi, thresholds[k], fits):
                added += master.add(k, column)
        since_exact += 1
        if added and since_exact < EXACT_PRICING_EVERY:
            out.history.append((time.monotonic() - started, value, None))
            continue
        since_exact = 0
        # Exact pricing at the smoothed multipliers first (Wentges): a convex combination of
        # the best multipliers so far and the master's duals; when none of its columns
        # improves the master (a mis-price), at the duals themselves. Each gives a bound.
        attempts = [pi] if center is None else [SMOOTHING * center + (1 - SMOOTHING) * pi, pi]
        settled = False
        for multipliers in attempts:
            weights = {
                i: int(math.floor(p * PRICE_SCALE)) for i, p in enumerate(multipliers) if p > 0
            }
            uppers: list[int | None] = []
            settled = multipliers is pi
            for k in range(len(types)):
                above = math.floor(thresholds[k] * PRICE_SCALE)
                priced = pricers[k].price(weights, above, deadline, one, cancel)
                uppers.append(priced.upper)
                settled = settled and priced.upper is not None and priced.upper <= above
                for column in priced.columns:
                    if sum(pi[i] for i in column) > thresholds[k] + IMPROVEMENT_TOLERANCE:
                        added += master.add(k, column)
            bound = _bound(instance, types, mode, weights, uppers, master)
            out.history.append(
                (time.monotonic() - started, value, None if bound is None else float(bound))
            )
            if bound is not None and (best_bound is None or bound > best_bound):
                best_bound, center = bound, np.array(multipliers, dtype=float)
                _record(out, instance, mode, bound, master)
            if out.proven_infeasible or added:
                break
        out.pricing_solves = sum(p.solves for p in pricers)
        if out.proven_infeasible:
            break
        if settled:
            out.converged = True
            break
        if not added:
            break  # the pricing found no column it could verify: no progress is possible
    out.columns = list(master.columns)
    out.seconds = time.monotonic() - started
    return out


def _bound(
    instance: McInstance,
    types: list[CoreType],
    mode: str,
    weights: dict[int, int],
    uppers: list[int | None],
    master: Master,
) -> Fraction | None:
    """The bound for the multipliers ``weights / PRICE_SCALE`` given upper bounds on every
    type's pricing optimum (cores mode: cores; capacity mode: ``L(pi)``), or None."""
    if any(u is None for u in uppers):
        return None
    total = sum(weights.values())
    if mode == CORES:
        z = uppers[0]
        assert z is not None
        if z <= 0:
            return None
        return Fraction(total, z)
    K = PRICE_SCALE
    value = Fraction(total, K)
    for i, t in enumerate(instance.tasks):
        if t.droppable:
            value += min(
                Fraction(0),
                Fraction(t.drop_cost, master.cost_scale) - Fraction(weights.get(i, 0), K),
            )
    for t, z in zip(types, uppers, strict=True):
        value -= len(t.cores) * Fraction(z, K)  # type: ignore[arg-type]
    return value


def _record(
    out: Configurations, instance: McInstance, mode: str, bound: Fraction, master: Master
) -> None:
    """Keep the best bound of the run and what it proves."""
    if mode == CORES:
        if out.lagrangian is None or bound > out.lagrangian:
            out.lagrangian = bound
            out.cores_bound = math.ceil(bound)
            out.proven_infeasible = bound > len(instance.cores)
        return
    if out.lagrangian is None or bound > out.lagrangian:
        out.lagrangian = bound
        dropped = bound * master.cost_scale
        out.drop_bound = max(0, math.ceil(dropped))
        total = sum(t.drop_cost for t in instance.tasks if t.droppable)
        out.proven_infeasible = dropped > total


def integer_master(
    instance: McInstance,
    conf: Configurations,
    deadline: float,
    cancel: CancellationToken,
    options: SolveOptions,
) -> tuple[int, ...] | None:
    """A schedule from the generated columns (see the module docstring), or None when the
    covering model over them has none (or none was found in time)."""
    # ortools loads in 0.85 s: only when the model is built
    from ortools.sat.python import cp_model

    if not conf.columns:
        return None
    cpm = cp_model.CpModel()
    y = [cpm.new_bool_var(f"y{c}") for c in range(len(conf.columns))]
    drop = {i: cpm.new_bool_var(f"drop{i}") for i, t in enumerate(instance.tasks) if t.droppable}
    cover: list[list[Any]] = [[] for _ in instance.tasks]
    per_type: list[list[Any]] = [[] for _ in conf.types]
    for var, (t, tasks) in zip(y, conf.columns, strict=True):
        per_type[t].append(var)
        for i in tasks:
            cover[i].append(var)
    for i, vars_ in enumerate(cover):
        cpm.add(sum(vars_) + drop.get(i, 0) >= 1)
    for t, vars_ in zip(conf.types, per_type, strict=True):
        cpm.add(sum(vars_) <= len(t.cores))
    if drop:
        cpm.minimize(sum(instance.tasks[i].drop_cost * v for i, v in drop.items()))
    one = SolveOptions(threads=1, seed=options.seed, deterministic=options.deterministic)
    run = CpSat.run(cpm, one, cancel, deadline - time.monotonic())
    if not run.has_solution:
        return None
    solver = run.solver  # type: ignore[attr-defined]
    core_of = [-1] * len(instance.tasks)
    free = [list(t.cores) for t in conf.types]
    for var, (t, tasks) in zip(y, conf.columns, strict=True):
        if not solver.boolean_value(var):
            continue
        k = free[t].pop(0)
        for i in sorted(tasks):
            if core_of[i] == -1:
                core_of[i] = k
    return tuple(core_of)
