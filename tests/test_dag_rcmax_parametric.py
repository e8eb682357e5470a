"""The Lagrangian weights, the parametric (Lenstra-Shmoys-Tardos) bound and the weighted
starts of the R||Cmax search (models/dag/rcmax/parametric.py, construct.py).

Bounds are checked against optima proved by brute force (small random instances) and by
CP-SAT (a Braun instance), never above them, never below the plain LP; tight on a hand-built
case where the LP is not. Real HiGHS and CP-SAT runs, no mocks.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from placement.models.dag import check
from placement.models.dag.braun import braun_instance
from placement.models.dag.generate import grid_instance
from placement.models.dag.greedy import back_to_back, min_min
from placement.models.dag.rcmax import lower_bound_from_lp, solve_assignment
from placement.models.dag.rcmax.construct import cheapest, regret_greedy, weighted_starts
from placement.models.dag.rcmax.lp import lagrangian_bound, lp_rounding, priced_lp
from placement.models.dag.rcmax.parametric import ascend, g_value, needed_pairs, parametric_bound
from placement.solver import SolutionStatus, SolveOptions, solve
from tests.test_dag_rcmax import _Context, _restricted


def _brute_force(d: np.ndarray) -> float:
    """The optimal makespan by enumerating every assignment (small instances only)."""
    n, k = d.shape
    best = np.inf
    for a in itertools.product(range(k), repeat=n):
        times = d[np.arange(n), a]
        if np.all(np.isfinite(times)):
            best = min(best, float(np.bincount(a, weights=times, minlength=k).max()))
    return best


def _lumpy(n: int, k: int, seed: int) -> np.ndarray:
    """Random times where a few tasks are long against the rest (the case where no pair
    longer than the makespan matters), some pairs forbidden (``inf``)."""
    rng = np.random.default_rng(seed)
    d = rng.uniform(1, 10, size=(n, k))
    d[rng.random((n, k)) < 0.2] = np.inf
    d[np.arange(n), rng.integers(k, size=n)] = rng.uniform(1, 10, size=n)
    # One or two long tasks, each longer than the mean load on some machines.
    d[: 1 + seed % 2] *= rng.uniform(2, 8, size=(1 + seed % 2, k))
    return np.round(d, 2)


@pytest.mark.parametrize("seed", range(8))
def test_parametric_bound_never_above_the_brute_force_optimum(seed: int) -> None:
    d = _lumpy(7, 3, seed)
    optimum = _brute_force(d)
    lp = priced_lp(d, 10)
    assert lp is not None
    low = lp.bound
    assert low <= optimum + 1e-9
    strong = parametric_bound(d, lp.weight, low, 2 * optimum + 10)
    assert low - 1e-12 <= strong <= optimum + 1e-9
    # Any weights, any cap: every ascent's value and every bisection stays below.
    rng = np.random.default_rng(seed)
    for _ in range(10):
        w = rng.random(3)
        assert parametric_bound(d, w, lagrangian_bound(d, w), 100.0) <= optimum + 1e-9
    w, value = ascend(d, lp.weight, cap=strong * 1.001, max_steps=50, step=0.1)
    assert parametric_bound(d, w, strong, 100.0) <= optimum + 1e-9
    plain, plain_value = ascend(d, max_steps=200)
    assert plain_value <= lp.bound + 1e-9  # the LP value is the best any weights reach
    assert g_value(d, plain) == pytest.approx(plain_value)


def test_parametric_bound_lifts_the_lp_on_the_lumpy_instances() -> None:
    # The validity test above is not vacuous: on most of its instances the bound is above
    # the LP's (computed here again, so that the test stands alone).
    lifted = 0
    for seed in range(8):
        d = _lumpy(7, 3, seed)
        lp = priced_lp(d, 10)
        assert lp is not None
        lifted += parametric_bound(d, lp.weight, lp.bound, 200.0) > lp.bound + 1e-6
    assert lifted >= 4


def test_parametric_bound_is_tight_where_the_lp_is_not() -> None:
    # Two machines; one task takes 10 on either, another 1: the optimum is 10. The LP
    # splits the long task (5.5); no schedule of makespan below 10 can place it at all.
    d = np.array([[10.0, 10.0], [1.0, 1.0]])
    w = np.array([0.5, 0.5])
    assert lagrangian_bound(d, w) == pytest.approx(5.5)
    assert parametric_bound(d, w, 5.5, 30.0) == pytest.approx(10.0, rel=1e-9)
    assert _brute_force(d) == pytest.approx(10.0)
    # Nothing to show: the low end comes back as it is.
    assert parametric_bound(d, w, 10.0, 30.0) == pytest.approx(10.0)


def test_parametric_bound_below_cpsat_optimum() -> None:
    # Larger than brute force can do: CP-SAT proves the optimum (times on a 1e-4 grid).
    instance = braun_instance(12, 3, "u_i_hihi", seed=4)
    result = solve(instance, SolveOptions(time_limit_s=30, backend="cpsat", threads=2))
    assert result.status == SolutionStatus.OPTIMAL, result.message
    d = instance.duration
    lp = priced_lp(d, 10)
    assert lp is not None
    strong = parametric_bound(d, lp.weight, lp.bound, 2 * result.objective)
    assert lower_bound_from_lp(instance, strong) <= result.objective + 1e-9
    assert strong >= lp.bound - 1e-12


def test_ascent_nears_the_lp_and_seeds_one_round_of_pricing() -> None:
    d = braun_instance(256, 16, "u_s_hilo", seed=3).duration
    full = lp_rounding(d, 30)
    assert full is not None
    w, value = ascend(d, max_steps=400)
    assert value <= full[1] + 1e-9
    assert value >= 0.99 * full[1]
    # Seeded with the weights' cheapest columns the pricing ends at the full LP.
    lp = priced_lp(d, 30, weight=w)
    assert lp is not None
    assert lp.value == pytest.approx(full[1], rel=1e-7)
    assert lp.bound == pytest.approx(full[1], rel=1e-7)


@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_starts_are_feasible_assignments(seed: int) -> None:
    instance = _restricted(90, 6, seed)
    d = instance.duration
    w, value = ascend(d, max_steps=100)
    for machine in [cheapest(d, w), regret_greedy(d, w, value), *weighted_starts(d, w, value)]:
        assert machine.shape == (90,)
        assert np.all(np.isfinite(d[np.arange(90), machine]))
        report = check(instance, back_to_back(instance, machine))
        assert report.feasible, report.violations
    # Under a cap nothing can break, every task goes to its cheapest weighted machine.
    assert np.array_equal(regret_greedy(d, w, np.inf), cheapest(d, w))


@pytest.mark.parametrize("seed", [0, 3])
def test_search_bound_never_above_the_brute_force_optimum(seed: int) -> None:
    instance = grid_instance(8, 3, seed=seed, consistency="semi")
    optimum = _brute_force(instance.duration)
    options = SolveOptions(time_limit_s=3, backend="auto", threads=2, deterministic=True)
    ctx = _Context(instance, options, incumbent=min_min(instance))
    outcome = solve_assignment(instance, ctx, full_milp=False)
    assert outcome.bound is not None
    assert outcome.bound <= optimum + 1e-9
    assert check(instance, ctx.best).objective >= optimum - 1e-9


def test_needed_pairs_keep_every_pair_of_every_better_schedule() -> None:
    """Lagrangian reduced-cost fixing (parametric.needed_pairs): on random instances and
    weights, every schedule of makespan below the ceiling uses only kept pairs (checked over
    every assignment), and pairs are dropped on some of them, so the check is not vacuous."""
    rng = np.random.default_rng(11)
    dropped = 0
    for case in range(40):
        n, k = 6, 3
        d = np.round(rng.uniform(1, 20, size=(n, k)) * rng.uniform(1, 5, size=(n, 1)), 1)
        weight = rng.dirichlet(np.ones(k)) if case % 2 else ascend(d, max_steps=60)[0]
        schedules = []
        for a in itertools.product(range(k), repeat=n):
            a = np.array(a)
            span = float(np.bincount(a, weights=d[np.arange(n), a], minlength=k).max())
            schedules.append((span, a))
        spans = sorted(s for s, _ in schedules)
        ceiling = spans[min(len(spans) - 1, 3 + case)]  # a few schedules are better
        keep = needed_pairs(d, weight, ceiling)
        for span, a in schedules:
            if span < ceiling:
                assert keep[np.arange(n), a].all(), (case, span, ceiling)
        at_ceiling = next(a for span, a in schedules if span == ceiling)
        with_start = needed_pairs(d, weight, ceiling, start=at_ceiling)
        assert with_start[np.arange(n), at_ceiling].all()
        assert np.array_equal(with_start & ~keep, with_start ^ keep)  # only adds pairs
        dropped += int((~keep).sum())
    assert dropped > 0
