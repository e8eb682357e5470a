"""A solve's phases are timed under what ran, not under the backend option that chose it
(issue 41: the partition DP and the serving-plan planner were reported as ``cpsat``)."""

from __future__ import annotations

import pytest

from placement import load
from placement.solver import SolveOptions, solve
from tests.conftest import REPO


@pytest.mark.parametrize(
    ("path", "ran", "not_ran"),
    [
        ("instances/partition/tiny-chain.json", "dp", "cpsat"),
        ("instances/partition/serving-plan-13b-8gpu.json", "serving-tp", "cpsat"),
    ],
)
def test_the_exact_phase_is_named_by_what_ran(path: str, ran: str, not_ran: str) -> None:
    result = solve(load(REPO / path), SolveOptions(time_limit_s=10))
    assert result.status.value == "optimal"
    assert ran in result.phase_times_s, result.phase_times_s
    assert not_ran not in result.phase_times_s, result.phase_times_s


def test_a_backend_that_ran_keeps_its_name() -> None:
    result = solve(load(REPO / "instances/dag/etl-small.json"), SolveOptions(time_limit_s=10))
    assert "cpsat" in result.phase_times_s, result.phase_times_s


def test_the_gpu_configuration_lp_is_timed_apart_from_cpsat() -> None:
    """medium.json is solved in rack windows after the configuration LP and MIP on HiGHS."""
    result = solve(load(REPO / "instances/gpu/medium.json"), SolveOptions(time_limit_s=4))
    assert "config-lp" in result.phase_times_s, result.phase_times_s
    assert "cpsat" in result.phase_times_s, result.phase_times_s
