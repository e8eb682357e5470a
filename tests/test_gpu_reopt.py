"""Re-optimization of running work (issue 18): instance, exact tiers, checker, greedies.

Small instances with known optima for each new decision -- a forced preemption, a migration
that pays, one that does not, quota reclaim, an elastic shrink -- solved by CP-SAT, MILP
(HiGHS, CBC) and the greedies through the portfolio; the checker's rejections; bad input; the
bundled instance files unchanged.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from placement.models.gpu import FAMILY
from placement.models.gpu.check import check, running_decisions
from placement.models.gpu.instance import GpuSolution, WorkerPlacement
from placement.models.gpu.model import GpuModel
from placement.models.gpu.reading import instance_from_dict
from placement.models.gpu.reopt_greedy import defragment, evict_lowest, keep_and_place
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.testing import exact_backends

LEVELS = [
    {"name": "nvlink", "bandwidth_gbps": 600},
    {"name": "node", "bandwidth_gbps": 64},
    {"name": "rack", "bandwidth_gbps": 25},
]


def node(name: str, gpus: int = 4, rack: str = "r0") -> dict[str, Any]:
    return {
        "name": name,
        "gpu_type": "A100",
        "gpu_count": gpus,
        "gpu_memory_mib": 80_000,
        "cpu_milli": 64_000,
        "memory_mib": 512_000,
        "groups": [rack],
    }


def running(name: str, spots: list[tuple[str, list[int]]], **fields: Any) -> dict[str, Any]:
    """A running whole-GPU job, one worker per spot, ``len(gpus)`` GPUs per worker."""
    return {
        "name": name,
        "workers": fields.pop("workers", len(spots)),
        "gpus": len(spots[0][1]),
        "current": [{"node": n, "gpus": g} for n, g in spots],
        **fields,
    }


def doc(nodes: list[dict], jobs: list[dict], **extra: Any) -> dict[str, Any]:
    return {"cluster": {"levels": LEVELS, "nodes": nodes}, "jobs": jobs, **extra}


# --- the cases: (instance document, known optimum of the four tiers) ------------------------

FORCED_PREEMPTION = (
    # C (priority 5) needs the whole node: A (priority 1, costly) and B (priority 2, cheap)
    # run there. Tier 1 keeps the higher-priority B and preempts A although A costs more.
    doc(
        [node("n0")],
        [
            running("A", [("n0", [0, 1])], priority=1, preemption_cost=10),
            running("B", [("n0", [2, 3])], priority=2, preemption_cost=1),
            {"name": "C", "gpus": 2, "priority": 5},
        ],
        preemption_policy="LOWER_PRIORITY",
    ),
    {"placed_gpu_weighted": 14.0, "disruption_cost": 10.0},
)

MIGRATION_PAYS = (
    # C needs two GPUs of one node; A and B each hold one GPU of a different node. Moving A
    # next to B (one restart) makes room: tier 1 gains 2, the disruption is 1.
    doc(
        [node("n0", 2), node("n1", 2)],
        [
            running("A", [("n0", [0])]),
            running("B", [("n1", [0])]),
            {"name": "C", "gpus": 2},
        ],
    ),
    {"placed_gpu_weighted": 4.0, "disruption_cost": 1.0},
)

MIGRATION_DOES_NOT_PAY = (
    # A's two workers run on two nodes (rack traffic); moving one next to the other would
    # lower the communication cost, but the disruption tier comes first: A stays.
    doc(
        [node("n0", 2), node("n1", 2)],
        [
            running("A", [("n0", [0]), ("n1", [0])], traffic_gb=10.0, migration_cost=3),
            {"name": "P", "gpus": 1},
        ],
    ),
    {"placed_gpu_weighted": 3.0, "disruption_cost": 0.0, "comm_cost": 10.0 / 25},
)

QUOTA_RECLAIM = (
    # Queue qb borrows (4 GPUs used, 2 guaranteed); qa uses nothing of its 2. Under
    # RECLAIM_WITHIN_QUOTA the pending a1 of qa (2 GPUs, priority 2) takes back two of qb's
    # GPUs although it is in another queue; qb keeps its guarantee.
    doc(
        [node("n0")],
        [
            running("b1", [("n0", [0])], queue="qb"),
            running("b2", [("n0", [1])], queue="qb"),
            running("b3", [("n0", [2])], queue="qb"),
            running("b4", [("n0", [3])], queue="qb"),
            {"name": "a1", "gpus": 2, "priority": 2, "queue": "qa"},
        ],
        queues=[
            {"name": "qa", "guaranteed_milli": 2000},
            {"name": "qb", "guaranteed_milli": 2000},
        ],
        preemption_policy="RECLAIM_WITHIN_QUOTA",
    ),
    {"placed_gpu_weighted": 6.0, "disruption_cost": 2.0},
)

ELASTIC_SHRINK = (
    # E runs 4 one-GPU workers and may shrink to 2; P (priority 3) needs 2 GPUs of the node.
    # Shrinking E to 2 (2 workers preempted, 2 restarted) beats preempting it.
    doc(
        [node("n0")],
        [
            running(
                "E",
                [("n0", [0]), ("n0", [1]), ("n0", [2]), ("n0", [3])],
                min_workers=2,
            ),
            {"name": "P", "gpus": 2, "priority": 3},
        ],
        preemption_policy="LOWER_PRIORITY",
    ),
    {"placed_gpu_weighted": 8.0, "disruption_cost": 4.0},
)

QUEUE_PRIORITY = (
    # a (queue qa, priority 1) and b (queue qb, priority 5) each need 2 GPUs; R holds one of
    # n0's two A100s and b runs on A100s only, n1 has two V100s. Either job adds 2 to tier 1;
    # the queue tier (second) prefers b, which needs R moved to n1 (one restart).
    doc(
        [node("n0", 2), dict(node("n1", 2), gpu_type="V100")],
        [
            running("R", [("n0", [0])]),
            {"name": "a", "gpus": 2, "queue": "qa"},
            {"name": "b", "gpus": 2, "queue": "qb", "gpu_types": ["A100"]},
        ],
        queues=[{"name": "qa", "priority": 1}, {"name": "qb", "priority": 5}],
    ),
    {"placed_gpu_weighted": 3.0, "queue_priority_gpu": 10.0, "disruption_cost": 1.0},
)

CASES = {
    "forced_preemption": FORCED_PREEMPTION,
    "migration_pays": MIGRATION_PAYS,
    "migration_does_not_pay": MIGRATION_DOES_NOT_PAY,
    "quota_reclaim": QUOTA_RECLAIM,
    "elastic_shrink": ELASTIC_SHRINK,
    "queue_priority": QUEUE_PRIORITY,
}
BACKENDS = exact_backends()
"""Every exact backend this machine has (CP-SAT, HiGHS, CBC where installed)."""


def _instance(document: dict[str, Any]):
    return instance_from_dict(copy.deepcopy(document))


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("backend,milp_solver", BACKENDS)
def test_exact_backends_reach_and_prove_the_known_optimum(
    case: str, backend: str, milp_solver: str
) -> None:
    document, optimum = CASES[case]
    instance = _instance(document)
    result = solve(
        instance,
        SolveOptions(backend=backend, milp_solver=milp_solver, time_limit_s=20, threads=1),
    )
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert result.stop_reason == StopReason.PROVEN
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    assert list(report.terms)[: len(optimum)] == list(optimum)
    for name, value in optimum.items():
        assert report.terms[name] == pytest.approx(value, abs=1e-6), name
    assert result.bound == pytest.approx(optimum["placed_gpu_weighted"])


@pytest.mark.parametrize("case", sorted(CASES))
def test_greedies_are_feasible_and_no_better_than_the_optimum(case: str) -> None:
    document, optimum = CASES[case]
    instance = _instance(document)
    names = []
    for name, solution in FAMILY.greedy(instance):
        names.append(name)
        report = check(instance, solution)
        assert report.feasible, (name, report.violations)
        # Lexicographically no better than the optimum (each tier in its sense).
        signs = [1 if sense == "max" else -1 for sense in report.senses]
        got = tuple(s * report.terms[k] for s, k in zip(signs, optimum, strict=False))
        best = tuple(s * v for s, v in zip(signs, optimum.values(), strict=False))
        assert got <= best, name
    assert names == ["keep_fgd", "evict_lowest", "clear_cheapest_node", "defragment"]


def test_each_decision_is_the_expected_one() -> None:
    """The optimum's decisions, read by the checker: who is preempted, moved, resized."""
    expect = {
        "forced_preemption": {"A": "preempt", "B": "keep"},
        "migration_pays": {"A": "migrate", "B": "keep"},
        "migration_does_not_pay": {"A": "keep"},
        "elastic_shrink": {"E": "resize"},
        "queue_priority": {"R": "migrate"},
    }
    for case, actions in expect.items():
        instance = _instance(CASES[case][0])
        result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
        decisions, broken = running_decisions(instance, result.solution)
        assert not broken
        got = {instance.jobs[d.job].name: d.action for d in decisions}
        if case == "migration_pays":
            # A or B moves: either makes room for C at the same cost.
            assert sorted(got.values()) == ["keep", "migrate"]
        else:
            assert got == actions, case
    reclaim = _instance(QUOTA_RECLAIM[0])
    result = solve(reclaim, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    decisions, _ = running_decisions(reclaim, result.solution)
    preempted = [d for d in decisions if d.action == "preempt"]
    assert len(preempted) == 2 and {d.rule for d in preempted} == {"reclaim"}
    assert all(reclaim.jobs[d.made_room_for[0]].name == "a1" for d in preempted)


def test_the_peer_evicts_the_lowest_priority_and_keep_fgd_moves_nothing() -> None:
    instance = _instance(FORCED_PREEMPTION[0])
    kept = keep_and_place(instance)
    assert kept.placements == instance.current_solution().placements
    evicted = evict_lowest(instance)
    decisions, _ = running_decisions(instance, evicted)
    assert {instance.jobs[d.job].name: d.action for d in decisions} == {
        "A": "preempt",
        "B": "keep",
    }
    moved = defragment(_instance(MIGRATION_PAYS[0]))
    assert len(moved.placements) == 3  # C placed after one migration


def test_queue_priority_is_a_tier_only_when_a_queue_has_one_and_orders_the_greedies() -> None:
    # Without queue priorities the tier is absent and nothing moves for b: a takes n1.
    document = copy.deepcopy(QUEUE_PRIORITY[0])
    for q in document["queues"]:
        q["priority"] = 0
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    report = check(instance, result.solution)
    assert list(report.terms) == [
        "placed_gpu_weighted",
        "disruption_cost",
        "comm_cost",
        "fragmentation",
    ]
    assert report.terms["disruption_cost"] == 0.0
    # Two equal jobs, room for one: the greedies place the higher-priority queue's first.
    document = doc(
        [node("n0", 2)],
        [
            {"name": "a", "gpus": 2, "queue": "qa"},
            {"name": "b", "gpus": 2, "queue": "qb"},
        ],
        queues=[{"name": "qa", "priority": 1}, {"name": "qb", "priority": 5}],
    )
    instance = _instance(document)
    for name, solution in FAMILY.greedy(instance):
        assert [instance.jobs[j].name for j in solution.placements] == ["b"], name
        assert check(instance, solution).terms["queue_priority_gpu"] == 10.0


def test_never_policy_and_budget_keep_the_current_placement() -> None:
    document = copy.deepcopy(FORCED_PREEMPTION[0])
    document["preemption_policy"] = "NEVER"
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.solution.placements == instance.current_solution().placements
    document = copy.deepcopy(MIGRATION_PAYS[0])
    document["disruption_budget"] = {"max_migrated_workers": 0}
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="milp", time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(2.0)  # C waits


# --- the checker's rejections ---------------------------------------------------------------


def _without(instance, solution: GpuSolution, name: str) -> GpuSolution:
    placements = dict(solution.placements)
    placements.pop(instance.job_index[name])
    return GpuSolution(placements)


def test_checker_rejects_a_preemption_the_policy_forbids() -> None:
    document = copy.deepcopy(FORCED_PREEMPTION[0])
    document["preemption_policy"] = "NEVER"
    instance = _instance(document)
    good = solve(_instance(FORCED_PREEMPTION[0]), SolveOptions(backend="cpsat", threads=1))
    report = check(instance, good.solution)
    assert not report.feasible
    assert any("policy is never" in v for v in report.violations)
    # Under LOWER_PRIORITY, a preemption that makes room for no higher-priority job.
    instance = _instance(FORCED_PREEMPTION[0])
    report = check(instance, _without(instance, instance.current_solution(), "B"))
    assert not report.feasible
    assert any("'B'" in v and "may preempt" in v for v in report.violations)
    # A job that is not preemptible.
    document = copy.deepcopy(FORCED_PREEMPTION[0])
    document["jobs"][0]["preemptible"] = False
    report = check(_instance(document), good.solution)
    assert any("not preemptible" in v for v in report.violations)


def test_checker_rejects_a_migration_over_budget() -> None:
    document = copy.deepcopy(MIGRATION_PAYS[0])
    document["disruption_budget"] = {"max_migrated_workers": 0}
    free = _instance(MIGRATION_PAYS[0])
    moved = solve(free, SolveOptions(backend="cpsat", threads=1)).solution
    report = check(_instance(document), moved)
    assert not report.feasible
    assert any("disruption budget: 1 migrated workers > 0" in v for v in report.violations)
    document["disruption_budget"] = {"max_disruption_cost": 0}
    assert any("disruption cost" in v for v in check(_instance(document), moved).violations)


def test_checker_rejects_a_quota_violation() -> None:
    document = copy.deepcopy(QUOTA_RECLAIM[0])
    document["queues"][0]["borrowing_limit_milli"] = 0
    document["queues"][0]["guaranteed_milli"] = 1000  # qa may use 1 GPU at most
    instance = _instance(document)
    best = solve(_instance(QUOTA_RECLAIM[0]), SolveOptions(backend="cpsat", threads=1))
    report = check(instance, best.solution)
    assert not report.feasible
    assert any("queue 'qa'" in v and "above its limit" in v for v in report.violations)
    # Reclaim below the victim queue's guarantee.
    instance = _instance(QUOTA_RECLAIM[0])
    placements = {instance.job_index["a1"]: (WorkerPlacement(0, (0, 1)),)}
    report = check(instance, GpuSolution(placements))
    assert any("below its guarantee" in v for v in report.violations)


def test_checker_recomputes_the_objective_and_the_model_agrees() -> None:
    """The disruption tier is the checker's own figure: the model's value for the same
    solution equals it, and a solution that differs only in a migration differs in it."""
    instance = _instance(MIGRATION_PAYS[0])
    model = GpuModel(instance)
    kept = instance.current_solution()
    moved = solve(instance, SolveOptions(backend="cpsat", threads=1)).solution
    for solution, disruption in ((kept, 0.0), (moved, 1.0)):
        report = check(instance, solution)
        assert report.terms["disruption_cost"] == disruption
        values = model.values_from_solution(solution)
        assert values is not None and model.feasible(values)
        terms = model.terms(values)
        for name in ("placed_gpu_weighted", "disruption_cost"):
            assert terms[name] == pytest.approx(report.terms[name])
    # A solution claimed optimal with a wrong objective is caught: a wrong disruption figure
    # is not what the checker computes.
    assert check(instance, moved).terms["disruption_cost"] != 0.0


# --- input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit,path",
    [
        (lambda d: d["jobs"][0].update(queue="nope"), "gpu.jobs[0].queue"),
        (lambda d: d["jobs"][0]["current"][0].update(node="n9"), "gpu.jobs[0].current[0].node"),
        (lambda d: d["jobs"][0].update(min_workers=5), "gpu.jobs[0].min_workers"),
        (lambda d: d["jobs"][1]["current"][0].update(gpus=[0, 1]), "gpu.jobs[1].current"),
        (lambda d: d["jobs"][0].update(preemption_cost=-1), "gpu.jobs[0].preemption_cost"),
        (
            lambda d: d.update(disruption_budget={"max_migrated_workers": -1}),
            "gpu.disruption_budget.max_migrated_workers",
        ),
    ],
)
def test_bad_input_names_the_field(edit, path: str) -> None:
    document = copy.deepcopy(FORCED_PREEMPTION[0])
    edit(document)
    with pytest.raises(InputError) as err:
        instance_from_dict(document)
    assert path in str(err.value)


