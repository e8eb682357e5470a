"""MILP backends for models written in PuLP: HiGHS (through highspy) and CBC.

HiGHS is driven through highspy directly rather than PuLP's own HiGHS class, because that is
where the warm start (``setSolution``), the improving-solution and interrupt callbacks, and
the proven dual bound are. CBC runs as PuLP's bundled binary; its bound is read from its log.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason

_FD_LOCK = threading.Lock()


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """Silence file descriptor 1: HiGHS prints its banner on construction even when quiet."""
    with _FD_LOCK:
        try:
            saved = os.dup(1)
        except OSError:
            yield
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 1)
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(devnull)


def new_highs() -> Any:
    """A ``highspy.Highs`` with its output off, and without the banner its constructor prints
    on standard output even when quiet."""
    import highspy

    with _quiet_stdout():
        highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    return highs


OVERRUN_GRACE_S = 5.0
"""Seconds past its time limit that a HiGHS run is waited for before it is abandoned."""


class BoundedRun:
    """``highs.run()`` in a daemon thread, waited for at most its time limit plus
    :data:`OVERRUN_GRACE_S`.

    HiGHS does not check its time limit everywhere: on Braun's u_s_lolo.0 (HiGHS 1.16) a
    run spent minutes in presolve's ``strengthenInequalities`` inside a RENS sub-MIP, past a
    60 s limit, and answered neither the limit nor the interrupt callbacks. A solve must
    not hang on it, so a run that overruns is abandoned: :meth:`wait` returns False, the
    caller must not read the ``Highs`` object any more, and callbacks that hand results to
    the caller go through :meth:`deliver`, which never runs them once the run is abandoned
    (interrupt callbacks should test :attr:`abandoned`). The abandoned thread keeps its CPU
    until HiGHS returns or the process exits (``cancelSolve`` is asked too, in case HiGHS
    checks it first).
    """

    def __init__(self, highs: Any) -> None:
        self.highs = highs
        self.abandoned = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._lock = threading.Lock()

    def deliver(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` from a callback, unless the run was abandoned: abandoning waits for
        a delivery under way, so none happens after :meth:`wait` has returned False."""
        with self._lock:
            if not self.abandoned.is_set():
                fn(*args)

    def _target(self) -> None:
        try:
            self.highs.run()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self._error = exc
        finally:
            self._done.set()

    def wait(self, time_limit_s: float) -> bool:
        """Run and wait; whether HiGHS returned in time (re-raises what ``run`` raised)."""
        thread = threading.Thread(target=self._target, name="highs-run", daemon=True)
        thread.start()
        if not self._done.wait(max(0.0, time_limit_s) + OVERRUN_GRACE_S):
            with self._lock:
                self.abandoned.set()
            with contextlib.suppress(Exception):
                self.highs.cancelSolve()
            return False
        if self._error is not None:
            raise self._error
        return True


