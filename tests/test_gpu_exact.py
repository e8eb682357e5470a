"""The exact GPU encodings (CP-SAT, MILP with HiGHS, MILP with CBC) on instances whose optimum
is known by hand, with real solvers.

Each case is solved directly through a checker-backed context (placement.solver.testing) (so the encoding alone
is under test) and through the portfolio's ``solve``. Every tier's optimum must be reached
and proved, every reported solution must pass the checker, and the model's own objective
values must equal the checker's.
"""

from __future__ import annotations

from typing import Any

import pytest

from placement.models.gpu import (
    GpuInstance,
    GpuJob,
    GpuSolution,
    WorkerPlacement,
    WorkloadClass,
    check,
)
from placement.models.gpu.bound import relaxation_bound
from placement.models.gpu.cpsat import CpSatEncoding
from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.generate import generate
from placement.models.gpu.greedy import best_fit, greedy_solutions
from placement.models.gpu.milp import MilpEncoding
from placement.models.gpu.model import GpuModel
from placement.solver import (
    CancellationToken,
    SolutionStatus,
    SolveOptions,
    StopReason,
    solve,
)
from placement.solver.testing import ExactContext, backend_id, exact_backends
from tests.gpu_cases import LEVELS
from tests.gpu_cases import gpu_node as node

BACKENDS = exact_backends()
IDS = [backend_id(*b) for b in BACKENDS]


def exact(backend: str, milp_solver: str, **kwargs: Any) -> CpSatEncoding | MilpEncoding:
    return CpSatEncoding(**kwargs) if backend == "cpsat" else MilpEncoding(**kwargs)


def run_exact(
    instance: GpuInstance,
    backend: str,
    milp_solver: str,
    *,
    start: GpuSolution | None = None,
    time_limit_s: float = 20.0,
    **kwargs: Any,
) -> tuple[Any, ExactContext, CpSatEncoding | MilpEncoding]:
    options = SolveOptions(
        backend=backend, milp_solver=milp_solver, time_limit_s=time_limit_s, deterministic=True
    )
    known_bound = kwargs.pop("known_bound", None)
    ctx = ExactContext(instance, options, backend=backend, bound=known_bound)
    if start is not None:
        ctx.report(start, "greedy")
    encoding = exact(backend, milp_solver, **kwargs)
    return encoding.solve(instance, ctx), ctx, encoding


def assert_proven_optimum(
    instance: GpuInstance,
    outcome: Any,
    ctx: ExactContext,
    encoding: Any,
    expected: tuple[float, float, float],
) -> GpuSolution:
    """Every tier optimal and proved; the checker, the model and the context all agree."""
    assert not ctx.rejected, ctx.rejected
    assert outcome.proven_optimal, outcome.message
    assert outcome.stop_reason == StopReason.PROVEN
    solution = outcome.proven_solution
    report = check(instance, solution)
    assert report.feasible, report.violations
    terms = report.terms
    assert terms["placed_gpu_weighted"] == pytest.approx(expected[0], abs=1e-9)
    assert terms["comm_cost"] == pytest.approx(expected[1], abs=1e-6)
    assert terms["fragmentation"] == pytest.approx(expected[2], abs=1e-9)
    # The bound on the primary objective is proved and tight.
    assert outcome.bound == pytest.approx(expected[0], abs=1e-9)
    # The model's own objective values are the checker's.
    model_terms = encoding.last_stats["objectives"]
    for name, value in model_terms.items():
        assert value == pytest.approx(terms[name], abs=1e-6), name
    # The context saw the proved solution (or one that ties it).
    assert ctx.best_report is not None and ctx.best_report.score() == report.score()
    return solution


def gpus_of(solution: GpuSolution, job: int) -> list[tuple[int, tuple[int, ...]]]:
    return [(w.node, tuple(w.gpus)) for w in solution.placements.get(job, ())]


# -------------------------------------------------------------------------------------------
# Cases with a hand-computed optimum: instance, (placed_gpu_weighted, comm_cost, fragmentation)


