"""What a migration budget buys at the end of an openb replay (issue 42): the column generation
of models/gpu/sim/openb/budget_curve.py against an independent CP-SAT model of every pod on
every GPU with the move budget written out, and its witness re-checked from scratch."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from placement.models.gpu.instance import GpuJob, GpuNode
from placement.models.gpu.sim.openb import budget_curve
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.budget_curve import BudgetCurve, CurvePoint
from placement.models.gpu.sim.openb.budget_round import lp_rounding
from placement.models.gpu.sim.openb.online import make_any
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState, replay
from tests.test_gpu_openb_config_bound import _random_case, placement_model, solve_optimal


def exact_with_budget(
    cluster, pods, arrived, node, gpus, budget: int | None, free: np.ndarray | None = None
) -> int:
    """The most milli-GPU any placement holds that keeps every pod placed at the start placed
    and moves at most ``budget`` of them (a pod stays when its node and GPUs are unchanged;
    the arrivals ``free`` marks move without counting), on the configuration bound tests'
    direct model of every pod on every GPU."""
    model, on_node, on_gpu, placed = placement_model(cluster, pods, arrived)
    stays = []
    for i, count in enumerate(placed):
        if node[i] < 0:
            model.add(count <= 1)
            continue
        model.add(count == 1)
        if free is not None and free[i]:
            continue
        s = model.new_bool_var(f"s{i}")
        model.add_implication(s, on_node[i, int(node[i])])
        for g in gpus[i]:
            model.add_implication(s, on_gpu[i, int(node[i]), int(g)])
        stays.append(s)
    if budget is not None:
        model.add(len(stays) - sum(stays) <= budget)
    return solve_optimal(model)


def _case(rng: np.random.Generator):
    """A random small cluster and arrivals (as the configuration bound's tests draw them),
    replayed by a policy that fragments (random fit), which leaves migrations room to help."""
    cluster, pods, arrived = _random_case(rng)
    curve = replay(cluster, pods, make_any("Random"), int(rng.integers(1000)), order=arrived)
    return cluster, pods, arrived, curve.node, curve.gpus


@pytest.mark.parametrize("seed", range(10))
def test_curve_brackets_the_exact_optimum_and_its_witness_checks(seed: int) -> None:
    """At every budget: the bound is at least the exact optimum, the witness at most, it
    moves at most the budget, keeps every placed pod placed and passes the check."""
    cluster, pods, arrived, node, gpus = _case(np.random.default_rng(seed))
    bc = BudgetCurve(cluster, pods, arrived, node, gpus)
    start = int(pods.demand[arrived[node >= 0]].sum())
    assert bc.start_milli == start
    last = start
    for budget in (0, 1, 2, 100):
        best = exact_with_budget(cluster, pods, arrived, node, gpus, budget)
        point = bc.at(budget, time_limit_s=60)
        assert point.errors == []
        assert point.bound_milli >= best >= point.witness_milli >= last
        assert point.witness_moves <= budget
        if point.proved:
            assert point.witness_milli == best
        # the witness, re-checked here too: every pod placed at the start is placed
        where = point.witness
        assert all(int(a) in where for a in np.flatnonzero(node >= 0))
        items = list(where)
        assert (
            check_placement(
                TraceState(cluster),
                pods,
                [int(arrived[a]) for a in items],
                [(i, *where[a]) for i, a in enumerate(items)],
            )
            == []
        )
        last = point.witness_milli
        # the keep-or-reset restriction: a checked witness, never above the optimum (also
        # as a re-packing cycle runs it: the generation's spare time to the witness)
        for spare in (False, True):
            restricted = bc.keep_or_reset(budget, time_limit_s=60, spare=spare)
            assert restricted.errors == [] and restricted.witness_moves <= budget
            assert start <= restricted.witness_milli <= best
    unlimited = bc.unlimited(time_limit_s=60)
    best = exact_with_budget(cluster, pods, arrived, node, gpus, None)
    assert unlimited.errors == [] and unlimited.bound_milli >= best >= unlimited.witness_milli


@pytest.mark.parametrize("seed", range(8))
def test_keep_or_reset_stops_only_when_no_fresh_packing_prices_positive(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds between the full ones price only some node classes' fresh packings (here every
    round but the first and those after a round that added nothing); the generation still
    ends only when no node class has a fresh packing that would improve the master LP (each
    priced here exactly, at the final LP's duals)."""
    monkeypatch.setattr(budget_curve, "FRESH_EVERY", 1_000)
    cluster, pods, arrived, node, gpus = _case(np.random.default_rng(seed))
    bc = BudgetCurve(cluster, pods, arrived, node, gpus)
    budget = max(1, int(0.2 * (node >= 0).sum()))
    rounds = []  # each round's master LP (the witness adds columns after the last)
    solve = bc._master_lp
    bc._master_lp = lambda k: rounds.append(solve(k)) or rounds[-1]  # type: ignore[method-assign]
    point = bc.keep_or_reset(budget, time_limit_s=120, witness_time_s=5)
    assert point.seconds < 120 and point.errors == []
    value, dual = rounds[-1]
    assert value == point.master_milli
    C = bc.n_classes
    profit, mu = bc.value - dual[:C], dual[C + 1 :]
    for q in range(len(bc.cb.node_keys)):
        # CP-SAT's proven bound on the pricing (profits rounded up by at most 1/1000 milli
        # per pod): no fresh packing of the class is worth more
        bound, _best, _packing = bc.cb.price(q, profit, bc.P + bc.F, 30.0)
        for g, group in enumerate(bc.groups):
            if bc.cb.node_class[group.nodes[0]] == q:
                assert bound <= mu[g] + 0.1


def test_budget_zero_changes_nothing_a_failed_pod_still_does_not_fit() -> None:
    """With no pods moved nothing that failed fits (capacity only shrank after it failed)."""
    cluster, pods, arrived, node, gpus = _case(np.random.default_rng(3))
    point = BudgetCurve(cluster, pods, arrived, node, gpus).at(0, time_limit_s=60)
    assert point.witness_moves == 0
    assert point.witness_milli == int(pods.demand[arrived[node >= 0]].sum())


def _two_nodes(free: np.ndarray | None = None) -> BudgetCurve:
    """Two one-GPU nodes hold a 300- and a 600-milli pod; a whole-GPU pod failed."""
    nodes = [GpuNode(f"n{i}", "G", 1, 0, 0, 32_000, 65_536) for i in range(2)]
    jobs = [
        GpuJob("small", gpu_milli=300, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("large", gpu_milli=600, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("whole", gpus=1, cpu_milli=1_000, memory_mib=1_024),
    ]
    cluster = TraceCluster.from_nodes(nodes)
    pods = PodSet.from_jobs(jobs, cluster)
    return BudgetCurve(
        cluster, pods, np.array([0, 1, 2]), np.array([0, 1, -1]), [(0,), (0,), ()], free=free
    )


def test_one_migration_makes_room_and_the_curve_proves_it() -> None:
    """Two one-GPU nodes hold a 300- and a 600-milli pod; a whole-GPU pod failed. Moving the
    300-milli pod beside the 600 frees a GPU: 0 migrations hold 900, 1 holds 1,900."""
    bc = _two_nodes()
    points = [bc.at(b, time_limit_s=60) for b in (0, 1, 2)]
    assert [p.witness_milli for p in points] == [900, 1_900, 1_900]
    assert [p.witness_moves for p in points] == [0, 1, 1]
    assert all(p.proved and p.errors == [] for p in points)
    w = points[1].witness  # the two shared pods share a GPU, the whole pod has the other
    assert w[0][0] == w[1][0] != w[2][0]
    restricted = bc.keep_or_reset(1, time_limit_s=60)
    assert restricted.errors == [] and restricted.witness_milli == 1_900
    unlimited = bc.unlimited(time_limit_s=60)
    assert unlimited.bound_milli == 1_900 == unlimited.witness_milli and unlimited.errors == []


def test_a_pod_migrated_before_moves_free_of_the_budget() -> None:
    """The budget counts distinct pods: a pod that a cycle migrated before moves again
    without spending it. With the 300-milli pod free (and then the 600-milli one), budget 0
    reaches what one migration reaches, the free move not counted; without, it cannot."""
    for free in ([True, False, False], [False, True, False]):
        bc = _two_nodes(np.array(free))
        assert bc.n_paid == 1
        for point in (bc.at(0, time_limit_s=60), bc.keep_or_reset(0, time_limit_s=60)):
            assert point.errors == [] and point.witness_milli == 1_900
            assert point.witness_moves == 0
            moved = [a for a in (0, 1) if point.witness[a] != (a, (0,))]
            assert moved == [free.index(True)]
    assert _two_nodes().at(0, time_limit_s=60).witness_milli == 900


@pytest.mark.parametrize("seed", range(4))
def test_free_moves_curve_brackets_the_exact_optimum(seed: int) -> None:
    """With a random half of the placed pods free to move, at every budget the bound is at
    least the exact optimum (the free moves not counted), the witness at most, and the
    witness's counted moves within the budget."""
    cluster, pods, arrived, node, gpus = _case(np.random.default_rng(seed))
    free = (np.random.default_rng(100 + seed).random(len(arrived)) < 0.5) & (node >= 0)
    bc = BudgetCurve(cluster, pods, arrived, node, gpus, free=free)
    for budget in (0, 1, 3):
        best = exact_with_budget(cluster, pods, arrived, node, gpus, budget, free)
        point = bc.at(budget, time_limit_s=60)
        assert point.errors == []
        assert point.bound_milli >= best >= point.witness_milli
        paid = np.flatnonzero((node >= 0) & ~free)
        moved = sum(point.witness[int(a)] != (int(node[a]), gpus[a]) for a in paid)
        assert point.witness_moves == moved <= budget
        restricted = bc.keep_or_reset(budget, time_limit_s=60)
        assert restricted.errors == [] and restricted.witness_moves <= budget
        assert restricted.witness_milli <= best


def test_a_round_for_columns_only_stops_at_its_deadline_a_bound_round_does_not() -> None:
    """Past the deadline a round that only wants columns (partial pricing, the dive) prices
    no group, so a cycle's wall time holds; a round for the bound still prices every group
    (its line is a bound only if it does)."""
    bc = _two_nodes()
    _value, dual = bc._master_lp(1)
    columns = len(bc.columns)
    past = time.perf_counter() - 1.0
    groups = range(len(bc.groups))
    assert bc._lagrangian_round(dual, dual, groups, 1.0, past, for_bound=False) == (None, 0)
    assert len(bc.columns) == columns
    line, added = bc._lagrangian_round(dual, dual, groups, 1.0, past)
    assert line is not None and added >= 1  # the 300-beside-600 packing prices positive


def test_every_full_pricing_round_bounds_every_budget() -> None:
    """The Lagrangian lines of one budget's rounds bound the exact optimum at every budget."""
    cluster, pods, arrived, node, gpus = _case(np.random.default_rng(4))
    bc = BudgetCurve(cluster, pods, arrived, node, gpus)
    bc.at(1, time_limit_s=60)
    for budget in (0, 1, 2, 100):
        assert bc.bound_at(budget) >= exact_with_budget(cluster, pods, arrived, node, gpus, budget)


def _slack_case():
    """The one-migration case of the test above, with two more one-GPU nodes whose pods
    (500 and 400 milli) nothing needs to move."""
    nodes = [GpuNode(f"n{i}", "G", 1, 0, 0, 32_000, 65_536) for i in range(4)]
    jobs = [
        GpuJob("small", gpu_milli=300, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("large", gpu_milli=600, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("whole", gpus=1, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("half", gpu_milli=500, cpu_milli=1_000, memory_mib=1_024),
        GpuJob("less", gpu_milli=400, cpu_milli=1_000, memory_mib=1_024),
    ]
    cluster = TraceCluster.from_nodes(nodes)
    pods = PodSet.from_jobs(jobs, cluster)
    arrived = np.array([list(pods.names).index(j.name) for j in jobs])  # in the jobs' order
    node, gpus = np.array([0, 1, -1, 2, 3]), [(0,), (0,), (), (0,), (0,)]
    return BudgetCurve(cluster, pods, arrived, node, gpus)


def test_a_slack_budget_is_not_spent_the_witness_moves_the_fewest_pods() -> None:
    """With ten migrations allowed, the best placement (every pod placed) needs one (the
    whole-GPU pod needs a free GPU: the 300 beside the 600, or the 400 beside the 500);
    the witness with its tidy-up uses exactly one, whatever the master's solution spent."""
    for spare in (False, True):
        point = _slack_case().keep_or_reset(10, time_limit_s=30, tidy_time_s=10, spare=spare)
        assert point.errors == [] and point.witness_milli == 2_800
        assert point.witness_moves == 1


def test_needless_migrations_are_put_back() -> None:
    """A placement that moved the 500-milli pod to the 400's GPU and the 400 to the 500's
    (both fit either way) and the 300 beside the 600: only the 300 needed to move."""
    bc = _slack_case()
    where = {0: (1, (0,)), 1: (1, (0,)), 2: (0, (0,)), 3: (3, (0,)), 4: (2, (0,))}
    undone = bc._undo_needless(where)
    assert undone == {0: (1, (0,)), 1: (1, (0,)), 2: (0, (0,)), 3: (2, (0,)), 4: (3, (0,))}


def test_fresh_packings_carry_over_to_a_later_problem() -> None:
    """The fresh packings the master uses are keyed by node kind; a later problem on the
    same nodes starts from them as columns and reaches the same optimum."""
    bc = _slack_case()
    assert bc.keep_or_reset(10, time_limit_s=30).witness_milli == 2_800
    packings = bc.packings()
    assert packings, "the optimum resets a node: its fresh packing is in the LP"
    assert all(len(key) == 4 for key in packings)
    later = _slack_case()
    before = len(later.columns)
    assert later.add_packings(packings) > 0 and len(later.columns) > before
    point = later.keep_or_reset(10, time_limit_s=30)
    assert point.errors == [] and point.witness_milli == 2_800


def test_a_state_says_whether_a_pod_fits_given_gpus() -> None:
    """``TraceState.fits``: CPU, memory and each named GPU's milli-GPU, as ``place`` checks."""
    bc = _slack_case()
    state = TraceState(bc.cluster)
    small, large, whole = (int(bc.arrived[a]) for a in (0, 1, 2))
    state.place(bc.pods, large, 0, [0])
    assert state.fits(bc.pods, small, 0, [0])  # 300 beside 600
    assert not state.fits(bc.pods, whole, 0, [0])  # a whole GPU where 600 is taken
    assert state.fits(bc.pods, whole, 1, [0])
    state.place(bc.pods, small, 0, [0])
    assert not state.fits(bc.pods, small, 0, [0])  # 300 + 600 + 300 > 1,000


def _realised(bc: BudgetCurve, budget: int, lam: np.ndarray) -> CurvePoint:
    point = CurvePoint(budget, 0, None, None, None)
    bc._realise(point, budget, lam)
    return point


def test_the_pod_level_rounding_finds_the_one_migration() -> None:
    """The LP-guided rounding of budget_round.py, on its own: with one migration it frees the
    GPU for the whole pod (1,900 milli, one move); with none it finds nothing to gain."""
    bc = _two_nodes()
    bc.at(1, time_limit_s=60)
    contents = lp_rounding(bc, 1, bc._lp_x, 10.0)
    assert contents is not None
    lam = bc._lam_of(contents)
    assert bc._value_of(lam) == 1_900
    point = _realised(bc, 1, lam)
    assert point.errors == [] and point.witness_milli == 1_900 and point.witness_moves == 1
    assert lp_rounding(bc, 0, bc._lp_x, 10.0) is None


def test_the_pod_level_rounding_is_a_valid_placement_within_the_budget() -> None:
    """On random cases, whatever the rounding returns realises into a placement that passes
    the from-scratch check, moves at most the budget, holds what its columns say, and no more
    than the exact optimum; it gains on several cases, and on seed 5 (a chain: a node freed
    for a two-GPU pod, its resident moved where another node's residents left) it reaches the
    optimum only by trying the LP's columns together."""
    gains = {}
    for seed in range(10):
        cluster, pods, arrived, node, gpus = _case(np.random.default_rng(seed))
        bc = BudgetCurve(cluster, pods, arrived, node, gpus)
        for budget in (1, 2, 100):
            bc.at(budget, time_limit_s=60)
            contents = lp_rounding(bc, budget, bc._lp_x, 10.0)
            if contents is None:
                continue
            lam = bc._lam_of(contents)
            point = _realised(bc, budget, lam)
            best = exact_with_budget(cluster, pods, arrived, node, gpus, budget)
            assert point.errors == []
            assert point.witness_moves <= budget
            assert point.witness_milli == bc._value_of(lam) > bc.start_milli
            assert point.witness_milli <= best
            gains[seed, budget] = (point.witness_milli, best)
    assert len(gains) >= 5
    assert gains[5, 100] == (3_830, 3_830)


def _lp_from_scratch(bc: BudgetCurve, budget: int, fixed: np.ndarray) -> float:
    """The master LP over ``bc``'s columns, loaded anew, each column's count at least
    ``fixed``."""
    from placement.solver.backends.highs import HighsModel

    lower, upper = bc._rows(budget)
    cost, starts, index, values = bc._matrix()
    model = HighsModel()
    infinite = np.full(len(cost), np.inf)
    model.load(cost, fixed, infinite, lower, upper, starts, index, values, maximize=True)
    run = model.run(60.0)
    assert run.status.name == "OPTIMAL"
    return float(run.objective)


def test_the_kept_master_lp_is_the_master_lp_after_columns_and_fixings_change() -> None:
    """The master LP kept between rounds (new columns added, a dive's lower bounds set and
    released) has the optimum of the same LP loaded from scratch at every step."""
    bc = _slack_case()
    first, _dual = bc._master_lp(10)
    assert math.isclose(first, _lp_from_scratch(bc, 10, np.zeros(len(bc.columns))))
    bc.keep_or_reset(10, time_limit_s=30)  # more columns, the kept model grown in place
    grown, _dual = bc._master_lp(10)
    assert math.isclose(grown, _lp_from_scratch(bc, 10, np.zeros(len(bc.columns))))
    assert grown >= first
    fixed = np.zeros(len(bc.columns))
    fixed[0] = 1  # the first group's node keeps its pods
    run = bc._lp_run(10, fixed)
    assert math.isclose(float(run.objective), _lp_from_scratch(bc, 10, fixed))
    released, _dual = bc._master_lp(10)
    assert math.isclose(released, grown)
    other, _dual = bc._master_lp(0)  # another budget: a model of its own
    assert math.isclose(other, _lp_from_scratch(bc, 0, np.zeros(len(bc.columns))))
