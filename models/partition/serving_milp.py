"""Exact layer placement on a Helix-style cluster: a boundary-flow MILP aggregated by node type.

Helix's own MILP (Mei et al., ASPLOS 2025; Thesys-lab/Helix-ASPLOS25, class ``ILPLayout``
of its layout synthesizer, and ``ilp_model.lp`` of the data set) gives every node a start variable, one binary per
layer count, one binary per directed link that switches it on only when the two ranges meet
(big-M rows ``start_j - end_i <= M (1 - switch)`` both ways) and a flow per link. Its LP
relaxation lets every switch be fractional, hence the bound of 78,062 tokens/s Gurobi could
not close in 600 s against 1,289.56.

This model works on intervals instead of starts. A unit of flow crosses every layer boundary
exactly once, leaving a node whose range ends there and entering one whose range starts
there. So with ``y[c, s, k]`` the number of nodes of class ``c`` (same type) holding
``[s, s + k)`` and ``f[c, s, k]`` the flow through them::

    max   sum_{c, k} f[c, 0, k]
    s.t.  f[c, s, k] <= T(c, k) * y[c, s, k]                       (node throughput)
          sum_{s, k} y[c, s, k] <= n_c                              (nodes of class c)
          sum_{c, s + k = b} f[c, s, k] = sum_{c, k} f[c, b, k]     (each boundary 0 < b < L)
          y integer >= 0, f >= 0

Nodes of one type are interchangeable in it, so it has none of the symmetry of the per-node
model. It leaves out the links, so its optimum is an upper bound on the max flow of every
placement; the placement it returns is then scored by :func:`.serving_flow.score_placement`
(the one evaluator), which is the lower bound. When every pair of nodes is linked, every node
to source and sink, and no link is narrower than the smaller of its two ends' best
throughputs (true of cluster24: links carry 61,035 tokens/s, the best node 23,834), a
boundary flow is always routable, so the two coincide and the MILP's proof is a proof for
the problem the file describes; otherwise the gap between them is reported as it is.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from placement.models.partition.instance import SINK, SOURCE, PartitionInstance, PartitionSolution
from placement.models.partition.serving_cluster import HelixCluster, cluster_of
from placement.models.partition.serving_cover_bound import cover_bound
from placement.models.partition.serving_flow import score_placement
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel
from placement.solver.cancel import CancellationToken
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason


@dataclass(frozen=True)
class FlowSolve:
    """A solve's outcome: the placement, its evaluated flow, the proven bound, the time."""

    placement: dict[int, tuple[int, int]]
    tokens_per_s: float
    bound: float
    proven: bool
    seconds: float
    links_never_bind: bool

    @property
    def gap(self) -> float:
        """(bound - value) / value; infinity with no flow."""
        return (
            (self.bound - self.tokens_per_s) / self.tokens_per_s
            if self.tokens_per_s
            else (0.0 if self.bound <= 0 else float("inf"))
        )


def links_never_bind(cluster: HelixCluster) -> bool:
    """True when every boundary flow is routable on the links (see the module docstring)."""
    n = len(cluster.nodes)
    best = [max(cluster.throughput[node.type]) for node in cluster.nodes]
    for v in range(n):
        if cluster.links.get((SOURCE, v), 0.0) < best[v]:
            return False
        if cluster.links.get((v, SINK), 0.0) < best[v]:
            return False
        for u in range(n):
            if u != v and cluster.links.get((u, v), 0.0) < min(best[u], best[v]):
                return False
    return True


