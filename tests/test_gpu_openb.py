"""The instance schema expresses the Alibaba openb trace (fractional GPUs, GPU types, CPU, memory)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from placement.models.gpu import check
from placement.models.gpu.formats.openb import load_openb
from placement.solver import InputError, SolveOptions, solve

NODES = "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\nn1,96000,393216,8,V100M32\nc0,32000,65536,0,\n"
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
    "p-frac,6000,12288,1,460,,LS,Running,0,1,0\n"
    "p-whole,12000,16384,4,1000,V100M32,LS,Running,0,1,0\n"
    "p-cpu,4000,4096,0,0,,BE,Running,0,1,0\n"
    "p-typed,2000,2048,1,1000,A10|T4,LS,Running,0,1,0\n"
)


def _write(tmp_path: Path, nodes: str = NODES, pods: str = PODS) -> tuple[Path, Path]:
    (tmp_path / "nodes.csv").write_text(nodes)
    (tmp_path / "pods.csv").write_text(pods)
    return tmp_path / "nodes.csv", tmp_path / "pods.csv"


def test_pod_kinds_map_to_jobs(tmp_path: Path) -> None:
    inst = load_openb(*_write(tmp_path))
    kinds = {j.name: (j.kind, j.gpus, j.gpu_milli, j.gpu_types) for j in inst.jobs}
    assert kinds == {
        "p-frac": ("fractional", 0, 460, ()),
        "p-whole": ("whole", 4, 0, ("V100M32",)),
        "p-cpu": ("cpu", 0, 0, ()),
        "p-typed": ("whole", 1, 0, ("A10", "T4")),
    }
    result = solve(inst, SolveOptions(time_limit_s=5))
    placed = {inst.jobs[j].name for j in result.solution.placed_jobs()}
    assert placed == {"p-frac", "p-whole", "p-cpu"}  # no A10 or T4 node for p-typed
    (reason,) = result.unplaced
    assert reason["name"] == "p-typed" and reason["kind"] == "infeasible_alone"


def test_bad_value_names_file_line_and_column(tmp_path: Path) -> None:
    paths = _write(tmp_path, pods=PODS.replace("p-cpu,4000", "p-cpu,lots"))
    with pytest.raises(InputError) as info:
        load_openb(*paths)
    assert info.value.file.endswith("pods.csv")
    assert info.value.errors[0].path == "line 4.cpu_milli"


def test_the_real_trace_loads_and_solves(shared_benchmarks: Path) -> None:
    folder = shared_benchmarks / "gpu" / "openb"
    inst = load_openb(
        folder / "openb_node_list_gpu_node.csv", folder / "openb_pod_list_default.csv"
    )
    assert len(inst.nodes) == 1213 and inst.total_gpus == 6212 and len(inst.jobs) == 8152
    assert sum(j.kind == "fractional" for j in inst.jobs) > 0
    result = solve(inst, SolveOptions(backend="greedy"))
    assert check(inst, result.solution).feasible


def test_import_command_writes_an_instance_file(tmp_path: Path) -> None:
    from tests.test_cli import run

    nodes, pods = _write(tmp_path)
    out = tmp_path / "openb.json"
    proc = run("import", "openb", nodes, pods, "--out", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [j["name"] for j in data["gpu"]["jobs"]] == ["p-frac", "p-whole", "p-cpu", "p-typed"]
    solved = run("solve", out, "--time-limit", "5", "--quiet", cwd=tmp_path)
    assert solved.returncode == 0, solved.stderr

    bad = tmp_path / "bad.csv"
    bad.write_text(PODS.replace("p-cpu,4000", "p-cpu,lots"))
    proc = run("import", "openb", nodes, bad, cwd=tmp_path)
    assert proc.returncode == 2
    assert "bad.csv: line 4.cpu_milli" in proc.stderr and "Traceback" not in proc.stderr
