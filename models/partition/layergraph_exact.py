"""The exact protocol for layer-graph instances (Tarnawski et al.'s problem and its kin).

An instance needs it when :func:`.ideals.needs_layer_graph` holds (convex contiguity,
per-tensor transfers, backward layers, layers limited to some device types, host devices):
the stage models of :mod:`.encoding` do not express those rules. Both exact encodings
(``cpsat``, ``milp``) hand such instances here:

1. the DP over ideals (:mod:`.ideals`) when the ideals are few enough (ORDER contiguity:
   the prefixes of the layer order, always few): its optimum is proved;
2. up to :data:`.ideals_threshold.MAX_THRESHOLD_IDEALS` ideals, the DP within the threshold
   of the best split known (:mod:`.ideals_threshold`; the portfolio's incumbent, or the DP
   over the prefixes of the layer order): its value is the optimum (Inception-v3: 36,596
   ideals, seconds), unless the threshold leaves too many pairs;
3. otherwise the IP (:mod:`.layergraph_ip`, CP-SAT), seeded with the best split known (the
   portfolio's incumbent, or the DP over the prefixes of the layer order, which is a valid
   convex split): first its decision form, "a split strictly better than the incumbent?"
   (refuted: the incumbent is optimal), then, from the better split it found, the
   minimisation: proved when CP-SAT proves it; else its bound and best split.

Every split goes to the portfolio's checker through ``ctx.report``.
"""

from __future__ import annotations

from placement.models.partition.check import objective_ns
from placement.models.partition.cost_model import NS_PER_MS
from placement.models.partition.explain import explain_infeasible
from placement.models.partition.ideals import (
    MAX_IDEALS,
    IdealsResult,
    LayerGraph,
    enumerate_ideals,
    layer_graph,
    layer_graph_applies,
    solve_ideals,
)
from placement.models.partition.ideals_threshold import (
    MAX_THRESHOLD_IDEALS,
    solve_ideals_within,
)
from placement.models.partition.instance import (
    PartitionContiguity,
    PartitionInstance,
    PartitionSolution,
)
from placement.models.partition.layergraph_ip import solve_ip
from placement.solver.cancel import deadline_stop
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

MAX_PREFIXES = 20_000
"""ORDER contiguity: prefixes of the layer order the DP takes (pairs grow as the square)."""


def order_split(instance: PartitionInstance, g: LayerGraph | None = None) -> IdealsResult | None:
    """The best split whose forward sets are ranges of the layer order (the DP over its
    prefixes): exact for ORDER contiguity, a feasible split (and upper bound) for CONVEX and
    NONE. None when the layer-graph methods do not apply or the prefixes are too many."""
    if layer_graph_applies(instance) is not None:
        return None
    g = g or layer_graph(instance)
    ideals = enumerate_ideals(g, MAX_PREFIXES, rule=PartitionContiguity.ORDER)
    if ideals is None:
        return None
    return solve_ideals(g, ideals)


