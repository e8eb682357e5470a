"""Defragmentation cycles on the openb replay: known optima on tiny clusters (real CP-SAT),
the budget, the independent cycle check, and a whole replay re-checked from scratch."""

from __future__ import annotations

import math
import time

import numpy as np

from placement.models.gpu.instance import GpuJob, GpuNode
from placement.models.gpu.sim.openb import defrag_bound
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.defrag import replay_defrag
from placement.models.gpu.sim.openb.defrag_bound import (
    bins_lower_bound,
    cluster_bound,
    pattern_bound,
)
from placement.models.gpu.sim.openb.defrag_cycle import (
    Book,
    _fit_after,
    budgeted_consolidation,
    check_cycle,
    cycle_variables,
    solve_cycle,
)
from placement.models.gpu.sim.openb.online import make_any
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster, TraceState


def setup(nodes, jobs) -> tuple[TraceCluster, PodSet]:
    cluster = TraceCluster.from_nodes(nodes)
    return cluster, PodSet.from_jobs(jobs, cluster)


def two_halves(milli: int = 500):
    """One node of 2 GPUs holding shared pods a (GPU 0) and b (GPU 1); pod w wants a whole
    GPU. Arrivals: 0 = a, 1 = b, 2 = w."""
    cluster, pods = setup(
        [GpuNode("n0", "G", 2, 0, 0, 64_000, 65_536)],
        [
            GpuJob("a", gpu_milli=milli, cpu_milli=1_000, memory_mib=1),
            GpuJob("b", gpu_milli=milli, cpu_milli=1_000, memory_mib=1),
            GpuJob("w", gpus=1, cpu_milli=1_000, memory_mib=1),
        ],
    )
    order = np.array([pods.names.index(x) for x in ("a", "b", "w")])
    state = TraceState(cluster)
    book = Book(3, cluster.n)
    for a, g in ((0, 0), (1, 1)):
        state.place(pods, int(order[a]), 0, [g])
        book.put(a, 0, (g,))
    return cluster, pods, order, state, book


def test_a_migration_that_frees_a_gpu_places_the_pod_with_one_move() -> None:
    _cluster, pods, order, state, book = two_halves()
    assert len(state.feasible(pods, int(order[2]))) == 0  # w fits nowhere as it stands
    sources = _fit_after(state, pods, order, book, int(order[2]))
    assert sources == [0]
    out = solve_cycle(state, pods, order, book, sources, [], [2], 10, set(), 5.0)
    assert out.status == "optimal" and out.gap == 0.0
    assert list(out.placed) == [2] and len(out.moves) == 1  # the optimum: one move, w placed
    ((moved, (node, gpus)),) = out.moves.items()
    assert node == 0 and gpus != book.gpus[moved] and out.placed[2][1] == book.gpus[moved]
    assert check_cycle(state, pods, order, book, out.moves, out.placed, 10, set()) == []


def test_the_budget_is_respected_and_a_spent_budget_places_nothing() -> None:
    _cluster, pods, order, state, book = two_halves()
    out = solve_cycle(state, pods, order, book, [0], [], [2], 0, set(), 5.0)
    assert out.status == "optimal" and out.placed == {} and out.moves == {}
    # A pod migrated before moves again without counting against the budget.
    out = solve_cycle(state, pods, order, book, [0], [], [2], 0, {0, 1}, 5.0)
    assert list(out.placed) == [2] and len(out.moves) == 1


def test_a_migration_that_does_not_pay_is_not_made() -> None:
    # 600 + 600 cannot share a GPU: no move frees one, so consolidation moves nothing.
    _cluster, pods, order, state, book = two_halves(600)
    out = solve_cycle(state, pods, order, book, [0], [], [], None, set(), 5.0)
    assert out.status == "optimal" and out.moves == {} and out.objective == out.baseline
    # 300 + 300 can: one move frees a GPU, worth more than the move's cost.
    _cluster, pods, order, state, book = two_halves(300)
    out = solve_cycle(state, pods, order, book, [0], [], [], None, set(), 5.0)
    assert out.status == "optimal" and len(out.moves) == 1 and out.objective > out.baseline


def test_the_check_rejects_a_cycle_over_budget_or_an_over_committed_gpu() -> None:
    _cluster, pods, order, state, book = two_halves(600)
    # b onto GPU 0 beside a: 1,200 milli on one GPU
    over = check_cycle(state, pods, order, book, {1: (0, (0,))}, {}, None, set())
    assert any("GPU 0: 600 milli > 400 free" in e for e in over)
    _cluster, pods, order, state, book = two_halves()
    good = ({1: (0, (0,))}, {2: (0, (1,))})
    assert check_cycle(state, pods, order, book, *good, 1, set()) == []
    assert any("budget" in e for e in check_cycle(state, pods, order, book, *good, 0, set()))
    # w placed without moving b: GPU 1 over-committed
    bad = check_cycle(state, pods, order, book, {}, {2: (0, (1,))}, None, set())
    assert any("GPU 1" in e for e in bad)
    # a pod "moved" to where it is, and a placed pod placed again
    assert check_cycle(state, pods, order, book, {1: (0, (1,))}, {}, None, set())
    assert check_cycle(state, pods, order, book, {}, {0: (0, (1,))}, None, set())


