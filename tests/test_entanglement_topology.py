"""GML / GraphML loaders on the public topologies (skipped where the data is absent), and
their errors on bad files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from placement.models.entanglement import check
from placement.models.entanglement.formats.topology_zoo import haversine_km, load_topology
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.errors import InputError


def test_haversine_amsterdam_to_paris() -> None:
    # About 430 km great-circle.
    assert haversine_km(52.3676, 4.9041, 48.8566, 2.3522) == pytest.approx(430, abs=10)


def test_surfnet_loads_with_haversine_lengths(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / "quantum" / "topologies" / "Surfnet.gml"
    instance = load_topology(path, pairs=5, seed=1, min_fidelity=0.9)
    assert len(instance.nodes) == 50
    assert min(lk.length_km for lk in instance.links) > 0
    assert max(lk.length_km for lk in instance.links) < 300  # the Netherlands
    result = solve(instance, SolveOptions(time_limit_s=10, backend="milp", threads=1))
    assert check(instance, result.solution).feasible
    # Every usable path of a fidelity-bounded request is a candidate here: a real proof.
    assert result.status == SolutionStatus.OPTIMAL
    kinds = {u["kind"] for u in result.unplaced}
    assert kinds <= {"fidelity_unreachable", "crowded_out", "no_path"}
    for u in result.unplaced:
        if u["kind"] == "fidelity_unreachable":
            assert u["best_fidelity"] < 0.9


def test_graphml_without_coordinates_needs_a_default_length(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / "quantum" / "topologies" / "Geant2012.graphml"
    with pytest.raises(InputError) as err:
        load_topology(path)
    assert err.value.file == str(path)
    assert "default link length" in str(err.value)
    instance = load_topology(path, default_length_km=40.0)
    assert len(instance.nodes) == 40
    assert {lk.length_km for lk in instance.links} == {40.0}


def test_bad_files_are_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gml"
    broken.write_text("graph [ node [ id 0 ")
    with pytest.raises(InputError) as err:
        load_topology(broken)
    assert err.value.file == str(broken)
    with pytest.raises(InputError):
        load_topology(tmp_path / "missing.graphml")
    other = tmp_path / "net.txt"
    other.write_text("x")
    with pytest.raises(InputError):
        load_topology(other)


def test_cli_import_quantum_topology(shared_benchmarks: Path, tmp_path: Path) -> None:
    src = shared_benchmarks / "quantum" / "topologies" / "Surfnet.gml"
    out = tmp_path / "surfnet.json"
    cmd = [sys.executable, "-m", "placement.api.cli", "import", "quantum-topology", str(src)]
    proc = subprocess.run(
        [*cmd, "--pairs", "4", "--out", str(out)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 0


def test_every_public_topology_loads(shared_benchmarks: Path) -> None:
    # GML and GraphML, directed and multi-graphs, with and without coordinates.
    folder = shared_benchmarks / "quantum" / "topologies"
    files = sorted(folder.glob("*.gml")) + sorted(folder.glob("*.graphml"))
    assert len(files) >= 2
    for path in files:
        instance = load_topology(path, pairs=3, default_length_km=50.0)
        assert len(instance.links) > 0, path
        assert len({n.name for n in instance.nodes}) == len(instance.nodes)
