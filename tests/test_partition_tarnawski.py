"""Tarnawski et al.'s problem as published: the accounting, the contiguity rule, the importer,
the checker's refusals, and brute force = DP over ideals = layer-graph IP on random graphs.

Brute force enumerates every assignment of layers to devices and keeps the checker's best
feasible one: a ground truth that shares nothing with the DP or the IP.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.benchmarks.partition.suites import cases_tarnawski
from placement.benchmarks.runner import BenchConfig
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
from placement.models.partition.check import objective_ns
from placement.models.partition.cpsat import CpSatEncoding
from placement.models.partition.formats.tarnawski import load_tarnawski
from placement.models.partition.ideals import enumerate_ideals, layer_graph, solve_ideals
from placement.models.partition.ideals_threshold import solve_ideals_within
from placement.models.partition.instance import (
    PartitionContiguity,
    PartitionTransferAccounting,
    instance_from_message,
    instance_to_message,
)
from placement.models.partition.layergraph_ip import solve_ip
from placement.solver import SolutionStatus, SolveOptions, solve
from placement.solver.cancel import CancellationToken
from placement.solver.errors import InputError
from placement.solver.family import validate
from placement.solver.testing import ExactContext

MS = 1e-3
CONVEX = PartitionContiguity.CONVEX
NONE = PartitionContiguity.NONE
PER_TENSOR = PartitionTransferAccounting.PER_TENSOR_VIA_HOST


def _paper(
    layers: list[Layer],
    edges: list[Edge],
    accelerators: int = 2,
    cpus: int = 1,
    memory: int = 10**9,
    contiguity: PartitionContiguity = CONVEX,
    accounting: PartitionTransferAccounting = PER_TENSOR,
) -> PartitionInstance:
    devices = [Device(f"acc{k}", "accelerator", memory) for k in range(accelerators)]
    devices += [Device(f"cpu{k}", "cpu", 2**50, host=True) for k in range(cpus)]
    inst = PartitionInstance(
        layers=layers,
        devices=devices,
        links=Links(),
        workload=Workload(
            mode=Mode.TRAINING, contiguity_rule=contiguity, transfer_accounting=accounting
        ),
        edges=edges,
    )
    validate(inst)
    return inst


def _layer(name: str, acc_ms: float, cpu_ms: float = 50.0, **kw: object) -> Layer:
    return Layer(
        name,
        times=(LayerTime("accelerator", acc_ms * MS), LayerTime("cpu", cpu_ms * MS)),
        **kw,  # type: ignore[arg-type]
    )


# --- the accounting, by hand -------------------------------------------------------------------


def _fan_out(accounting: PartitionTransferAccounting = PER_TENSOR) -> PartitionInstance:
    """a -> b, a -> c; a's output costs 1 ms; every layer 2 ms on an accelerator."""
    layers = [_layer("a", 2), _layer("b", 2), _layer("c", 2)]
    edges = [Edge(0, 1, 0, 1 * MS), Edge(0, 2, 0, 1 * MS)]
    return _paper(layers, edges, accelerators=3, contiguity=NONE, accounting=accounting)


def test_a_tensor_sent_to_one_device_twice_is_paid_once_there() -> None:
    inst = _fan_out()
    # a on acc0, b and c on acc1: acc0 sends a's output once (1 ms), acc1 receives it once.
    assert check(inst, PartitionSolution((0, 1, 1))).objective == pytest.approx(2 + 2 + 1)
    # Per edge, acc1 would pay both edges: 2 + 2 + 2.
    per_edge = _fan_out(PartitionTransferAccounting.PER_EDGE)
    assert check(per_edge, PartitionSolution((0, 1, 1))).objective == pytest.approx(6)


def test_a_tensor_sent_to_two_devices_is_paid_per_distinct_destination() -> None:
    inst = _fan_out()
    # a on acc0, b on acc1, c on acc2: acc0 pays 1 once (not per edge), each consumer 1.
    assert objective_ns(inst, (0, 1, 2)) == 3_000_000
    loads = {0: 2 + 1, 1: 2 + 1, 2: 2 + 1}
    assert check(inst, PartitionSolution((0, 1, 2))).objective == pytest.approx(max(loads.values()))
    # a with b on acc0 and c on acc1: acc0 still sends a's output once (2 + 2 + 1).
    assert check(inst, PartitionSolution((0, 0, 1))).objective == pytest.approx(5)