def test_a_replay_with_migrations_keeps_its_budget_and_holds_a_valid_placement() -> None:
    rng = np.random.default_rng(3)
    nodes = [GpuNode(f"n{i}", "G", 4, 0, 0, 64_000, 262_144) for i in range(4)]
    jobs = []
    for j in range(40):
        if j % 2:
            jobs.append(
                GpuJob(
                    f"s{j:02d}",
                    gpu_milli=int(rng.choice([300, 450, 600])),
                    cpu_milli=2_000,
                    memory_mib=1_024,
                )
            )
        else:
            jobs.append(GpuJob(f"w{j:02d}", gpus=1, cpu_milli=2_000, memory_mib=1_024))
    cluster, pods = setup(nodes, jobs)
    # shared pods first (they spread over the GPUs), then the whole-GPU pods
    order = np.array(
        [p for p in range(pods.n) if pods.milli[p] < 1000]
        + [p for p in range(pods.n) if pods.milli[p] == 1000]
    )
    plain = replay_defrag(cluster, pods, make_any("FGD+BF-tie"), 0, 0.0, order=order)
    for budget in (0.1, None):
        curve = replay_defrag(
            cluster, pods, make_any("FGD+BF-tie"), 0, budget, order=order, time_limit=5.0
        )
        assert curve.invalid == 0
        if budget is not None:
            assert curve.migrated <= int(budget * len(order))
        assert curve.used[-1] >= plain.used[-1]
        placement = [(a, int(n), curve.gpus[a]) for a, n in enumerate(curve.node) if n >= 0]
        assert check_placement(TraceState(cluster), pods, [int(p) for p in order], placement) == []
        assert sum(int(pods.demand[order[a]]) for a, _, _ in placement) == curve.used[-1]
    assert plain.migrated == 0 and plain.cycles == 0


def random_cluster(seed: int):
    """3 nodes of 2-4 GPUs holding random shared pods, a whole-GPU pod and a CPU-only pod,
    placed first fit in a random order (all arrivals placed)."""
    rng = np.random.default_rng(seed)
    nodes = [
        GpuNode(f"n{i}", "G", int(rng.integers(2, 5)), 0, 0, 32_000, 131_072) for i in range(3)
    ]
    jobs = [GpuJob("w0", gpus=1, cpu_milli=1_000, memory_mib=1), GpuJob("c0", cpu_milli=500)]
    for j in range(int(rng.integers(5, 9))):
        size = int(rng.choice([150, 200, 300, 450, 600, 800]))
        jobs.append(GpuJob(f"s{j}", gpu_milli=size, cpu_milli=1_000, memory_mib=1_024))
    cluster, pods = setup(nodes, jobs)
    state, book, order = TraceState(cluster), Book(pods.n, cluster.n), []
    for p in rng.permutation(pods.n):
        for n in rng.permutation(cluster.n):
            gpus = [int(g) for g in np.flatnonzero(state.gpu_left[n] >= pods.milli[p])]
            k = int(pods.num_gpu[p])
            if len(gpus) >= k and state.cpu_left[n] >= pods.cpu_milli[p]:
                a = len(order)
                order.append(int(p))
                state.place(pods, int(p), int(n), gpus[:k])
                book.put(a, int(n), tuple(gpus[:k]))
                break
    book.node = book.node[: len(order)]
    return cluster, pods, np.array(order), state, book


def test_the_bin_lower_bound_counts_what_cannot_share_a_gpu() -> None:
    assert bins_lower_bound(np.array([600, 600])) == 2
    assert bins_lower_bound(np.array([300, 300, 300])) == 1
    # 810s cannot share, and the 470s fit beside none of them: L2 sees it, the sum does not
    assert bins_lower_bound(np.array([810, 810, 810, 470, 470, 470])) == 5
    assert bins_lower_bound(np.array([], dtype=np.int64)) == 0


def test_the_cluster_bound_is_tight_where_the_answer_is_known() -> None:
    _cluster, pods, order, state, book = two_halves(300)  # one move frees a GPU: 10 - 4
    b = cluster_bound(state, pods, order, book)
    assert (b.free_now, b.free_max, b.counting_gain, b.gain) == (0, 1, 6.0, 6.0)
    assert b.lp_gain is not None and b.lp_gain >= 6.0
    _cluster, pods, order, state, book = two_halves(600)  # nothing can be freed
    assert cluster_bound(state, pods, order, book).gain == 0.0
    _cluster, pods, order, state, book = two_halves(300)  # pods moved before cost 1 each
    assert cluster_bound(state, pods, order, book, migrated={0, 1}).gain == 9.0


