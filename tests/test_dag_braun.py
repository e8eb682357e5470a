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
from placement.models.dag.greedy import _batch_one_slot, min_min
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


def _reference(d: np.ndarray, pick: str) -> np.ndarray:
    """Min-Min / Max-Min / Sufferage as the papers state them, one full scan per round."""
    n, k = d.shape
    ready = np.zeros(k)
    left = list(range(n))
    machine = np.empty(n, dtype=np.int64)
    while left:
        c = ready[None, :] + d[left]
        first = np.argmin(c, axis=1)
        v1 = c[np.arange(len(left)), first]
        c2 = c.copy()
        c2[np.arange(len(left)), first] = np.inf
        gain = c2.min(axis=1) - v1
        gain = np.where(np.isfinite(gain), gain, np.finfo(float).max)
        i = {"min": np.argmin(v1), "max": np.argmax(v1), "sufferage": np.argmax(gain)}[pick]
        t = left.pop(int(i))
        machine[t] = first[i]
        ready[first[i]] += d[t, first[i]]
    return machine


@pytest.mark.parametrize("pick", ["min", "max", "sufferage"])
@pytest.mark.parametrize("klass", ["u_c_hihi", "u_s_lolo", "u_i_hilo"])
def test_shortlist_batch_heuristics_match_the_full_scan(pick: str, klass: str) -> None:
    # The shortlists (greedy._batch_one_slot) make the same choices as a full scan, ties
    # included: on generated rows, on rows with equal times on many machines, and with
    # machines a task may not use.
    d = braun_etc(150, 20, BraunClass.parse(klass), seed=7)
    tied = np.repeat(np.round(d[:, :1] / 100) + 1, 20, axis=1)
    tied[:, ::3] += 1
    barred = d.copy()
    barred[np.random.default_rng(0).random(d.shape) < 0.5] = np.inf
    barred[np.arange(150), np.arange(150) % 20] = 5.0
    for matrix in (d, tied, barred):
        assert np.array_equal(_batch_one_slot(matrix, pick), _reference(matrix, pick))
