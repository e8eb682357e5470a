"""The configuration LP of the GPU family (models/gpu/config_lp.py): a valid bound (never
below a CP-SAT-proved optimum), tight where the LP relaxation is not, its placements checked,
its fallback on fields it does not know, and its use inside the exact search."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from placement.benchmarks.gpu.suites import cases_synthetic
from placement.models.gpu import GpuInstance, GpuJob, GpuNode, check
from placement.models.gpu.bound import relaxation_bound
from placement.models.gpu.config_lp import (
    KNOWN_FIELDS,
    ConfigurationLP,
    configuration_bound,
    lp_dive,
    understood,
)
from placement.models.gpu.cpsat import CpSatEncoding
from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit
from placement.solver import CancellationToken, InputError, SolutionStatus, SolveOptions, solve
from placement.solver.testing import ExactContext
from tests.gpu_cases import LEVELS
from tests.gpu_cases import gpu_node as node


def optimum(instance: GpuInstance) -> float:
    """The first tier's optimum, proved by CP-SAT on the full model."""
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, deterministic=True))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    return check(instance, result.solution).terms["placed_gpu_weighted"]


def seven_free_gpus() -> GpuInstance:
    """One node with 7 fully free GPUs (the 8th half used) and two 4-GPU jobs: the LP
    places 1.75 of them (7 GPUs), but a node takes whole workers, so only one fits."""
    return GpuInstance(
        levels=LEVELS,
        nodes=[node("n0", gpus=8, used=(0, 0, 0, 0, 0, 0, 0, 500))],
        jobs=[GpuJob("a", gpus=4), GpuJob("b", gpus=4)],
    )


def test_tight_where_the_lp_relaxation_is_not() -> None:
    instance = seven_free_gpus()
    cluster = FreeCapacity(instance)
    lp = relaxation_bound(instance, cluster, SolveOptions(), CancellationToken(), 5.0)
    found = configuration_bound(instance, cluster, 5.0)
    assert found.converged
    assert lp is not None and 7000 <= lp <= 7001  # (rounded up by one milli for safety)
    assert found.bound == 4000
    assert optimum(instance) == pytest.approx(4.0)


def test_gang_over_nodes_of_three_free_gpus() -> None:
    # Three nodes with 3 fully free GPUs each; a gang of 2 workers x 2 GPUs and three 1-GPU
    # jobs. LP: 9 GPUs of work fit the 9 free; the packings allow one 2-GPU worker per node
    # (plus one 1-GPU), so all 7 GPUs of demand fit: the bound is the demand, 7.
    instance = GpuInstance(
        levels=LEVELS,
        nodes=[node(f"n{i}", gpus=4, used=(0, 0, 0, 1000)) for i in range(3)],
        jobs=[
            GpuJob("gang", workers=2, gpus=2, priority=2),
            *(GpuJob(f"one{i}", gpus=1) for i in range(3)),
        ],
    )
    found = configuration_bound(instance, None, 5.0)
    assert found.converged
    assert found.bound == 11_000  # 2 x 2 GPUs x priority 2 + 3 x 1 GPU
    assert optimum(instance) == pytest.approx(11.0)


KINDS = ("whole", "fractional", "cpu")


