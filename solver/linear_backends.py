"""A :class:`~placement.solver.linear.LinearModel` on CP-SAT or on a PuLP MILP solver.

A family writes its model once as a ``LinearModel`` and solves it through one of the two
translators here, which share one small protocol (:class:`LinearBackend`): ``load`` the
model (again after rows or variables were added), ``add_row`` for a row that is not part of
the model (a tier fixed at its best value), and ``run`` an objective with a hint, a time
limit and a cancellation token. Variable ``i`` of the model is variable ``i`` of the
backend, so a hint and the values returned are lists indexed like the model.

Where one backend needs rows of its own (CP-SAT: an enforced row, an interval; a MILP: a
continuous variable), the encoding adds them to :attr:`CpSatLinear.model` or
:attr:`MilpLinear.problem` over ``vars`` between ``load`` and ``run``, and names a variable
it made there with ``native`` when an objective needs it.
The MIP-start policy for HiGHS lives in :class:`MilpLinear` (``warm_start_on_highs``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from placement.solver.backends.base import BackendRun
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.milp import milp_solver
from placement.solver.cancel import CancellationToken
from placement.solver.linear import LinearModel
from placement.solver.options import SolveOptions

OnValues = Callable[[list[float], float | None], None]
"""Called with the values of an improving solution (by model variable) and the solver's
bound at that moment (None when the solver does not give one)."""


class LinearBackend(Protocol):
    """What a family needs from a solver to solve a :class:`LinearModel`."""

    source: str
    """The name solutions are reported under (``cpsat``, ``milp-highs``, ``milp-cbc``)."""
    integer_objective: bool
    """True when objective and row coefficients must be integers (CP-SAT)."""

    def load(self, model: LinearModel) -> None:
        """Create the variables and rows of ``model`` not created yet."""
        ...

    def add_row(self, terms: dict[int, float], lo: float | None, hi: float | None) -> None:
        """Add a row outside the model: ``lo <= sum(coef * var) <= hi``."""
        ...

    def run(
        self,
        sense: str,
        objective: dict[int, float] | None,
        constant: float,
        hint: list[int] | None,
        time_limit_s: float,
        cancel: CancellationToken,
        on_values: OnValues | None = None,
    ) -> tuple[BackendRun, list[float] | None]:
        """Optimise (``sense`` ``min`` or ``max``; ``objective`` None is a feasibility run)
        until ``time_limit_s`` or ``cancel``; call ``on_values(values, bound)`` on improving
        solutions when the solver can; return the mapped run and the final values (None
        without a solution). A hint shorter than the variables hints the first ones."""
        ...


def _check_no_native(variables: list[Any], n_model_vars: int, model: LinearModel) -> None:
    """Model variables are loaded before native ones: their indices must stay the model's."""
    if len(variables) > n_model_vars and model.num_vars > n_model_vars:
        raise ValueError("load every model variable before naming native ones")


class CpSatLinear:
    """The :class:`LinearBackend` over CP-SAT (integer coefficients)."""

    source = "cpsat"
    integer_objective = True

    def __init__(self, options: SolveOptions) -> None:
        self.options = options
        self.model: Any = None
        """The ``cp_model.CpModel`` (after the first ``load``)."""
        self.vars: list[Any] = []
        """CP-SAT's variable for each model variable, then the native ones (:meth:`native`)."""
        self.n_rows = 0
        self.n_model_vars = 0

    def load(self, model: LinearModel) -> None:
        from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by solves only

        if self.model is None:
            self.model = cp_model.CpModel()
        cpm = self.model
        _check_no_native(self.vars, self.n_model_vars, model)
        for i in range(self.n_model_vars, model.num_vars):
            self.vars.append(cpm.new_int_var(model.lb[i], model.ub[i], ""))
        self.n_model_vars = model.num_vars
        v = self.vars
        weighted = cp_model.LinearExpr.weighted_sum
        for idx, coef, lo, hi in model.rows[self.n_rows :]:
            cpm.add_linear_constraint(
                weighted([v[i] for i in idx], coef),
                cp_model.INT_MIN if lo is None else lo,
                cp_model.INT_MAX if hi is None else hi,
            )
        self.n_rows = len(model.rows)

    def native(self, var: Any) -> int:
        """Name a variable made directly in :attr:`model` (by a CP-SAT-only row) by an index
        that an objective can use; the model's variables must all be loaded first."""
        self.vars.append(var)
        return len(self.vars) - 1

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
        objective: dict[int, float] | None,
        constant: float,
        hint: list[int] | None,
        time_limit_s: float,
        cancel: CancellationToken,
        on_values: OnValues | None = None,
    ) -> tuple[BackendRun, list[float] | None]:
        from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by solves only

        cpm = self.model
        cpm.clear_objective()
        if objective is not None:  # else a feasibility run: no objective at all
            expr = cp_model.LinearExpr.weighted_sum(
                [self.vars[i] for i in objective], [int(c) for c in objective.values()]
            ) + int(round(constant))
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
            if values and on_values is not None:
                on_values(values, float(callback.best_objective_bound))

        run = CpSat.run(cpm, self.options, cancel, time_limit_s, on_solution)
        final = None
        if run.has_solution:
            final = list(run.solver.response_proto.solution)  # type: ignore[attr-defined]
        return run, final or None


