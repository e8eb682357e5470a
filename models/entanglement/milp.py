"""MILP encoding of entanglement routing (PuLP; HiGHS by default, CBC selectable).

The candidate-path x width model of :mod:`.encoding` with exact floating-point EXT
coefficients. ``throughput``: one stage, max sum_r weight_r t_r. ``max_min``: stage 1
maximises z <= t_r for every r; stage 2 keeps z >= z* - 1e-9 and maximises the weighted
throughput. Optimality is claimed only when every stage was proved and every usable simple
path was a candidate; otherwise the proof is for the candidate model and said so.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import time
from typing import Any

from placement.models.entanglement.encoding import (
    CandidateModel,
    nothing_to_route,
    residual_instance,
)
from placement.models.entanglement.instance import EntanglementSolution, RoutedPath
from placement.models.entanglement.paths import servable_requests
from placement.solver.backends.base import RunStatus
from placement.solver.backends.milp import milp_solver
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

REROUTE_REQUESTS = 4
"""Requests the re-routing search frees at a time."""
REROUTE_SOLVE_S = 2.0
"""Time limit of one re-routing (column generation and MILP on the residual network)."""
REROUTE_MIN_S = 0.3
"""The re-routing search stops with less time than this left."""
REROUTE_ENUMERATED = 256
"""Up to this many choices of requests to free, the re-routing search draws among those not
yet settled (and stops when none is left); above, it draws at random."""
CLOSURE_ROUNDS = 3
"""Solves of the model at most: the first, then after each extension by the paths that
could still do better (:meth:`.encoding.CandidateModel.closure`)."""
CLOSURE_SHARE = 0.5
"""Share of the time left that one enumeration of those paths may take."""
FIX_TOLERANCE = 1e-9
"""Slack on the stage-1 value kept in stage 2 of ``max_min`` (absolute, pairs per slot)."""


def _problem(instance: Any, model: CandidateModel) -> tuple[Any, list, list, Any, Any]:
    """The PuLP model of ``model``: (problem, x per item, t per request, the weighted
    throughput, a function giving a routing's warm start)."""
    # PuLP is imported when a MILP is built, not with the family (start-up time).
    import pulp

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

    return prob, x, t, weighted, start


def solve_throughput(
    instance: Any,
    model: CandidateModel,
    options: Any,
    cancel: Any,
    limit_s: float,
    warm: EntanglementSolution | None = None,
) -> tuple[EntanglementSolution | None, Any]:
    """One MILP solve of ``model`` for the weighted throughput, warm-started from ``warm``:
    (the routing found or None, the backend's run result)."""
    _, solver = milp_solver(options)
    prob, x, _, weighted, start = _problem(instance, model)
    prob.setObjective(weighted)
    result = solver.run(prob, options, cancel, limit_s, start(warm))
    if result.has_solution and result.values:
        return model.decode([result.values.get(v, 0.0) > 0.5 for v in x]), result
    return None, result


class MilpEncoding:
    """The exact MILP encoding (``backend='milp'``); reports with source ``milp-<solver>``."""

    def solve(self, instance: Any, ctx: ExactContext) -> ExactOutcome:
        """Build the candidate model, solve its stages, report every improving routing; when
        the model is proved but is not every path, try to prove the optimum over every path
        (at most :data:`CLOSURE_ROUNDS` solves). The outcome's ``phase_times_s`` has column
        generation (``colgen``, with the closure's pricing) and the re-routing search
        (``reroute``); the portfolio times the rest under the MILP solver's name."""
        phases: dict[str, float] = {}
        outcome = self._solve(instance, ctx, phases)
        return dataclasses.replace(outcome, phase_times_s=phases)

    def _solve(self, instance: Any, ctx: ExactContext, phases: dict[str, float]) -> ExactOutcome:
        started = time.monotonic()
        model = CandidateModel.for_exact_phase(instance, ctx)
        if model.run is not None:
            phases["colgen"] = time.monotonic() - started
        if model.bound is not None:
            ctx.update_bound(model.bound)
        trivial = nothing_to_route(model, ctx)
        if trivial is not None:
            return trivial
        for _ in range(CLOSURE_ROUNDS):
            outcome, value = self._solve_model(instance, model, ctx, started)
            if outcome.stop_reason != StopReason.PROVEN or outcome.proven_optimal or value is None:
                return outcome
            priced = time.monotonic()
            closure = model.closure(value, time.monotonic() + CLOSURE_SHARE * ctx.time_left())
            phases["colgen"] = phases.get("colgen", 0.0) + time.monotonic() - priced
            if closure is None:
                if model.open_because:
                    outcome = dataclasses.replace(
                        outcome,
                        message=f"{outcome.message}; the gap to the bound stays open: "
                        f"{model.open_because}",
                    )
                rerouted = time.monotonic()
                tries, kept, settled = self._reroute(instance, ctx)
                if tries:
                    phases["reroute"] = time.monotonic() - rerouted
                    group = min(REROUTE_REQUESTS, len(instance.requests))
                    outcome = dataclasses.replace(
                        outcome,
                        message=f"{outcome.message}; then {tries} re-routings of {group} "
                        f"requests in the residual network, {kept} of them better"
                        + (
                            f"; every choice of {group} requests re-routed to a proof "
                            "without improvement"
                            if settled
                            else ""
                        ),
                    )
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
        # PuLP is imported when a MILP is built, not with the family (start-up time).
        import pulp

        name, solver = milp_solver(ctx.options)
        source = f"milp-{name}"
        prob, x, t, weighted, start = _problem(instance, model)

        def on_solution(values: dict[Any, float], objective: float) -> None:
            del objective
            # With column generation's whole-instance bound (known since the model was built).
            ctx.report(model.decode([values.get(v, 0.0) > 0.5 for v in x]), source, model.bound)

        def run(share: float, primary: bool) -> Any:
            warm = start(ctx.incumbent())
            limit = max(0.0, ctx.time_left() * share)
            # HiGHS's dual bound is one on the whole instance only when the model has every
            # path and its objective is the primary one (``primary``).
            whole = model.complete and primary
            result = solver.run(
                prob,
                ctx.options,
                ctx.cancel,
                limit,
                warm,
                on_solution,
                on_bound=ctx.update_bound if whole else None,
            )
            if result.has_solution and result.values:
                chosen = [result.values.get(v, 0.0) > 0.5 for v in x]
                ctx.report(model.decode(chosen), source, model.bound)
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
            result, final = run(0.5, primary=True)
            if result.status != RunStatus.OPTIMAL or result.objective is None:
                return self._outcome(model, result, final, False, {}, 1), None
            bounds["min_throughput"] = float(
                result.bound if result.bound is not None else result.objective
            )
            prob += z >= result.objective - FIX_TOLERANCE, "fix_min"
        prob.setObjective(weighted)
        result, last = run(1.0, primary=instance.objective != "max_min")
        final = last or final
        stages_proved = result.status == RunStatus.OPTIMAL
        if result.bound is not None:
            bounds["weighted_throughput"] = float(result.bound)
        model_s = time.monotonic() - started
        outcome = self._outcome(model, result, final, stages_proved, bounds, 2, model_s)
        return outcome, (float(result.objective) if stages_proved else None)

    @staticmethod
    def _reroute(instance: Any, ctx: ExactContext) -> tuple[int, int, bool]:
        """Large-neighbourhood search in the time left, once the candidate model is proved
        but the proof does not cover the whole instance (``throughput`` only): free
        :data:`REROUTE_REQUESTS` requests at random, route them again in the residual
        network (column generation and the MILP on that sub-instance, at most
        :data:`REROUTE_SOLVE_S` each), and report the whole routing (the portfolio's checker
        keeps it if it is better).

        A choice of requests whose sub-instance was solved to a proof (converged column
        generation, proved MILP) gives the same answer again on the same incumbent, so it
        is not retried until the incumbent improves; when every choice is settled (few
        requests: with at most 4 there is one, the whole instance) the search ends before
        the deadline. Returns (re-routings tried, re-routings kept, every choice settled)."""
        tries = kept_count = 0
        if instance.objective != "throughput" or not instance.requests:
            return tries, kept_count, False
        name, _ = milp_solver(ctx.options)
        rng = random.Random(ctx.options.seed)
        n = len(instance.requests)
        group = min(REROUTE_REQUESTS, n)
        choices = (
            list(itertools.combinations(range(n), group))
            if math.comb(n, group) <= REROUTE_ENUMERATED
            else None
        )
        settled: set[tuple[int, ...]] = set()
        while ctx.time_left() > REROUTE_MIN_S and not ctx.cancel.cancelled:
            best = ctx.incumbent()
            if best is None:
                break
            if choices is not None:
                open_choices = [c for c in choices if c not in settled]
                if not open_choices:
                    return tries, kept_count, True
                freed = list(rng.choice(open_choices))
            else:
                freed = sorted(rng.sample(range(n), group))
            tries += 1
            kept, sub, mine = residual_instance(instance, best, freed)
            limit = min(REROUTE_SOLVE_S, ctx.time_left())
            model = CandidateModel.build(sub, mine, limit / 3, ctx.cancel)
            new, run = solve_throughput(sub, model, ctx.options, ctx.cancel, limit, mine)
            improved = False
            if new is not None:
                paths = kept + [RoutedPath(freed[p.request], p.nodes, p.width) for p in new.paths]
                routing = EntanglementSolution(tuple(paths))
                improved = ctx.report(routing, f"milp-{name}-reroute")
                kept_count += improved
            if improved:
                settled.clear()
            elif (
                run.status == RunStatus.OPTIMAL
                and run.stop_reason == StopReason.PROVEN
                and (model.complete or (model.run is not None and model.run.converged))
            ):
                settled.add(tuple(freed))
        return tries, kept_count, False

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
