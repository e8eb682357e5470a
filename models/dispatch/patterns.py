"""The exact cost-time front of a parameter sweep (``budget`` mode): the configuration LP by
column generation, its integer master, and a bisection on the deadline for the makespan.

The cores of a sweep fall into classes: cores of servers with the same speed, price and
overhead give every kind the same service time ``p_qk`` and cost ``c_qk``. A *pattern* of
class q is what one core runs: counts ``P_k`` with ``sum_k p_qk P_k <= D`` (the deadline, or a
trial makespan). The configuration model chooses how many cores of each class run each
pattern:

    min  sum_{q,P} c(P) x_qP                      (c(P) = sum_k c_qk P_k)
    s.t. sum_P x_qP <= C_q                        (cores of class q)
         sum_{q,P} P_k x_qP >= N_k                (every job of kind k; a surplus is dropped)
         sum_{q,P} c(P) x_qP <= B                 (the budget, when set)
         x integer >= 0

An integer solution is a schedule (each core runs its pattern back to back from 0; surplus
jobs are left out, which lowers load and cost), and every schedule is one: its cores' counts
are patterns. So the LP relaxation's value, rounded up, is a lower bound on the cheapest
schedule of the instance, and an LP with no feasible point proves that no schedule meets the
deadline within the budget. The LP is solved by column generation (Gilmore and Gomory): the
pricing problem of class q is a bounded knapsack over the kinds, ``max sum_k (y_k - (phi -
y_B) c_qk) P_k`` within capacity D, solved by dynamic programming over the capacity (numpy,
kinds split in powers of two). Phase 1 (pattern costs 0, one artificial column of cost 1 per
kind) finds a feasible LP point or proves there is none; phase 2 minimises the cost. The
integer master is then solved by HiGHS over the generated columns plus the incumbent's
patterns (price-and-branch): its schedule is checked, and its gap to the LP bound is proven.

The makespan (``time``, and the second tier of ``cost_time``) is found by bisection on the
capacity T: T is infeasible when the LP at capacity T costs more than the budget (or has no
feasible point), feasible when the integer master finds a schedule within the budget; the
proven gap is between the smallest feasible makespan found and the largest infeasible T + 1.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from placement.models.dispatch.bound import sweep_bound
from placement.models.dispatch.check import check
from placement.models.dispatch.instance import BUDGET, DispatchInstance, DispatchSolution
from placement.models.dispatch.sweep import MAX_COUNTS, kinds_of, size_of, solve_sweep
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear_backends import MilpLinear
from placement.solver.result import StopReason

MAX_CAPACITY = 2_000_000
"""Largest deadline (or trial makespan) the knapsack DP runs over."""
EPS = 1e-7
TRIAL_IP_SECONDS = 3.0
"""Time for the integer master of one bisection trial (the rounded LP comes first)."""


@dataclass
class Sweep:
    """A sweep's core classes and kinds: what every pattern model reads."""

    kinds: list[list[int]]
    demand: list[int]
    slots: list[list[tuple[int, int]]]
    """Per class, its (server, core) slots."""
    service: np.ndarray
    """``service[q, k]``: a kind's service time on a class."""
    cost: np.ndarray
    """``cost[q, k]``: a kind's cost on a class."""


def sweep_of(instance: DispatchInstance) -> Sweep:
    """The core classes (servers of equal speed, price and overhead pooled) and kinds."""
    kinds = kinds_of(instance)
    by: dict[tuple[float, float, int], list[tuple[int, int]]] = {}
    for s, server in enumerate(instance.servers):
        key = (server.speed, server.price, server.dispatch_overhead)
        by.setdefault(key, []).extend((s, c) for c in range(server.cores))
    slots = list(by.values())
    service = np.array(
        [[instance.service[js[0]][cl[0][0]] for js in kinds] for cl in slots], dtype=np.int64
    )
    cost = np.array(
        [[instance.cost(js[0], cl[0][0]) for js in kinds] for cl in slots], dtype=np.int64
    )
    return Sweep(kinds, [len(js) for js in kinds], slots, service, cost)


