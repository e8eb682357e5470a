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


def relieve(
    s: Loads,
    max_steps: int = 1_000_000,
    should_stop: Callable[[], bool] | None = None,
    on_progress: Callable[[], None] | None = None,
    chains: bool = True,
    weight: np.ndarray | None = None,
) -> int:
    """Steps from the critical machine until none improves (or ``max_steps``, or
    ``should_stop``); returns the steps taken. ``on_progress`` is called every 256 steps
    (to report the incumbent while a long descent runs). ``weight``: see :func:`_step`."""
    steps = 0
    while steps < max_steps:
        if steps % 64 == 0 and steps:
            if should_stop is not None and should_stop():
                break
            if on_progress is not None and steps % 256 == 0:
                s.resync()
                on_progress()
        if not _step(s, chains, weight):
            break
        steps += 1
    s.resync()
    return steps


def _excess(x: np.ndarray, target: float) -> np.ndarray:
    """The squared load above ``target`` (0 at or below it)."""
    return np.square(np.maximum(x - target, 0.0))


BALANCE_SOURCES = 4
"""Machines above the target whose tasks a balancing step moves or swaps (the most loaded)."""


def _balance_step(s: Loads, target: float) -> bool:
    """The move or swap that lowers the total squared excess over ``target`` most."""
    load, d, a = s.load, s.d, s.a
    over = np.flatnonzero(load > target)
    if not len(over):
        return False
    over = over[np.argsort(-load[over], kind="stable")[:BALANCE_SOURCES]]
    mine = np.flatnonzero(np.isin(a, over))
    src = a[mine]
    l_src = load[src]
    gain_src = _excess(l_src - s.own[mine], target) - _excess(l_src, target)  # (T,)
    # Moves to every machine.
    dst = load[None, :] + d[mine]
    delta = gain_src[:, None] + _excess(dst, target) - _excess(load, target)[None, :]
    delta[np.arange(len(mine)), src] = np.inf
    i = int(np.argmin(delta))
    best_move = float(delta.flat[i])
    # Swaps with every task elsewhere.
    others = np.flatnonzero(~np.isin(a, over))
    best_swap, pick = np.inf, None
    if len(others):
        mo = a[others]
        new_src = (l_src - s.own[mine])[:, None] + d[others][:, src].T  # (T, U)
        new_o = (load[mo] - s.own[others])[None, :] + d[np.ix_(mine, mo)]
        sw = (
            _excess(new_src, target)
            - _excess(l_src, target)[:, None]
            + _excess(new_o, target)
            - _excess(load[mo], target)[None, :]
        )
        j = int(np.argmin(sw))
        best_swap, pick = float(sw.flat[j]), j
    tol = REL_EPS * max(1.0, target) ** 2
    if min(best_move, best_swap) >= -tol:
        return False
    if best_move <= best_swap:
        ti, m = divmod(i, d.shape[1])
        s.move(int(mine[ti]), int(m))
        return True
    ti, ui = divmod(int(pick), len(others))
    t, u = int(mine[ti]), int(others[ui])
    mt, mu = int(a[t]), int(a[u])
    s.move(t, mu)
    s.move(u, mt)
    return True


def balance(
    s: Loads,
    target: float,
    max_steps: int = 100_000,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Moves and swaps that lower the total squared load above ``target`` until no machine
    is above it or no step helps; returns the steps taken.

    Unlike :func:`relieve` it works on every machine above the target at once (the most
    loaded first), so it can level many machines near the makespan where relieving only
    the critical one pushes another up to it.
    """
    steps = 0
    while steps < max_steps:
        if steps % 64 == 0 and steps and should_stop is not None and should_stop():
            break
        if not _balance_step(s, target):
            break
        steps += 1
    s.resync()
    return steps


class IteratedGreedy:
    """Iterated greedy on the makespan (after Fanjul-Peyro and Ruiz, EJOR 207(1) 2010,
    NVST-IG): take ``destroy`` tasks out (half from the most loaded machines, half at
    random), put each back where it ends earliest (longest first), descend with
    :func:`relieve`, and keep the result when the makespan is no worse (else undo).

    Each round costs one critical-machine descent, about a millisecond per step at
    4,096 x 128, so the search takes thousands of rounds a minute where a MILP step takes
    a fraction of a second.
    """

    def __init__(self, state: Loads, seed: int, destroy: int = 8, top_machines: int = 8) -> None:
        self.s = state
        self.rng = np.random.default_rng(seed)
        self.destroy = destroy
        self.top_machines = top_machines
        self.rounds = 0

    def step(self) -> bool:
        """One round; whether the makespan fell."""
        s = self.s
        before = s.makespan
        saved = s.a.copy()
        top = np.argsort(-s.load, kind="stable")[: self.top_machines]
        on_top = np.flatnonzero(np.isin(s.a, top))
        half = min(len(on_top), self.destroy // 2)
        picked = self.rng.choice(on_top, half, replace=False) if half else np.arange(0)
        rest = np.setdiff1d(np.arange(len(s.a)), picked)
        extra = self.rng.choice(rest, min(len(rest), self.destroy - half), replace=False)
        out = np.concatenate([picked, extra]).astype(np.int64)
        for t in out:
            s.load[s.a[t]] -= s.own[t]
        finite = np.where(np.isfinite(s.d[out]), s.d[out], np.inf)
        for i in np.argsort(-finite.min(axis=1), kind="stable"):
            t = int(out[i])
            m = int(np.argmin(s.load + finite[i]))
            s.a[t], s.own[t] = m, s.d[t, m]
            s.load[m] += s.own[t]
        relieve(s, chains=False)
        self.rounds += 1
        tol = REL_EPS * max(1.0, before)
        if s.makespan > before + tol:
            s.assign(np.arange(len(saved)), saved)
            return False
        return s.makespan < before - tol
