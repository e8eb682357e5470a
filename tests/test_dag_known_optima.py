"""Every exact backend and every heuristic on small DAG instances with known optima.

Exact backends must reach the optimum and prove it; heuristics must be feasible and no
better than it; the checker must agree with both.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from placement.models.dag import FAMILY, DagInstance, check
from placement.models.dag.greedy import greedy_solutions
from placement.models.dag.loaders import load_topcuoglu
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.cancel import CancellationToken
from tests import dag_cases

CASES: dict[str, tuple[Callable[[], DagInstance], float]] = {
    "chain": (dag_cases.chain_with_transfer, 4.0),
    "fork_join": (dag_cases.fork_join, 8.0),
    "grid": (dag_cases.grid_three_tasks, 5.0),
    "slots": (dag_cases.cumulative_slots, 4.0),
    "locality": (dag_cases.data_locality, 10.0),
    "cost_loose": (lambda: dag_cases.cost_under_limit(12.0), 5.0),
    "cost_tight": (lambda: dag_cases.cost_under_limit(6.0), 10.0),
    "release": (dag_cases.release_and_deadline, 6.0),
    "lanes_machines": (lambda: dag_cases.identical_lanes(1), 9.0),
    "lanes_slots": (lambda: dag_cases.identical_lanes(2), 9.0),
}
BACKENDS = [("cpsat", "highs"), ("milp", "highs"), ("milp", "cbc")]


@pytest.mark.parametrize("backend,milp_solver", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_backends_prove_the_optimum(case: str, backend: str, milp_solver: str) -> None:
    make, optimum = CASES[case]
    instance = make()
    result = solve(
        instance,
        SolveOptions(time_limit_s=8, backend=backend, milp_solver=milp_solver, threads=1),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    assert result.objective == pytest.approx(optimum)
    assert check(instance, result.solution).feasible


class _Context:
    """The portfolio's side of an exact encoding, without a heuristic incumbent, so that the
    encoding itself must find and prove the optimum (the portfolio would skip the search when
    a heuristic already meets the lower bound)."""

    def __init__(self, instance: DagInstance, backend: str, milp_solver: str) -> None:
        self.instance = instance
        self.options = SolveOptions(
            time_limit_s=8, backend=backend, milp_solver=milp_solver, threads=1
        )
        self.cancel = CancellationToken()
        self.backend = backend
        self.deadline = time.monotonic() + 8
        self.reported: list[float] = []

    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def incumbent(self) -> None:
        return None

    def report(self, solution, source: str, bound: float | None = None) -> bool:
        report = check(self.instance, solution)
        assert report.feasible, (source, report.violations)
        self.reported.append(report.objective)
        return True


@pytest.mark.parametrize("backend,milp_solver", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_encodings_search_and_prove_without_a_hint(
    case: str, backend: str, milp_solver: str
) -> None:
    make, optimum = CASES[case]
    instance = make()
    ctx = _Context(instance, backend, milp_solver)
    if case == "slots" and backend == "milp":
        # Tasks holding two cores on a 2-slot machine are outside the MILP model.
        with pytest.raises(ValueError, match="several cores"):
            FAMILY.exact(backend).solve(instance, ctx)
        return
    outcome = FAMILY.exact(backend).solve(instance, ctx)
    assert outcome.proven_optimal, outcome.message
    assert outcome.stop_reason == StopReason.PROVEN
    assert check(instance, outcome.proven_solution).objective == pytest.approx(optimum)
    assert outcome.bound == pytest.approx(optimum)
    assert min(ctx.reported) == pytest.approx(optimum)


@pytest.mark.parametrize("case", sorted(CASES))
def test_heuristics_are_feasible_and_no_better(case: str) -> None:
    make, optimum = CASES[case]
    instance = make()
    solutions = greedy_solutions(instance, SolveOptions())
    assert solutions[0][0] == "heft"
    for name, solution in solutions:
        report = check(instance, solution)
        if case == "release" and not report.feasible:
            # List schedulers ignore deadlines; the checker must say which one is missed.
            assert any(v.startswith("deadline") for v in report.violations), name
            continue
        assert report.feasible, (name, report.violations)
        assert report.objective >= optimum - 1e-9, name


def test_topcuoglu_example(shared_benchmarks) -> None:
    """The HEFT paper's example: HEFT 80, CPOP 86 (as published); the exact backends find and
    prove 73."""
    base = shared_benchmarks / "dag" / "topcuoglu-2002"
    instance = load_topcuoglu(base / "exec_time.csv", base / "edges_data.csv")
    by_name = dict(greedy_solutions(instance, SolveOptions()))
    assert check(instance, by_name["heft"]).objective == 80.0
    assert check(instance, by_name["cpop"]).objective == 86.0
    for backend, milp_solver in BACKENDS:
        result = solve(
            instance,
            SolveOptions(time_limit_s=10, backend=backend, milp_solver=milp_solver, threads=1),
        )
        assert result.status == SolutionStatus.OPTIMAL, (backend, milp_solver, result.message)
        assert result.objective == 73.0
        assert result.bound == 73.0


def test_rounded_times_give_a_valid_bound_and_no_claim() -> None:
    """Running times of 1/3 s are integral at no decimal scale: CP-SAT solves an outward-
    rounded model, claims no optimum, and its bound (minus the rounding slack) stays below
    the true optimum. Two tasks of work 1, machines of speed 3 and 1: both on the fast one
    end at 2/3 (optimum); the cheap bound is only 1/3, so CP-SAT must search."""
    from placement.models.dag import DagMachine, DagTask
    from tests.dag_cases import build

    instance = build(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=3.0), DagMachine("slow", "s")],
            tasks=[DagTask("a", 1), DagTask("b", 1)],
        )
    )
    result = solve(instance, SolveOptions(time_limit_s=5, backend="cpsat", threads=1))
    assert check(instance, result.solution).feasible
    assert result.objective == pytest.approx(2 / 3)
    assert result.status == SolutionStatus.FEASIBLE
    assert "outward-rounded" in result.message
    assert 2 / 3 - 1e-4 <= result.bound <= 2 / 3
