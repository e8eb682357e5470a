"""The variable-neighbourhood descent of the R||Cmax search: moves, swaps, ejection chains.

Each neighbourhood is evaluated with numpy over every candidate at once. The objective is
lexicographic: (makespan, number of critical machines, sum of squared loads).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placement.models.dag.rcmax.loads import REL_EPS, Loads

FULL_SWAP_MAX_TASKS = 1024
"""Above this many tasks the descent's swaps start only from the two most loaded machines
(all pairs need several tasks x tasks matrices)."""


def _pick(s: Loads, before: np.ndarray, after: np.ndarray, d_square: np.ndarray) -> int | None:
    """Index of the step to take among candidates, or None when none improves.

    ``before`` and ``after`` are the largest load among the machines a step touches, before
    and after it; ``d_square`` the change of the sum of squared loads. A step improves the
    lexicographic objective (makespan, number of critical machines, sum of squared loads)
    when it leaves every machine it touches below the makespan and either relieves a
    critical machine or lowers the sum of squares. Relieving steps come first; among equals,
    the largest fall of the sum of squares.
    """
    cmax = float(s.load.max())
    eps = REL_EPS * max(1.0, cmax)
    below = after < cmax - eps
    relieve = below & (before >= cmax - eps)
    pool = relieve if relieve.any() else below & (d_square < -eps * cmax)
    if not pool.any():
        return None
    return int(np.argmin(np.where(pool, d_square, np.inf)))


def _try_move(s: Loads) -> bool:
    """The best single-task move (every task, every machine)."""
    n = len(s.a)
    src = s.load[s.a]  # (n,)
    new_src = src - s.own
    new_dst = s.load[None, :] + s.d  # (n, k), inf where ineligible
    before = np.maximum(src[:, None], s.load[None, :])
    after = np.maximum(new_src[:, None], new_dst)
    after[np.arange(n), s.a] = np.inf
    d_square = (new_src**2 - src**2)[:, None] + new_dst**2 - s.load[None, :] ** 2
    i = _pick(s, before.ravel(), after.ravel(), d_square.ravel())
    if i is None:
        return False
    t, m = divmod(i, s.d.shape[1])
    s.move(t, m)
    return True


def _try_swap(s: Loads, tasks: np.ndarray | None = None) -> bool:
    """The best swap of one of ``tasks`` (default: every task) with a task on another
    machine."""
    if tasks is None:
        tasks = np.arange(len(s.a))
    ma, mb = s.a[tasks], s.a  # (T,), (n,)
    la, lb = s.load[ma], s.load[mb]
    # new_a[i, u]: the machine of tasks[i] after it leaves and u arrives; new_b: u's.
    new_a = la[:, None] - s.own[tasks][:, None] + s.d[:, ma].T
    new_b = lb[None, :] - s.own[None, :] + s.d[tasks][:, mb]
    before = np.maximum(la[:, None], lb[None, :])
    after = np.maximum(new_a, new_b)
    after[ma[:, None] == mb[None, :]] = np.inf
    d_square = new_a**2 + new_b**2 - (la**2)[:, None] - (lb**2)[None, :]
    i = _pick(s, before.ravel(), after.ravel(), np.nan_to_num(d_square, nan=np.inf).ravel())
    if i is None:
        return False
    ti, u = divmod(i, len(s.a))
    t = int(tasks[ti])
    mt, mu = int(s.a[t]), int(s.a[u])
    s.move(t, mu)
    s.move(u, mt)
    return True


def _try_chain(s: Loads, source: int) -> bool:
    """The best 2-move ejection chain from ``source``: task t goes to machine m2 and a task
    u of m2 goes on to a third machine m3 (the one where u ends earliest)."""
    tasks = np.flatnonzero(s.a == source)
    others = np.flatnonzero(s.a != source)
    if not len(tasks) or not len(others) or s.d.shape[1] < 3:
        return False
    rows = np.arange(len(others))
    m2 = s.a[others]  # (U,)
    # u's best third machine: not the source, not its own.
    third = s.load[None, :] + s.d[others]  # (U, k)
    third[:, source] = np.inf
    third[rows, m2] = np.inf
    m3 = np.argmin(third, axis=1)
    new_m3 = third[rows, m3]
    new_m2 = s.load[m2][None, :] - s.own[others][None, :] + s.d[tasks][:, m2]  # (T, U)
    new_src = s.load[source] - s.own[tasks]  # (T,)
    l_src, l2, l3 = s.load[source], s.load[m2], s.load[m3]
    before = np.maximum(np.maximum(l_src, l2), l3)  # (U,)
    after = np.maximum(np.maximum(new_src[:, None], new_m2), new_m3[None, :])
    before = np.broadcast_to(before[None, :], after.shape)
    d_square = (
        (new_src**2 - l_src**2)[:, None]
        + new_m2**2
        - (l2**2)[None, :]
        + (new_m3**2 - l3**2)[None, :]
    )
    i = _pick(s, before.ravel(), after.ravel(), np.nan_to_num(d_square, nan=np.inf).ravel())
    if i is None:
        return False
    ti, ui = divmod(i, len(others))
    t, u = int(tasks[ti]), int(others[ui])
    mu = int(s.a[u])
    s.move(u, int(m3[ui]))
    s.move(t, mu)
    return True


def descend(
    s: Loads,
    max_steps: int,
    should_stop: Callable[[], bool] | None = None,
    machines: np.ndarray | None = None,
) -> int:
    """Variable-neighbourhood descent: moves, then swaps, then ejection chains, each tried
    only when the smaller neighbourhoods have no improving step. Returns the steps taken.

    ``machines`` limits swaps and chains to those that start on these machines (moves are
    cheap and always scan everything). Chains start from the machines in decreasing load
    order (the most loaded first), so the critical machine is relieved first.
    """
    steps = 0
    while steps < max_steps:
        if should_stop is not None and steps % 8 == 0 and should_stop():
            break
        if machines is not None:
            tasks = np.flatnonzero(np.isin(s.a, machines))
        elif len(s.a) > FULL_SWAP_MAX_TASKS:
            # All pairs would not fit in memory: swaps from the two most loaded machines.
            tasks = np.flatnonzero(np.isin(s.a, np.argsort(-s.load, kind="stable")[:2]))
        else:
            tasks = None
        if _try_move(s) or _try_swap(s, tasks):
            steps += 1
            continue
        order = np.argsort(-s.load, kind="stable")
        if machines is not None:
            order = order[np.isin(order, machines)]
        if not any(_try_chain(s, int(m)) for m in order):
            break
        steps += 1
    s.resync()
    return steps
