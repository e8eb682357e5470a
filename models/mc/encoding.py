"""What the CP-SAT and MILP encodings share: the integer tables, the model's rows, and the
solve protocol (column generation first, then the tiers, exactness loop, proofs).

**Column generation first** (:mod:`.colgen`): the configuration LP over per-core task sets
proves most unschedulable sets that this compact model cannot (its LP relaxation is weak),
bounds the dropped cost and the cores, and an integer master over its columns looks for a
schedule; on identical cores with no schedule yet, branch and price (:mod:`.branch_price`)
then settles the sets whose LP optimum is at most the cores; see
:meth:`McEncoding._configurations` for when they run.

The model (docs/formulations/mc.md, "Exact encodings"): a binary ``x[i,k]`` per allowed
(task, core) pair, a binary ``drop[i]`` per droppable task, ``sum_k x[i,k] + drop[i] = 1``.
Per core, with utilisations scaled by an integer ``S`` (``l`` for LO tasks, ``hh`` and ``d``
= HI minus LO for HI tasks, each on that core's speed):

* ``L_k = sum l x <= S``, ``HH_k = sum hh x <= S``, ``L_k + HL_k <= S`` (LO mode; implied,
  it tightens the LP);
* ``D_k <= sum d x``, ``0 <= D_k <= S``;
* ``w[i,k] <= D_k`` and ``w[i,k] <= S x[i,k]`` for each LO task ``i`` (so ``w = x D`` at
  most: the product of a binary and a bounded integer, linearised exactly);
* ``S^2 - S L_k - S HH_k + sum_i l[i,k] w[i,k] >= t`` (``t >= 0``): the EDF-VD condition
  ``1 - L - HH + L D >= 0`` times ``S^2``, with ``L D = sum_i l_i x_i D``.

**Exactness.** When every utilisation is a multiple of ``1/S`` for some ``S <= 10^6`` (the
least common denominator), ``S`` is that denominator and the rows are the test exactly. Else
``S = 10^6`` and each coefficient is rounded the optimistic way (``l``, ``hh`` down, ``d``
up; the condition decreases in ``L`` and ``HH`` and increases in ``D``): every schedulable
assignment satisfies the model, so an infeasible model proves the set unschedulable. A model
solution is then checked in exact rationals; a core that fails by less than the rounding gets
a no-good cut (its task set may not share a core of that speed or slower: the test is
monotone) and the model is solved again. So the answer is exact either way.

**Symmetry.** When the cores are interchangeable (one speed, no pinning or exclusions), the
task of rank ``r`` in decreasing utilisation may only use cores ``0..r`` (relabel cores by
their first task): a valid restriction for feasibility and for both objectives.

The assignment, no-good and drop-limit rows and the ``dropped_cost`` and ``cores_used``
objectives are written once (:func:`mc_linear`, a :class:`LinearModel`); the per-core rows
above are each backend's own (exact integers on CP-SAT, utilisation units on a MILP: see
:mod:`.cpsat` and :mod:`.milp`). :class:`McEncoding` runs the protocol, solves and decodes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from placement.models.mc.amcrtb import minimal_failing
from placement.models.mc.branch_price import branch_and_price
from placement.models.mc.check import check
from placement.models.mc.colgen import (
    CORES,
    DETERMINISTIC_ITERATIONS_PER_S,
    configuration_bound,
    integer_master,
)
from placement.models.mc.edfvd import CoreLoad, loads
from placement.models.mc.explain import explain_unschedulable
from placement.models.mc.greedy import decreasing
from placement.models.mc.instance import (
    AMC_RTB,
    MAX_MIN_SLACK,
    MIN_CORES,
    McInstance,
    McSolution,
)
from placement.models.mc.rows import scaled_utilisations
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import LinearModel
from placement.solver.linear_backends import LinearBackend
from placement.solver.options import deterministic_wall_limit
from placement.solver.result import StopReason

COLGEN_SHARE = 0.5
"""Column generation may use at most this share of the time left (it stops earlier once it
proves, or once its master shows no proof will come)."""
INTEGER_MASTER_SHARE = 0.25
"""The integer master over the generated columns may use this share of the time left."""
BRANCH_AND_PRICE_SHARE = 0.8
"""Branch and price (:mod:`.branch_price`; identical cores, no droppable task, no schedule
yet) may use this share of the time left after the integer master; the compact model has the
rest (it rarely settles what branch and price did not)."""


@dataclass
class ColgenPhase:
    """What the column generation phase hands the compact model's tiers."""

    drop_bound: float | None = None
    """A proven lower bound on the dropped cost (capacity mode)."""
    found: McSolution | None = None
    """The integer master's schedule, if it found one."""
    ran: bool = False
    """Whether column generation ran (it is skipped when it has nothing to add)."""