def test_the_cluster_bound_holds_against_the_exact_whole_cluster_optimum(monkeypatch) -> None:
    gains, lp_tighter = [], 0
    for seed in range(24):
        cluster, pods, order, state, book = random_cluster(seed)
        b = cluster_bound(state, pods, order, book)
        every = list(range(cluster.n))  # every node a source: the whole cluster's optimum
        out = solve_cycle(state, pods, order, book, every, [], [], None, set(), 20.0)
        assert out.status == "optimal"
        assert check_cycle(state, pods, order, book, out.moves, {}, None, set()) == []
        gain = out.objective - out.baseline
        assert b.lp_gain is not None
        assert 0 <= gain <= min(b.counting_gain, b.lp_gain) + 1e-9
        lp_tighter += b.lp_gain < b.counting_gain
        with monkeypatch.context() as m:  # too many patterns: sizes rounded down, still valid
            m.setattr(defrag_bound, "MAX_PATTERNS", 2)
            coarse = pattern_bound(state, pods, order, book)
        assert b.lp_gain <= coarse and gain <= coarse
        after = state.copy()
        for a in out.moves:
            after.remove(pods, int(order[a]), int(book.node[a]), book.gpus[a])
        for a, (node, gpus) in out.moves.items():
            after.place(pods, int(order[a]), node, list(gpus))
        assert b.free_now <= int((after.exists & (after.gpu_left == 1000)).sum()) <= b.free_max
        gains.append(gain)
    assert max(gains) > 0  # some of these clusters can be consolidated: not a vacuous test
    assert lp_tighter > 0  # and the pattern LP cuts the counting bound on some


def test_a_budgeted_cycle_counts_its_variables_frees_a_gpu_and_is_checked() -> None:
    _cluster, pods, order, state, book = two_halves(300)
    assert cycle_variables(state, pods, order, book, [0], []) == 4  # 2 pods x 2 GPUs
    run = budgeted_consolidation(state, pods, order, book, [0], 2.0)
    assert run.errors == [] and run.sources == [0] and run.outcome.variables == 4
    assert len(run.moves) == 1 and run.gain == 6.0
    # the same answer, broken: the moved pod onto a GPU the node does not have
    ((a, (node, _gpus)),) = run.moves.items()
    bad = check_cycle(state, pods, order, book, {a: (node, (2,))}, {}, None, set())
    assert any("GPU 2" in e for e in bad)
    # a deadline the build already passed: no solve, nothing moves
    late = solve_cycle(
        state, pods, order, book, [0], [], [], None, set(), 2.0, deadline=time.perf_counter()
    )
    assert late.status == "no_solution" and late.moves == {} and late.variables == 4
    assert math.isnan(late.gap)  # no solution proves no gap (it read 0 before)
    # a budget of no new migration: the cycle moves nothing
    run = budgeted_consolidation(state, pods, order, book, [0], 2.0, budget_left=0)
    assert run.errors == [] and run.moves == {} and run.gain == 0.0


def lone_pods_on_two_nodes(cpu: int):
    """Two nodes of one GPU, each holding one 300-milli pod asking 8 cores."""
    cluster, pods = setup(
        [GpuNode(f"n{i}", "G", 1, 0, 0, cpu, 65_536) for i in range(2)],
        [GpuJob(x, gpu_milli=300, cpu_milli=8_000, memory_mib=1) for x in ("a", "b")],
    )
    order = np.array([pods.names.index(x) for x in ("a", "b")])
    state, book = TraceState(cluster), Book(2, cluster.n)
    for a in (0, 1):
        state.place(pods, int(order[a]), a, [0])
        book.put(a, a, (0,))
    return pods, order, state, book


def test_the_cycle_greedy_empties_a_gpu_only_where_the_cpu_allows() -> None:
    for cpu, gain in ((10_000, 0.0), (16_000, 6.0)):  # a node has 2 or 8 cores left
        pods, order, state, book = lone_pods_on_two_nodes(cpu)
        run = budgeted_consolidation(state, pods, order, book, [0, 1], 2.0)
        assert run.errors == [] and run.gain == gain and len(run.moves) == int(gain > 0)
        exact = solve_cycle(state, pods, order, book, [0, 1], [], [], None, set(), 10.0)
        assert exact.status == "optimal" and exact.objective - exact.baseline == gain
        if gain:
            assert run.greedy_moves == 1  # the greedy found it, before CP-SAT
