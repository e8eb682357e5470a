"""QPART's quantized edge split (partition mode EDGE_SPLIT_QUANTIZED): the exact model
against brute force, the checker against broken plans, bad input by name, and the solve
through the library, the command line and the gRPC service."""

from __future__ import annotations

import copy
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.partition import FAMILY
from placement.models.partition.edge_split import EdgeSplitChoice, instance_tables
from placement.models.partition.edge_split_check import plan_figures
from placement.models.partition.edge_split_generate import generate_edge_split
from placement.models.partition.edge_split_solve import edge_quick_bound
from placement.models.partition.instance import PartitionInstance, PartitionSolution
from placement.models.partition.peers.qpart import qpart_plan, segment_bits
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.family import instance_document, instance_from_document
from tests.conftest import REPO

BUNDLED = REPO / "instances/partition/edge-split-12.json"


def _read(inst: PartitionInstance) -> PartitionInstance:
    """The instance as a file gives it (validated)."""
    return instance_from_document(json.loads(json.dumps(instance_document(inst))))


def _plan(p: int, bits: tuple[int, ...]) -> PartitionSolution:
    return PartitionSolution(edge_split=EdgeSplitChoice(p, bits))


def brute_force(inst: PartitionInstance) -> tuple[float, list[EdgeSplitChoice]]:
    """The least checked request cost over every (split, bit-width vector), and the plans
    reaching it (inf, [] when none is feasible): the checker is the only judge."""
    options = instance_tables(inst).options
    best, argbest = float("inf"), []
    for p in range(len(inst.layers) + 1):
        for bits in itertools.product(options, repeat=p):
            report = FAMILY.check(inst, _plan(p, bits))
            if not report.feasible:
                continue
            if report.objective < best - 1e-12:
                best, argbest = report.objective, [EdgeSplitChoice(p, bits)]
            elif abs(report.objective - best) <= 1e-12:
                argbest.append(EdgeSplitChoice(p, bits))
    return best, argbest


# --- exactness ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["cpsat", "milp"])
@pytest.mark.parametrize(
    ("layers", "seed"), [(3, s) for s in range(4)] + [(5, s) for s in range(4)]
)
def test_the_exact_model_proves_the_brute_force_optimum(
    layers: int, seed: int, backend: str
) -> None:
    inst = _read(generate_edge_split(layers, seed))
    best, plans = brute_force(inst)
    result = solve(inst, SolveOptions(backend=backend, time_limit_s=30, threads=1))
    assert result.status is SolutionStatus.OPTIMAL and result.stop_reason is StopReason.PROVEN
    assert result.objective == pytest.approx(best, abs=1e-12)
    assert result.bound == pytest.approx(best, abs=1e-12)
    assert result.solution.edge_split in plans
    assert FAMILY.check(inst, result.solution).feasible


@pytest.mark.parametrize("seed", range(6))
def test_qpart_and_the_fallback_are_feasible_and_never_below_the_optimum(seed: int) -> None:
    inst = _read(generate_edge_split(5, seed))
    best, _ = brute_force(inst)
    qpart = qpart_plan(inst)
    assert qpart is not None
    for plan in (qpart, *(sol for _, sol in FAMILY.greedy(inst))):
        report = FAMILY.check(inst, plan)
        assert report.feasible, report.violations
        assert report.objective >= best - 1e-12
    assert edge_quick_bound(inst) <= best + 1e-12


def test_qpart_is_beaten_on_some_generated_request() -> None:
    """The exact model is not QPART in disguise: on the bundled request QPART's payload-first
    bit-widths cost more than the optimum."""
    inst = instance_from_document(json.loads(BUNDLED.read_text()))
    t = instance_tables(inst)
    qpart = plan_figures(t, qpart_plan(inst).edge_split)
    result = solve(inst, SolveOptions(time_limit_s=30, threads=1))
    best = plan_figures(t, result.solution.edge_split)
    assert result.status is SolutionStatus.OPTIMAL
    assert best.objective < qpart.objective
    assert best.loss_pp <= 1.0 and qpart.loss_pp <= 1.0


def test_qpart_lowers_the_widths_with_the_most_payload_saved_per_point_of_loss() -> None:
    """Hand example: two layers, 4 bits lose 0.6 pp each, budget 1 pp, so one layer goes
    down. Both on the device: conv's step saves its 1 MB of weights x 28/32, fc's its 4 MB
    of weights and 0.1 MB output x 28/32: fc goes to 4 bits. conv alone: its weights and its
    2 MB output go to 4 bits."""
    inst = _read_case("edge_split_two_layers")
    t = instance_tables(inst)
    assert segment_bits(t, 2) == (32, 4)
    assert segment_bits(t, 1) == (4,)
    assert qpart_plan(inst).edge_split == EdgeSplitChoice(1, (4,))


