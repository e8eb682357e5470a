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