def test_json_round_trip_keeps_the_running_work() -> None:
    for document, _ in CASES.values():
        instance = _instance(document)
        again = FAMILY.instance_from_message(FAMILY.instance_to_message(instance))
        assert [j.current for j in again.jobs] == [j.current for j in instance.jobs]
        assert again.queues == instance.queues
        assert again.preemption_policy == instance.preemption_policy
        assert again.disruption_budget == instance.disruption_budget


def test_solution_message_carries_the_decisions() -> None:
    instance = _instance(FORCED_PREEMPTION[0])
    result = solve(instance, SolveOptions(backend="cpsat", threads=1))
    msg = FAMILY.solution_to_message(instance, result.solution, result.unplaced)
    actions = {d.job: (d.action, list(d.made_room_for), d.rule) for d in msg.decisions}
    assert actions == {"A": ("preempt", ["C"], "lower_priority"), "B": ("keep", [], "")}


def test_waiting_job_says_which_preemption_the_policy_forbids() -> None:
    document = copy.deepcopy(FORCED_PREEMPTION[0])
    document["preemption_policy"] = "NEVER"
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend="cpsat", threads=1))
    (reason,) = result.unplaced
    assert reason["name"] == "C"
    assert "would need preempting" in reason["message"]
    assert "policy" in reason["message"]


