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
from placement.models.dag.rcmax.construct import cheapest, weighted_starts
from placement.models.dag.rcmax.critical import balance, relieve
from placement.models.dag.rcmax.descent import descend
from placement.models.dag.rcmax.exchange import Exchange, run_full_milp
from placement.models.dag.rcmax.lns import MachineLns
from placement.models.dag.rcmax.loads import REL_EPS, Loads
from placement.models.dag.rcmax.lp import lower_bound_from_lp, lp_assignment, priced_lp
from placement.models.dag.rcmax.parametric import ascend, needed_pairs, parametric_bound
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

INCUMBENT_RELIEVE_S = 0.25
"""At most this long (or :data:`RELIEVE_SHARE` of the time left, if less) for the
critical-machine descent from the portfolio's incumbent, the search's first step: from a
poor HEFT start at 4,096 x 128 it ran 6 s without reaching Min-Min, where the weighted
starts after it (:func:`~.construct.weighted_starts`) get within a few per cent of the
bound in about 2 s."""

ASCENT_STEPS = 300
"""Steps of the Lagrangian weights' first ascent (:func:`~.parametric.ascend`): about 1-2 s
at 4,096 x 128 on a loaded machine, within 0.003 % of the LP on u_s_hihi and u_c_hihi
(after the first 50: 0.1 % and 0.3 %); the LP's exact duals follow (:func:`~.lp.priced_lp`, seeded
with these weights' cheapest columns: one round of 2 s at u_s_hihi 4,096 x 128, where
the columns from times alone took five rounds and 32-39 s)."""

BALANCE_MAX_CELLS = 65_536
"""Tasks x machines up to which the LP's rounding is also levelled by :func:`balance`
(measured at 4,096 x 128: 20 s of a 60 s budget under load, and not the best start, where
the weighted descent from the LP's cheapest machines takes 0.4 s)."""

ASCENT_FIRST_STEPS = 50
"""Ascent steps before the first weighted start (reported at once; the ascent then goes on
to :data:`ASCENT_STEPS` with first step :data:`ASCENT_SECOND_STEP`)."""

ASCENT_SECOND_STEP = 0.1

ASCENT_SHARE = 0.1
"""At most this share of the time left for the first ascent."""

PARAMETRIC_ROUNDS = 3
"""Rounds of the parametric bound after the LP: each an ascent of the weights at the cap
just above the bound so far (:data:`PARAMETRIC_STEPS` steps, step size
:data:`PARAMETRIC_STEP`), then a bisection (:func:`~.parametric.parametric_bound`)."""

PARAMETRIC_STEPS = 150
PARAMETRIC_STEP = 0.03
"""Steps and first step size of each parametric round's ascent (measured on u_s_hihi
4,096 x 128: 0.03 reaches 993.86 against the LST bound's 993.88 by HiGHS, the plain LP
991.01; 0.01 reaches 993.85, 0.003 993.80)."""

RESTART_SHARE = 0.5
"""Above :data:`FULL_DESCENT_MAX_CELLS`, this share of the time left after the starts goes
to restarts from the parametric weights under noise (:data:`RESTART_NOISE`): each start
takes 0.2-0.5 s at 4,096 x 128, and the weights are one of many near-optimal ones (two LP
runs on u_s_hihi 4,096 x 128 gave starts of 1,009.5 and 1,014.9 from their duals). From
the parametric weights the restarts rarely beat the first start (u_s_hihi: 1,001.73 ->
1,001.71); a share of 0.2 instead of 0.5 ended at the same 1,001.18 there."""

RESTART_NOISE = (0.003, 0.01, 0.03)
"""Standard deviations of the log-normal noise on the weights of successive restarts."""

DETERMINISTIC_RESTARTS = 8
"""Restarts under ``deterministic`` (a count, not a share of the clock)."""

PROGRESS_COST_RATIO = 4.0
"""Progress reports come at most every this many times the last report's cost: the
portfolio checks each one (0.2 s at 4,096 x 128 under load), and at one every 0.25 s the
checks took nearly half of the starts' time."""

FULL_DESCENT_MAX_CELLS = 65_536
"""Tasks x machines up to which the starts also get the full descent (:func:`descend`, every
task against every machine per step: tens of milliseconds a step at 4,096 x 128, where the
critical-machine descent takes one)."""

FULL_MILP_MAX_CELLS = 65_536
"""Tasks x machines up to which HiGHS runs on the whole assignment model: beside the search
with two threads or more, after it with one."""

