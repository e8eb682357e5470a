"""The DAG family's benchmark suites: each ``placement bench NAME --quick`` runs as a real
subprocess and writes its CSV and Markdown with no invalid solution; the checker behind the
``invalid`` column rejects a broken schedule."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from placement.benchmarks.dag.stg import cases_stg
from placement.benchmarks.dag.wfcommons import cases_wfcommons
from placement.benchmarks.runner import BenchConfig, recheck, suites
from placement.models.dag.greedy import heft
from placement.models.dag.instance import DagSolution
from tests.optima import instance as case_instance
from tests.test_bench import placement

DAG_SUITES = [
    "dag-topcuoglu",
    "dag-stg",
    "dag-stg-verify",
    "grid-braun",
    "grid-large",
    "grid-hcsp",
    "dag-wfcommons",
    "dag-scale",
]


def test_every_dag_suite_is_registered() -> None:
    registered = {name for name, suite in suites().items() if suite.family == "dag"}
    assert registered == set(DAG_SUITES)


def test_recheck_counts_a_broken_schedule() -> None:
    """a -> b ships 5 bytes between machines; HEFT's schedule passes, the same schedule with b
    started at 0 (before a ends) is rejected and counted as one invalid solution."""
    instance = case_instance("dag", "chain")
    good = heft(instance)
    report, invalid = recheck("dag", instance, good)
    assert report.feasible and invalid == 0
    broken = DagSolution(good.machine.copy(), np.array([0.0, 0.0]))
    report, invalid = recheck("dag", instance, broken)
    assert not report.feasible
    assert invalid == 1
    assert recheck("dag", instance, None) == (None, 0)


def test_cases_filter_keeps_the_matching_cases(shared_benchmarks: Path) -> None:
    """``--param cases=PATTERN,...`` (shell patterns on the case id) selects the decisive
    cases of dag-stg and dag-wfcommons; no pattern keeps them all; a pattern that matches
    nothing keeps none."""

    def config(quick: bool = False, **params: object) -> BenchConfig:
        return BenchConfig("x", 10.0, quick, Path("."), shared_benchmarks, params=params)

    every = cases_stg(config())
    assert len(every) == 1440
    chosen = cases_stg(config(cases=("50/rand0093.stg/2", "100/rand002[02].stg/*")))
    assert sorted(c["case"] for c in chosen) == sorted(
        ["50/rand0093.stg/2"]
        + [f"100/rand00{g}.stg/{m}" for g in ("20", "22") for m in (2, 4, 8, 16)]
    )
    # --quick: the public srasearch on the default set only (no import of wfcommons).
    assert len(cases_wfcommons(config(True))) == 1
    assert cases_wfcommons(config(True, cases=("srasearch*@default",))) == cases_wfcommons(
        config(True)
    )
    assert cases_wfcommons(config(True, cases=("srasearch*@seed 1", "1000genome*"))) == []


def test_grid_large_highs_after_runs_highs_alone_from_our_schedule(tmp_path: Path) -> None:
    """``--param highs_after=S``: HiGHS alone from our schedule, in a real process. Its
    schedule is checked, never worse than ours (our schedule is its start), its bound at most
    its schedule; the report gets its table and the reproduce command the setting."""
    proc = placement(
        "bench",
        "grid-large",
        "--quick",
        "--time-limit",
        "2",
        "--param",
        "highs_after=1",
        "--out",
        str(tmp_path),
        "-q",
    )
    assert proc.returncode == 0, proc.stderr
    with (tmp_path / "grid-large.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2
    for r in rows:
        assert r["invalid"] == "0"
        ours, h_ours, h_bound = (
            float(r[c]) for c in ("ours", "highs_alone_ours", "highs_alone_bound")
        )
        assert h_ours <= ours + 1e-9 and h_bound <= h_ours + 1e-6
        assert int(r["highs_alone_nodes"]) >= 0
    text = (tmp_path / "grid-large.md").read_text()
    assert "Then HiGHS alone" in text and "--param highs_after=1" in text
    # Without the setting the columns are not there.
    proc = placement(
        "bench", "grid-large", "--quick", "--time-limit", "2", "--out", str(tmp_path / "b"), "-q"
    )
    assert proc.returncode == 0, proc.stderr
    with (tmp_path / "b" / "grid-large.csv").open(newline="") as fh:
        assert "highs_alone_ours" not in next(csv.DictReader(fh))