def _read_case(name: str) -> PartitionInstance:
    cases = json.loads((REPO / "tests/data/optima/partition.json").read_text())
    doc = next(c["instance"] for c in cases if c["name"] == name)
    return instance_from_document(copy.deepcopy(doc))


# --- the checker ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("plan", "why"),
    [
        (_plan(2, (4, 4)), "accuracy loss 1.2 pp is over the budget 1 pp"),
        (_plan(1, (3,)), "3 bits is not an allowed bit-width (4, 32)"),
        (_plan(3, (4, 4, 4)), "device_layers 3 is outside 0..2"),
        (_plan(-1, ()), "device_layers -1 is outside 0..2"),
        (_plan(2, (4,)), "1 bit-widths for 2 device layers"),
        (PartitionSolution(), "no edge_split"),
        (PartitionSolution((0, 1), edge_split=EdgeSplitChoice(0, ())), "edge_split only"),
    ],
)
def test_the_checker_rejects_broken_plans(plan: PartitionSolution, why: str) -> None:
    inst = _read_case("edge_split_two_layers")
    report = FAMILY.check(inst, plan)
    assert not report.feasible
    assert any(why in v for v in report.violations), report.violations


def test_the_checker_rejects_plans_over_the_device_and_channel_budgets() -> None:
    doc = json.loads(json.dumps(instance_document(_read_case("edge_split_two_layers"))))
    doc["partition"]["edge_split"]["device_compute_budget_s"] = 0.1
    doc["partition"]["edge_split"]["channel_budget_s"] = 0.3
    inst = instance_from_document(doc)
    report = FAMILY.check(inst, _plan(1, (4,)))
    assert not report.feasible
    text = " | ".join(report.violations)
    assert "device compute time 0.125 s is over the budget 0.1 s (by 0.025)" in text
    assert "channel time 0.375 s is over the budget 0.3 s (by 0.075)" in text
    # everything on the server sends the 8 MB input: 8 s of channel
    report = FAMILY.check(inst, _plan(0, ()))
    assert not report.feasible and "channel time 8 s" in report.violations[0]
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.status is SolutionStatus.INFEASIBLE
    # the least channel time: conv at 4 bits, its weights down and output up, 0.375 s
    assert "every plan needs at least 0.375 s on it" in result.message, result.message
    assert "the budget is 0.3 s (0.075 s short)" in result.message


def test_the_objective_and_payload_are_the_hand_computed_ones() -> None:
    inst = _read_case("edge_split_two_layers")
    t = instance_tables(inst)
    fig = plan_figures(t, EdgeSplitChoice(1, (4,)))
    assert FAMILY.check(inst, _plan(1, (4,))).objective == pytest.approx(0.501, abs=1e-12)
    assert fig.payload_bits == (1_000_000 + 2_000_000) * 8 * 4 // 32
    assert fig.full_precision_payload_bits == (1_000_000 + 2_000_000) * 8
    assert fig.loss_pp == pytest.approx(0.6)
    server = plan_figures(t, EdgeSplitChoice(0, ()))
    assert server.cost == pytest.approx(8.002, abs=1e-12)
    assert server.payload_bits == 8_000_000 * 8


# --- bad input ------------------------------------------------------------------------------


def _bad(path: list, value: object) -> dict:
    doc = json.loads(json.dumps(instance_document(_read_case("edge_split_two_layers"))))
    where = doc["partition"]
    for key in path[:-1]:
        where = where[key]
    if value is None:
        del where[path[-1]]
    else:
        where[path[-1]] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "field", "expected"),
    [
        (["edge_split"], None, "partition.edge_split", "the request"),
        (["edge_split", "bit_widths"], [8, 4], "partition.edge_split.bit_widths", "ascending"),
        (["edge_split", "bit_widths"], [40], "partition.edge_split.bit_widths", "below"),
        (["edge_split", "device"], "tablet", "partition.edge_split.device", "name of a device"),
        (["edge_split", "server"], "phone", "partition.edge_split.server", "other than"),
        (
            ["edge_split", "accuracy_loss", 0, "loss_pp"],
            [0.1, 0.2],
            "partition.edge_split.accuracy_loss[0].loss_pp",
            "one loss per bit-width",
        ),
        (
            ["edge_split", "accuracy_loss", 1, "layer"],
            "conv",
            "partition.edge_split.accuracy_loss[1].layer",
            "'fc'",
        ),
        (
            ["edge_split", "accuracy_loss", 0, "loss_pp"],
            [-0.5],
            "partition.edge_split.accuracy_loss[0].loss_pp[0]",
            "",
        ),
        (["edge_split", "accuracy_budget_pp"], -1, "partition.edge_split.accuracy_budget_pp", ""),
        (
            ["links", "inter_node_bandwidth_bytes_per_s"],
            0,
            "partition.links.inter_node_bandwidth_bytes_per_s",
            "bytes/s > 0",
        ),
        (["edges"], [{"src": "conv", "dst": "fc", "bytes": 5}], "partition.edges", "chain"),
    ],
)
def test_bad_input_names_the_field(path: list, value: object, field: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        instance_from_document(_bad(path, value))
    text = str(err.value)
    assert field in text and expected in text, text


def test_a_third_device_and_the_section_outside_the_mode_are_refused() -> None:
    doc = _bad(["devices"], None)
    doc["partition"]["devices"] = [
        {"name": n, "type": "x", "memory_bytes": 10, "flops_per_s": 1e9}
        for n in ("phone", "server", "spare")
    ]
    with pytest.raises(InputError, match=r"partition\.devices.*2 devices"):
        instance_from_document(doc)
    doc = _bad(["workload", "mode"], "INFERENCE_LATENCY")
    with pytest.raises(InputError, match=r"partition\.edge_split.*absent unless"):
        instance_from_document(doc)


# --- library, command line, gRPC ----------------------------------------------------------


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=300,
    )


