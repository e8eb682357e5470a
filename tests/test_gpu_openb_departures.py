"""The openb trace with departures: departures free capacity, the pending queue is retried,
BE pods are preempted for LS pods only in the preempt mode, migrations make room; the trace
times reader names bad values."""

from __future__ import annotations

import numpy as np
import pytest

from placement.models.gpu.instance import GpuJob, GpuNode
from placement.models.gpu.sim.openb.departures import PodTimes, read_pod_times, replay_departures
from placement.models.gpu.sim.openb.online import make_any
from placement.models.gpu.sim.openb.replay import PodSet, TraceCluster
from placement.solver.errors import InputError


def one_gpu(qos=("LS", "LS"), life=(10, 10)):
    """One node with one GPU; pods p0, p1 want it whole; they arrive at 0 and 5 (window 10)."""
    cluster = TraceCluster.from_nodes([GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)])
    pods = PodSet.from_jobs(
        [GpuJob(f"p{i}", gpus=1, cpu_milli=1_000, memory_mib=1) for i in range(2)], cluster
    )
    times = PodTimes(np.zeros(2, dtype=np.int64), np.array(life, dtype=np.int64), tuple(qos))
    return cluster, pods, times


def run(cluster, pods, times, mode="none", policy="FGD", order=(0, 1), **kw):
    return replay_departures(
        cluster, pods, times, make_any(policy), 0, 10.0, mode, order=np.array(order), **kw
    )


def test_a_departure_frees_capacity_and_the_waiting_pod_starts_then() -> None:
    cluster, pods, times = one_gpu()
    for policy in ("FGD", "BestFit", "FGD+BF-tie"):
        r = run(cluster, pods, times, policy=policy)
        # p1 arrives at 5, waits for p0 to leave at 10
        assert r.wait.tolist() == [0.0, 5.0] and r.waited.tolist() == [False, True]
        assert r.preemptions == 0 and r.invalid == 0
        assert r.alloc.tolist() == [100.0, 100.0, 100.0]  # times 0, 5, 10
        # Kant's metrics over the replay (0-10 s): the GPU held throughout, p1 waiting 5 s
        assert r.kant.gar == 1.0 and r.kant.gfr == 0.0 and r.kant.sor == 1.0
        assert r.kant.jwtd_s.max == 5.0 and r.kant.waiting_gpu_h == pytest.approx(5 / 3600)


def test_the_pending_queue_is_retried_in_arrival_order() -> None:
    cluster = TraceCluster.from_nodes([GpuNode("n0", "G", 1, 0, 0, 64_000, 65_536)])
    pods = PodSet.from_jobs(
        [GpuJob(f"p{i}", gpus=1, cpu_milli=1_000, memory_mib=1) for i in range(3)], cluster
    )
    times = PodTimes(np.zeros(3, dtype=np.int64), np.array([12, 4, 4]), ("LS",) * 3)
    r = replay_departures(cluster, pods, times, make_any("FGD"), 0, 9.0, order=np.arange(3))
    # arrivals at 0, 3, 6; p0 leaves at 12 -> p1 (older) starts at 12, leaves at 16 -> p2
    assert r.wait.tolist() == [0.0, 9.0, 10.0]
    assert r.waited.mean() == pytest.approx(2 / 3)


def test_ls_preempts_be_only_in_the_preempt_mode() -> None:
    cluster, pods, times = one_gpu(qos=("BE", "LS"))
    assert run(cluster, pods, times).preemptions == 0
    r = run(cluster, pods, times, mode="preempt")
    # p1 (LS) evicts p0 (BE) at 5; p0 restarts its whole lifetime when p1 leaves at 15
    assert r.preemptions == 1 and r.wait.tolist() == [10.0, 0.0]
    # Kant's waits count p0's wait between its two runs; the GPU never idles
    assert r.kant.jwtd_s.max == 10.0 and r.kant.gar == 1.0
    # an LS pod never evicts an LS pod, a BE pod never evicts anything
    for qos in (("LS", "LS"), ("LS", "BE")):
        cluster, pods, times = one_gpu(qos=qos)
        assert run(cluster, pods, times, mode="preempt").preemptions == 0


