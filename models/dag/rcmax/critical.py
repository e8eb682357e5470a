"""A descent on the critical machine only: the fast first steps of the R||Cmax search.

:func:`relieve` takes the most loaded machine and moves one of its tasks away, swaps one of
them with a task of another machine, or (when neither helps) runs a 2-move ejection chain
from it, whenever every machine the step touches ends below the makespan. Each step looks
at the critical machine's tasks against every machine or task (about 32 x 4,096 cells at
4,096 x 128) instead of every task against every machine, so it takes about a millisecond
where the full descent (:func:`~.descent.descend`, with its sum-of-squares steps) takes
tens: the search improves on the heuristics within its first second at that size.

Among the improving steps it takes the one that leaves the touched machines' largest load
smallest (best improvement on the makespan, not first improvement).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from placement.models.dag.rcmax.loads import REL_EPS, Loads


def _choose(worst: np.ndarray, extra: np.ndarray | None, limit: float) -> int | None:
    """Index of the step to take: among those with ``worst < limit``, the least ``extra``
    weighted work when given (ties and no weights: the smallest ``worst``)."""
    ok = worst < limit
    if not ok.any():
        return None
    if extra is None:
        return int(np.argmin(np.where(ok, worst, np.inf)))
    key = np.where(ok, extra, np.inf)
    best = float(key.min())
    # Among the least extra work (within float noise), the best-balanced step.
    close = ok & (key <= best + 1e-12 * max(1.0, abs(best)))
    return int(np.argmin(np.where(close, worst, np.inf)))


def _step(s: Loads, chains: bool, weight: np.ndarray | None = None) -> bool:
    """One improving step from the most loaded machine; False when there is none.

    With ``weight`` (the LP's machine weights) the step taken is the one that adds least
    weighted work (``sum_m weight[m] load[m]``, a lower bound on the makespan of the result,
    so the search keeps the LP's efficiency); without, the one that leaves the touched
    machines' largest load smallest."""
    load, d, a = s.load, s.d, s.a
    top = int(np.argmax(load))
    cmax = float(load[top])
    eps = REL_EPS * max(1.0, cmax)
    mine = np.flatnonzero(a == top)
    if not len(mine):
        return False
    left = cmax - s.own[mine]  # the top machine without each of its tasks
    # Moves: task i of the top machine to machine m.
    dst = load[None, :] + d[mine]  # (T, k)
    dst[:, top] = np.inf
    worst = np.maximum(left[:, None], dst)
    extra = None
    if weight is not None:
        extra = (weight[None, :] * d[mine] - weight[top] * s.own[mine][:, None]).ravel()
    i = _choose(worst.ravel(), extra, cmax - eps)
    if i is not None:
        ti, m = divmod(i, d.shape[1])
        s.move(int(mine[ti]), int(m))
        return True
    # Swaps: task i of the top machine with a task u of another machine.
    others = np.flatnonzero(a != top)
    if len(others):
        mo = a[others]
        new_top = left[:, None] + d[others, top][None, :]  # (T, U)
        new_other = (load[mo] - s.own[others])[None, :] + d[np.ix_(mine, mo)]
        worst = np.maximum(new_top, new_other)
        extra = None
        if weight is not None:
            extra = (
                weight[top] * (d[others, top][None, :] - s.own[mine][:, None])
                + weight[mo][None, :] * (d[np.ix_(mine, mo)] - s.own[others][None, :])
            ).ravel()
        i = _choose(worst.ravel(), extra, cmax - eps)
        if i is not None:
            ti, ui = divmod(i, len(others))
            t, u = int(mine[ti]), int(others[ui])
            mu = int(a[u])
            s.move(t, mu)
            s.move(u, top)
            return True
    if not chains or d.shape[1] < 3 or not len(others):
        return False
    # 2-move ejection chains: task i goes to machine m2 = a[u] and u goes on to its best
    # third machine (neither the top one nor its own).
    third = load[None, :] + d[others]  # (U, k)
    third[:, top] = np.inf
    third[np.arange(len(others)), a[others]] = np.inf
    m3 = np.argmin(third, axis=1)
    end3 = third[np.arange(len(others)), m3]
    usable = end3 < cmax - eps
    if not usable.any():
        return False
    cand = others[usable]
    mo = a[cand]
    new_m2 = (load[mo] - s.own[cand])[None, :] + d[np.ix_(mine, mo)]
    worst = np.maximum(np.maximum(left[:, None], new_m2), end3[usable][None, :])
    # A chain whose third machine is another chain's second would need the loads
    # recomputed; it is rejected below when it does not improve.
    i = int(np.argmin(worst))
    ti, ui = divmod(i, len(cand))
    if worst[ti, ui] >= cmax - eps:
        return False
    t, u = int(mine[ti]), int(cand[ui])
    m2, target = int(a[u]), int(m3[np.flatnonzero(usable)[ui]])
    s.move(u, target)
    s.move(t, m2)
    return True


PROGRESS_STEPS = 64
"""Steps between calls of :func:`relieve`'s ``on_progress`` (a step takes about a
millisecond at 4,096 x 128, several under load)."""


def relieve(
    s: Loads,
    max_steps: int = 1_000_000,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[], None] | None = None,
    chains: bool = True,
    weight: np.ndarray | None = None,
) -> int:
    """Steps from the critical machine until none improves (or ``max_steps``, or
    ``should_stop``); returns the steps taken. ``on_progress`` is called every
    :data:`PROGRESS_STEPS` steps (to report the incumbent while a long descent runs). ``weight``: see :func:`_step`."""
    steps = 0
    while steps < max_steps:
        if steps % 8 == 0 and steps:
            # Every 8 steps: one step can take tens of milliseconds when the critical
            # machine holds hundreds of tasks (consistent matrices).
            if should_stop is not None and should_stop():
                break
            if on_progress is not None and steps % PROGRESS_STEPS == 0:
                s.resync()
                on_progress()
        if not _step(s, chains, weight):
            break
        steps += 1
    s.resync()
    return steps


def _over(x: np.ndarray, target: float) -> np.ndarray:
    """The load above ``target`` (0 at or below it)."""
    return np.maximum(x - target, 0.0)


BALANCE_SOURCES = 4
"""Machines above the target whose tasks a balancing step moves or swaps (the most loaded)."""


def _balance_step(s: Loads, target: float, weight: np.ndarray) -> bool:
    """Among the moves and swaps from the most loaded machines above ``target`` that lower
    the total load above it, the one that adds least weighted work (``weight``: the LP's
    machine weights); ties: the larger fall of the load above the target."""
    load, d, a = s.load, s.d, s.a
    over = np.flatnonzero(load > target)
    if not len(over):
        return False
    over = over[np.argsort(-load[over], kind="stable")[:BALANCE_SOURCES]]
    mine = np.flatnonzero(np.isin(a, over))
    src = a[mine]
    l_src = load[src]
    fall_src = _over(l_src, target) - _over(l_src - s.own[mine], target)  # (T,) >= 0
    w_own = weight[src] * s.own[mine]
    tol = REL_EPS * max(1.0, target)
    # Moves to every machine.
    dst = load[None, :] + d[mine]
    gain = fall_src[:, None] - (_over(dst, target) - _over(load, target)[None, :])
    extra = weight[None, :] * d[mine] - w_own[:, None]
    gain[np.arange(len(mine)), src] = -np.inf
    ok = gain > tol
    best_move = None
    if ok.any():
        key = np.where(ok, extra - 1e-9 * gain, np.inf)
        best_move = (float(key.min()), int(np.argmin(key)))
    # Swaps with every task on a machine not among the sources.
    others = np.flatnonzero(~np.isin(a, over))
    best_swap = None
    if len(others):
        mo = a[others]
        new_src = (l_src - s.own[mine])[:, None] + d[others][:, src].T  # (T, U)
        new_o = (load[mo] - s.own[others])[None, :] + d[np.ix_(mine, mo)]
        gain = (_over(l_src, target)[:, None] - _over(new_src, target)) - (
            _over(new_o, target) - _over(load[mo], target)[None, :]
        )
        extra = (
            weight[src][:, None] * d[others][:, src].T
            - w_own[:, None]
            + weight[mo][None, :] * (d[np.ix_(mine, mo)] - s.own[others][None, :])
        )
        ok = gain > tol
        if ok.any():
            key = np.where(ok, extra - 1e-9 * gain, np.inf)
            best_swap = (float(key.min()), int(np.argmin(key)))
    if best_move is None and best_swap is None:
        return False
    if best_swap is None or (best_move is not None and best_move[0] <= best_swap[0]):
        assert best_move is not None
        ti, m = divmod(best_move[1], d.shape[1])
        s.move(int(mine[ti]), int(m))
        return True
    ti, ui = divmod(best_swap[1], len(others))
    t, u = int(mine[ti]), int(others[ui])
    mt, mu = int(a[t]), int(a[u])
    s.move(t, mu)
    s.move(u, mt)
    return True


def balance(
    s: Loads,
    target: float,
    weight: np.ndarray,
    max_steps: int = 100_000,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Moves and swaps that lower the total load above ``target``, each adding least
    weighted work (:func:`_balance_step`), until no machine is above it or no step helps;
    returns the steps taken.

    Started from the LP's rounding (every task on a machine of zero reduced cost, the
    weighted work at the LP bound) it levels the machines the split tasks overload while
    keeping the weighted work, a lower bound on the makespan of the result, low; the
    critical-machine descent instead takes whatever step relieves the critical machine.
    """
    steps = 0
    while steps < max_steps:
        if steps % 8 == 0 and steps and should_stop is not None and should_stop():
            break
        if not _balance_step(s, target, weight):
            break
        steps += 1
    s.resync()
    return steps
