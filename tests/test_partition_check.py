"""The partition checker rejects each kind of broken solution and recomputes the objective."""

from __future__ import annotations

import pytest

from placement.models.partition import Mode, PartitionSolution, check
from placement.models.partition.check import objective_ns
from tests.optima import instance

GB = 10**9


def two_way_split():
    return instance("partition", "two_way_split")


def transfer_tradeoff(mode: Mode):
    return instance(
        "partition", "transfer_bottleneck" if mode == Mode.TRAINING else "transfer_latency"
    )


def memory_forces_split():
    return instance("partition", "memory_forces_split")


def serving_pipeline():
    return instance("partition", "serving_pipeline")


def colocated():
    return instance("partition", "colocated")


def test_objective_by_hand() -> None:
    inst = two_way_split()
    report = check(inst, PartitionSolution((0, 1, 1, 1)))
    assert report.feasible and report.objective == pytest.approx(6.0)
    assert check(inst, PartitionSolution((0, 0, 1, 1))).objective == pytest.approx(7.0)
    assert check(inst, PartitionSolution((1, 1, 1, 1))).objective == pytest.approx(10.0)


def test_transfers_load_both_ends_but_count_once_in_latency() -> None:
    split = PartitionSolution((0, 1))
    assert check(transfer_tradeoff(Mode.TRAINING), split).objective == pytest.approx(7.0)
    assert check(transfer_tradeoff(Mode.INFERENCE), split).objective == pytest.approx(12.0)
    assert objective_ns(transfer_tradeoff(Mode.INFERENCE), (1, 1)) == 10_000_000


def test_rejects_wrong_length() -> None:
    report = check(two_way_split(), PartitionSolution((0, 1)))
    assert not report.feasible and "2 layer assignments for 4 layers" in report.violations[0]


def test_rejects_unplaced_layer_and_unknown_device() -> None:
    report = check(two_way_split(), PartitionSolution((0, -1, 1, 7)))
    assert not report.feasible
    assert any("'l1' is not placed" in v for v in report.violations)
    assert any("'l3' is not placed" in v for v in report.violations)


def test_rejects_memory_overflow() -> None:
    inst = memory_forces_split()  # 1 GB layers, 2 GB devices
    report = check(inst, PartitionSolution((1, 1, 1)))
    assert not report.feasible
    assert report.violations == [
        f"device 'fast': layers need {3 * GB} bytes, it has {2 * GB} ({GB} bytes over)"
    ]


def test_serving_memory_counts_kv_cache() -> None:
    inst = serving_pipeline()  # 1.52 GB per layer with the KV cache, 3.1 GB devices
    assert inst.layer_memory_bytes(0) == GB + (5_000_000 + 125_000 * 1000) * 2 * 2
    assert check(inst, PartitionSolution((0, 0, 1, 1))).feasible
    assert not check(inst, PartitionSolution((0, 0, 0, 1))).feasible


def test_serving_stages_limited_by_micro_batches_in_flight() -> None:
    report = check(serving_pipeline(), PartitionSolution((0, 1, 2, 2)))
    assert not report.feasible
    assert report.violations == [
        "3 stages, at most in_flight_microbatches = 2 (a serving pipeline needs a micro-batch "
        "per stage)"
    ]


def test_rejects_non_contiguous_split() -> None:
    report = check(two_way_split(), PartitionSolution((0, 1, 0, 1)))
    assert not report.feasible
    assert any("more than one contiguous range" in v for v in report.violations)


def test_non_contiguous_allowed_by_option() -> None:
    from dataclasses import replace

    inst = two_way_split()
    inst.workload = replace(inst.workload, non_contiguous=True)
    report = check(inst, PartitionSolution((0, 1, 0, 1)))
    assert report.feasible and report.objective == pytest.approx(6.0)


def test_rejects_split_colocation_group() -> None:
    report = check(colocated(), PartitionSolution((0, 0, 1, 1)))
    assert not report.feasible
    assert any("colocation group 'x'" in v for v in report.violations)


def test_rejects_other_types() -> None:
    report = check(two_way_split(), (0, 1, 1, 1))  # type: ignore[arg-type]
    assert not report.feasible and "not a PartitionSolution" in report.violations[0]