def test_the_host_cpu_pays_no_transfer() -> None:
    inst = _fan_out()
    cpu = 3
    # c on the CPU (50 ms there, no transfer); a, b on acc0 pay a's output once: 2 + 2 + 1.
    report = check(inst, PartitionSolution((0, 0, cpu)))
    assert report.feasible
    assert report.objective == pytest.approx(50)
    fast_cpu = replace(inst)
    fast_cpu.layers = [inst.layers[0], inst.layers[1], _layer("c", 2, cpu_ms=0.5)]
    assert check(fast_cpu, PartitionSolution((0, 0, cpu))).objective == pytest.approx(5)


# --- contiguity --------------------------------------------------------------------------------


def _two_chains() -> PartitionInstance:
    """a -> b and c -> d, no transfer cost."""
    layers = [_layer(x, 1) for x in "abcd"]
    return _paper(layers, [Edge(0, 1), Edge(2, 3)], accelerators=2, cpus=0)


def test_convexity_rejects_a_set_a_path_leaves_and_reenters() -> None:
    layers = [_layer(x, 1) for x in "abc"]
    inst = _paper(layers, [Edge(0, 1), Edge(1, 2)], accelerators=2, cpus=0)
    report = check(inst, PartitionSolution((0, 1, 0)))
    assert not report.feasible
    assert "not convex" in report.violations[0]
    assert check(inst, PartitionSolution((0, 0, 1))).feasible
    # The non-contiguous variant accepts it.
    loose = replace(inst)
    loose.workload = replace(inst.workload, contiguity_rule=NONE)
    assert check(loose, PartitionSolution((0, 1, 0))).feasible


def test_convex_sets_that_depend_on_each_other_in_a_cycle_are_rejected() -> None:
    inst = _two_chains()
    # {a, d} and {b, c}: each convex, but a -> b and c -> d make a cycle of devices.
    report = check(inst, PartitionSolution((0, 1, 1, 0)))
    assert not report.feasible
    assert "cycle" in report.violations[0]
    # {a, c} and {b, d}: a chain of ideals.
    assert check(inst, PartitionSolution((0, 1, 0, 1))).feasible


def test_backward_layers_are_outside_the_contiguity_rule() -> None:
    # a -> b forward, b' -> a' backward twins colocated with b and a.
    layers = [
        _layer("a", 1, colocation_group="A"),
        _layer("b", 1, colocation_group="B"),
        _layer("b'", 1, colocation_group="B", backward=True),
        _layer("a'", 1, colocation_group="A", backward=True),
    ]
    edges = [Edge(0, 1), Edge(1, 2), Edge(2, 3), Edge(0, 3)]
    inst = _paper(layers, edges, accelerators=2, cpus=0)
    assert check(inst, PartitionSolution((0, 1, 1, 0))).feasible
    # Splitting a colour class (a from a') is refused.
    report = check(inst, PartitionSolution((0, 1, 1, 1)))
    assert any("colocation group 'A'" in v for v in report.violations)


# --- the checker's other refusals --------------------------------------------------------------


def test_checker_rejects_a_layer_not_supported_on_the_accelerator() -> None:
    layers = [_layer("a", 1), _layer("b", 1, allowed_device_types=("cpu",))]
    inst = _paper(layers, [Edge(0, 1)], accelerators=1, cpus=1)
    report = check(inst, PartitionSolution((0, 0)))
    assert not report.feasible
    assert "runs only on cpu" in report.violations[0]
    assert check(inst, PartitionSolution((0, 1))).feasible


def test_checker_rejects_memory_overflow_on_an_accelerator_not_on_the_cpu() -> None:
    layers = [_layer("a", 1, extra_memory_bytes=600), _layer("b", 1, extra_memory_bytes=600)]
    inst = _paper(layers, [Edge(0, 1)], accelerators=1, cpus=1, memory=1000)
    report = check(inst, PartitionSolution((0, 0)))
    assert not report.feasible
    assert "bytes over" in report.violations[0]
    assert check(inst, PartitionSolution((0, 1))).feasible


