"""The DAG family's cheap lower bounds: tight where the optimum is known by hand, never above
an optimum CP-SAT proves, on random DAGs over heterogeneous machines (speeds, slots, ETC
types, releases, data locality)."""

from __future__ import annotations

import numpy as np
import pytest

from placement.models.dag import DagEdge, DagInstance, DagLink, DagMachine, DagTask
from placement.models.dag.bound import head_tail_bound, makespan_lower_bound
from placement.models.dag.generate import etl_dag, random_dag
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.testing import round_trip as build


def _fan_in(slots: int = 1) -> DagInstance:
    """Four independent tasks of 1 s, then a join of 1 s, on two identical machines."""
    tasks = [DagTask(f"t{i}", 1) for i in range(4)] + [DagTask("join", 1)]
    return build(
        DagInstance(
            machines=[DagMachine("m0", slots=slots), DagMachine("m1", slots=slots)],
            tasks=tasks,
            edges=[DagEdge(f"t{i}", "join") for i in range(4)],
            name="fan-in",
        )
    )


def test_head_tail_bound_is_tight_on_a_fan_in() -> None:
    """Optimum 3 (two tasks per machine, then the join). The path bound says 2 and the area
    bound 2.5; only the ancestors' area before the join (4 / 2) plus the join gives 3, and
    with it CP-SAT's schedule is proved."""
    instance = _fan_in()
    assert head_tail_bound(instance) == pytest.approx(3.0)
    assert makespan_lower_bound(instance) == pytest.approx(3.0)
    result = solve(instance, SolveOptions(time_limit_s=5, backend="cpsat", threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.objective == pytest.approx(3.0)
    # With two slots per machine every task runs at once: optimum and bound are 2.
    assert makespan_lower_bound(_fan_in(slots=2)) == pytest.approx(2.0)


def test_speed_weighted_area_bound() -> None:
    """Six independent tasks of work 2 on machines of speed 2 and 1 (one slot each): the fast
    one does 4 in 4 s, the slow one 2 in 4 s, so the optimum is 4 = 12 / (2 + 1). The
    slot-second measure alone gives only 6 * 1 / 2 = 3."""
    instance = build(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=2.0), DagMachine("slow", "s")],
            tasks=[DagTask(f"t{i}", 2) for i in range(6)],
            name="speeds",
        )
    )
    assert makespan_lower_bound(instance) == pytest.approx(4.0)
    assert head_tail_bound(instance) == 0.0  # no edges


def _random_workflow(seed: int) -> DagInstance:
    """A random DAG with whole work and data on 3-5 machines of random speeds, slots and
    zones (speeds and bandwidths are powers of two times decimals, so that every time is
    decimal and CP-SAT can prove its optimum)."""
    rng = np.random.default_rng(seed)
    machines = [
        DagMachine(
            f"m{m}",
            f"k{m}",
            speed=float(rng.choice([0.5, 1.0, 2.0, 4.0])),
            slots=int(rng.choice([1, 2])),
            zone="ab"[m % 2],
        )
        for m in range(3 + seed % 3)
    ]
    links = [DagLink("a", "a", 1e8), DagLink("b", "b", 1e8), DagLink("a", "b", 1e7, 0.5)]
    n = 7 + seed % 4
    tasks = [
        DagTask(
            f"t{i}", float(rng.integers(1, 20)), release_s=float(rng.integers(0, 3) * (i % 3 == 0))
        )
        for i in range(n)
    ]
    edges = [
        DagEdge(f"t{a}", f"t{b}", float(rng.integers(0, 4)) * 1e7)
        for b in range(1, n)
        for a in rng.choice(b, size=min(b, int(rng.integers(1, 3))), replace=False)
    ]
    return build(DagInstance(machines, tasks, edges, links, name=f"random-{seed}"))


CASES = (
    [("random", s) for s in range(8)]
    + [("topcuoglu", s) for s in range(4)]
    + [("etl", s) for s in range(3)]
)


@pytest.mark.parametrize("kind,seed", CASES)
def test_bounds_never_exceed_a_proven_optimum(kind: str, seed: int) -> None:
    if kind == "random":
        instance = _random_workflow(seed)
    elif kind == "topcuoglu":
        instance = random_dag(10, 3, seed=seed, ccr=1.0, beta=1.0)
    else:
        instance = etl_dag(2, 2, 4, seed=seed)
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    if result.status != SolutionStatus.OPTIMAL:
        pytest.fail(f"{instance.name}: CP-SAT did not prove it ({result.message})")
    optimum = result.objective
    assert head_tail_bound(instance) <= optimum * (1 + 1e-9) + 1e-9
    assert makespan_lower_bound(instance) <= optimum * (1 + 1e-9) + 1e-9
