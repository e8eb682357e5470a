"""OR-Tools CP-SAT: time limit, hint, incumbent callback, stop, status map."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions, deterministic_wall_limit
from placement.solver.result import StopReason

QUICK_PROOF_MAX_VARIABLES = 2_000
"""Models with at most this many variables get a quick proof attempt first (see
:meth:`CpSat.run`)."""

QUICK_PROOF_S = 0.05
"""Wall-clock limit of that attempt; the full search gets the time left after it."""


class CpSat:
    """The CP-SAT backend."""

    NAME = "cpsat"
    REQUIRED_MODULES = ("ortools",)
    SUPPORTS_HINT = True
    SUPPORTS_INCUMBENT_CALLBACK = True
    SUPPORTS_CANCEL = True
    REPORTS_BOUND = True
    INTEGER_COEFFICIENTS_ONLY = True

    @staticmethod
    def run(
        model: Any,
        options: SolveOptions,
        cancel: CancellationToken,
        time_limit_s: float,
        on_solution: Callable[[Any], None] | None = None,
        single_strategy: bool = False,
        parameters: dict[str, Any] | None = None,
    ) -> BackendRun:
        """Solve a ``cp_model.CpModel``; ``on_solution(callback)`` sees each new solution.

        The returned run's ``values`` is empty: read values through ``run.solver`` (attached
        as attribute ``solver`` on the returned object) or in ``on_solution``. With
        ``single_strategy`` one worker runs CP-SAT's default single search strategy instead
        of interleaving its portfolio (outside deterministic mode). ``parameters``: CP-SAT
        parameters set last, on every run (e.g. ``{"cp_model_presolve": False}``).
        """
        # OR-Tools loads a large native library: imported on first use.
        from ortools.sat.python import cp_model

        started = time.monotonic()
        if cancel.cancelled:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
        if time_limit_s <= 0:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT)

        class _Callback(cp_model.CpSolverSolutionCallback):
            def on_solution_callback(self) -> None:
                if on_solution is not None:
                    on_solution(self)

        first: BackendRun | None = None
        if (
            not options.deterministic
            and len(model.proto.variables) <= QUICK_PROOF_MAX_VARIABLES
            and time_limit_s > QUICK_PROOF_S
        ):
            # A small model: one worker without presolve, probing, symmetry or linearization
            # proves it in about a millisecond, where starting the full portfolio costs 3-12
            # (docs/benchmarks/service-latency.md). Only a proof ends the solve here; otherwise
            # the full search runs for the time left, as without this try.
            first = CpSat._solve_once(
                model,
                options,
                cancel,
                QUICK_PROOF_S,
                _Callback(),
                started,
                quick=True,
                parameters=parameters,
            )
            if first.stop_reason in (StopReason.PROVEN, StopReason.GAP_REACHED, StopReason.ERROR):
                return first
            if cancel.cancelled:
                return first
        left = time_limit_s - (time.monotonic() - started)
        if first is not None and left <= 0:
            return first
        run = CpSat._solve_once(
            model,
            options,
            cancel,
            left,
            _Callback(),
            started,
            single_strategy=single_strategy,
            parameters=parameters,
        )
        if first is not None and first.has_solution and not run.has_solution:
            # The full search found nothing in the time left: keep what the first try found.
            first.stop_reason = run.stop_reason
            return first
        return run

    @staticmethod
    def run_subproblem(
        model: Any, time_limit_s: float, workers: int = 1, parameters: dict[str, Any] | None = None
    ) -> BackendRun:
        """Solve a ``cp_model.CpModel`` that is one step of a larger computation (a pricing
        problem inside column generation, say) rather than a solve of the portfolio.

        CP-SAT runs with its own default parameters but for ``workers`` search workers and
        the time limit: none of :meth:`run`'s :class:`SolveOptions` (seed, gap, interleaving,
        deterministic budget, the quick proof attempt) applies. The status is mapped as in
        :meth:`run`; read values through ``run.solver`` likewise. Unlike :meth:`run`, a run
        that stopped without a solution still carries CP-SAT's proven objective bound in
        ``bound`` (CP-SAT proves bounds without a solution, and a pricing problem stopped
        early needs no more), except when it stopped before its search began (``bound``
        None: nothing was proved). ``parameters``: CP-SAT parameters set by name on top.
        """
        # OR-Tools loads a large native library: imported on first use.
        from ortools.sat.python import cp_model

        started = time.monotonic()
        solver = cp_model.CpSolver()
        for name, value in (parameters or {}).items():
            setattr(solver.parameters, name, value)
        solver.parameters.num_workers = int(workers)
        solver.parameters.max_time_in_seconds = float(time_limit_s)
        # As in _solve_once: CP-SAT's own SIGINT handler aborts the process off the main thread.
        solver.parameters.catch_sigint_signal = False
        raw = solver.solve(model)
        run = _map_status(raw, solver, StopReason.TIME_LIMIT, time.monotonic() - started)
        response = solver.response_proto
        if (
            run.status == RunStatus.NO_SOLUTION
            and model.has_objective()
            and (response.num_booleans > 0 or response.num_integers > 0)
        ):
            # Only once the search has loaded the model: stopped before that (presolve took
            # the time), CP-SAT reports a bound of 0 that bounds nothing (measured, 9.15).
            run.bound = float(solver.best_objective_bound)
        run.solver = solver  # type: ignore[attr-defined]
        return run

    @staticmethod
    def _solve_once(
        model: Any,
        options: SolveOptions,
        cancel: CancellationToken,
        time_limit_s: float,
        callback: Any,
        started: float,
        single_strategy: bool = False,
        quick: bool = False,
        parameters: dict[str, Any] | None = None,
    ) -> BackendRun:
        """One ``CpSolver`` run; ``quick``: the small-model proof attempt's parameters."""
        from ortools.sat.python import cp_model  # loaded by CpSat.run already (first use)

        solver = cp_model.CpSolver()
        params = solver.parameters
        params.max_time_in_seconds = float(time_limit_s)
        params.num_workers = options.effective_threads
        params.random_seed = int(options.seed)
        params.relative_gap_limit = float(options.relative_gap)
        params.log_search_progress = False
        # Our cancellation token stops the search. CP-SAT's own SIGINT handler aborts the
        # process when the solve runs off the main thread (std::bad_function_call).
        params.catch_sigint_signal = False
        if quick:
            params.num_workers = 1
            params.cp_model_presolve = False
            params.cp_model_probing_level = 0
            params.symmetry_level = 0
            params.linearization_level = 0
        elif params.num_workers == 1 and not single_strategy:
            # One worker runs a single search strategy; interleaving runs CP-SAT's portfolio of
            # strategies in turn on that one thread. On 67 hard STG cases (10 s, one thread)
            # it proved 61 optima instead of 43, with a better schedule on 14 and a worse one
            # on 1 (by 1), in 148 s of solving instead of 374 (docs/benchmarks.md).
            params.interleave_search = True
        if options.deterministic:
            # One worker and a deterministic-time budget: the search stops at the same point
            # on every run. The wall-clock limit stays as a guard against a runaway search,
            # wide enough (deterministic_wall_limit) that the deterministic budget binds
            # even on a machine loaded by other work.
            params.interleave_search = True
            params.max_deterministic_time = float(time_limit_s)
            params.max_time_in_seconds = deterministic_wall_limit(time_limit_s)
        for name, value in (parameters or {}).items():
            setattr(params, name, value)

        remove = cancel.add_callback(solver.stop_search)
        try:
            # stop_search() before the search starts is a no-op: re-check after registering.
            if cancel.cancelled:
                return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
            raw = solver.solve(model, callback)
        finally:
            remove()
        wall = time.monotonic() - started
        interrupted = StopReason.CANCELLED if cancel.cancelled else StopReason.TIME_LIMIT
        run = _map_status(raw, solver, interrupted, wall)
        run.solver = solver  # type: ignore[attr-defined]
        return run