BESIDE_WHOLE_MAX_CELLS = 131_072
"""Above :data:`FULL_MILP_MAX_CELLS` and up to this (2,048 x 64), HiGHS runs on the whole
model beside the search (after the restarts) when it has a thread of its own (two threads or
more, not ``deterministic``): the search uses one core, and from the search's incumbent
HiGHS's root cuts raise the bound (u_i_hihi 2,048 x 64, 55 s from the search's 60-s
schedule, root node only: 781.83 -> 784.40; u_s_hihi, u_s_lohi, u_i_lohi +0.13 %, +0.17 %,
+0.24 %). Its schedules rarely beat the search's."""

BESIDE_MILP_MAX_CELLS = 524_288
"""Above :data:`BESIDE_WHOLE_MAX_CELLS` and up to this (4,096 x 128), likewise, but on the
pairs a better schedule may use (:func:`~.parametric.needed_pairs`, with the parametric
weights and the best start's makespan) and from before the restarts: the whole model's root
overran a 55-s limit by 35 s there (u_s_hihi, 994.27 against the parametric 993.86), on the
needed pairs (330,812 of 524,288) it ended within 50 s at 994.63. (At 2,048 x 64 the needed
pairs, from before the restarts, gave no better gaps in a full run: 0.32 % mean, 0.86 % max,
against 0.30 % and 0.74 %.)"""

BESIDE_FINISH_S = 1.5
"""Seconds before the search that HiGHS on the needed pairs is told to stop: its root cut
rounds at 4,096 x 128 check the clock about once a second (wall times of 60.1-61.2 s for a
60-s solve without this margin)."""


WEIGHTED_STARTS_MIN_CELLS = 16_384
"""Tasks x machines above which the search starts from the Lagrangian weights (the
weighted starts of the ascent's and the LP's weights) and seeds the LP's pricing with them.
At and below it (Braun 512 x 16) the starts are those of the code that met 0.1 % of the best
known on all 12 Braun instances (the incumbent, the LP rounding and its levelling; the
ascent and the parametric bound still run, for the bound): with the weighted starts
u_c_lohi.0 ended 0.125-0.135 % above its best known in three 60 s runs, without them
0.055-0.056 % in two (load 2.6-3.4), and u_i_lohi.0 -0.021 % against 0.064 % with them
(load 0.8-1.8)."""

PARAMETRIC_STARTS_MIN_CELLS = 65_536
"""Tasks x machines above which the search also starts from the parametric weights on the
capped times (:func:`capped`); at and below it (1,024 x 32, Braun 512 x 16) it runs as
before them (u_s_hihi 1,024 x 32 with them: the same 2,397.34 after 60 s)."""

PAIR_CAP = 1.01
"""The starts from the parametric weights use only the pairs up to this multiple of the
parametric bound (measured on u_s_hihi 4,096 x 128 with 20 restarts each: caps of 1.0002,
1.003, 1.006 and 1.01 times the bound gave 1,002.6, 1,002.6, 1,001.9 and 1,001.8; the LP's
weights on every pair 1,007.3)."""