# --- old files --------------------------------------------------------------------------------


RECORDED = {
    # check(...).terms of each greedy's solution (and CP-SAT's proven optimum on tiny), computed
    # with the code before the re-optimization was added (main at 2ada8b5).
    "tiny": {
        "best_fit": [10.3, 0.16625, 1.0],
        "fgd": [10.3, 0.16625, 0.96],
        "cpsat": [10.3, 0.16625, 0.96],
    },
    "medium": {
        "best_fit": [1000.95, 7.319166667, 1.507407407],
        "fgd": [1001.75, 9.778666667, 0.741975309],
    },
    "large": {
        "best_fit": [8656.15, 186.899354167, 6.224921136],
        "fgd": [8668.25, 178.694541667, 2.723690852],
    },
}


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_bundled_instances_keep_their_results(name: str, repo) -> None:
    """The bundled files have no running jobs: they parse as before, round-trip unchanged,
    and the greedies (and CP-SAT on tiny) give the figures recorded before the widening."""
    data = json.loads((repo / "instances" / "gpu" / f"{name}.json").read_text())
    instance = instance_from_dict(data["gpu"])
    assert not instance.reopt
    # The file as written before the widening (without the new, empty fields) reads the same.
    old = copy.deepcopy(data["gpu"])
    for key in ("queues", "preemption_policy", "disruption_budget"):
        old.pop(key, None)
    for job in old["jobs"]:
        for key in ("current", "min_workers", "queue", "size_utility_milli", "preemptible"):
            job.pop(key, None)
    assert FAMILY.instance_to_dict(instance_from_dict(old)) == FAMILY.instance_to_dict(instance)
    again = FAMILY.instance_to_dict(instance)
    assert FAMILY.instance_to_dict(instance_from_dict(again)) == again
    msg = FAMILY.instance_to_message(instance)
    assert not msg.HasField("disruption_budget") and not msg.queues
    got = {}
    recorded = ["placed_gpu_weighted", "comm_cost", "fragmentation"]
    # medium and large hold CPU-only jobs: their tier placed_cpu_jobs (added later, after
    # tier 1) is checked in tests/test_gpu_cpu_only_tier.py; the recorded tiers are unchanged.
    cpu_only = any(job.kind == "cpu" for job in instance.jobs)
    names = recorded[:1] + ["placed_cpu_jobs"] * cpu_only + recorded[1:]
    for g, solution in FAMILY.greedy(instance):
        report = check(instance, solution)
        assert report.feasible
        assert list(report.terms) == names
        got[g] = [round(report.terms[k], 9) for k in recorded]
    if "cpsat" in RECORDED[name]:
        result = solve(
            instance, SolveOptions(backend="cpsat", time_limit_s=10, threads=1, deterministic=True)
        )
        assert result.status == SolutionStatus.OPTIMAL
        terms = check(instance, result.solution).terms
        got["cpsat"] = [round(terms[k], 9) for k in recorded]
    assert got == RECORDED[name]


