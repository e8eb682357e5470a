"""The DAG checker accepts a correct schedule and rejects each kind of violation."""

from __future__ import annotations

import numpy as np
import pytest

from placement.models.dag import DagEdge, DagInstance, DagLink, DagMachine, DagSolution, DagTask
from placement.models.dag.check import check
from placement.solver.testing import round_trip as build


def _instance() -> DagInstance:
    """a (work 2) -> b (work 2, 3 bytes) on m0 | m1 (zone z0, 1 B/s inside) and m2 (2 slots,
    zone z1, 1 B/s + 1 s latency); c (work 1, reads 4 bytes in z1, deadline 20); w (2 cores)."""
    return build(
        DagInstance(
            machines=[
                DagMachine("m0", zone="z0"),
                DagMachine("m1", zone="z0"),
                DagMachine("m2", "big", slots=2, zone="z1"),
            ],
            tasks=[
                DagTask("a", 2),
                DagTask("b", 2),
                DagTask("c", 1, data_zone="z1", data_bytes=4, deadline_s=20),
                DagTask("w", 1, cores=2),
            ],
            edges=[DagEdge("a", "b", 3)],
            links=[
                DagLink("z0", "z0", 1.0),
                DagLink("z1", "z1", 1.0),
                DagLink("z0", "z1", 1.0, latency_s=1.0),
            ],
            makespan_limit_s=30,
        )
    )


def _solution(machines: list[int], starts: list[float]) -> DagSolution:
    return DagSolution(np.array(machines, dtype=np.int64), np.array(starts, dtype=float))


GOOD = ([0, 1, 2, 2], [0.0, 5.0, 0.0, 1.0])
"""a on m0 0-2; b on m1 from 2 + 3 = 5; c on m2 (its data is there) 0-1; w on m2 1-2."""


def test_accepts_a_correct_schedule() -> None:
    instance = _instance()
    report = check(instance, _solution(*GOOD))
    assert report.feasible, report.violations
    assert report.terms == {"makespan": 7.0}


@pytest.mark.parametrize(
    "machines,starts,kind",
    [
        ([0, 1, 2, -1], [0.0, 5.0, 0.0, 0.0], "missing"),
        ([0, 1, 2, 2], [0.0, 5.0, 0.0, float("nan")], "missing"),
        ([0, 1, 2, 0], [0.0, 5.0, 0.0, 10.0], "eligibility"),  # 2 cores on a 1-slot machine
        ([0, 1, 0, 2], [0.0, 5.0, 2.0, 1.0], "release"),  # data needs 1 + 4 s to reach z0
        ([0, 1, 2, 2], [0.0, 5.0, 19.5, 1.0], "deadline"),
        ([0, 1, 2, 2], [0.0, 4.0, 0.0, 1.0], "precedence"),  # transfer of 3 s ignored
        ([0, 2, 2, 2], [0.0, 5.0, 0.0, 1.0], "precedence"),  # 1 s latency ignored
        ([0, 0, 2, 2], [0.0, 1.0, 0.0, 1.0], "precedence"),  # same machine, before a ends
        ([0, 1, 2, 2], [0.0, 5.0, 0.0, 0.5], "capacity"),  # c + w = 3 cores on 2 slots
        ([0, 0, 2, 2], [0.0, 1.5, 0.0, 1.0], "capacity"),  # overlap on a 1-slot machine
        ([0, 1, 2, 2], [0.0, 29.0, 0.0, 1.0], "deadline"),  # makespan 31 > 30
    ],
)
def test_rejects_each_kind_of_violation(machines, starts, kind) -> None:
    report = check(_instance(), _solution(machines, starts))
    assert not report.feasible
    assert any(v.startswith(kind) for v in report.violations), report.violations


def test_pinned_dataset_makes_other_zones_ineligible() -> None:
    instance = build(
        DagInstance(
            machines=[DagMachine("m0", zone="a"), DagMachine("m1", zone="b")],
            tasks=[DagTask("x", 1, data_zone="b", data_bytes=1, data_pinned=True)],
            links=[DagLink("a", "b", 1.0)],
        )
    )
    assert check(instance, _solution([1], [0.0])).feasible
    report = check(instance, _solution([0], [5.0]))
    assert not report.feasible and report.violations[0].startswith("eligibility")


def test_objectives_cost_and_weighted() -> None:
    machines = [DagMachine("m0", cost_per_hour=3600.0, slots=2)]
    tasks = [DagTask("a", 4), DagTask("b", 2)]
    cost = build(DagInstance(machines, tasks, objective="cost", makespan_limit_s=10))
    weighted = build(
        DagInstance(machines, tasks, objective="weighted", makespan_weight=2, cost_weight=1)
    )
    sol = _solution([0, 0], [0.0, 0.0])
    # 1 per second for the machine, half of it per core: (4 + 2) * 0.5 = 3.
    assert check(cost, sol).terms == {"cost": pytest.approx(3.0)}
    assert check(weighted, sol).terms == {"weighted": pytest.approx(2 * 4 + 3.0)}
