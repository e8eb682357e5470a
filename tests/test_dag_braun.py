"""The Braun-style ETC generator (models/dag/braun.py) against the published protocol.

Braun et al., JPDC 61(6) 2001, section 3: ``B(t) ~ U(1, R_task)``, ``ETC(t, m) = B(t) *
U(1, R_mach)``; R_task 3,000 (hi) / 100 (lo), R_mach 1,000 (hi) / 10 (lo); consistent rows
sorted, semi-consistent even columns sorted, inconsistent as drawn.
"""

from __future__ import annotations

import numpy as np
import pytest

from placement.models.dag import check
from placement.models.dag.braun import CLASSES, UNIT, BraunClass, braun_etc, braun_instance
from placement.models.dag.greedy import min_min
from placement.solver.errors import InputError


def test_twelve_classes_with_the_published_names() -> None:
    names = [c.name for c in CLASSES]
    assert len(set(names)) == 12
    assert names[0] == "u_c_hihi" and names[-1] == "u_i_lolo"
    assert BraunClass.parse("u_s_lohi") == BraunClass("s", "lo", "hi")
    for bad in ("u_x_hihi", "u_c_hi", "c_hihi", "u_c_hihilo", ""):
        with pytest.raises(InputError):
            BraunClass.parse(bad)


@pytest.mark.parametrize("klass", CLASSES, ids=lambda c: c.name)
def test_ranges_and_consistency(klass: BraunClass) -> None:
    etc = braun_etc(400, 16, klass, seed=3)
    r_task = {"hi": 3000.0, "lo": 100.0}[klass.task]
    r_mach = {"hi": 1000.0, "lo": 10.0}[klass.machine]
    assert etc.shape == (400, 16)
    # U(1, R_task) * U(1, R_mach), rounded to one decimal.
    assert etc.min() >= 1.0 - 0.05
    assert etc.max() <= r_task * r_mach + 0.05
    assert np.allclose(etc, np.round(etc, 1))
    # Each task's row is its baseline times factors in [1, R_mach]: max / min <= R_mach.
    assert np.all(etc.max(axis=1) / etc.min(axis=1) <= r_mach * (1 + 1e-3) + 0.1)
    ordered = np.all(np.diff(etc, axis=1) >= 0, axis=1)
    even_ordered = np.all(np.diff(etc[:, ::2], axis=1) >= 0, axis=1)
    if klass.consistency == "c":
        assert ordered.all()
    elif klass.consistency == "s":
        assert even_ordered.all() and not ordered.all()
        # The odd columns are left as drawn: not sorted in most rows.
        assert np.mean(np.all(np.diff(etc[:, 1::2], axis=1) >= 0, axis=1)) < 0.5
    else:
        assert not even_ordered.any() or np.mean(even_ordered) < 0.05


def test_heterogeneity_spreads_as_published() -> None:
    # Task heterogeneity sets the spread of row means, machine heterogeneity the spread in a
    # row: hi-hi rows span far more than lo-lo rows.
    hihi = braun_etc(2000, 16, BraunClass.parse("u_i_hihi"), seed=1)
    lolo = braun_etc(2000, 16, BraunClass.parse("u_i_lolo"), seed=1)
    assert np.median(hihi.max(axis=1) / hihi.min(axis=1)) > 20
    assert np.median(lolo.max(axis=1) / lolo.min(axis=1)) < 10
    assert hihi.mean() / lolo.mean() > 100


def test_deterministic_per_seed_and_distinct_across_seeds_sizes_and_classes() -> None:
    k = BraunClass.parse("u_s_hilo")
    assert np.array_equal(braun_etc(64, 8, k, seed=5), braun_etc(64, 8, k, seed=5))
    assert not np.array_equal(braun_etc(64, 8, k, seed=5), braun_etc(64, 8, k, seed=6))
    other = BraunClass.parse("u_s_hihi")
    assert not np.array_equal(braun_etc(64, 8, k, seed=5), braun_etc(64, 8, other, seed=5))


def test_instance_is_valid_and_in_thousands_of_units() -> None:
    instance = braun_instance(40, 4, "u_c_lolo", seed=2)
    etc = braun_etc(40, 4, BraunClass.parse("u_c_lolo"), seed=2)
    assert instance.name == "u_c_lolo-40x4-s2"
    assert np.allclose(instance.duration, etc / UNIT)
    assert instance.independent
    assert check(instance, min_min(instance)).feasible
    with pytest.raises(InputError):
        braun_instance(0, 4, "u_c_lolo")
