"""HiGHS through highspy: one quiet model, its runs mapped to RunStatus and StopReason.

Every LP and MILP of the package that HiGHS solves goes through :class:`HighsModel`: built
from arrays (:meth:`~HighsModel.load`) or grown row by row and column by column, run with a
time limit, the caller's :class:`~placement.solver.cancel.CancellationToken` (an interrupt
callback), optional improving-solution and user-solution callbacks, and, where a caller must
not hang on a run that ignores its limit, the overrun guard :class:`BoundedRun`. A run comes
back as a :class:`HighsRun`: the mapped status, the column values and row duals as arrays.
No HiGHS status leaves this module.

:class:`HighsMilp` is the MILP backend for models written in PuLP: it translates the
``pulp.LpProblem`` into arrays and runs it as a :class:`HighsModel`. HiGHS is driven through
highspy directly rather than PuLP's own HiGHS class, because that is where the warm start
(``setSolution``), the improving-solution and interrupt callbacks, and the proven dual bound
are.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason

_FD_LOCK = threading.Lock()

_PRIMAL_FEASIBLE = 2
"""HiGHS's ``kSolutionStatusFeasible``: the run holds a feasible primal solution."""


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


_banner_printed = False
"""Whether this process built its first ``highspy.Highs`` (the one that prints the banner)."""

HIGHS_THREADS = 1
"""HiGHS's thread count, the same for every model of the process. HiGHS keeps one thread
scheduler per process, sized by the first run; a later model asking another count does not
run at all (model status "Not Set"). Models that asked 1 failed silently after one that took
the default (all cores), and the other way round: a dag grid LP after a GPU LP returned no
bound. One count for all avoids it; one thread is also what the portfolio wants beside
CP-SAT on the same cores."""


def new_highs() -> Any:
    """A ``highspy.Highs`` with its output off, and without the banner its constructor prints
    on standard output even when quiet.

    HiGHS prints the banner once per process, on the first construction: only that one runs
    with file descriptor 1 silenced, so later constructions (a search builds many small
    models) never hide another thread's output.
    """
    global _banner_printed
    # highspy loads a native library: imported on first use, not with the package.
    import highspy

    if _banner_printed:
        highs = highspy.Highs()
    else:
        with _quiet_stdout():
            highs = highspy.Highs()
            _banner_printed = True
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("threads", HIGHS_THREADS)
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


@dataclass
class HighsRun(BackendRun):
    """A mapped HiGHS run, with its solution as arrays.

    ``x`` holds the column values of the best primal solution (None without one),
    ``row_dual`` the row duals when HiGHS has them (LPs), ``nodes`` the MIP nodes explored.
    ``stop_reason`` is PROVEN or GAP_REACHED exactly when HiGHS reported the model solved
    (to its gap tolerances), so ``solved`` tells whether the model was solved at all.
    """

    x: np.ndarray | None = None
    row_dual: np.ndarray | None = None
    nodes: int = 0
    abandoned: bool = False

    @property
    def solved(self) -> bool:
        """HiGHS finished the model: optimal, or within its gap tolerances."""
        return self.stop_reason in (StopReason.PROVEN, StopReason.GAP_REACHED) and (
            self.status != RunStatus.INFEASIBLE
        )