# --- the encodings driven directly; running work from generated instances ----------------------


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_encoding_alone_proves_the_optimum_and_reports_only_feasible(case: str, backend) -> None:
    """No incumbent and no bound: the encoding starts from the current placement and proves
    every tier by itself; every solution it reports passes the checker."""
    from placement.solver.testing import ExactContext

    document, optimum = CASES[case]
    instance = _instance(document)
    ctx = ExactContext(instance, SolveOptions(time_limit_s=20, threads=1), backend=backend)
    outcome = ctx.run()
    assert outcome.proven_optimal, outcome.message
    assert outcome.bound == pytest.approx(optimum["placed_gpu_weighted"])
    report = check(instance, outcome.proven_solution)
    for name, value in optimum.items():
        assert report.terms[name] == pytest.approx(value, abs=1e-6)
    assert ctx.reports and all(r.feasible for _, r in ctx.reports)


def _with_running(seed: int, policy: str, **budget: int):
    """A generated instance whose best-fit solution becomes the running work (half of its
    jobs, every other one), the rest pending: whole, fractional and CPU-only workers on
    multi-domain nodes, so the keep rows meet z-domains and count domains."""
    from placement.models.gpu.generate import generate
    from placement.models.gpu.greedy import best_fit

    base = generate(64, 24, seed=seed, occupancy=0.3)
    placed = best_fit(base).placements
    data = FAMILY.instance_to_dict(base)
    for j, job in enumerate(data["jobs"]):
        if j in placed and j % 2 == 0:
            job["current"] = [
                {"node": base.nodes[w.node].name, "gpus": list(w.gpus)} for w in placed[j]
            ]
    data["preemption_policy"] = policy
    if budget:
        data["disruption_budget"] = budget
    return instance_from_dict(data)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_running_work_is_kept_exactly_when_nothing_may_move(seed: int) -> None:
    instance = _with_running(seed, "NEVER", max_migrated_workers=0)
    assert instance.running_jobs
    model = GpuModel(instance)
    values = model.values_from_solution(instance.current_solution())
    assert values is not None and model.feasible(values)
    assert model.decode(values).placements == instance.current_solution().placements
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=5, threads=1))
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    for j in instance.running_jobs:
        assert sorted(result.solution.placements[j], key=lambda w: (w.node, w.gpus)) == sorted(
            instance.jobs[j].current, key=lambda w: (w.node, w.gpus)
        )
    assert report.terms["disruption_cost"] == 0


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_generated_reoptimization_never_loses_to_keeping_everything(seed: int, backend) -> None:
    """Under LOWER_PRIORITY with a budget, every solution is feasible and at least as good as
    FGD with no moves; the bound is valid for it."""
    instance = _with_running(seed, "LOWER_PRIORITY", max_migrated_workers=4)
    result = solve(instance, SolveOptions(backend=backend, time_limit_s=5, threads=1))
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    base = check(instance, keep_and_place(instance))
    assert base.feasible
    assert report.score() >= base.score()
    assert result.bound is None or result.bound >= report.terms["placed_gpu_weighted"] - 1e-6
    decisions, _ = running_decisions(instance, result.solution)
    assert sum(d.migrated_workers for d in decisions) <= 4


