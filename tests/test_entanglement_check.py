"""The checker rejects every kind of broken routing, and its EXT (Q-CAST's recursion)
agrees with the encodings' EXT (sum of tail products) and with hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from placement.models.entanglement import EntanglementSolution, RoutedPath, check
from placement.models.entanglement.check import path_expected_throughput, path_fidelity
from placement.models.entanglement.generate import generate
from placement.models.entanglement.paths import path_ext
from tests.optima import instance


def chain():
    return instance("entanglement", "chain")


def hub():
    return instance("entanglement", "hub")


def fidelity_detour():
    return instance("entanglement", "fidelity_detour")


def _solution(*paths: RoutedPath) -> EntanglementSolution:
    return EntanglementSolution(tuple(paths))


def test_a_valid_routing_passes_with_its_hand_computed_ext() -> None:
    instance = chain()
    report = check(instance, _solution(RoutedPath(0, (0, 1, 2), 3)))
    assert report.feasible, report.violations
    assert report.objective == pytest.approx(1.053, abs=1e-12)
    # Width 2: P(X1>=1)P(X2>=1) + P(X1>=2)P(X2>=2) = .84 x .75 + .36 x .25 = .72, x 0.9.
    assert path_expected_throughput(instance, RoutedPath(0, (0, 1, 2), 2)) == pytest.approx(0.648)
    assert check(instance, _solution()).objective == 0.0


BROKEN = {
    "unknown request": (chain, RoutedPath(5, (0, 1, 2), 1), "does not exist"),
    "width zero": (chain, RoutedPath(0, (0, 1, 2), 0), "width"),
    "wrong source": (chain, RoutedPath(0, (1, 2), 1), "source"),
    "wrong destination": (chain, RoutedPath(0, (0, 1), 1), "destination"),
    "node twice": (hub, RoutedPath(0, (0, 2, 0, 2, 1), 1), "twice"),
    "not linked": (hub, RoutedPath(0, (0, 3, 2, 1), 1), "not linked"),
    "channels": (chain, RoutedPath(0, (0, 1, 2), 4), "channels used"),
    # Regression: EXT of an absurd width once overflowed (binomial coefficients as floats).
    "width 10**6": (chain, RoutedPath(0, (0, 1, 2), 10**6), "channels used"),
    "qubits": (hub, RoutedPath(1, (3, 2, 1), 2), "qubits used"),
    "fidelity": (fidelity_detour, RoutedPath(0, (0, 2), 1), "fidelity"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_each_kind_of_broken_routing_is_rejected(kind: str) -> None:
    make, path, words = BROKEN[kind]
    report = check(make(), _solution(path))
    assert not report.feasible
    assert any(words in v for v in report.violations), report.violations


def test_ext_of_wide_paths_is_finite_and_grows_with_width() -> None:
    # Widths up to the schema's 10,000 channels: log-space binomials, no overflow.
    probabilities, swaps = [0.6] * 10, [0.9] * 9
    from placement.models.entanglement.check import _qcast_ext

    values = [_qcast_ext(probabilities, swaps, w) for w in (1, 10, 100, 1000, 10_000)]
    assert all(math.isfinite(v) for v in values)
    assert values == sorted(values)
    # The smallest of 10 hops' successes is a little below the mean of one.
    assert 0.97 * 6_000 * 0.9**9 < values[-1] < 6_000 * 0.9**9


def test_capacities_add_up_over_paths_and_requests() -> None:
    instance = hub()
    # Each path alone is fine; together they need 2 channels on H-B, which has 1.
    ok = [RoutedPath(0, (0, 2, 1), 1), RoutedPath(1, (3, 2, 1), 1)]
    assert check(instance, _solution(ok[0])).feasible
    assert check(instance, _solution(ok[1])).feasible
    report = check(instance, _solution(*ok))
    assert not report.feasible
    assert any("H-B" in v for v in report.violations)


def test_fidelity_follows_the_werner_model() -> None:
    instance = fidelity_detour()
    w = (4 * 0.99 - 1) / 3
    assert path_fidelity(instance, RoutedPath(0, (0, 1, 2), 1)) == pytest.approx(
        (1 + 3 * w * w) / 4
    )
    assert path_fidelity(instance, RoutedPath(0, (0, 2), 1)) == pytest.approx(0.8)


def test_checker_and_encoding_ext_agree_on_random_paths() -> None:
    instance = generate(40, seed=5, pairs=0)
    rng = np.random.default_rng(0)
    for _ in range(40):
        # A random walk without repeats from a random node.
        nodes = [int(rng.integers(len(instance.nodes)))]
        for _ in range(int(rng.integers(1, 6))):
            options = [v for v, _ in instance.neighbours[nodes[-1]] if v not in nodes]
            if not options:
                break
            nodes.append(int(rng.choice(options)))
        if len(nodes) < 2:
            continue
        width = int(rng.integers(1, 8))
        path = RoutedPath(0, tuple(nodes), width)
        assert path_expected_throughput(instance, path) == pytest.approx(
            path_ext(instance, tuple(nodes), width), rel=1e-12, abs=1e-15
        )


def test_single_hop_ext_is_width_times_success() -> None:
    instance = chain()
    for width in (1, 2, 3):
        value = path_expected_throughput(instance, RoutedPath(0, (0, 1), width))
        assert value == pytest.approx(width * 0.6)
        assert math.isfinite(value)


def test_checker_and_encodings_agree_on_servable_requests() -> None:
    from placement.models.entanglement.check import servable
    from placement.models.entanglement.paths import servable_requests

    seen = set()
    for seed in range(4):
        instance = generate(40, seed=seed, pairs=12, min_fidelity=0.95, link_fidelity=(0.93, 1.0))
        flags = servable(instance)
        assert [r for r, ok in enumerate(flags) if ok] == servable_requests(instance)
        seen.update(flags)
    assert seen == {True, False}
