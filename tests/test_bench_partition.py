"""The partition family's benchmark suites run end to end (``placement bench NAME --quick``
as a real process), and a broken solution is counted as invalid."""

from __future__ import annotations

from placement.benchmarks.runner import Rechecker, recheck
from placement.models.partition import PartitionSolution
from tests.optima import instance as case_instance


def test_broken_solution_is_counted_invalid() -> None:
    instance = case_instance(
        "partition", "memory_forces_split"
    )  # three 1 GB layers, devices of 2 GB each
    broken = PartitionSolution(device_of=(1, 1, 1))  # 3 GB on one device
    report, invalid = recheck("partition", instance, broken)
    assert invalid == 1 and not report.feasible
    good = PartitionSolution(device_of=(1, 1, 0))
    assert recheck("partition", instance, good)[1] == 0
    checked = Rechecker("partition")
    checked(instance, good)
    checked(instance, broken)
    checked(instance, None)  # no solution: nothing to check
    assert checked.columns() == {"solutions_checked": 2, "invalid": 1}
