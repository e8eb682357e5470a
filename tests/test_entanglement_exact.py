"""Exact encodings on generated networks, where the candidate paths do not cover every path:
no optimality claim, a valid whole-instance bound, never worse than the fallback."""

from __future__ import annotations

import pytest

from placement.models.entanglement import check
from placement.models.entanglement.generate import generate
from placement.models.entanglement.greedy import qcast_greedy
from placement.solver import SolutionStatus, SolveOptions, solve


@pytest.mark.parametrize(("backend", "milp_solver"), [("milp", "highs"), ("cpsat", "highs")])
def test_partial_candidate_model_is_not_called_optimal(backend: str, milp_solver: str) -> None:
    instance = generate(40, seed=3, pairs=5)
    result = solve(
        instance,
        SolveOptions(time_limit_s=8, backend=backend, milp_solver=milp_solver, threads=1),
    )
    greedy = check(instance, qcast_greedy(instance)).objective
    assert result.status == SolutionStatus.FEASIBLE
    assert check(instance, result.solution).feasible
    assert result.objective >= greedy - 1e-9
    assert result.bound is not None and result.bound >= result.objective
    assert "candidate" in result.message


def test_max_min_on_a_generated_network() -> None:
    instance = generate(30, seed=4, pairs=4)
    instance.objective = "max_min"
    result = solve(instance, SolveOptions(time_limit_s=8, backend="milp", threads=1))
    report = check(instance, result.solution)
    assert report.feasible
    assert list(report.terms) == ["min_throughput", "weighted_throughput"]
    greedy = check(instance, qcast_greedy(instance))
    assert report.score() >= greedy.score()


@pytest.mark.parametrize("backend", ["milp", "cpsat"])
@pytest.mark.parametrize("requests", [0, 1])
def test_nothing_to_route_is_proved_at_zero(backend: str, requests: int) -> None:
    from placement.models.entanglement import (
        EntanglementInstance,
        QuantumLink,
        QuantumNode,
        Request,
    )

    instance = EntanglementInstance(
        [QuantumNode("A", 1), QuantumNode("B", 1), QuantumNode("C", 1)],
        [QuantumLink(0, 1, 1, 0.5)],
        [Request("r", 0, 2)][:requests],  # C is not connected
    )
    result = solve(instance, SolveOptions(time_limit_s=5, backend=backend, threads=1))
    assert result.status == SolutionStatus.OPTIMAL
    assert result.objective == 0.0
    assert [u["kind"] for u in result.unplaced] == ["no_path"] * requests


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_method_violates_capacities_or_fidelity(seed: int) -> None:
    from placement.models.entanglement.check import path_fidelity
    from placement.models.entanglement.peers.reps import reps_rounding

    instance = generate(35, seed=seed, pairs=6, min_fidelity=0.9, link_fidelity=(0.95, 1.0))
    routings = [qcast_greedy(instance), reps_rounding(instance, SolveOptions(threads=1))]
    for backend in ("milp", "cpsat"):
        options = SolveOptions(time_limit_s=4, backend=backend, threads=1)
        routings.append(solve(instance, options).solution)
    for routing in routings:
        report = check(instance, routing)
        assert report.feasible, report.violations
        channels = [0] * len(instance.links)
        qubits = [0] * len(instance.nodes)
        for p in routing.paths:
            assert path_fidelity(instance, p) >= 0.9 - 1e-9
            for u, v in zip(p.nodes, p.nodes[1:], strict=False):
                channels[instance.link_between(u, v)] += p.width
            for pos, v in enumerate(p.nodes):
                qubits[v] += p.width if pos in (0, len(p.nodes) - 1) else 2 * p.width
        assert all(c <= lk.channels for c, lk in zip(channels, instance.links, strict=True))
        assert all(q <= n.qubits for q, n in zip(qubits, instance.nodes, strict=True))
