"""Serving plans through the family contract (LLM_SERVING with ``workload.serving_plan``):
the checker's objective by hand and its refusals of broken plans, the checker against the
planner's own evaluator, the solve equal to brute force, the bundled instance through
``placement solve`` / check / plot / warm start, and a gRPC solve on loopback."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from placement.models.partition import FAMILY
from placement.models.partition.instance import (
    PartitionDevice,
    PartitionInstance,
    PartitionLayer,
    PartitionLayerTime,
    PartitionLinks,
    PartitionMode,
    PartitionServingPlan,
    PartitionSolution,
    PartitionWorkload,
)
from placement.models.partition.serving_plan_solve import greedy_plans, to_solution, tp_model
from placement.models.partition.serving_tp import TpPlan, TpStage, tp_plan_throughput
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.errors import InputError
from placement.solver.family import instance_document, instance_from_document
from tests.test_partition_serving_tp import _brute_force, _instance, _spec

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "instances" / "partition" / "serving-plan-13b-8gpu.json"


def hand(
    memory: int = 10_000, replicas: bool = True, sizes: tuple[int, ...] = (1, 2)
) -> PartitionInstance:
    """Embed 1 ms, a block 4 ms (KV 10 B/token), head 1 ms, 1000 B of activations each;
    batch 2, context 10; nodes n0 and n1 of two GPUs each; links 1e6 (inter) and 2e6
    (intra) B/s; all-reduce latency 0.1 ms (tests/data/optima/partition.json works the
    same numbers out)."""

    def layer(name: str, ms: float, param: int, kv: int) -> PartitionLayer:
        times = (PartitionLayerTime("g", ms / 1000, 0.0),)
        return PartitionLayer(
            name, param_bytes=param, activation_bytes=1000, kv_cache_bytes_per_token=kv, times=times
        )

    layers = [layer("embed", 1, 100, 0), layer("block", 4, 1000, 10), layer("head", 1, 100, 0)]
    devices = [PartitionDevice(f"g{i}", "g", memory, 0.0, f"n{i // 2}") for i in range(4)]
    plan = PartitionServingPlan(replicas, sizes, 1e-4)
    workload = PartitionWorkload(
        mode=PartitionMode.SERVING, batch_size=2, context_length=10, serving_plan=plan
    )
    doc = instance_document(
        PartitionInstance(layers, devices, PartitionLinks(1e6, 2e6), workload, name="hand")
    )
    return instance_from_document(doc)


def plan(*pipelines: list[tuple[tuple[int, ...], int, int]]) -> PartitionSolution:
    return PartitionSolution(pipelines=tuple(tuple(p) for p in pipelines))


def test_the_objective_is_the_hand_computed_one() -> None:
    inst = hand()
    # both GPUs of n0 tensor-parallel over the model: 3 ms + 4 all-reduces x 1.1 ms
    tp = FAMILY.check(inst, plan([((0, 1), 0, 3)]))
    assert tp.feasible and tp.terms["tokens_per_s"] == pytest.approx(2 / 0.0074, rel=1e-12)
    # two stages: [embed block] 5 ms + 2 ms sent; [head] 1 ms + 2 ms received
    two = FAMILY.check(inst, plan([((0,), 0, 2), ((2,), 2, 1)]))
    assert two.feasible and two.terms["tokens_per_s"] == pytest.approx(2 / 0.007, rel=1e-12)
    # three replicas of one GPU each (6 ms) and the sum over pipelines
    three = FAMILY.check(inst, plan([((0,), 0, 3)], [((1,), 0, 3)], [((3,), 0, 3)]))
    assert three.feasible and three.terms["tokens_per_s"] == pytest.approx(3 * 2 / 0.006)
    # a slower stage lowers the objective: the checker recomputes, it does not trust
    slow = replace(inst, links=PartitionLinks(5e5, 2e6))
    assert FAMILY.check(slow, plan([((0,), 0, 2), ((2,), 2, 1)])).terms[
        "tokens_per_s"
    ] == pytest.approx(2 / 0.009)


@pytest.mark.parametrize(
    ("broken", "why"),
    [
        (plan([((0,), 0, 3)], [((0,), 0, 3)]), "used twice"),
        (plan([((0, 1), 0, 1), ((2, 3), 1, 2)], [((1,), 0, 3)]), "used twice"),
        (plan([((1, 2), 0, 3)]), "not all on one node"),
        (plan([((0,), 0, 1), ((1,), 2, 1)]), "a gap"),
        (plan([((0,), 0, 2), ((1,), 1, 2)]), "an overlap"),
        (plan([((0,), 0, 2)]), "end at layer 2"),
        (plan([((0,), 0, 2), ((1,), 2, 0)]), "no layers"),
        (plan([((0,), 0, 3), ((1,), 3, 1)]), "outside"),
        (plan([((9,), 0, 3)]), "not devices of the instance"),
        (plan(), "no pipeline"),
        (plan([]), "no stages"),
    ],
)
def test_the_checker_rejects_broken_plans(broken: PartitionSolution, why: str) -> None:
    report = FAMILY.check(hand(), broken)
    assert not report.feasible and report.terms["tokens_per_s"] == 0.0
    assert any(why in v for v in report.violations), report.violations


def test_the_checker_rejects_memory_degrees_and_replicas_it_does_not_allow() -> None:
    # memory: 7400 B on one GPU of 7000; 6700 per GPU tensor-parallel fits
    tight = hand(memory=7000)
    over = FAMILY.check(tight, plan([((0,), 0, 3)]))
    assert not over.feasible and any("400 over" in v for v in over.violations)
    assert FAMILY.check(tight, plan([((0, 1), 0, 3)])).feasible
    # a degree not allowed
    report = FAMILY.check(hand(sizes=(1,)), plan([((0, 1), 0, 3)]))
    assert any("tensor-parallel degree 2" in v for v in report.violations)
    # two pipelines without replicas
    report = FAMILY.check(hand(replicas=False), plan([((0,), 0, 3)], [((1,), 0, 3)]))
    assert any("replicas is false" in v for v in report.violations)
    # a one-pipeline solution's assignments are not a plan
    report = FAMILY.check(hand(), PartitionSolution((0, 0, 0)))
    assert not report.feasible


def test_the_checker_agrees_with_the_planners_evaluator() -> None:
    """Every plan the solve and the greedy find, on small clusters, scores the same with the
    checker and with serving_tp's evaluator (written apart)."""
    a, b = _spec("fast", 2.2, 2e12, 3e14), _spec("slow", 1.3, 3e11, 6e13)
    for specs, per_node in (([(a, 2), (b, 2)], 2), ([(a, 4)], 4), ([(a, 2), (b, 2)], 1)):
        base = _instance(specs, per_node)
        inst = replace(
            base,
            links=PartitionLinks(1e9, 5e10),
            workload=replace(base.workload, serving_plan=PartitionServingPlan(True, (1, 2), 2e-5)),
        )
        inst = instance_from_document(instance_document(inst))
        found = [s for _, s in greedy_plans(inst)]
        found.append(solve(inst, SolveOptions(time_limit_s=20, threads=1)).solution)
        for sol in found:
            ours = FAMILY.check(inst, sol)
            theirs, errors = tp_plan_throughput(
                inst,
                tp_model(inst),
                TpPlan(tuple(tuple(TpStage(*s) for s in p) for p in sol.pipelines)),
            )
            assert ours.feasible == (not errors), (ours.violations, errors)
            assert ours.terms["tokens_per_s"] == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize("blocks", [1, 3])
