"""A schedule built from Lagrangian machine weights: regret greedy under a load cap.

With machine weights ``w`` (the LP's load-row duals, or :func:`~.parametric.ascend`'s
estimate of them) the weighted time ``w[m] d[t, m]`` prices each placement: the LP puts
every task on a machine of least weighted time, and a schedule's weighted work bounds its
makespan from below (:mod:`.parametric`). :func:`regret_greedy` places the tasks one by
one, the task that would lose most by missing its cheapest machine first, each on its
cheapest machine (by weighted time) that stays within the load cap, or, when none does, on
the one where it ends earliest. It is the MTHG heuristic of Martello and Toth for the
generalised assignment problem ("An algorithm for the generalized assignment problem",
Operational Research '81, 1981) with the Lagrangian prices as desirabilities and the
candidate makespan as every machine's capacity. :func:`weighted_starts` gives it and the
plain cheapest-machine assignment as starts for the weighted critical-machine descent.
"""

from __future__ import annotations

import numpy as np

CAP_FACTOR = 1.03
"""The load cap of :func:`regret_greedy` in :func:`weighted_starts`, as a multiple of the
lower bound (measured at 4,096 x 128 with weights from 300 ascent steps: 1.03 gave the
best start after the descent on u_s_hihi of 1.0, 1.01 and 1.03; on u_i_lohi all within
0.1 %)."""


def cheapest(d: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Each task on a machine of least weighted time ``weight[m] d[t, m]``: with the LP's
    duals, the LP's support (machines overloaded where the LP splits tasks)."""
    finite = np.isfinite(d)
    w = np.maximum(np.asarray(weight, dtype=float), 1e-12)
    return np.argmin(np.where(finite, np.where(finite, d, 0.0) * w[None, :], np.inf), axis=1)


def regret_greedy(d: np.ndarray, weight: np.ndarray, cap: float) -> np.ndarray:
    """One machine per task (see the module docstring); every task on a machine where it
    may run (``d`` finite)."""
    n, k = d.shape
    finite = np.isfinite(d)
    w = np.maximum(np.asarray(weight, dtype=float), 1e-12)
    price = np.where(finite, np.where(finite, d, 0.0) * w[None, :], np.inf)
    two = np.partition(price, 1, axis=1)[:, :2] if k >= 2 else np.repeat(price, 2, axis=1)
    regret = np.where(np.isfinite(two[:, 1]), two[:, 1] - two[:, 0], np.inf)
    order = np.argsort(-regret, kind="stable")
    load = np.zeros(k)
    machine = np.empty(n, dtype=np.int64)
    for t in order:
        row = d[t]
        end = load + row
        fits = end <= cap
        # The cheapest machine within the cap, else the one where the task ends earliest.
        m = int(np.argmin(np.where(fits, price[t], np.inf) if fits.any() else end))
        machine[t] = m
        load[m] += row[m]
    return machine


def weighted_starts(d: np.ndarray, weight: np.ndarray, bound: float) -> list[np.ndarray]:
    """The starts the weights give: :func:`regret_greedy` at :data:`CAP_FACTOR` x ``bound``
    (first: on consistent matrices, where the cheapest machines are the same few for every
    task, the cap keeps it near level, so that the descent from it is short) and
    :func:`cheapest`. Both are far from level; the weighted critical-machine
    descent (:func:`~.critical.relieve` with ``weight``) levels them with least extra
    weighted work (at 4,096 x 128 on u_s_hihi from the LP's duals: 1.8 % above the LP in
    0.4 s)."""
    return [regret_greedy(d, weight, CAP_FACTOR * bound), cheapest(d, weight)]
