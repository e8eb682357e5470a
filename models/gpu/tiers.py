"""The lexicographic tier driver of the exact GPU encodings (CP-SAT and MILP).

The checker ranks solutions by three objective tiers in order (:data:`TIERS`); the driver
optimises them one after the other on one :class:`~placement.models.gpu.model.GpuModel`,
fixing each tier at the best value found before the next, through the small
:class:`TierBackend` protocol that :mod:`placement.models.gpu.cpsat` and
:mod:`placement.models.gpu.milp` implement. When the full model is too large for the time
left, it runs pass after pass on restricted models (:mod:`placement.models.gpu.candidates`)
with the bound of :func:`placement.models.gpu.bound.relaxation_bound`.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from placement.models.gpu.bound import relaxation_bound
from placement.models.gpu.candidates import placement_weights, select_candidates, window_count
from placement.models.gpu.check import CPU_TIER, check
from placement.models.gpu.config_lp import configuration_search
from placement.models.gpu.eligibility import FreeCapacity, placement_var_count
from placement.models.gpu.greedy import complete
from placement.models.gpu.instance import MILLI, GpuInstance, GpuSolution
from placement.models.gpu.lns import graft, neighbourhood
from placement.models.gpu.model import GpuModel
from placement.solver.backends.base import RunStatus
from placement.solver.cancel import deadline_stop, deadline_token
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.linear import Values
from placement.solver.linear_backends import LinearBackend
from placement.solver.options import deterministic_wall_limit
from placement.solver.result import StopReason

log = logging.getLogger(__name__)

TIERS = ("placed_gpu_weighted", "comm_cost", "fragmentation")
"""The checker's objective tiers, in lexicographic order."""
# An instance with a CPU-only job has ``placed_cpu_jobs`` (check.CPU_TIER) right after
# placed_gpu_weighted: the placed work before any cost.
# An instance that opts in to ``topology_fit`` (docs/formulations/gpu.md, 7a) ranks it after
# comm_cost and before fragmentation: racks and best fit per level before the node measure.

MAX_PLACEMENT_VARS = 50_000
"""Above this many placement variables (job x node pairs, plus job x GPU pairs for
fractional jobs, plus job x NVLink-domain pairs on multi-domain nodes), each job is
restricted to a candidate set of nodes and optimality is no longer claimed. The limit also
shrinks with the time left (``TierBackend.vars_per_second``)."""

CPSAT_COMM_SCALE = 1_000_000
"""CP-SAT needs integer objective coefficients: communication costs are multiplied by this
and rounded, so CP-SAT proves the communication tier at 1e-6 resolution per job."""

CPU_TIER_SHARE = 0.25
"""Share of the time left for the ``placed_cpu_jobs`` tier when it must search (not every
CPU-only job placed by the best solution so far): a small tier, whose time comes out of the
cost tiers after it."""

MIN_EXACT_SECONDS = 0.05
"""Below this many seconds left, the exact model is not built (nor the LP bound solved)."""

CONFIG_LP_SHARE = 0.5
"""Share of the time left that a restricted search gives the configuration LP
(:func:`placement.models.gpu.config_lp.configuration_search`: its bound, then placements
rounded from it), before the windows."""

CONFIG_LP_MIN_SECONDS = 0.2
"""Below this budget the configuration LP is not built (a short deadline keeps its time for
the windows)."""

GUIDED_MIN_SECONDS = 0.5
"""Below this many seconds left after the configuration LP, the rack windows run instead of
the large-neighbourhood search and the polish on the LP's support."""

LNS_SHARE = 0.75
"""Share of the time left after the configuration LP for the large-neighbourhood search
(:mod:`placement.models.gpu.lns`); the later tiers get the rest."""

LNS_PASS_SECONDS = 0.06
"""Longest search on one neighbourhood. 0.06 s rather than 0.08 s: from the graft on the
1,024-GPU seed 3, 2019.3 on 5 runs of 5 against 2016.8-2019.3 (docs/benchmarks.md, issue 19);
0.05 and 0.1 s did worse."""

LNS_TARGET_VARS = 400
"""Size of a neighbourhood's model (placement variables)."""

LNS_STALL = 8
"""Neighbourhoods without an improvement before a kick (:func:`_lns`)."""

LNS_KICK_VARS = 2_500
"""Size of a kick's neighbourhood (placement variables)."""

LNS_KICK_SECONDS = 0.8
"""Longest search on a kick's neighbourhood."""

GRAFT_MIN_X = 0.5
"""The search starts with the jobs the configuration LP places at least this much (its
``x_j``) grafted into its start (:func:`_lns_start`)."""

GRAFT_MAX_LOSS = 0.001
"""The search starts from the graft only when it is at most this share below the incumbent.
On the 1,024-GPU instances it was 0.015 % below on seed 3, where the search from it climbed
0.4 % higher; 0.2-5 % below on seeds 1 and 2 and on seed 3 under load, where the search
from it mostly ended below the search from the incumbent (docs/benchmarks.md, issue 19)."""

GRAFT_PATIENCE = 0.5
"""Share of the search's time after which a search from the graft that has not beaten the
incumbent goes back to the incumbent (under load the integer master's placement, and so the
graft, can be far below it)."""