def test_generate_solve_check_and_plot_on_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "req.json"
    done = cli(
        "generate", "partition", "--mode", "edge_split", "--layers", 12, "--devices", 2,
        "--seed", 2, "--out", out, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == json.loads(BUNDLED.read_text())
    done = cli("solve", out, "--json", "--time-limit", "30", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "optimal" and result["sense"] == "min"
    choice = result["solution"]["partition"]["edge_split"]
    assert len(choice["bits"]) == choice["device_layers"] > 0
    solution = tmp_path / "sol.json"
    solution.write_text(json.dumps(result["solution"]))
    check = cli("check", out, solution, "--json", cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    value = json.loads(check.stdout)["objective_terms"]["request_cost"]
    assert value == pytest.approx(result["objective"], rel=1e-12)
    drawn = cli("plot", out, solution, "--out", tmp_path / "plan.png", cwd=tmp_path)
    assert drawn.returncode == 0 and (tmp_path / "plan.png").stat().st_size > 0, drawn.stderr
    bad = json.loads(solution.read_text())
    bad["partition"]["edge_split"]["bits"][0] = 3
    solution.write_text(json.dumps(bad))
    check = cli("check", out, solution, cwd=tmp_path)
    assert check.returncode == 1 and "3 bits is not an allowed bit-width" in check.stdout
    wrong = json.loads(out.read_text())
    wrong["partition"]["edge_split"]["bit_widths"] = [4, 2]
    out.write_text(json.dumps(wrong))
    done = cli("solve", out, cwd=tmp_path)
    assert done.returncode == 2 and "partition.edge_split.bit_widths" in done.stderr
    assert "Traceback" not in done.stderr
    done = cli(
        "generate", "partition", "--mode", "edge_split", "--layers", 4, "--devices", 3,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "devices" in done.stderr


def test_the_bundled_request_through_the_grpc_service(tmp_path: Path) -> None:
    """A real ``placement serve`` on loopback solves and checks a QPART request."""
    from placement.api.client import Client
    from placement.api.server.probe import start_server
    from placement.solver.schema.v1 import service_pb2

    document = json.loads(BUNDLED.read_text())
    expected = solve(
        instance_from_document(copy.deepcopy(document)), SolveOptions(time_limit_s=30)
    ).objective
    server = start_server(tmp_path, workers=1)
    try:
        with Client(server.target) as client:
            resp = client.solve_response(document, time_limit_s=30)
            assert resp.status == service_pb2.SOLUTION_STATUS_OPTIMAL
            assert resp.sense == "min" and resp.objective == pytest.approx(expected, rel=1e-12)
            assert resp.solution.partition.edge_split.device_layers > 0
            assert not resp.solution.partition.assignments
            check = client.check(document, resp.solution)
            assert check.feasible and check.objective == pytest.approx(expected, rel=1e-12)
    finally:
        server.stop()


def test_a_start_plan_is_kept_and_the_named_solution_gives_bits_by_layer() -> None:
    inst = _read_case("edge_split_two_layers")
    msg = FAMILY.solution_to_message(inst, _plan(2, (32, 4)))
    adapted = FAMILY.adapt_start(inst, msg)
    assert adapted.solution.edge_split == EdgeSplitChoice(2, (32, 4)) and adapted.kept == 1
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1), start=msg)
    assert result.warm_start is not None
    assert result.objective == pytest.approx(0.501, abs=1e-12)
    assert result.named.edge_split == {"conv": 4}
    back = FAMILY.solution_from_message(inst, FAMILY.solution_to_message(inst, result.solution))
    assert back.edge_split == result.solution.edge_split


def test_generate_is_seeded() -> None:
    a, b = generate_edge_split(7, 3), generate_edge_split(7, 3)
    assert instance_document(a) == instance_document(b)
    assert instance_document(a) != instance_document(generate_edge_split(7, 4))