# --- the Lyra scenario ------------------------------------------------------------------------


def test_lyra_peer_serves_the_servers_and_ours_keeps_at_least_as_much_training() -> None:
    from placement.models.gpu.peers.lyra import lyra_reclaim, reclaim_instance

    instance = reclaim_instance(3, servers=8, reclaim=2)
    FAMILY.validate(instance)
    peer = lyra_reclaim(instance)
    report = check(instance, peer)
    assert report.feasible, report.violations
    inference = [j for j, job in enumerate(instance.jobs) if not job.running]
    assert all(j in peer.placements for j in inference)
    # Every reclaimed server is whole: an inference job holds all 8 GPUs of its node.
    assert all(len(peer.placements[j][0].gpus) == 8 for j in inference)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=2, threads=1))
    ours = check(instance, result.solution)
    assert ours.feasible
    assert ours.terms["placed_gpu_weighted"] >= report.terms["placed_gpu_weighted"]
    assert result.bound >= ours.terms["placed_gpu_weighted"]


def test_an_elastic_job_that_fits_only_shrunk_counts_in_the_bound_and_is_placed() -> None:
    instance = _instance(
        doc([node("n0", 2)], [{"name": "E", "gpus": 1, "workers": 4, "min_workers": 2}])
    )
    assert FAMILY.quick_bound(instance) >= 2.0
    for backend in ("cpsat", "milp"):
        result = solve(instance, SolveOptions(backend=backend, time_limit_s=10, threads=1))
        assert result.status == SolutionStatus.OPTIMAL
        assert result.objective == 2.0 and len(result.solution.placements[0]) == 2