LNS_KEEP_MIN_WORKERS = 2
"""A job with at least this many workers that the configuration LP places wholly stays
placed in every neighbourhood once the search's placement places it (:func:`_lns`). Without
that rule the search traded such gangs (seed 2 at 1,024 GPUs: the 5 x 4-GPU rack gang
gang-0175) for small gains and could not put them back: 1995.3 at 5 s, with it 2003.3
(docs/benchmarks.md, issue 19)."""

LNS_KICK_ROOM = 3.0
"""A kick needs this many times :data:`LNS_KICK_SECONDS` left of the search (time to recover
from its loss): not at a 5-s limit, where the search gets about 1.8 s."""

CONFIG_LP_MAX_VARS = 500_000
"""Above this many placement variables the restricted search skips the configuration LP:
on the 10,240-GPU instances (5.6 million) its column generation does not converge in 30 s
(docs/benchmarks/gpu-synthetic.md) and the windows make better use of the time."""


class TierBackend(LinearBackend, Protocol):
    """What :func:`solve_tiers` needs from a solver: the family-neutral
    :class:`~placement.solver.linear_backends.LinearBackend` (CP-SAT or a MILP solver), and
    how large a model it handles in the time left."""

    vars_per_second: float
    """Model size (placement variables) per second of time left that the solver handles
    well; above it the model is restricted to candidate nodes."""


@dataclass
class _Tier:
    name: str
    sense: str
    active: bool


@dataclass
class _Pass:
    """What one pass over the tiers (full model, or one window of the restricted one) did."""

    proven: dict[str, bool]
    bound1: int | None = None
    stop: StopReason | None = None
    messages: list[str] = field(default_factory=list)
    tier_bounds: dict[str, float] = field(default_factory=dict)
    best: list[int] | None = None
    error: bool = False


class _Clock:
    """Time left for the exact search.

    Normally the portfolio's wall clock. In deterministic mode it is virtual: the time limit
    less the tier budgets already handed out, so that every decision that depends on time
    (full or restricted model, windows, tier budgets) is the same on every run; CP-SAT then
    stops each tier by deterministic time, and the wall clock is only a guard.
    """

    def __init__(self, ctx: ExactContext) -> None:
        self.ctx = ctx
        self.deterministic = bool(ctx.options.deterministic)
        self.spent = 0.0

    def left(self) -> float:
        """Seconds left."""
        if self.deterministic:
            return max(0.0, float(self.ctx.options.time_limit_s) - self.spent)
        return self.ctx.time_left()

    def now(self) -> float:
        """The current time on this clock."""
        return self.spent if self.deterministic else time.monotonic()

    def charge(self, seconds: float) -> None:
        """Count a tier budget as spent (deterministic mode)."""
        self.spent += seconds


