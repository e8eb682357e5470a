"""CP-SAT encoding of topology-aware GPU allocation.

The model is :class:`placement.models.gpu.model.GpuModel` (shared with the MILP
encoding); this module only translates it into a ``cp_model.CpModel`` and drives the
lexicographic tiers through :class:`placement.solver.backends.CpSat`. Communication costs
are scaled by 10^6 and rounded, because CP-SAT takes integer objective coefficients only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from placement.models.gpu.reopt import ReoptAware
from placement.models.gpu.tiers import TieredEncoding
from placement.solver.backends.base import BackendRun
from placement.solver.backends.cpsat import CpSat
from placement.solver.cancel import CancellationToken
from placement.solver.family import ExactContext
from placement.solver.linear import LinearModel
from placement.solver.options import SolveOptions

CPSAT_VARS_PER_SECOND = 1_000
"""Measured with 2 search workers: CP-SAT's presolve takes 0.1-0.2 ms per variable of this
model (more on larger ones) and its search needs several times that; larger models stall in
presolve."""


class _CpSatTiers:
    """The :class:`~placement.models.gpu.tiers.TierBackend` over CP-SAT."""

    source = "cpsat"
    integer_objective = True
    vars_per_second = CPSAT_VARS_PER_SECOND

    def __init__(self, ctx: ExactContext) -> None:
        self.ctx = ctx
        self.model: Any = None
        self.vars: list[Any] = []
        self.n_rows = 0

    def load(self, model: LinearModel) -> None:
        from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by solves only

        if self.model is None:
            self.model = cp_model.CpModel()
        cpm = self.model
        for i in range(len(self.vars), model.num_vars):
            self.vars.append(cpm.new_int_var(model.lb[i], model.ub[i], ""))
        v = self.vars
        weighted = cp_model.LinearExpr.weighted_sum
        for idx, coef, lo, hi in model.rows[self.n_rows :]:
            cpm.add_linear_constraint(
                weighted([v[i] for i in idx], coef),
                cp_model.INT_MIN if lo is None else lo,
                cp_model.INT_MAX if hi is None else hi,
            )
        self.n_rows = len(model.rows)

    def add_row(self, terms: dict[int, float], lo: float | None, hi: float | None) -> None:
        from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by solves only

        expr = cp_model.LinearExpr.weighted_sum(
            [self.vars[i] for i in terms], [int(c) for c in terms.values()]
        )
        self.model.add_linear_constraint(
            expr,
            cp_model.INT_MIN if lo is None else int(lo),
            cp_model.INT_MAX if hi is None else int(hi),
        )

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
        from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by solves only

        cpm = self.model
        expr = cp_model.LinearExpr.weighted_sum(
            [self.vars[i] for i in objective], [int(c) for c in objective.values()]
        ) + int(round(constant))
        cpm.clear_objective()
        if sense == "max":
            cpm.maximize(expr)
        else:
            cpm.minimize(expr)
        cpm.clear_hints()
        if hint is not None:
            # A complete hint, written straight into the proto (one call, not one per var).
            cpm.proto.solution_hint.vars.extend(range(len(hint)))
            cpm.proto.solution_hint.values.extend(int(v) for v in hint)

        def on_solution(callback: Any) -> None:
            values = list(callback.response_proto.solution)
            if values:
                on_values(values, float(callback.best_objective_bound))

        options: SolveOptions = self.ctx.options
        run = CpSat.run(cpm, options, cancel, time_limit_s, on_solution)
        final = None
        if run.has_solution:
            final = list(run.solver.response_proto.solution)  # type: ignore[attr-defined]
        return run, final or None


class CpSatEncoding(ReoptAware, TieredEncoding):
    """The exact CP-SAT encoding of the GPU family (``backend='cpsat'``)."""

    tier_backend = _CpSatTiers