def _map_status(raw: Any, solver: Any, interrupted: StopReason, wall: float) -> BackendRun:
    """CP-SAT's status ``raw`` as a :class:`BackendRun`; ``interrupted``: the stop reason of a
    run that ended without a proof (time limit, or cancelled)."""
    from ortools.sat.python import cp_model  # loaded by the caller already (first use)

    if raw == cp_model.OPTIMAL:
        objective, bound = solver.objective_value, solver.best_objective_bound
        # CP-SAT says OPTIMAL for a solution within its gap limit: only equal values prove it.
        exact = math.isclose(objective, bound, rel_tol=1e-9, abs_tol=1e-9)
        return BackendRun(
            RunStatus.OPTIMAL if exact else RunStatus.FEASIBLE,
            StopReason.PROVEN if exact else StopReason.GAP_REACHED,
            objective,
            bound,
            wall_s=wall,
        )
    if raw == cp_model.FEASIBLE:
        return BackendRun(
            RunStatus.FEASIBLE,
            interrupted,
            solver.objective_value,
            solver.best_objective_bound,
            wall_s=wall,
        )
    if raw == cp_model.INFEASIBLE:
        return BackendRun(RunStatus.INFEASIBLE, StopReason.PROVEN, wall_s=wall)
    if raw == cp_model.MODEL_INVALID:
        return BackendRun(
            RunStatus.ERROR, StopReason.ERROR, wall_s=wall, message="invalid CP-SAT model"
        )
    return BackendRun(RunStatus.NO_SOLUTION, interrupted, wall_s=wall)