def solve_tiers(
    instance: GpuInstance,
    ctx: ExactContext,
    make_backend: Callable[[], TierBackend],
    *,
    max_placement_vars: int = MAX_PLACEMENT_VARS,
    stats: dict[str, Any] | None = None,
) -> ExactOutcome:
    """Solve the three tiers lexicographically, one after the other.

    Tier 1 maximises the weighted placed GPU demand; tier 2 fixes it at no less than the
    best value found and minimises the communication cost; tier 3 also fixes that and
    minimises fragmentation. Each tier is hinted with the best solution so far (first the
    portfolio's incumbent), gets half of the time left (the last one all of it), and every
    decoded improving solution goes to ``ctx.report``. Constant tiers are skipped.

    When the full model is too large for the time left (``max_placement_vars``, scaled by
    the backend's ``vars_per_second``), the tiers run on restricted models instead, one
    window of racks after another (:func:`select_candidates`), each starting from the best
    solution so far, until the time is up; optimality is then not claimed and the bound is
    :func:`relaxation_bound`, valid for the whole instance.

    Parameters
    ----------
    instance:
        The instance.
    ctx:
        The portfolio's :class:`~placement.solver.family.ExactContext`.
    make_backend:
        Makes a fresh :class:`TierBackend` (one per model).
    max_placement_vars:
        Upper limit on the full model's size (see :data:`MAX_PLACEMENT_VARS`).
    stats:
        If given, filled with what happened (model sizes, tier statuses, objectives).

    Returns
    -------
    ExactOutcome
        Stop reason, proven bound on the primary objective (whole instance), whether every
        tier was proved optimal, and the proved solution.
    """
    stats = stats if stats is not None else {}
    started = time.monotonic()
    cancel = ctx.cancel
    clock = _Clock(ctx)
    if clock.left() < MIN_EXACT_SECONDS and not cancel.cancelled:
        # Not even a model build fits: return at once rather than overrun the deadline.
        return ExactOutcome(
            StopReason.TIME_LIMIT,
            message=f"the exact model did not run: {clock.left() * 1e3:.0f} ms left",
        )
    cluster = FreeCapacity(instance)
    backend = make_backend()
    size = placement_var_count(instance, cluster)
    # CP-SAT's presolve alone grows quickly with the model: the full model is used only
    # while it stays small for the time at hand, else restricted ones of about that size.
    limit = int(min(max_placement_vars, backend.vars_per_second * max(clock.left(), 0.1)))
    restricted = size > limit
    stats.update(
        placement_vars=size,
        full_model_limit=limit,
        restricted=restricted,
        passes=[],
        hint_fallbacks=0,
    )
    if cancel.cancelled:
        return ExactOutcome(StopReason.CANCELLED, message="cancelled before the exact model ran")

    if not restricted:
        model = GpuModel(instance, cluster, None)
        result = _run_pass(instance, ctx, clock, backend, model, None, None, stats)
        best_model, passes = model, [result]
    else:
        # A bound for the whole instance: a restricted model's own bound is not one. The
        # configuration LP's; the LP relaxation's too only when that did not converge (at
        # convergence it was as tight or tighter on the generated instances, and its time
        # goes to the search; either bound is valid). A short deadline gets no LP bound
        # rather than an overrun (the portfolio still has its quick bound).
        lp_bound, guided = None, None
        if size <= CONFIG_LP_MAX_VARS:
            lp_bound, guided = _configuration_lp(instance, cluster, ctx, clock, None, stats)
        if not stats.get("config_lp", {}).get("converged"):
            lp_started = time.monotonic()
            lp_budget = 0.15 * clock.left()
            relaxed = (
                relaxation_bound(instance, cluster, ctx.options, cancel, lp_budget)
                if lp_budget >= MIN_EXACT_SECONDS
                else None
            )
            if relaxed is not None:
                lp_bound = relaxed if lp_bound is None else min(lp_bound, relaxed)
                ctx.update_bound(lp_bound / MILLI)
            stats["relaxation_bound_s"] = time.monotonic() - lp_started
        passes, tried = [], set()
        best_model = None
        if guided is not None and not cancel.cancelled and clock.left() >= GUIDED_MIN_SECONDS:
            passes, best_model = _guided_search(
                instance, ctx, clock, make_backend, cluster, guided, lp_bound, stats
            )
        while not cancel.cancelled:
            left = clock.left()
            # Several windows when there is time; each gets enough for all of its tiers.
            if passes and left < 2.0:
                break
            pass_time = left if left < 6.0 else max(3.0, 0.3 * left)
            pass_deadline = None if left < 6.0 else clock.now() + pass_time
            target = int(min(limit, backend.vars_per_second * pass_time))
            candidates, window, fixed = select_candidates(
                instance,
                cluster,
                ctx.incumbent(),
                target_vars=target,
                skip_groups=tried,
                rank="room" if len(passes) % 2 == 0 else "priority",
            )
            tried.update(window)
            model = GpuModel(instance, cluster.residual(fixed), candidates, fixed)
            backend = backend if not passes else make_backend()
            result = _run_pass(instance, ctx, clock, backend, model, lp_bound, pass_deadline, stats)
            stats["passes"][-1]["window"] = window
            passes.append(result)
            best_model = model
            if result.error or result.best is None or len(tried) >= window_count(instance):
                break
        for result in passes:
            result.bound1 = lp_bound
            result.tier_bounds = {}
    final = passes[-1]
    assert best_model is not None
    proven = {name: all(p.proven.get(name, False) for p in passes) for name in final.proven}
    all_proven = not restricted and all(final.proven.values()) and not cancel.cancelled
    stop = final.stop
    messages = [m for p in passes for m in p.messages]
    if cancel.cancelled:
        stop, all_proven = StopReason.CANCELLED, False
    bound1 = final.bound1
    tier_bounds = dict(final.tier_bounds)
    if bound1 is not None:
        tier_bounds["placed_gpu_weighted"] = bound1 / MILLI
    if restricted:
        messages.append(
            f"restricted to candidate nodes ({len(passes)} window(s); {size} placement "
            f"variables > {limit}): optimality over the whole instance is not claimed"
        )
        if stop is None or stop == StopReason.PROVEN:
            # Every window finished before the deadline: no proof for the whole instance.
            stop = StopReason.SEARCH_EXHAUSTED
    if all_proven:
        stop = StopReason.PROVEN
    elif stop is None or stop == StopReason.PROVEN:
        stop = StopReason.TIME_LIMIT
    solution = best_model.decode(final.best) if final.best is not None else None
    if restricted and solution is not None and best_model.has_cpu_tier:
        # A restricted model may give a waiting CPU-only job no variables (e.g. the
        # configuration LP's candidates leave CPU-only jobs out): place those that fit.
        filled = complete(instance, solution, cpu_only=True)
        if len(filled.placements) > len(solution.placements):
            ctx.report(filled, f"{backend.source} + CPU-only fill", None)
    stats["proven"] = dict(final.proven) if not restricted else proven
    stats["solution"] = solution
    stats["total_s"] = time.monotonic() - started
    summary = ", ".join(
        f"{name}={'proved' if ok else 'not proved'}" for name, ok in final.proven.items()
    )
    where = " (last window, others fixed)" if restricted else ""
    messages.insert(0, f"{backend.source}{where}: {summary}")
    return ExactOutcome(
        stop_reason=stop,
        bound=None if bound1 is None else bound1 / MILLI,
        proven_optimal=all_proven,
        proven_solution=solution if all_proven else None,
        message="; ".join(messages),
        tier_bounds=tier_bounds,
        # The configuration LP and MIP run on HiGHS: timed as such, not as the tier backend.
        phase_times_s=(
            {"config-lp": stats["config_lp"]["seconds"]} if "config_lp" in stats else {}
        ),
    )


