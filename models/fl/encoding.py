"""The exact model of FL device assignment, written once as a :class:`LinearModel` that CP-SAT
(:mod:`.cpsat`) and a MILP solver (:mod:`.milp`) solve as it is (docs/formulations/fl.md).

A block is a running job ``j`` in a round ``r``. Its candidate devices are those eligible
(online, memory) with time at most its cap (below); their distinct times are its levels
``v_1 < ... < v_m``. With ``L`` its lower bound (:func:`.timing.job_lower_bound`: the
``k``-th fastest candidate, and the fastest holder of each needed class):

* ``x[d]`` binary: device ``d`` serves the block; ``sum_d x[d] = k_j``;
* ``u[l]`` binary for every level ``v_l > L``: "the block's round time reaches ``v_l``",
  ``u[l+1] <= u[l]``, and ``x[d] <= u[level(d)]`` for a device slower than ``L``; the block's
  round time is ``L + sum_l (v_l - v_(l-1)) u[l]`` (the threshold variable of a bottleneck
  assignment, written incrementally so that its LP relaxation already holds ``T >= L``);
* coverage: ``sum_{d holds c} x[d] >= 1`` for every class ``c`` the job needs;
* a device serves at most one block per round; over the rounds in one model, at most its
  participation left.

The objective is the sum of the blocks' round times (integer microseconds, the checker's).
The cap of a block, given the objective ``U`` of a feasible solution of the same rounds, is
``U - (sum of the other blocks' lower bounds)``: a device slower than that makes any solution
worse than ``U``, so dropping it keeps every solution at least as good, and the model's
optimum is the optimum.

How the horizon is solved (:meth:`FlEncoding.solve`):

* the participation limit does not bind (none, or at least the horizon): rounds are
  independent, each is solved alone, and the sum of the per-round optima is the horizon's
  optimum (proved when every round is);
* it binds and the whole horizon's model is small (:data:`FULL_MODEL_VARIABLES`): one model,
  proved over the horizon;
* it binds and the model is larger: rolled round by round, each round optimal given the
  participation the rounds before it used. That proves each round, not the horizon (using a
  fast device early can cost a later round more); the horizon's bound is then the quick
  bound (:func:`.timing.quick_bound`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from placement.models.fl.check import check
from placement.models.fl.explain import explain_infeasible
from placement.models.fl.greedy import Round, fastest_cover, fastest_cover_round, spend
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import eligible, holders, job_lower_bound, quick_bound, times
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken, deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.result import StopReason

FULL_MODEL_VARIABLES = 20_000
"""Largest horizon model (device-block variables) solved in one piece when the
participation limit binds."""
LP_BOUND_VARIABLES = 20_000
"""Largest model whose LP relaxation is solved for its bound before the search (HiGHS took
0.5 s at 10,000 variables and 22 s at 62,000 on this machine)."""
LP_SHARE = 0.3
"""Of a run's time, what the LP relaxation may use."""
MIN_ROUND_SECONDS = 0.05
"""Below this many seconds left, a round keeps the heuristic's assignment."""


@dataclass
class Block:
    """A running job in a round: its candidates and variables."""

    r: int
    j: int
    base_us: int
    devices: list[int]
    x: list[int]
    levels: list[tuple[int, int, int]] = field(default_factory=list)
    """(u var, level time us, step from the level below)."""


@dataclass
class FlLinear:
    """The model of some rounds and where each block's variables are."""

    model: LinearModel
    blocks: list[Block]
    objective: dict[int, float]
    constant: int


def blocks_mask(
    instance: FlInstance, rounds: list[int], budget: np.ndarray
) -> dict[tuple[int, int], np.ndarray]:
    """Each running block's eligible devices (online, memory, participation left)."""
    out = {}
    for r in rounds:
        ok = eligible(instance, r) & (budget > 0)[None, :]
        for j in range(len(instance.jobs)):
            if instance.active(r, j):
                out[(r, j)] = ok[j]
    return out