def best_pattern(
    weights: np.ndarray, values: np.ndarray, bounds: np.ndarray, capacity: int
) -> tuple[float, tuple[int, ...]]:
    """The bounded knapsack ``max values . P`` with ``weights . P <= capacity``, ``0 <= P <=
    bounds``: its value and a best ``P`` (items of value <= 0 are never taken)."""
    parts: list[tuple[int, int]] = []  # (kind, multiplicity) after binary splitting
    for k, (w, v, b) in enumerate(zip(weights, values, bounds, strict=True)):
        if v <= EPS or w > capacity or b <= 0:
            continue
        left, m = int(min(b, capacity // w)), 1
        while left > 0:
            take = min(m, left)
            parts.append((k, take))
            left -= take
            m *= 2
    best = np.zeros(capacity + 1)
    taken = []
    for k, m in parts:
        w = int(weights[k]) * m
        shifted = np.full(capacity + 1, -np.inf)
        shifted[w:] = best[: capacity + 1 - w] + float(values[k]) * m
        better = shifted > best + 1e-12
        taken.append(better)
        best = np.where(better, shifted, best)
    cap = int(np.argmax(best))
    value = float(best[cap])
    counts = [0] * len(weights)
    for (k, m), better in zip(reversed(parts), reversed(taken), strict=True):
        if better[cap]:
            counts[k] += m
            cap -= int(weights[k]) * m
    return value, tuple(counts)


@dataclass
class Master:
    """The configuration LP (or its integer version) over the columns generated so far."""

    sweep: Sweep
    capacity: int
    budget: int
    phase1: bool
    columns: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)
    """Per column after the artificials: (class, pattern)."""

    def __post_init__(self) -> None:
        sw = self.sweep
        q, k = len(sw.slots), len(sw.kinds)
        self.lp = HighsModel()
        lower = [-math.inf] * q + [float(n) for n in sw.demand]
        upper = [float(len(cl)) for cl in sw.slots] + [math.inf] * k
        if self.budget:
            lower.append(-math.inf)
            upper.append(float(self.budget))
        self.lp.add_rows(np.array(lower), np.array(upper))
        self.artificials = k if self.phase1 else 0
        for kind in range(self.artificials):
            self.lp.add_column(1.0, 0.0, math.inf, np.array([q + kind]), np.array([1.0]))
        self.known: set[tuple[int, tuple[int, ...]]] = set()

    def add(self, cls: int, pattern: tuple[int, ...]) -> bool:
        """Add a pattern column (False when it is already there)."""
        if (cls, pattern) in self.known or not any(pattern):
            return False
        sw = self.sweep
        q = len(sw.slots)
        cost = float(np.dot(sw.cost[cls], pattern))
        rows, vals = [cls], [1.0]
        for kind, n in enumerate(pattern):
            if n:
                rows.append(q + kind)
                vals.append(float(n))
        if self.budget:
            rows.append(q + len(sw.kinds))
            vals.append(cost)
        self.lp.add_column(
            0.0 if self.phase1 else cost, 0.0, math.inf, np.array(rows), np.array(vals)
        )
        self.columns.append((cls, pattern))
        self.known.add((cls, pattern))
        return True

    def fits(self, cls: int, pattern: tuple[int, ...]) -> bool:
        return int(np.dot(self.sweep.service[cls], pattern)) <= self.capacity

    def price(self, duals: np.ndarray) -> int:
        """Add every class's most negative reduced-cost pattern; how many were added."""
        sw = self.sweep
        q, k = len(sw.slots), len(sw.kinds)
        y_kind = duals[q : q + k]
        y_budget = duals[q + k] if self.budget else 0.0
        phi = 0.0 if self.phase1 else 1.0
        added = 0
        for cls in range(q):
            values = y_kind - (phi - y_budget) * sw.cost[cls]
            value, pattern = best_pattern(
                sw.service[cls], values, np.array(sw.demand), self.capacity
            )
            # Reduced cost: (phi - y_B) c(P) - y_q - y_kind . P = -value - y_q.
            if -value - duals[cls] < -1e-6 and self.add(cls, pattern):
                added += 1
        return added

    def solve_lp(self, deadline: float) -> tuple[float, np.ndarray] | None:
        """Column generation to convergence (or to the deadline: None)."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            run = self.lp.run(max(0.01, left))
            if run.status == RunStatus.INFEASIBLE:
                return math.inf, np.zeros(0)
            if run.status != RunStatus.OPTIMAL or run.row_dual is None or run.x is None:
                return None
            if not self.price(run.row_dual):
                return float(run.objective or 0.0), run.x

    def solve_ip(self, seconds: float) -> np.ndarray | None:
        """The integer master over the columns there are: the best x found, or None."""
        n = self.artificials + len(self.columns)
        self.lp.set_integer(np.arange(self.artificials, n))
        run = self.lp.run(max(0.01, seconds))
        return run.x if run.has_solution and run.x is not None else None


def patterns_of(
    instance: DispatchInstance, sweep: Sweep, solution: DispatchSolution
) -> list[tuple[int, tuple[int, ...]]]:
    """The (class, pattern) of every core of a schedule (jobs laid on the cores free first)."""
    cls_of = {slot: q for q, cl in enumerate(sweep.slots) for slot in cl}
    kind_of = {j: k for k, js in enumerate(sweep.kinds) for j in js}
    free: dict[int, list[int]] = {}
    counts: dict[tuple[int, int], list[int]] = {}
    for j in sorted(range(len(instance.jobs)), key=lambda j: solution.start[j]):
        s = solution.server_of[j]
        f = free.setdefault(s, [0] * instance.servers[s].cores)
        c = min(range(len(f)), key=lambda c: (f[c] > solution.start[j], c))
        f[c] = solution.start[j] + instance.service[j][s]
        counts.setdefault((s, c), [0] * len(sweep.kinds))[kind_of[j]] += 1
    return [(cls_of[slot], tuple(p)) for slot, p in counts.items()]


def _lay(
    instance: DispatchInstance, sweep: Sweep, master: Master, x: np.ndarray
) -> tuple[list[int], list[int], dict[tuple[int, int], int]]:
    """Each chosen pattern (``round(x)`` of its column) on a free core of its class, run
    back to back from 0; jobs beyond a kind's count left out (server -1). Returns the
    servers, the starts and every core's load."""
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    queues = [list(js) for js in sweep.kinds]
    load = {slot: 0 for cl in sweep.slots for slot in cl}
    next_slot = [0] * len(sweep.slots)
    for col, (cls, pattern) in enumerate(master.columns):
        for _ in range(round(x[master.artificials + col])):
            if next_slot[cls] >= len(sweep.slots[cls]):
                break  # more cores than the class has: the checker rejects what is left
            slot = sweep.slots[cls][next_slot[cls]]
            next_slot[cls] += 1
            for kind, n in enumerate(pattern):
                for _ in range(min(n, len(queues[kind]))):
                    j = queues[kind].pop()
                    server_of[j], start[j] = slot[0], load[slot]
                    load[slot] += instance.service[j][slot[0]]
    return server_of, start, load


def schedule_of(
    instance: DispatchInstance, sweep: Sweep, master: Master, x: np.ndarray
) -> DispatchSolution:
    """The schedule of an integer master solution (see :func:`_lay`)."""
    server_of, start, _ = _lay(instance, sweep, master, x)
    return DispatchSolution(tuple(server_of), tuple(start))


def rounded(
    instance: DispatchInstance, sweep: Sweep, master: Master, x: np.ndarray, capacity: int
) -> DispatchSolution:
    """An LP solution rounded down, then every job left over placed, longest first, on the
    core where it costs least among those it still fits by ``capacity`` (ties: the earliest
    end); with none, where it ends soonest (the check then refuses the schedule)."""
    server_of, start, load = _lay(instance, sweep, master, np.floor(np.asarray(x) + 1e-9))
    left = sorted(
        (j for j in range(len(instance.jobs)) if server_of[j] < 0),
        key=lambda j: -instance.jobs[j].size,
    )
    for j in left:
        options = [
            (instance.cost(j, slot[0]), t + instance.service[j][slot[0]], slot)
            for slot, t in load.items()
        ]
        fitting = [o for o in options if o[1] <= capacity]
        _, end, slot = min(fitting) if fitting else min(options, key=lambda o: (o[1], o[0]))
        server_of[j], start[j] = slot[0], load[slot]
        load[slot] = end
    return DispatchSolution(tuple(server_of), tuple(start))


@dataclass
class CapacityResult:
    """What one capacity (a deadline or a trial makespan) gives."""

    lp_bound: float
    """The LP's cost, rounded up (math.inf: no schedule fits the capacity and budget)."""
    solution: DispatchSolution | None = None
    cost: int | None = None


def cheapest_within(
    instance: DispatchInstance,
    sweep: Sweep,
    capacity: int,
    budget: int,
    incumbents: list[DispatchSolution],
    deadline: float,
    pool: set[tuple[int, tuple[int, ...]]] | None = None,
    ip_seconds: float = math.inf,
) -> CapacityResult | None:
    """The cheapest schedule whose cores all end by ``capacity`` within ``budget`` (0:
    none): the LP bound and the integer master's schedule (None: out of time)."""
    seeds = list(pool) if pool is not None else []
    for solution in incumbents:
        seeds.extend(patterns_of(instance, sweep, solution))
    one = Master(sweep, capacity, budget, phase1=True)
    for cls, pattern in seeds:
        if one.fits(cls, pattern):
            one.add(cls, pattern)
    first = one.solve_lp(deadline)
    if first is None:
        return None
    if first[0] > 1e-6:
        return CapacityResult(math.inf)
    two = Master(sweep, capacity, budget, phase1=False)
    for cls, pattern in one.columns:
        two.add(cls, pattern)
    second = two.solve_lp(deadline)
    if second is None:
        return None
    # The LP's value is a float: round up only past a relative allowance for its tolerances.
    bound = float(math.ceil(second[0] - 1e-6 * max(1.0, abs(second[0]))))
    if pool is not None:
        pool.update(two.columns)  # a later, larger capacity fits them all
    trial = _at(instance, capacity, budget)
    candidates = [rounded(instance, sweep, two, second[1], capacity)]
    x = two.solve_ip(min(ip_seconds, deadline - time.monotonic()))
    if x is not None:
        candidates.append(schedule_of(instance, sweep, two, x))
    result = CapacityResult(bound)
    for solution in candidates:
        if check(trial, solution).feasible:
            cost = sum(instance.cost(j, s) for j, s in enumerate(solution.server_of))
            if result.cost is None or cost < result.cost:
                result = CapacityResult(bound, solution, cost)
    return result


def _at(instance: DispatchInstance, deadline: int, budget: int) -> DispatchInstance:
    """The instance with this deadline and budget (the checker's view of a trial)."""
    return DispatchInstance(
        instance.servers,
        instance.jobs,
        BUDGET,
        deadline=deadline,
        budget=budget,
        budget_objective="cost",
    )


def makespan_of(instance: DispatchInstance, solution: DispatchSolution) -> int:
    return max(
        (solution.start[j] + instance.service[j][s] for j, s in enumerate(solution.server_of)),
        default=0,
    )


def fastest_within(
    instance: DispatchInstance,
    sweep: Sweep,
    budget: int,
    lo: int,
    hi: int,
    incumbents: list[DispatchSolution],
    deadline: float,
    on_found: Callable[[DispatchSolution], object] | None = None,
) -> tuple[float, DispatchSolution | None]:
    """Bisection on the makespan within ``budget``: (the largest makespan proven
    impossible + 1, the fastest schedule found, None if none) with ``lo`` a proven lower
    bound and ``hi`` an upper end (a found schedule's makespan, or the horizon); ``(inf,
    None)`` when no schedule fits the horizon within the budget."""
    best = None
    for solution in incumbents:
        if check(_at(instance, 0, budget), solution).feasible:
            m = makespan_of(instance, solution)
            if best is None or m < makespan_of(instance, best):
                best, hi = solution, min(hi, m)
    probe = lo  # the search's lower end: above lo where a trial was neither proved nor met
    pool: set[tuple[int, tuple[int, ...]]] = set()
    while probe < hi and time.monotonic() < deadline:
        # At most a quarter above the lower end: the optimum is usually near the bound, and a
        # trial's pricing DP grows with its capacity.
        mid = min((probe + hi) // 2, probe + max(1, probe // 4))
        found = cheapest_within(
            instance,
            sweep,
            mid,
            budget,
            [best] if best is not None else [],
            deadline,
            pool,
            TRIAL_IP_SECONDS,
        )
        if found is None:
            break
        if found.lp_bound == math.inf or (budget and found.lp_bound > budget):
            lo = probe = mid + 1
        elif found.solution is not None:
            best = found.solution
            hi = makespan_of(instance, best)
            if on_found is not None:
                on_found(best)
        else:
            probe = mid + 1  # not proved impossible, not met: look higher, keep lo
    if best is None and lo >= hi:
        # hi is the horizon (the deadline, or every job on one slowest core): try it once
        found = cheapest_within(instance, sweep, hi, budget, [], deadline)
        if found is not None and found.solution is not None:
            best = found.solution
        elif found is not None and (
            found.lp_bound == math.inf or (budget and found.lp_bound > budget)
        ):
            return math.inf, None  # no schedule at all
    return lo, best


class PatternEncoding:
    """``budget`` mode's exact front: the configuration LP by column generation and its
    integer master (HiGHS), ``--backend auto``'s choice there."""

    source = "colgen"

    def solve(self, instance: DispatchInstance, ctx: ExactContext) -> ExactOutcome:
        """Minimise the instance's tiers (module docstring); report what is found."""
        if instance.mode != BUDGET:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED, message="colgen: only for budget mode sweeps"
            )
        deadline = time.monotonic() + ctx.time_left()
        sweep = sweep_of(instance)
        incumbent = ctx.incumbent()
        seeds = [incumbent] if incumbent is not None else []
        horizon = instance.deadline or int(
            sum(n * int(sweep.service[:, k].max()) for k, n in enumerate(sweep.demand))
        )
        if horizon > MAX_CAPACITY:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED,
                message=f"colgen: the capacity {horizon} is over {MAX_CAPACITY}",
            )
        objective = instance.budget_objective
        tier_bounds: dict[str, float] = {}
        if objective in ("cost", "cost_time"):
            found = cheapest_within(instance, sweep, horizon, instance.budget, seeds, deadline)
            if found is None:
                return ExactOutcome(StopReason.TIME_LIMIT, message="colgen: out of time")
            if found.lp_bound == math.inf or (instance.budget and found.lp_bound > instance.budget):
                return ExactOutcome(
                    StopReason.PROVEN,
                    proven_infeasible=True,
                    message=_impossible(instance, found.lp_bound),
                )
            tier_bounds["cost"] = found.lp_bound
            if found.solution is not None:
                ctx.report(found.solution, self.source)
            if found.cost is None or found.cost > found.lp_bound:
                return self._close(instance, ctx, found, tier_bounds, len(sweep.slots))
            if objective == "cost":
                return ExactOutcome(
                    StopReason.PROVEN,
                    bound=found.lp_bound,
                    proven_optimal=True,
                    proven_solution=found.solution,
                    tier_bounds=tier_bounds,
                    message="colgen: the integer master meets the LP bound",
                )
            budget, seeds = found.cost, [found.solution]
        else:
            budget = instance.budget
        lo = int(sweep_bound(instance)) if objective == "time" else 0
        lo = max(lo, int(sweep.service.min(axis=0).max()) if sweep.demand else 0)
        lo, best = fastest_within(
            instance,
            sweep,
            budget,
            lo,
            horizon,
            seeds,
            deadline,
            lambda s: ctx.report(s, self.source, None),
        )
        if lo == math.inf:
            return ExactOutcome(
                StopReason.PROVEN,
                proven_infeasible=True,
                message=f"colgen: no schedule within the budget {budget or 'none'} ends by "
                f"{horizon} (the configuration LP has no point within the budget)",
            )
        if best is not None:
            ctx.report(best, self.source)
        tier_bounds["makespan"] = float(lo)
        primary = tier_bounds[next(iter(tier_bounds))]
        if best is not None and makespan_of(instance, best) <= lo:
            return ExactOutcome(
                StopReason.PROVEN,
                bound=primary,
                proven_optimal=True,
                proven_solution=best,
                tier_bounds=tier_bounds,
                message="colgen: the fastest schedule meets the bisection's bound",
            )
        return ExactOutcome(
            StopReason.TIME_LIMIT if time.monotonic() >= deadline else StopReason.SEARCH_EXHAUSTED,
            bound=primary,
            tier_bounds=tier_bounds,
            message=f"colgen: makespan proven >= {lo}",
        )

    def _close(
        self,
        instance: DispatchInstance,
        ctx: ExactContext,
        found: CapacityResult,
        tier_bounds: dict[str, float],
        classes: int,
    ) -> ExactOutcome:
        """The cost tier left open by the integer master: the per-core count model
        (:mod:`.sweep`) on HiGHS for the time left, from the best schedule; the bound is the
        larger of the LP's and the model's. (A cost-time instance stops here: its makespan
        tier needs the cost proved.)"""
        note = (
            f"colgen: the integer master over {classes} core classes is {found.cost} against "
            f"the LP bound {found.lp_bound:g}"
        )
        if ctx.time_left() < 0.5 or size_of(instance) > MAX_COUNTS:
            return ExactOutcome(
                StopReason.SEARCH_EXHAUSTED,
                bound=found.lp_bound,
                tier_bounds=tier_bounds,
                message=note,
            )
        if instance.budget_objective == "cost_time":
            tier_bounds = {"cost": found.lp_bound}
        backend = MilpLinear(ctx.options, "dispatch-sweep", warm_start_on_highs=False)
        outcome = solve_sweep(instance, ctx, backend, self.source, found.lp_bound)
        bound = max(found.lp_bound, outcome.bound or 0.0)
        if outcome.proven_optimal:
            return replace(outcome, bound=bound, message=f"{note}; {outcome.message}")
        return ExactOutcome(
            outcome.stop_reason,
            bound=bound,
            tier_bounds={**tier_bounds, "cost": bound},
            message=f"{note}; {outcome.message}",
        )


def _impossible(instance: DispatchInstance, lp: float) -> str:
    if lp == math.inf:
        return (
            f"colgen: no schedule ends every job by the deadline {instance.deadline} within "
            f"the budget {instance.budget or 'none'} (the configuration LP has no point)"
        )
    return (
        f"colgen: the cheapest schedule meeting the deadline {instance.deadline} costs at "
        f"least {lp:g}, {lp - instance.budget:g} over the budget {instance.budget}"
    )