def _run_pass(
    instance: GpuInstance,
    ctx: ExactContext,
    clock: _Clock,
    backend: TierBackend,
    model: GpuModel,
    lp_bound: int | None,
    deadline: float | None,
    stats: dict[str, Any],
    tiers_run: str = "all",
) -> _Pass:
    """Run the active tiers on ``model`` until ``deadline`` (or the portfolio's deadline).

    ``tiers_run``: ``"all"``, or ``"later"`` (the first tier fixed at the incumbent's value
    unsearched, the others searched: the polish after the large-neighbourhood search)."""
    cancel = ctx.cancel
    pass_stats: dict[str, Any] = {"tiers": {}, "restricted": model.restricted}
    stats["passes"].append(pass_stats)
    t0 = time.monotonic()
    backend.load(model.lm)
    pass_stats["build_s"] = time.monotonic() - t0

    def time_left() -> float:
        left = clock.left()
        return left if deadline is None else min(left, deadline - clock.now())

    def normalise(values: Values | None) -> list[int] | None:
        """Decode then re-encode: exact auxiliary values and the canonical GPU numbering."""
        if values is None:
            return None
        exact = model.values_from_solution(model.decode(values))
        if exact is not None and model.feasible(exact):
            return exact
        stats["hint_fallbacks"] += 1
        if len(values) != model.lm.num_vars:
            return None
        rounded = [int(round(v)) for v in values]
        return rounded if model.feasible(rounded) else None

    incumbent = ctx.incumbent()
    best = model.values_from_solution(incumbent) if incumbent is not None else None
    if best is not None and not model.feasible(best):
        log.warning("the incumbent does not satisfy the %s model; not used", backend.source)
        stats["hint_fallbacks"] += 1
        best = None
    pass_stats["hinted"] = best is not None
    if best is None:
        # Placing nothing is always feasible: a valid start and a floor for every tier.
        best = model.values_from_solution(GpuSolution())
    assert best is not None

    tiers = [
        _Tier("placed_gpu_weighted", "max", not model.tier1.is_constant),
        _Tier("comm_cost", "min", model.comm_active),
        _Tier("fragmentation", "min", model.frag_active),
    ]
    if model.instance.topology_fit and not model.reopt:
        # The opt-in tier, in the checker's order (check.FIT_SENSES); listed only here so that
        # the outputs of instances without it stay the same.
        tiers.insert(2, _Tier("topology_fit", "min", model.fit_active))
    if model.has_cpu_tier:
        # Only on instances with a CPU-only job (check.has_cpu_tier), right after tier 1.
        tiers.insert(1, _Tier(CPU_TIER, "max", not model.cpu_tier.is_constant))
    objectives = {
        "placed_gpu_weighted": model.tier1,
        CPU_TIER: model.cpu_tier,
        "comm_cost": model.comm,
        "fragmentation": model.frag,
        "topology_fit": model.fit,
    }
    active = [st for st in tiers if st.active]
    result = _Pass(proven={st.name: not st.active for st in tiers})
    if model.tier1.is_constant and not model.restricted:
        result.bound1 = 0  # no job with a positive weight can be placed
    lock = threading.Lock()
    post_s = 0.0

    for pos, tier in enumerate(active):
        if cancel.cancelled:
            result.stop = StopReason.CANCELLED
            break
        if model.ensure_layer(tier.name):
            backend.load(model.lm)
            best = normalise(best) or model.values_from_solution(GpuSolution())
            assert best is not None
        objective = objectives[tier.name]
        if objective.is_constant:
            # Only known once the layer exists (e.g. a mix of 1-GPU classes only): nothing to
            # optimise, and every solution is optimal for this tier.
            result.proven[tier.name] = True
            continue
        if backend.integer_objective and tier.name == "comm_cost":
            # CP-SAT takes integer coefficients: costs at 1e-6 resolution.
            coefs = {i: round(c * CPSAT_COMM_SCALE) for i, c in objective.terms.items()}
            const = round(objective.constant * CPSAT_COMM_SCALE)
        else:
            coefs, const = dict(objective.terms), objective.constant
        if tier.name == "placed_gpu_weighted" and tiers_run == "later":
            # Kept at the incumbent's value, for the later tiers.
            pass_stats["tiers"][tier.name] = {"status": "fixed at the incumbent"}
            if pos < len(active) - 1:
                backend.add_row(coefs, sum(c * best[i] for i, c in coefs.items()), None)
            continue
        if tier.name == "placed_gpu_weighted" and not model.restricted:
            # The incumbent already meets a proven bound (e.g. the portfolio's capacity
            # bound when every job fits): the tier is optimal without a search.
            known = ctx.proven_bound()
            best1 = round(model.tier1.value(best))
            if known is not None and best1 >= _floor_bound(known * MILLI):
                result.proven[tier.name] = True
                result.bound1 = best1
                pass_stats["tiers"][tier.name] = {"status": "proved by the bound"}
                if pos < len(active) - 1:
                    backend.add_row(coefs, sum(c * best[i] for i, c in coefs.items()), None)
                continue
        if tier.name == CPU_TIER and model.cpu_tier_met(best):
            # Every CPU-only job placed at its largest size: the tier is optimal as it is.
            result.proven[tier.name] = True
            pass_stats["tiers"][tier.name] = {"status": "proved: every CPU-only job placed"}
            if pos < len(active) - 1:
                backend.add_row(coefs, sum(c * best[i] for i, c in coefs.items()), None)
            continue
        left = time_left()
        # Keep time for the work after each remaining tier (decoding, normalising and
        # checking candidates): measured on the previous tier, estimated from size before.
        size_now = model.lm.num_vars + len(model.lm.rows)
        # (Deterministic mode: from size only, so that budgets do not depend on timing.)
        measured = 0.0 if clock.deterministic else post_s
        post = max(measured, 2e-6 * size_now * (1 + len(active) - pos))
        reserve = 0.05 + 0.03 * left + post * (len(active) - pos)
        # The primary tier first: 60% of the time left for tier 1, half of the rest for
        # tier 2, everything after for the last tier (placed_cpu_jobs: a quarter).
        share = 1.0 if pos == len(active) - 1 else (0.6 if pos == 0 else 0.5)
        if tier.name == CPU_TIER and pos < len(active) - 1:
            share = CPU_TIER_SHARE
        budget = share * (left - reserve)
        if budget < 0.05:
            result.stop = StopReason.TIME_LIMIT
            result.messages.append(f"no time left for tier {tier.name}")
            break
        clock.charge(budget + reserve / max(1, len(active) - pos))
        latest: list[list[float] | None] = [None]
        last_report = [0.0]
        throttle = 0.0 if model.lm.num_vars < 20_000 else 0.25
        in_tier1 = tier.name == "placed_gpu_weighted"

        def on_values(
            values: list[float],
            bound: float | None,
            latest: list[list[float] | None] = latest,
            last_report: list[float] = last_report,
            in_tier1: bool = in_tier1,
            throttle: float = throttle,
            const_now: float = const if not model.restricted else 0.0,
        ) -> None:
            with lock:
                latest[0] = values
                now = time.monotonic()
                if now - last_report[0] < throttle:
                    return
                last_report[0] = now
            valid = None
            if in_tier1:
                # A solver bound is a bound on the instance only for the full model.
                valid = lp_bound if model.restricted else bound
                valid = None if valid is None else _floor_bound(valid + const_now) / MILLI
            ctx.report(model.decode(values), backend.source, valid)

        # The tier's own cancellation: the portfolio's, or the tier deadline (some solvers
        # overrun their time limit on large models; their interrupt hooks still work).
        # (Deterministic mode: the deterministic budget must end the search, so the tier
        # deadline is no tighter than CP-SAT's own wall-clock guard. At twice the budget it
        # cut a 1.1 s tier on a loaded CI machine and two identical solves differed.)
        if in_tier1 and model.restricted and lp_bound is not None:
            # The whole instance's bound caps the window's tier 1 too: a ceiling that lets
            # the solver stop as soon as an incumbent meets it.
            backend.add_row(coefs, None, math.floor(lp_bound - const))
        guard = deterministic_wall_limit(budget) if clock.deterministic else budget
        with deadline_token(cancel, guard * 1.05 + 0.1) as tier_cancel:
            # Objectives go to the solver without their constant (CBC's logged bound omits
            # it); run.objective and run.bound are shifted back below.
            run, final = backend.run(tier.sense, coefs, 0.0, best, budget, tier_cancel, on_values)
        run.stop_reason = deadline_stop(run.stop_reason, cancel)  # our tier deadline
        if run.objective is not None:
            run.objective += const
        if run.bound is not None:
            run.bound += const
        post_started = time.monotonic()
        proved = run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
        tier_stats: dict[str, Any] = {
            "status": run.status.value,
            "stop": run.stop_reason.value,
            "objective": run.objective,
            "bound": run.bound,
            "wall_s": run.wall_s,
            "budget_s": budget,
            "variables": model.lm.num_vars,
            "rows": len(model.lm.rows),
        }
        pass_stats["tiers"][tier.name] = tier_stats
        if run.status == RunStatus.ERROR:
            result.stop, result.error = StopReason.ERROR, True
            result.messages.append(f"{backend.source} tier {tier.name} failed: {run.message}")
            break
        if run.status == RunStatus.INFEASIBLE:
            # x = 0 is always feasible and every tier-fixing row holds for the hint: a model bug.
            result.stop, result.error = StopReason.ERROR, True
            result.messages.append(f"{backend.source} reported tier {tier.name} infeasible")
            break
        final_exact = normalise(final)
        found = [v for v in (final_exact, normalise(latest[0]), best) if v is not None]
        # The lexicographically best candidate over all three tiers, as the checker ranks
        # them (the layers of later tiers may not exist yet, so the model cannot rank ties).
        # Every candidate satisfies the earlier tiers' rows; when those tiers were proved
        # the candidates tie there, and the best ties or beats the solver's final solution in
        # this tier's objective, so a proof of this tier covers it too.
        best = max(found, key=lambda v: _lex_key(instance, model, v))
        ctx.report(model.decode(best), backend.source, None)
        result.proven[tier.name] = proved and final_exact is not None
        earlier_proven = all(result.proven[st.name] for st in tiers[: tiers.index(tier)])
        if in_tier1 and not model.restricted:
            best1 = round(model.tier1.value(best))
            if result.proven[tier.name]:
                result.bound1 = best1
            elif run.bound is not None:
                result.bound1 = max(best1, _floor_bound(run.bound))
        elif earlier_proven and not model.restricted and run.bound is not None:
            if tier.name == "comm_cost" and backend.integer_objective:
                # Each rounded cost coefficient is off by at most 0.5e-6.
                slack = 0.5 * len(coefs) / CPSAT_COMM_SCALE
                result.tier_bounds["comm_cost"] = max(0.0, run.bound / CPSAT_COMM_SCALE - slack)
            elif tier.name == "comm_cost":
                result.tier_bounds["comm_cost"] = max(0.0, run.bound - 1e-6)
            elif tier.name == "topology_fit":
                result.tier_bounds["topology_fit"] = run.bound
            elif tier.name == CPU_TIER:
                result.tier_bounds[CPU_TIER] = float(_floor_bound(run.bound))
            else:
                result.tier_bounds["fragmentation"] = run.bound / model.frag_divisor
        # Fix this tier for the next tiers at the best value found (exactly in integers; with
        # a 1e-6 tolerance for a floating-point communication cost).
        if pos < len(active) - 1:
            value = sum(c * best[i] for i, c in coefs.items())
            if tier.sense == "max":
                backend.add_row(coefs, value, None)
            elif backend.integer_objective:
                backend.add_row(coefs, None, value)
            else:
                backend.add_row(coefs, None, value + 1e-6 * max(1.0, abs(value)))
        if not result.proven[tier.name] and result.stop is None:
            result.stop = run.stop_reason
        post_s = max(post_s, time.monotonic() - post_started)
        tier_stats["post_s"] = time.monotonic() - post_started

    result.best = best
    terms = model.terms(best)
    pass_stats["objectives"] = {k: v for k, v in terms.items() if k in model.layers}
    stats["objectives"] = pass_stats["objectives"]
    stats["variables"] = model.lm.num_vars
    stats["rows"] = len(model.lm.rows)
    return result