def two_half_gpu_pods_and_a_whole_one():
    """One node with 2 GPUs; arrivals at 0, 1, 2, 3 (window 4): a and d (half a GPU each) fill
    GPU 0, b (half) takes GPU 1, d leaves at 3, then w (a whole GPU) finds half of each GPU
    free and no whole GPU: moving one half-GPU pod makes room."""
    cluster = TraceCluster.from_nodes([GpuNode("n0", "G", 2, 0, 0, 64_000, 65_536)])
    pods = PodSet.from_jobs(
        [
            GpuJob("a", gpu_milli=500, cpu_milli=1_000, memory_mib=1),
            GpuJob("b", gpu_milli=500, cpu_milli=1_000, memory_mib=1),
            GpuJob("d", gpu_milli=500, cpu_milli=1_000, memory_mib=1),
            GpuJob("w", gpus=1, cpu_milli=1_000, memory_mib=1),
        ],
        cluster,
    )
    times = PodTimes(np.zeros(4, dtype=np.int64), np.array([100, 100, 2, 100]), ("LS",) * 4)
    return cluster, pods, times, np.array([0, 2, 1, 3])


def migrating(**options):
    """The case above replayed with migrations and no budget (``options``: more settings)."""
    cluster, pods, times, order = two_half_gpu_pods_and_a_whole_one()
    return replay_departures(
        cluster,
        pods,
        times,
        make_any("FGD"),
        0,
        4.0,
        "migrate",
        budget=None,
        order=order,
        time_limit=5.0,
        **options,
    )


def test_a_migration_makes_room_for_a_waiting_pod() -> None:
    cluster, pods, times, order = two_half_gpu_pods_and_a_whole_one()
    plain = replay_departures(cluster, pods, times, make_any("FGD"), 0, 4.0, order=order)
    assert plain.wait.tolist() == [0.0, 0.0, 0.0, 97.0]  # w starts when a leaves at 100
    moved = migrating()
    assert moved.invalid == 0 and moved.cycles == 1
    assert moved.migrated == 1 and moved.wait.tolist() == [0.0, 0.0, 0.0, 0.0]
    # a budget of 0 pods (a fraction 0.2 of 4 arrivals) allows no migration
    capped = replay_departures(
        cluster, pods, times, make_any("FGD"), 0, 4.0, "migrate", budget=0.2, order=order
    )
    assert capped.migrated == 0 and capped.wait[3] == 97.0


def test_the_times_reader_names_the_bad_line(tmp_path) -> None:
    cluster, pods, _ = one_gpu()
    path = tmp_path / "pods.csv"
    path.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time,qos\n"
        "p0,1000,1,1,1000,0,10,BE\np1,1000,1,1,1000,5,3,LS\n"
    )
    with pytest.raises(InputError, match="line 3.deletion_time"):
        read_pod_times(path, pods)
    path.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
        "p0,1000,1,1,1000,0,10\np1,1000,1,1,1000,5,30\n"
    )
    times = read_pod_times(path, pods)
    assert times.lifetime.tolist() == [10, 25] and times.qos == ("LS", "LS")


def test_disruption_counts_moves_and_the_gpu_seconds_they_cost() -> None:
    # Preemption: p1 (LS) evicts p0 (BE, 1 GPU) at 5, after p0 ran 5 s: p0 loses its 5 s of
    # work and the restart, on 1 GPU. The replay's clock ends at 15, when p0 starts again.
    cluster, pods, times = one_gpu(qos=("BE", "LS"))
    r = run(cluster, pods, times, mode="preempt", restart_s=30.0)
    assert r.preemptions == 1 and r.restart_s == 30.0
    assert r.lost_gpu_s == pytest.approx(5.0 + 30.0)
    assert r.times[-1] == 15.0 and r.moves_per_hour == pytest.approx(3600 / 15)
    # Nothing moves: nothing lost.
    quiet = run(cluster, pods, times)
    assert quiet.lost_gpu_s == 0.0 and quiet.moves_per_hour == 0.0


def test_a_migration_costs_the_restart_on_the_gpus_the_pod_holds() -> None:
    # As test_a_migration_makes_room_for_a_waiting_pod: one pod of half a GPU moves once.
    moved = migrating(restart_s=40.0)
    assert moved.migrations == 1 and moved.lost_gpu_s == pytest.approx(0.5 * 40.0)


def repacking(cluster, pods, times, order, window, **options):
    """A replay in the ``repack`` mode: a cycle after every arrival while pods wait."""
    settings = {"budget": None, "every": 1, "cycle_time_s": 10.0, **options}
    return replay_departures(
        cluster, pods, times, make_any("FGD"), 0, window, "repack", order=order, **settings
    )


