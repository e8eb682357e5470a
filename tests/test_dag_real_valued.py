"""Real-valued times: CP-SAT's rounded-down relaxation, its schedules re-timed on the real
times, and the optimality claim, against brute force on tiny instances; the counting bound,
tight on a hand-built case and never above a brute-force optimum."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from placement.models.dag import DagEdge, DagInstance, DagLink, DagMachine, DagTask
from placement.models.dag.assignment_lp import assignment_lp_bound
from placement.models.dag.bound import head_tail_bound, heads_and_tails, makespan_lower_bound
from placement.models.dag.check import check
from placement.models.dag.cpsat import REAL_TOLERANCE, relaxable
from placement.models.dag.energetic import counting_bound, fits_by, packing_lp_refutes
from placement.models.dag.greedy import semi_active
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.testing import round_trip as build
from tests.test_dag_bound import _random_workflow


def _brute_force(instance: DagInstance) -> float:
    """The optimal makespan by enumeration: every assignment and every priority order,
    each as a semi-active schedule (an optimal schedule is semi-active, and semi_active with
    its start order as the key starts no task later)."""
    n, k = len(instance.tasks), len(instance.machines)
    eligible = np.isfinite(instance.duration)
    best = math.inf
    orders = list(itertools.permutations(range(n)))
    for machine in itertools.product(range(k), repeat=n):
        if not all(eligible[t, m] for t, m in enumerate(machine)):
            continue
        for order in orders:
            key = np.empty(n)
            key[list(order)] = np.arange(n)
            solution = semi_active(instance, np.array(machine, dtype=np.int64), key)
            report = check(instance, solution)
            assert report.feasible, report.violations
            best = min(best, report.objective)
    return best


def _irrational(seed: int) -> DagInstance:
    """Five tasks (four on three machines) whose works are multiples of sqrt(2) and pi, on two or three machines of
    speeds 1, 1/3 and e/2, two zones with a latency of 0.1 * sqrt(3): no decimal scale makes
    any of these times integral."""
    rng = np.random.default_rng(seed)
    speeds = [1.0, 1.0 / 3.0, math.e / 2.0]
    machines = [
        DagMachine(f"m{m}", f"k{m}", speed=speeds[m], zone="ab"[m % 2]) for m in range(2 + seed % 2)
    ]
    n = 5 if len(machines) == 2 else 4  # brute force: k^n assignments times n! orders
    links = [
        DagLink("a", "a", 1e9),
        DagLink("b", "b", 1e9),
        DagLink("a", "b", 1e9 / math.pi, 0.1 * math.sqrt(3)),
    ]
    tasks = [
        DagTask(f"t{i}", float(rng.integers(1, 5)) * (math.sqrt(2) if i % 2 else math.pi / 3))
        for i in range(n)
    ]
    edges = [
        DagEdge(f"t{a}", f"t{b}", float(rng.integers(0, 3)) * 1e8)
        for b in range(1, n)
        for a in rng.choice(b, size=min(b, int(rng.integers(0, 3))), replace=False)
    ]
    return build(DagInstance(machines, tasks, edges, links, name=f"irrational-{seed}"))


@pytest.mark.parametrize("seed", [0, 2, 4, 6, 7])
def test_real_valued_optimum_agrees_with_brute_force(seed: int) -> None:
    """CP-SAT's claim on real times: optimal only when brute force agrees (within the
    tolerance of the claim), and its bound never above the brute-force optimum."""
    instance = _irrational(seed)
    assert relaxable(instance)
    optimum = _brute_force(instance)
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    assert check(instance, result.solution).feasible
    tolerance = REAL_TOLERANCE * max(1.0, optimum)
    assert result.bound is not None and result.bound <= optimum * (1 + 1e-12)
    assert result.objective >= optimum - tolerance
    assert result.status == SolutionStatus.OPTIMAL, result.message
    if seed % 2 == 0:  # two machines: proved by the relaxation (seed 7: by the quick bound)
        assert "relaxation" in result.message
    assert result.objective <= optimum + tolerance
    assert result.objective - result.bound <= REAL_TOLERANCE * max(1.0, result.bound)


def test_counting_bound_is_tight_on_a_hand_built_case() -> None:
    """Three tasks of work 1 on a machine of speed 1 and one of speed 0.4 (2.5 s a task).
    Optimum 2.5: two on the fast one, one on the slow one. The path bound is 1 and the
    speed-weighted area 3 / 1.4 = 2.14; the count is 2.5: below it the slow machine finishes
    nothing and the fast one two tasks."""
    instance = build(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=1.0), DagMachine("slow", "s", speed=0.4)],
            tasks=[DagTask(f"blastall_{i:08d}", 1.0) for i in range(3)],
            name="count",
        )
    )
    head, tail = heads_and_tails(instance)
    assert counting_bound(instance, head, tail) == pytest.approx(2.5)
    assert makespan_lower_bound(instance) == pytest.approx(2.5)
    assert _brute_force(instance) == pytest.approx(2.5)


def test_counting_bound_on_the_blast_example() -> None:
    """The issue's BLAST case in small: a split, 10 equal tasks, a merge, on one slow
    machine (one slot, a task takes 4 s), one standard (2 slots, 2 s) and one fast (2 slots,
    1.5 s). Until 4.5 s after the split, the slow machine finishes at most one, each standard
    slot two and each fast slot two: 9 of 10. The area bound (20 / 5.17 = 3.9) is below."""
    tasks = [DagTask("split", 0.1)]
    tasks += [DagTask(f"blastall_{i:08d}", 2.0) for i in range(10)]
    tasks += [DagTask("merge", 0.1)]
    edges = [DagEdge("split", t.name) for t in tasks[1:-1]]
    edges += [DagEdge(t.name, "merge") for t in tasks[1:-1]]
    instance = build(
        DagInstance(
            machines=[
                DagMachine("slow", "slow", speed=0.5),
                DagMachine("std", "std", speed=1.0, slots=2),
                DagMachine("fast", "fast", speed=4.0 / 3.0, slots=2),
            ],
            tasks=tasks,
            edges=edges,
            name="blast",
        )
    )
    head, tail = heads_and_tails(instance)
    assert counting_bound(instance, head, tail) > 4.5
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    assert makespan_lower_bound(instance) <= result.objective * (1 + 1e-12)


def test_assignment_lp_bound_is_tight_on_a_hand_built_case() -> None:
    """A source, three tasks (2 s on the fast machine, 4 s on the slow one), a sink (1 s /
    2 s). Optimum 5: two tasks on the fast machine, one on the slow one, the sink on the fast
    one. From the path bound (3) the LP's window [0, C - 1] (every middle task has the sink
    after it) needs 2 X <= C - 1 on the fast machine and 4 (3 - X) <= C - 1 on the slow one:
    C >= 5."""
    tasks = [DagTask("source", 0.0)] + [DagTask(f"mid_{i}", 2.0) for i in range(3)]
    tasks.append(DagTask("sink", 1.0))
    edges = [DagEdge("source", f"mid_{i}") for i in range(3)]
    edges += [DagEdge(f"mid_{i}", "sink") for i in range(3)]
    instance = build(
        DagInstance(
            machines=[DagMachine("fast", "f", speed=1.0), DagMachine("slow", "s", speed=0.5)],
            tasks=tasks,
            edges=edges,
            name="lp",
        )
    )
    head, tail = heads_and_tails(instance)
    assert assignment_lp_bound(instance, head, tail, 3.0) == pytest.approx(5.0)
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    assert result.status == SolutionStatus.OPTIMAL and result.objective == pytest.approx(5.0)


@pytest.mark.parametrize("seed", range(6))
def test_new_bounds_never_exceed_a_proven_optimum(seed: int) -> None:
    """The counting bound and the assignment LP's, each alone (from a floor of 0 and from
    the head-area-tail bound), never above the optimum CP-SAT proves on random DAGs."""
    instance = _random_workflow(seed)
    result = solve(instance, SolveOptions(time_limit_s=20, backend="cpsat", threads=1))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    optimum = result.objective * (1 + 1e-9) + 1e-9
    head, tail = heads_and_tails(instance)
    assert counting_bound(instance, head, tail) <= optimum
    assert assignment_lp_bound(instance, head, tail, 0.0) <= optimum
    assert assignment_lp_bound(instance, head, tail, head_tail_bound(instance)) <= optimum


def test_packing_lp_is_tight_where_the_count_is_not() -> None:
    """Two identical one-slot machines; jobs of 4, 6, 6 and 6 s. Optimum 12 (two 6 s jobs
    share a machine). Below 12 each machine could run the 4 s job and a 6 s one, so the
    count (which lets both machines use the one short job) passes from 10 s; the packing LP
    sees that a 6 s job is more than half of a window below 12 (u_1 = 1), so at most one per
    machine: three do not fit."""
    instance = build(
        DagInstance(
            machines=[DagMachine("a"), DagMachine("b")],
            tasks=[DagTask("job_1", 4.0)] + [DagTask(f"job_{i}", 6.0) for i in (2, 3, 4)],
            name="packing",
        )
    )
    head, tail = heads_and_tails(instance)
    d = instance.duration
    members = np.arange(4)
    cores, slots = np.ones(4, dtype=np.int64), np.ones(2, dtype=np.int64)
    assert fits_by(11.0, members, d, head, tail, cores, slots)
    assert packing_lp_refutes(11.9, members, d, head, tail, cores, slots)
    assert not packing_lp_refutes(12.0, members, d, head, tail, cores, slots)
    assert counting_bound(instance, head, tail) == pytest.approx(12.0, rel=2e-6)
    assert counting_bound(instance, head, tail) <= 12.0
    assert _brute_force(instance) == pytest.approx(12.0)
