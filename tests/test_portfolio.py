"""The engine on a family it has never heard of: a 0-1 knapsack defined here.

The engine must know no family, so a test family exercises every path of the portfolio with
real CP-SAT: the greedy fallback, the exact proof, a crashing backend, a backend that returns
invalid solutions, cancellation, the incumbent callback and the deadline.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from placement.solver import (
    CancellationToken,
    CheckReport,
    ExactOutcome,
    InputError,
    SolutionStatus,
    SolveOptions,
    StopReason,
    solve,
)
from placement.solver.backends import CpSat, RunStatus
from placement.solver.family import Family
from placement.solver.testing import registered


@dataclass(eq=False)
class Knapsack:
    family_name = "test-knapsack"
    values: list[int]
    weights: list[int]
    capacity: int
    exact_mode: str = "cpsat"  # cpsat | crash | invalid | slow
    calls: list[str] = field(default_factory=list)


class CpSatKnapsack:
    def solve(self, inst: Knapsack, ctx: Any) -> ExactOutcome:
        from ortools.sat.python import cp_model

        if inst.exact_mode == "crash":
            raise RuntimeError("backend exploded")
        if inst.exact_mode == "invalid":
            ctx.report(frozenset(range(len(inst.values))), "bad-encoding")  # overweight
            return ExactOutcome(StopReason.PROVEN)
        m = cp_model.CpModel()
        x = [m.new_bool_var(f"x{i}") for i in range(len(inst.values))]
        m.add(sum(w * v for w, v in zip(inst.weights, x, strict=True)) <= inst.capacity)
        if inst.exact_mode == "slow":
            # A market-split block (Cornuejols & Dawande 1999): a few dense equalities over
            # 0-1 variables that take a branch-and-bound search a very long time to settle.
            y = [m.new_bool_var(f"y{i}") for i in range(48)]
            for row in range(5):
                rng = random.Random(row)
                coefs = [rng.randrange(100) for _ in range(48)]
                m.add(sum(c * yi for c, yi in zip(coefs, y, strict=True)) == sum(coefs) // 2)
        m.maximize(sum(v * xi for v, xi in zip(inst.values, x, strict=True)))
        hint = ctx.incumbent() or frozenset()
        for i, xi in enumerate(x):
            m.add_hint(xi, i in hint)

        def on_solution(cb: Any) -> None:
            ctx.report(frozenset(i for i, xi in enumerate(x) if cb.value(xi)), "cpsat")

        run = CpSat.run(m, ctx.options, ctx.cancel, ctx.time_left(), on_solution)
        best = None
        if run.has_solution:
            best = frozenset(i for i, xi in enumerate(x) if run.solver.value(xi))
            ctx.report(best, "cpsat", run.bound)
        return ExactOutcome(
            run.stop_reason,
            bound=run.bound,
            proven_optimal=run.status == RunStatus.OPTIMAL,
            proven_solution=best,
        )


class KnapsackFamily(Family):
    name = "test-knapsack"
    sense = "max"
    instance_type = Knapsack

    def greedy(self, inst: Knapsack, options: SolveOptions) -> list[tuple[str, Any]]:
        order = sorted(range(len(inst.values)), key=lambda i: -inst.values[i] / inst.weights[i])
        chosen, load = set(), 0
        for i in order:
            if load + inst.weights[i] <= inst.capacity:
                chosen.add(i)
                load += inst.weights[i]
        return [("ratio", frozenset(chosen))]

    def check(self, inst: Knapsack, sol: Any) -> CheckReport:
        load = sum(inst.weights[i] for i in sol)
        violations = [f"weight {load} > capacity {inst.capacity}"] if load > inst.capacity else []
        return CheckReport(
            not violations, violations, {"value": float(sum(inst.values[i] for i in sol))}, ("max",)
        )

    def exact(self, backend: str) -> Any:
        return CpSatKnapsack()

    def explain_unplaced(self, inst: Knapsack, sol: Any, stop: Any = None) -> list[dict[str, Any]]:
        return [{"item": i} for i in range(len(inst.values)) if i not in sol]

    def quick_bound(self, inst: Knapsack) -> float:
        return float(sum(inst.values))


@pytest.fixture(autouse=True, scope="module")
def _knapsack_family() -> Iterator[None]:
    """The toy family is registered for this module's tests only: other tests derive their
    family lists from the registry."""
    with registered(KnapsackFamily()):
        yield


# Greedy by ratio takes item 0 (ratio 6) and then nothing fits; the optimum is items 1 + 2.
TRAP = dict(values=[60, 100, 120], weights=[10, 20, 30], capacity=50)


def test_exact_backend_proves_the_optimum_the_greedy_misses() -> None:
    seen = []
    result = solve(Knapsack(**TRAP), SolveOptions(time_limit_s=10, on_incumbent=seen.append))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.stop_reason == StopReason.PROVEN
    assert result.objective == 220 and result.bound == 220 and result.gap == 0
    assert result.solution == frozenset({1, 2})
    assert result.history[0].source == "greedy:ratio" and result.history[0].objective == 160
    assert [i.objective for i in seen] == [i.objective for i in result.history]
    # The callback gets each solution (a service keeps the best for its deadline); the
    # history does not hold them.
    assert seen[-1].solution == frozenset({1, 2}) and seen[0].solution is not None
    assert all(h.solution is None for h in result.history)
    assert result.unplaced == [{"item": 0}]
    assert {"greedy", "cpsat", "total"} <= set(result.phase_times_s)


def test_greedy_backend_claims_nothing() -> None:
    result = solve(Knapsack(**TRAP), SolveOptions(backend="greedy"))
    assert result.status == SolutionStatus.FEASIBLE
    assert result.stop_reason == StopReason.HEURISTIC_ONLY
    assert result.objective == 160
    assert result.bound == 280  # only the quick bound: sum of all values
    assert result.gap == pytest.approx((280 - 160) / 280)


def test_crashing_backend_falls_back_to_the_greedy_and_says_why() -> None:
    result = solve(Knapsack(**TRAP, exact_mode="crash"), SolveOptions(time_limit_s=5))
    assert result.status == SolutionStatus.FEASIBLE
    assert result.stop_reason == StopReason.ERROR
    assert result.objective == 160
    assert "backend exploded" in result.backend_errors["cpsat"]
    assert "backend exploded" in result.message


def test_invalid_solutions_are_never_returned_nor_called_optimal() -> None:
    result = solve(Knapsack(**TRAP, exact_mode="invalid"), SolveOptions(time_limit_s=5))
    assert result.objective == 160  # the greedy's, the only checked solution
    assert result.status == SolutionStatus.FEASIBLE
    assert "failed the checker" in result.message


def test_cancelled_before_start_returns_no_solution() -> None:
    token = CancellationToken()
    token.cancel()
    result = solve(Knapsack(**TRAP), SolveOptions(cancel=token))
    assert result.status == SolutionStatus.NO_SOLUTION
    assert result.stop_reason == StopReason.CANCELLED
    assert result.solution is None


def test_cancel_during_exact_search_keeps_the_best_checked_solution() -> None:
    inst = Knapsack(**TRAP, exact_mode="slow")
    token = CancellationToken()
    timer = threading.Timer(0.5, token.cancel)
    timer.start()
    result = solve(inst, SolveOptions(time_limit_s=60, cancel=token, threads=1))
    timer.cancel()
    assert result.stop_reason == StopReason.CANCELLED
    assert result.status == SolutionStatus.FEASIBLE
    assert result.objective == 160  # the greedy's checked solution survives the cancel
    assert result.phase_times_s["total"] < 30  # stopped long before the 60 s budget


def test_deterministic_mode_reproduces_the_search() -> None:
    inst = Knapsack(
        values=[(i * 37) % 50 + 1 for i in range(30)],
        weights=[(i * 53) % 40 + 1 for i in range(30)],
        capacity=200,
    )
    a = solve(inst, SolveOptions(deterministic=True, seed=7, time_limit_s=10))
    b = solve(inst, SolveOptions(deterministic=True, seed=7, time_limit_s=10))
    assert a.solution == b.solution and a.objective == b.objective
    assert [h.objective for h in a.history] == [h.objective for h in b.history]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("time_limit_s", 0),
        ("time_limit_s", -1),
        ("backend", "gurobi"),
        ("milp_solver", "cplex"),
        ("threads", -2),
        ("relative_gap", 1.5),
        ("time_limit_s", 1e12),
        ("threads", 100_000),
        ("seed", 2**31),
        ("seed", -(2**31) - 1),
    ],
)
def test_bad_options_name_the_field(field: str, value: Any) -> None:
    with pytest.raises(InputError) as info:
        SolveOptions(**{field: value})
    assert info.value.errors[0].path == field


def test_cancel_after_fires_once_and_can_be_disarmed() -> None:
    from placement.solver import CancellationToken

    fired = CancellationToken()
    fired.cancel_after(0.05)
    disarmed = CancellationToken()
    disarm = disarmed.cancel_after(0.05)
    disarm()
    later = CancellationToken()
    later.cancel_after(30)  # an earlier alarm must not wait behind a later one
    assert fired.wait(5)
    assert not disarmed.wait(0.3)
    assert not later.cancelled