@pytest.mark.parametrize("mem", [0.8, 1.3, 4.5])
def test_the_solve_proves_the_brute_force_optimum(blocks: int, mem: float) -> None:
    a, b = _spec("fast", mem, 2e12, 3e14), _spec("slow", 1.3, 3e11, 6e13)
    base = _instance([(a, 2), (b, 2)], 2, blocks=blocks)
    inst = replace(
        base,
        links=PartitionLinks(1e9, 5e10),
        workload=replace(base.workload, serving_plan=PartitionServingPlan(True, (1, 2), 2e-5)),
    )
    inst = instance_from_document(instance_document(inst))
    best = _brute_force(inst, tp_model(inst))
    result = solve(inst, SolveOptions(time_limit_s=20, threads=1))
    if best == 0:
        assert result.status is SolutionStatus.INFEASIBLE
        return
    assert result.status is SolutionStatus.OPTIMAL, result.message
    assert result.objective == pytest.approx(best, rel=1e-9)
    assert result.bound == pytest.approx(best, rel=1e-9) and result.bound >= result.objective
    assert FAMILY.check(inst, result.solution).feasible


def test_without_the_planners_premises_only_greedy_and_no_claim() -> None:
    """Devices of one type that differ in memory: the planner is not exact; the solve says so
    and returns a checked greedy plan, not "optimal" (short of the quick bound)."""
    inst = hand()
    devices = list(inst.devices)
    devices[3] = replace(devices[3], memory_bytes=7_000)
    odd = instance_from_document(instance_document(replace(inst, devices=devices)))
    result = solve(odd, SolveOptions(time_limit_s=10, threads=1))
    assert result.status is SolutionStatus.FEASIBLE
    assert "no exact planner" in result.message
    assert FAMILY.check(odd, result.solution).feasible


