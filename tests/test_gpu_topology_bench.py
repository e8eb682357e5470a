"""The ``gpu-topology`` benchmark: the cycle simulator on a tiny cluster and trace (departures
free GPUs, gangs all or nothing, waiting time and waiting GPU-hours right, every policy's
decisions checked), the generated trace, and the suite's option errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest

from placement.benchmarks.gpu.topology import common_cross_rack, cross_rack_at_mix
from placement.models.gpu import check
from placement.models.gpu.instance import GpuSolution, WorkerPlacement
from placement.models.gpu.sim.topology import (
    MIGRATION_RESTART_H,
    OURS,
    OURS_MIGRATE,
    OURS_NO_AGING,
    POLICIES,
    aging_priority,
    cross_rack_gb,
    decide,
    kant_of,
    simulate,
    summarise,
)
from placement.models.gpu.sim.topology_trace import (
    GANG_SIZES,
    TopologyTrace,
    TraceJob,
    topology_nodes,
    topology_trace,
)
from tests.conftest import REPO


def tiny(initial: tuple = (), jobs: tuple = (), hours: float = 2.0) -> TopologyTrace:
    """Two 8-GPU nodes in one rack."""
    return TopologyTrace(16, topology_nodes(16), initial, jobs, hours)


@pytest.mark.parametrize("policy", POLICIES)
def test_departures_free_gpus_and_the_wait_is_counted(policy: str) -> None:
    # the whole cluster held by a 2 x 8 gang until 0.5 h; an 8-GPU pod arrives at 0.1 h and
    # waits until the gang leaves; a 3 x 8 gang never fits (all or nothing) and waits to the
    # end (2 h)
    trace = tiny(
        jobs=(
            TraceJob("big", 0.0, 0.5, 2, 8, "rack", True),
            TraceJob("pod", 0.1, 0.25, 1, 8, kind="infer"),
            TraceJob("huge", 0.2, 1.0, 3, 8, "rack", False),
        )
    )
    stats = simulate(trace, policy, cycle_s=60.0, deadline_s=2.0)
    assert stats.placed_at[0] == 0.0
    assert stats.placed_at[1] == pytest.approx(0.5)
    assert 2 not in stats.placed_at
    # 16 GPUs until 0.5 h; the pod's 8 until 0.75 h; then nothing
    assert max(stats.allocated) == 16
    at = {round(t, 4): a for t, a in zip(stats.times_h, stats.allocated, strict=True)}
    assert at[0.4833] == 16 and at[0.5] == 8 and at[0.7333] == 8 and at[0.75] == 0
    assert stats.invalid == 0 and stats.decisions_checked == stats.cycles > 0
    s = summarise(trace, stats)
    assert s["wait_mean_h"] == pytest.approx((0 + 0.4 + 1.8) / 3)
    assert s["waiting_gpu_h"] == pytest.approx(8 * 0.4 + 24 * 1.8)
    assert s["still_waiting"] == 1 and s["invalid"] == 0
    # the 24-GPU gang is pending while only 16 GPUs exist: never "free but fragmented"
    assert s["fragmented_gangs"] == 0
    # Kant's metrics over the 2 h: 16 GPUs to 0.5 h, 8 to 0.75 h; whole nodes only
    k = kant_of(trace, stats)
    assert k.gar == pytest.approx((16 * 0.5 + 8 * 0.25) / (16 * 2))
    assert k.gfr == 0.0
    # work present fills the cluster throughout (the 24-GPU gang waits): SOR = GAR here
    assert k.sor == pytest.approx(k.gar)
    assert k.jwtd_s.max == pytest.approx(1.8 * 3600) and k.unstarted == 1
    assert k.waiting_gpu_h == pytest.approx(s["waiting_gpu_h"])


@pytest.mark.parametrize("policy", POLICIES)
def test_a_gang_with_its_gpus_free_but_scattered_is_counted(policy: str) -> None:
    # each node holds a 4-GPU pod until 1 h: 8 GPUs free in total, none whole node; an
    # 8-GPU single-node pod waits, its demand free but fragmented
    trace = tiny(
        initial=((0, 4, 1.0), (1, 4, 1.0)),
        jobs=(TraceJob("pod", 0.0, 0.5, 1, 8, kind="infer"),),
        hours=1.5,
    )
    stats = simulate(trace, policy, cycle_s=60.0, deadline_s=2.0)
    assert stats.invalid == 0
    if policy == OURS_MIGRATE:
        # moving one 4-GPU pod beside the other empties a node: the pod starts at once
        assert stats.placed_at[0] == 0.0 and stats.migrations == 1
        assert stats.restart_gpu_h == pytest.approx(4 * MIGRATION_RESTART_H)
        assert stats.fragmented_gangs == set()
        return
    assert stats.placed_at[0] == pytest.approx(1.0)
    assert stats.fragmented_gangs == {0} and stats.fragmented >= 1
    assert stats.migrations == 0


def test_ours_migrate_moves_only_what_places_more_and_the_moved_pod_restarts() -> None:
    # three nodes: a 7-GPU pod on node 0, a 2-GPU pod on node 1 (until 1 h), two 3-GPU pods
    # on node 2; an 8-GPU pod arrives at 0. The one move that empties a node: node 1's pod to
    # node 2's last 2 GPUs. Its run ends 5 min later; nothing else moves.
    trace = TopologyTrace(
        24,
        topology_nodes(24),
        ((0, 7, 3.0), (1, 2, 1.0), (2, 3, 3.0), (2, 3, 3.0)),
        (TraceJob("pod", 0.0, 0.5, 1, 8, kind="infer"),),
        2.0,
    )
    stats = simulate(trace, OURS_MIGRATE, cycle_s=60.0, deadline_s=2.0)
    assert stats.placed_at[0] == 0.0 and stats.invalid == 0
    assert stats.migrations == 1 and stats.migrate_applied == 1
    at = {round(t, 4): a for t, a in zip(stats.times_h, stats.allocated, strict=True)}
    # the 8-GPU pod runs until 0.5 h; the moved pod until 1 h + 5 min, not 1 h
    assert at[0.0] == 23 and at[0.5] == 15 and at[1.0] == 15
    assert at[round(1.0 + MIGRATION_RESTART_H, 4)] == 13
    s = summarise(trace, stats)
    assert s["waiting_gpu_h"] == 0.0
    assert s["waiting_and_restart_gpu_h"] == pytest.approx(2 * MIGRATION_RESTART_H)
    # Kant: the moved pod (time-0 background) holds 2 GPUs of node 2 to 1 h + 5 min. Partly
    # allocated: node 0 (7 of 8) all 2 h; node 2 (6 of 8) once the moved pod has left
    k = kant_of(trace, stats)
    gpu_h = 7 * 2 + 8 * 0.5 + 2 * (1 + MIGRATION_RESTART_H) + 6 * 2
    assert k.gar == pytest.approx(gpu_h / (24 * 2))
    assert k.gfr == pytest.approx((2 + (1 - MIGRATION_RESTART_H)) / (3 * 2))
    # without moves the pod waits for node 1's pod to end
    assert simulate(trace, OURS, cycle_s=60.0, deadline_s=2.0).placed_at[0] == pytest.approx(1.0)


def test_ours_migrate_does_not_move_when_nothing_more_fits() -> None:
    # the 2 x 8 gang needs both nodes empty; no move empties both: nothing moves
    trace = tiny(
        initial=((0, 4, 1.0), (1, 4, 1.0)),
        jobs=(TraceJob("g", 0.0, 0.5, 2, 8, "rack", True),),
        hours=0.5,
    )
    stats = simulate(trace, OURS_MIGRATE, cycle_s=60.0, deadline_s=2.0)
    assert stats.migrations == 0 and 0 not in stats.placed_at and stats.invalid == 0


def test_the_checker_rejects_a_half_placed_gang_on_a_cycle_instance() -> None:
    trace = tiny(jobs=(TraceJob("g", 0.0, 1.0, 2, 8, "rack", True),))
    instance = trace.instance([trace.jobs[0].as_job()], [(0,) * 8, (1000,) * 8])
    half = GpuSolution({0: (WorkerPlacement(0, tuple(range(8))),)})
    assert not check(instance, half).feasible
    onto_busy = GpuSolution({0: (WorkerPlacement(0, tuple(range(8))), WorkerPlacement(1, (0,)))})
    assert not check(instance, onto_busy).feasible


def test_cross_rack_traffic_counts_worker_pairs_across_racks() -> None:
    job = TraceJob("g", 0.0, 1.0, 4, 8, "rack")
    assert cross_rack_gb(job, ["a", "a", "a", "a"]) == 0.0
    # 2 + 2 in two racks: 4 of the 6 pairs cross
    assert cross_rack_gb(job, ["a", "a", "b", "b"]) == pytest.approx(
        job.as_job().traffic_gb * 4 / 6
    )


def test_the_generated_trace_is_seeded_and_within_the_issue_ranges() -> None:
    a, b = topology_trace(1024, 2.0, 7), topology_trace(1024, 2.0, 7)
    assert a == b and topology_trace(1024, 2.0, 8) != a
    assert len(a.nodes) == 128 and len({n.groups[0] for n in a.nodes}) == 16
    assert len({n.groups[1] for n in a.nodes}) == 2
    held = sum(g for _, g, _ in a.initial)
    assert 0.75 * 1024 <= held <= 0.85 * 1024
    gangs = [j for j in a.jobs if j.kind == "train"]
    assert gangs and all(2 <= j.workers <= 64 and 1 <= j.gpus <= 8 for j in gangs)
    assert all(j.level in ("rack", "block") for j in gangs)
    assert {j.required for j in gangs} == {True, False}
    assert all(j.workers == 1 for j in a.jobs if j.kind == "infer")
    assert all(0 <= j.arrival_h < 2.0 and j.duration_h > 0 for j in a.jobs)
    assert {(w, g) for w, g, _ in GANG_SIZES} >= {(j.workers, j.gpus) for j in gangs}


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "placement.api.cli", "bench", "gpu-topology", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("param", "expected"),
    [
        ("sizes=1000", "--param sizes"),
        ("policies=slurm", "--param policies"),
        ("hours=-1", "--param hours"),
        ("seeds=0", "--param seeds"),
    ],
)
def test_bad_options_are_one_line_errors(param: str, expected: str, tmp_path) -> None:
    proc = bench("--quick", "--out", str(tmp_path), "--param", param)
    assert proc.returncode == 2, proc.stderr
    assert expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


def test_ours_cycle_decision_is_deterministic() -> None:
    # ours' cycle solve stops on CP-SAT's deterministic time (one worker, seed 0): the same
    # cycle gives the same placements, whatever the machine's load
    trace = topology_trace(1024, 1.0, 3)
    used = [[0] * 8 for _ in trace.nodes]
    for n, g, _ in trace.initial[::2]:  # half of the pods at time 0: room for some jobs
        free = [i for i in range(8) if not used[n][i]]
        for i in free[:g]:
            used[n][i] = 1000
    jobs = [j.as_job() for j in trace.jobs[:12]]
    first = decide(OURS, trace.instance(jobs, [tuple(u) for u in used]), 0.5)
    again = decide(OURS, trace.instance(jobs, [tuple(u) for u in used]), 0.5)
    instance = trace.instance(jobs, [tuple(u) for u in used])
    assert check(instance, first.solution).feasible
    assert first.solution.placements == again.solution.placements and first.solution.placements


def test_cross_rack_over_the_gangs_both_placed() -> None:
    a = [{"seed": 0, "cross_rack": json.dumps({"1": 10.0, "2": 30.0, "5": 100.0})}]
    b = [{"seed": 0, "cross_rack": json.dumps({"1": 20.0, "2": 20.0})}]
    assert common_cross_rack(a, b) == (2, 20.0, 20.0)
    n, x, y = common_cross_rack(a, [{"seed": 1, "cross_rack": json.dumps({"1": 1.0})}])
    assert n == 0 and math.isnan(x) and math.isnan(y)


def test_ours_ages_the_queue_and_the_ablation_does_not() -> None:
    # node 0 frees its 8 GPUs at 0.5 h, node 1 stays full; a 4-GPU gang has waited since 0 h,
    # an 8-GPU pod since 0.45 h: ours' aging places the gang first (4 x 31 > 8 x 4); without
    # aging the most GPUs placed is the pod
    trace = tiny(
        initial=((0, 8, 0.5), (1, 8, 2.0)),
        jobs=(
            TraceJob("gang", 0.0, 1.0, 2, 2, "rack", True),
            TraceJob("pod", 0.45, 1.0, 1, 8, kind="infer"),
        ),
        hours=1.0,
    )
    assert aging_priority(0.0) == 1 and aging_priority(0.5) == 31
    aged = simulate(trace, OURS, cycle_s=60.0, deadline_s=2.0)
    assert aged.placed_at == {0: pytest.approx(0.5)} and aged.invalid == 0
    plain = simulate(trace, OURS_NO_AGING, cycle_s=60.0, deadline_s=2.0)
    assert plain.placed_at == {1: pytest.approx(0.5)} and plain.invalid == 0


def test_cross_rack_at_the_peer_mix_of_gang_sizes() -> None:
    # two gangs of different sizes from a real trace; a places both (less traffic for each),
    # ref places only the small one: a's mean per placed gang is higher, at ref's mix lower
    trace = topology_trace(1024, 2.0, 0)
    by_size: dict[int, int] = {}
    for k, job in enumerate(trace.jobs):
        if job.workers > 1:
            by_size.setdefault(job.demand, k)
    small, large = min(by_size), max(by_size)
    assert small < large

    def rows(gbs: dict[int, float]) -> list[dict]:
        cross = {str(by_size[d]): gb for d, gb in gbs.items()}
        return [{"gpus": 1024, "hours": 2.0, "seed": 0, "cross_rack": json.dumps(cross)}]

    a, ref = rows({small: 10.0, large: 500.0}), rows({small: 20.0})
    assert cross_rack_at_mix(a, ref) == (10.0, 20.0)
    mine, theirs = cross_rack_at_mix(ref, a)  # ref placed no large gang: that size is left out
    assert (mine, theirs) == (20.0, 10.0)
    x, y = cross_rack_at_mix(a, [{"gpus": 1024, "hours": 2.0, "seed": 0}])
    assert math.isnan(x) and math.isnan(y)
