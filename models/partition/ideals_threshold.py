"""The DP over ideals within a threshold: exact where the ideals are too many for every pair.

:func:`.ideals.solve_ideals` relaxes every (ideal, sub-ideal) pair for every count vector of
devices: on Inception-v3 (36,596 ideals) that is hundreds of millions of pairs, which is why
the authors' DP (``throughput-dp/dp.cpp`` of msr-fiddle/dnn-partitioning at commit
b207b6ad27a1407d321f1e028cea96d7f2c90e3e) did not finish in their time limit. Given a
threshold ``T`` (an incumbent's max-load), a split of max-load at most ``T`` only passes
through few of them:

* **states.** With a reference measure ``w`` (the units' times on device class 0) and, per
  class ``c``, ``rho_c = max_u w[u] / time[c, u]`` (over the units class ``c`` may run), a
  class-``c`` device of load at most ``T`` carries ``w <= rho_c T`` (load >= compute). So the
  ideal ``I`` reached after ``s_c`` devices of each class satisfies ``w(I) <= sum_c s_c rho_c
  T`` and ``w(V - I) <= sum_c (m_c - s_c) rho_c T``; other (state, ideal) pairs are dropped.
* **moves.** ``J -> I`` on a class-``c`` device needs ``J`` reachable within ``T``, ``J``
  a sub-ideal of ``I`` (bitsets), ``time_c(I) - time_c(J) <= T``, the memory and the allowed
  devices, and finally the full load at most ``T``.
* **loads by cuts.** A transfer item (a tensor: its source unit and destination units) is
  *cut* by a set ``X`` when it has units in and out of ``X``. For ideals ``J <= I`` and
  ``S = I - J``, an item within two of the regions ``J``, ``S``, ``V - I`` pays on ``S``
  exactly what it pays on ``J`` plus on ``I`` (at most one of which cuts it). An item cut by
  both ``J`` and ``I`` has units in ``J`` and out of ``I``, so it pays on ``S`` exactly when
  it has a unit in ``S`` (its source there sends it out; else a destination there receives
  it). Hence ``comm(S) = cut(I) + cut(J) - sum over items cut by both of tau (2 - [touches
  S])``: per pair, a walk over ``I``'s few cut items instead of all items.

The recurrence on what remains is the DP's (min over moves of the max of the sub-ideal's value
and the move's load), so its value is the least max-load over all splits of max-load at most
``T``: the optimum when it is at most ``T``, otherwise a proof that every split exceeds ``T``.
tests/test_partition_tarnawski.py checks it against brute force and the full DP.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from placement.models.partition.ideals import INF, LayerGraph
from placement.models.partition.instance import PartitionSolution

MAX_THRESHOLD_IDEALS = 100_000
"""Ideals above this are left to the IP (their per-ideal tables grow with the items)."""
MAX_WINDOW_PAIRS = 40_000_000
"""Candidate pairs (window by window) above this: the threshold is too loose, the IP runs."""
PAIRS_PER_BLOCK = 1 << 21
"""Candidate (ideal, sub-ideal) pairs tested at once (bounds the memory of a block)."""
SLACK = 1e-9
"""Relative slack on the float window tests (looser is always valid)."""


@dataclass
class ThresholdResult:
    """The least max-load over the splits within the threshold (ns; None: every split exceeds
    it, or none fits), its split, and the work done; ``stopped``: interrupted, no conclusion."""

    objective_ns: int | None
    solution: PartitionSolution | None
    states: int
    pairs: int
    stopped: bool = False
    too_many: bool = False
    """The windows hold more than ``max_pairs`` candidate pairs: not run (no conclusion)."""


@dataclass
class _Cuts:
    """Per ideal: the transfer items it cuts (padded list and boolean matrix), how many units of
    each item it holds, and the transfer time of its cut."""

    cut: np.ndarray
    inside: np.ndarray
    in_cut: np.ndarray
    listed: np.ndarray
    tau: np.ndarray

    def comm(self, big: np.ndarray, small: np.ndarray) -> np.ndarray:
        """Transfer time of ``ideal[big] - ideal[small]`` for each pair (module docstring)."""
        out = self.cut[big] + self.cut[small]
        live = np.arange(len(big))
        for r in range(self.listed.shape[1]):
            item = self.listed[big[live], r]
            keep = item >= 0
            live, item = live[keep], item[keep]
            if not len(live):
                break
            both = self.in_cut[small[live], item]
            pos, it = live[both], item[both]
            touches = self.inside[big[pos], it] > self.inside[small[pos], it]
            out[pos] -= self.tau[it] * (2 - touches.astype(np.int64))
        return out


def _parents(ideals: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Per ideal (but the empty one, first): the ideal without its highest unit (units are
    numbered topologically, so that unit has no successor inside: the rest is an ideal), as a
    row index that comes earlier, and that unit; None if some such ideal is not listed."""
    n_id, m = ideals.shape
    if n_id == 0 or ideals[0].any() or np.any(np.diff(ideals.sum(axis=1)) < 0):
        return None  # the sums below go level by level, by size
    last = m - 1 - np.argmax(ideals[:, ::-1], axis=1)
    rest = ideals.copy()
    rest[np.arange(1, n_id), last[1:]] = False
    width = (m + 7) // 8
    keys = np.ascontiguousarray(np.packbits(ideals, axis=1)).view(np.dtype((np.void, width)))
    rest_keys = np.ascontiguousarray(np.packbits(rest, axis=1)).view(np.dtype((np.void, width)))
    order = np.argsort(keys.ravel())
    at = np.searchsorted(keys.ravel()[order], rest_keys.ravel())
    at = np.minimum(at, n_id - 1)
    parent = order[at]
    found = keys.ravel()[parent] == rest_keys.ravel()
    if not found[1:].all() or np.any(parent[1:] >= np.arange(1, n_id)):
        return None
    return parent, last