def _round(
    cluster: HelixCluster,
    cap: float,
    time_limit_s: float,
    mip_rel_gap: float,
    cover: bool,
    floor: float,
    cancel: CancellationToken | None = None,
) -> tuple[dict[int, tuple[int, int]], float, bool]:
    """One MILP with node throughputs capped at ``cap``: (placement, dual bound, optimal);
    ``cancel`` stops HiGHS early (its dual bound is still valid)."""
    L = cluster.num_layers
    classes: dict[str, list[int]] = {}
    for i, node in enumerate(cluster.nodes):
        classes.setdefault(node.type, []).append(i)

    milp = HighsModel(mip_rel_gap=float(mip_rel_gap))
    # columns: (class, s, k) -> (y index, f index)
    cols: list[tuple[str, int, int]] = []
    costs: list[float] = []
    lower: list[float] = []
    upper: list[float] = []
    integer: list[int] = []
    for c in classes:
        table = cluster.throughput[c]
        for k in range(1, len(table) + 1):
            for s in range(0, L - k + 1):
                cols.append((c, s, k))
    m = len(cols)
    # y columns 0..m-1, f columns m..2m-1
    for c, _s, _k in cols:
        costs.append(0.0)
        lower.append(0.0)
        upper.append(float(len(classes[c])))
        integer.append(len(costs) - 1)
    for c, s, k in cols:
        costs.append(1.0 if s == 0 else 0.0)
        lower.append(0.0)
        upper.append(float(min(cluster.throughput[c][k - 1], cap) * len(classes[c])))
    inf = math.inf
    milp.add_columns(np.array(costs), np.array(lower), np.array(upper))
    milp.set_integer(np.array(integer))
    milp.maximize()
    for j, (c, _s, k) in enumerate(cols):  # f - T y <= 0
        milp.add_row(-inf, 0.0, [m + j, j], [1.0, -min(cluster.throughput[c][k - 1], cap)])
    for c, members in classes.items():
        idx = [j for j, col in enumerate(cols) if col[0] == c]
        milp.add_row(-inf, float(len(members)), idx, [1.0] * len(idx))
    ends: dict[int, list[int]] = {}
    starts: dict[int, list[int]] = {}
    for j, (_c, s, k) in enumerate(cols):
        starts.setdefault(s, []).append(m + j)
        ends.setdefault(s + k, []).append(m + j)
    for b in range(1, L):
        idx = ends.get(b, []) + starts.get(b, [])
        val = [1.0] * len(ends.get(b, [])) + [-1.0] * len(starts.get(b, []))
        if idx:
            milp.add_row(0.0, 0.0, idx, val)

    # Any positive flow needs every layer held by some node. Implied by the integer model
    # only through F > 0; stated, it cuts off the fractional covers the LP relaxation uses
    # (a tenth of an A100 holding one layer), which is what makes the bound close.
    if cover:
        for layer in range(L):
            idx = [j for j, (_c, s, k) in enumerate(cols) if s <= layer < s + k]
            milp.add_row(1.0, inf, idx, [1.0] * len(idx))

    if floor > 0:  # only placements better than the incumbent are of interest
        idx = [m + j for j, col in enumerate(cols) if col[1] == 0]
        milp.add_row(floor * (1 - 1e-9), inf, idx, [1.0] * len(idx))
    run = milp.run(time_limit_s, cancel=cancel, bounded=True)
    if run.abandoned:
        raise RuntimeError("HiGHS overran its time limit on the Helix placement MILP")
    if run.status == RunStatus.INFEASIBLE:
        return {}, floor, True
    # No dual bound (stopped before HiGHS had one): nothing is proved below the cap.
    bound = math.inf if run.bound is None else run.bound
    values = [] if run.x is None else list(run.x)
    placement: dict[int, tuple[int, int]] = {}
    free = {c: list(members) for c, members in classes.items()}
    for j, (c, s, k) in enumerate(cols):
        if not values:
            break
        count = round(values[j])
        if count and values[m + j] > 1e-9:
            for _ in range(count):
                placement[free[c].pop(0)] = (s, k)
    return placement, bound, run.solved


