"""DAG instances: validation naming the field path, the JSON round trip, the seeded
generators, and the command line end to end (generate, solve, check, plot)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from placement.api.files import read_instance
from placement.models.dag import FAMILY, DagInstance, DagMachine, DagTask
from placement.models.dag.braun import BraunClass, braun_matrix
from placement.models.dag.generate import etl_dag, grid_instance, random_dag
from placement.solver import SolveOptions, solve
from placement.solver.errors import InputError


def _file(tmp_path: Path, dag: dict) -> Path:
    path = tmp_path / "instance.json"
    path.write_text(json.dumps({"name": "x", "dag": dag}), encoding="utf-8")
    return path


BASE = {
    "machines": [{"name": "m0", "type": "cpu", "zone": "a"}, {"name": "m1", "type": "gpu"}],
    "links": [{"from_zone": "a", "to_zone": "default", "bandwidth_bytes_per_s": 1e9}],
    "tasks": [{"name": "t0", "work": 3}, {"name": "t1", "times": [{"type": "gpu", "seconds": 2}]}],
    "edges": [{"parent": "t0", "child": "t1", "data_bytes": 100}],
}


def _with(path: str, value) -> dict:
    data = json.loads(json.dumps(BASE))
    node = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if key.isdigit() else node[key]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    "change,path",
    [
        (("tasks.0.work", -1), "dag.tasks[0].work"),
        (("tasks.1.times.0.type", "tpu"), "dag.tasks[1].times[0].type"),
        (("tasks.0.cores", 0), "dag.tasks[0].cores"),
        (("machines.0.speed", 0), "dag.machines[0].speed"),
        (("edges.0.child", "nobody"), "dag.edges[0].child"),
        (("links", []), "dag.links"),
        (("tasks.0.data_pinned", True), "dag.tasks[0].data_pinned"),
        (("tasks.0.data_zone", "mars"), "dag.tasks[0].data_zone"),
        (("objective", "fastest"), "dag.objective"),
        (("objective", "cost"), "dag.makespan_limit_s"),
        (
            ("edges", [{"parent": "t0", "child": "t1"}, {"parent": "t1", "child": "t0"}]),
            "dag.edges",
        ),
        (("tasks.0.memory_mib", 10), None),  # fine: machines have unlimited memory
        (("machines.0.memory_mib", 1), None),
    ],
)
def test_bad_fields_are_named(tmp_path: Path, change, path) -> None:
    data = _with(*change)
    if path is None:
        read_instance(_file(tmp_path, data))
        return
    with pytest.raises(InputError) as err:
        read_instance(_file(tmp_path, data))
    assert path in str(err.value)
    assert "instance.json" in str(err.value)


def test_a_task_no_machine_can_run_is_refused(tmp_path: Path) -> None:
    data = _with("tasks.0.cores", 4)
    with pytest.raises(InputError) as err:
        read_instance(_file(tmp_path, data))
    assert "dag.tasks[0]" in str(err.value)


def test_built_in_code_is_validated_by_solve() -> None:
    instance = DagInstance(machines=[DagMachine("m")], tasks=[DagTask("t", work=-2)])
    with pytest.raises(InputError) as err:
        solve(instance, SolveOptions(time_limit_s=1))
    assert "dag.tasks[0].work" in str(err.value)


def test_json_round_trip(tmp_path: Path) -> None:
    instance = etl_dag(3, 2, 6, seed=4)
    data = FAMILY.instance_to_dict(instance)
    again = read_instance(_file(tmp_path, data)).instance
    assert FAMILY.instance_to_dict(again) == data


def test_generators_are_seeded() -> None:
    for make in (
        lambda s: random_dag(30, 4, seed=s, ccr=2.0),
        lambda s: etl_dag(4, 3, 6, seed=s),
        lambda s: grid_instance(40, 5, seed=s, consistency="semi"),
    ):
        assert FAMILY.instance_to_dict(make(1)) == FAMILY.instance_to_dict(make(1))
        assert FAMILY.instance_to_dict(make(1)) != FAMILY.instance_to_dict(make(2))
    etl = etl_dag(4, 3, 6, seed=0)
    assert {m.type for m in etl.machines} == {"fast", "std", "big"} and len(etl.zones) == 2
    assert any(t.data_zone for t in etl.tasks)


def test_grid_generator_draws_every_braun_class_and_scales_large_matrices() -> None:
    """The grid shape follows the one Braun protocol (braun.braun_matrix): each of the 12
    classes by consistency and heterogeneity; 1,024 x 32 hi-hi fits in ETC units (issue 41:
    the old guard wanted thousands); a unit so small that a schedule overflows CP-SAT's
    scaled times is refused naming ``unit`` and the least that fits."""
    rng_matrix = braun_matrix(np.random.default_rng(7), 48, 6, BraunClass("c", "lo", "lo"))
    lolo = grid_instance(48, 6, seed=7, consistency="consistent", heterogeneity="lolo")
    assert np.array_equal(lolo.duration, rng_matrix)
    assert lolo.duration.max() <= 100 * 10 and np.all(np.diff(lolo.duration, axis=1) >= 0)
    assert lolo.name == "grid-48x6-consistent-lolo-s7"
    semi = grid_instance(48, 6, seed=7, consistency="semi", heterogeneity="hilo").duration
    assert np.all(np.diff(semi[:, ::2], axis=1) >= 0) and semi.max() > 1000
    assert grid_instance(1024, 32, seed=0).duration.max() > 1e6
    with pytest.raises(InputError) as refused:
        grid_instance(64, 4, seed=0, unit=1e-7)
    assert refused.value.errors[0].path == "unit"
    least = float(refused.value.errors[0].expected.split()[2])
    assert 1e-7 < least < 1e-4
    scaled = grid_instance(1024, 32, seed=0, unit=1000.0)
    again = braun_matrix(np.random.default_rng(0), 1024, 32, BraunClass("i", "hi", "hi"))
    assert np.allclose(scaled.duration, again / 1000.0)
    with pytest.raises(InputError, match="heterogeneity"):
        grid_instance(8, 2, heterogeneity="hihihi")


def test_the_bundled_grid_instance_is_what_its_recorded_command_makes(tmp_path: Path) -> None:
    """Old generated files stay reproducible: the command in instances/dag/grid-64x8.json's
    description, run today, writes the same bytes."""
    bundled = Path(__file__).resolve().parents[1] / "instances" / "dag" / "grid-64x8.json"
    command = json.loads(bundled.read_text(encoding="utf-8"))["description"].split()
    assert command[:2] == ["placement", "generate"]
    (tmp_path / "instances" / "dag").mkdir(parents=True)
    proc = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", *command[1:]],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    written = tmp_path / "instances" / "dag" / "grid-64x8.json"
    assert written.read_bytes() == bundled.read_bytes()


def test_etl_generation_does_not_depend_on_the_string_hash_seed(tmp_path: Path) -> None:
    """Two processes with different PYTHONHASHSEED write the same file (the join parents were
    once iterated from a set, so their edge order and transfer sizes changed from run to run)."""
    texts = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"etl-{hash_seed}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "placement.api.cli", "generate", "dag", "--shape", "etl"]
            + ["--seed", "3", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        )
        assert proc.returncode == 0, proc.stderr
        texts.append(json.loads(out.read_text())["dag"])
    assert texts[0] == texts[1]


def test_cli_end_to_end(tmp_path: Path) -> None:
    """generate -> solve (CP-SAT) -> check -> plot, each a real process."""
    inst, sol, png = tmp_path / "i.json", tmp_path / "s.json", tmp_path / "g.png"

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "placement.api.cli", *argv],
            capture_output=True,
            text=True,
            timeout=60,
        )

    proc = run(
        "generate",
        "dag",
        "--shape",
        "etl",
        "--sources",
        "2",
        "--fan-out",
        "2",
        "--machines",
        "4",
        "--seed",
        "3",
        "--out",
        str(inst),
    )
    assert proc.returncode == 0, proc.stderr
    assert "--seed 3" in json.loads(inst.read_text())["description"]
    proc = run("solve", str(inst), "--time-limit", "5", "--threads", "1", "--out", str(sol), "-q")
    assert proc.returncode == 0, proc.stderr
    assert "makespan" in proc.stdout
    proc = run("check", str(inst), str(sol))
    assert proc.returncode == 0 and "feasible    yes" in proc.stdout, proc.stdout + proc.stderr
    proc = run("plot", str(inst), str(sol), "--out", str(png))
    assert proc.returncode == 0, proc.stderr
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
