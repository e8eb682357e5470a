"""The exact phase of the R||Cmax search: the LP, the descent, the subset steps and HiGHS on
the whole model, until the deadline; and which instances it is for (:func:`applicable`)."""

from __future__ import annotations

import math
import threading
import time
from typing import Any

import numpy as np

from placement.models.dag.greedy import back_to_back, pure_assignment
from placement.models.dag.instance import DagInstance
from placement.models.dag.rcmax.critical import balance, relieve
from placement.models.dag.rcmax.descent import descend
from placement.models.dag.rcmax.exchange import Exchange, run_full_milp
from placement.models.dag.rcmax.lns import MachineLns
from placement.models.dag.rcmax.loads import REL_EPS, Loads
from placement.models.dag.rcmax.lp import lower_bound_from_lp, lp_assignment, priced_lp
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.options import deterministic_wall_limit
from placement.solver.result import StopReason

MAX_CELLS = 2_000_000
"""Tasks x machines above which the search is not run (the dense matrices of a step)."""

DETERMINISTIC_STEPS_PER_S = 4
"""Large-neighbourhood steps per second of ``time_limit_s`` under ``deterministic``."""

DETERMINISTIC_STEP_NODES = 200
"""MILP nodes per step under ``deterministic`` (instead of a time limit)."""

FINISH_MARGIN_S = 0.2
"""Seconds kept before the deadline to stop the threads and hand back the result."""

LNS_MACHINES = 3
"""Machines per subset step at first (the most loaded one and others drawn at random)."""

STEP_TIME_LIMIT_S = 0.5
"""Wall-clock limit of each subset MILP (outside ``deterministic``)."""

BALANCE_SHARE = 0.25
"""At most this share of the time left goes to levelling the LP's rounding (:func:`balance`;
a fraction of a second at 512 x 16, tens of seconds at 4,096 x 128 on a loaded machine)."""

RELIEVE_SHARE = 0.1
"""At most this share of the time left goes to each start's critical-machine descent (from a
poor start on a consistent 4,096 x 128 matrix it ran 27 s on a loaded machine)."""

PROGRESS_S = 0.25
"""While a start's critical-machine descent runs, its state is reported at most this often
(the descent of the first start ran 5-9 s at 4,096 x 128 under load before its first
report, so the first improvement over the heuristics was seen only then)."""

FULL_DESCENT_MAX_CELLS = 65_536
"""Tasks x machines up to which the starts also get the full descent (:func:`descend`, every
task against every machine per step: tens of milliseconds a step at 4,096 x 128, where the
critical-machine descent takes one)."""

FULL_MILP_MAX_CELLS = 65_536
"""Tasks x machines up to which HiGHS runs on the whole assignment model beside the search.
Above it (2,048 x 64 and up) HiGHS spends the budget in presolve and the root and finds
nothing the search does not (measured at 4,096 x 128: 9.5 % above the LP after 30 s), so the
search has both the time and the core."""


def applicable(instance: DagInstance) -> bool:
    """R||Cmax: independent tasks, only machine loads matter, and the makespan objective."""
    n, k = instance.duration.shape
    return (
        instance.objective == "makespan"
        and pure_assignment(instance)
        and k >= 2
        and n * k <= MAX_CELLS
    )


