"""The DAG family's benchmark suites: each ``placement bench NAME --quick`` runs as a real
subprocess and writes its CSV and Markdown with no invalid solution; the checker behind the
``invalid`` column rejects a broken schedule."""

from __future__ import annotations

import numpy as np

from placement.benchmarks.runner import recheck, suites
from placement.models.dag.greedy import heft
from placement.models.dag.instance import DagSolution
from tests.optima import instance as case_instance

DAG_SUITES = [
    "dag-topcuoglu",
    "dag-stg",
    "dag-stg-verify",
    "grid-braun",
    "grid-large",
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