def relaxation_bound(cluster: HelixCluster) -> float:
    """The largest F with ``L * F <= sum_i max_k k * min(T_i(k), F)``: an upper bound.

    Every unit of flow passes one node per layer, so the nodes' layer-throughput adds up to
    ``L * F``; a node holding ``k`` layers gives at most ``k * T(k)`` to it, and never more
    than ``k * F`` (no node carries more than the whole flow).
    """

    def supply(f: float) -> float:
        return sum(
            max(k * min(t, f) for k, t in enumerate(cluster.throughput[n.type], start=1))
            for n in cluster.nodes
        )

    L = cluster.num_layers
    # supply is concave and piecewise linear with its kinks at the table values, so
    # supply(f) - L f is >= 0 exactly on [0, F]: find the last kink where it holds, then the
    # root on the next piece (exact, where bisection would stall on the stretches where the
    # two sides are equal).
    kinks = sorted({t for n in cluster.nodes for t in cluster.throughput[n.type]})
    last = 0.0
    for p in kinks:
        if supply(p) - L * p >= -1e-12 * L * p:
            last = p
        else:
            slope = (supply(p) - supply(last)) / (p - last) - L
            return (last + (supply(last) - L * last) / -slope) * (1 + 1e-12)
    return max(last, supply(last) / L) * (1 + 1e-12)


def solve_placement(
    cluster: HelixCluster,
    time_limit_s: float = 60.0,
    target_gap: float = 1e-6,
    round_s: float = 10.0,
    cover: bool = True,
    start: dict[int, tuple[int, int]] | None = None,
    cancel: CancellationToken | None = None,
    on_round: Callable[[dict[int, tuple[int, int]], float], None] | None = None,
) -> FlowSolve:
    """Maximise the max flow over all placements of ``cluster`` (see the module docstring).

    Rounds of the MILP with every node throughput capped at the current upper bound ``U``
    (first :func:`relaxation_bound`): a node never carries more than the whole flow, so for
    ``U >= F*`` the capped model has the same optimum ``F*``, and its dual bound is the next,
    tighter ``U``. Rounds stop at ``target_gap``, at the time limit or on ``cancel``.
    ``start`` is an incumbent placement (e.g. Helix's own) that the search must beat;
    ``on_round(placement, upper)`` is told each round's placement (empty when it found none
    better) and the upper bound after it.
    """
    began = time.perf_counter()
    deadline = began + time_limit_s
    best: dict[int, tuple[int, int]] = dict(start or {})
    best_value = score_placement(cluster, best).tokens_per_s if best else 0.0
    upper = relaxation_bound(cluster)
    proven = False
    while True:
        left = deadline - time.perf_counter()
        stop = cancel is not None and cancel.cancelled
        if (
            stop
            or left <= 0.5
            or (best_value > 0 and (upper - best_value) <= target_gap * best_value)
        ):
            proven = best_value > 0 and (upper - best_value) <= target_gap * best_value
            break
        placement, bound, optimal = _round(
            cluster, upper, min(round_s, left), 1e-6, cover, best_value, cancel
        )
        if placement:
            value = score_placement(cluster, placement).tokens_per_s
            if value > best_value:
                best, best_value = placement, value
        upper = min(upper, max(bound, best_value))
        if on_round is not None:
            on_round(placement, upper)
        if optimal:
            upper = min(upper, max(best_value, bound))
            proven = True
            break
    score = score_placement(cluster, best)
    if score.errors:  # the evaluator is independent: a MILP decode bug must not pass
        raise RuntimeError("placement MILP produced an infeasible placement: " + score.errors[0])
    never_bind = links_never_bind(cluster)
    return FlowSolve(
        placement=best,
        tokens_per_s=score.tokens_per_s,
        bound=upper,
        proven=proven and never_bind,
        seconds=time.perf_counter() - began,
        links_never_bind=never_bind,
    )


# ----------------------------------------------------------------------------- the family


def ranges_solution(placement: dict[int, tuple[int, int]]) -> PartitionSolution:
    """A placement (node -> (first layer, count)) as the family's solution."""
    return PartitionSolution((), tuple((d, s, k) for d, (s, k) in sorted(placement.items())))