def fl_linear(
    instance: FlInstance,
    rounds: list[int],
    budget: np.ndarray,
    upper: int | None,
) -> FlLinear | None:
    """The model of ``rounds`` (module docstring) with the participation left ``budget``;
    ``upper`` the objective of a feasible solution of these rounds (None: no cap). None when
    some block has no choice at all."""
    masks = blocks_mask(instance, rounds, budget)
    lower = {}
    for key, mask in masks.items():
        b = job_lower_bound(instance, key[1], mask)
        if b is None:
            return None
        lower[key] = b
    total_lower = sum(lower.values())
    m = LinearModel()
    blocks: list[Block] = []
    objective: dict[int, float] = {}
    by_device_round: dict[tuple[int, int], list[int]] = {}
    by_device: dict[int, list[int]] = {}
    t_all = times(instance)
    for (r, j), mask in masks.items():
        t = t_all[j]
        cap = None if upper is None else upper - (total_lower - lower[(r, j)])
        cand = np.flatnonzero(mask if cap is None else mask & (t <= cap))
        cand = cand[np.argsort(t[cand], kind="stable")]
        base = lower[(r, j)]
        block = Block(r, j, base, [int(d) for d in cand], [])
        level_var: dict[int, int] = {}
        below = base
        for v in sorted({int(t[d]) for d in cand if t[d] > base}):
            u = m.var(0, 1, "u")
            if block.levels:
                m.row([(u, 1), (block.levels[-1][0], -1)], None, 0)
            block.levels.append((u, v, v - below))
            objective[u] = float(v - below)
            level_var[v] = u
            below = v
        for d in block.devices:
            x = m.var(0, 1, "x")
            block.x.append(x)
            if t[d] > base:
                m.row([(x, 1), (level_var[int(t[d])], -1)], None, 0)
            by_device_round.setdefault((d, r), []).append(x)
            by_device.setdefault(d, []).append(x)
        k = instance.jobs[j].devices_per_round
        m.row([(x, 1) for x in block.x], k, k)
        for c in instance.jobs[j].classes_needed:
            have = holders(instance, c)
            m.row([(x, 1) for x, d in zip(block.x, block.devices, strict=True) if have[d]], 1, None)
        blocks.append(block)
    for xs in by_device_round.values():
        if len(xs) > 1:
            m.row([(x, 1) for x in xs], None, 1)
    if len(rounds) > 1:
        for d, xs in by_device.items():
            if len(xs) > budget[d]:
                m.row([(x, 1) for x in xs], None, int(budget[d]))
    return FlLinear(m, blocks, objective, sum(b.base_us for b in blocks))


def lp_bound(lin: FlLinear, seconds: float, cancel: CancellationToken) -> float | None:
    """The optimum of the model's LP relaxation (HiGHS), rounded up: a lower bound on the
    model's integer optimum; None when HiGHS does not solve it in ``seconds``."""
    m = lin.model
    if not m.rows:
        return float(lin.constant)
    starts, index, value, lower, upper = m.csr()
    cost = np.zeros(m.num_vars)
    for var, coef in lin.objective.items():
        cost[var] = coef
    highs = HighsModel()
    highs.load(
        cost,
        np.asarray(m.lb, dtype=np.float64),
        np.asarray(m.ub, dtype=np.float64),
        lower,
        upper,
        starts,
        index,
        value,
        rowwise=True,
        offset=float(lin.constant),
    )
    run = highs.run(seconds, cancel=cancel)
    if run.status != RunStatus.OPTIMAL or run.objective is None:
        return None
    # The integer optimum is an integer at least the LP's (less HiGHS's tolerances).
    return float(math.ceil(run.objective - 1e-6 * max(1.0, abs(run.objective))))


def hint_values(instance: FlInstance, lin: FlLinear, rows: dict[int, Round]) -> list[int] | None:
    """The model's values of the rounds ``rows`` (round -> its assignment), or None when a
    device of theirs is not a candidate."""
    values = [0] * lin.model.num_vars
    for b in lin.blocks:
        chosen = set(rows[b.r][b.j])
        where = dict(zip(b.devices, b.x, strict=True))
        if not chosen <= set(where):
            return None
        for d in chosen:
            values[where[d]] = 1
        slowest = max(int(times(instance)[b.j][d]) for d in chosen)
        for u, v, _ in b.levels:
            values[u] = int(v <= slowest)
    return values