class HighsMilp:
    """HiGHS through highspy."""

    NAME = "highs"
    REQUIRED_MODULES = ("highspy", "pulp")
    SUPPORTS_HINT = True
    SUPPORTS_INCUMBENT_CALLBACK = True
    SUPPORTS_CANCEL = True
    REPORTS_BOUND = True

    @staticmethod
    def run(
        problem: Any,
        options: SolveOptions,
        cancel: CancellationToken,
        time_limit_s: float,
        warm_start: dict[Any, float] | None = None,
        on_solution: Callable[[dict[Any, float], float], None] | None = None,
    ) -> BackendRun:
        """Solve a ``pulp.LpProblem``.

        ``warm_start`` maps PuLP variables to values; ``on_solution(values, objective)`` is
        called with each improving MIP solution (values keyed by PuLP variable).
        """
        import highspy
        import numpy as np
        import pulp

        started = time.monotonic()
        if cancel.cancelled:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
        if time_limit_s <= 0:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT)

        variables = problem.variables()
        index = {v.name: i for i, v in enumerate(variables)}
        n = len(variables)
        inf = highspy.kHighsInf
        cost = np.zeros(n)
        for var, coef in problem.objective.items():
            cost[index[var.name]] = coef
        col_lower = np.array([-inf if v.lowBound is None else v.lowBound for v in variables], float)
        col_upper = np.array([inf if v.upBound is None else v.upBound for v in variables], float)
        integrality = np.array(
            [1 if v.cat == pulp.LpInteger else 0 for v in variables], dtype=np.int32
        )
        starts, indices, values, row_lower, row_upper = [0], [], [], [], []
        for constraint in problem.constraints.values():
            for var, coef in constraint.items():
                if coef != 0:
                    indices.append(index[var.name])
                    values.append(coef)
            starts.append(len(indices))
            rhs = -constraint.constant
            if constraint.sense == pulp.LpConstraintEQ:
                row_lower.append(rhs)
                row_upper.append(rhs)
            elif constraint.sense == pulp.LpConstraintLE:
                row_lower.append(-inf)
                row_upper.append(rhs)
            else:
                row_lower.append(rhs)
                row_upper.append(inf)

        lp = highspy.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = len(row_lower)
        lp.col_cost_ = cost
        lp.col_lower_ = col_lower
        lp.col_upper_ = col_upper
        lp.row_lower_ = np.array(row_lower, float)
        lp.row_upper_ = np.array(row_upper, float)
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, dtype=np.int32)
        lp.a_matrix_.index_ = np.array(indices, dtype=np.int32)
        lp.a_matrix_.value_ = np.array(values, float)
        lp.integrality_ = [highspy.HighsVarType(int(t)) for t in integrality]
        maximize = problem.sense == pulp.LpMaximize
        lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
        lp.offset_ = float(problem.objective.constant)

        highs = new_highs()
        highs.setOptionValue("time_limit", float(time_limit_s))
        highs.setOptionValue("mip_rel_gap", float(options.relative_gap))
        highs.setOptionValue("mip_abs_gap", 1e-9)
        highs.setOptionValue("random_seed", int(options.seed) % (2**31 - 1))
        highs.passModel(lp)
        if warm_start:
            sol = highspy.HighsSolution()
            start = np.zeros(n)
            for var, value in warm_start.items():
                key = var.name if hasattr(var, "name") else str(var)
                if key in index:
                    start[index[key]] = value
            sol.col_value = list(start)
            sol.value_valid = True
            highs.setSolution(sol)

        bounded = BoundedRun(highs)

        def improving(event: Any) -> None:
            if on_solution is None:
                return
            x = event.data_out.mip_solution
            vals = {variables[i]: float(x[i]) for i in range(n)}
            bounded.deliver(on_solution, vals, float(event.data_out.objective_function_value))

        def interrupt(event: Any) -> None:
            if cancel.cancelled or bounded.abandoned.is_set():
                event.interrupt()

        highs.cbMipImprovingSolution.subscribe(improving)
        highs.cbMipInterrupt.subscribe(interrupt)
        highs.cbSimplexInterrupt.subscribe(interrupt)
        remove = cancel.add_callback(lambda: None)
        try:
            if cancel.cancelled:
                return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
            returned = bounded.wait(time_limit_s)
        finally:
            remove()
        wall = time.monotonic() - started
        if not returned:
            return BackendRun(
                RunStatus.NO_SOLUTION,
                StopReason.CANCELLED if cancel.cancelled else StopReason.TIME_LIMIT,
                wall_s=wall,
                message=f"HiGHS did not stop within {OVERRUN_GRACE_S:g} s of its time limit "
                "and was abandoned (its improving solutions were kept)",
            )
        return _map_highs(highs, variables, cancel, wall, is_mip=bool(integrality.any()))


def _map_highs(
    highs: Any, variables: list[Any], cancel: CancellationToken, wall: float, is_mip: bool
) -> BackendRun:
    import highspy

    status = highs.getModelStatus()
    info = highs.getInfo()
    has_primal = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = float(info.objective_function_value) if has_primal else None
    bound = float(info.mip_dual_bound) if is_mip and math.isfinite(info.mip_dual_bound) else None
    values: dict[Any, float] = {}
    if has_primal:
        col = highs.getSolution().col_value
        values = {v: float(col[i]) for i, v in enumerate(variables)}
    M = highspy.HighsModelStatus
    interrupted = StopReason.CANCELLED if cancel.cancelled else StopReason.TIME_LIMIT
    if status == M.kOptimal:
        if bound is None:  # a pure LP: HiGHS's MIP dual bound means nothing, the optimum is it
            bound = objective
        exact = (
            objective is not None
            and bound is not None
            and math.isclose(objective, bound, rel_tol=1e-9, abs_tol=1e-6)
        )
        if exact:
            return BackendRun(RunStatus.OPTIMAL, StopReason.PROVEN, objective, bound, values, wall)
        return BackendRun(
            RunStatus.FEASIBLE, StopReason.GAP_REACHED, objective, bound, values, wall
        )
    if status in (M.kInfeasible,):
        return BackendRun(RunStatus.INFEASIBLE, StopReason.PROVEN, wall_s=wall)
    if status in (M.kTimeLimit, M.kInterrupt, M.kIterationLimit, M.kSolutionLimit, M.kNotset):
        return BackendRun(
            RunStatus.FEASIBLE if has_primal else RunStatus.NO_SOLUTION,
            interrupted,
            objective,
            bound,
            values,
            wall,
        )
    return BackendRun(
        RunStatus.FEASIBLE if has_primal else RunStatus.ERROR,
        StopReason.ERROR,
        objective,
        bound,
        values,
        wall,
        message=f"HiGHS stopped with model status {highs.modelStatusToString(status)}",
    )


_CBC_BOUND = re.compile(r"(?:Lower|Upper) bound:\s*(-?[0-9.eE+-]+)")