def _guided_search(
    instance: GpuInstance,
    ctx: ExactContext,
    clock: _Clock,
    make_backend: Callable[[], TierBackend],
    cluster: FreeCapacity,
    guided: list[list[int]],
    lp_bound: int | None,
    stats: dict[str, Any],
) -> tuple[list[_Pass], GpuModel]:
    """The restricted search after the configuration LP, in two steps on the time left:

    1. the large-neighbourhood search of :mod:`.lns` on the first tier (:func:`_lns`),
       :data:`LNS_SHARE`;
    2. the later tiers, the first fixed at the best value found, on a model around the
       configuration LP's support (every job may move among the nodes the LP's packings
       give it, and the incumbent's): until the deadline below 6 s, else 30 % of the time
       left (the rack windows then use the rest).

    Returns the pass of step 2 and its model."""
    _lns(instance, ctx, clock, make_backend, cluster, lp_bound, LNS_SHARE * clock.left(), stats)
    incumbent = ctx.incumbent()
    own = incumbent.placements if incumbent is not None else {}
    polish = [
        sorted(set(nodes) | {w.node for w in own.get(j, ())}) for j, nodes in enumerate(guided)
    ]
    model = GpuModel(instance, cluster, polish)
    left = clock.left()
    deadline = None if left < 6.0 else clock.now() + max(3.0, 0.3 * left)
    result = _run_pass(
        instance, ctx, clock, make_backend(), model, lp_bound, deadline, stats, "later"
    )
    stats["passes"][-1]["window"] = "configuration LP (later tiers)"
    return [result], model