def test_fields_round_trip_through_the_message() -> None:
    inst = _fan_out()
    again = instance_from_message(instance_to_message(inst))
    assert again.workload.contiguity is NONE
    assert again.workload.transfer_accounting is PER_TENSOR
    assert again.devices[3].host
    assert objective_ns(again, (0, 1, 2)) == objective_ns(inst, (0, 1, 2))


def test_per_tensor_accounting_refuses_two_costs_out_of_one_layer() -> None:
    inst = _fan_out()
    msg = instance_to_message(inst)
    msg.edges[1].transfer_s = 2 * MS
    with pytest.raises(InputError) as info:
        instance_from_message(msg)
    assert info.value.errors[0].path == "partition.edges[1].transfer_s"


# --- brute force = DP over ideals = IP ---------------------------------------------------------


def _brute_force(inst: PartitionInstance) -> int | None:
    best = None
    for device_of in itertools.product(range(len(inst.devices)), repeat=len(inst.layers)):
        report = check(inst, PartitionSolution(device_of))
        if report.feasible:
            value = objective_ns(inst, device_of)
            best = value if best is None else min(best, value)
    return best


@st.composite
def layer_graphs(draw: st.DrawFn) -> PartitionInstance:
    n = draw(st.integers(1, 5))
    backward = draw(st.booleans()) and n <= 3
    forward_edges = [(i, j) for i in range(n) for j in range(i + 1, n) if draw(st.booleans())]
    classes = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
    cpus = draw(st.integers(0, 1))
    layers = []
    for i in range(n):
        supported = draw(st.integers(0, 5)) > 0 or not cpus
        layers.append(
            _layer(
                f"f{i}",
                draw(st.integers(1, 9)),
                cpu_ms=draw(st.integers(1, 30)),
                extra_memory_bytes=draw(st.integers(0, 4)) * 100,
                colocation_group=f"c{classes[i]}",
                allowed_device_types=() if supported else ("cpu",),
            )
        )
    edges = [Edge(i, j, 0, 0.0) for i, j in forward_edges]
    if backward:
        # Backward twins b_i in reverse order, each colocated with its forward node.
        for i in reversed(range(n)):
            layers.append(
                _layer(
                    f"b{i}",
                    draw(st.integers(0, 9)),
                    cpu_ms=draw(st.integers(0, 30)),
                    colocation_group=f"c{classes[i]}",
                    backward=True,
                )
            )
        twin = {i: 2 * n - 1 - i for i in range(n)}
        edges += [Edge(twin[j], twin[i], 0, 0.0) for i, j in forward_edges]
        edges += [Edge(i, twin[i], 0, 0.0) for i in range(n)]
    # One transfer time per source layer.
    tau = {i: draw(st.integers(0, 4)) * MS for i in range(len(layers))}
    edges = [Edge(e.src, e.dst, 0, tau[e.src]) for e in edges]
    return _paper(
        layers,
        edges,
        accelerators=draw(st.integers(1, 2)),
        cpus=cpus,
        memory=draw(st.integers(2, 8)) * 100,
        contiguity=draw(st.sampled_from([CONVEX, CONVEX, NONE, PartitionContiguity.ORDER])),
    )


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(layer_graphs())
def test_brute_force_equals_dp_equals_ip(inst: PartitionInstance) -> None:
    truth = _brute_force(inst)
    g = layer_graph(inst)
    ideals = enumerate_ideals(g)
    if ideals is not None:
        dp = solve_ideals(g, ideals)
        assert dp.objective_ns == truth
        if dp.solution is not None:
            report = check(inst, dp.solution)
            assert report.feasible, report.violations
            assert objective_ns(inst, dp.solution.device_of) == truth
    if inst.workload.contiguity is PartitionContiguity.ORDER:
        return  # the IP models CONVEX and NONE; ORDER is the DP over prefixes
    ip = solve_ip(g, SolveOptions(time_limit_s=20, threads=1), CancellationToken(), 20)
    if truth is None:
        assert ip.infeasible
        return
    assert ip.proven
    assert ip.objective_ns == truth
    assert ip.solution is not None and check(inst, ip.solution).feasible