class CbcMilp:
    """COIN-OR CBC, PuLP's bundled binary (a subprocess)."""

    NAME = "cbc"
    REQUIRED_MODULES = ("pulp",)
    SUPPORTS_HINT = True
    SUPPORTS_INCUMBENT_CALLBACK = False
    SUPPORTS_CANCEL = False
    REPORTS_BOUND = True

    @staticmethod
    def run(
        problem: Any,
        options: SolveOptions,
        cancel: CancellationToken,
        time_limit_s: float,
        warm_start: dict[Any, float] | None = None,
        on_solution: Callable[[dict[Any, float], float], None] | None = None,
    ) -> BackendRun:
        """Solve a ``pulp.LpProblem`` with CBC. CBC can report 'optimal' after a time limit
        with a solution that is not; the caller's checker decides, and we only claim a proof
        when CBC's final log shows the bound equal to the objective."""
        started = time.monotonic()
        if cancel.cancelled:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
        # CBC takes whole seconds and cannot be interrupted: round down so that it stays
        # inside the caller's budget, and do not start it with less than one second.
        limit = math.floor(time_limit_s)
        if limit < 1:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT)
        n_vars = len(problem.variables())
        # PuLP's bundled CBC can crash when its time limit expires while it is still reading
        # a MIP start: give it the start only when there is time to read it.
        if warm_start and limit < 1.0 + 2e-4 * n_vars:
            warm_start = None
        run = CbcMilp._run_once(problem, options, limit, warm_start)
        left = limit - (time.monotonic() - started)
        if run.status == RunStatus.ERROR and warm_start and left >= 1:
            # A crash while reading the start: the caller keeps its hint as the incumbent, so
            # a retry without it loses nothing.
            run = CbcMilp._run_once(problem, options, math.floor(left), None)
        run.wall_s = time.monotonic() - started
        return run

    @staticmethod
    def _run_once(
        problem: Any, options: SolveOptions, limit: int, warm_start: dict[Any, float] | None
    ) -> BackendRun:
        import pulp

        started = time.monotonic()
        for var in problem.variables():
            var.varValue = None  # no stale start from an earlier run of the same problem
        if warm_start:
            for var, value in warm_start.items():
                var.setInitialValue(value)
        with tempfile.TemporaryDirectory(prefix="placement-cbc-") as tmp:
            log_path = os.path.join(tmp, "cbc.log")
            solver = pulp.PULP_CBC_CMD(
                msg=False,
                timeLimit=limit,
                gapRel=options.relative_gap,
                # No -threads: with it (even -threads 1) the bundled CBC 2.10 sometimes waits
                # ~10 s for an idle worker thread and stops without its proof; serial CBC
                # never did in our runs.
                threads=None,
                warmStart=bool(warm_start),
                logPath=log_path,
                keepFiles=False,
                options=[f"randomSeed {int(options.seed) % (2**31 - 1) or 1}"],
            )
            try:
                problem.solve(solver)
            except pulp.PulpSolverError as exc:
                return BackendRun(
                    RunStatus.ERROR,
                    StopReason.ERROR,
                    wall_s=time.monotonic() - started,
                    message=str(exc),
                )
            try:
                with open(log_path, encoding="utf-8", errors="replace") as fh:
                    log_text = fh.read()
            except OSError:
                log_text = ""
        wall = time.monotonic() - started
        values = {v: (v.varValue if v.varValue is not None else 0.0) for v in problem.variables()}
        objective = pulp.value(problem.objective) if problem.sol_status in (1, 2) else None
        bound = None
        m = _CBC_BOUND.findall(log_text)
        if m:
            with contextlib.suppress(ValueError):
                bound = float(m[-1])
        stopped_early = "Stopped on time" in log_text or "stopped on time" in log_text.lower()
        if problem.status == pulp.LpStatusInfeasible:
            return BackendRun(RunStatus.INFEASIBLE, StopReason.PROVEN, wall_s=wall)
        if objective is None:
            return BackendRun(
                RunStatus.NO_SOLUTION,
                StopReason.TIME_LIMIT if stopped_early else StopReason.ERROR,
                wall_s=wall,
                message="CBC returned no solution",
            )
        if problem.sol_status == pulp.LpSolutionOptimal and not stopped_early:
            if bound is None:
                bound = objective
            if math.isclose(objective, bound, rel_tol=1e-9, abs_tol=1e-6):
                return BackendRun(
                    RunStatus.OPTIMAL, StopReason.PROVEN, objective, bound, values, wall
                )
            return BackendRun(
                RunStatus.FEASIBLE, StopReason.GAP_REACHED, objective, bound, values, wall
            )
        return BackendRun(RunStatus.FEASIBLE, StopReason.TIME_LIMIT, objective, bound, values, wall)


MILP_SOLVERS = {"highs": HighsMilp, "cbc": CbcMilp}
"""MILP solver name -> wrapper class, in order of preference."""


def milp_solver(options: SolveOptions) -> tuple[str, Any]:
    """(name, wrapper class) of the MILP solver ``options.milp_solver`` asks for."""
    name = str(getattr(options.milp_solver, "value", options.milp_solver))
    return name, MILP_SOLVERS[name]