@dataclass
class Tables:
    """Integer-scaled utilisations of every allowed (task, core) pair."""

    instance: McInstance
    scale: int
    exact: bool
    pairs: list[tuple[int, int]]
    lo: dict[tuple[int, int], int]
    """LO tasks: floor(S u_lo / speed)."""
    hl: dict[tuple[int, int], int]
    """HI tasks: floor(S u_lo / speed)."""
    hh: dict[tuple[int, int], int]
    """HI tasks: floor(S u_hi / speed)."""
    d: dict[tuple[int, int], int]
    """HI tasks: ceil(S (u_hi - u_lo) / speed)."""
    nogoods: list[tuple[frozenset[int], Fraction]] = field(default_factory=list)
    """Task sets that fail on a core of this speed (and so on every slower core)."""

    @property
    def amc(self) -> bool:
        """AMC-rtb: the rows are only its necessary utilisation conditions (the master);
        the no-good loop does the rest."""
        return self.instance.test == AMC_RTB

    def tasks_on(self, k: int) -> list[int]:
        """Tasks allowed on core ``k``."""
        return [i for i, kk in self.pairs if kk == k]

    def nogood_rows(self) -> list[list[tuple[int, int]]]:
        """Each no-good cut as the (task, core) pairs whose sum must be at most len - 1."""
        rows = []
        speeds = [c.speed_exact for c in self.instance.cores]
        allowed = set(self.pairs)
        for tasks, speed in self.nogoods:
            for k, s in enumerate(speeds):
                if s <= speed and all((i, k) in allowed for i in tasks):
                    rows.append([(i, k) for i in sorted(tasks)])
        return rows


def build_tables(instance: McInstance) -> Tables:
    """The pairs, the scale and the scaled coefficients (see the module docstring)."""
    n, m = len(instance.tasks), len(instance.cores)
    symmetric = instance.cores_identical
    rank = {task: r for r, task in enumerate(decreasing(instance))}
    # A pair whose task fails the test alone on the core is left out: it is in no schedulable
    # assignment, and every coefficient kept is then at most S.
    empty = [CoreLoad(c.speed_exact) for c in instance.cores]
    pairs = [
        (i, k)
        for i in range(n)
        for k in range(m)
        if instance.allowed(i, k) and (not symmetric or k <= rank[i]) and empty[k].fits(instance, i)
    ]
    items = {(i, k): (i, instance.cores[k].speed_exact) for i, k in pairs}
    scale, exact, lo_, hl, hh, d = scaled_utilisations(instance, items)
    return Tables(instance, scale, exact, pairs, lo_, hl, hh, d)


@dataclass
class RunResult:
    """What one backend run of one tier returns."""

    core_of: tuple[int, ...] | None
    proven: bool
    infeasible: bool
    stop: StopReason
    objective: float | None = None
    """The model objective (drop cost, or slack in units of S^2, or cores)."""
    bound: float | None = None
    message: str = ""


