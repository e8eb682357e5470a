"""The subset heads and tails (:func:`placement.models.dag.energetic.subset_heads_and_tails`):
the counting test on a task's ancestors raises its head, on its descendants its tail. Tight on
a hand-built join, and never above the optimum of an independent CP-SAT model (written here,
without our bound as its floor) on random small DAGs with task classes, speeds and slots."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from placement.models.dag import DagEdge, DagInstance, DagMachine, DagTask
from placement.models.dag.bound import heads_and_tails, makespan_lower_bound
from placement.models.dag.energetic import chain_matrix, counting_bound, subset_heads_and_tails
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.testing import round_trip as build


def _join(width: int = 3) -> DagInstance:
    """``width`` tasks ``a`` of 2 s, a join of 1 s, ``width`` tasks ``b`` of 2 s after it, on
    two identical one-slot machines. With 3: the a's end by 4 at best (two machines, three
    tasks), the join by 5, the b's by 9, the optimum. The class counts alone give 7 (7.5 with
    the packing LP): the a's see only the join and one b after them (tail 3), the b's only
    the path before them (head 3)."""
    tasks = [DagTask(f"a_{i}", 2.0) for i in range(width)] + [DagTask("join", 1.0)]
    tasks += [DagTask(f"b_{i}", 2.0) for i in range(width)]
    edges = [DagEdge(f"a_{i}", "join") for i in range(width)]
    edges += [DagEdge("join", f"b_{i}") for i in range(width)]
    return build(
        DagInstance(
            machines=[DagMachine("m0"), DagMachine("m1")], tasks=tasks, edges=edges, name="join"
        )
    )


def _ends(instance: DagInstance, head: np.ndarray, tail: np.ndarray) -> float:
    return float(np.max(np.min(head + instance.duration, axis=1) + tail))


def test_subset_heads_are_tight_on_a_join() -> None:
    instance = _join()
    head, tail = heads_and_tails(instance)
    assert counting_bound(instance, head, tail) < 8.0  # the packing LP reaches 7.5
    raised_head, raised_tail = subset_heads_and_tails(instance, head, tail)
    join = [t.name for t in instance.tasks].index("join")
    assert raised_head[join] == pytest.approx([4.0, 4.0])
    assert raised_tail[join] == pytest.approx(4.0)  # three b's of 2 s on two machines
    assert _ends(instance, raised_head, raised_tail) == pytest.approx(9.0)
    assert makespan_lower_bound(instance) == pytest.approx(9.0)
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.objective == pytest.approx(9.0)


def test_chain_matrix() -> None:
    """a -> join -> b: a ends at least 1 s (the join) before b starts."""
    instance = _join(2)
    chain = chain_matrix(instance)
    names = [t.name for t in instance.tasks]
    a, join, b = names.index("a_0"), names.index("join"), names.index("b_1")
    assert chain[a, join] == 0.0 and chain[a, b] == 1.0 and chain[join, b] == 0.0
    assert chain[b, a] == -np.inf and chain[a, names.index("a_1")] == -np.inf


def _reference_optimum(instance: DagInstance, scale: int) -> float:
    """The optimal makespan by an independent CP-SAT model: one optional interval per
    task and machine, a cumulative of the machine's slots per machine, precedences (no data,
    one zone: no transfer time). Durations times ``scale`` must be integers."""
    d = instance.duration
    scaled = np.round(d * scale).astype(int)
    assert np.allclose(scaled, d * scale)
    n, k = d.shape
    horizon = int(scaled.max(axis=1).sum())
    model = cp_model.CpModel()
    start = [model.new_int_var(0, horizon, f"s{t}") for t in range(n)]
    end = [model.new_int_var(0, horizon, f"e{t}") for t in range(n)]
    per_machine: list[list[tuple[cp_model.IntervalVar, int]]] = [[] for _ in range(k)]
    for t in range(n):
        used = []
        for m in range(k):
            x = model.new_bool_var(f"x{t}_{m}")
            interval = model.new_optional_interval_var(
                start[t], int(scaled[t, m]), end[t], x, f"i{t}_{m}"
            )
            per_machine[m].append((interval, instance.tasks[t].cores))
            used.append(x)
        model.add_exactly_one(used)
    for m, machine in enumerate(instance.machines):
        model.add_cumulative(
            [i for i, _ in per_machine[m]], [c for _, c in per_machine[m]], machine.slots
        )
    names = {task.name: t for t, task in enumerate(instance.tasks)}
    for edge in instance.edges:
        model.add(end[names[edge.parent]] <= start[names[edge.child]])
    makespan = model.new_int_var(0, horizon, "C")
    model.add_max_equality(makespan, end)
    model.minimize(makespan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = 30.0
    assert solver.solve(model) == cp_model.OPTIMAL
    return solver.objective_value / scale


@st.composite
def _workflows(draw: st.DrawFn) -> DagInstance:
    """Two to three machines (speed 1 or 2, one or two slots), five to nine tasks of two or
    three classes (integer works), random edges without data."""
    k = draw(st.integers(2, 3))
    machines = [
        DagMachine(
            f"m{m}",
            f"k{m}",
            speed=float(draw(st.sampled_from([1.0, 2.0]))),
            slots=draw(st.integers(1, 2)),
        )
        for m in range(k)
    ]
    n = draw(st.integers(5, 9))
    tasks = [
        DagTask(f"{'abc'[draw(st.integers(0, 2))]}_{i}", float(draw(st.integers(1, 6))))
        for i in range(n)
    ]
    edges = []
    for b in range(1, n):
        for a in range(b):
            if draw(st.integers(0, 9)) < 3:
                edges.append(DagEdge(tasks[a].name, tasks[b].name))
    return build(DagInstance(machines, tasks, edges, name="random"))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instance=_workflows())
def test_subset_bound_never_exceeds_the_optimum(instance: DagInstance) -> None:
    optimum = _reference_optimum(instance, 2) * (1 + 1e-9) + 1e-9
    head, tail = heads_and_tails(instance)
    raised_head, raised_tail = subset_heads_and_tails(instance, head, tail)
    assert np.all(raised_head >= head) and np.all(raised_tail >= tail)
    assert _ends(instance, raised_head, raised_tail) <= optimum
    assert counting_bound(instance, raised_head, raised_tail) <= optimum
    assert makespan_lower_bound(instance) <= optimum