class HighsModel:
    """One HiGHS model (quiet), built from arrays or grown in place, and run.

    ``options`` are HiGHS option values set once (e.g. ``random_seed=...``,
    ``mip_rel_gap=0.0``); :meth:`run` sets the time limit of each run.
    """

    def __init__(self, **options: Any) -> None:
        self.highs = new_highs()
        self.is_mip = False
        self._unusable = False
        self.set_options(**options)

    # -- building --------------------------------------------------------------------------

    def set_options(self, **options: Any) -> None:
        """Set HiGHS options by name (``threads`` only as :data:`HIGHS_THREADS`: see there)."""
        for name, value in options.items():
            if name == "threads" and value != HIGHS_THREADS:
                raise ValueError(f"HiGHS threads: got {value}, expected {HIGHS_THREADS}")
            self.highs.setOptionValue(name, value)

    def load(
        self,
        cost: np.ndarray,
        col_lower: np.ndarray,
        col_upper: np.ndarray,
        row_lower: np.ndarray,
        row_upper: np.ndarray,
        start: np.ndarray,
        index: np.ndarray,
        value: np.ndarray,
        *,
        rowwise: bool = False,
        integer: np.ndarray | None = None,
        maximize: bool = False,
        offset: float = 0.0,
    ) -> None:
        """Pass a whole model: bounds and costs per column, bounds per row, and the matrix
        in compressed form (column-wise, or row-wise with ``rowwise``; ``start`` has one
        entry per column or row plus the end). ``integer`` flags the integer columns;
        ``math.inf`` is an infinite bound."""
        import highspy  # a native library: imported on first use, as in new_highs

        lp = highspy.HighsLp()
        lp.num_col_ = len(cost)
        lp.num_row_ = len(row_lower)
        lp.col_cost_ = np.asarray(cost, float)
        lp.col_lower_ = np.asarray(col_lower, float)
        lp.col_upper_ = np.asarray(col_upper, float)
        lp.row_lower_ = np.asarray(row_lower, float)
        lp.row_upper_ = np.asarray(row_upper, float)
        matrix = lp.a_matrix_
        matrix.format_ = highspy.MatrixFormat.kRowwise if rowwise else highspy.MatrixFormat.kColwise
        matrix.start_ = np.asarray(start, dtype=np.int32)
        matrix.index_ = np.asarray(index, dtype=np.int32)
        matrix.value_ = np.asarray(value, float)
        if integer is not None:
            kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
            lp.integrality_ = [kinds[bool(flag)] for flag in integer]
            self.is_mip = bool(np.any(integer))
        lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
        lp.offset_ = float(offset)
        self.highs.passModel(lp)

    def add_rows(self, lower: np.ndarray, upper: np.ndarray) -> None:
        """Append empty rows with these bounds (their entries come with later columns)."""
        n = len(lower)
        self.highs.addRows(
            n,
            np.asarray(lower, float),
            np.asarray(upper, float),
            0,
            np.array([0]),
            np.array([]),
            np.array([]),
        )

    def add_row(self, lower: float, upper: float, index: np.ndarray, value: np.ndarray) -> None:
        """Append one row ``lower <= sum value[i] x[index[i]] <= upper``."""
        idx = np.asarray(index, dtype=np.int32)
        self.highs.addRow(float(lower), float(upper), len(idx), idx, np.asarray(value, float))

    def add_columns(self, cost: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Append columns without matrix entries (rows added later refer to them)."""
        n = len(cost)
        self.highs.addVars(n, np.asarray(lower, float), np.asarray(upper, float))
        first = self.highs.getNumCol() - n
        self.highs.changeColsCost(
            n, np.arange(first, first + n, dtype=np.int32), np.asarray(cost, float)
        )

    def add_columns_with_entries(
        self,
        cost: np.ndarray,
        start: np.ndarray,
        index: np.ndarray,
        value: np.ndarray,
        lower: np.ndarray | None = None,
        upper: np.ndarray | None = None,
    ) -> None:
        """Append columns with their entries, column-wise (``start`` has one entry per column
        plus the end); bounds default to ``[0, inf)``. The next run starts from the last
        basis."""
        n = len(cost)
        if n == 0:
            return
        lo = np.zeros(n) if lower is None else np.asarray(lower, float)
        hi = np.full(n, math.inf) if upper is None else np.asarray(upper, float)
        start = np.asarray(start, dtype=np.int32)
        self.highs.addCols(
            n,
            np.asarray(cost, float),
            lo,
            hi,
            int(start[-1]),
            start[:-1],
            np.asarray(index, dtype=np.int32),
            np.asarray(value, float),
        )

    def add_column(
        self, cost: float, lower: float, upper: float, index: np.ndarray, value: np.ndarray
    ) -> None:
        """Append one column with its entries in the rows ``index``."""
        start = np.array([0, len(index)])
        bounds = (np.array([lower]), np.array([upper]))
        self.add_columns_with_entries(np.array([cost]), start, index, value, *bounds)

    def set_integer(self, columns: np.ndarray) -> None:
        """Make the ``columns`` (indices) integer: the model becomes a MIP, so a run reports
        HiGHS's MIP dual bound as its ``bound``."""
        import highspy  # a native library: imported on first use, as in new_highs

        idx = np.asarray(columns, dtype=np.int32)
        if len(idx) == 0:
            return
        kinds = [highspy.HighsVarType.kInteger] * len(idx)
        self.highs.changeColsIntegrality(len(idx), idx, kinds)
        self.is_mip = True

    def set_coefficient(self, row: int, col: int, value: float) -> None:
        """Set one matrix entry."""
        self.highs.changeCoeff(int(row), int(col), float(value))

    def set_column_bounds(self, columns: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> None:
        """Change the bounds of the ``columns`` (indices; the next run starts from the
        previous basis)."""
        idx = np.asarray(columns, dtype=np.int32)
        self.highs.changeColsBounds(
            len(idx), idx, np.asarray(lower, float), np.asarray(upper, float)
        )

    def set_row_bounds(self, row: int, lower: float, upper: float) -> None:
        """Change one row's bounds (the next run starts from the previous basis)."""
        self.highs.changeRowBounds(int(row), float(lower), float(upper))

    def maximize(self) -> None:
        """Maximise the objective (the default is to minimise)."""
        import highspy  # a native library: imported on first use, as in new_highs

        self.highs.changeObjectiveSense(highspy.ObjSense.kMaximize)

    def set_start(self, x: np.ndarray) -> None:
        """A (MIP) start: a value per column."""
        import highspy  # a native library: imported on first use, as in new_highs

        sol = highspy.HighsSolution()
        sol.col_value = list(np.asarray(x, float))
        sol.value_valid = True
        self.highs.setSolution(sol)

    # -- running ---------------------------------------------------------------------------

    def run(
        self,
        time_limit_s: float | None = None,
        *,
        cancel: CancellationToken | None = None,
        stop: Callable[[], bool] | None = None,
        on_improving: Callable[[np.ndarray, float], None] | None = None,
        user_solution: Callable[[], np.ndarray | None] | None = None,
        bounded: bool = False,
        on_bound: Callable[[float], None] | None = None,
        _retried: bool = False,
    ) -> HighsRun:
        """Solve within ``time_limit_s`` (None: no limit) and map the outcome.

        ``cancel`` (the token) and ``stop`` (any predicate) interrupt the run through HiGHS's
        interrupt callbacks; without either no interrupt callback is installed (they run
        on every simplex iteration). ``on_improving(x, objective)`` sees each improving MIP
        solution; ``user_solution()`` may return a solution to offer HiGHS during its MIP
        search. With ``bounded`` the run is a :class:`BoundedRun`: abandoned when it
        overruns its limit by :data:`OVERRUN_GRACE_S` (the model is then unusable), and
        improving solutions are never delivered after that. ``on_bound(bound)`` gets the
        MIP dual bound just before each improving solution (so that it carries it).
        """
        if bounded and time_limit_s is None:
            raise ValueError("a bounded run needs a time limit")
        started = time.monotonic()
        if self._unusable:
            raise RuntimeError("this HiGHS model was abandoned by an earlier run")
        if cancel is not None and cancel.cancelled:
            return HighsRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
        if time_limit_s is not None and time_limit_s <= 0:
            return HighsRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT)
        h = self.highs
        h.setOptionValue("time_limit", math.inf if time_limit_s is None else float(time_limit_s))
        guard = BoundedRun(h) if bounded else None
        subscribed: list[tuple[Any, Callable[[Any], None]]] = []

        def subscribe(hook: Any, fn: Callable[[Any], None]) -> None:
            hook.subscribe(fn)
            subscribed.append((hook, fn))

        if on_improving is not None:

            def deliver(fn: Callable[..., Any], *args: Any) -> None:
                if guard is None:
                    fn(*args)
                else:
                    guard.deliver(fn, *args)

            def improving(event: Any) -> None:
                x = np.asarray(event.data_out.mip_solution, float)
                objective = float(event.data_out.objective_function_value)
                bound = float(event.data_out.mip_dual_bound)
                if on_bound is not None and math.isfinite(bound):
                    # Before the solution, so that the incumbent carries the bound of now.
                    deliver(on_bound, bound)
                deliver(on_improving, x, objective)

            subscribe(h.cbMipImprovingSolution, improving)
        if user_solution is not None:

            def offer(event: Any) -> None:
                if guard is not None and guard.abandoned.is_set():
                    return
                x = user_solution()
                if x is not None:
                    event.data_in.setSolution(np.asarray(x, float))

            subscribe(h.cbMipUserSolution, offer)
        if cancel is not None or stop is not None or guard is not None:

            def interrupt(event: Any) -> None:
                if (
                    (cancel is not None and cancel.cancelled)
                    or (stop is not None and stop())
                    or (guard is not None and guard.abandoned.is_set())
                ):
                    event.interrupt()

            subscribe(h.cbMipInterrupt, interrupt)
            subscribe(h.cbSimplexInterrupt, interrupt)
        try:
            if cancel is not None and cancel.cancelled:
                return HighsRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
            if guard is None:
                h.run()
            elif not guard.wait(float(time_limit_s)):  # type: ignore[arg-type]
                self._unusable = True
                cancelled = cancel is not None and cancel.cancelled
                return HighsRun(
                    RunStatus.NO_SOLUTION,
                    StopReason.CANCELLED if cancelled else StopReason.TIME_LIMIT,
                    wall_s=time.monotonic() - started,
                    message=f"HiGHS did not stop within {OVERRUN_GRACE_S:g} s of its time "
                    "limit and was abandoned (its improving solutions were kept)",
                    abandoned=True,
                )
        finally:
            if not self._unusable:
                for hook, fn in subscribed:
                    hook.unsubscribe(fn)
        run = self._mapped(cancel, time.monotonic() - started)
        if self.is_mip and run.x is not None and not self._solution_matches(run):
            # HiGHS 1.16 can return a MIP start's column values with the objective of the
            # solution presolve found from it ("MIP start solution is feasible in the reduced
            # space": presolve fixes columns the start does not set). Solve again without the
            # start; never hand out values that are not the reported solution.
            left = None if time_limit_s is None else time_limit_s - (time.monotonic() - started)
            if not _retried and (left is None or left > 0):
                h.clearSolver()
                return self.run(
                    left,
                    cancel=cancel,
                    stop=stop,
                    on_improving=on_improving,
                    user_solution=user_solution,
                    bounded=bounded,
                    on_bound=on_bound,
                    _retried=True,
                )
            run = HighsRun(
                RunStatus.FEASIBLE,
                StopReason.ERROR,
                self._objective_of(run.x),
                run.bound,
                x=run.x,
                nodes=run.nodes,
                wall_s=time.monotonic() - started,
                message="HiGHS returned column values that are not its reported solution",
            )
        return run

    def _objective_of(self, x: np.ndarray) -> float:
        """The objective (with its offset) at the column values ``x``."""
        h = self.highs
        n = h.getNumCol()
        cost = h.getCols(n, np.arange(n, dtype=np.int32))[2] if n else np.zeros(0)
        return float(np.dot(np.asarray(cost, float)[:n], x) + h.getObjectiveOffset()[1])

    def _solution_matches(self, run: HighsRun) -> bool:
        """Whether ``run.x`` has the objective value the run reports."""
        if run.objective is None or run.x is None:
            return True
        return math.isclose(self._objective_of(run.x), run.objective, rel_tol=1e-6, abs_tol=1e-6)

    def _mapped(self, cancel: CancellationToken | None, wall: float) -> HighsRun:
        """The finished run as a :class:`HighsRun` (the status map)."""
        import highspy  # a native library: imported on first use, as in new_highs

        h = self.highs
        status = h.getModelStatus()
        info = h.getInfo()
        has_primal = info.primal_solution_status == _PRIMAL_FEASIBLE
        objective = float(info.objective_function_value) if has_primal else None
        bound = (
            float(info.mip_dual_bound)
            if self.is_mip and math.isfinite(info.mip_dual_bound)
            else None
        )
        x = row_dual = None
        if has_primal:
            solution = h.getSolution()
            x = np.asarray(solution.col_value, dtype=float)
            if not self.is_mip and solution.dual_valid:
                row_dual = np.asarray(solution.row_dual, dtype=float)
        nodes = int(getattr(info, "mip_node_count", 0) or 0) if self.is_mip else 0
        common = {"x": x, "row_dual": row_dual, "nodes": nodes, "wall_s": wall}
        M = highspy.HighsModelStatus
        interrupted = (
            StopReason.CANCELLED
            if cancel is not None and cancel.cancelled
            else StopReason.TIME_LIMIT
        )
        if status == M.kOptimal:
            if bound is None:  # a pure LP: HiGHS's MIP dual bound means nothing, the optimum is it
                bound = objective
            exact = (
                objective is not None
                and bound is not None
                and math.isclose(objective, bound, rel_tol=1e-9, abs_tol=1e-6)
            )
            if exact:
                return HighsRun(RunStatus.OPTIMAL, StopReason.PROVEN, objective, bound, **common)
            return HighsRun(RunStatus.FEASIBLE, StopReason.GAP_REACHED, objective, bound, **common)
        if status == M.kInfeasible:
            return HighsRun(RunStatus.INFEASIBLE, StopReason.PROVEN, wall_s=wall, nodes=nodes)
        if status in (M.kTimeLimit, M.kInterrupt, M.kIterationLimit, M.kSolutionLimit, M.kNotset):
            return HighsRun(
                RunStatus.FEASIBLE if has_primal else RunStatus.NO_SOLUTION,
                interrupted,
                objective,
                bound,
                **common,
            )
        return HighsRun(
            RunStatus.FEASIBLE if has_primal else RunStatus.ERROR,
            StopReason.ERROR,
            objective,
            bound,
            message=f"HiGHS stopped with model status {h.modelStatusToString(status)}",
            **common,
        )


class HighsMilp:
    """HiGHS through highspy, for models written in PuLP."""

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
        on_bound: Callable[[float], None] | None = None,
    ) -> BackendRun:
        """Solve a ``pulp.LpProblem``.

        ``warm_start`` maps PuLP variables to values; ``on_solution(values, objective)`` is
        called with each improving MIP solution (values keyed by PuLP variable), just after
        ``on_bound(bound)`` with HiGHS's MIP dual bound of that moment (the model's, with
        its constant). The run's ``values`` are keyed by PuLP variable too.
        """
        # PuLP is imported by the encodings that build its models; here only on first use.
        import pulp

        if cancel.cancelled:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.CANCELLED)
        if time_limit_s <= 0:
            return BackendRun(RunStatus.NO_SOLUTION, StopReason.TIME_LIMIT)

        variables = problem.variables()
        index = {v.name: i for i, v in enumerate(variables)}
        n = len(variables)
        cost = np.zeros(n)
        for var, coef in problem.objective.items():
            cost[index[var.name]] = coef
        col_lower = np.array([-math.inf if v.lowBound is None else v.lowBound for v in variables])
        col_upper = np.array([math.inf if v.upBound is None else v.upBound for v in variables])
        integer = np.array([v.cat == pulp.LpInteger for v in variables], dtype=bool)
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
                row_lower.append(-math.inf)
                row_upper.append(rhs)
            else:
                row_lower.append(rhs)
                row_upper.append(math.inf)

        model = HighsModel(
            mip_rel_gap=float(options.relative_gap),
            mip_abs_gap=1e-9,
            random_seed=int(options.seed) % (2**31 - 1),
        )
        model.load(
            cost,
            col_lower,
            col_upper,
            np.array(row_lower, float),
            np.array(row_upper, float),
            np.array(starts),
            np.array(indices),
            np.array(values, float),
            rowwise=True,
            integer=integer,
            maximize=problem.sense == pulp.LpMaximize,
            offset=float(problem.objective.constant),
        )
        if warm_start:
            start = np.zeros(n)
            for var, value in warm_start.items():
                key = var.name if hasattr(var, "name") else str(var)
                if key in index:
                    start[index[key]] = value
            model.set_start(start)

        improving = None
        if on_solution is not None:

            def improving(x: np.ndarray, objective: float) -> None:
                on_solution({variables[i]: float(x[i]) for i in range(n)}, objective)

        run = model.run(
            time_limit_s, cancel=cancel, on_improving=improving, bounded=True, on_bound=on_bound
        )
        if run.x is not None:
            run.values = {v: float(run.x[i]) for i, v in enumerate(variables)}
        return run