def failing_cores(instance: McInstance, core_of: tuple[int, ...]) -> list[int]:
    """Cores whose test (EDF-VD, or AMC-rtb with OPA) fails in exact arithmetic."""
    return [k for k, load in enumerate(loads(instance, core_of)) if not load.passes(instance)]


def nogood(instance: McInstance, core_of: tuple[int, ...], k: int) -> frozenset[int]:
    """The task set of a failing core ``k`` to forbid: all its tasks under EDF-VD, a
    minimal failing subset under AMC-rtb (a stronger cut, as sound: see
    :func:`~.amcrtb.minimal_failing`)."""
    tasks = [i for i, kk in enumerate(core_of) if kk == k]
    if instance.test == AMC_RTB:
        tasks = minimal_failing(instance, tasks, instance.cores[k].speed_exact)
    return frozenset(tasks)


@dataclass
class McLinear:
    """The rows of the model that both backends share, as a :class:`LinearModel`:
    assignment, no-good cuts, the drop limit, and the ``dropped_cost`` and ``cores_used``
    objectives. The per-core rows are each backend's own (:meth:`McEncoding._core_rows`)."""

    model: LinearModel
    x: dict[tuple[int, int], int]
    """The variable of each allowed (task, core) pair."""
    drop: dict[int, int]
    """The variable of each droppable task."""
    used: dict[int, int]
    """``cores_used``: the variable of each core (1 when a task uses it)."""
    sense: str
    objective: dict[int, float] | None
    """None for a feasibility run (and for ``min_slack``, which the backend supplies)."""

    def hint(self, core_of: tuple[int, ...]) -> list[int]:
        """The values of ``x`` and ``drop`` (the first variables) for an assignment (-1:
        dropped); the other variables are left to the solver, as they always were."""
        values = [0] * (len(self.x) + len(self.drop))
        for (i, k), var in self.x.items():
            values[var] = int(core_of[i] == k)
        for i, var in self.drop.items():
            values[var] = int(core_of[i] == -1)
        return values


def mc_linear(tables: Tables, tier: str | None, drop_limit: int | None) -> McLinear:
    """The shared rows of the module docstring and the tier's objective."""
    inst = tables.instance
    n, m = len(inst.tasks), len(inst.cores)
    lm = LinearModel()
    x = {p: lm.var(0, 1, "x") for p in tables.pairs}
    drop = {i: lm.var(0, 1, "drop") for i, t in enumerate(inst.tasks) if t.droppable}
    by_task: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for (i, _), var in x.items():
        by_task[i].append((var, 1))
    for i in range(n):
        terms = by_task[i] + ([(drop[i], 1)] if i in drop else [])
        if not terms:
            # No core and no drop for the task: a row no assignment satisfies, which the
            # solver refutes.
            terms = [(lm.var(0, 0, "empty"), 1)]
        lm.row(terms, 1, 1)
    for row in tables.nogood_rows():
        lm.row([(x[p], 1) for p in row], None, len(row) - 1)
    cost = {var: inst.tasks[i].drop_cost for i, var in drop.items()}
    if drop_limit is not None and drop:
        lm.row(list(cost.items()), None, drop_limit)
    used: dict[int, int] = {}
    objective: dict[int, float] | None = None
    sense = "max" if tier == "min_slack" else "min"
    if tier == "dropped_cost":
        objective = {var: float(c) for var, c in cost.items()}
    elif tier == "cores_used":
        for k in range(m):
            used[k] = lm.var(0, 1, "used")
            for i in tables.tasks_on(k):
                lm.row([(x[(i, k)], 1), (used[k], -1)], None, 0)
        objective = dict.fromkeys(used.values(), 1.0)
    return McLinear(lm, x, drop, used, sense, objective)


def stop_reason(run_stop: StopReason, ctx: ExactContext) -> StopReason:
    """Why a run under the context's deadline stopped, as the caller sees it."""
    return deadline_stop(run_stop, ctx.cancel)


