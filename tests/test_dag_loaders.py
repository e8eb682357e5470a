"""Every DAG loader on a tiny inline sample of its format, with a clear error on a malformed
one; the public files through ``placement import`` (a real process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.dag.check import check
from placement.models.dag.formats.loaders import (
    load_braun,
    load_stg,
    load_topcuoglu,
    load_wfcommons,
)
from placement.models.dag.greedy import min_min
from placement.solver.errors import InputError

STG = """3
0 0 0
1 4 1 0
2 3 1 0
3 5 2 1 2
4 0 1 3
# a comment
"""

BRAUN = "2 2 0\n1.5\n3\n2\n4.5\n"

TOPCUOGLU_EXEC = "TP,P_0,P_1\nT_0,2,3\nT_1,2,1\n"
TOPCUOGLU_EDGES = "T,T0,T1\nT0,0,5\nT1,0,0\n"

WF_14 = {
    "schemaVersion": "1.4",
    "workflow": {
        "tasks": [
            {
                "name": "a",
                "parents": [],
                "runtimeInSeconds": 10.0,
                "files": [{"link": "output", "name": "f1", "sizeInBytes": 1000}],
            },
            {
                "name": "b",
                "parents": ["a"],
                "runtimeInSeconds": 4,
                "files": [
                    {"link": "input", "name": "f1", "sizeInBytes": 1000},
                    {"link": "input", "name": "raw", "sizeInBytes": 50},
                ],
            },
        ]
    },
}

WF_15 = {
    "schemaVersion": "1.5",
    "workflow": {
        "specification": {
            "tasks": [
                {"id": "a", "parents": [], "inputFiles": [], "outputFiles": ["f1"]},
                {"id": "b", "parents": ["a"], "inputFiles": ["f1"], "outputFiles": []},
            ],
            "files": [{"id": "f1", "sizeInBytes": 2000}],
        },
        "execution": {
            "tasks": [{"id": "a", "runtimeInSeconds": 3}, {"id": "b", "runtimeInSeconds": 1}]
        },
    },
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_stg(tmp_path: Path) -> None:
    instance = load_stg(_write(tmp_path, "g.stg", STG), processors=2)
    assert len(instance.tasks) == 5 and len(instance.machines) == 2
    assert [(e.parent, e.child) for e in instance.edges] == [
        ("t0", "t1"),
        ("t0", "t2"),
        ("t1", "t3"),
        ("t2", "t3"),
        ("t3", "t4"),
    ]
    assert instance.tasks[3].work == 5


@pytest.mark.parametrize(
    "text,where",
    [
        ("3\n0 0 0\n1 4 1 0\n", "line 1"),  # too few task lines
        (STG.replace("2 3 1 0", "2 x 1 0"), "line 4"),
        (STG.replace("3 5 2 1 2", "3 5 2 1 7"), "line 5"),  # predecessor not earlier
    ],
)
def test_stg_malformed(tmp_path: Path, text: str, where: str) -> None:
    path = _write(tmp_path, "bad.stg", text)
    with pytest.raises(InputError) as err:
        load_stg(path, processors=2)
    assert str(path) in str(err.value) and where in str(err.value)


def test_braun(tmp_path: Path) -> None:
    instance = load_braun(_write(tmp_path, "u_x.0", BRAUN))
    assert instance.duration.tolist() == [[1.5, 3.0], [2.0, 4.5]]
    assert instance.independent


@pytest.mark.parametrize("text", ["2 2 0\n1\n2\n3\n", "2 2 0\n1\n2\n-3\n4\n", "two 2\n"])
def test_braun_malformed(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, "bad.0", text)
    with pytest.raises(InputError) as err:
        load_braun(path)
    assert str(path) in str(err.value) and "line" in str(err.value)


def test_topcuoglu(tmp_path: Path) -> None:
    instance = load_topcuoglu(
        _write(tmp_path, "e.csv", TOPCUOGLU_EXEC), _write(tmp_path, "d.csv", TOPCUOGLU_EDGES)
    )
    assert instance.duration.tolist() == [[2.0, 3.0], [2.0, 1.0]]
    assert [(e.parent, e.child, e.data_bytes) for e in instance.edges] == [("T_0", "T_1", 5.0)]


def test_topcuoglu_malformed(tmp_path: Path) -> None:
    path = _write(tmp_path, "e.csv", TOPCUOGLU_EXEC.replace("T_1,2,1", "T_1,2"))
    with pytest.raises(InputError) as err:
        load_topcuoglu(path, _write(tmp_path, "d.csv", TOPCUOGLU_EDGES))
    assert str(path) in str(err.value) and "line 3" in str(err.value)


@pytest.mark.parametrize("data,data_bytes", [(WF_14, 1000.0), (WF_15, 2000.0)])
def test_wfcommons(tmp_path: Path, data: dict, data_bytes: float) -> None:
    instance = load_wfcommons(_write(tmp_path, "w.json", json.dumps(data)))
    assert [t.name for t in instance.tasks] == ["a", "b"]
    assert [(e.parent, e.child, e.data_bytes) for e in instance.edges] == [("a", "b", data_bytes)]
    assert len({m.type for m in instance.machines}) >= 3 and len(instance.zones) == 2


def test_wfcommons_malformed(tmp_path: Path) -> None:
    bad = json.loads(json.dumps(WF_14))
    bad["workflow"]["tasks"][1]["runtimeInSeconds"] = "slow"
    path = _write(tmp_path, "w.json", json.dumps(bad))
    with pytest.raises(InputError) as err:
        load_wfcommons(path)
    assert str(path) in str(err.value) and "workflow.tasks[1].runtimeInSeconds" in str(err.value)
    path = _write(tmp_path, "v.json", '{"workflow": ')
    with pytest.raises(InputError) as err:
        load_wfcommons(path)
    assert "line 1" in str(err.value)


def test_generated_machine_sets_are_seeded_and_heterogeneous() -> None:
    """Three types, two zones, the drawn speeds and slots in range, the same set for the same
    seed and another for another seed."""
    from placement.models.dag.generate import (
        MACHINE_SET_SLOTS,
        MACHINE_SET_SPEEDS,
        machine_set,
    )

    for seed in range(20):
        machines, links = machine_set(seed, 8)
        assert len(machines) == 8 and len({m.name for m in machines}) == 8
        assert {m.type for m in machines} == set(MACHINE_SET_SPEEDS)
        assert {m.zone for m in machines} == {"a", "b"}
        for m in machines:
            low, high = MACHINE_SET_SPEEDS[m.type]
            assert low - 1e-3 <= m.speed <= high + 1e-3 and m.slots in MACHINE_SET_SLOTS
        assert {(lk.from_zone, lk.to_zone) for lk in links} == {("a", "a"), ("b", "b"), ("a", "b")}
    assert machine_set(4) == machine_set(4) and machine_set(4) != machine_set(5)
    assert len(machine_set(1, 3)[0]) == 3
    with pytest.raises(InputError, match="machines: got 2, expected an integer >= 3"):
        machine_set(1, 2)


def test_wfcommons_on_a_generated_machine_set(tmp_path: Path) -> None:
    """``placement import wfcommons --machine-seed`` (a real process) writes the generated set
    and says how to reproduce it; a bad machine count is a one-line error."""
    from placement.models.dag.generate import machine_set

    path = _write(tmp_path, "w.json", json.dumps(WF_14))
    out = tmp_path / "instance.json"
    cmd = [sys.executable, "-m", "placement.api.cli", "import", "wfcommons", str(path)]
    proc = subprocess.run(
        [*cmd, "--machine-seed", "7", "--out", str(out)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    machines, _ = machine_set(7)
    assert [m["name"] for m in data["dag"]["machines"]] == [m.name for m in machines]
    assert [m["speed"] for m in data["dag"]["machines"]] == [m.speed for m in machines]
    assert data["description"].endswith("--machine-seed 7 --machines 8")
    proc = subprocess.run(
        [*cmd, "--machine-seed", "7", "--machines", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "machines: got 2, expected an integer >= 3" in proc.stderr


def test_braun_min_min_matches_the_published_reference(shared_benchmarks: Path) -> None:
    """Min-Min on u_i_hilo.0: 80,755.7 (the data README's independently computed value)."""
    instance = load_braun(shared_benchmarks / "grid" / "braun-512x16" / "u_i_hilo.0")
    assert check(instance, min_min(instance)).objective == pytest.approx(80755.7, abs=0.05)


@pytest.mark.parametrize(
    "argv",
    [
        ["stg", "dag/stg/50/rand0000.stg", "--processors", "4"],
        ["braun", "grid/braun-512x16/u_c_lolo.0"],
        ["wfcommons", "dag/wfcommons/cycles-chameleon-1l-1c-9p-001.json"],
        ["topcuoglu", "dag/topcuoglu-2002/exec_time.csv", "dag/topcuoglu-2002/edges_data.csv"],
    ],
)
def test_placement_import_public_files(
    shared_benchmarks: Path, tmp_path: Path, argv: list[str]
) -> None:
    args = [a if a.startswith("-") or "/" not in a else str(shared_benchmarks / a) for a in argv]
    out = tmp_path / "instance.json"
    proc = subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "import", *args, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["dag"]["tasks"] and data["dag"]["machines"]


def test_placement_import_reports_a_malformed_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "bad.stg", "3\n0 0 0\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "import",
            "stg",
            str(path),
            "--processors",
            "2",
            "--out",
            str(tmp_path / "o.json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert str(path) in proc.stderr and "Traceback" not in proc.stderr