def _lns(
    instance: GpuInstance,
    ctx: ExactContext,
    clock: _Clock,
    make_backend: Callable[[], TierBackend],
    cluster: FreeCapacity,
    lp_bound: int | None,
    seconds: float,
    stats: dict[str, Any],
) -> None:
    """The large-neighbourhood search (:mod:`.lns`) on the first tier for ``seconds``: one
    neighbourhood of the current placement after another, each solved from it for at most
    :data:`LNS_PASS_SECONDS`; improvements go to ``ctx.report`` (the checker). Many short
    searches on small neighbourhoods (:data:`LNS_TARGET_VARS`) climbed fastest
    (docs/benchmarks.md, issue 19).

    A gang the configuration LP places wholly (:data:`LNS_KEEP_MIN_WORKERS`) stays placed
    once placed: the neighbourhoods may move it but not drop it.

    It starts from :func:`_lns_start` (the integer master's placement with the LP's gangs
    grafted in) when that is at most :data:`GRAFT_MAX_LOSS` below the incumbent, reported
    and searched from even when below it; when that search has not beaten the incumbent
    after :data:`GRAFT_PATIENCE` of the time, it goes on from the incumbent.

    After :data:`LNS_STALL` neighbourhoods without an improvement (and with time for it), a
    *kick*: one job the
    configuration LP places wholly but the best placement leaves out is forced in, in a
    neighbourhood of :data:`LNS_KICK_VARS` variables searched for :data:`LNS_KICK_SECONDS`,
    even at a loss; the search goes on from there (the best placement stays the portfolio's
    incumbent). Such a job, e.g. a gang of eight 4-GPU workers in one rack, needs more room
    than one neighbourhood gives, and the placements around it differ."""
    end = clock.now() + seconds
    rng = np.random.default_rng(ctx.options.seed)
    weights = placement_weights(instance, cluster)
    lns_stats = stats.setdefault(
        "lns", {"neighbourhoods": 0, "improved": 0, "kicks": 0, "seconds": 0.0}
    )
    kick_jobs = list(stats.get("config_lp", {}).get("wholly_placed", []))
    keep = [j for j in kick_jobs if instance.jobs[j].workers >= LNS_KEEP_MIN_WORKERS]
    started = time.monotonic()
    valid = None if lp_bound is None else lp_bound / MILLI
    current = ctx.incumbent()
    if current is None:
        return
    grafted = _lns_start(instance, current, stats)
    report = check(instance, grafted) if grafted is not None else None
    # Until the search from the graft beats the incumbent; given up after
    # GRAFT_PATIENCE of the search's time.
    on_graft = False
    if grafted is not None and report is not None and report.feasible:
        lns_stats["graft"] = round(report.objective, 2)
        floor = (1 - GRAFT_MAX_LOSS) * check(instance, current).objective
        if report.objective >= floor - 1e-9:
            # Searched from even when below the incumbent (as after a kick); ctx.report
            # keeps it only when better.
            on_graft = not ctx.report(grafted, "config-lp graft", valid)
            current = grafted
            lns_stats["graft_searched"] = True
    give_up = clock.now() + GRAFT_PATIENCE * seconds
    stalled = 0
    while not ctx.cancel.cancelled:
        kick = None
        if on_graft and clock.now() >= give_up:
            current, stalled, on_graft = ctx.incumbent(), 0, False
            lns_stats["graft_abandoned"] = True
        if (
            stalled >= LNS_STALL
            and kick_jobs
            and end - clock.now() >= LNS_KICK_ROOM * LNS_KICK_SECONDS
        ):
            best = ctx.incumbent()
            left_out = [j for j in kick_jobs if best is not None and not best.placements.get(j)]
            if left_out:
                kick = int(left_out[rng.integers(len(left_out))])
                current, stalled = best, 0
        seconds_now = LNS_KICK_SECONDS if kick is not None else LNS_PASS_SECONDS
        budget = min(seconds_now, end - clock.now())
        if budget < MIN_EXACT_SECONDS:
            break
        size = LNS_KICK_VARS if kick is not None else LNS_TARGET_VARS
        hood = neighbourhood(instance, cluster, current, weights, rng, size, kick)
        if hood is None:
            if kick is None:
                break
            kick_jobs.remove(kick)
            continue
        model = GpuModel(instance, cluster.residual(hood.fixed), hood.candidates, hood.fixed)
        hint = model.values_from_solution(current)
        if hint is None or not model.feasible(hint):
            # Cannot happen for a neighbourhood of a checked placement (it is a point of the
            # model); counted, never searched from a wrong start.
            stats["hint_fallbacks"] += 1
            break
        if kick is not None and kick not in model.x:
            kick_jobs.remove(kick)  # the model cannot hold it (e.g. its locality)
            continue
        backend = make_backend()
        backend.load(model.lm)
        if kick is not None:
            backend.add_row({model.x[kick]: 1}, 1, None)
        for j in keep:
            # The LP's gangs stay placed once placed (they may move): x_j >= 1.
            if j in model.x and current.placements.get(j):
                backend.add_row({model.x[j]: 1}, 1, None)
        coefs = dict(model.tier1.terms)
        before = sum(c * hint[i] for i, c in coefs.items())
        clock.charge(budget)
        guard = deterministic_wall_limit(budget) if clock.deterministic else budget
        with deadline_token(ctx.cancel, guard * 1.05 + 0.1) as cancel:
            run, final = backend.run("max", coefs, 0.0, hint, budget, cancel, lambda v, b: None)
        lns_stats["neighbourhoods"] += 1
        stalled += 1
        if run.status == RunStatus.ERROR:
            break
        values = [int(round(v)) for v in final] if final is not None else None
        if values is None or not model.feasible(values):
            continue
        value = sum(c * values[i] for i, c in coefs.items())
        if kick is not None:
            lns_stats["kicks"] += 1
            lns_stats.setdefault("kicked", []).append(
                (instance.jobs[kick].name, round(model.tier1.value(values) / MILLI, 2))
            )
            kick_jobs.remove(kick)
        elif value <= before:
            continue
        solution = model.decode(values)
        kept = ctx.report(solution, backend.source, valid)  # checked; a rejected one logged
        lns_stats["improved"] += int(kept)
        on_graft = on_graft and not kept
        # Searched from even when not better than the incumbent (after a kick), once the
        # checker has accepted it (ctx.report keeps only improvements).
        if kept or check(instance, solution).feasible:
            current, stalled = solution, 0
    lns_stats["seconds"] += time.monotonic() - started