def canonical(
    instance: McInstance, tables: Tables, core_of: tuple[int, ...]
) -> tuple[int, ...] | None:
    """``core_of`` relabelled into the symmetry-broken model (cores by their first task in
    decreasing utilisation), or None when it is not in the model."""
    if instance.cores_identical:
        relabel: dict[int, int] = {}
        for task in decreasing(instance):
            k = core_of[task]
            if k >= 0 and k not in relabel:
                relabel[k] = len(relabel)
        core_of = tuple(relabel.get(k, -1) if k >= 0 else k for k in core_of)
    allowed = set(tables.pairs)
    for i, k in enumerate(core_of):
        if k >= 0 and (i, k) not in allowed:
            return None
        if k < 0 and not instance.tasks[i].droppable:
            return None
    return core_of


class McEncoding:
    """An exact encoding of the mc family (see the module docstring).

    Parameters
    ----------
    feasibility_only:
        Stop at the first schedulable assignment (or the proof that none exists) instead of
        optimising the tiers: the schedulability question the benchmarks ask.
    colgen:
        Run the column generation phase first (:mod:`.colgen`); off, the compact model
        alone (what the benchmarks compare against, and the tests of its own protocol).
    """

    source = "exact"

    def __init__(self, feasibility_only: bool = False, colgen: bool = True) -> None:
        self.feasibility_only = feasibility_only
        self.colgen = colgen
        self.last_stats: dict[str, Any] = {}
        """Sizes of the last model and the no-good cuts the exactness loop added."""

    def _run(
        self,
        tables: Tables,
        ctx: ExactContext,
        tier: str | None,
        drop_limit: int | None,
        hint: tuple[int, ...] | None,
    ) -> RunResult:
        """Solve one tier: ``dropped_cost`` (minimise), ``min_slack`` (maximise),
        ``cores_used`` (minimise), or None (feasibility), with the dropped cost at most
        ``drop_limit``: the shared rows of :func:`mc_linear` through the backend's
        translator, plus the backend's own per-core rows (:meth:`_core_rows`)."""
        linear = mc_linear(tables, tier, drop_limit)
        backend = self._backend(ctx)
        self.source = backend.source
        backend.load(linear.model)
        objective = linear.objective
        slack = self._core_rows(tables, linear, backend, tier == "min_slack")
        if tier == "min_slack":
            assert slack is not None
            objective = {slack: 1.0}
        values = None if hint is None else linear.hint(hint)
        with deadline_token(ctx.cancel, ctx.time_left()) as token:
            run, final = backend.run(
                linear.sense, objective, 0.0, values, ctx.time_left(), token, None
            )
        if not run.has_solution or final is None:
            return RunResult(
                None,
                False,
                run.status == RunStatus.INFEASIBLE,
                stop_reason(run.stop_reason, ctx),
                message=run.message,
            )
        core_of = [-1] * len(tables.instance.tasks)
        for (i, k), var in linear.x.items():
            if final[var] > 0.5:
                core_of[i] = k
        proven = tier is None or (
            run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        )
        objective_value = run.objective
        if tier == "dropped_cost":
            # Trust a proof only when the values returned score the proved objective (a MILP
            # wrapper can return the solved objective with other values).
            objective_value = float(
                sum(tables.instance.tasks[i].drop_cost for i, k in enumerate(core_of) if k == -1)
            )
            if run.objective is not None and abs(objective_value - run.objective) > 0.5:
                proven = False
        return RunResult(
            tuple(core_of),
            proven,
            False,
            StopReason.PROVEN if proven else stop_reason(run.stop_reason, ctx),
            objective=objective_value,
            bound=run.bound,
            message=run.message,
        )

    slack_unit_squared = False
    """The model's min_slack is in units of ``1/S^2`` (CP-SAT's integers), else in
    utilisation units (the MILP)."""

    def _open_tier(
        self,
        instance: McInstance,
        tables: Tables,
        tiers: list[str | None],
        position: int,
        run: RunResult,
    ) -> str:
        """What is open after the tier at ``position`` stopped unproved: that tier, its best
        value and the backend's bound on it, why it stopped, and what the tiers before it
        settled (issue 41: the gap printed is the first tier's)."""
        tier = tiers[position]
        unit = float(tables.scale) ** 2 if self.slack_unit_squared else 1.0
        if tier != MAX_MIN_SLACK:
            unit = 1.0
        before = [f"{t} proved" for t in tiers[:position] if t is not None] or (
            ["dropped_cost is 0: no task may be dropped"] if not instance.any_droppable else []
        )
        if run.objective is None:
            text = (
                f"tier {tier} not proved: {self.source} found no solution of its own "
                f"({run.stop.value}), the best checked one stands"
            )
        else:
            bound = "none" if run.bound is None else f"{run.bound / unit:.6g}"
            text = (
                f"tier {tier} not proved: best {run.objective / unit:.6g}, {self.source}'s "
                f"bound {bound} ({run.stop.value})"
            )
        if tier == MAX_MIN_SLACK and not tables.exact:
            text += (
                f"; it is optimised on utilisations rounded to 1/{tables.scale}, so a finished "
                "search would prove it only within the rounding"
            )
        return text + "".join(f"; {b}" for b in before)

    def _backend(self, ctx: ExactContext) -> LinearBackend:
        """The translator that solves the linear model (:mod:`.cpsat`, :mod:`.milp`)."""
        raise NotImplementedError

    def _core_rows(
        self, tables: Tables, linear: McLinear, backend: LinearBackend, min_slack: bool
    ) -> int | None:
        """Add each core's utilisation and EDF-VD rows to the loaded ``backend`` (they
        differ per backend: see :mod:`.cpsat` and :mod:`.milp`); with ``min_slack``, also
        the smallest slack over the cores, whose index (:meth:`native`) is returned."""
        raise NotImplementedError

    def solve(self, instance: McInstance, ctx: ExactContext) -> ExactOutcome:
        """Column generation first (a proof of unschedulability, bounds, a schedule from its
        columns), then the compact model's tiers; report every exact-feasible solution."""
        if instance.test == AMC_RTB and instance.objective == MAX_MIN_SLACK:
            raise ValueError(
                "mc.objective: MIN_CORES under test AMC_RTB (min_slack is EDF-VD's slack)"
            )
        tiers: list[str | None] = []
        if instance.any_droppable:
            tiers.append("dropped_cost")
        if not self.feasibility_only:
            tiers.append(instance.objective)
        if not tiers:
            tiers.append(None)
        started = time.monotonic()
        early, phase = self._configurations(instance, ctx, tiers)
        colgen_s = time.monotonic() - started
        if early is None:
            early = self._tiers(instance, ctx, tiers, phase)
        if phase.ran:
            early.phase_times_s = {"colgen": colgen_s, **early.phase_times_s}
        return early

    def _configurations(
        self, instance: McInstance, ctx: ExactContext, tiers: list[str | None]
    ) -> tuple[ExactOutcome | None, ColgenPhase]:
        """The column generation phase (:mod:`.colgen`): the outcome when it settles the
        question (a proof of unschedulability; a schedule when only that was asked; a
        schedule whose cores meet the cores bound), else what it learnt for the tiers.

        It runs when it can add something: no incumbent yet (prove, or find a schedule the
        heuristics missed), an incumbent that drops tasks (a bound on the dropped cost), or
        the ``cores_used`` objective on one core type (a bound on the cores)."""
        phase = ColgenPhase()
        if not self.colgen:
            return None, phase
        incumbent = ctx.incumbent()
        report = None if incumbent is None else check(instance, incumbent)
        dropped = 0.0 if report is None else report.terms.get("dropped_cost", 0.0)
        cores_tier = MIN_CORES in tiers and not instance.any_droppable
        if incumbent is not None and dropped <= 0 and not cores_tier:
            return None, phase
        left = ctx.time_left()
        if left <= 0:
            return None, phase
        options = ctx.options
        phase.ran = True
        budget = COLGEN_SHARE * left
        iterations = None
        if options.deterministic:
            # A work budget from the time limit, not the clock: the same run on any load.
            budget = COLGEN_SHARE * float(options.time_limit_s)
            iterations = max(1, int(DETERMINISTIC_ITERATIONS_PER_S * budget))
            budget = deterministic_wall_limit(budget)
        conf = configuration_bound(
            instance,
            time.monotonic() + budget,
            ctx.cancel,
            options,
            until_converged=cores_tier and incumbent is not None,
            iterations=iterations,
        )
        self.last_stats["colgen"] = {
            "iterations": conf.iterations,
            "columns": len(conf.columns),
            "pricing": conf.pricing_solves,
            "lp": conf.lp_value,
            "seconds": round(conf.seconds, 3),
        }
        if conf.proven_infeasible:
            return ExactOutcome(
                StopReason.PROVEN,
                proven_infeasible=True,
                message=f"{self.source}: proved unschedulable: {conf.describe(instance)}. "
                + explain_unschedulable(instance),
            ), phase
        if conf.drop_bound is not None and conf.drop_bound > 0:
            phase.drop_bound = float(conf.drop_bound)
            ctx.update_bound(phase.drop_bound)
        if incumbent is None or dropped > (phase.drop_bound or 0.0):
            master_s = INTEGER_MASTER_SHARE * ctx.time_left()
            if options.deterministic:
                # CP-SAT's deterministic budget (the wall clock only guards it).
                master_s = INTEGER_MASTER_SHARE * float(options.time_limit_s)
            core_of = integer_master(
                instance, conf, time.monotonic() + master_s, ctx.cancel, options
            )
            if core_of is not None and ctx.report(McSolution(core_of), f"{self.source}:colgen"):
                phase.found = McSolution(core_of)
                incumbent = phase.found
                report = check(instance, incumbent)
        if incumbent is None and conf.mode == CORES and not options.deterministic:
            # Branch and price settles what the LP could not (its optimum is at most the
            # cores): a schedule, or the proof that none exists.
            bnp = branch_and_price(
                instance,
                conf.types[0],
                [c for _, c in conf.columns],
                time.monotonic() + BRANCH_AND_PRICE_SHARE * ctx.time_left(),
                ctx.cancel,
                options,
            )
            self.last_stats["branch_and_price"] = {
                "nodes": bnp.nodes,
                "pricing": bnp.pricing_solves,
                "seconds": round(bnp.seconds, 3),
            }
            if bnp.proven_infeasible:
                return ExactOutcome(
                    StopReason.PROVEN,
                    proven_infeasible=True,
                    message=f"{self.source}: proved unschedulable: branch and price on the "
                    f"configuration LP closed every node ({bnp.nodes}) by its bound. "
                    + explain_unschedulable(instance),
                ), phase
            found = bnp.core_of
            if found is not None and ctx.report(McSolution(found), f"{self.source}:bnp"):
                phase.found = McSolution(found)
                incumbent = phase.found
                report = check(instance, incumbent)
        if incumbent is None or report is None or not report.feasible:
            return None, phase
        if self.feasibility_only and tiers == [None]:
            # Schedulability is what was asked, and the schedule proves it.
            return ExactOutcome(StopReason.SEARCH_EXHAUSTED), phase
        cores = report.terms.get(MIN_CORES)
        if (
            cores_tier
            and tiers == [MIN_CORES]
            and conf.cores_bound is not None
            and cores is not None
            and cores <= conf.cores_bound
        ):
            return ExactOutcome(
                StopReason.PROVEN,
                proven_optimal=True,
                proven_solution=incumbent,
                bound=0.0,
                tier_bounds={MIN_CORES: float(conf.cores_bound)},
                message=f"{self.source}: {conf.describe(instance)}: the schedule's "
                f"{cores:g} cores are optimal",
            ), phase
        return None, phase

    def _tiers(
        self,
        instance: McInstance,
        ctx: ExactContext,
        tiers: list[str | None],
        phase: ColgenPhase,
    ) -> ExactOutcome:
        """The compact model's tiers in turn (the module docstring's protocol)."""
        tables = build_tables(instance)
        self.last_stats.update(model_stats(tables))
        incumbent = ctx.incumbent()
        hint = None if incumbent is None else canonical(instance, tables, incumbent.core_of)
        drop_limit: int | None = None
        drop_bound: float | None = 0.0 if not instance.any_droppable else phase.drop_bound
        proven = True
        best: McSolution | None = phase.found
        messages: list[str] = []
        stop = StopReason.PROVEN
        for position, tier in enumerate(tiers):
            while True:
                run = self._run(tables, ctx, tier, drop_limit, hint)
                if run.core_of is None:
                    break
                failing = failing_cores(instance, run.core_of)
                if not failing:
                    break
                # A rounded row let a core through that fails by less than the rounding.
                for k in failing:
                    tasks = nogood(instance, run.core_of, k)
                    tables.nogoods.append((tasks, instance.cores[k].speed_exact))
                self.last_stats["nogoods"] = len(tables.nogoods)
                if ctx.time_left() <= 0:
                    run = RunResult(None, False, False, StopReason.TIME_LIMIT)
                    break
            if run.infeasible and position == 0:
                return ExactOutcome(
                    StopReason.PROVEN,
                    proven_infeasible=True,
                    message=f"{self.source}: proved unschedulable. "
                    + explain_unschedulable(instance),
                )
            if run.core_of is None:
                proven = False
                stop = run.stop
                if best is None:
                    messages.append(
                        f"{self.source}: no schedulable assignment found ({run.stop.value})"
                    )
                    if run.message:
                        messages.append(run.message)
                if tier is not None and (best is not None or ctx.incumbent() is not None):
                    # An incumbent (the greedy's) stands; this tier's search found none better.
                    messages.append(self._open_tier(instance, tables, tiers, position, run))
                break
            best = McSolution(run.core_of)
            ctx.report(best, self.source)
            hint = run.core_of
            if tier == "dropped_cost":
                drop_limit = round(run.objective or 0)
                if run.proven:
                    drop_bound = float(drop_limit)
            if not run.proven:
                proven = False
                stop = run.stop
                messages.append(self._open_tier(instance, tables, tiers, position, run))
                break
            if tier == MAX_MIN_SLACK and not tables.exact:
                # The slack was optimised on rounded coefficients: within the rounding only.
                proven = False
                stop = StopReason.SEARCH_EXHAUSTED
                messages.append(
                    f"min_slack optimised on utilisations rounded to 1/{tables.scale}: optimal "
                    f"within {len(instance.tasks) * 2 / tables.scale:.1g}, not proved exactly"
                )
        if self.feasibility_only and best is not None and tiers == [None]:
            # Schedulability is what was asked, and it is proved by the solution itself.
            proven = False
            stop = StopReason.SEARCH_EXHAUSTED if stop is StopReason.PROVEN else stop
        return ExactOutcome(
            stop_reason=stop,
            bound=drop_bound,
            proven_optimal=proven and best is not None,
            proven_solution=best if proven else None,
            message="; ".join(messages),
        )


def model_stats(tables: Tables) -> dict[str, Any]:
    """Sizes of the model (for benchmarks)."""
    return {
        "pairs": len(tables.pairs),
        "scale": tables.scale,
        "exact_scale": tables.exact,
        "nogoods": len(tables.nogoods),
    }