class MilpLinear:
    """The :class:`LinearBackend` over the PuLP MILP solver of ``options.milp_solver``.

    Parameters
    ----------
    options:
        The solve options (``milp_solver`` chooses HiGHS or CBC).
    name:
        The problem's name.
    warm_start_on_highs:
        Pass the hint to HiGHS as a MIP start. The partition and mc encodings say False: the
        wrapper can return the objective of the solved model with the values of the start
        (seen on small models solved in presolve), so a proof would not match its values.
        The GPU tiers pass it (their checker scores every solution, and a tier's proof is
        kept only with values that reach it). CBC always gets the start.
    """

    integer_objective = False

    def __init__(
        self, options: SolveOptions, name: str = "model", warm_start_on_highs: bool = True
    ) -> None:
        self.options = options
        self.solver_name, self.solver = milp_solver(options)
        self.source = f"milp-{self.solver_name}"
        self.name = name
        self.warm_start = warm_start_on_highs or self.solver_name != "highs"
        """Whether ``run`` passes its hint to the solver (see ``warm_start_on_highs``)."""
        self.problem: Any = None
        self.vars: list[Any] = []
        """PuLP's variable for each model variable, then the native ones (:meth:`native`)."""
        self.n_rows = 0
        self.n_model_rows = 0
        self.n_model_vars = 0

    def load(self, model: LinearModel) -> None:
        import pulp  # deferred: 0.26 s to import, paid by solves only

        if self.problem is None:
            self.problem = pulp.LpProblem(self.name, pulp.LpMaximize)
        _check_no_native(self.vars, self.n_model_vars, model)
        for i in range(self.n_model_vars, model.num_vars):
            self.vars.append(pulp.LpVariable(f"v{i}", model.lb[i], model.ub[i], pulp.LpInteger))
        self.n_model_vars = model.num_vars
        for idx, coef, lo, hi in model.rows[self.n_model_rows :]:
            self._add(zip(idx, coef, strict=True), lo, hi)
        self.n_model_rows = len(model.rows)

    def _add(self, terms: Iterable[tuple[int, float]], lo: float | None, hi: float | None) -> None:
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

    def native(self, var: Any) -> int:
        """Name a variable made directly in :attr:`problem` (by a MILP-only row, such as a
        continuous one) by an index that an objective can use; the model's variables must
        all be loaded first."""
        self.vars.append(var)
        return len(self.vars) - 1

    def add_row(self, terms: dict[int, float], lo: float | None, hi: float | None) -> None:
        self._add(terms.items(), lo, hi)

    def run(
        self,
        sense: str,
        objective: dict[int, float] | None,
        constant: float,
        hint: list[int] | None,
        time_limit_s: float,
        cancel: CancellationToken,
        on_values: OnValues | None = None,
    ) -> tuple[BackendRun, list[float] | None]:
        import pulp  # deferred: 0.26 s to import, paid by solves only

        prob = self.problem
        terms = [] if objective is None else list(objective.items())
        expr = pulp.LpAffineExpression([(self.vars[i], c) for i, c in terms])
        expr += constant
        prob.setObjective(expr)
        prob.sense = pulp.LpMaximize if sense == "max" else pulp.LpMinimize
        warm = None
        if hint is not None and self.warm_start:
            warm = {v: float(h) for v, h in zip(self.vars[: len(hint)], hint, strict=True)}
        variables = self.vars
        on_solution = None
        if on_values is not None:

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