def test_a_utility_per_size_decides_how_far_an_elastic_job_grows() -> None:
    """E (1..4 workers) with diminishing returns and F (2 GPUs) share a 4-GPU node: without
    the table E at 4 ties with E at 2 plus F (4 GPUs either way); with it, E at 2 plus F wins
    (1.5 + 2 > 2)."""
    elastic = {"name": "E", "gpus": 1, "workers": 4, "min_workers": 1}
    table = dict(elastic, size_utility_milli=[1000, 1500, 1800, 2000])
    fixed = {"name": "F", "gpus": 2}
    for backend in ("cpsat", "milp"):
        options = SolveOptions(backend=backend, time_limit_s=10, threads=1)
        with_table = _instance(doc([node("n0")], [table, fixed]))
        result = solve(with_table, options)
        assert result.status == SolutionStatus.OPTIMAL
        assert result.objective == pytest.approx(3.5)
        assert len(result.solution.placements[0]) == 2 and 1 in result.solution.placements
        plain = solve(_instance(doc([node("n0")], [elastic, fixed])), options)
        assert plain.objective == pytest.approx(4.0)
    bad = doc([node("n0")], [dict(elastic, size_utility_milli=[1000, 2500, 3000, 4000])])
    with pytest.raises(InputError, match=r"gpu.jobs\[0\].size_utility_milli"):
        instance_from_dict(bad)