def decode(lin: FlLinear, values: list[float]) -> dict[tuple[int, int], tuple[int, ...]]:
    """(round, job) -> the devices the model's values give it."""
    return {
        (b.r, b.j): tuple(d for d, x in zip(b.devices, b.x, strict=True) if values[x] > 0.5)
        for b in lin.blocks
    }


@dataclass
class Piece:
    """What one model run gave: the rounds' assignments, the bound, and whether proved."""

    rows: dict[int, Round]
    bound: float
    proven: bool
    stop: StopReason
    message: str = ""


class FlEncoding:
    """The model on one backend (the subclasses give the backend)."""

    source = "fl"

    def __init__(self) -> None:
        self.last_stats: dict[str, float] = {}

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        raise NotImplementedError

    def _run(
        self,
        instance: FlInstance,
        ctx: ExactContext,
        rounds: list[int],
        budget: np.ndarray,
        start: dict[int, Round],
        upper: int,
        seconds: float,
    ) -> Piece:
        """Solve the model of ``rounds`` from the feasible ``start`` (objective ``upper``)."""
        lin = fl_linear(instance, rounds, budget, upper)
        if lin is None:
            return Piece(start, 0.0, False, StopReason.ERROR, "a block has no choice")
        t = times(instance)
        backend = self._backend(ctx)
        self.source = backend.source
        backend.load(lin.model)
        self.last_stats["variables"] = self.last_stats.get("variables", 0) + lin.model.num_vars
        hint = hint_values(instance, lin, start)
        relaxed = None
        if lin.model.num_vars <= LP_BOUND_VARIABLES:
            started = time.monotonic()
            relaxed = lp_bound(lin, LP_SHARE * seconds, ctx.cancel)
            seconds = max(0.0, seconds - (time.monotonic() - started))
        with deadline_token(ctx.cancel, seconds) as token:
            run, final = backend.run(
                "min", lin.objective, float(lin.constant), hint, seconds, token, None
            )
        bound = float(lin.constant) if relaxed is None else max(float(lin.constant), relaxed)
        if run.bound is not None and math.isfinite(run.bound):
            bound = max(bound, float(math.ceil(run.bound - 1e-6)))
        if not run.has_solution or final is None:
            return Piece(
                start, min(bound, upper), False, deadline_stop(run.stop_reason, ctx.cancel)
            )
        chosen = decode(lin, final)
        rows = {r: tuple(chosen.get((r, j), ()) for j in range(len(instance.jobs))) for r in rounds}
        value = sum(
            int(t[j][list(devs)].max())
            for row in rows.values()
            for j, devs in enumerate(row)
            if devs
        )
        if value > upper:
            rows, value = start, upper
        proven = (
            run.status == RunStatus.OPTIMAL
            and run.stop_reason == StopReason.PROVEN
            and run.objective is not None
            and abs(run.objective - value) < 0.5
        )
        if proven:
            bound = float(value)
        return Piece(rows, min(bound, value), proven, deadline_stop(run.stop_reason, ctx.cancel))

    def solve(self, instance: FlInstance, ctx: ExactContext) -> ExactOutcome:
        """The horizon by the rule of the module docstring."""
        reasons = explain_infeasible(instance)
        if reasons:
            return ExactOutcome(
                StopReason.PROVEN,
                proven_infeasible=True,
                message="; ".join(r["message"] for r in reasons),
            )
        self.last_stats = {}
        incumbent = ctx.incumbent()
        if incumbent is None or not check(instance, incumbent).feasible:
            own = fastest_cover(instance)
            incumbent = own if check(instance, own).feasible else None
        quick = quick_bound(instance)
        H = instance.rounds
        full_budget = np.full(len(instance.devices), instance.participation_limit, dtype=np.int64)
        if not instance.fairness_binds:
            return self._independent(instance, ctx, incumbent, quick, full_budget)
        size = sum(
            int(m.sum()) for m in blocks_mask(instance, list(range(H)), full_budget).values()
        )
        if incumbent is not None and size <= FULL_MODEL_VARIABLES:
            start = dict(enumerate(incumbent.assign))
            upper = int(check(instance, incumbent).objective)
            piece = self._run(
                instance, ctx, list(range(H)), full_budget, start, upper, ctx.time_left()
            )
            best = FlSolution(tuple(piece.rows[r] for r in range(H)))
            bound = max(quick, piece.bound)
            ctx.report(best, self.source, bound)
            return ExactOutcome(
                StopReason.PROVEN if piece.proven else piece.stop,
                bound=bound,
                proven_optimal=piece.proven,
                proven_solution=best if piece.proven else None,
                message="" if piece.proven else f"{self.source}: horizon model not proved",
            )
        return self._rolled(instance, ctx, quick, full_budget)

    def _independent(
        self,
        instance: FlInstance,
        ctx: ExactContext,
        incumbent: FlSolution | None,
        quick: float,
        budget: np.ndarray,
    ) -> ExactOutcome:
        """Rounds solved one by one; their optima add up to the horizon's."""
        if incumbent is None:
            return ExactOutcome(
                StopReason.ERROR,
                bound=quick,
                message=f"{self.source}: no feasible start to cap the model with",
            )
        t = times(instance)
        rows = list(incumbent.assign)
        bounds = [0.0] * instance.rounds
        proven_all = True
        proved_rounds = 0
        stop = StopReason.PROVEN
        for r in range(instance.rounds):
            row = rows[r]
            upper = sum(int(t[j][list(devs)].max()) for j, devs in enumerate(row) if devs)
            bounds[r] = float(
                sum(
                    b or 0
                    for b in (
                        job_lower_bound(instance, j, eligible(instance, r)[j])
                        if instance.active(r, j)
                        else 0
                        for j in range(len(instance.jobs))
                    )
                )
            )
            left = ctx.time_left()
            if left < MIN_ROUND_SECONDS or ctx.cancel.cancelled:
                proven_all = False
                stop = StopReason.CANCELLED if ctx.cancel.cancelled else StopReason.TIME_LIMIT
                continue
            if upper <= bounds[r]:
                proved_rounds += 1
                continue  # the heuristic's round meets its bound
            piece = self._run(
                instance, ctx, [r], budget, {r: row}, upper, left / (instance.rounds - r)
            )
            rows[r] = piece.rows[r]
            bounds[r] = max(bounds[r], piece.bound)
            proved_rounds += int(piece.proven)
            if not piece.proven:
                proven_all = False
                stop = piece.stop
        best = FlSolution(tuple(rows))
        bound = max(quick, sum(bounds))
        ctx.report(best, self.source, bound)
        return ExactOutcome(
            StopReason.PROVEN if proven_all else stop,
            bound=bound,
            proven_optimal=proven_all,
            proven_solution=best if proven_all else None,
            message=""
            if proven_all
            else (
                f"{self.source}: {proved_rounds} of {instance.rounds} rounds proved optimal "
                "(the rounds are independent: the horizon's bound is the sum of theirs)"
            ),
        )

    def _rolled(
        self, instance: FlInstance, ctx: ExactContext, quick: float, budget: np.ndarray
    ) -> ExactOutcome:
        """Round by round under the participation the rounds before used: each round is
        proved given them, the horizon is not."""
        budget = budget.copy()
        rows: list[Round] = []
        proved_rounds = 0
        for r in range(instance.rounds):
            found = fastest_cover_round(instance, r, budget)
            if found is None:
                return ExactOutcome(
                    StopReason.SEARCH_EXHAUSTED,
                    bound=quick,
                    message=f"{self.source}: rolled plan ran out of devices in round {r}",
                )
            row, upper = found
            left = ctx.time_left()
            if left >= MIN_ROUND_SECONDS and not ctx.cancel.cancelled:
                piece = self._run(
                    instance, ctx, [r], budget, {r: row}, upper, left / (instance.rounds - r)
                )
                row = piece.rows[r]
                proved_rounds += int(piece.proven)
            spend(instance, budget, row)
            rows.append(row)
        best = FlSolution(tuple(rows))
        ctx.report(best, self.source, quick)
        return ExactOutcome(
            StopReason.SEARCH_EXHAUSTED,
            bound=quick,
            message=(
                f"{self.source}: rolled over the horizon, {proved_rounds} of {instance.rounds} "
                "rounds proved optimal given the rounds before; the horizon is not proved "
                "(the participation limit couples the rounds)"
            ),
        )