def _lns_start(
    instance: GpuInstance, incumbent: GpuSolution, stats: dict[str, Any]
) -> GpuSolution | None:
    """Where the large-neighbourhood search starts: the integer master's placement (else
    ``incumbent``) with the jobs that the configuration LP places at least
    :data:`GRAFT_MIN_X` and that it leaves out grafted in as the LP rounding places them
    (:func:`.lns.graft`). None when there is nothing to graft (the search then starts from
    the incumbent).

    The integer master's placement keeps the LP's packings, but drops gangs the LP places,
    such as a rack gang of eight 4-GPU workers that no 400-variable neighbourhood can put
    back; the rounding keeps them but climbs worse. Measured on the 1,024-GPU instances
    (docs/benchmarks.md, issue 19): on seed 3 the graft loses 0.3 and the search from it
    climbs 0.4 % above what it reached from the incumbent; elsewhere it can lose much more
    (:data:`GRAFT_MAX_LOSS`)."""
    placements = stats.get("lp_placements", {})
    donor = placements.get("rounding")
    if donor is None:
        return None
    start = placements.get("integer master", incumbent)
    lp_x = stats.get("config_lp", {}).get("lp_x", {})
    jobs = sorted(j for j, x in lp_x.items() if x >= GRAFT_MIN_X - 1e-6)
    return graft(instance, start, donor, jobs)


