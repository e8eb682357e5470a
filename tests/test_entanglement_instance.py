"""Bad entanglement input is an InputError naming the field path and the expected value,
from files and from code; the command line turns it into one line and exit code 2."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from placement.models.entanglement import QuantumLink, QuantumNode, Request
from placement.models.entanglement.instance import (
    EntanglementInstance,
    instance_from_dict,
)
from placement.solver.errors import InputError
from placement.solver.family import validate

CLI = [sys.executable, "-m", "placement.api.cli"]


def tiny() -> dict[str, Any]:
    return {
        "nodes": [
            {"name": "A", "qubits": 4},
            {"name": "B", "qubits": 8, "swapSuccess": 0.9},
            {"name": "C", "qubits": 4},
        ],
        "links": [
            {"a": "A", "b": "B", "channels": 3, "success": 0.6},
            {"a": "B", "b": "C", "channels": 3, "lengthKm": 50.0},
        ],
        "requests": [{"name": "r", "source": "A", "destination": "C", "minFidelity": 0.5}],
        "attenuationPerKm": 0.01,
    }


def test_a_good_instance_resolves_success_from_length() -> None:
    instance = instance_from_dict(tiny())
    assert instance.links[0].success == 0.6
    assert instance.links[1].success == pytest.approx(0.6065306597, rel=1e-9)
    assert instance.nodes[0].swap_success == 1.0
    assert instance.candidate_paths == 8 and instance.objective == "throughput"


def _set(data: dict[str, Any], path: list[Any], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


BAD = [
    (["nodes", 1, "qubits"], -1, "entanglement.nodes[1].qubits"),
    (["nodes", 1, "swapSuccess"], 1.5, "entanglement.nodes[1].swap_success"),
    (["nodes", 2, "name"], "A", "entanglement.nodes[2].name"),
    (["links", 0, "b"], "Z", "entanglement.links[0].b"),
    (["links", 0, "b"], "A", "entanglement.links[0].b"),
    (["links", 0, "channels"], 0, "entanglement.links[0].channels"),
    (["links", 0, "success"], 0.0, "entanglement.links[0].success"),
    (["links", 0, "fidelity"], 0.2, "entanglement.links[0].fidelity"),
    (["links", 1, "lengthKm"], -3.0, "entanglement.links[1].length_km"),
    (["requests", 0, "destination"], "A", "entanglement.requests[0].destination"),
    (["requests", 0, "source"], "nowhere", "entanglement.requests[0].source"),
    (["requests", 0, "weight"], 0.0, "entanglement.requests[0].weight"),
    (["requests", 0, "minFidelity"], 1.2, "entanglement.requests[0].min_fidelity"),
    (["requests", 0, "demand"], -1.0, "entanglement.requests[0].demand"),
    (["objective"], "fastest", "entanglement.objective"),
    (["candidatePaths"], 0, "entanglement.candidate_paths"),
    (["attenuationPerKm"], -0.1, "entanglement.attenuation_per_km"),
]


@pytest.mark.parametrize(("where", "value", "path"), BAD, ids=[b[2] for b in BAD])
def test_bad_fields_are_named(where: list[Any], value: Any, path: str) -> None:
    with pytest.raises(InputError) as err:
        instance_from_dict(_set(tiny(), where, value))
    assert path in [e.path for e in err.value.errors]


def test_duplicate_link_is_refused() -> None:
    data = tiny()
    data["links"].append({"a": "B", "b": "A", "channels": 1, "success": 0.5})
    with pytest.raises(InputError) as err:
        instance_from_dict(data)
    assert err.value.errors[0].path == "entanglement.links[2]"


def test_instances_built_in_code_are_validated() -> None:
    bad = EntanglementInstance(
        [QuantumNode("A", 2), QuantumNode("B", 2)],
        [QuantumLink(0, 7, 1, 0.5)],
        [Request("r", 0, 1)],
    )
    with pytest.raises(InputError) as err:
        validate(bad)
    assert err.value.errors[0].path == "entanglement.links[0].b"


def test_cli_reports_a_bad_file_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    data = {"name": "bad", "entanglement": _set(tiny(), ["links", 0, "channels"], -2)}
    path.write_text(json.dumps(data))
    proc = subprocess.run([*CLI, "solve", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "entanglement.links[0].channels" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_generate_solve_check_plot(tmp_path: Path) -> None:
    inst, sol, png = tmp_path / "i.json", tmp_path / "s.json", tmp_path / "s.png"
    run = [
        [
            *CLI,
            "generate",
            "entanglement",
            "--nodes",
            "25",
            "--pairs",
            "3",
            "--seed",
            "2",
            "--out",
            str(inst),
        ],
        [
            *CLI,
            "solve",
            str(inst),
            "--backend",
            "milp",
            "--threads",
            "1",
            "--time-limit",
            "5",
            "--out",
            str(sol),
            "-q",
        ],
        [*CLI, "check", str(inst), str(sol)],
        [*CLI, "plot", str(inst), str(sol), "--out", str(png)],
    ]
    for cmd in run:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (cmd, proc.stderr)
    solution = json.loads(sol.read_text())["entanglement"]
    assert solution["paths"]
    assert all(p["expected_throughput"] > 0 for p in solution["paths"])
    assert png.stat().st_size > 0
