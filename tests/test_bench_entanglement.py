"""The entanglement family's benchmark suites run end to end (``placement bench NAME
--quick`` as a real process), and a broken routing is counted as invalid."""

from __future__ import annotations

import csv
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from placement.api.bench import recheck
from placement.models.entanglement import EntanglementSolution
from placement.models.entanglement.bench import _Checked
from placement.models.entanglement.generate import generate
from placement.models.entanglement.greedy import qcast_greedy
from tests.conftest import SHARED_BENCHMARKS

SUITES = {
    # suite: (its public data under ../shared/benchmarks or None, a line of its table)
    "entanglement-qcast": (None, "| n | p | seed | k | Q-CAST EXT |"),
    "entanglement-topologies": ("quantum/topologies", "| topology | min fidelity |"),
}


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_quick_run(suite: str, tmp_path: Path) -> None:
    data, table = SUITES[suite]
    if data is not None and not (SHARED_BENCHMARKS / data).is_dir():
        pytest.skip(f"public benchmark data not found at {SHARED_BENCHMARKS / data}")
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "bench",
            suite,
            "--quick",
            "--quiet",
            "--out",
            str(out),
            "--data",
            str(SHARED_BENCHMARKS),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"reproduce with: placement bench {suite} --quick" in proc.stderr
    rows = list(csv.DictReader((out / f"{suite}.csv").open()))
    assert rows
    assert all(int(r["invalid"]) == 0 for r in rows), rows
    assert sum(int(r["solutions_checked"]) for r in rows) > 0
    md = (out / f"{suite}.md").read_text()
    assert f"    placement bench {suite} --quick\n" in md
    assert table in md
    assert "checker rejected: **0**" in md
    if suite == "entanglement-qcast":
        # The three tables and the plot of the sweeps.
        for title in ("(default)", "(sweep-n)", "(sweep-p)"):
            assert title in md
        png = out / "entanglement-qcast-sweeps.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png.name})" in md


def test_broken_routing_is_counted_invalid() -> None:
    instance = generate(nodes=20, pairs=3, seed=0, candidate_paths=2)
    good = qcast_greedy(instance)
    assert good.paths
    first = good.paths[0]
    # More channels than any link has (the generator gives 3-7 per link).
    wide = dataclasses.replace(first, width=50)
    broken = EntanglementSolution(paths=(wide, *good.paths[1:]))
    report, invalid = recheck("entanglement", instance, broken)
    assert invalid == 1 and not report.feasible
    assert recheck("entanglement", instance, good)[1] == 0
    checked = _Checked()
    checked(instance, good)
    checked(instance, broken)
    assert checked.columns() == {"solutions_checked": 2, "invalid": 1}