def _configuration_lp(
    instance: GpuInstance,
    cluster: FreeCapacity,
    ctx: ExactContext,
    clock: _Clock,
    lp_bound: int | None,
    stats: dict[str, Any],
) -> tuple[int | None, list[list[int]] | None]:
    """Run :func:`configuration_search` on :data:`CONFIG_LP_SHARE` of the time left: report
    its placements (checked by ``ctx.report``); return the tighter of its bound and
    ``lp_bound`` (both valid for the whole instance) and its candidate nodes per job."""
    budget = CONFIG_LP_SHARE * clock.left()
    if budget < CONFIG_LP_MIN_SECONDS or ctx.cancel.cancelled:
        return lp_bound, None
    started = time.monotonic()
    clock.charge(budget)
    search = configuration_search(
        instance, cluster, ctx.incumbent(), budget, ctx.cancel, options=ctx.options
    )
    found = search.bound
    bound = found.bound
    if bound is not None:
        lp_bound = bound if lp_bound is None else min(lp_bound, bound)
    valid = None if lp_bound is None else lp_bound / MILLI
    if valid is not None:
        ctx.update_bound(valid)
    for source, solution in search.solutions:
        ctx.report(solution, f"config-lp {source}", valid)
    # Kept (checked or not) for the large-neighbourhood search's start (_lns_start).
    stats["lp_placements"] = dict(search.solutions)
    stats["config_lp"] = {
        "bound": None if bound is None else bound / MILLI,
        "lp_value": None if found.lp_value is None else found.lp_value / MILLI,
        "iterations": found.iterations,
        "columns": found.columns,
        "classes": found.classes,
        "converged": found.converged,
        "wholly_placed": sorted(j for j, x in found.placed.items() if x >= 1 - 1e-6),
        "lp_x": dict(found.placed),
        "message": found.message,
        "seconds": time.monotonic() - started,
    }
    return lp_bound, search.candidates


def _lex_key(instance: GpuInstance, model: GpuModel, values: Values) -> tuple[float, ...]:
    """The checker's lexicographic score of the decoded ``values`` (larger is better)."""
    report = check(instance, model.decode(values))
    if not report.feasible:
        return (-math.inf,)
    return report.score()


def _floor_bound(bound: float) -> int:
    """An integer bound on an integer objective from a floating-point solver bound."""
    return int(math.floor(bound + 1e-4 + 1e-9 * abs(bound)))


class TieredEncoding:
    """An exact encoding of the GPU family: :func:`solve_tiers` over one backend.

    Subclasses name their :class:`TierBackend` factory in ``tier_backend``.

    Parameters
    ----------
    max_placement_vars:
        Above this model size each job is restricted to candidate nodes (see
        :data:`MAX_PLACEMENT_VARS`).
    """

    tier_backend: Callable[[ExactContext], TierBackend]

    def __init__(self, max_placement_vars: int = MAX_PLACEMENT_VARS) -> None:
        self.max_placement_vars = max_placement_vars
        self.last_stats: dict[str, Any] = {}

    def solve(self, instance: GpuInstance, ctx: ExactContext) -> ExactOutcome:
        """Solve the three objective tiers lexicographically.

        Parameters
        ----------
        instance:
            The instance.
        ctx:
            The portfolio context: options, cancellation, deadline, incumbent, reporting.

        Returns
        -------
        ExactOutcome
            See :func:`solve_tiers`; ``last_stats`` keeps the tier statuses, model size and
            the model's objective values.
        """
        self.last_stats = {}
        factory = type(self).tier_backend
        return solve_tiers(
            instance,
            ctx,
            lambda: factory(ctx),
            max_placement_vars=self.max_placement_vars,
            stats=self.last_stats,
        )
