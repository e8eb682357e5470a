"""The ``placed_cpu_jobs`` tier (issue: CPU-only jobs add nothing to ``placed_gpu_weighted``).

Hand-made instances whose optimum is known: a CPU-only job that fits must be placed by every
exact backend (CP-SAT, MILP with HiGHS and CBC), with every tier proved, although placing it
costs communication (plain instance) or a migration (re-optimization), so that without the
tier, or with its sense flipped, the optimum would leave it pending. The tier is absent from
instances without CPU-only jobs; the model's value equals the checker's; the greedies place
a CPU-only job whenever it fits next to what they placed; the explanations of the jobs left
out are right.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from placement.models.gpu import FAMILY
from placement.models.gpu.check import CPU_TIER, check
from placement.models.gpu.explain import explain_unplaced
from placement.models.gpu.generate import generate
from placement.models.gpu.instance import GpuSolution, WorkerPlacement
from placement.models.gpu.model import GpuModel
from placement.models.gpu.reading import instance_from_dict
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.testing import ExactContext, backend_id, exact_backends

LEVELS = [
    {"name": "nvlink", "bandwidth_gbps": 600},
    {"name": "node", "bandwidth_gbps": 64},
    {"name": "rack", "bandwidth_gbps": 25},
]
BACKENDS = exact_backends()
IDS = [backend_id(*b) for b in BACKENDS]


def node(name: str, gpus: int, cpu: int, rack: str = "r0") -> dict[str, Any]:
    return {
        "name": name,
        "gpu_type": "A100",
        "gpu_count": gpus,
        "gpu_memory_mib": 80_000,
        "cpu_milli": cpu,
        "memory_mib": 512_000,
        "groups": [rack],
    }


def cpu_job(name: str, cpu: int, workers: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "workers": workers, "cpu_milli": cpu, **fields}


# Plain instance. train (4 GPUs, 6,000 milli-CPU) fits only n0 and is placed (tier 1 = 4).
# svc (2 workers x 2,000, priority 2, traffic) fits n1 (both workers: comm 6.4 / 64 = 0.1) or
# one worker on n0 and one on n1 (rack: 0.256); batch (3,000) fits only n1, and not next to
# svc there. Optimum: svc on n1 (placed_cpu_jobs 2 x 2 = 4 > 1 for batch), batch pending.
# Without the tier, comm_cost would leave both pending (0 < 0.1).
PLAIN = {
    "cluster": {"levels": LEVELS, "nodes": [node("n0", 4, 8000), node("n1", 2, 4000)]},
    "jobs": [
        {"name": "train", "gpus": 4, "cpu_milli": 6000},
        cpu_job("svc", 2000, workers=2, priority=2, traffic_gb=6.4),
        cpu_job("batch", 3000),
    ],
    "expected_mix": [{"gpus": 1, "weight": 1}],
}
PLAIN_OPTIMUM = {
    "placed_gpu_weighted": 4.0,
    CPU_TIER: 4.0,
    "comm_cost": 0.1,
    "fragmentation": 0.0,
}

# Re-optimization. old and old2 (CPU-only, 2,000 milli-CPU each) run on n0 and n1 (4,000
# each); new (4,000) fits only an empty node: one of them must move (migration cost 1), which
# placed_cpu_jobs ranks before disruption_cost. The elastic e (1..2 workers of 1,000) runs on
# n2 with one worker and grows to two (a resize restarts its worker: cost 1 more).
REOPT = {
    "cluster": {
        "levels": LEVELS,
        "nodes": [node("n0", 2, 4000), node("n1", 2, 4000), node("n2", 0, 2000)],
    },
    "jobs": [
        cpu_job("old", 2000, current=[{"node": "n0"}]),
        cpu_job("old2", 2000, current=[{"node": "n1"}]),
        cpu_job("new", 4000),
        cpu_job("e", 1000, workers=2, min_workers=1, current=[{"node": "n2"}]),
        {"name": "g", "gpus": 2},
    ],
    "preemption_policy": "NEVER",
}
REOPT_OPTIMUM = {
    "placed_gpu_weighted": 2.0,
    CPU_TIER: 5.0,
    "disruption_cost": 2.0,
    "comm_cost": 0.0,
}


def _instance(document: dict[str, Any]):
    return instance_from_dict(copy.deepcopy(document))


def _assert_optimum(instance, solution, optimum: dict[str, float]) -> None:
    report = check(instance, solution)
    assert report.feasible, report.violations
    assert list(report.terms)[: len(optimum)] == list(optimum)
    for name, value in optimum.items():
        assert report.terms[name] == pytest.approx(value, abs=1e-6), name


@pytest.mark.parametrize("backend,milp_solver", BACKENDS, ids=IDS)
@pytest.mark.parametrize("case", ["plain", "reopt"])
def test_every_exact_backend_places_the_fitting_cpu_only_job_and_proves_it(
    case: str, backend: str, milp_solver: str
) -> None:
    document, optimum = (PLAIN, PLAIN_OPTIMUM) if case == "plain" else (REOPT, REOPT_OPTIMUM)
    instance = _instance(document)
    options = SolveOptions(
        backend=backend, milp_solver=milp_solver, time_limit_s=20, threads=1, deterministic=True
    )
    # The encoding alone, from nothing (no greedy incumbent): the tier is searched and proved.
    ctx = ExactContext(instance, options, backend=backend)
    outcome = ctx.run()
    assert outcome.proven_optimal and outcome.stop_reason == StopReason.PROVEN, outcome.message
    assert f"{CPU_TIER}=proved" in outcome.message
    _assert_optimum(instance, outcome.proven_solution, optimum)
    assert not ctx.rejected and all(r.feasible for _, r in ctx.reports)
    # Through the portfolio.
    result = solve(instance, options)
    assert result.status == SolutionStatus.OPTIMAL and result.stop_reason == StopReason.PROVEN
    _assert_optimum(instance, result.solution, optimum)
    names = {instance.jobs[j].name for j in result.solution.placements}
    if case == "plain":
        assert names == {"train", "svc"}
    else:
        assert names == {"old", "old2", "new", "e", "g"}
        assert len(result.solution.placements[instance.job_index["e"]]) == 2


def test_the_tier_is_absent_without_cpu_only_jobs() -> None:
    plain = copy.deepcopy(PLAIN)
    plain["jobs"] = plain["jobs"][:1]
    instance = _instance(plain)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    assert list(check(instance, result.solution).terms) == [
        "placed_gpu_weighted",
        "comm_cost",
        "fragmentation",
    ]
    assert CPU_TIER not in result.message and not GpuModel(instance).has_cpu_tier
    reopt = copy.deepcopy(REOPT)
    reopt["jobs"] = [{"name": "g", "gpus": 2, "current": [{"node": "n0", "gpus": [0, 1]}]}]
    instance = _instance(reopt)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    assert list(check(instance, result.solution).terms) == [
        "placed_gpu_weighted",
        "disruption_cost",
        "comm_cost",
        "fragmentation",
    ]
    assert CPU_TIER not in result.message
    # One CPU-only job brings the tier in, maximised, right after tier 1.
    reopt["jobs"].append(cpu_job("etl", 1000))
    report = check(_instance(reopt), GpuSolution())
    assert list(report.terms)[:2] == ["placed_gpu_weighted", CPU_TIER]
    assert report.senses[1] == "max"


def test_the_tier_ranks_after_the_queue_priority_tier_and_before_disruption() -> None:
    document = copy.deepcopy(REOPT)
    document["queues"] = [{"name": "q", "priority": 1}]
    document["jobs"][4]["queue"] = "q"
    instance = _instance(document)
    report = check(instance, instance.current_solution())
    assert list(report.terms) == [
        "placed_gpu_weighted",
        "queue_priority_gpu",
        CPU_TIER,
        "disruption_cost",
        "comm_cost",
        "fragmentation",
    ]
    assert report.senses == ("max", "max", "max", "min", "min", "min")
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    # (The keys in the checker's order: queue_priority_gpu second.)
    optimum = {"placed_gpu_weighted": 2.0, "queue_priority_gpu": 2.0, **REOPT_OPTIMUM}
    _assert_optimum(instance, result.solution, optimum)


def test_the_checker_ranks_leaving_a_fitting_cpu_only_job_out_below_placing_it() -> None:
    instance = _instance(PLAIN)
    train = (WorkerPlacement(0, (0, 1, 2, 3)),)
    svc = (WorkerPlacement(1, ()), WorkerPlacement(1, ()))
    without = check(instance, GpuSolution({0: train}))
    with_svc = check(instance, GpuSolution({0: train, 1: svc}))
    assert without.feasible and with_svc.feasible
    assert without.terms[CPU_TIER] == 0 and with_svc.terms[CPU_TIER] == 4
    # Placing svc costs communication (0.1), yet ranks higher: placed work before costs.
    assert with_svc.terms["comm_cost"] > without.terms["comm_cost"]
    assert with_svc.better_than(without) and not without.better_than(with_svc)
    # Re-optimization: the migration that places new ranks above keeping everything.
    instance = _instance(REOPT)
    kept = check(instance, instance.current_solution())
    moved = dict(instance.current_solution().placements)
    moved[1] = (WorkerPlacement(0, ()),)  # old2 joins old on n0
    moved[2] = (WorkerPlacement(1, ()),)  # new takes n1
    migrated = check(instance, GpuSolution(moved))
    assert migrated.feasible and migrated.terms["disruption_cost"] == 1
    assert migrated.better_than(kept) and not kept.better_than(migrated)


@pytest.mark.parametrize("case", ["plain", "reopt", "generated", "generated_reopt"])
def test_the_models_value_is_the_checkers(case: str) -> None:
    if case == "plain":
        instance = _instance(PLAIN)
    elif case == "reopt":
        instance = _instance(REOPT)
    else:
        base = generate(64, 30, seed=7, cpu_share=0.3)
        data = FAMILY.instance_to_dict(base)
        if case == "generated_reopt":
            placed = FAMILY.greedy(base).__next__()[1].placements
            for j, job in enumerate(data["jobs"]):
                if j in placed and j % 2 == 0:
                    job["current"] = [
                        {"node": base.nodes[w.node].name, "gpus": list(w.gpus)} for w in placed[j]
                    ]
        instance = instance_from_dict(data)
    assert sum(job.kind == "cpu" for job in instance.jobs) >= 2
    model = GpuModel(instance)
    assert model.has_cpu_tier
    solutions = [sol for _, sol in FAMILY.greedy(instance)]
    solutions.append(solve(instance, SolveOptions(backend="cpsat", time_limit_s=5)).solution)
    for solution in solutions:
        report = check(instance, solution)
        assert report.feasible
        values = model.values_from_solution(solution)
        assert values is not None and model.feasible(values)
        assert model.terms(values)[CPU_TIER] == report.terms[CPU_TIER]
        assert dict(zip(report.terms, report.senses, strict=True))[CPU_TIER] == "max"
        cpu = sum(
            instance.jobs[j].priority * len(w)
            for j, w in solution.placements.items()
            if instance.jobs[j].kind == "cpu"
        )
        assert report.terms[CPU_TIER] == cpu


# Evictions free room after a CPU-only job was tried: c (priority 3, queue a) may not preempt
# v (queue b) under reclaim_within_quota; p (queue b, priority 2) may, and uses 1,000 of the
# 7,000 milli-CPU v held, so c fits once p is placed.
EVICTION = {
    "cluster": {"levels": LEVELS, "nodes": [node("n0", 4, 8000)]},
    "jobs": [
        {
            "name": "v",
            "gpus": 4,
            "cpu_milli": 7000,
            "queue": "b",
            "current": [{"node": "n0", "gpus": [0, 1, 2, 3]}],
        },
        cpu_job("c", 4000, priority=3, queue="a"),
        {"name": "p", "gpus": 4, "cpu_milli": 1000, "priority": 2, "queue": "b"},
    ],
    "queues": [{"name": "a"}, {"name": "b"}],
    "preemption_policy": "RECLAIM_WITHIN_QUOTA",
}


@pytest.mark.parametrize("case", ["plain", "reopt", "eviction", "generated"])
def test_greedies_leave_no_cpu_only_job_out_that_fits(case: str) -> None:
    documents = {"plain": PLAIN, "reopt": REOPT, "eviction": EVICTION}
    if case == "generated":
        instance = generate(64, 40, seed=3, cpu_share=0.3)
    else:
        instance = _instance(documents[case])
    for name, solution in FAMILY.greedy(instance):
        report = check(instance, solution)
        assert report.feasible, name
        assert dict(zip(report.terms, report.senses, strict=True))[CPU_TIER] == "max"
        for reason in explain_unplaced(instance, solution):
            job = instance.jobs[instance.job_index[reason["name"]]]
            if job.kind == "cpu":
                assert "would still fit" not in reason["message"], (name, reason)
    if case == "eviction":
        result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
        assert result.status == SolutionStatus.OPTIMAL
        assert {instance.jobs[j].name for j in result.solution.placements} == {"c", "p"}
        for name, solution in FAMILY.greedy(instance):
            if name in ("evict_lowest", "clear_cheapest_node"):
                assert sorted(solution.placements) == [1, 2], name


def test_explanations_of_cpu_only_jobs_left_out_of_an_optimum() -> None:
    # Plain: batch fits neither next to train (n0) nor next to svc (n1); the explanation
    # names the lower-priority holder, train.
    instance = _instance(PLAIN)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    (reason,) = explain_unplaced(instance, result.solution)
    assert reason["name"] == "batch" and reason["kind"] == "crowded_out"
    assert reason["blocking_jobs"] == ["train"]
    assert "would still fit" not in reason["message"]
    # A CPU-only job bigger than any node never runs.
    document = copy.deepcopy(PLAIN)
    document["jobs"].append(cpu_job("huge", 9000))
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    reasons = {r["name"]: r for r in explain_unplaced(instance, result.solution)}
    assert reasons["huge"]["kind"] == "infeasible_alone"
    assert "9000 milli-CPU" in reasons["huge"]["message"]
    # Re-optimization with no migration allowed: new waits, and says that both preempting
    # and moving the running jobs are forbidden.
    document = copy.deepcopy(REOPT)
    document["disruption_budget"] = {"max_migrated_workers": 0}
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert check(instance, result.solution).terms[CPU_TIER] == 3  # old, old2, e (not grown)
    (reason,) = explain_unplaced(instance, result.solution)
    assert reason["name"] == "new" and reason["kind"] == "crowded_out"
    assert "which the policy forbids" in reason["message"]
    assert "disruption budget forbids" in reason["message"]
    assert "0 + 1 migrated workers > 0" in reason["message"]


def test_highs_values_are_its_reported_solution_after_a_mip_start() -> None:
    """HiGHS 1.16, started from the current placement of REOPT, finds tier 1 (2,000) in
    presolve's reduced space but returns the start's column values (tier 1 = 0): the wrapper
    solves again without the start, so the values it returns have the objective it reports."""
    from placement.models.gpu.milp import _MilpTiers
    from placement.solver import CancellationToken

    instance = _instance(REOPT)
    options = SolveOptions(backend="milp", milp_solver="highs", time_limit_s=10, threads=1)
    model = GpuModel(instance)
    backend = _MilpTiers(ExactContext(instance, options, backend="milp"))
    backend.load(model.lm)
    hint = model.values_from_solution(instance.current_solution())
    objective = dict(model.tier1.terms)
    run, final = backend.run(
        "max", objective, 0.0, hint, 5.0, CancellationToken(), lambda values, bound: None
    )
    assert run.objective == pytest.approx(2000.0) and final is not None
    assert sum(c * final[i] for i, c in objective.items()) == pytest.approx(run.objective)


def test_the_cpu_only_completion_places_only_cpu_only_jobs_and_ranks_higher() -> None:
    """What a restricted search's final solution gets (tiers.solve_tiers): the waiting
    CPU-only jobs that fit, by best fit; every other placement unchanged."""
    from placement.models.gpu.greedy import complete

    instance = generate(64, 30, seed=5, cpu_share=0.3)
    full = next(iter(FAMILY.greedy(instance)))[1]
    cpu = {j for j in full.placements if instance.jobs[j].kind == "cpu"}
    gpu_only = GpuSolution({j: w for j, w in full.placements.items() if j not in cpu})
    gpu_only.placements.pop(min(gpu_only.placements))  # a GPU job left out stays out
    filled = complete(instance, gpu_only, cpu_only=True)
    assert {j: filled.placements[j] for j in gpu_only.placements} == gpu_only.placements
    added = set(filled.placements) - set(gpu_only.placements)
    assert added and all(instance.jobs[j].kind == "cpu" for j in added)
    before, after = check(instance, gpu_only), check(instance, filled)
    assert after.feasible and after.better_than(before)
    assert after.terms["placed_gpu_weighted"] == before.terms["placed_gpu_weighted"]
    assert after.terms[CPU_TIER] > before.terms[CPU_TIER]
    for reason in explain_unplaced(instance, filled):
        if instance.jobs[instance.job_index[reason["name"]]].kind == "cpu":
            assert "would still fit" not in reason["message"]
