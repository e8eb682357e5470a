"""MILP encoding of entanglement routing (PuLP; HiGHS by default, CBC selectable).

The candidate-path x width model of :mod:`.encoding` with exact floating-point EXT
coefficients. ``throughput``: one stage, max sum_r weight_r t_r. ``max_min``: stage 1
maximises z <= t_r for every r; stage 2 keeps z >= z* - 1e-9 and maximises the weighted
throughput. Optimality is claimed only when every stage was proved and every usable simple
path was a candidate; otherwise the proof is for the candidate model and said so.
"""

from __future__ import annotations

import time
from typing import Any

from placement.models.entanglement.encoding import (
    CandidateModel,
    nothing_to_route,
)
from placement.models.entanglement.paths import servable_requests
from placement.solver.backends.base import RunStatus
from placement.solver.backends.milp import MILP_SOLVERS
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

CLOSURE_ROUNDS = 3
"""Solves of the model at most: the first, then after each extension by the paths that
could still do better (:meth:`.encoding.CandidateModel.closure`)."""
CLOSURE_SHARE = 0.5
"""Share of the time left that one enumeration of those paths may take."""
FIX_TOLERANCE = 1e-9
"""Slack on the stage-1 value kept in stage 2 of ``max_min`` (absolute, pairs per slot)."""


class MilpEncoding:
    """The exact MILP encoding (``backend='milp'``); reports with source ``milp-<solver>``."""

    def solve(self, instance: Any, ctx: ExactContext) -> ExactOutcome:
        """Build the candidate model, solve its stages, report every improving routing; when
        the model is proved but is not every path, try to prove the optimum over every path
        (at most :data:`CLOSURE_ROUNDS` solves)."""
        started = time.monotonic()
        model = CandidateModel.for_exact_phase(instance, ctx)
        trivial = nothing_to_route(model, ctx)
        if trivial is not None:
            return trivial
        for _ in range(CLOSURE_ROUNDS):
            outcome, value = self._solve_model(instance, model, ctx, started)
            if outcome.stop_reason != StopReason.PROVEN or outcome.proven_optimal or value is None:
                return outcome
            closure = model.closure(value, time.monotonic() + CLOSURE_SHARE * ctx.time_left())
            if closure is None:
                return outcome
            bigger, added = closure
            if bigger is None:
                return ExactOutcome(
                    stop_reason=StopReason.PROVEN,
                    bound=value,
                    proven_optimal=True,
                    proven_solution=outcome.proven_solution,
                    message=f"{model.describe()}; optimal over every simple path: the model "
                    "was proved, and every path a better routing could use (by column "
                    "generation's reduced costs) was enumerated and is in it",
                    tier_bounds={"weighted_throughput": value},
                )
            model = bigger
        return outcome

    def _solve_model(
        self, instance: Any, model: CandidateModel, ctx: ExactContext, started: float
    ) -> tuple[ExactOutcome, float | None]:
        """Solve the stages on ``model``: the outcome, and the proved objective of the last
        stage (None if it was not proved)."""
        import pulp

        name = str(getattr(ctx.options.milp_solver, "value", ctx.options.milp_solver))
        solver = MILP_SOLVERS[name]
        source = f"milp-{name}"
        requests = instance.requests
        prob = pulp.LpProblem("entanglement", pulp.LpMaximize)
        x = [pulp.LpVariable(f"x{i}", cat=pulp.LpBinary) for i in range(len(model.items))]
        t = [pulp.LpVariable(f"t{r}", 0, req.demand) for r, req in enumerate(requests)]
        for g, members in enumerate(model.groups):
            prob += pulp.lpSum(x[i] for i in members) <= 1, f"path{g}"
        for link, row in model.link_rows.items():
            prob += (
                pulp.lpSum(w * x[i] for i, w in row) <= instance.links[link].channels,
                f"l{link}",
            )
        for node, row in model.node_rows.items():
            prob += pulp.lpSum(u * x[i] for i, u in row) <= instance.nodes[node].qubits, f"n{node}"
        for r in range(len(requests)):
            prob += (
                t[r] <= pulp.lpSum(model.items[i].ext * x[i] for i in model.items_of_request(r)),
                f"ext{r}",
            )
        weighted = pulp.lpSum(req.weight * t[r] for r, req in enumerate(requests))

        def start(solution: Any) -> dict[Any, float] | None:
            if solution is None:
                return None
            chosen = model.encode(solution)
            warm: dict[Any, float] = {v: float(c) for v, c in zip(x, chosen, strict=True)}
            for r in range(len(requests)):
                warm[t[r]] = model.counted(chosen, r)
            return warm

        def on_solution(values: dict[Any, float], objective: float) -> None:
            del objective
            ctx.report(model.decode([values.get(v, 0.0) > 0.5 for v in x]), source)

        def run(share: float) -> Any:
            warm = start(ctx.incumbent())
            limit = max(0.0, ctx.time_left() * share)
            result = solver.run(prob, ctx.options, ctx.cancel, limit, warm, on_solution)
            if result.has_solution and result.values:
                chosen = [result.values.get(v, 0.0) > 0.5 for v in x]
                ctx.report(model.decode(chosen), source)
                return result, model.decode(chosen)
            return result, None

        stages_proved = True
        bounds: dict[str, float] = {}
        final = None
        if instance.objective == "max_min":
            z = pulp.LpVariable("z", 0)
            for r in servable_requests(instance):
                prob += z <= t[r], f"fair{r}"
            prob.setObjective(z)
            result, final = run(0.5)
            if result.status != RunStatus.OPTIMAL or result.objective is None:
                return self._outcome(model, result, final, False, {}, 1), None
            bounds["min_throughput"] = float(
                result.bound if result.bound is not None else result.objective
            )
            prob += z >= result.objective - FIX_TOLERANCE, "fix_min"
        prob.setObjective(weighted)
        result, last = run(1.0)
        final = last or final
        stages_proved = result.status == RunStatus.OPTIMAL
        if result.bound is not None:
            bounds["weighted_throughput"] = float(result.bound)
        model_s = time.monotonic() - started
        outcome = self._outcome(model, result, final, stages_proved, bounds, 2, model_s)
        return outcome, (float(result.objective) if stages_proved else None)

    @staticmethod
    def _outcome(
        model: CandidateModel,
        result: Any,
        final: Any,
        proven: bool,
        bounds: dict[str, float],
        stage: int,
        model_s: float = 0.0,
    ) -> ExactOutcome:
        primary = next(iter(bounds.values()), None)
        scope = model.describe()
        if proven and not model.complete:
            return ExactOutcome(
                stop_reason=StopReason.PROVEN,
                bound=model.bound,
                proven_optimal=False,
                proven_solution=final,
                message=f"candidate-path model proved optimal in {model_s:.1f} s ({scope}); "
                "paths outside the model were priced by column generation, not searched "
                "exhaustively"
                + ("; the bound is column generation's LP" if model.bound is not None else ""),
            )
        if proven:
            return ExactOutcome(
                stop_reason=StopReason.PROVEN,
                bound=primary,
                proven_optimal=True,
                proven_solution=final,
                message=scope,
                tier_bounds=bounds,
            )
        stop = (
            result.stop_reason
            if result.stop_reason != StopReason.PROVEN
            else StopReason.GAP_REACHED
        )
        where = f" in stage {stage}" if stage == 1 else ""
        return ExactOutcome(
            stop_reason=stop,
            bound=primary if model.complete else model.bound,
            message=f"{scope}; stopped{where} without a proof ({result.stop_reason.value})",
        )
