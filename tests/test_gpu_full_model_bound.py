"""The reference bound of the GPU family (benchmarks/gpu/full_model_bound.py): HiGHS on the full
exact model of tier 1 proves the CP-SAT optimum when it finishes, is never below it when it
does not, returns checked placements, and the benchmark's ``reference`` parameter reaches it."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import HealthCheck, assume, given, settings

from placement.benchmarks.gpu.full_model_bound import full_model_bound
from placement.benchmarks.gpu.suites import _bounds, cases_synthetic, report_synthetic
from placement.models.gpu import GpuInstance, check
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit
from placement.solver import InputError
from tests.test_gpu_config_lp import optimum, seven_free_gpus, small_instances


def test_proves_the_optimum_where_the_lp_is_loose() -> None:
    instance = seven_free_gpus()  # LP 7, optimum 4 (one 4-GPU worker per 7 free GPUs)
    found = full_model_bound(instance, 10.0)
    assert found.bound == 4000 and found.placed == 4000
    assert found.solution is not None and check(instance, found.solution).feasible


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_never_below_a_proved_optimum(instance: GpuInstance) -> None:
    try:
        best = optimum(instance)
    except InputError:
        assume(False)  # e.g. a required locality the validator rejects for this instance
        return
    found = full_model_bound(instance, 10.0, best_fit(instance))
    assert found.bound is not None and found.bound / 1000 >= best - 1e-9
    if found.solution is not None:
        report = check(instance, found.solution)
        assert report.feasible, report.violations
        assert found.placed is not None
        assert abs(report.terms["placed_gpu_weighted"] * 1000 - found.placed) < 1e-6
        assert found.placed <= found.bound


def test_a_short_limit_still_bounds_a_generated_instance() -> None:
    instance = generate(64, 24, 1, occupancy=0.3)
    best = optimum(instance)
    found = full_model_bound(instance, 0.5, best_fit(instance))
    assert found.bound is not None and found.bound / 1000 >= best - 1e-9


def test_benchmark_reference_parameter() -> None:
    config = SimpleNamespace(quick=False, time_limit_s=5.0, params={"gpus": ("1024",)})
    assert all(c["reference_s"] == 0.0 for c in cases_synthetic(config))
    config.params = {"gpus": ("1024",), "reference": 30.0}
    assert all(c["reference_s"] == 30.0 for c in cases_synthetic(config))
    instance = generate(64, 12, 1)
    row = _bounds(instance, 5.0, best_fit(instance))
    assert row["full_invalid"] == 0
    assert row["full_bound"] is not None and row["lp_bound"] is not None
    assert row["full_placed"] is not None and row["full_placed"] <= row["full_bound"] + 1e-9


def test_report_lists_the_reference_beside_the_lp() -> None:
    rows = [
        {
            "gpus": 64,
            "jobs": 12,
            "seed": 1,
            "backend": "greedy",
            "placed_gpu_weighted": 70.0,
            "capacity_bound": 76.0,
            "lp_bound": 75.5,
            "lp_bound_s": 0.1,
            "config_bound": 75.0,
            "config_converged": True,
            "config_iterations": 3,
            "config_bound_s": 0.1,
            "full_bound": 72.0,
            "full_placed": 71.0,
            "full_s": 5.0,
        },
    ]
    text = report_synthetic(rows, SimpleNamespace())
    line = next(x for x in text.splitlines() if x.startswith("| 64 | 12 | 1 | 76.00"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    # full model 72.000, its placement 71.00, the best placed 71.00, gap to the tighter 1/72.
    assert cells[10:15] == ["72.000", "71.00", "5", "71.00", f"{1 / 72:.4f}"]
