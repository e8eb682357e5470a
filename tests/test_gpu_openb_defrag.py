"""Defragmentation cycles on the openb replay: known optima on tiny clusters (real CP-SAT),
the budget, the independent cycle check, and a whole replay re-checked from scratch."""

from __future__ import annotations

import numpy as np

from placement.models.gpu.instance import GpuJob, GpuNode
from placement.models.gpu.openb.batch import check_placement
from placement.models.gpu.openb.defrag import (
    Book,
    _fit_after,
    check_cycle,
    replay_defrag,
    solve_cycle,
)
from placement.models.gpu.openb.online import make_any
from placement.models.gpu.openb.replay import PodSet, TraceCluster, TraceState


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
