"""The exact re-optimization of running work: four to six lexicographic tiers on one model.

An instance with running jobs (or queues) is a re-optimization (``GpuInstance.reopt``): its
checker ranks solutions by ``placed_gpu_weighted`` (max), ``queue_priority_gpu`` (max; only
when a queue has a priority), ``placed_cpu_jobs`` (max; only when some job asks no GPU),
``disruption_cost`` (min), ``comm_cost`` (min) and ``fragmentation`` (min);
:class:`~placement.models.gpu.model.GpuModel` carries the keep indicators, elastic sizes,
policy, quota and budget rows (docs/formulations/gpu.md, "Running work"). :func:`solve_reopt`
optimises the tiers one after the other over the same
:class:`~placement.models.gpu.tiers.TierBackend` (CP-SAT or a MILP solver), each fixed at its
best value before the next, hinted first with the portfolio's incumbent or else with the
current placement (keeping everything as it is, which is always feasible).

Up to the size the time left allows (as for the three-tier driver,
:data:`~placement.models.gpu.tiers.MAX_PLACEMENT_VARS` scaled by the backend's speed) the model
is the full one, so a solver bound on tier 1 is a bound for the whole instance. Above it, each
job may use only a window of the freest nodes plus the nodes where it runs now and where the
incumbent places it (:func:`_window`): keeping everything and the incumbent stay solutions,
but neither optimality nor a bound is claimed (the portfolio keeps its quick bound).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from placement.models.gpu.check import CPU_TIER
from placement.models.gpu.eligibility import FreeCapacity, placement_var_count
from placement.models.gpu.instance import MILLI, GpuInstance
from placement.models.gpu.model import GpuModel
from placement.models.gpu.tiers import (
    CPSAT_COMM_SCALE,
    CPU_TIER_SHARE,
    MAX_PLACEMENT_VARS,
    MIN_EXACT_SECONDS,
    TierBackend,
    _floor_bound,
    _lex_key,
)
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.result import StopReason

REOPT_TIERS = (
    "placed_gpu_weighted",
    "queue_priority_gpu",
    CPU_TIER,
    "disruption_cost",
    "comm_cost",
    "fragmentation",
)
"""The checker's tiers of a re-optimization, in lexicographic order (``queue_priority_gpu``
only when a queue has a priority, ``placed_cpu_jobs`` only when some job asks no GPU)."""


def solve_reopt(
    instance: GpuInstance,
    ctx: ExactContext,
    make_backend: Callable[[], TierBackend],
    stats: dict[str, Any] | None = None,
) -> ExactOutcome:
    """Solve the tiers of a re-optimization lexicographically.

    Parameters
    ----------
    instance:
        A re-optimization instance (``instance.reopt``).
    ctx:
        The portfolio's context.
    make_backend:
        Makes the :class:`TierBackend` (CP-SAT or MILP).
    stats:
        If given, filled with the tier statuses and the model size.

    Returns
    -------
    ExactOutcome
        The stop reason, the proven bound on tier 1 (the full model's), whether all four
        tiers were proved, and the proved solution.
    """
    stats = stats if stats is not None else {}
    cancel = ctx.cancel
    if ctx.time_left() < MIN_EXACT_SECONDS and not cancel.cancelled:
        return ExactOutcome(StopReason.TIME_LIMIT, message="the exact model did not run")
    backend = make_backend()
    cluster = FreeCapacity(instance)
    size = placement_var_count(instance, cluster)
    limit = int(min(MAX_PLACEMENT_VARS, backend.vars_per_second * max(ctx.time_left(), 0.1)))
    stats.update(placement_vars=size, full_model_limit=limit)
    restricted = size > limit
    candidates = _window(instance, ctx.incumbent(), limit) if restricted else None
    model = GpuModel(instance, cluster, candidates)
    backend.load(model.lm)
    stats.update(variables=model.lm.num_vars, rows=len(model.lm.rows), tiers={})

    def normalise(values: Any) -> list[int] | None:
        if values is None:
            return None
        exact = model.values_from_solution(model.decode(values))
        return exact if exact is not None and model.feasible(exact) else None

    best = None
    incumbent = ctx.incumbent()
    if incumbent is not None:
        best = model.values_from_solution(incumbent)
        best = best if best is not None and model.feasible(best) else None
    if best is None:
        # Keeping every running job where it runs and placing nothing new is feasible.
        best = model.values_from_solution(instance.current_solution())
    if best is None or not model.feasible(best):
        return ExactOutcome(
            StopReason.ERROR,
            message=f"{backend.source}: the current placement does not satisfy the model",
        )

    objectives = {
        "placed_gpu_weighted": ("max", model.tier1),
        "queue_priority_gpu": ("max", model.qtier),
        CPU_TIER: ("max", model.cpu_tier),
        "disruption_cost": ("min", model.disrupt),
        "comm_cost": ("min", model.comm),
        "fragmentation": ("min", model.frag),
    }
    present = {"queue_priority_gpu": model.queue_priority is not None, CPU_TIER: model.has_cpu_tier}
    tiers = [n for n in REOPT_TIERS if present.get(n, True)]
    active = [
        name
        for name in tiers
        if not (name == "comm_cost" and not model.comm_active)
        and not (name == "fragmentation" and not model.frag_active)
    ]
    proven = {name: name not in active for name in tiers}
    bound1: int | None = None
    stop: StopReason | None = None
    messages: list[str] = []
    for pos, name in enumerate(active):
        if cancel.cancelled:
            stop = StopReason.CANCELLED
            break
        if name in ("comm_cost", "fragmentation") and model.ensure_layer(name):
            backend.load(model.lm)
            best = normalise(best) or model.values_from_solution(instance.current_solution())
        sense, objective = objectives[name]
        if objective.is_constant:
            proven[name] = True
            if name == "placed_gpu_weighted":
                bound1 = round(objective.constant)
            continue
        if backend.integer_objective and name == "comm_cost":
            coefs = {i: round(c * CPSAT_COMM_SCALE) for i, c in objective.terms.items()}
            const = round(objective.constant * CPSAT_COMM_SCALE)
        else:
            coefs, const = dict(objective.terms), objective.constant
        if name == CPU_TIER and model.cpu_tier_met(best):
            # Every CPU-only job placed at its largest size: optimal without a search.
            proven[name] = True
            stats["tiers"][name] = {"status": "proved: every CPU-only job placed"}
            if pos < len(active) - 1:
                backend.add_row(coefs, sum(c * best[i] for i, c in coefs.items()), None)
            continue
        left = ctx.time_left()
        share = 1.0 if pos == len(active) - 1 else (CPU_TIER_SHARE if name == CPU_TIER else 0.5)
        budget = share * (left - 0.05 - 0.03 * left)
        if budget < 0.05:
            stop = StopReason.TIME_LIMIT
            messages.append(f"no time left for tier {name}")
            break
        latest: list[Any] = [None]
        in_tier1 = name == "placed_gpu_weighted"

        def on_values(
            values: list[float],
            bound: float | None,
            latest: list[Any] = latest,
            in_tier1: bool = in_tier1,
            const: float = const,
        ) -> None:
            latest[0] = values
            valid = None
            if in_tier1 and bound is not None:
                valid = _floor_bound(bound + const) / MILLI
            ctx.report(model.decode(values), backend.source, valid)

        t0 = time.monotonic()
        with deadline_token(cancel, budget * 1.05 + 0.1) as tier_cancel:
            run, final = backend.run(sense, coefs, 0.0, best, budget, tier_cancel, on_values)
        run.stop_reason = deadline_stop(run.stop_reason, cancel)
        stats["tiers"][name] = {
            "status": run.status.value,
            "stop": run.stop_reason.value,
            "wall_s": time.monotonic() - t0,
        }
        if run.status in (RunStatus.ERROR, RunStatus.INFEASIBLE):
            # The hint satisfies every row (the tier rows hold at its values): a model bug.
            stop = StopReason.ERROR
            messages.append(f"{backend.source} tier {name}: {run.status.value} {run.message}")
            break
        found = [v for v in (normalise(final), normalise(latest[0]), best) if v is not None]
        best = max(found, key=lambda v: _lex_key(instance, model, v))
        ctx.report(model.decode(best), backend.source, None)
        final_ok = normalise(final) is not None
        proven[name] = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        proven[name] = proven[name] and final_ok
        if in_tier1:
            best1 = round(model.tier1.value(best))
            if proven[name]:
                bound1 = best1
            elif run.bound is not None:
                bound1 = max(best1, _floor_bound(run.bound + const))
        if pos < len(active) - 1:
            value = sum(c * best[i] for i, c in coefs.items())
            if sense == "max":
                backend.add_row(coefs, value, None)
            elif backend.integer_objective:
                backend.add_row(coefs, None, value)
            else:
                backend.add_row(coefs, None, value + 1e-6 * max(1.0, abs(value)))
        if not proven[name] and stop is None:
            stop = run.stop_reason
    all_proven = all(proven.values()) and not cancel.cancelled and stop in (None, StopReason.PROVEN)
    if restricted:
        # A proof on candidate nodes is no proof for the instance, nor its bound a bound.
        messages.append(
            f"restricted to candidate nodes ({size} placement variables > {limit}): "
            "optimality over the whole instance is not claimed"
        )
        bound1 = None
        if all_proven or stop in (None, StopReason.PROVEN):
            stop = StopReason.SEARCH_EXHAUSTED
        all_proven = False
    if cancel.cancelled:
        stop = StopReason.CANCELLED
    elif all_proven:
        stop = StopReason.PROVEN
    elif stop is None or stop == StopReason.PROVEN:
        stop = StopReason.TIME_LIMIT
    solution = model.decode(best) if best is not None else None
    summary = ", ".join(f"{n}={'proved' if ok else 'not proved'}" for n, ok in proven.items())
    messages.insert(0, f"{backend.source} (re-optimization): {summary}")
    stats["proven"] = proven
    return ExactOutcome(
        stop_reason=stop,
        bound=None if bound1 is None else bound1 / MILLI,
        proven_optimal=all_proven,
        proven_solution=solution if all_proven else None,
        message="; ".join(messages),
    )


def _window(instance: GpuInstance, incumbent: Any, limit: int) -> list[list[int]]:
    """Candidate nodes per job for a model of about ``limit`` placement variables.

    A window of the nodes with the most GPU capacity free now (under the current placement
    and the incumbent) is open to every job; each job also keeps the nodes where it runs
    now and where the incumbent places it, so keeping everything and the incumbent are both
    solutions of the restricted model.
    """
    n_nodes = len(instance.nodes)
    free = [
        sum(MILLI - u for u in node.gpu_milli_used) if node.gpu_count else 0
        for node in instance.nodes
    ]
    placed = dict(incumbent.placements) if incumbent is not None else {}
    for j in instance.running_jobs:
        placed.setdefault(j, ())
    for job in instance.jobs:
        for w in job.current:
            free[w.node] -= job.milli_per_worker
    width = max(2, min(n_nodes, limit // max(1, len(instance.jobs))))
    window = sorted(range(n_nodes), key=lambda n: (-free[n], n))[:width]
    out = []
    for j, job in enumerate(instance.jobs):
        own = {w.node for w in job.current} | {w.node for w in placed.get(j, ())}
        out.append(sorted(own | set(window)))
    return out


class ReoptAware:
    """Mixin of the GPU encodings: a re-optimization instance goes to :func:`solve_reopt`,
    any other to the three-tier driver (``super().solve``), unchanged."""

    tier_backend: Callable[[ExactContext], TierBackend]
    last_stats: dict[str, Any]

    def solve(self, instance: GpuInstance, ctx: ExactContext) -> ExactOutcome:
        """Solve ``instance``: see :func:`solve_reopt` and ``TieredEncoding.solve``."""
        if not instance.reopt:
            return super().solve(instance, ctx)  # type: ignore[misc]
        self.last_stats = {}
        factory = type(self).tier_backend
        return solve_reopt(instance, ctx, lambda: factory(ctx), stats=self.last_stats)
