"""Every backend and every heuristic on small partition instances whose optimum is known.

Exact backends (the DP fast path, CP-SAT and MILP with their own proofs, HiGHS and CBC) must
reach the optimum and prove it; heuristics must be feasible and no better; the checker
agrees with all of them.
"""

from __future__ import annotations

import pytest

from placement.models.partition import check
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.dp import solve_dp
from placement.models.partition.greedy import greedy_solutions
from placement.models.partition.milp import MilpEncoding
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.family import get_family
from placement.solver.portfolio import _Run
from tests.partition_cases import KNOWN_OPTIMA

CASES = sorted(KNOWN_OPTIMA)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(
    "backend,milp_solver",
    [("auto", "highs"), ("cpsat", "highs"), ("milp", "highs"), ("milp", "cbc")],
)
def test_solve_reaches_and_proves_the_optimum(case: str, backend: str, milp_solver: str) -> None:
    instance, optimum = KNOWN_OPTIMA[case]
    result = solve(
        instance, SolveOptions(time_limit_s=10, backend=backend, milp_solver=milp_solver, threads=1)
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    assert result.objective == pytest.approx(optimum, abs=1e-9)
    assert check(instance, result.solution).objective == pytest.approx(optimum, abs=1e-9)


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("encoding", [CpSatEncoding, MilpEncoding])
def test_encodings_prove_without_the_dp(case: str, encoding: type) -> None:
    """CP-SAT and MILP prove each optimum by themselves (no DP, no incumbent)."""
    instance, optimum = KNOWN_OPTIMA[case]
    run = _Run(get_family("partition"), instance, SolveOptions(time_limit_s=10, threads=1), "x")
    outcome = encoding(use_dp=False).solve(instance, run)
    assert outcome.proven_optimal, outcome.message
    assert check(instance, outcome.proven_solution).objective == pytest.approx(optimum, abs=1e-9)
    assert outcome.bound == pytest.approx(optimum, abs=1e-9)


@pytest.mark.parametrize("case", CASES)
def test_dp_and_heuristics(case: str) -> None:
    instance, optimum = KNOWN_OPTIMA[case]
    result = solve_dp(instance)
    assert result.exact
    assert result.objective_ns / 1e6 == pytest.approx(optimum, abs=1e-9)
    for name, solution in greedy_solutions(instance):
        report = check(instance, solution)
        assert report.feasible, (name, report.violations)
        assert report.objective >= optimum - 1e-9, name


def test_serving_reports_tokens_per_second() -> None:
    instance, _ = KNOWN_OPTIMA["serving_pipeline"]
    result = solve(instance, SolveOptions(time_limit_s=5, threads=1))
    assert result.objective_terms["tokens_per_s"] == pytest.approx(2 / 0.005)