def test_old_serving_files_are_unchanged_and_bad_plans_name_the_field() -> None:
    old = instance_from_document(
        json.loads((ROOT / "instances" / "partition" / "serving-60x8.json").read_text())
    )
    assert not old.workload.plan and FAMILY.objective_sense(old) == "min"
    doc = instance_document(hand())
    again = instance_from_document(copy.deepcopy(doc))
    assert again.workload.serving_plan == hand().workload.serving_plan
    for change, path in (
        (lambda w: w.update(mode="TRAINING_PIPELINE"), "partition.workload.serving_plan"),
        (
            lambda w: w["serving_plan"].update(tensor_parallel_sizes=[2, 3]),
            "partition.workload.serving_plan.tensor_parallel_sizes",
        ),
        (
            lambda w: w["serving_plan"].update(tensor_parallel_sizes=[0]),
            "partition.workload.serving_plan.tensor_parallel_sizes",
        ),
    ):
        bad = copy.deepcopy(doc)
        change(bad["partition"]["workload"])
        with pytest.raises(InputError) as info:
            instance_from_document(bad)
        assert any(e.path.startswith(path) for e in info.value.errors), str(info.value)
    msg = FAMILY.solution_to_message(hand(), plan([((0,), 0, 3)]))
    msg.pipelines[0].stages[0].devices[0] = "nobody"
    with pytest.raises(InputError, match=r"partition\.pipelines\[0\]\.stages\[0\]\.devices\[0\]"):
        FAMILY.solution_from_message(hand(), msg)


def test_warm_start_keeps_what_still_applies() -> None:
    inst = hand()
    start = plan([((0, 1), 0, 3)], [((2,), 0, 3)])
    adapted = FAMILY.adapt_start(inst, FAMILY.solution_to_message(inst, start))
    assert adapted.solution == start and not adapted.dropped
    named = FAMILY.named_solution(inst, start)
    assert named.pipelines[0] == ((("g0", "g1"), ("embed", "block", "head")),)
    fewer = replace(inst, devices=inst.devices[:2])
    msg = FAMILY.solution_to_message(inst, start)
    adapted = FAMILY.adapt_start(fewer, msg)
    assert adapted.solution == plan([((0, 1), 0, 3)]) and len(adapted.dropped) == 1


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
    )


