"""The DAG family's benchmark suites: each ``placement bench NAME --quick`` runs as a real
subprocess and writes its CSV and Markdown with no invalid solution; the checker behind the
``invalid`` column rejects a broken schedule."""

from __future__ import annotations

import csv
import subprocess
import sys

import numpy as np
import pytest

from placement.api.bench import recheck, suites
from placement.models.dag.greedy import heft
from placement.models.dag.instance import DagSolution
from tests import dag_cases
from tests.conftest import REPO, SHARED_BENCHMARKS

DAG_SUITES = [
    "dag-topcuoglu",
    "dag-stg",
    "dag-stg-verify",
    "grid-braun",
    "dag-wfcommons",
    "dag-scale",
]


def test_every_dag_suite_is_registered() -> None:
    registered = {name for name, suite in suites().items() if suite.family == "dag"}
    assert registered == set(DAG_SUITES)


@pytest.mark.parametrize("name", DAG_SUITES)
def test_quick_run(name: str, tmp_path) -> None:
    suite = suites()[name]
    if suite.data is not None and not (SHARED_BENCHMARKS / suite.data).is_dir():
        pytest.skip(f"public benchmark data not found at {SHARED_BENCHMARKS / suite.data}")
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "placement.api.cli",
            "bench",
            name,
            "--quick",
            "--quiet",
            "--out",
            str(out),
            "--data",
            str(SHARED_BENCHMARKS),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    with open(out / f"{name}.csv", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    assert all(row["invalid"] == "0" for row in rows), rows
    md = (out / f"{name}.md").read_text(encoding="utf-8")
    assert f"placement bench {name} --quick" in md
    assert "checker rejected: **0**" in md
    assert "|---|" in md
    assert "case(s) failed" not in md
    for line in md.splitlines():
        if line.startswith("![") and "](" in line:
            assert (out / line.split("](")[1].rstrip(")")).is_file(), line


def test_recheck_counts_a_broken_schedule() -> None:
    """a -> b ships 5 bytes between machines; HEFT's schedule passes, the same schedule with b
    started at 0 (before a ends) is rejected and counted as one invalid solution."""
    instance = dag_cases.chain_with_transfer()
    good = heft(instance)
    report, invalid = recheck("dag", instance, good)
    assert report.feasible and invalid == 0
    broken = DagSolution(good.machine.copy(), np.array([0.0, 0.0]))
    report, invalid = recheck("dag", instance, broken)
    assert not report.feasible
    assert invalid == 1
    assert recheck("dag", instance, None) == (None, 0)
