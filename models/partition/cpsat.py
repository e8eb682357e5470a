"""CP-SAT encoding of model partitioning: the stage-path model of :mod:`.encoding`.

Stage costs are integer nanoseconds, so CP-SAT's integer objective is exact. The bottleneck
is ``T`` with ``T >= cost_k`` enforced by ``z_k`` (the MILP's per-position rows made CP-SAT
slower: on the Helix-like instance it no longer proved the optimum within 60 s).
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
from placement.models.partition.instance import NS_PER_MS
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.cancel import deadline_token
from placement.solver.family import ExactContext
from placement.solver.result import StopReason


def build_cpsat(model: StageModel, count_only: bool = False) -> tuple[Any, list[Any], Any]:
    """The CP-SAT model: (model, stage variables, objective variable or None); with
    ``count_only`` the objective is the number of stages."""
    # ortools loads in 0.85 s: only when a model is built (not when the DP proves the optimum)
    from ortools.sat.python import cp_model

    t = model.tables
    cpm = cp_model.CpModel()
    z = [cpm.new_bool_var("") for _ in range(model.size)]
    starts_at, ends_at = model.stages_by_position()
    total = cp_model.LinearExpr.sum
    cpm.add(total([z[k] for k in starts_at[0]]) == 1)
    for p in range(1, t.n):
        ins, outs = [z[k] for k in ends_at[p]], [z[k] for k in starts_at[p]]
        cpm.add(
            cp_model.LinearExpr.weighted_sum(ins + outs, [1] * len(ins) + [-1] * len(outs)) == 0
        )
    for c, count in enumerate(model.counts):
        members = np.flatnonzero(model.cls == c)
        if len(members) > count:
            cpm.add(total([z[int(k)] for k in members]) <= count)
    limit = t.instance.workload.max_stages
    if limit is not None and model.size > limit:
        cpm.add(total(z) <= limit)
    cost = [int(v) for v in model.cost]
    if count_only:
        cpm.minimize(total(z))
        return cpm, z, None
    if t.bottleneck:
        top = cpm.new_int_var(0, max(cost), "bottleneck")
        for k in range(model.size):
            if cost[k] > 0:
                cpm.add(top >= cost[k]).only_enforce_if(z[k])
        cpm.minimize(top)
        return cpm, z, top
    cpm.minimize(cp_model.LinearExpr.weighted_sum(z, cost))
    return cpm, z, None


class CpSatEncoding(StageEncoding):
    """The exact CP-SAT encoding (``backend='cpsat'``)."""

    source = "cpsat"

    def _run(
        self,
        model: StageModel,
        ctx: ExactContext,
        hint: np.ndarray | None,
        count_only: bool,
    ) -> RunOutcome:
        cpm, z, _ = build_cpsat(model, count_only)
        if hint is not None:
            for var, value in zip(z, hint, strict=True):
                cpm.add_hint(var, bool(value))
        n_vars = len(z)

        def on_solution(callback: Any) -> None:
            """Report each CP-SAT solution as an incumbent, with the search's bound."""
            values = np.array(list(callback.response_proto.solution)[:n_vars], dtype=np.int64)
            bound = None
            if model.costs_exact:
                bound = np.ceil(float(callback.best_objective_bound) - 1e-6) / NS_PER_MS
            ctx.report(model.decode(values > 0), "cpsat", bound)

        # The time limit is taken after building: building counts against the deadline.
        with deadline_token(ctx.cancel, ctx.time_left()) as token:
            run = CpSat.run(cpm, ctx.options, token, ctx.time_left(), on_solution)
        chosen = None
        if run.has_solution:
            solver = run.solver  # type: ignore[attr-defined]
            chosen = np.array([solver.boolean_value(v) for v in z], dtype=bool)
        return RunOutcome(
            chosen=chosen,
            proven=run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN,
            infeasible=run.status == RunStatus.INFEASIBLE,
            bound_ns=run.bound,
            stop=stop_reason(run.stop_reason, ctx),
            message=run.message,
        )