def test_the_bundled_instance_through_the_command_line(tmp_path: Path) -> None:
    done = cli("solve", BUNDLED, "--time-limit", "30", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "optimal" and result["sense"] == "max"
    pipelines = result["solution"]["partition"]["pipelines"]
    assert len(pipelines) >= 2 and any(
        len(s["devices"]) > 1 for p in pipelines for s in p["stages"]
    )
    solution = tmp_path / "sol.json"
    solution.write_text(json.dumps(result["solution"]))
    check = cli("check", BUNDLED, solution, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    value = json.loads(check.stdout)["objective_terms"]["tokens_per_s"]
    assert value == pytest.approx(result["objective"], rel=1e-12)
    drawn = cli("plot", BUNDLED, solution, "--out", tmp_path / "plan.png", cwd=tmp_path)
    assert drawn.returncode == 0 and (tmp_path / "plan.png").stat().st_size > 0, drawn.stderr
    summary = cli("solve", BUNDLED, "--time-limit", "30", "--start", solution, cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    assert "pipeline 1, stage 1: layers 0.." in summary.stdout
    # a stage moved onto a GPU of another node: exit 1, the violation named
    bad = json.loads(solution.read_text())
    stage = next(
        s for p in bad["partition"]["pipelines"] for s in p["stages"] if len(s["devices"]) > 1
    )
    other = "t4-16gb-04" if stage["devices"][0].startswith("l4") else "l4-24gb-00"
    stage["devices"][-1] = other
    solution.write_text(json.dumps(bad))
    check = cli("check", BUNDLED, solution, cwd=tmp_path)
    assert check.returncode == 1 and "different types" in check.stdout


def test_the_bundled_instance_through_the_grpc_service(tmp_path: Path) -> None:
    """A real ``placement serve`` on loopback solves and checks a serving plan."""
    from placement.api.client import Client
    from placement.api.server.probe import start_server
    from placement.solver.schema.v1 import service_pb2

    document = json.loads(BUNDLED.read_text())
    expected = FAMILY.check(
        instance_from_document(copy.deepcopy(document)),
        solve(
            instance_from_document(copy.deepcopy(document)), SolveOptions(time_limit_s=30)
        ).solution,
    ).objective
    server = start_server(tmp_path, workers=1)
    try:
        with Client(server.target) as client:
            resp = client.solve_response(document, time_limit_s=30)
            assert resp.status == service_pb2.SOLUTION_STATUS_OPTIMAL
            assert resp.sense == "max" and resp.objective == pytest.approx(expected, rel=1e-9)
            assert resp.solution.partition.pipelines
            assert not resp.solution.partition.assignments
            check = client.check(document, resp.solution)
            assert check.feasible and check.objective == pytest.approx(expected, rel=1e-9)
    finally:
        server.stop()


# --- the configuration-LP cover bound of Helix's max flow (serving_cover_bound.py) -----------


@pytest.mark.parametrize("seed", range(6))
def test_the_cover_bound_is_a_bound(seed: int) -> None:
    """Never below the best placement (brute force), wide or narrow links."""
    from placement.models.partition.serving_cover_bound import cover_bound, covers
    from placement.models.partition.serving_milp import relaxation_bound
    from tests.test_partition_helix import brute_force, random_cluster

    for wide in (True, False):
        c = random_cluster(seed, wide=wide)
        optimum = brute_force(c)
        bound = cover_bound(c, 0.0, relaxation_bound(c))
        assert bound is None or bound >= optimum - 1e-6, (bound, optimum)
        assert covers(c, optimum, float("inf")) is not False
    # and it is not the supply bound again: on this cluster it is far below it
    if seed == 0:
        c = random_cluster(0, wide=True)
        assert cover_bound(c, 0.0, relaxation_bound(c)) < relaxation_bound(c) - 5


def test_the_cover_bound_on_llama1_30b(shared_benchmarks: Path) -> None:
    """LLaMA-1 30B on cluster24: the supply bound says 2,050.06; the cover bound refutes
    1,944 (our placement: 1,942.71, which it must admit)."""
    from placement.models.partition.formats.helix import load_helix
    from placement.models.partition.serving_cover_bound import covers

    c = load_helix(shared_benchmarks / "partition" / "helix", "llama1_30b")
    assert covers(c, 1944.0, float("inf")) is False
    assert covers(c, 1942.71, float("inf")) is True


def test_the_planner_stops_when_told() -> None:
    """The bisection checks its stop (the solve's deadline or cancel) and raises, so that a
    solve never overruns its time limit by the planner's enumeration."""
    from placement.models.partition.serving_tp import best_tp_plan_and_bound

    inst = hand()
    with pytest.raises(TimeoutError):
        best_tp_plan_and_bound(inst, tp_model(inst), stop=lambda: True)
    plan_, bound = best_tp_plan_and_bound(inst, tp_model(inst), stop=lambda: False)
    assert plan_.pipelines and bound >= FAMILY.check(inst, to_solution(plan_)).objective
