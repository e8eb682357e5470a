"""The partition family's benchmark suites run end to end (``placement bench NAME --quick``
as a real process), and a broken solution is counted as invalid."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from placement.api.bench import recheck
from placement.models.partition import PartitionSolution
from placement.models.partition.bench import _Checked
from tests.conftest import SHARED_BENCHMARKS
from tests.partition_cases import memory_forces_split

SUITES = {
    # suite: (its public data under ../shared/benchmarks or None, a line of its table)
    "partition-tarnawski": ("partition/tarnawski-layergraphs", "| workload | layers"),
    "partition-llm": ("partition/llm-configs", "| placement | tokens/s |"),
    "partition-chain": (None, "| layers | devices | seed |"),
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


def test_broken_solution_is_counted_invalid() -> None:
    instance = memory_forces_split()  # three 1 GB layers, devices of 2 GB each
    broken = PartitionSolution(device_of=(1, 1, 1))  # 3 GB on one device
    report, invalid = recheck("partition", instance, broken)
    assert invalid == 1 and not report.feasible
    good = PartitionSolution(device_of=(1, 1, 0))
    assert recheck("partition", instance, good)[1] == 0
    checked = _Checked()
    checked(instance, good)
    checked(instance, broken)
    checked(instance, None)  # no solution: nothing to check
    assert checked.columns() == {"solutions_checked": 2, "invalid": 1}