def gang_all_or_nothing() -> GpuInstance:
    # 6 fully free GPUs (n1 has 2 busy). The gang needs 8: it stays out entirely even though
    # 3 of its 4 workers would fit and be worth more (12) than the jobs that do fit (6).
    return GpuInstance(
        LEVELS,
        [node("n0", 4), node("n1", 4, used=(1000, 1000, 0, 0))],
        [
            GpuJob("gang", workers=4, gpus=2, priority=2),
            GpuJob("four", gpus=4),
            GpuJob("two", gpus=2),
        ],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def gang_across_nodes() -> GpuInstance:
    # 3 workers x 2 GPUs on two 4-GPU nodes: the gang must span both (4 + 2).
    return GpuInstance(
        LEVELS,
        [node("n0", 4), node("n1", 4)],
        [GpuJob("gang", workers=3, gpus=2)],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def fractional_packing() -> GpuInstance:
    # Shares of 300..700 milli on two free GPUs: 2000 milli fit only as {600, 400} and
    # {700, 300}; 500 stays out. Both GPUs end full: no fragmentation.
    return GpuInstance(
        LEVELS,
        [node("n0", 2)],
        [GpuJob(f"f{m}", gpu_milli=m) for m in (300, 400, 500, 600, 700)],
        expected_mix=[WorkloadClass(0, 300, 1)],
    )


def fractional_gang() -> GpuInstance:
    # 3 workers of 400 milli: at most 2 per GPU, so they use both GPUs of n0.
    return GpuInstance(
        LEVELS,
        [node("n0", 2)],
        [GpuJob("f", workers=3, gpu_milli=400)],
        expected_mix=[WorkloadClass(0, 200, 1)],
    )


def required_rack() -> GpuInstance:
    # r0 has 2 + 2 free GPUs, r1 has 4 + 2. The gang (3 x 2 GPUs, rack required) fits only
    # inside r1; the filler (2 x 2) takes r0.
    busy2 = (1000, 1000, 0, 0)
    return GpuInstance(
        LEVELS,
        [
            node("n0", 4, "r0", used=busy2),
            node("n1", 4, "r0", used=busy2),
            node("n2", 4, "r1"),
            node("n3", 4, "r1", used=busy2),
        ],
        [
            GpuJob(
                "gang", workers=3, gpus=2, priority=3, locality_level="rack", locality_required=True
            ),
            GpuJob("filler", workers=2, gpus=2),
        ],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def required_node_unplaceable() -> GpuInstance:
    # Every node has 2 free GPUs: a 2 x 2 gang required inside one node cannot be placed.
    busy2 = (1000, 1000, 0, 0)
    return GpuInstance(
        LEVELS,
        [node("n0", 4, used=busy2), node("n1", 4, used=busy2)],
        [
            GpuJob(
                "gang", workers=2, gpus=2, priority=5, locality_level="node", locality_required=True
            ),
            GpuJob("one", gpus=2),
        ],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def required_nvlink() -> GpuInstance:
    # 8 GPUs in two NVLink domains of 4; GPUs 0 and 1 busy. The 4-GPU job required inside one
    # domain must take GPUs 4-7; the 2-GPU job takes 2 and 3.
    return GpuInstance(
        LEVELS,
        [node("n0", 8, domain=4, used=(1000, 1000, 0, 0, 0, 0, 0, 0))],
        [
            GpuJob("four", gpus=4, locality_level="nvlink", locality_required=True),
            GpuJob("two", gpus=2),
        ],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def traffic_nvlink() -> GpuInstance:
    # 2 x 2 GPUs with 60 GB of traffic: inside domain 1 (GPUs 4-7) it costs 60/600 = 0.1,
    # across domains 60/64. The other job fills domain 0's two free GPUs.
    return GpuInstance(
        LEVELS,
        [node("n0", 8, domain=4, used=(1000, 1000, 0, 0, 0, 0, 0, 0))],
        [GpuJob("talky", workers=2, gpus=2, traffic_gb=60.0), GpuJob("quiet", gpus=2)],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def traffic_node() -> GpuInstance:
    # 3 x 1 GPU with 64 GB: no 2-GPU NVLink domain holds it, one node does (64/64 = 1.0),
    # across nodes it would cost 64/25.
    return GpuInstance(
        LEVELS,
        [node("n0", 4, domain=2), node("n1", 4, domain=2)],
        [GpuJob("talky", workers=3, gpus=1, traffic_gb=64.0), GpuJob("quiet", gpus=2)],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def preferred_rack() -> GpuInstance:
    # 2 x 4 GPUs preferring one rack: only r1 (n2 + n3) holds both workers; the 4-GPU job then
    # goes to n0. Putting it on n2 would split the gang across racks (penalty 1). n1's two
    # free GPUs stay unusable for the 4-GPU class: 2000 / 1000 = 2.0.
    return GpuInstance(
        LEVELS,
        [
            node("n0", 4, "r0"),
            node("n1", 4, "r0", used=(1000, 1000, 0, 0)),
            node("n2", 4, "r1"),
            node("n3", 4, "r1"),
        ],
        [GpuJob("gang", workers=2, gpus=4, locality_level="rack"), GpuJob("four", gpus=4)],
        expected_mix=[WorkloadClass(4, 0, 1)],
    )


def fragmentation_fractional() -> GpuInstance:
    # A 300-milli share: on GPU 0 (400 free) it leaves [100, 1000] -> unusable 100 for each
    # class = 200 / (2 x 1000) = 0.1; on GPU 1 it leaves [400, 700] -> 1100 for the 1-GPU
    # class = 0.55.
    return GpuInstance(
        LEVELS,
        [node("n0", 2, used=(600, 0))],
        [GpuJob("f", gpu_milli=300)],
        expected_mix=[WorkloadClass(1, 0, 1), WorkloadClass(0, 300, 1)],
    )


def fragmentation_whole() -> GpuInstance:
    # One GPU on n0 (2 free) strands n0's last GPU for the 2-GPU class (1000 unusable);
    # on n1 (3 free) it leaves 2 + 2: nothing unusable.
    return GpuInstance(
        LEVELS,
        [node("n0", 2), node("n1", 3)],
        [GpuJob("one", gpus=1)],
        expected_mix=[WorkloadClass(2, 0, 1)],
    )


def fragmentation_shared_gpu() -> GpuInstance:
    # A whole 1-GPU job and a 500-milli share on a 2-GPU node: sharing nothing, the share
    # sits on the other GPU and leaves 500 partial (both classes can't use it for the 1-GPU
    # class: 500; for the 600 class: 500) -> 1000 / (2 x 1000) = 0.5.
    return GpuInstance(
        LEVELS,
        [node("n0", 2)],
        [GpuJob("one", gpus=1), GpuJob("half", gpu_milli=500)],
        expected_mix=[WorkloadClass(1, 0, 1), WorkloadClass(0, 600, 1)],
    )


def cpu_capacity() -> GpuInstance:
    # Each job needs 5 of the node's 8 cores: only the priority-2 one fits.
    return GpuInstance(
        LEVELS,
        [node("n0", 2, cpu=8000)],
        [GpuJob("low", gpus=1, cpu_milli=5000), GpuJob("high", gpus=1, cpu_milli=5000, priority=2)],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


def required_top_level() -> GpuInstance:
    # Racks are the outermost level: a gang spanning two racks is "beyond" every level, so
    # "rack" required means one rack even at the top (check.span_level).
    return GpuInstance(
        LEVELS,
        [node("n0", 2, "r0"), node("n1", 2, "r1"), node("n2", 2, "r1")],
        [GpuJob("gang", workers=2, gpus=2, locality_level="rack", locality_required=True)],
        expected_mix=[WorkloadClass(1, 0, 1)],
    )


CASES: dict[str, tuple[Any, tuple[float, float, float]]] = {
    "gang_all_or_nothing": (gang_all_or_nothing, (6.0, 0.0, 0.0)),
    "gang_across_nodes": (gang_across_nodes, (6.0, 0.0, 0.0)),
    "fractional_packing": (fractional_packing, (2.0, 0.0, 0.0)),
    "fractional_gang": (fractional_gang, (1.2, 0.0, 0.0)),
    "required_rack": (required_rack, (22.0, 0.0, 0.0)),
    "required_node_unplaceable": (required_node_unplaceable, (2.0, 0.0, 0.0)),
    "required_nvlink": (required_nvlink, (6.0, 0.0, 0.0)),
    "traffic_nvlink": (traffic_nvlink, (6.0, 0.1, 0.0)),
    "traffic_node": (traffic_node, (5.0, 1.0, 0.0)),
    "preferred_rack": (preferred_rack, (12.0, 0.0, 2.0)),
    "fragmentation_fractional": (fragmentation_fractional, (0.3, 0.0, 0.1)),
    "fragmentation_whole": (fragmentation_whole, (1.0, 0.0, 0.0)),
    "fragmentation_shared_gpu": (fragmentation_shared_gpu, (1.5, 0.0, 0.5)),
    "cpu_capacity": (cpu_capacity, (2.0, 0.0, 0.0)),
    "required_top_level": (required_top_level, (4.0, 0.0, 0.0)),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_exact_encoding_proves_every_tier(case: str, backend: str, milp_solver: str) -> None:
    make, expected = CASES[case]
    instance = make()
    outcome, ctx, encoding = run_exact(instance, backend, milp_solver)
    solution = assert_proven_optimum(instance, outcome, ctx, encoding, expected)
    # Gangs are all or nothing and every placed job has all its workers.
    for j, workers in solution.placements.items():
        assert len(workers) == instance.jobs[j].workers


@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_case_specific_placements(backend: str, milp_solver: str) -> None:
    """Where the optimum puts the jobs, for the cases where that is unique."""

    def solved(make: Any) -> tuple[GpuInstance, GpuSolution]:
        instance = make()
        outcome, ctx, encoding = run_exact(instance, backend, milp_solver)
        return instance, assert_proven_optimum(
            instance, outcome, ctx, encoding, CASES[make.__name__][1]
        )

    instance, sol = solved(gang_all_or_nothing)
    assert 0 not in sol.placements  # the gang that does not fit entirely stays out

    instance, sol = solved(fractional_packing)
    load = [0, 0]
    for j, workers in sol.placements.items():
        for w in workers:
            load[w.gpus[0]] += instance.jobs[j].gpu_milli
    assert load == [1000, 1000]  # never oversubscribed, both GPUs full
    assert 2 not in sol.placements  # the 500-milli share is the one left out

    instance, sol = solved(required_rack)
    assert {instance.nodes[n].groups[0] for n, _ in gpus_of(sol, 0)} == {"r1"}

    instance, sol = solved(required_nvlink)
    assert gpus_of(sol, 0) == [(0, (4, 5, 6, 7))]

    instance, sol = solved(traffic_nvlink)
    assert {g for _, gs in gpus_of(sol, 0) for g in gs} == {4, 5, 6, 7}

    instance, sol = solved(traffic_node)
    assert len({n for n, _ in gpus_of(sol, 0)}) == 1

    instance, sol = solved(preferred_rack)
    assert {instance.nodes[n].groups[0] for n, _ in gpus_of(sol, 0)} == {"r1"}
    assert gpus_of(sol, 1)[0][0] == 0

    instance, sol = solved(fragmentation_fractional)
    assert gpus_of(sol, 0) == [(0, (0,))]  # onto the partly used GPU

    instance, sol = solved(fragmentation_whole)
    assert gpus_of(sol, 0)[0][0] == 1  # onto the 3-GPU node

    instance, sol = solved(cpu_capacity)
    assert set(sol.placements) == {1}

    instance, sol = solved(required_top_level)
    assert {n for n, _ in gpus_of(sol, 0)} == {1, 2}


@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_preferred_locality_is_paid_when_missed(backend: str, milp_solver: str) -> None:
    # Only r0 + r1 together hold the gang: it must be placed (tier 1) and pays the penalty.
    instance = GpuInstance(
        LEVELS,
        [node("n0", 2, "r0"), node("n1", 2, "r1")],
        [GpuJob("gang", workers=2, gpus=2, locality_level="rack", traffic_gb=25.0)],
        expected_mix=[WorkloadClass(1, 0, 1)],
        locality_miss_penalty=3.0,
    )
    outcome, ctx, encoding = run_exact(instance, backend, milp_solver)
    # Beyond the rack level: 25 GB at the rack's 25 GB/s, plus the penalty.
    assert_proven_optimum(instance, outcome, ctx, encoding, (4.0, 4.0, 0.0))


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_backends_agree_on_generated_instances(seed: int) -> None:
    """All three backends prove the same optimum of every tier on small generated clusters,
    starting from the greedy, which they never make worse."""
    instance = generate(24, 8, seed, occupancy=0.3)
    start = max(
        (s for _, s in greedy_solutions(instance)), key=lambda s: check(instance, s).score()
    )
    results = []
    for backend, milp_solver in BACKENDS:
        outcome, ctx, encoding = run_exact(instance, backend, milp_solver, start=start)
        assert not ctx.rejected, ctx.rejected
        assert outcome.proven_optimal, (backend, milp_solver, outcome.message)
        report = check(instance, outcome.proven_solution)
        assert report.feasible
        assert report.score() >= check(instance, start).score()
        for name, value in encoding.last_stats["objectives"].items():
            assert value == pytest.approx(report.terms[name], abs=1e-6)
        results.append(report.terms)
    for terms in results[1:]:
        assert terms["placed_gpu_weighted"] == pytest.approx(results[0]["placed_gpu_weighted"])
        # CP-SAT proves the communication tier at 1e-6 per job.
        assert terms["comm_cost"] == pytest.approx(results[0]["comm_cost"], abs=1e-4)
        assert terms["fragmentation"] == pytest.approx(results[0]["fragmentation"], abs=1e-9)


@pytest.mark.parametrize("seed", [5, 6, 7])
def test_model_values_equal_the_checker(seed: int) -> None:
    """The hint of a solution satisfies every row, decodes back to an equivalent placement,
    and the model's three objective values are the checker's (fragmentation exactly)."""
    instance = generate(48, 16, seed, occupancy=0.3)
    model = GpuModel(instance, FreeCapacity(instance))
    model.ensure_layer("comm_cost")
    model.ensure_layer("fragmentation")
    for _, solution in greedy_solutions(instance):
        report = check(instance, solution)
        values = model.values_from_solution(solution)
        assert values is not None
        assert model.lm.violated_rows(values) == []
        for name, value in model.terms(values).items():
            assert value == pytest.approx(report.terms[name], abs=1e-9), name
        again = check(instance, model.decode(values))
        assert again.feasible and again.score() == report.score()


@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_restricted_model_claims_nothing_and_keeps_a_valid_bound(
    backend: str, milp_solver: str
) -> None:
    instance = generate(48, 16, 3, occupancy=0.3)
    start = best_fit(instance)
    full, _, _ = run_exact(instance, "cpsat", "highs", start=start)
    assert full.proven_optimal
    optimum = check(instance, full.proven_solution)

    outcome, ctx, encoding = run_exact(
        instance, backend, milp_solver, start=start, time_limit_s=6.0, max_placement_vars=10
    )
    assert encoding.last_stats["restricted"]
    assert not outcome.proven_optimal and outcome.proven_solution is None
    assert outcome.stop_reason != StopReason.PROVEN
    assert not ctx.rejected
    # The bound is the relaxation's over the whole instance, never the restricted model's.
    assert outcome.bound is not None
    assert outcome.bound >= optimum.objective - 1e-9
    assert all(b >= optimum.objective - 1e-9 for b in ctx.bounds)
    assert ctx.best_report is not None
    assert ctx.best_report.score() >= check(instance, start).score()


def test_relaxation_bound_is_valid() -> None:
    for seed in (1, 2, 3):
        instance = generate(32, 12, seed, occupancy=0.4)
        outcome, _, _ = run_exact(instance, "cpsat", "highs")
        assert outcome.proven_optimal
        cluster = FreeCapacity(instance)
        options = SolveOptions()
        for limit in (0, 10**9):  # per class, per node
            bound = relaxation_bound(instance, cluster, options, CancellationToken(), 5.0, limit)
            assert bound is not None
            assert bound / 1000 >= check(instance, outcome.proven_solution).objective - 1e-9


@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_cancelled_before_start(backend: str, milp_solver: str) -> None:
    instance = gang_across_nodes()
    options = SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=5)
    ctx = ExactContext(instance, options)
    ctx.cancel.cancel()
    outcome = exact(backend, milp_solver).solve(instance, ctx)
    assert outcome.stop_reason == StopReason.CANCELLED
    assert not outcome.proven_optimal


def test_hint_is_used_and_reports_are_checked() -> None:
    """Starting from a feasible solution, the encoding reports it back improved, never worse."""
    instance = fractional_packing()
    start = GpuSolution({0: (WorkerPlacement(0, (0,)),)})  # only the 300-milli share
    outcome, ctx, encoding = run_exact(instance, "cpsat", "highs", start=start)
    assert encoding.last_stats["passes"][0]["hinted"]
    assert "cpsat" in ctx.sources
    assert outcome.proven_optimal


@pytest.mark.parametrize(
    "case", ["gang_all_or_nothing", "required_rack", "traffic_nvlink", "fragmentation_fractional"]
)
@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_through_the_portfolio(case: str, backend: str, milp_solver: str) -> None:
    make, expected = CASES[case]
    instance = make()
    result = solve(
        instance,
        SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=20, deterministic=True),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    assert result.gap == 0.0
    assert result.objective_terms["placed_gpu_weighted"] == pytest.approx(expected[0])
    assert result.objective_terms["comm_cost"] == pytest.approx(expected[1], abs=1e-6)
    assert result.objective_terms["fragmentation"] == pytest.approx(expected[2])
    assert result.bound == pytest.approx(expected[0])
    assert not result.backend_errors


@pytest.mark.parametrize(("backend", "milp_solver"), BACKENDS, ids=IDS)
def test_an_incumbent_at_the_proven_bound_skips_the_first_stage(
    backend: str, milp_solver: str
) -> None:
    from placement.models.gpu.bound import capacity_bound

    # Light load: best fit places every job, which meets the capacity bound.
    instance = generate(64, 6, 2, occupancy=0.1, gang_share=0.0)
    start = best_fit(instance)
    bound = capacity_bound(instance)
    assert check(instance, start).objective == pytest.approx(bound)
    searched, _, _ = run_exact(instance, backend, milp_solver, start=start)
    skipped, ctx, encoding = run_exact(
        instance, backend, milp_solver, start=start, known_bound=bound
    )
    tiers = encoding.last_stats["passes"][0]["tiers"]
    assert tiers["placed_gpu_weighted"] == {"status": "proved by the bound"}
    assert "placed_gpu_weighted=proved" in skipped.message
    assert not ctx.rejected
    assert skipped.bound == pytest.approx(bound)
    assert ctx.best_report.objective == pytest.approx(bound)
    if skipped.proven_optimal and searched.proven_optimal:
        assert (
            check(instance, skipped.proven_solution).score()
            == check(instance, searched.proven_solution).score()
        )
    if backend == "cpsat":
        assert skipped.proven_optimal
