"""Heuristics of serving (no solver): the fallback adds instances one move at a time, and the
homogeneous deployment of the best single mixed kind (the usual vLLM-style cluster).

Both route with :func:`.routing.route_fill`. Without a budget a heuristic yields a solution
only when it serves every class (else the checker would refuse it).
"""

from __future__ import annotations

from collections.abc import Iterator

from placement.models.serving.instance import (
    DECODE,
    MIXED,
    PREFILL,
    ServingInstance,
    ServingSolution,
    kinds,
)
from placement.models.serving.routing import (
    counts_cost_milli,
    counts_gpus,
    gpus_fit,
    route_fill,
    served_milli,
)
from placement.solver.options import SolveOptions

MAX_MOVES = 10_000


def _moves(instance: ServingInstance) -> list[dict[int, int]]:
    """One instance of any kind, or a prefill instance with a decode one of the same GPU
    type or any other."""
    ks = kinds(instance)
    out: list[dict[int, int]] = [{k: 1} for k in range(len(ks))]
    pre = [k for k, kind in enumerate(ks) if kind.role == PREFILL]
    dec = [k for k, kind in enumerate(ks) if kind.role == DECODE]
    out.extend({p: 1, d: 1} for p in pre for d in dec)
    return out


def marginal(instance: ServingInstance) -> ServingSolution:
    """Add, while it helps and the GPUs allow, the move that serves the most more per unit
    of what it costs (per GPU with a budget, per cost without), until every class is
    served."""
    total = sum(instance.class_rates_milli)
    counts: dict[int, int] = {}
    current = route_fill(instance, counts)
    served = 0
    moves = _moves(instance)
    for _ in range(MAX_MOVES):
        if served >= total:
            break
        best = None
        for move in moves:
            trial = dict(counts)
            for k, n in move.items():
                trial[k] = trial.get(k, 0) + n
            if not gpus_fit(instance, trial):
                continue
            solution = route_fill(instance, trial)
            gain = served_milli(instance, solution) - served
            if gain <= 0:
                continue
            if instance.maximise_goodput:
                price = counts_gpus(instance, move)
            else:
                price = max(1, counts_cost_milli(instance, move))
            score = (gain / price, -counts_cost_milli(instance, move))
            if best is None or score > best[0]:
                best = (score, trial, solution)
        if best is None:
            break
        _, counts, current = best
        served = served_milli(instance, current)
    return current


def homogeneous(instance: ServingInstance, kind: int) -> ServingSolution:
    """Instances of one kind only: as many as the GPUs allow (budget), or the fewest that
    serve every class (no budget; all the GPUs when none do)."""
    counts = {kind: 0}
    best = route_fill(instance, counts)
    total = sum(instance.class_rates_milli)
    while True:
        trial = {kind: counts[kind] + 1}
        if not gpus_fit(instance, trial):
            return best
        counts = trial
        best = route_fill(instance, counts)
        if served_milli(instance, best) >= total:
            return best


def best_homogeneous(instance: ServingInstance) -> ServingSolution:
    """The best :func:`homogeneous` deployment over the mixed kinds (most served, then
    cheapest)."""
    ks = kinds(instance)
    out = None
    for k, kind in enumerate(ks):
        if kind.role != MIXED:
            continue
        solution = homogeneous(instance, k)
        key = (served_milli(instance, solution), -counts_cost_milli(instance, _counts(solution)))
        if out is None or key > out[0]:
            out = (key, solution)
    return out[1] if out is not None else ServingSolution()


def _counts(solution: ServingSolution) -> dict[int, int]:
    return {d.kind: d.instances for d in solution.deployments}


def _serves_all(instance: ServingInstance, solution: ServingSolution) -> bool:
    return served_milli(instance, solution) >= sum(instance.class_rates_milli)


def greedy_solutions(
    instance: ServingInstance, options: SolveOptions
) -> Iterator[tuple[str, ServingSolution]]:
    """``marginal`` (the fallback), then ``homogeneous-mixed``; without a budget, only those
    that serve every class."""
    del options
    for name, build in (("marginal", marginal), ("homogeneous-mixed", best_homogeneous)):
        solution = build(instance)
        if instance.maximise_goodput or _serves_all(instance, solution):
            yield name, solution
