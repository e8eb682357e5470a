"""The backend wrappers' helpers for models built outside a family's exact solve: a HiGHS
MIP grown column by column (:meth:`HighsModel.set_integer`) and a CP-SAT sub-problem
(:meth:`CpSat.run_subproblem`), each on a small model whose optimum is known by hand."""

from __future__ import annotations

import math

import numpy as np
from ortools.sat.python import cp_model

from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel
from placement.solver.result import StopReason


def _grown(integer: bool) -> HighsModel:
    """max 5x + 4y s.t. 6x + 4y <= 24, x + 2y <= 6, x, y >= 0: the LP optimum is 21 at
    (3, 1.5), the integer one 20 at (4, 0)."""
    model = HighsModel()
    model.add_columns(np.array([5.0, 4.0]), np.zeros(2), np.full(2, math.inf))
    model.maximize()
    model.add_row(-math.inf, 24.0, [0, 1], [6.0, 4.0])
    model.add_row(-math.inf, 6.0, [0, 1], [1.0, 2.0])
    if integer:
        model.set_integer([0, 1])
    return model


def test_a_grown_model_with_integer_columns_is_solved_as_a_mip() -> None:
    lp = _grown(integer=False).run(10.0)
    assert lp.status == RunStatus.OPTIMAL and lp.objective == 21.0
    mip = _grown(integer=True)
    assert mip.is_mip
    run = mip.run(10.0)
    assert run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
    assert run.objective == 20.0 and run.bound == 20.0
    assert run.x is not None and list(run.x) == [4.0, 0.0]


def test_columns_added_with_entries_and_bounds_changed_re_solve_in_place() -> None:
    """The LP above, grown in place and re-solved from its basis, against the same LP
    loaded from scratch: a column 7z with entries 5 and 1 in the two rows lifts the optimum
    to 33.6 (z = 4.8: row 0 binds, z pays 7/5 per unit of it, more than x or y); then x >= 2
    leaves 12 of row 0 for z = 2.4: 26.8."""
    model = _grown(integer=False)
    assert model.run(10.0).objective == 21.0
    # z: objective 7, 5 in row 0, 1 in row 1
    model.add_columns_with_entries(
        np.array([7.0]), np.array([0, 2]), np.array([0, 1]), np.array([5.0, 1.0])
    )
    grown = model.run(10.0)
    fresh = HighsModel()
    fresh.load(
        np.array([5.0, 4.0, 7.0]),
        np.zeros(3),
        np.full(3, math.inf),
        np.full(2, -math.inf),
        np.array([24.0, 6.0]),
        np.array([0, 2, 4, 6]),
        np.array([0, 1, 0, 1, 0, 1]),
        np.array([6.0, 1.0, 4.0, 2.0, 5.0, 1.0]),
        maximize=True,
    )
    scratch = fresh.run(10.0)
    assert grown.status == scratch.status == RunStatus.OPTIMAL
    assert math.isclose(grown.objective, 33.6) and math.isclose(scratch.objective, 33.6)
    model.set_column_bounds(np.array([0]), np.array([2.0]), np.array([math.inf]))
    fixed = model.run(10.0)
    assert fixed.status == RunStatus.OPTIMAL and fixed.x is not None and fixed.x[0] >= 2.0 - 1e-9
    fresh.set_column_bounds(np.array([0]), np.array([2.0]), np.array([math.inf]))
    assert math.isclose(fixed.objective, 26.8)
    assert math.isclose(fresh.run(10.0).objective, 26.8)


def _knapsack() -> tuple[cp_model.CpModel, list[cp_model.IntVar]]:
    """40 items of 0-3 copies, weights and values drawn with seed 1, capacity the weights'
    sum: proved 4,075 in well under a second."""
    rng = np.random.default_rng(1)
    weight, value = rng.integers(10, 100, size=40), rng.integers(10, 100, size=40)
    model = cp_model.CpModel()
    x = [model.new_int_var(0, 3, f"x{j}") for j in range(40)]
    model.add(sum(int(weight[j]) * x[j] for j in range(40)) <= int(weight.sum()))
    model.maximize(sum(int(value[j]) * x[j] for j in range(40)))
    return model, x


def test_a_cpsat_subproblem_maps_its_status_and_keeps_the_solver() -> None:
    model, x = _knapsack()
    run = CpSat.run_subproblem(model, 30.0)
    assert run.status == RunStatus.OPTIMAL and run.stop_reason == StopReason.PROVEN
    assert run.objective == run.bound == 4_075.0
    solver = run.solver  # type: ignore[attr-defined]
    assert sum(solver.value(v) for v in x) > 0

    infeasible = cp_model.CpModel()
    y = infeasible.new_int_var(0, 5, "y")
    infeasible.add(y >= 7)
    infeasible.maximize(y)
    run = CpSat.run_subproblem(infeasible, 30.0)
    assert run.status == RunStatus.INFEASIBLE and run.stop_reason == StopReason.PROVEN


def test_a_cpsat_subproblem_stopped_before_its_search_claims_no_bound() -> None:
    """CP-SAT stopped before it loads the model reports a best bound of 0, which bounds
    nothing here (the optimum is 4,075): the run must carry none."""
    model, _ = _knapsack()
    run = CpSat.run_subproblem(model, 0.0)
    assert run.status == RunStatus.NO_SOLUTION and run.stop_reason == StopReason.TIME_LIMIT
    assert run.bound is None
