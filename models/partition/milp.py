"""MILP encoding of model partitioning (HiGHS or CBC through PuLP): the stage-path model of
:mod:`.encoding`.

Costs are integer nanoseconds and the bottleneck ``T`` is an integer variable, so HiGHS's dual
bound is rounded up to the next integer before it is reported. With one link speed the
bottleneck is proved by bisection over the stage costs (``parametric``: path-feasibility
models only, see :meth:`.encoding.StageEncoding._bisection`); ``T`` is minimised only over
the slowest link.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.partition.encoding import (
    RunOutcome,
    StageEncoding,
    StageModel,
    stop_reason,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.milp import milp_solver
from placement.solver.cancel import deadline_token
from placement.solver.family import ExactContext
from placement.solver.result import StopReason


def build_milp(model: StageModel, count_only: bool = False) -> tuple[Any, list[Any], Any]:
    """The PuLP problem: (problem, stage variables, objective variable or None); with
    ``count_only`` the objective is the number of stages."""
    # pulp loads in ~0.2 s: only when a model is built (not when the DP proves the optimum)
    import pulp

    t = model.tables
    prob = pulp.LpProblem("partition", pulp.LpMinimize)
    z = [pulp.LpVariable(f"z{k}", 0, 1, pulp.LpBinary) for k in range(model.size)]
    starts_at, ends_at = model.stages_by_position()
    prob += pulp.lpSum(z[k] for k in starts_at[0]) == 1, "start"
    for p in range(1, t.n):
        prob += (
            pulp.lpSum(z[k] for k in ends_at[p]) - pulp.lpSum(z[k] for k in starts_at[p]) == 0,
            f"flow{p}",
        )
    for c, count in enumerate(model.counts):
        members = np.flatnonzero(model.cls == c)
        if len(members) > count:
            prob += pulp.lpSum(z[int(k)] for k in members) <= count, f"count{c}"
    limit = t.instance.workload.max_stages
    if limit is not None and model.size > limit:
        prob += pulp.lpSum(z) <= limit, "stages"
    cost = [int(v) for v in model.cost]
    if count_only:
        prob.setObjective(pulp.lpSum(z))
        return prob, z, None
    if t.bottleneck:
        top = pulp.LpVariable("bottleneck", 0, max(cost), pulp.LpInteger)
        # A path starts at most one stage at each position: one row per position bounds T by
        # the cost of the stage chosen there (n rows, and a tighter LP than one per stage).
        for p in range(t.n):
            terms = [(z[k], -cost[k]) for k in starts_at[p] if cost[k] > 0]
            if terms:
                prob += pulp.LpAffineExpression([*terms, (top, 1.0)]) >= 0, f"load{p}"
        prob.setObjective(pulp.LpAffineExpression([(top, 1.0)]))
        return prob, z, top
    prob.setObjective(pulp.lpSum(c * v for c, v in zip(cost, z, strict=True)))
    return prob, z, None


def _limit(ctx: ExactContext, model: StageModel) -> float:
    """The solver's time limit, taken after building the problem, less the wrapper's
    conversion of it to HiGHS (about 20 us per stage variable here), which its own limit
    does not count."""
    return max(0.0, ctx.time_left() - 2e-5 * model.size)


def _value(model: StageModel, chosen: np.ndarray, count_only: bool) -> float:
    """The model objective of the chosen stages (ns, or the stage count)."""
    if count_only:
        return float(chosen.sum())
    costs = model.cost[chosen]
    if model.tables.bottleneck:
        return float(costs.max(initial=0))
    return float(costs.sum())


class MilpEncoding(StageEncoding):
    """The exact MILP encoding (``backend='milp'``; HiGHS by default, CBC selectable)."""

    source = "milp"
    parametric = True
    layer_graph_ip = False
    """The layer-graph IP is a CP-SAT model: this encoding proves layer graphs by the DP over
    ideals only (and says so where the ideals are too many)."""

    def _run(
        self,
        model: StageModel,
        ctx: ExactContext,
        hint: np.ndarray | None,
        count_only: bool,
    ) -> RunOutcome:
        name, solver = milp_solver(ctx.options)
        self.source = f"milp-{name}"
        prob, z, top = build_milp(model, count_only)
        warm = None
        # No MIP start for HiGHS: the wrapper can return the objective of the solved model
        # with the values of the start (seen on small models solved in presolve).
        if hint is not None and name != "highs":
            warm = {v: float(h) for v, h in zip(z, hint, strict=True)}
            if top is not None:
                warm[top] = float(model.cost[hint].max(initial=0))

        def on_solution(values: dict[Any, float], objective: float) -> None:
            """Report each MILP solution as an incumbent (without a bound)."""
            del objective
            chosen = np.array([values.get(v, 0.0) > 0.5 for v in z], dtype=bool)
            ctx.report(model.decode(chosen), self.source, None)

        with deadline_token(ctx.cancel, ctx.time_left()) as token:
            run = solver.run(
                prob,
                ctx.options,
                token,
                _limit(ctx, model),
                warm_start=warm,
                on_solution=on_solution,
            )
        chosen = None
        proven = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        if run.has_solution and run.values:
            chosen = np.array([(run.values.get(v) or 0.0) > 0.5 for v in z], dtype=bool)
            # Trust a proof only when the values returned score the proved objective.
            if (
                run.objective is None
                or abs(_value(model, chosen, count_only) - run.objective) > 0.5
            ):
                proven = False
        return RunOutcome(
            chosen=chosen,
            proven=proven,
            infeasible=run.status == RunStatus.INFEASIBLE,
            bound_ns=run.bound,
            stop=stop_reason(run.stop_reason, ctx),
            message=run.message,
        )
