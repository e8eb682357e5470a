"""MILP backends for models written in PuLP: HiGHS (:mod:`.highs`) and CBC.

CBC runs as PuLP's bundled binary; its bound is read from its log. :data:`MILP_SOLVERS` maps
the ``milp_solver`` option to the backend class.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import tempfile
import time
from collections.abc import Callable
from typing import Any

from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.backends.highs import HighsMilp
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason

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
        on_bound: Callable[[float], None] | None = None,
    ) -> BackendRun:
        """Solve a ``pulp.LpProblem`` with CBC. CBC can report 'optimal' after a time limit
        with a solution that is not; the caller's checker decides, and we only claim a proof
        when CBC's final log shows the bound equal to the objective. (``on_solution`` and
        ``on_bound`` are accepted for the MILP backends' common signature; CBC, a
        subprocess, reports neither before it ends.)"""
        del on_bound
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
        # PuLP is imported when a model is solved, not with the backends (start-up time).
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
