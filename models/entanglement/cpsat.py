"""CP-SAT encoding of entanglement routing.

The candidate-path x width model of :mod:`.encoding` with integer coefficients: EXT and
demands in units of 1/SCALE pairs (rounded down), weights in thousandths (rounded). CP-SAT
proves the optimum of that integer model; the bound it implies for the real objective
carries the rounding slack (see :func:`real_bound`), so this encoding never claims
optimality by itself: use the MILP for proofs.
"""

from __future__ import annotations

import math
from typing import Any

from placement.models.entanglement.encoding import (
    CandidateModel,
    nothing_to_route,
)
from placement.models.entanglement.paths import servable_requests
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

SCALE = 1_000_000
"""Integer units per expected pair."""
WEIGHT_SCALE = 1000
"""Integer units per unit of request weight."""


def real_bound(
    scaled_bound: float, weights: list[float], scaled_weights: list[int], groups: list[int]
) -> float:
    """A valid bound on the weighted throughput from CP-SAT's bound on its integer objective.

    For any routing, SCALE * min(D_r, sum EXT x) <= T_r + m_r + 1 where T_r is the best
    integer throughput the model allows and m_r the request's candidate paths (each rounded
    term loses < 1 unit, and the rounded demand < 1 more); and w_r <= rho W_r / WEIGHT_SCALE
    with rho = max_r WEIGHT_SCALE w_r / W_r.
    """
    rho = max(
        (WEIGHT_SCALE * w / sw for w, sw in zip(weights, scaled_weights, strict=True)), default=1.0
    )
    slack = sum(sw * (m + 1) for sw, m in zip(scaled_weights, groups, strict=True))
    return rho * (scaled_bound + slack) / (WEIGHT_SCALE * SCALE)


class CpSatEncoding:
    """The exact CP-SAT encoding (``backend='cpsat'``); reports with source ``cpsat``."""

    def solve(self, instance: Any, ctx: ExactContext) -> ExactOutcome:
        """Build the integer candidate model, solve its stages, report improving routings."""
        # OR-Tools loads a large native library: only when a CP-SAT model is built.
        from ortools.sat.python import cp_model

        model = CandidateModel.for_exact_phase(instance, ctx)
        if model.bound is not None:
            ctx.update_bound(model.bound)
        trivial = nothing_to_route(model, ctx)
        if trivial is not None:
            return trivial
        requests = instance.requests
        cpm = cp_model.CpModel()
        x = [cpm.new_bool_var(f"x{i}") for i in range(len(model.items))]
        value = [math.floor(SCALE * it.ext) for it in model.items]
        t = []
        tops = []
        for r, req in enumerate(requests):
            top = sum(value[i] for i in model.items_of_request(r))
            if req.demand is not None:
                top = min(top, math.floor(SCALE * req.demand))
            tops.append(top)
            t.append(cpm.new_int_var(0, top, f"t{r}"))
            cpm.add(t[r] <= sum(value[i] * x[i] for i in model.items_of_request(r)))
        for members in model.groups:
            cpm.add_at_most_one(x[i] for i in members)
        for link, row in model.link_rows.items():
            cpm.add(sum(w * x[i] for i, w in row) <= instance.links[link].channels)
        for node, row in model.node_rows.items():
            cpm.add(sum(u * x[i] for i, u in row) <= instance.nodes[node].qubits)
        weights = [req.weight for req in requests]
        scaled_weights = [max(1, round(WEIGHT_SCALE * w)) for w in weights]
        groups = [len(g) for g in model.groups_of_request]

        def hint() -> None:
            cpm.clear_hints()
            incumbent = ctx.incumbent()
            if incumbent is None:
                return
            chosen = model.encode(incumbent)
            for var, c in zip(x, chosen, strict=True):
                cpm.add_hint(var, c)

        def on_solution(callback: Any) -> None:
            # With column generation's whole-instance bound (known since the model was built).
            ctx.report(model.decode([bool(callback.value(v)) for v in x]), "cpsat", model.bound)

        def run(share: float) -> Any:
            hint()
            limit = max(0.0, ctx.time_left() * share)
            result = CpSat.run(cpm, ctx.options, ctx.cancel, limit, on_solution)
            if result.has_solution:
                solver = result.solver  # type: ignore[attr-defined]
                ctx.report(model.decode([bool(solver.value(v)) for v in x]), "cpsat", model.bound)
            return result

        stage = 2
        if instance.objective == "max_min":
            z = cpm.new_int_var(0, max(tops, default=0), "z")
            for r in servable_requests(instance):
                cpm.add(z <= t[r])
            cpm.maximize(z)
            result = run(0.5)
            if result.status != RunStatus.OPTIMAL:
                return self._outcome(model, result, model.bound, stage=1)
            value_z = int(round(result.objective))
            bound = (value_z + max(groups, default=0) + 1) / SCALE
            cpm.add(z >= value_z)
        cpm.maximize(sum(sw * tr for sw, tr in zip(scaled_weights, t, strict=True)))
        result = run(1.0)
        if instance.objective != "max_min":
            bound = (
                real_bound(result.bound, weights, scaled_weights, groups)
                if result.bound is not None
                else None
            )
        if not model.complete:
            bound = model.bound
        return self._outcome(model, result, bound, stage)

    @staticmethod
    def _outcome(
        model: CandidateModel, result: Any, bound: float | None, stage: int
    ) -> ExactOutcome:
        scope = model.describe()
        if result.status == RunStatus.OPTIMAL:
            return ExactOutcome(
                stop_reason=StopReason.PROVEN,
                bound=bound,
                message=f"CP-SAT proved its integer model ({scope}); the real objective is "
                f"bounded up to rounding",
            )
        stop = (
            result.stop_reason
            if result.stop_reason != StopReason.PROVEN
            else StopReason.GAP_REACHED
        )
        where = " in stage 1" if stage == 1 else ""
        return ExactOutcome(
            stop_reason=stop,
            bound=bound,
            message=f"{scope}; CP-SAT stopped{where} without a proof ({result.stop_reason.value})",
        )
