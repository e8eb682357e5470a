"""The Monte Carlo simulator agrees with EXT in expectation, and shares no code with the
models.

Tolerance: with a fixed seed, the mean delivered pairs per slot over N slots must lie within
4 standard errors (sample std / sqrt(N)) of the path's EXT.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest

from placement.models.entanglement import EntanglementSolution, RoutedPath
from placement.models.entanglement.check import path_expected_throughput
from placement.models.entanglement.generate import generate
from placement.models.entanglement.greedy import qcast_greedy
from placement.models.entanglement.sim.slots import simulate
from tests.optima import instance


def chain():
    return instance("entanglement", "chain")


SLOTS = 4000
STANDARD_ERRORS = 4.0


@pytest.mark.parametrize("width", [1, 2, 3])
def test_single_path_mean_matches_ext(width: int) -> None:
    instance = chain()
    path = RoutedPath(0, (0, 1, 2), width)
    result = simulate(instance, EntanglementSolution((path,)), slots=SLOTS, seed=11)
    expected = path_expected_throughput(instance, path)
    se = result.per_path_std[0] / math.sqrt(SLOTS)
    assert abs(result.per_path[0] - expected) <= STANDARD_ERRORS * se
    assert result.per_request[0] == result.per_path[0]


def test_long_paths_of_a_generated_network_match_ext() -> None:
    instance = generate(60, seed=3, pairs=6, swap=0.8)
    solution = qcast_greedy(instance)
    assert any(len(p.nodes) > 3 for p in solution.paths)
    result = simulate(instance, solution, slots=SLOTS, seed=5)
    for k, path in enumerate(solution.paths):
        expected = path_expected_throughput(instance, path)
        se = max(result.per_path_std[k], 1e-9) / math.sqrt(SLOTS)
        assert abs(result.per_path[k] - expected) <= STANDARD_ERRORS * se, (k, path)


def test_same_seed_same_result() -> None:
    instance = chain()
    solution = EntanglementSolution((RoutedPath(0, (0, 1, 2), 2),))
    assert simulate(instance, solution, 200, seed=1) == simulate(instance, solution, 200, seed=1)


def test_simulator_imports_only_the_typed_instance() -> None:
    source = Path(__file__).resolve().parent.parent / "models" / "entanglement" / "sim" / "slots.py"
    imported = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    family = {m for m in imported if m.startswith("placement.")}
    assert family == {"placement.models.entanglement.instance"}
