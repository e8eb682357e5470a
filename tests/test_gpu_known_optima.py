"""Every backend and every greedy on small GPU instances whose optimum is known by hand.

Exact backends must reach every objective tier's optimum and prove it; greedies must be
feasible and no better than the optimum; the checker must agree with both.
"""

from __future__ import annotations

import pytest

from placement.models.gpu import (
    GpuInstance,
    GpuJob,
    WorkloadClass,
    check,
)
from placement.models.gpu.greedy import greedy_solutions
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from tests.gpu_cases import LEVELS
from tests.gpu_cases import gpu_node as node

# name -> (instance, optimum of each tier: placed_gpu_weighted, comm_cost, fragmentation)
CASES: dict[str, tuple[GpuInstance, tuple[float, float, float]]] = {
    # Priority knapsack on one 4-GPU node: b (2 GPUs, priority 2) + c (2 GPUs) = 6 beats a (3).
    "priority_knapsack": (
        GpuInstance(
            LEVELS,
            [node("n0", 4)],
            [GpuJob("a", gpus=3), GpuJob("b", gpus=2, priority=2), GpuJob("c", gpus=2)],
        ),
        (6.0, 0.0, 0.0),
    ),
    # A 300-milli share: on GPU 0 (400 free) it leaves [100, 1000] -> unusable 100 for both
    # mix classes; on GPU 1 it leaves [400, 700] -> unusable 1100 for the 1-GPU class.
    "fractional_best_fit": (
        GpuInstance(
            LEVELS,
            [node("n0", 2, used=(600, 0))],
            [GpuJob("f", gpu_milli=300)],
            expected_mix=[WorkloadClass(1, 0, 1), WorkloadClass(0, 300, 1)],
        ),
        (0.3, 0.0, 0.1),
    ),
    # A gang of 3 x 2 GPUs cannot fit 2 x 2 GPUs: all or nothing, only the small job is placed.
    # Mix {2 GPUs: 3, 1 GPU: 1}: the node left with one free GPU is unusable for the 2-GPU class.
    "gang_all_or_nothing": (
        GpuInstance(
            LEVELS,
            [node("n0", 2), node("n1", 2)],
            [GpuJob("big", workers=3, gpus=2), GpuJob("small", gpus=1)],
        ),
        (1.0, 0.0, 0.75),
    ),
    # The gang needs one rack (required): only rack r0 has 4 GPUs (n0 + n1): 5 GB / 25 GB/s.
    # The 2 x 1-GPU job prefers one node: n2 is left, and it holds both in one NVLink domain.
    "required_and_preferred_locality": (
        GpuInstance(
            LEVELS,
            [node("n0", 2, "r0", 2), node("n1", 2, "r0", 2), node("n2", 2, "r1", 2)],
            [
                GpuJob(
                    "g",
                    workers=2,
                    gpus=2,
                    locality_level="rack",
                    locality_required=True,
                    traffic_gb=5,
                ),
                GpuJob("h", workers=2, gpus=1, locality_level="node"),
            ],
        ),
        (6.0, 0.2, 0.0),
    ),
    # Traffic pulls a 2 x 2-GPU gang into one NVLink domain of 4 (600 GB/s) rather than across
    # the two domains of the other node (64 GB/s): 12 / 600 = 0.02.
    "traffic_prefers_nvlink": (
        GpuInstance(
            LEVELS,
            [node("n0", 4, "r0", 2), node("n1", 4, "r0", 4)],
            [GpuJob("g", workers=2, gpus=2, traffic_gb=12)],
            expected_mix=[WorkloadClass(4, 0, 1)],
        ),
        (4.0, 0.02, 0.0),
    ),
}

EXACT = [("cpsat", "highs"), ("milp", "highs"), ("milp", "cbc")]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("backend", "milp_solver"), EXACT, ids=["cpsat", "milp-highs", "milp-cbc"])
def test_exact_backend_reaches_and_proves_the_optimum(
    case: str, backend: str, milp_solver: str
) -> None:
    instance, optimum = CASES[case]
    result = solve(
        instance,
        SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=20, deterministic=True),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    terms = result.objective_terms
    assert (
        terms["placed_gpu_weighted"],
        terms["comm_cost"],
        terms["fragmentation"],
    ) == pytest.approx(optimum, abs=1e-6)
    assert result.bound == pytest.approx(optimum[0]) and result.gap == 0
    # The result's objective is the checker's.
    assert check(instance, result.solution).terms == terms


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_greedy_is_feasible_and_no_better_than_the_optimum(case: str) -> None:
    instance, optimum = CASES[case]
    best = (optimum[0], -optimum[1], -optimum[2])
    for name, solution in greedy_solutions(instance, SolveOptions()):
        report = check(instance, solution)
        assert report.feasible, (name, report.violations)
        assert report.score() <= tuple(round(v, 6) for v in best), name


def test_deterministic_mode_reproduces_a_gpu_solve() -> None:
    from placement.models.gpu.generate import generate

    instance = generate(128, 40, 5)
    options = SolveOptions(backend="cpsat", time_limit_s=2, deterministic=True, seed=3)
    a, b = solve(instance, options), solve(instance, options)
    assert a.objective_terms == b.objective_terms
    assert a.solution.placements == b.solution.placements