def capped(d: np.ndarray, bound: float) -> np.ndarray:
    """``d`` without the pairs longer than :data:`PAIR_CAP` x ``bound`` (``inf`` there), but
    every task keeps at least its fastest machine."""
    cap = max(PAIR_CAP * bound, float(np.min(d, axis=1).max()))
    return np.where(d <= cap, d, np.inf)


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

    report_cost = [0.0]  # seconds the last report took (the portfolio's checker)

    def report(machine: np.ndarray, source: str) -> None:
        span = float(np.bincount(machine, weights=d[np.arange(len(machine)), machine]).max())
        if span < best[0]:
            t0 = time.monotonic()
            best[:] = [span, back_to_back(instance, machine)]
            # With the bound known now (the LP's), so that the incumbent's gap is current.
            ctx.report(best[1], source, bound)
            report_cost[0] = time.monotonic() - t0

    def meets_bound() -> bool:
        return bound is not None and best[0] <= bound + REL_EPS * max(1.0, bound)

    def within(share: float) -> Any:
        """A stop test for a start's descent: the deadline, or ``share`` of the time left."""
        until = time.monotonic() + share * max(0.0, left())
        return lambda: over() or time.monotonic() > until

    def within_s(share: float, seconds: float) -> Any:
        """As :func:`within`, and at most ``seconds`` (outside ``deterministic``)."""
        until = time.monotonic() + min(seconds, share * max(0.0, left()))
        return lambda: over() or (not deterministic and time.monotonic() > until)

    def strengthen(weight: np.ndarray, low: float) -> tuple[float, float, np.ndarray]:
        """The parametric bound from the LP's weights and ``low`` (the LP value): the safe
        bound on the makespan (:func:`lower_bound_from_lp`), the raw value and the weights
        of the last round (those of ``g_T`` at ``T`` just above the bound)."""
        high = best[0] if math.isfinite(best[0]) else 2.0 * max(low, 1e-9)
        value = parametric_bound(d, weight, low, high)
        w = weight
        for _ in range(PARAMETRIC_ROUNDS):
            if over() or value >= high:
                break
            w, _ = ascend(
                d,
                w,
                cap=value * (1 + 2e-4),
                max_steps=PARAMETRIC_STEPS,
                should_stop=over,
                step=PARAMETRIC_STEP,
            )
            value = max(value, parametric_bound(d, w, value, high))
        return lower_bound_from_lp(instance, value), value, w

    def weighted(
        weight: np.ndarray, low: float, first_only: bool = False, times: np.ndarray = d
    ) -> Loads:
        """The best of :func:`~.construct.weighted_starts` (only the first with
        ``first_only``) after the weighted, then the plain, critical-machine descent (each
        start reported as it goes). ``times``: the running times the starts and their
        descents may use (``d``, or ``d`` without its long pairs, :func:`capped`)."""
        out: Loads | None = None
        for machine in weighted_starts(times, weight, low)[: 1 if first_only else None]:
            state = Loads(times, machine)
            relieve(
                state,
                should_stop=within(RELIEVE_SHARE),
                on_progress=progress(state),
                weight=weight,
            )
            relieve(state, should_stop=within(RELIEVE_SHARE), on_progress=progress(state))
            report(state.a, "grid-search")
            if out is None or state.makespan < out.makespan:
                out = state
        assert out is not None
        return out

    def restarts(state: Loads, weight: np.ndarray, times: np.ndarray) -> Loads:
        """Weighted starts on ``times`` from ``weight`` (the parametric weights) under
        seeded multiplicative noise (around the weights of the best start so far), each
        after the weighted and plain
        critical-machine descents, for :data:`RESTART_SHARE`
        of the time left (:data:`DETERMINISTIC_RESTARTS` starts under ``deterministic``);
        the best of them and ``state``."""
        rng = np.random.default_rng(options.seed)
        center = weight
        until = time.monotonic() + RESTART_SHARE * max(0.0, left())
        tried = 0
        while not over():
            if deterministic and tried >= DETERMINISTIC_RESTARTS:
                break
            if not deterministic and time.monotonic() > until:
                break
            noise = RESTART_NOISE[tried % len(RESTART_NOISE)]
            w = center * np.exp(noise * rng.standard_normal(len(center)))
            trial = Loads(times, cheapest(times, w))
            relieve(trial, should_stop=over, weight=w)
            relieve(trial, should_stop=over)
            tried += 1
            if trial.makespan < state.makespan:
                # A (1+1) evolution strategy on the weights: the next noise around these.
                state, center = trial, w
                report(state.a, "grid-search")
        return state

    def progress(state: Loads) -> Any:
        """An ``on_progress`` for :func:`relieve`: report ``state`` at most every
        :data:`PROGRESS_S` seconds, and at most every :data:`PROGRESS_COST_RATIO` times
        the last report's cost (:func:`report` keeps only improvements)."""
        last = [time.monotonic()]

        def call() -> None:
            now = time.monotonic()
            if now - last[0] >= max(PROGRESS_S, PROGRESS_COST_RATIO * report_cost[0]):
                last[0] = now
                report(state.a, "grid-search")

        return call

    bound: float | None = None
    n, k = d.shape
    cells = n * k
    candidates: list[Loads] = []
    incumbent = ctx.incumbent()
    if incumbent is not None and cells > FULL_DESCENT_MAX_CELLS:
        # A start as it is: the weighted starts below beat the greedy phase's HEFT and MCT
        # by far at this size, and each report costs a check (0.2 s at 4,096 x 128).
        candidates.append(Loads(d, np.asarray(incumbent.machine, dtype=np.int64)))
    elif incumbent is not None:
        # First the critical-machine descent from the best heuristic: an improvement within
        # milliseconds at any size (reported before the LP).
        first = Loads(d, np.asarray(incumbent.machine, dtype=np.int64))
        relieve(
            first,
            should_stop=within_s(RELIEVE_SHARE, INCUMBENT_RELIEVE_S),
            on_progress=progress(first),
        )
        report(first.a, "grid-search")
        candidates.append(first)
    # Lagrangian machine weights by mirror ascent: a bound (the LP's, nearly) in about a
    # second, and the prices of weighted starts (under ``deterministic`` a step budget).
    # First a short ascent and one start from it (the first improvement over the heuristics
    # at 4,096 x 128), then the rest of the ascent and both starts.
    weighted_starts_here = cells > WEIGHTED_STARTS_MIN_CELLS
    stop_ascent = None if deterministic else within(ASCENT_SHARE)
    weight, value = ascend(d, max_steps=ASCENT_FIRST_STEPS, should_stop=stop_ascent)
    if math.isfinite(value) and value > 0:
        if weighted_starts_here:
            candidates.append(weighted(weight, value, first_only=True))
        weight, value = ascend(
            d,
            weight,
            max_steps=ASCENT_STEPS - ASCENT_FIRST_STEPS,
            should_stop=None if deterministic else within(ASCENT_SHARE),
            step=ASCENT_SECOND_STEP,
        )
    guided = math.isfinite(value) and value > 0
    if guided:
        bound = lower_bound_from_lp(instance, value)
        ctx.update_bound(bound)
        if weighted_starts_here:
            candidates.append(weighted(weight, value))
    lp = priced_lp(
        d,
        max(1.0, left()) if deterministic else max(0.01, left()),
        start=None if incumbent is None else np.asarray(incumbent.machine, dtype=np.int64),
        weight=weight if guided and weighted_starts_here else None,
    )
    if lp is not None:
        lp_bound = lower_bound_from_lp(instance, lp.bound)
        bound = lp_bound if bound is None else max(bound, lp_bound)
        ctx.update_bound(bound)
        if weighted_starts_here:
            candidates.append(weighted(lp.weight, lp.bound))
        rounding = lp_assignment(d, lp.share)
        rounded = Loads(d, rounding)
        relieve(rounded, should_stop=within(RELIEVE_SHARE), on_progress=progress(rounded))
        report(rounded.a, "grid-search")
        candidates.append(rounded)
        # The parametric (Lenstra-Shmoys-Tardos) bound: no pair longer than the makespan.
        safe, value, pweight = strengthen(lp.weight, lp.bound)
        bound = max(bound, safe)
        ctx.update_bound(bound)
        # Above PARAMETRIC_STARTS_MIN_CELLS, starts (and the restarts) from the parametric
        # weights on the pairs a schedule near the bound may use (formulations/dag.md 5.3
        # step 2): on the hi-task classes the LP splits tasks longer than the makespan, and
        # its weights price them as if they could be split (u_s_hihi 4,096 x 128: 1,001.2
        # against 1,005.0 after 60 s).
        times = capped(d, value)
        if cells > PARAMETRIC_STARTS_MIN_CELLS:
            candidates.append(weighted(pweight, value, times=times))
        if cells <= BALANCE_MAX_CELLS:
            # The rounding levelled with least extra weighted work, then relieved: the
            # better start on most instances (512 x 16 u_i_hihi: 1.5 % above the LP
            # against 2.9 %).
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

    beside = not deterministic and options.effective_threads >= 2
    full_milp = full_milp and (
        cells <= FULL_MILP_MAX_CELLS
        or (beside and lp is not None and cells <= BESIDE_MILP_MAX_CELLS)
    )
    together = full_milp and beside and not meets_bound()
    milp_result: dict[str, Any] = {}
    phases: dict[str, float] = {}

    def milp_bound_seen(value: float) -> None:
        # HiGHS's dual bound as it rises (from its thread: update_bound takes a lock).
        ctx.update_bound(lower_bound_from_lp(instance, value))

    exchange = Exchange()
    thread = None

    def start_highs(pairs: np.ndarray | None, margin_s: float) -> threading.Thread:
        highs = threading.Thread(
            target=run_full_milp,
            args=(
                d,
                state.a.copy(),
                options,
                max(1, options.effective_threads - 1),
                max(0.0, left() - margin_s),
                ctx.cancel,
                exchange,
                milp_result,
                milp_bound_seen,
                pairs,
            ),
            daemon=True,
        )
        highs.start()
        return highs

    if together and cells > BESIDE_WHOLE_MAX_CELLS:
        # On the pairs a better schedule may use (the others fixed by the parametric
        # weights' reduced costs: a valid bound all the same), from the best start, before
        # the restarts: the root takes most of the minute at 4,096 x 128.
        pairs = needed_pairs(d, pweight, state.makespan, start=state.a)
        thread = start_highs(pairs, BESIDE_FINISH_S)
    if lp is not None and cells > FULL_DESCENT_MAX_CELLS:
        state = restarts(state, pweight, times)
        if thread is not None:
            with exchange.lock:
                exchange.to_milp = state.a.copy()
    if together and thread is None:
        thread = start_highs(None, 0.0)

    limit = STEP_TIME_LIMIT_S
    lns = MachineLns(
        state,
        options.seed,
        size=LNS_MACHINES,
        step_time_limit_s=1e6 if deterministic else limit,
        step_max_nodes=DETERMINISTIC_STEP_NODES if deterministic else None,
    )
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