def solve_layer_graph(
    instance: PartitionInstance, ctx: ExactContext, source: str, use_ip: bool = True
) -> ExactOutcome:
    """The protocol of the module docstring; ``use_ip`` False stops after the DP (the MILP
    encoding: the IP is a CP-SAT model)."""
    why = layer_graph_applies(instance)
    if why is not None:
        return ExactOutcome(StopReason.HEURISTIC_ONLY, message=why)
    g = layer_graph(instance)
    rule = instance.workload.contiguity
    limit = MAX_PREFIXES if rule is PartitionContiguity.ORDER else MAX_IDEALS
    many = None
    ideals = enumerate_ideals(g, max(limit, MAX_THRESHOLD_IDEALS))
    if ideals is not None and len(ideals) > limit:
        ideals, many = None, ideals
    if ideals is not None:
        result = solve_ideals(g, ideals)
        if result.solution is None:
            return _infeasible(instance)
        ctx.report(result.solution, f"{source}-ideals-dp", result.objective_ns / NS_PER_MS)
        return ExactOutcome(
            StopReason.PROVEN,
            bound=result.objective_ns / NS_PER_MS,
            proven_optimal=True,
            proven_solution=result.solution,
            message=f"optimum proved by the DP over {len(ideals)} ideals",
            ran="ideals-dp",
        )
    best: PartitionSolution | None = ctx.incumbent()
    upper = None if best is None else objective_ns(instance, best.device_of)
    # The portfolio's greedy phase already gave the order-contiguous split (greedy.py):
    # computed here only without an incumbent (seconds on Inception-v3).
    seed = order_split(instance, g) if best is None else None
    if seed is not None and seed.solution is not None:
        ctx.report(seed.solution, f"{source}-order-dp", None)
        if upper is None or seed.objective_ns < upper:
            best, upper = seed.solution, seed.objective_ns
    if ctx.time_left() <= 0.05:
        return ExactOutcome(StopReason.TIME_LIMIT, message="no time left")
    if many is not None and upper is not None:
        within = solve_ideals_within(
            g, many, upper, stop=lambda: ctx.cancel.cancelled or ctx.time_left() <= 0
        )
        if within.stopped:
            return ExactOutcome(
                StopReason.TIME_LIMIT, message="the DP within the incumbent stopped"
            )
        if within.solution is not None and within.objective_ns is not None:
            ctx.report(within.solution, f"{source}-ideals-within", within.objective_ns / NS_PER_MS)
            return ExactOutcome(
                StopReason.PROVEN,
                bound=within.objective_ns / NS_PER_MS,
                proven_optimal=True,
                proven_solution=within.solution,
                message=(
                    f"optimum proved by the DP over {len(many)} ideals within the incumbent's "
                    f"max-load ({within.states} states, {within.pairs} moves)"
                ),
                ran="ideals-dp",
            )
        # Too many pairs at this threshold (or, unexpectedly, the incumbent outside the
        # DP's splits): the IP decides.

    if not use_ip or rule is PartitionContiguity.ORDER:
        # The IP models chains of ideals (CONVEX) and free sets (NONE), not ranges.
        return ExactOutcome(
            StopReason.SEARCH_EXHAUSTED,
            message=(
                f"more than {limit} ideals for the DP, and no threshold it proves within; the "
                "layer-graph IP is a CP-SAT model of "
                "convex and free splits (the cpsat encoding runs it)"
            ),
        )

    def found(solution: PartitionSolution, bound_ns: int | None) -> None:
        ctx.report(solution, f"{source}-ip", None if bound_ns is None else bound_ns / NS_PER_MS)

    if best is not None and upper is not None:
        # First the decision form: is anything strictly better than the incumbent? Refuted:
        # the incumbent is optimal (a proof, fast with constant loads); else the better split
        # found seeds the minimisation.
        out = solve_ip(g, ctx.options, ctx.cancel, ctx.time_left(), best, found, upper - 1)
        if out.infeasible:
            return ExactOutcome(
                StopReason.PROVEN,
                bound=upper / NS_PER_MS,
                proven_optimal=True,
                proven_solution=best,
                message="optimum proved by the layer-graph IP (CP-SAT): no split is better",
            )
        if out.solution is None or out.objective_ns is None:
            return ExactOutcome(
                deadline_stop(out.stop, ctx.cancel),
                message=out.message or "the layer-graph IP stopped before a proof",
            )
        ctx.report(out.solution, f"{source}-ip", None)
        if out.objective_ns < upper:
            best, upper = out.solution, out.objective_ns
        if ctx.time_left() <= 0.05:
            return ExactOutcome(StopReason.TIME_LIMIT, message="no time left")
    out = solve_ip(g, ctx.options, ctx.cancel, ctx.time_left(), best, found)
    if out.infeasible:
        if best is None:
            return _infeasible(instance)
        # The cap T <= the incumbent's value admits the incumbent itself: not reachable.
        return ExactOutcome(StopReason.SEARCH_EXHAUSTED, message="the IP refused the incumbent")
    if out.solution is not None:
        ctx.report(out.solution, f"{source}-ip", None)
    if out.proven and out.objective_ns is not None:
        return ExactOutcome(
            StopReason.PROVEN,
            bound=out.objective_ns / NS_PER_MS,
            proven_optimal=True,
            proven_solution=out.solution,
            message="optimum proved by the layer-graph IP (CP-SAT)",
        )
    bound = None
    if out.bound_ns is not None:
        bound = out.bound_ns if upper is None else min(out.bound_ns, upper)
    return ExactOutcome(
        deadline_stop(out.stop, ctx.cancel),
        bound=None if bound is None else bound / NS_PER_MS,
        message=out.message or "the layer-graph IP stopped before a proof",
    )


def _infeasible(instance: PartitionInstance) -> ExactOutcome:
    shortfalls = explain_infeasible(instance)
    text = "; ".join(s["message"] for s in shortfalls[:5]) or "no split fits the devices"
    return ExactOutcome(StopReason.PROVEN, proven_infeasible=True, message=f"no split fits: {text}")