def _sums(ideals: np.ndarray, per_unit: np.ndarray, parents: tuple | None) -> np.ndarray:
    """``ideals @ per_unit`` (per_unit: unit x k, int), by the parents where listed (one
    addition per ideal), else by a product."""
    if parents is None:
        return ideals.astype(per_unit.dtype) @ per_unit
    parent, last = parents
    out = np.zeros((len(ideals), per_unit.shape[1]), dtype=per_unit.dtype)
    # Ideals come by size: a level at a time, each from its parents on the level before.
    size = ideals.sum(axis=1)
    bounds = np.flatnonzero(np.r_[True, size[1:] != size[:-1], True])
    for lo, hi in zip(bounds[1:-1], bounds[2:], strict=True):
        rows = np.arange(lo, hi)
        out[rows] = out[parent[rows]] + per_unit[last[rows]]
    return out


def _cuts(g: LayerGraph, ideals: np.ndarray, parents: tuple | None) -> _Cuts:
    n_id = len(ideals)
    n_items = len(g.tau)
    if n_items == 0:
        return _Cuts(
            np.zeros(n_id, np.int64),
            np.zeros((n_id, 0), np.int16),
            np.zeros((n_id, 0), bool),
            np.zeros((n_id, 0), np.int64),
            np.zeros(0, np.int64),
        )
    units = [[int(g.src[i]), *g.dests[i]] for i in range(n_items)]
    incidence = np.zeros((g.n_units, n_items), dtype=np.int16)
    for i, us in enumerate(units):
        incidence[us, i] = 1
    size = np.array([len(us) for us in units], dtype=np.int16)
    inside = _sums(ideals, incidence, parents)
    in_cut = (inside > 0) & (inside < size)
    cut = in_cut.astype(np.int64) @ g.tau
    rows, items = np.nonzero(in_cut)
    per_row = in_cut.sum(axis=1)
    width = int(per_row.max(initial=0))
    listed = np.full((n_id, width), -1, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(per_row)[:-1]])
    listed[rows, np.arange(len(rows)) - first[rows]] = items
    return _Cuts(cut, inside, in_cut, listed, g.tau.astype(np.int64))


def _bitsets(ideals: np.ndarray) -> np.ndarray:
    """Each ideal as uint64 words (for the sub-ideal test)."""
    packed = np.packbits(ideals, axis=1, bitorder="little")
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.concatenate([packed, np.zeros((len(ideals), pad), np.uint8)], axis=1)
    return np.ascontiguousarray(packed).view(np.uint64)


def _ratios(g: LayerGraph) -> list[float]:
    """rho_c (module docstring): the most reference time a class-c device carries per ns."""
    w = g.time[0].astype(float)
    out = []
    for c in range(len(g.classes)):
        on = g.allowed[c] & (w > 0)
        t = g.time[c][on].astype(float)
        if np.any(t == 0):
            out.append(float("inf"))
        else:
            out.append(float(np.max(w[on] / t)) if len(t) else 0.0)
    return out