def solution_placement(solution: PartitionSolution | None) -> dict[int, tuple[int, int]]:
    """The family's solution as a placement (node -> (first layer, count))."""
    return {} if solution is None else {d: (s, k) for d, s, k in solution.ranges}


def solve_flow(instance: PartitionInstance, ctx: ExactContext, source: str) -> ExactOutcome:
    """The exact encoding's LLM_SERVING_FLOW path: the rounds of :func:`solve_placement`
    under the solve's deadline and cancellation, each improving placement reported on
    ``ctx`` (the family's checker scores it), each round's upper bound reported as a bound.

    The bound: the MILP leaves out the links, so its dual bound bounds the max flow of every
    placement under Helix's edge rule whatever the links; it is reported as such. Under the
    partial-inference rule a flow may enter a node inside its range, which the boundary
    model does not describe, so no MILP bound is reported there (the family's quick bound,
    :func:`relaxation_bound`, holds under both rules). Optimality follows when the checked
    value meets the bound -- with every link wide enough (:func:`links_never_bind`) the MILP's
    optimum is routable and it does. The MILP gets 70 % of the time left; when its bound stays
    above the placement, the configuration-LP cover bound
    (:func:`.serving_cover_bound.cover_bound`, Helix's edge rule) uses the rest.
    """
    cluster = cluster_of(instance)
    partial = cluster.partial

    def on_round(placement: dict[int, tuple[int, int]], upper: float) -> None:
        bound = None if partial else upper
        if placement:
            ctx.report(ranges_solution(placement), source, bound)
        elif bound is not None:
            ctx.update_bound(bound)

    # The MILP first (it proves most instances in seconds); the configuration-LP cover bound
    # in the time it leaves when its bound stays above the placement.
    milp_s = 0.7 * max(0.0, ctx.time_left())
    result = solve_placement(
        cluster,
        time_limit_s=milp_s,
        round_s=max(1.0, milp_s),
        start=solution_placement(ctx.incumbent()),
        cancel=ctx.cancel,
        on_round=on_round,
    )
    if result.placement:
        ctx.report(ranges_solution(result.placement), source, None if partial else result.bound)
    gap_closed = not partial and result.bound - result.tokens_per_s <= 1e-6 * max(
        1.0, result.tokens_per_s
    )
    rule = "partial-inference rule: no MILP bound" if partial else f"bound {result.bound:.6g}"
    cover = None
    if not gap_closed and not partial and not ctx.cancel.cancelled and ctx.time_left() > 0.5:
        # only unproven flow solves need the cover bound (Helix's edge rule)
        upper = min(result.bound, relaxation_bound(cluster))
        cover = cover_bound(cluster, result.tokens_per_s, upper, ctx.time_left() - 0.25)
        if cover is not None:
            ctx.update_bound(cover)
            rule += f"; cover bound (configuration LP) {cover:.6g}"
    if gap_closed:
        return ExactOutcome(
            StopReason.PROVEN,
            bound=result.bound,
            proven_optimal=True,
            proven_solution=ranges_solution(result.placement),
            message=f"max flow {result.tokens_per_s:.6g} tokens/s proved optimal by the "
            "boundary-flow MILP (HiGHS)",
        )
    if ctx.cancel.cancelled:
        stop = StopReason.CANCELLED
    elif ctx.time_left() <= 0.5:
        stop = StopReason.TIME_LIMIT
    else:
        stop = StopReason.SEARCH_EXHAUSTED
    bounds = [b for b in (None if partial else result.bound, cover) if b is not None]
    return ExactOutcome(
        stop,
        bound=min(bounds) if bounds else None,
        message=f"boundary-flow MILP (HiGHS): {result.tokens_per_s:.6g} tokens/s, {rule}"
        + ("" if result.links_never_bind else "; links may bind"),
    )