def solve_assignment(
    instance: DagInstance, ctx: ExactContext, full_milp: bool = True
) -> ExactOutcome:
    """The exact phase for R||Cmax.

    1. The LP relaxation: a lower bound, and a rounded assignment; the descent from it and
       from the portfolio's incumbent (the best heuristic).
    2. Until the deadline, side by side: HiGHS on the whole assignment model (warm-started,
       ``threads - 1`` threads) and :class:`MachineLns` in this thread. Each adopts the
       other's better assignments (HiGHS through its user-solution callback).

    Every assignment is reported through ``ctx.report`` (the checker) from this thread. With
    ``deterministic`` (or one thread) the two run one after the other instead: the search on
    a step budget first, then HiGHS for the time left. With ``full_milp=False`` only the
    search runs, for the whole time given.
    """
    options = ctx.options
    d = instance.duration
    started = time.monotonic()
    deadline = started + ctx.time_left()
    deterministic = bool(options.deterministic)

    def left() -> float:
        return deadline - time.monotonic() - FINISH_MARGIN_S

    def over() -> bool:
        if ctx.cancel.cancelled:
            return True
        if deterministic:
            # A work budget, not the clock; the wall-clock guard is CP-SAT's.
            return time.monotonic() - started > deterministic_wall_limit(deadline - started)
        return left() <= 0

    best: list[Any] = [math.inf, None]  # makespan, schedule

    def report(machine: np.ndarray, source: str) -> None:
        span = float(np.bincount(machine, weights=d[np.arange(len(machine)), machine]).max())
        if span < best[0]:
            best[:] = [span, back_to_back(instance, machine)]
            # With the bound known now (the LP's), so that the incumbent's gap is current.
            ctx.report(best[1], source, bound)

    def meets_bound() -> bool:
        return bound is not None and best[0] <= bound + REL_EPS * max(1.0, bound)

    def within(share: float) -> Any:
        """A stop test for a start's descent: the deadline, or ``share`` of the time left."""
        until = time.monotonic() + share * max(0.0, left())
        return lambda: over() or time.monotonic() > until

    def progress(state: Loads) -> Any:
        """An ``on_progress`` for :func:`relieve`: report ``state`` at most every
        :data:`PROGRESS_S` seconds (:func:`report` keeps only improvements)."""
        last = [time.monotonic()]

        def call() -> None:
            now = time.monotonic()
            if now - last[0] >= PROGRESS_S:
                last[0] = now
                report(state.a, "grid-search")

        return call

    bound: float | None = None
    n, k = d.shape
    cells = n * k
    candidates: list[Loads] = []
    incumbent = ctx.incumbent()
    if incumbent is not None:
        # First the critical-machine descent from the best heuristic: an improvement within
        # milliseconds at any size (reported before the LP).
        first = Loads(d, np.asarray(incumbent.machine, dtype=np.int64))
        relieve(first, should_stop=within(RELIEVE_SHARE), on_progress=progress(first))
        report(first.a, "grid-search")
        candidates.append(first)
    lp = priced_lp(
        d,
        max(1.0, left()) if deterministic else max(0.01, left()),
        start=None if incumbent is None else np.asarray(incumbent.machine, dtype=np.int64),
    )
    if lp is not None:
        bound = lower_bound_from_lp(instance, lp.bound)
        ctx.update_bound(bound)
        rounding = lp_assignment(d, lp.share)
        rounded = Loads(d, rounding)
        relieve(rounded, should_stop=within(RELIEVE_SHARE), on_progress=progress(rounded))
        report(rounded.a, "grid-search")
        candidates.append(rounded)
        # The rounding levelled with least extra weighted work, then relieved: the better
        # start on most instances (512 x 16 u_i_hihi: 1.5 % above the LP against 2.9 %).
        levelled = Loads(d, rounding)
        balance(levelled, lp.bound, lp.weight, should_stop=within(BALANCE_SHARE))
        relieve(
            levelled,
            should_stop=within(RELIEVE_SHARE),
            on_progress=progress(levelled),
            weight=lp.weight,
        )
        candidates.append(levelled)
    if not candidates:
        return ExactOutcome(stop_reason=StopReason.TIME_LIMIT, bound=bound)
    if cells <= FULL_DESCENT_MAX_CELLS:
        for cand in candidates:
            descend(cand, 100_000, over)
    state = min(candidates, key=lambda c: c.makespan)
    report(state.a, "grid-search")

    limit = STEP_TIME_LIMIT_S
    lns = MachineLns(
        state,
        options.seed,
        size=LNS_MACHINES,
        step_time_limit_s=1e6 if deterministic else limit,
        step_max_nodes=DETERMINISTIC_STEP_NODES if deterministic else None,
    )
    full_milp = full_milp and cells <= FULL_MILP_MAX_CELLS
    together = (
        full_milp and not deterministic and options.effective_threads >= 2 and not meets_bound()
    )
    milp_result: dict[str, Any] = {}
    phases: dict[str, float] = {}

    def milp_bound_seen(value: float) -> None:
        # HiGHS's dual bound as it rises (from its thread: update_bound takes a lock).
        ctx.update_bound(lower_bound_from_lp(instance, value))

    exchange = Exchange()
    thread = None
    if together:
        thread = threading.Thread(
            target=run_full_milp,
            args=(
                d,
                state.a.copy(),
                options,
                max(1, options.effective_threads - 1),
                left(),
                ctx.cancel,
                exchange,
                milp_result,
                milp_bound_seen,
            ),
            daemon=True,
        )
        thread.start()
    budget = int(DETERMINISTIC_STEPS_PER_S * float(options.time_limit_s)) if deterministic else None
    if full_milp and not together:
        # One after the other: half the time (or the step budget) for the search.
        search_until = time.monotonic() + 0.5 * max(0.0, left())
    else:
        search_until = math.inf
    exhausted = False
    try:
        while not over() and not exhausted and not meets_bound():
            if budget is not None and lns.steps >= budget:
                break
            if budget is None and time.monotonic() >= search_until:
                break
            if together:
                with exchange.lock:
                    found, exchange.from_milp = exchange.from_milp, []
                for machine in found:
                    report(machine, "milp-highs")
                better = [m for m in found if Loads(d, m).makespan < state.makespan]
                if better:
                    lns.adopt(min(better, key=lambda m: Loads(d, m).makespan))
                if thread is not None and not thread.is_alive() and milp_result.get("proven"):
                    break
            step_limit = None if deterministic else max(0.01, min(limit, left()))
            improved = lns.step(step_limit)
            if improved is None and thread is not None and thread.is_alive():
                # Nothing left for the search: leave HiGHS the time (its next solution
                # gives the search a new start).
                time.sleep(0.05)
            elif improved is None:
                exhausted = True
            elif improved:
                report(state.a, "grid-search")
                if together:
                    with exchange.lock:
                        exchange.to_milp = state.a.copy()
    finally:
        exchange.stop.set()
        if thread is not None:
            thread.join()
    if together:
        for machine in exchange.from_milp:
            report(machine, "milp-highs")
    elif full_milp and not ctx.cancel.cancelled and left() > 0 and not meets_bound():
        # A fresh exchange: the search's one has its stop flag set (it ended the search
        # above), and HiGHS would stop at its first interrupt check.
        exchange = Exchange()
        highs_started = time.monotonic()
        run_full_milp(
            d,
            state.a.copy(),
            options,
            options.effective_threads,
            left(),
            ctx.cancel,
            exchange,
            milp_result,
            milp_bound_seen,
        )
        for machine in exchange.from_milp:
            report(machine, "milp-highs")
        phases["highs"] = time.monotonic() - highs_started

    milp_bound = milp_result.get("bound")
    if milp_bound is not None:
        milp_bound = lower_bound_from_lp(instance, milp_bound)
        bound = milp_bound if bound is None else max(bound, milp_bound)
    # Optimal when HiGHS proved it, or when the LP bound (rounded to the time grid) is met.
    proven = best[1] is not None and (bool(milp_result.get("proven")) or meets_bound())
    if ctx.cancel.cancelled:
        stop = StopReason.CANCELLED
    elif proven:
        stop = StopReason.PROVEN
    elif exhausted and not full_milp:
        stop = StopReason.SEARCH_EXHAUSTED
    else:
        stop = StopReason.TIME_LIMIT
    # The search (with HiGHS beside it when together); HiGHS after it on its own line.
    phases = {"rcmax": time.monotonic() - started - phases.get("highs", 0.0), **phases}
    return ExactOutcome(
        stop_reason=stop,
        bound=bound,
        phase_times_s=phases,
        proven_optimal=proven,
        proven_solution=best[1] if proven else None,
        message="; ".join(
            ([] if proven or full_milp else ["grid search only: no proof"])
            + (
                ["HiGHS did not stop at its time limit and was abandoned"]
                if milp_result.get("abandoned")
                else []
            )
        ),
    )