@st.composite
def small_instances(draw: st.DrawFn) -> GpuInstance:
    """1-3 nodes of 2-8 GPUs (some partly used, A100 or V100, one or two racks) and 1-6 jobs
    of every kind, with gangs, GPU types, priorities and required localities."""
    nodes = []
    for n in range(draw(st.integers(1, 3))):
        gpus = draw(st.sampled_from((2, 4, 8)))
        used = tuple(draw(st.sampled_from((0, 0, 0, 300, 700, 1000))) for _ in range(gpus))
        nodes.append(
            node(
                f"n{n}",
                gpus=gpus,
                rack=draw(st.sampled_from(("r0", "r1"))),
                domain=draw(st.sampled_from((0, gpus // 2))),
                used=used,
                gpu_type=draw(st.sampled_from(("A100", "V100"))),
                cpu=draw(st.sampled_from((8_000, 64_000))),
            )
        )
    jobs = []
    for j in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(KINDS))
        workers = draw(st.integers(1, 3))
        level, required = draw(
            st.sampled_from((("", False), ("rack", True), ("node", True), ("nvlink", False)))
        )
        common = {
            "name": f"j{j}",
            "workers": workers,
            "priority": draw(st.integers(1, 3)),
            "cpu_milli": draw(st.sampled_from((0, 2_000, 6_000))),
            "locality_level": level,
            "locality_required": required,
        }
        if kind == "whole":
            job = GpuJob(
                gpus=draw(st.sampled_from((1, 2, 3, 4, 8))),
                gpu_types=draw(st.sampled_from(((), ("A100",), ("V100",)))),
                **common,
            )
        elif kind == "fractional":
            job = GpuJob(gpu_milli=draw(st.sampled_from((200, 350, 500, 800))), **common)
        else:
            job = GpuJob(**common)
        jobs.append(job)
    return GpuInstance(levels=LEVELS, nodes=nodes, jobs=jobs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances())
def test_never_below_a_proved_optimum(instance: GpuInstance) -> None:
    try:
        best = optimum(instance)
    except InputError:
        assume(False)  # e.g. a required locality the validator rejects for this instance
        return
    found = configuration_bound(instance, None, 5.0)
    assert found.bound is not None
    assert found.bound / 1000 >= best - 1e-9
    # The rounded placements are checked placements, never above the bound.
    clp = ConfigurationLP(instance, None, best_fit(instance))
    clp.bound(5.0)
    dived = lp_dive(instance, clp.cluster, 5.0, first=clp)
    for solution in (clp.lp_rounding(), clp.integer_solution(2.0), dived):
        if solution is not None:
            report = check(instance, solution)
            assert report.feasible, report.violations
            assert report.terms["placed_gpu_weighted"] <= best + 1e-9


def test_generated_instances_bound_and_placements() -> None:
    for seed in (1, 2):
        instance = generate(64, 24, seed, occupancy=0.3)
        cluster = FreeCapacity(instance)
        lp = relaxation_bound(instance, cluster, SolveOptions(), CancellationToken(), 5.0)
        clp = ConfigurationLP(instance, cluster, best_fit(instance))
        found = clp.bound(20.0)
        assert found.converged and found.bound is not None and lp is not None
        assert found.bound <= lp + 1  # the packings are a subset of the LP's points
        dived = lp_dive(instance, cluster, 10.0, first=clp)
        for solution in (clp.lp_rounding(), clp.integer_solution(2.0), dived):
            assert solution is not None
            report = check(instance, solution)
            assert report.feasible, report.violations
            assert report.terms["placed_gpu_weighted"] * 1000 <= found.bound


@dataclasses.dataclass(frozen=True)
class MovableJob(GpuJob):
    """A job with a field the relaxation was not derived for (a running job that may move)."""

    running_on: str = ""


def test_unknown_fields_fall_back() -> None:
    instance = seven_free_gpus()
    assert understood(instance) is None
    instance.jobs[0] = MovableJob("a", gpus=4, running_on="n0")
    assert understood(instance) == "GpuJob.running_on"
    found = configuration_bound(instance, None, 5.0)
    assert found.bound is None and "GpuJob.running_on" in found.message
    # At its default, the field changes nothing.
    instance.jobs[0] = MovableJob("a", gpus=4)
    assert configuration_bound(instance, None, 5.0).bound == 4000


def test_restricted_search_uses_the_bound() -> None:
    instance = generate(48, 16, 3, occupancy=0.3)
    best = optimum(instance)
    options = SolveOptions(backend="cpsat", time_limit_s=4.0)
    ctx = ExactContext(instance, options, backend="cpsat")
    ctx.report(best_fit(instance), "greedy")
    encoding = CpSatEncoding(max_placement_vars=10)
    outcome = encoding.solve(instance, ctx)
    stats = encoding.last_stats
    assert stats["restricted"] and "config_lp" in stats
    assert not ctx.rejected
    assert outcome.bound is not None and outcome.bound >= best - 1e-9
    assert all(b >= best - 1e-9 for b in ctx.bounds)
    if stats["config_lp"]["bound"] is not None:
        assert outcome.bound <= stats["config_lp"]["bound"] + 1e-9


def test_benchmark_runs_one_size_alone() -> None:
    config = SimpleNamespace(quick=False, time_limit_s=5.0, params={"gpus": ("1024",)})
    cases = cases_synthetic(config)
    assert {c["gpus"] for c in cases} == {1024} and len(cases) == 3 * 4
    config.params = {"gpus": ("1024",), "seeds": ("2",), "backends": ("cpsat",)}
    assert [c["case"] for c in cases_synthetic(config)] == ["1024x200 seed 2 cpsat"]
    for bad in ({"gpus": ("512",)}, {"seeds": ("x",)}, {"backends": ("gurobi",)}):
        config.params = bad
        with pytest.raises(InputError):
            cases_synthetic(config)


def test_known_fields_exist() -> None:
    # A renamed field would make the relaxation skip every instance (or miss a meaning);
    # new fields are handled by the fallback above (test_unknown_fields_fall_back).
    for cls in (GpuInstance, GpuNode, GpuJob):
        assert KNOWN_FIELDS[cls] <= {f.name for f in dataclasses.fields(cls)}
