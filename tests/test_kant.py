"""Kant's metrics (models/gpu/sim/kant.py) on replays small enough to compute by hand."""

from __future__ import annotations

import pytest

from placement.models.gpu.sim.kant import JobRun, kant_metrics

NODES = {"n1": 4, "n2": 4}


def test_one_job_filling_one_node_half_the_time():
    # 0-10 s: a 4-GPU job on n1 (n1 full, n2 empty); 10-20 s: a 2-GPU job on n2 (partial).
    runs = [
        JobRun("a", 0.0, 0.0, 10.0, {"n1": 4}),
        JobRun("b", 0.0, 10.0, 20.0, {"n2": 2}),
    ]
    m = kant_metrics(NODES, runs)
    assert m.window_s == 20.0
    # GAR: (4 x 10 + 2 x 10) / (8 x 20)
    assert m.gar == pytest.approx(60 / 160)
    # GFR: n2 is partly allocated for 10 of 20 s, out of 2 nodes
    assert m.gfr == pytest.approx(10 / 40)
    # SOR: 0-10 s work present = 4 + 2 (b waits), capped at 8: 4/6; 10-20 s: 2/2
    assert m.sor == pytest.approx((10 * 4 / 6 + 10 * 1.0) / 20)
    assert m.jwtd_s.count == 2 and m.jwtd_s.max == 10.0 and m.jwtd_s.mean == 5.0
    assert m.waiting_gpu_h == pytest.approx(2 * 10 / 3600)
    assert m.jtted_kind == "completion_s" and m.jtted.max == 20.0
    assert m.unstarted == 0


def test_an_idle_cluster_with_work_waiting_has_a_low_sor():
    # b waits 0-10 s on an empty n2 that could hold it (a scheduler leaving GPUs idle).
    runs = [JobRun("b", 0.0, 10.0, 20.0, {"n2": 4})]
    m = kant_metrics(NODES, runs)
    assert m.sor == pytest.approx(0.5)
    assert m.gar == pytest.approx(4 * 10 / (8 * 20))


def test_unstarted_jobs_wait_to_the_window_end_and_estimates_give_ratios():
    runs = [
        JobRun("a", 0.0, 0.0, 5.0, {"n1": 4}, estimate_s=10.0),
        JobRun("z", 2.0, None, None, {}, gpus=16),
    ]
    m = kant_metrics(NODES, runs, window_end_s=12.0)
    assert m.unstarted == 1
    assert m.jwtd_s.max == 10.0
    assert m.waiting_gpu_h == pytest.approx(16 * 10 / 3600)
    assert m.jtted_kind == "run/estimate" and m.jtted.p50 == pytest.approx(0.5)


def test_inconsistent_runs_are_refused_naming_the_job():
    with pytest.raises(ValueError, match="job a: run 0 starts at 1.0, before"):
        kant_metrics(NODES, [JobRun("a", 5.0, 1.0, 6.0, {"n1": 1})])
    with pytest.raises(ValueError, match="job a: node 'n9'"):
        kant_metrics(NODES, [JobRun("a", 0.0, 1.0, 6.0, {"n9": 1})])


def test_an_evicted_job_waits_again_and_background_counts_only_in_the_rates():
    # a runs 0-4 on n1, is evicted, waits 4-6, runs 6-10 on n2; the background pod holds
    # n1's 4 GPUs 0-10 and is no job of the distributions.
    a = JobRun("a", 0.0, 0.0, 4.0, {"n1": 2}, later=((6.0, 10.0, {"n2": 2}),))
    bg = JobRun("bg", 0.0, 0.0, 10.0, {"n1": 2})
    m = kant_metrics(NODES, [a], background=[bg])
    assert m.jwtd_s.max == pytest.approx(2.0)
    assert m.waiting_gpu_h == pytest.approx(2 * 2 / 3600)
    # GPU-seconds: bg 20 + a 8 + 8 over 8 GPUs x 10 s
    assert m.gar == pytest.approx(36 / 80)
    # n1: full 0-4 (a + bg), partial 4-10; n2 partial 6-10: (6 + 4) / (2 x 10)
    assert m.gfr == pytest.approx(10 / 20)
    # a waits 4-6 while 6 GPUs are free: SOR 2/4 there, 1 elsewhere
    assert m.sor == pytest.approx((8 * 1.0 + 2 * 0.5) / 10)
    assert m.jtted.count == 1 and m.jtted.max == 10.0


def test_a_stopped_job_waits_to_the_window_end_and_fractions_of_gpus_count():
    a = JobRun("a", 0.0, 0.0, 4.0, {"n1": 0.5}, stopped=True)
    m = kant_metrics(NODES, [a], window_end_s=10.0)
    assert m.jwtd_s.max == pytest.approx(6.0)
    assert m.jtted.count == 0
    assert m.gfr == pytest.approx(4 / 20)
    assert m.gar == pytest.approx(0.5 * 4 / 80)