def test_a_repack_cycle_starts_the_pod_the_plain_replay_leaves_waiting() -> None:
    """The migration case above: w (a whole GPU) finds half of each GPU free at 3 and waits
    97 s without moves; the re-packing cycle moves one half-GPU resident next to the other
    and starts w at once. Every move is counted in the disruption figures: one migration
    of half a GPU, the restart on it, one move over the replay's 3 s."""
    cluster, pods, times, order = two_half_gpu_pods_and_a_whole_one()
    plain = replay_departures(cluster, pods, times, make_any("FGD"), 0, 4.0, order=order)
    assert plain.wait[3] == 97.0 and plain.migrations == plain.cycles == 0
    r = repacking(cluster, pods, times, order, 4.0, restart_s=40.0)
    assert r.wait.tolist() == [0.0, 0.0, 0.0, 0.0] and r.waited.tolist()[3]
    assert r.cycles == 1 and r.placed_waiting == 1 and r.planned == 2
    assert r.migrations == r.migrated == 1 and r.rejected == 0 and r.invalid == 0
    assert r.lost_gpu_s == pytest.approx(0.5 * 40.0)
    assert r.times[-1] == 3.0 and r.moves_per_hour == pytest.approx(3600 / 3)
    assert len(r.cycle_seconds) == 1
    # Kant's metrics see the cycle's start: no job waited (97 s without moves)
    assert r.kant.jwtd_s.max == 0.0 and plain.kant.jwtd_s.max == 97.0


def test_a_migrated_pod_keeps_its_departure_time() -> None:
    """As above, and e (a whole GPU) arrives at 4 when both GPUs are full: it waits for a
    whole GPU. a (0-100) and b (2-102) share GPU 0 or 1 after the cycle, w holds the other
    from 3 to 103; so e starts at 102, when b leaves at its own time, whichever of a and b
    the cycle moved at 3. Had the move restarted the pod's lifetime (3 + 100), or lost its
    departure, e would start at 103 when w leaves."""
    cluster = TraceCluster.from_nodes([GpuNode("n0", "G", 2, 0, 0, 64_000, 65_536)])
    half = {"gpu_milli": 500, "cpu_milli": 1_000, "memory_mib": 1}
    pods = PodSet.from_jobs(
        [
            GpuJob("a", **half),
            GpuJob("b", **half),
            GpuJob("d", **half),
            GpuJob("w", gpus=1, cpu_milli=1_000, memory_mib=1),
            GpuJob("e", gpus=1, cpu_milli=1_000, memory_mib=1),
        ],
        cluster,
    )
    times = PodTimes(np.zeros(5, dtype=np.int64), np.array([100, 100, 2, 100, 10]), ("LS",) * 5)
    order = np.array([0, 2, 1, 3, 4])  # arrivals at 0, 1, 2, 3, 4: a, d, b, w, e
    r = repacking(cluster, pods, times, order, 5.0)
    assert r.migrations == 1 and r.placed_waiting == 1 and r.rejected == 0
    assert r.wait.tolist() == [0.0, 0.0, 0.0, 0.0, 98.0]
    assert r.times[-1] == 102.0 and r.invalid == 0


def test_repack_replays_stay_within_budget_and_valid() -> None:
    """Small random clusters, the arrivals three times over with random lifetimes, so pods
    wait while others leave; without a budget and within 10 % of the arrived pods: every
    pod starts in the end, no planned move is rejected (nothing intervenes inside a cycle),
    the cluster passes the from-scratch check after every cycle, every applied move is a
    counted migration, and the pods migrated within the budget never exceed it although
    without one the cycles migrate more (on seed 6: 5 pods of 27 arrivals)."""
    from tests.test_gpu_openb_config_bound import _random_case

    over = 0
    for seed in (3, 4, 6):
        rng = np.random.default_rng(seed)
        cluster, pods, arrived = _random_case(rng)
        order = np.concatenate([arrived, arrived, arrived])
        life = rng.integers(1, 30, size=pods.n).astype(np.int64)
        times = PodTimes(np.zeros(pods.n, dtype=np.int64), life, ("LS",) * pods.n)
        cap = int(0.1 * len(order))
        free = repacking(cluster, pods, times, order, 10.0, budget=None, cycle_time_s=3.0)
        capped = repacking(cluster, pods, times, order, 10.0, budget=0.1, cycle_time_s=3.0)
        for r in (free, capped):
            assert r.cycles >= 1 and r.rejected == 0 and r.invalid == 0
            assert not np.isnan(r.wait).any()
            assert r.migrations >= r.migrated and r.planned >= r.migrations + r.placed_waiting
        assert free.migrations >= 1 and free.placed_waiting >= 1
        assert capped.migrated <= cap
        over = max(over, free.migrated - cap)
    assert over > 0  # the budget cut what the cycles would have moved
    none = repacking(cluster, pods, times, order, 10.0, budget=0.0)
    assert none.cycles == none.migrations == 0  # a budget of 0 runs no cycle