def test_the_encodings_prove_the_brute_force_optimum() -> None:
    # A diamond with a fan-out, 2 accelerators and a CPU, through both encodings.
    layers = [_layer("a", 3), _layer("b", 4), _layer("c", 5), _layer("d", 2, cpu_ms=3)]
    tau = [1 * MS, 0.5 * MS, 0.5 * MS, 0.0]
    edges = [Edge(s, d, 0, tau[s]) for s, d in ((0, 1), (0, 2), (1, 3), (2, 3))]
    inst = _paper(layers, edges)
    truth = _brute_force(inst)
    for encoding in (CpSatEncoding(use_dp=False), CpSatEncoding()):
        ctx = ExactContext(inst, SolveOptions(time_limit_s=20, threads=1))
        outcome = encoding.solve(inst, ctx)
        assert outcome.proven_optimal
        assert objective_ns(inst, ctx.best.device_of) == truth


# --- the importer on the published files ------------------------------------------------------


def test_import_gives_the_papers_problem(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / "partition/tarnawski-layergraphs/bert24_training.json"
    raw = json.loads(path.read_text())
    inst = load_tarnawski(path)
    validate(inst)
    assert len(inst.layers) == len(raw["nodes"]) == 64
    assert sum(lay.backward for lay in inst.layers) == 32
    types = [d.type for d in inst.devices]
    assert types.count("accelerator") == raw["maxFPGAs"] == 6
    assert types.count("cpu") == raw["maxCPUs"] == 1 and inst.devices[-1].host
    assert inst.workload.contiguity is CONVEX
    assert inst.workload.transfer_accounting is PER_TENSOR
    # Every node keeps its own accelerator and CPU latency.
    by_name = {n["name"]: n for n in raw["nodes"]}
    for lay in inst.layers:
        acc = lay.measured("accelerator")
        cpu = lay.measured("cpu")
        assert acc is not None and cpu is not None
        node = by_name[lay.name]
        assert (acc.forward_s + acc.backward_s) * 1000 == pytest.approx(node["fpgaLatency"])
        assert (cpu.forward_s + cpu.backward_s) * 1000 == pytest.approx(node["cpuLatency"])
    # The portfolio proves the paper's optimum (the DP over 39 ideals).
    result = solve(inst, SolveOptions(time_limit_s=20, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.objective == pytest.approx(41.745812)


def test_paper_optimum_beats_the_order_contiguous_one(shared_benchmarks: Path) -> None:
    # ResNet-50 inference: a convex split that no range of the layer order gives.
    path = shared_benchmarks / "partition/tarnawski-layergraphs/resnet50_inference.json"
    inst = load_tarnawski(path)
    g = layer_graph(inst)
    convex = solve_ideals(g, enumerate_ideals(g))  # type: ignore[arg-type]
    order = solve_ideals(g, enumerate_ideals(g, rule=PartitionContiguity.ORDER))  # type: ignore[arg-type]
    assert convex.objective_ns == 33_774_667
    assert order.objective_ns is not None and convex.objective_ns < order.objective_ns
    assert convex.solution is not None and check(inst, convex.solution).feasible


def test_import_options_are_checked(shared_benchmarks: Path) -> None:
    path = shared_benchmarks / "partition/tarnawski-layergraphs/bert24_inference.json"
    with pytest.raises(InputError):
        load_tarnawski(path, contiguity="diagonal")
    loose = load_tarnawski(path, contiguity="none")
    assert loose.workload.contiguity is NONE


def test_import_refuses_two_costs_out_of_one_node(tmp_path: Path) -> None:
    doc = {
        "maxSizePerFPGA": 100,
        "maxFPGAs": 2,
        "maxCPUs": 1,
        "nodes": [
            {"id": k, "fpgaLatency": 1, "cpuLatency": 2, "isBackwardNode": 0, "size": 1}
            for k in (1, 2, 3)
        ],
        "edges": [
            {"sourceId": 1, "destId": 2, "cost": 1},
            {"sourceId": 1, "destId": 3, "cost": 2},
        ],
    }
    path = tmp_path / "g.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as info:
        load_tarnawski(path)
    assert info.value.errors[0].path == "edges[1].cost"
    doc["edges"][1]["cost"] = 1
    doc["nodes"][2]["supportedOnFpga"] = 0
    path.write_text(json.dumps(doc))
    inst = load_tarnawski(path)
    assert inst.layers[2].allowed_device_types == ("cpu",)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(inst=layer_graphs())
def test_the_ip_path_of_the_encoding_proves_the_brute_force_optimum(
    inst: PartitionInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No ideal is few enough for the DP: the encoding seeds with the order-contiguous split,
    # asks the decision form whether anything is better, then minimises.
    monkeypatch.setattr("placement.models.partition.layergraph_exact.MAX_IDEALS", 0)
    monkeypatch.setattr("placement.models.partition.layergraph_exact.MAX_THRESHOLD_IDEALS", 0)
    if inst.workload.contiguity is PartitionContiguity.ORDER:
        return
    truth = _brute_force(inst)
    ctx = ExactContext(inst, SolveOptions(time_limit_s=20, threads=1))
    outcome = CpSatEncoding().solve(inst, ctx)
    if truth is None:
        assert outcome.proven_infeasible or ctx.best is None
        return
    assert outcome.proven_optimal, outcome.message
    assert objective_ns(inst, ctx.best.device_of) == truth


# --- the DP within a threshold ------------------------------------------------------------------


@st.composite
def wider_layer_graphs(draw: st.DrawFn) -> PartitionInstance:
    """Up to 12 forward layers (too many for brute force: the full DP, checked against brute
    force above, is the reference), optional backward twins, fan-outs, 1-3 accelerators and
    0-1 CPU, either accounting."""
    n = draw(st.integers(2, 12))
    backward = draw(st.booleans())
    forward_edges = [
        (i, j) for i in range(n) for j in range(i + 1, min(n, i + 4)) if draw(st.booleans())
    ]
    group = draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n))
    layers = [
        _layer(
            f"f{i}",
            draw(st.integers(0, 9)),
            cpu_ms=draw(st.integers(0, 40)),
            extra_memory_bytes=draw(st.integers(0, 4)) * 100,
            colocation_group=f"c{group[i]}" if draw(st.booleans()) else "",
        )
        for i in range(n)
    ]
    edges = [Edge(i, j, 0, 0.0) for i, j in forward_edges]
    if backward:
        for i in reversed(range(n)):
            layers.append(
                _layer(
                    f"b{i}",
                    draw(st.integers(0, 9)),
                    cpu_ms=draw(st.integers(0, 40)),
                    colocation_group=layers[i].colocation_group or f"t{i}",
                    backward=True,
                )
            )
            if not layers[i].colocation_group:
                layers[i] = replace(layers[i], colocation_group=f"t{i}")
        twin = {i: 2 * n - 1 - i for i in range(n)}
        edges += [Edge(twin[j], twin[i], 0, 0.0) for i, j in forward_edges]
        edges += [Edge(i, twin[i], 0, 0.0) for i in range(n)]
    accounting = draw(st.sampled_from([PER_TENSOR, PartitionTransferAccounting.PER_EDGE]))
    if accounting is PER_TENSOR:
        tau = {i: draw(st.integers(0, 4)) * MS for i in range(len(layers))}
        edges = [Edge(e.src, e.dst, 0, tau[e.src]) for e in edges]
    else:
        edges = [Edge(e.src, e.dst, 0, draw(st.integers(0, 4)) * MS) for e in edges]
    return _paper(
        layers,
        edges,
        accelerators=draw(st.integers(1, 3)),
        cpus=draw(st.integers(0, 1)),
        memory=draw(st.integers(3, 12)) * 100,
        accounting=accounting,
    )


def _downsets_by_definition(g) -> set[tuple[bool, ...]]:  # type: ignore[no-untyped-def]
    out = set()
    for bits in itertools.product((False, True), repeat=g.n_units):
        if all(bits[a] or not bits[b] for a, b in g.arcs):
            out.add(bits)
    return out


@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(wider_layer_graphs(), st.integers(0, 30))
def test_the_dp_within_a_threshold_equals_the_full_dp(inst: PartitionInstance, extra: int) -> None:
    g = layer_graph(inst)
    ideals = enumerate_ideals(g, 5_000)
    assert ideals is not None
    if g.n_units <= 12:
        # The vectorised enumeration lists every downset once, empty first, full last.
        rows = {tuple(bool(b) for b in row) for row in ideals}
        assert len(rows) == len(ideals)
        assert rows == _downsets_by_definition(g)
        assert not ideals[0].any() and ideals[-1].all()
    full = solve_ideals(g, ideals)
    if full.objective_ns is None:
        assert solve_ideals_within(g, ideals, 10**12).objective_ns is None
        return
    opt = full.objective_ns
    for cap in (opt, opt + extra * 250_000, 2 * opt + 1):
        within = solve_ideals_within(g, ideals, cap, max_pairs=None)
        assert within.objective_ns == opt
        assert within.solution is not None
        report = check(inst, within.solution)
        assert report.feasible, report.violations
        assert objective_ns(inst, within.solution.device_of) == opt
    if opt > 0:
        # Below the optimum: a proof that every split exceeds the threshold.
        below = solve_ideals_within(g, ideals, opt - 1, max_pairs=None)
        assert below.objective_ns is None and below.solution is None and not below.stopped
    # Any chain of listed sets: the prefixes of the layer order (sums by products there).
    prefixes = enumerate_ideals(g, 5_000, rule=PartitionContiguity.ORDER)
    assert prefixes is not None
    by_order = solve_ideals(g, prefixes)
    if by_order.objective_ns is not None:
        within = solve_ideals_within(g, prefixes, by_order.objective_ns, max_pairs=None)
        assert within.objective_ns == by_order.objective_ns


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(inst=layer_graphs())
def test_the_threshold_path_of_the_encoding_proves_the_brute_force_optimum(
    inst: PartitionInstance, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Too many ideals for the full DP: the encoding runs the DP within the incumbent's value.
    monkeypatch.setattr("placement.models.partition.layergraph_exact.MAX_IDEALS", 0)
    if inst.workload.contiguity is not CONVEX:
        return
    truth = _brute_force(inst)
    ctx = ExactContext(inst, SolveOptions(time_limit_s=20, threads=1))
    outcome = CpSatEncoding().solve(inst, ctx)
    if truth is None:
        assert outcome.proven_infeasible or ctx.best is None
        return
    assert outcome.proven_optimal, outcome.message
    assert objective_ns(inst, ctx.best.device_of) == truth


def test_inception_v3_training_is_proved_by_the_dp_within_the_incumbent(
    shared_benchmarks: Path,
) -> None:
    # 36,596 ideals: the full DP's pairs are too many; within the order-contiguous split's
    # max-load (123.284 ms) the DP proves 122.761612 ms (the IP's optimum, found in minutes).
    path = shared_benchmarks / "partition/tarnawski-layergraphs/inceptionv3_training.json"
    inst = load_tarnawski(path)
    ctx = ExactContext(inst, SolveOptions(time_limit_s=120, threads=1))
    outcome = CpSatEncoding().solve(inst, ctx)
    assert outcome.proven_optimal, outcome.message
    assert "within the incumbent" in outcome.message
    assert objective_ns(inst, ctx.best.device_of) == 122_761_612
    assert check(inst, ctx.best).feasible


def test_the_tarnawski_suite_runs_the_workloads_asked(shared_benchmarks: Path) -> None:
    # `placement bench partition-tarnawski --param workloads=...`: a subset, or a clear error.
    def config(**params: object) -> BenchConfig:
        return BenchConfig(
            "partition-tarnawski", 10.0, False, Path("unused"), shared_benchmarks, params=params
        )

    assert len(cases_tarnawski(config())) == 8
    picked = cases_tarnawski(config(workloads=("inceptionv3_training", "bert24_inference")))
    assert sorted(c["case"] for c in picked) == ["bert24_inference", "inceptionv3_training"]
    with pytest.raises(InputError) as info:
        cases_tarnawski(config(workloads=("inception",)))
    assert info.value.errors[0].path == "--param workloads"
