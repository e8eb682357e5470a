"""Lagrangian machine weights by mirror ascent, and the parametric (Lenstra-Shmoys-Tardos)
lower bound of R||Cmax computed from them.

For machine weights ``w >= 0`` summing to 1 and a makespan ``T``, let

    g_T(w) = sum_t min { w[m] d[t, m] : d[t, m] <= T }       (+inf when a task has none).

Any schedule of makespan ``C <= T`` uses only pairs with ``d[t, m] <= C <= T``, and its
makespan is at least its weighted mean load, so ``C >= sum_m w[m] load[m] >= g_T(w)``.
Hence a ``T`` with ``g_T(w) > T`` admits no schedule of makespan ``<= T``: the optimum is
above ``T``. ``g_T`` does not increase with ``T``, so the largest such ``T`` is found by
bisection (:func:`parametric_bound`). This is the bound of Lenstra, Shmoys and Tardos,
"Approximation algorithms for scheduling unrelated parallel machines", Math. Prog. 46
(1990), section 2 (the LP with ``x[t, m] = 0`` wherever ``d[t, m] > T``, and the smallest
``T`` whose LP is feasible), in its Lagrangian form: with the weights that maximise
``g_T`` (the duals of that LP's load rows) it equals the LST bound, with any other weights
it is still valid. With ``T`` infinite it is the plain assignment LP's value
(:func:`~.lp.lagrangian_bound`); it is never below that.

:func:`ascend` finds good weights without an LP: ``g_T`` is concave and its supergradient
at ``w`` is the load vector of the assignment that puts each task on its cheapest weighted
machine (minus ``g_T(w)`` along the simplex), so an exponentiated-gradient (mirror) ascent
on the simplex converges towards the LP's duals in milliseconds a step with numpy (Nesterov,
"Primal-dual subgradient methods for convex problems", Math. Prog. 120 (2009); the same
Lagrangian as Martello and Toth's bounds for generalised assignment). Every iterate gives a
valid bound; the best one is kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np


def weighted_min(d: np.ndarray, weight: np.ndarray, cap: float = np.inf) -> np.ndarray:
    """Per task, ``min { weight[m] d[t, m] : d[t, m] <= cap }`` (``inf`` when none)."""
    ok = np.isfinite(d) & (d <= cap)
    scaled = np.where(ok, np.where(ok, d, 0.0) * weight[None, :], np.inf)
    return scaled.min(axis=1)


def g_value(d: np.ndarray, weight: np.ndarray, cap: float = np.inf) -> float:
    """``g_T(w)`` of the module docstring for ``T = cap``, weights normalised to sum 1."""
    w = np.maximum(np.asarray(weight, dtype=float), 0.0)
    if not np.isfinite(w).all() or w.sum() <= 0:
        return 0.0
    return float(weighted_min(d, w / w.sum(), cap).sum())


def needed_pairs(
    d: np.ndarray, weight: np.ndarray, ceiling: float, start: np.ndarray | None = None
) -> np.ndarray:
    """The (task, machine) pairs a schedule of makespan below ``ceiling`` may use, by
    Lagrangian reduced-cost fixing, plus the pairs of ``start`` (a machine per task): a
    boolean mask of ``d``'s shape.

    Such a schedule uses only pairs with ``d[t, m] < ceiling``, and its makespan is at least
    its weighted mean load ``g_T(w) + sum_t rc[t, a(t)]`` with ``T = ceiling`` and the
    reduced costs ``rc[t, m] = w[m] d[t, m] - min { w[m'] d[t, m'] : d[t, m'] <= T }``
    (each >= 0). So a pair with ``g_T(w) + rc[t, m] > ceiling`` is in no such schedule, with
    any weights. The optimum is then at least ``min(ceiling, B)`` for the bound ``B`` of a
    model on the other pairs; with a ``start`` of makespan ``ceiling`` in the model (as its
    MIP start), ``B <= ceiling``, so ``B`` itself is a lower bound on the whole instance."""
    w = np.maximum(np.asarray(weight, dtype=float), 0.0)
    ok = np.isfinite(d) & (d <= ceiling)
    keep = ok
    if np.isfinite(w).all() and w.sum() > 0:
        scaled = np.where(ok, np.where(ok, d, 0.0) * (w / w.sum())[None, :], np.inf)
        low = scaled.min(axis=1)
        if np.isfinite(low).all():  # else some task has no pair within the ceiling
            rc = scaled - low[:, None]
            keep = ok & (float(low.sum()) + rc <= ceiling * (1 + 1e-9) + 1e-12)
    if start is not None:
        keep = keep.copy()
        keep[np.arange(len(start)), np.asarray(start, dtype=np.int64)] = True
    return keep


def parametric_bound(
    d: np.ndarray, weight: np.ndarray, low: float, high: float, rounds: int = 60
) -> float:
    """The largest ``T`` in ``[low, high]`` shown infeasible by ``g_T(weight) > T`` (the
    optimum is then above it); ``low`` itself when none is. ``low`` must be a valid lower
    bound (it is returned as is when nothing better is shown).

    Bisection: ``T - g_T(w)`` only grows with ``T``, so the infeasible ``T`` form an interval
    from 0."""
    w = np.maximum(np.asarray(weight, dtype=float), 0.0)
    if not np.isfinite(w).all() or w.sum() <= 0 or not high > low:
        return float(low)
    w = w / w.sum()

    def infeasible(t: float) -> bool:
        return float(weighted_min(d, w, t).sum()) > t

    if not infeasible(low):
        return float(low)
    if infeasible(high):
        return float(high)
    lo, hi = float(low), float(high)
    for _ in range(rounds):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if infeasible(mid):
            lo = mid
        else:
            hi = mid
    return lo


def ascend(
    d: np.ndarray,
    weight: np.ndarray | None = None,
    cap: float = np.inf,
    max_steps: int = 400,
    should_stop: Callable[[], bool] | None = None,
    time_limit_s: float | None = None,
    step: float = 0.3,
) -> tuple[np.ndarray, float]:
    """Machine weights that (nearly) maximise ``g_cap`` by exponentiated-gradient ascent,
    from ``weight`` (default: inversely proportional to each machine's mean time); returns
    the best weights seen (summing to 1) and their value, a lower bound on the makespan of
    any schedule of makespan at most ``cap`` (of every schedule when ``cap`` is infinite).

    ``step`` is the first step size: the largest change of a log-weight in one step (the
    relative load excess, normalised to at most 1); it shrinks by 0.7 when 20 steps bring
    nothing better. From weights that are nearly optimal already (the LP's duals) a small
    one keeps the ascent near them.
    """
    n, k = d.shape
    ok = np.isfinite(d) & (d <= cap)
    if not ok.any(axis=1).all():
        return np.full(k, 1.0 / k), float("inf")
    base = np.where(ok, d, 0.0)
    if weight is None:
        mean = np.array(
            [col[o].mean() if o.any() else 1.0 for col, o in zip(base.T, ok.T, strict=True)]
        )
        w = 1.0 / np.maximum(mean, 1e-300)
    else:
        w = np.maximum(np.asarray(weight, dtype=float), 1e-12)
    w = w / w.sum()
    rows = np.arange(n)
    best_w, best = w.copy(), -np.inf
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    for i in range(max_steps):
        # At least one step: its value is the bound the caller gets.
        if i and should_stop is not None and should_stop():
            break
        if i and deadline is not None and time.monotonic() > deadline:
            break
        scaled = np.where(ok, base * w[None, :], np.inf)
        a = np.argmin(scaled, axis=1)
        value = float(scaled[rows, a].sum())
        if value > best:
            best, best_w = value, w.copy()
        elif i % 20 == 19:
            step *= 0.7  # no progress lately: smaller steps
        load = np.bincount(a, weights=base[rows, a], minlength=k)
        # The supergradient on the simplex, relative to the current value: machines loaded
        # above the weighted mean gain weight, idle ones lose it.
        grad = (load - value) / max(value, 1e-300)
        # Normalised to at most 1 in every coordinate: the first steps from a poor start
        # (on a consistent matrix every task's cheapest machine is the same few) have
        # relative excesses of 100 and more, and unnormalised they oscillate (u_c_hihi
        # 4,096 x 128: stuck 1 % below the LP for 300 steps; normalised, 0.001 % below).
        grad = grad / max(1.0, float(np.abs(grad).max()))
        w = w * np.exp(step * grad)
        w = np.maximum(w / w.sum(), 1e-12)
        w = w / w.sum()
    return best_w, float(best)
