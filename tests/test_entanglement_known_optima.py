"""Every backend and every heuristic on small entanglement instances with known optima.

Exact MILP backends must reach every tier's optimum and prove it (every usable path is a
candidate on these networks); CP-SAT must reach it (its bound carries rounding slack, so it
never claims optimality); heuristics must be feasible and no better; the checker agrees.
"""

from __future__ import annotations

import pytest

from placement.models.entanglement import check
from placement.models.entanglement.greedy import qcast_greedy
from placement.models.entanglement.reps import reps_rounding
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from tests.entanglement_cases import CASES, hub

BACKENDS = [("milp", "highs"), ("milp", "cbc"), ("cpsat", "highs")]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS)
def test_exact_backends_reach_the_optimum(case: str, backend: str, milp_solver: str) -> None:
    instance, optimum = CASES[case]
    result = solve(
        instance,
        SolveOptions(time_limit_s=10, backend=backend, milp_solver=milp_solver, threads=1),
    )
    assert result.solution is not None
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    assert tuple(report.terms.values()) == pytest.approx(optimum, abs=1e-9)
    assert result.objective == pytest.approx(report.objective, abs=1e-12)
    if backend == "milp":
        assert result.status == SolutionStatus.OPTIMAL
        assert result.stop_reason == StopReason.PROVEN
        assert result.gap == 0.0
    elif result.message == "no request has a usable path":
        # Nothing to choose: the empty routing is optimal without any rounding.
        assert result.status == SolutionStatus.OPTIMAL
    else:
        # CP-SAT's bound carries the rounding slack of its integer coefficients.
        assert result.status == SolutionStatus.FEASIBLE
        assert result.gap is not None and result.gap <= 1e-3


@pytest.mark.parametrize("case", sorted(CASES))
def test_heuristics_are_feasible_and_no_better(case: str) -> None:
    instance, optimum = CASES[case]
    for solution in (qcast_greedy(instance), reps_rounding(instance)):
        report = check(instance, solution)
        assert report.feasible, report.violations
        assert report.score() <= tuple(round(v, 6) for v in optimum)


def test_qcast_greedy_misses_the_hub_optimum() -> None:
    # The instance is built so that the greedy's first choice blocks the second request.
    instance = hub()
    assert check(instance, qcast_greedy(instance)).objective == pytest.approx(0.81)


def test_unreachable_fidelity_is_explained() -> None:
    instance, _ = CASES["fidelity_unreachable"]
    result = solve(instance, SolveOptions(time_limit_s=5, backend="milp", threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    (reason,) = result.unplaced
    assert reason["kind"] == "fidelity_unreachable"
    assert reason["best_fidelity"] == pytest.approx((1 + 3 * ((4 * 0.99 - 1) / 3) ** 2) / 4)
    assert reason["min_fidelity"] == 0.99


def test_bundled_fidelity_instance_is_proved_optimal(repo) -> None:
    # Every usable path of every request (threshold 0.93) is a candidate: a whole-instance
    # proof, and both heuristics are feasible and no better.
    from placement.api.files import read_instance

    loaded = read_instance(repo / "instances" / "entanglement" / "fidelity.json")
    instance = loaded.instance
    result = solve(instance, SolveOptions(time_limit_s=20, backend="milp", threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.gap == 0.0
    for solution in (qcast_greedy(instance), reps_rounding(instance)):
        report = check(instance, solution)
        assert report.feasible
        assert report.objective <= result.objective + 1e-9


@pytest.mark.parametrize("case", sorted(CASES))
def test_quick_bound_is_at_least_the_optimum(case: str) -> None:
    from placement.models.entanglement import FAMILY

    instance, optimum = CASES[case]
    assert FAMILY.quick_bound(instance) >= optimum[0] - 1e-9