def test_queue_limits_bind_pending_work_without_running_jobs() -> None:
    """Queues alone make a re-optimization: qa may use at most 2 GPUs (1 guaranteed + 1
    borrowed), so two of its three one-GPU jobs run, and the third waits."""
    document = doc(
        [node("n0")],
        [{"name": f"a{k}", "gpus": 1, "queue": "qa"} for k in range(3)],
        queues=[{"name": "qa", "guaranteed_milli": 1000, "borrowing_limit_milli": 1000}],
    )
    instance = _instance(document)
    assert instance.reopt
    for backend in ("cpsat", "milp", "greedy"):
        result = solve(instance, SolveOptions(backend=backend, time_limit_s=10, threads=1))
        assert check(instance, result.solution).feasible
        assert result.objective == 2.0
        # The third job would fit next to the others: its queue's limit is why it waits
        # (it used to say "the solve stopped before placing it").
        (reason,) = result.unplaced
        assert reason["kind"] == "crowded_out"
        assert (
            "queue 'qa' would then use 3000 milli-GPU, above its limit 2000" in (reason["message"])
        ), reason["message"]
        assert "stopped" not in reason["message"]
    assert solve(instance, SolveOptions(backend="cpsat", threads=1)).status == "optimal"
    # Without the limit (a borrowing limit of 2 GPUs) all three run: nothing to explain.
    document["queues"][0]["borrowing_limit_milli"] = 2000
    assert not solve(_instance(document), SolveOptions(backend="cpsat", threads=1)).unplaced


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
def test_restarts_dearer_than_preemptions_are_charged_as_restarts(backend: str) -> None:
    """The elastic shrink with a restart (10) dearer than a preemption (1) per worker: E
    shrinks to 2, so 2 workers are preempted and 2 restarted (22). A model that only bounded
    the preempted and restarted workers from below could claim 4 preempted, 0 restarted (4)
    and "prove" it."""
    document = copy.deepcopy(ELASTIC_SHRINK[0])
    document["jobs"][0].update(preemption_cost=1, migration_cost=10)
    instance = _instance(document)
    result = solve(instance, SolveOptions(backend=backend, time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    report = check(instance, result.solution)
    assert report.terms["placed_gpu_weighted"] == 8.0
    assert report.terms["disruption_cost"] == 22.0
    model = GpuModel(instance)
    values = model.values_from_solution(result.solution)
    assert model.terms(values)["disruption_cost"] == 22.0
    # No assignment of the model with this placement charges less.
    cheat = list(values)
    cheat[model.pv[0]], cheat[model.mv[0]] = 4, 0
    assert not model.feasible(cheat)


def test_a_large_reoptimization_runs_on_a_window_and_claims_no_optimality() -> None:
    from placement.models.gpu.peers.lyra import reclaim_instance

    instance = reclaim_instance(2, servers=64, reclaim=4)
    result = solve(instance, SolveOptions(backend="cpsat", time_limit_s=2, threads=1))
    report = check(instance, result.solution)
    assert report.feasible, report.violations
    assert "restricted to candidate nodes" in result.message
    assert result.status != SolutionStatus.OPTIMAL
    # The bound is the portfolio's quick bound, valid for the whole instance.
    assert result.bound == pytest.approx(FAMILY.quick_bound(instance))
    assert result.bound >= report.terms["placed_gpu_weighted"]
    served = [j for j, job in enumerate(instance.jobs) if not job.running]
    assert all(j in result.solution.placements for j in served)


# --- the bundled example, through the real command ---------------------------------------------


def test_bundled_preemption_example_moves_the_cheapest_job_and_says_why(repo, tmp_path) -> None:
    """instances/gpu/preemption.json (its description gives the hand-checked answer): moving
    batch-etl's two workers (cost 2) beats moving the notebook (3) or preempting (10); the
    summary and --json both carry the decision and what it made room for."""
    from tests.test_cli import run

    path = repo / "instances" / "gpu" / "preemption.json"
    proc = run("solve", path, "--time-limit", "10", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "batch-etl: migrate to make room for llm-finetune (2 cost, 2 restarted)" in proc.stdout
    assert "1 of 2 running jobs keep their placement" in proc.stdout
    proc = run("solve", path, "--time-limit", "10", "--json", cwd=tmp_path)
    result = json.loads(proc.stdout)
    assert result["status"] == "optimal"
    assert result["objective_terms"]["placed_gpu_weighted"] == 22
    assert result["objective_terms"]["disruption_cost"] == 2
    decisions = {d["job"]: d for d in result["solution"]["gpu"]["decisions"]}
    assert decisions["batch-etl"]["action"] == "migrate"
    assert decisions["batch-etl"]["made_room_for"] == ["llm-finetune"]
    assert decisions["notebook"]["action"] == "keep"