def solve_ideals_within(
    g: LayerGraph,
    ideals: np.ndarray,
    cap_ns: int,
    stop: Callable[[], bool] | None = None,
    max_pairs: int | None = MAX_WINDOW_PAIRS,
) -> ThresholdResult:
    """The least max-load over the splits (differences of a chain of the given ideals, at
    most ``len(classes[c])`` devices of class ``c``) whose max-load is at most ``cap_ns``;
    ``ideals`` as :func:`.ideals.enumerate_ideals` gives them (the empty one first, the full
    one last). ``stop()`` True interrupts it (``stopped``: no conclusion); more than
    ``max_pairs`` candidate pairs in the windows: not run (``too_many``)."""
    n_id = len(ideals)
    counts = [len(c) for c in g.classes]
    n_cls = len(counts)
    parents = _parents(ideals)
    per_unit = np.column_stack([g.time.T, g.memory, (~g.allowed).T]).astype(np.int64)
    sums = _sums(ideals, per_unit, parents)
    time_of, mem_of, bad_of = sums[:, :n_cls], sums[:, n_cls], sums[:, n_cls + 1 :]
    words = _bitsets(ideals)
    cuts = _cuts(g, ideals, parents)
    rho = _ratios(g)
    w = time_of[:, 0].astype(float)
    total = w[-1]
    cap = int(cap_ns)
    limit = cap * (1 + SLACK) + 1

    def window(s: tuple[int, ...]) -> np.ndarray:
        carried = sum(k * r for k, r in zip(s, rho, strict=True) if k)
        left = sum((m - k) * r for m, k, r in zip(counts, s, rho, strict=True) if m - k)
        ok = (w <= carried * limit) & (total - w <= left * limit)
        return np.flatnonzero(ok)

    grid = [tuple(int(k) for k in s) for s in np.ndindex(*[k + 1 for k in counts])]
    windows = {s: window(s) for s in grid}
    candidates = sum(
        len(windows[s]) * len(windows[(*s[:c], s[c] - 1, *s[c + 1 :])])
        for s in grid
        for c in range(n_cls)
        if s[c]
    )
    if max_pairs is not None and candidates > max_pairs:
        return ThresholdResult(None, None, 0, 0, too_many=True)
    # Per state: the ideals in its window, their values, and the move that reached each.
    where: dict[tuple[int, ...], np.ndarray] = {}
    value: dict[tuple[int, ...], np.ndarray] = {}
    via_cls: dict[tuple[int, ...], np.ndarray] = {}
    via_sub: dict[tuple[int, ...], np.ndarray] = {}
    pairs = 0
    states = 0
    for s in grid:
        if stop is not None and stop():
            return ThresholdResult(None, None, states, pairs, stopped=True)
        if not any(s):
            where[s] = np.zeros(1, dtype=np.int64)
            value[s] = np.zeros(1, dtype=np.int64)
            continue
        idx = windows[s]
        states += len(idx)
        best = np.full(len(idx), INF, dtype=np.int64)
        arg_c = np.full(len(idx), -1, dtype=np.int64)
        arg_sub = np.full(len(idx), -1, dtype=np.int64)
        for c in range(n_cls):
            if s[c] == 0 or not len(idx):
                continue
            prev = (*s[:c], s[c] - 1, *s[c + 1 :])
            reach = value[prev] <= cap
            subs, sub_val = where[prev][reach], value[prev][reach]
            if not len(subs):
                continue
            t_sub = time_of[subs, c]
            step = max(1, PAIRS_PER_BLOCK // len(subs))
            for lo in range(0, len(idx), step):
                block = idx[lo : lo + step]
                d = time_of[block, c][:, None] - t_sub[None, :]
                ii, jj = np.nonzero((d >= 0) & (d <= cap))
                big, small = block[ii], subs[jj]
                sub = ~np.any(words[small] & ~words[big], axis=1)
                ii, jj, big, small = ii[sub], jj[sub], big[sub], small[sub]
                fits = (mem_of[big] - mem_of[small] <= g.capacity[c]) & (
                    bad_of[big, c] == bad_of[small, c]
                )
                ii, jj, big, small = ii[fits], jj[fits], big[fits], small[fits]
                pairs += len(ii)
                load = time_of[big, c] - time_of[small, c]
                if g.pays_comm[c]:
                    load = load + cuts.comm(big, small)
                cand = np.maximum(sub_val[jj], load)
                keep = cand <= cap
                ii, jj, cand = ii[keep], jj[keep], cand[keep]
                if not len(ii):
                    continue
                # Per ideal of the block, its least candidate (sorted by ideal, then value).
                order = np.lexsort((cand, ii))
                ii, jj, cand = ii[order], jj[order], cand[order]
                head = np.flatnonzero(np.r_[True, ii[1:] != ii[:-1]])
                pos = lo + ii[head]
                better = cand[head] < best[pos]
                pos, head = pos[better], head[better]
                best[pos] = cand[head]
                arg_c[pos] = c
                arg_sub[pos] = subs[jj[head]]
        where[s], value[s], via_cls[s], via_sub[s] = idx, best, arg_c, arg_sub
    full = tuple(counts)
    at = np.searchsorted(where[full], n_id - 1)
    if at >= len(where[full]) or where[full][at] != n_id - 1 or value[full][at] > cap:
        return ThresholdResult(None, None, states, pairs)
    opt = int(value[full][at])
    unit_slot: list[tuple[int, int]] = [(-1, -1)] * g.n_units
    used = [0] * n_cls
    s, i = full, n_id - 1
    while any(s):
        k = int(np.searchsorted(where[s], i))
        c, j = int(via_cls[s][k]), int(via_sub[s][k])
        for u in np.flatnonzero(ideals[i] & ~ideals[j]):
            unit_slot[int(u)] = (c, used[c])
        used[c] += 1
        s = (*s[:c], s[c] - 1, *s[c + 1 :])
        i = j
    return ThresholdResult(opt, g.device_of(unit_slot), states, pairs)
