"""Partition instances: validation with field paths, JSON round trip, the generator, the
command line end to end, and explanations of models that do not fit."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from placement.models.partition import (
    Device,
    Layer,
    LayerTime,
    Mode,
    PartitionInstance,
    check,
)
from placement.models.partition.explain import explain_infeasible
from placement.models.partition.generate import generate
from placement.solver import SolutionStatus, SolveOptions, StopReason, solve
from placement.solver.errors import InputError
from placement.solver.family import get_family, validate
from placement.solver.jsonform import instance_message
from tests.optima import instance

GB = 10**9


def two_way_split() -> PartitionInstance:
    return instance("partition", "two_way_split")


def memory_forces_split() -> PartitionInstance:
    return instance("partition", "memory_forces_split")


def _parse(section: dict) -> PartitionInstance:
    msg = instance_message({"partition": section})
    return get_family("partition").instance_from_message(msg.partition)


def _error(section: dict) -> str:
    with pytest.raises(InputError) as info:
        _parse(section)
    return "; ".join(str(e) for e in info.value.errors)


BASE = {
    "layers": [{"name": "a", "forward_flops": 1e9}, {"name": "b", "forward_flops": 1e9}],
    "devices": [{"name": "d", "type": "g", "memory_bytes": 100, "flops_per_s": 1e12}],
}


@pytest.mark.parametrize(
    "change,expected",
    [
        (
            {"layers": [{"name": "a", "param_bytes": -1}]},
            "partition.layers[0].param_bytes: got -1, expected an integer in [0, 2**50] (bytes)",
        ),
        (
            {"layers": [{"name": "a"}, {"name": "a"}]},
            "partition.layers[1].name: got 'a', expected a layer name used once",
        ),
        ({"devices": []}, "partition.devices: got 0, expected 1 to 10000 devices"),
        (
            {"devices": [{"name": "d", "type": "g", "memory_bytes": 1}]},
            "partition.devices[0].flops_per_s: got 0.0, expected FLOP/s > 0",
        ),
        (
            {"edges": [{"src": "b", "dst": "a"}]},
            "partition.edges[0].dst: got 'a', expected a layer listed after 'b'",
        ),
        (
            {"edges": [{"src": "a", "dst": "zz"}]},
            "partition.edges[0].dst: got 'zz', expected the name of a layer",
        ),
        (
            {"workload": {"batch_size": 0}},
            "partition.workload.batch_size: got 0, expected an integer in [1, 1e6]",
        ),
        (
            {"layers": [{"name": "a", "times": [{"device_type": "g", "forward_s": -1}]}]},
            "partition.layers[0].times[0].forward_s: got -1.0, expected a number in [0, 1e8] (seconds)",
        ),
    ],
)
def test_bad_fields_are_named(change: dict, expected: str) -> None:
    assert expected in _error({**BASE, **change})


def test_bytes_without_bandwidth_are_refused() -> None:
    section = {
        "layers": [{"name": "a", "activation_bytes": 5}, {"name": "b"}],
        "devices": [
            {"name": "d0", "type": "g", "memory_bytes": 9},
            {"name": "d1", "type": "g", "memory_bytes": 9},
        ],
    }
    assert "partition.links.inter_node_bandwidth_bytes_per_s" in _error(section)


def test_json_round_trip() -> None:
    inst = generate(12, 3, seed=4, dag=True, mode=Mode.SERVING, device_types=("A100", "T4"))
    validate(inst)
    data = get_family("partition").instance_to_dict(inst)
    again = _parse(json.loads(json.dumps(data)))
    assert get_family("partition").instance_to_dict(again) == data
    assert again.edges == inst.edges and again.workload == inst.workload


def test_generator_is_seeded() -> None:
    a = generate(30, 4, seed=7, device_types=("A100", "L4", "T4"))
    b = generate(30, 4, seed=7, device_types=("A100", "L4", "T4"))
    c = generate(30, 4, seed=8, device_types=("A100", "L4", "T4"))
    assert a.layers == b.layers and a.devices == b.devices
    assert a.layers != c.layers
    with pytest.raises(InputError):
        generate(3, 1, device_types=("H999",))


def test_generated_instances_solve_optimally() -> None:
    for seed in range(3):
        inst = generate(40, 5, seed=seed, dag=seed == 1, device_types=("A100", "L4"))
        result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
        assert result.status == SolutionStatus.OPTIMAL, result.message
        assert check(inst, result.solution).feasible


def test_non_contiguous_is_heuristic_only() -> None:
    inst = two_way_split()
    inst.workload = replace(inst.workload, non_contiguous=True)
    result = solve(inst, SolveOptions(time_limit_s=5, threads=1))
    assert result.status == SolutionStatus.FEASIBLE
    assert result.stop_reason == StopReason.HEURISTIC_ONLY
    assert result.bound is not None and result.bound <= result.objective


def test_explains_a_layer_too_large_for_any_device() -> None:
    inst = memory_forces_split()
    inst.layers[1] = replace(inst.layers[1], extra_memory_bytes=3 * GB)
    result = solve(inst, SolveOptions(time_limit_s=5, threads=1))
    assert result.status == SolutionStatus.INFEASIBLE and result.stop_reason == StopReason.PROVEN
    assert "layer 'l1' needs 2.79 GiB, the largest device (slow) has 1.86 GiB" in result.message
    (layer,) = [s for s in explain_infeasible(inst) if s["kind"] == "layer"]
    assert layer["missing_bytes"] == GB


def test_explains_a_model_larger_than_all_devices() -> None:
    layers = [Layer(f"l{i}", param_bytes=GB, times=(LayerTime("g", 0.001),)) for i in range(5)]
    inst = PartitionInstance(
        layers,
        [Device("d0", "g", 2 * GB), Device("d1", "g", 2 * GB)],
        workload=replace(two_way_split().workload, mode=Mode.INFERENCE),
    )
    (model,) = explain_infeasible(inst)
    assert model["kind"] == "model" and model["missing_bytes"] == GB


def test_explains_fragmentation_of_contiguous_stages() -> None:
    # 0.6 + 0.6 + 0.6 GB on two 1 GB devices: 1.8 GB fit in 2 GB, but no contiguous split.
    layers = [
        Layer(f"l{i}", extra_memory_bytes=600_000_000, times=(LayerTime("g", 0.001),))
        for i in range(3)
    ]
    inst = PartitionInstance(layers, [Device("d0", "g", GB), Device("d1", "g", GB)])
    (short,) = explain_infeasible(inst)
    assert short["kind"] == "contiguous_split" and short["name"] == "l2..l2"
    result = solve(inst, SolveOptions(time_limit_s=5, backend="milp", threads=1))
    assert result.status == SolutionStatus.INFEASIBLE
    assert "layers l2..l2" in result.message


def _placement(*args: str) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "placement"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=120)


def test_command_line_end_to_end(tmp_path: Path) -> None:
    inst_file, sol_file = tmp_path / "p.json", tmp_path / "s.json"
    out = _placement(
        "generate",
        "partition",
        "--layers",
        "20",
        "--devices",
        "4",
        "--seed",
        "3",
        "--device-types",
        "A100,T4",
        "--out",
        str(inst_file),
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(inst_file.read_text())
    assert "placement generate partition --layers 20" in data["description"]
    out = _placement(
        "solve", str(inst_file), "--time-limit", "10", "--backend", "milp", "--out", str(sol_file)
    )
    assert out.returncode == 0, out.stderr
    assert "optimal" in out.stdout
    out = _placement("check", str(inst_file), str(sol_file))
    assert out.returncode == 0 and "feasible    yes" in out.stdout
    assignments = json.loads(sol_file.read_text())["partition"]["assignments"]
    assert len(assignments) == 20
    png = tmp_path / "stages.png"
    out = _placement("plot", str(inst_file), str(sol_file), "--out", str(png))
    assert out.returncode == 0, out.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line_names_bad_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"partition": {**BASE, "layers": [{"name": ""}]}}))
    out = _placement("solve", str(bad))
    assert out.returncode == 2
    assert "partition.layers[0].name" in out.stderr and "Traceback" not in out.stderr


def test_explains_too_few_micro_batches_in_flight() -> None:
    inst = generate(60, 8, 3, mode=Mode.SERVING, device_types=("L4", "T4"))
    inst.workload = replace(inst.workload, in_flight_microbatches=2)
    result = solve(inst, SolveOptions(time_limit_s=5, threads=1))
    assert result.status == SolutionStatus.INFEASIBLE
    assert "needs at least 3 stages (devices), in_flight_microbatches = 2" in result.message


@pytest.mark.parametrize("name", ["tiny-chain", "dag-40x6", "serving-60x8"])
def test_bundled_instances_load_and_solve(repo: Path, name: str) -> None:
    from placement.api.files import read_instance

    loaded = read_instance(repo / "instances" / "partition" / f"{name}.json")
    assert "placement generate partition" in loaded.description
    result = solve(loaded.instance, SolveOptions(time_limit_s=10, threads=1))
    assert result.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE)
    assert result.bound is not None and result.bound <= result.objective + 1e-9


def test_too_long_for_the_dp_falls_back_to_heuristics() -> None:
    inst = generate(6000, 2, seed=1, memory_fill=0.02)
    result = solve(inst, SolveOptions(time_limit_s=10, threads=1))
    assert result.status == SolutionStatus.FEASIBLE
    assert result.stop_reason == StopReason.SEARCH_EXHAUSTED
    assert "too many stages to model" in result.message
    assert result.bound is not None and result.bound <= result.objective


@pytest.mark.parametrize("seed", range(3))
def test_slowest_link_model_never_reports_its_own_bound(seed: int) -> None:
    # Several link speeds: CP-SAT optimises over the slowest link, whose objective
    # over-estimates the real one; a bound CP-SAT proves on that model is no bound on the
    # instance. Small enough that CP-SAT proves its model, so a leaked bound would show.
    inst = generate(12, 4, seed=seed, dag=True, device_types=("A100", "T4"), devices_per_node=2)
    result = solve(inst, SolveOptions(time_limit_s=10, backend="cpsat", threads=2))
    assert "slowest link" in result.message
    assert result.bound is None or result.bound <= result.objective + 1e-9
    for step in result.history:
        assert step.bound is None or step.bound <= result.objective + 1e-9
