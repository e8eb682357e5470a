"""MILP encoding of topology-aware GPU allocation (HiGHS or CBC through PuLP).

The model is :class:`placement.models.gpu.model.GpuModel` (shared with the CP-SAT
encoding); this module only writes it as a ``pulp.LpProblem`` and drives the lexicographic
tiers through the wrapper chosen by ``SolveOptions.milp_solver`` in
:data:`placement.solver.backends.milp.MILP_SOLVERS`. Communication costs stay exact
floating-point coefficients; the row fixing the communication tier (while fragmentation
is optimised) carries a 1e-6 tolerance.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placement.models.gpu.reopt import ReoptAware
from placement.models.gpu.tiers import TieredEncoding
from placement.solver.backends.base import BackendRun
from placement.solver.backends.milp import milp_solver
from placement.solver.cancel import CancellationToken
from placement.solver.family import ExactContext
from placement.solver.linear import LinearModel
from placement.solver.options import SolveOptions

MILP_VARS_PER_SECOND = 1_000
"""HiGHS presolves faster than CP-SAT but its search slows down on the same sizes."""


class _MilpTiers:
    """The :class:`~placement.models.gpu.tiers.TierBackend` over a PuLP MILP solver."""

    integer_objective = False
    vars_per_second = MILP_VARS_PER_SECOND

    def __init__(self, ctx: ExactContext) -> None:
        self.ctx = ctx
        name, self.solver = milp_solver(ctx.options)
        self.source = f"milp-{name}"
        self.options: SolveOptions = ctx.options
        self.problem: Any = None
        self.vars: list[Any] = []
        self.n_rows = 0
        self.n_model_rows = 0

    def load(self, model: LinearModel) -> None:
        import pulp  # deferred: 0.26 s to import, paid by solves only

        if self.problem is None:
            self.problem = pulp.LpProblem("gpu", pulp.LpMaximize)
        for i in range(len(self.vars), model.num_vars):
            self.vars.append(pulp.LpVariable(f"v{i}", model.lb[i], model.ub[i], pulp.LpInteger))
        for idx, coef, lo, hi in model.rows[self.n_model_rows :]:
            self._add(zip(idx, coef, strict=True), lo, hi)
        self.n_model_rows = len(model.rows)

    def _add(self, terms: Any, lo: float | None, hi: float | None) -> None:
        import pulp  # deferred: 0.26 s to import, paid by solves only

        expr = pulp.LpAffineExpression([(self.vars[i], c) for i, c in terms])
        if lo is not None and hi is not None and lo == hi:
            rows = [pulp.LpConstraint(expr, pulp.LpConstraintEQ, rhs=lo)]
        else:
            rows = []
            if lo is not None:
                rows.append(pulp.LpConstraint(expr, pulp.LpConstraintGE, rhs=lo))
            if hi is not None:
                rows.append(pulp.LpConstraint(expr, pulp.LpConstraintLE, rhs=hi))
        for row in rows:
            self.n_rows += 1
            self.problem.addConstraint(row, name=f"r{self.n_rows}")

    def add_row(self, terms: dict[int, float], lo: float | None, hi: float | None) -> None:
        self._add(terms.items(), lo, hi)

    def run(
        self,
        sense: str,
        objective: dict[int, float],
        constant: float,
        hint: list[int] | None,
        time_limit_s: float,
        cancel: CancellationToken,
        on_values: Callable[[list[float], float | None], None],
    ) -> tuple[BackendRun, list[float] | None]:
        import pulp  # deferred: 0.26 s to import, paid by solves only

        prob = self.problem
        expr = pulp.LpAffineExpression([(self.vars[i], c) for i, c in objective.items()])
        expr += constant
        prob.setObjective(expr)
        prob.sense = pulp.LpMaximize if sense == "max" else pulp.LpMinimize
        warm = None
        if hint is not None:
            warm = {v: float(h) for v, h in zip(self.vars, hint, strict=True)}
        variables = self.vars

        def on_solution(values: dict[Any, float], objective_value: float) -> None:
            del objective_value
            on_values([values.get(v, 0.0) for v in variables], None)

        run = self.solver.run(
            prob, self.options, cancel, time_limit_s, warm_start=warm, on_solution=on_solution
        )
        final = None
        if run.has_solution and run.values:
            final = [run.values.get(v, 0.0) or 0.0 for v in variables]
        return run, final


class MilpEncoding(ReoptAware, TieredEncoding):
    """The exact MILP encoding of the GPU family (``backend='milp'``).

    The solver is ``ctx.options.milp_solver`` (``highs`` by default, or ``cbc``); solutions
    are reported with source ``milp-highs`` / ``milp-cbc``.
    """

    tier_backend = _MilpTiers
