"""The Q-CAST-style generator: seeded, within its stated ranges, and valid."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from placement.models.entanglement import FAMILY
from placement.models.entanglement.generate import generate
from placement.models.entanglement.instance import instance_from_dict
from placement.solver.errors import InputError


def test_same_seed_same_instance_and_different_seed_differs() -> None:
    a, b, c = generate(50, seed=4), generate(50, seed=4), generate(50, seed=5)
    assert FAMILY.instance_to_dict(a) == FAMILY.instance_to_dict(b)
    assert FAMILY.instance_to_dict(a) != FAMILY.instance_to_dict(c)


@pytest.mark.parametrize("n", [50, 100])
def test_ranges_degree_and_mean_success(n: int) -> None:
    instance = generate(n, degree=6, success=0.6, swap=0.9, pairs=10, seed=1)
    assert all(10 <= node.qubits <= 14 for node in instance.nodes)
    assert all(3 <= link.channels <= 7 for link in instance.links)
    assert all(0 <= node.x <= 100 and 0 <= node.y <= 100 for node in instance.nodes)
    assert all(node.swap_success == 0.9 for node in instance.nodes)
    assert np.mean([link.success for link in instance.links]) == pytest.approx(0.6, abs=1e-6)
    degree = 2 * len(instance.links) / n
    assert 4.5 <= degree <= 7.5
    graph = nx.Graph([(link.a, link.b) for link in instance.links])
    assert graph.number_of_nodes() == n and nx.is_connected(graph)
    assert len(instance.requests) == 10
    assert all(r.source != r.destination for r in instance.requests)
    assert "placement generate entanglement --nodes" in instance.description


def test_round_trip_through_json() -> None:
    instance = generate(30, seed=2, min_fidelity=0.8, link_fidelity=(0.95, 0.99))
    again = instance_from_dict(FAMILY.instance_to_dict(instance))
    assert FAMILY.instance_to_dict(again) == FAMILY.instance_to_dict(instance)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"nodes": 1}, "nodes"),
        ({"success": 1.5}, "success"),
        ({"swap": 0.0}, "swap"),
        ({"link_fidelity": (0.2, 0.9)}, "link_fidelity"),
    ],
)
def test_bad_parameters_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        generate(**kwargs)
    assert err.value.errors[0].path == field
