"""Property-based: on random small chains and DAGs, brute force = DP = CP-SAT = MILP.

Brute force enumerates every assignment of layers to devices and keeps the checker's best
feasible one: a ground truth that shares nothing with the DP or the encodings.
"""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from placement.models.partition import (
    Device,
    Edge,
    Layer,
    LayerTime,
    Links,
    Mode,
    PartitionInstance,
    PartitionSolution,
    Workload,
    check,
)
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.dp import solve_dp
from placement.models.partition.milp import MilpEncoding
from placement.models.partition.tables import bandwidth_range, comm_is_uniform
from placement.solver import SolveOptions
from placement.solver.family import validate
from placement.solver.testing import ExactContext

MB = 10**6


@st.composite
def instances(draw: st.DrawFn, uniform: bool = True) -> PartitionInstance:
    n = draw(st.integers(1, 6))
    n_dev = draw(st.integers(1, 3))
    types = draw(st.lists(st.sampled_from(["x", "y"]), min_size=n_dev, max_size=n_dev))
    # LLM_SERVING_FLOW is Helix's max-flow model (its own tests: test_partition_helix.py);
    # EDGE_SPLIT_QUANTIZED is QPART's request (test_partition_edge_split.py)
    mode = draw(st.sampled_from([m for m in Mode if m not in (Mode.SERVING_FLOW, Mode.EDGE_SPLIT)]))
    groups = draw(st.lists(st.sampled_from(["", "", "", "g"]), min_size=n, max_size=n))
    layers = [
        Layer(
            f"l{i}",
            param_bytes=draw(st.integers(0, 4)) * MB,
            activation_bytes=draw(st.integers(0, 3)) * MB,
            kv_cache_bytes_per_token=draw(st.integers(0, 2)) * 1000,
            colocation_group=groups[i],
            times=(
                LayerTime("x", draw(st.integers(1, 9)) / 1000, draw(st.integers(0, 9)) / 1000),
                LayerTime("y", draw(st.integers(1, 9)) / 1000, draw(st.integers(0, 9)) / 1000),
            ),
        )
        for i in range(n)
    ]
    edges: list[Edge] = []
    if n > 2 and draw(st.booleans()):
        edges = [Edge(i, i + 1, layers[i].activation_bytes) for i in range(n - 1)]
        edges.append(Edge(0, n - 1, draw(st.integers(0, 3)) * MB))
    nodes = ["n0"] * n_dev if not uniform else [""] * n_dev
    devices = [
        Device(f"d{k}", types[k], draw(st.integers(2, 30)) * MB, node=nodes[k])
        for k in range(n_dev)
    ]
    if not uniform and n_dev > 1:
        devices[-1] = Device(
            devices[-1].name, devices[-1].type, devices[-1].memory_bytes, node="n1"
        )
    return PartitionInstance(
        layers,
        devices,
        links=Links(draw(st.sampled_from([1e9, 1e10])), 4e10 if not uniform else 0.0),
        workload=Workload(
            mode=mode,
            batch_size=draw(st.integers(1, 2)),
            context_length=100,
            in_flight_microbatches=draw(st.integers(1, 3)),
        ),
        edges=edges,
    )


def brute_force_ms(instance: PartitionInstance) -> float | None:
    best = None
    for device_of in itertools.product(range(len(instance.devices)), repeat=len(instance.layers)):
        report = check(instance, PartitionSolution(device_of))
        if report.feasible and (best is None or report.objective < best):
            best = report.objective
    return best


def _exact(encoding: type, instance: PartitionInstance):
    ctx = ExactContext(instance, SolveOptions(time_limit_s=10, threads=1))
    return ctx.run(encoding(use_dp=False))


SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(instances())
def test_dp_cpsat_milp_and_brute_force_agree(instance: PartitionInstance) -> None:
    validate(instance)
    truth = brute_force_ms(instance)
    event("infeasible" if truth is None else "feasible")
    dp = solve_dp(instance)
    assert dp.exact
    for outcome in (_exact(CpSatEncoding, instance), _exact(MilpEncoding, instance)):
        if truth is None:
            assert outcome.proven_infeasible, outcome.message
        else:
            assert outcome.proven_optimal, outcome.message
            assert check(instance, outcome.proven_solution).objective == truth
    if truth is None:
        assert dp.solution is None
    else:
        assert dp.objective_ns / 1e6 == truth
        assert check(instance, dp.solution).objective == truth


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(uniform=False))
def test_several_link_speeds_bracket_the_optimum(instance: PartitionInstance) -> None:
    """DP over the fastest link <= optimum <= checker's value of the DP over the slowest."""
    validate(instance)
    truth = brute_force_ms(instance)
    slow, fast = bandwidth_range(instance)
    low = solve_dp(instance, bandwidth=fast)
    high = solve_dp(instance, bandwidth=slow)
    if truth is None:
        assert low.solution is None and high.solution is None
        return
    assert low.objective_ns / 1e6 <= truth + 1e-9
    report = check(instance, high.solution)
    assert report.feasible and report.objective >= truth - 1e-9
    outcome = _exact(CpSatEncoding, instance)
    assert not outcome.proven_optimal or comm_is_uniform(instance)
    if outcome.proven_optimal:
        assert check(instance, outcome.proven_solution).objective == truth
    if outcome.bound is not None:
        assert outcome.bound <= truth + 1e-9
