"""Counting (bin-packing) lower bounds on the makespan, per machine and task class.

For a trial makespan ``T`` and a set ``G`` of tasks (a *class*: the tasks of one kind, e.g.
every ``blastall_*`` of a BLAST workflow, or all tasks), each task ``t`` has a head
``h[t, m]`` (it cannot start on machine ``m`` earlier: release, dataset, the path of its
ancestors, their area) and a tail ``q[t]`` (after it ends, a chain of descendants or their
area still has to run). If a schedule of makespan ``<= T`` exists, then on each machine ``m``:

- only the tasks with ``h[t, m] + d[t, m] + q[t] <= T`` (``F_m``) can run there;
- they all run inside ``[min h, T - min q]`` (a window of ``W_m`` seconds);
- at most ``L_m = floor(slots_m / min cores)`` of them overlap at any instant, so (interval
  graphs are perfect) they split into ``L_m`` chains of non-overlapping tasks, and a chain
  holds at most ``k_m`` tasks, the largest ``k`` whose ``k`` shortest running times on ``m``
  add up to at most ``W_m``.

So machine ``m`` runs at most ``min(|F_m|, L_m k_m)`` tasks of ``G``, and when these numbers
add up to fewer than ``|G|`` no schedule ends by ``T``.

The count lets two machines both use the class's few short tasks. The *packing LP* removes
that: a share ``y[t, m] >= 0`` of each task on the machines it fits (``sum_m y[t, m] = 1``),
and per machine the chains' capacity in several measures of a task of relative size
``x = d[t, m] / W_m``: ``sum y <= L_m k_m``, ``sum x y <= L_m`` (energy) and
``sum u_j(x) y <= L_m`` for the dual feasible functions of Fekete and Schepers
(``u_j(x) = x`` when ``(j + 1) x`` is whole, else ``floor((j + 1) x) / j``; ``j = 1, 2, 3``:
a chain of total size at most 1 has ``sum u_j <= 1``). An infeasible LP refutes ``T``. HiGHS
decides it with float tolerances, so the bound it gives is shaved by 10^-6 relative. The test is monotone in ``T`` (the
sets and windows only grow), so a bisection finds the largest failing ``T`` (a valid bound:
every schedule ends after it). The issue's BLAST example: below 17.3 s no slow machine can
finish a ``blastall`` task, a standard slot at most one, a fast slot at most three: 32 places
for 40 tasks.
"""

from __future__ import annotations

import math
import re

import numpy as np

from placement.models.dag.instance import DagInstance
from placement.solver.backends.base import RunStatus
from placement.solver.backends.highs import HighsModel

_CLASS_SUFFIX = re.compile(r"[_\-.]?[0-9]+$")
BISECTION_STEPS = 60
"""Halvings of the bracket (relative resolution about 10^-15 of the start bracket)."""


def task_classes(instance: DagInstance) -> list[np.ndarray]:
    """Tasks grouped by name without the trailing id (``blastall_00000012`` -> ``blastall``),
    classes of two or more tasks; and all tasks together."""
    groups: dict[str, list[int]] = {}
    for t, task in enumerate(instance.tasks):
        groups.setdefault(_CLASS_SUFFIX.sub("", task.name), []).append(t)
    out = [np.array(g, dtype=np.int64) for g in groups.values() if 1 < len(g) < len(instance.tasks)]
    out.append(np.arange(len(instance.tasks), dtype=np.int64))
    return out


def fits_by(
    T: float,
    members: np.ndarray,
    d: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    cores: np.ndarray,
    slots: np.ndarray,
    copies: np.ndarray | None = None,
) -> bool:
    """Whether the counting test lets the tasks ``members`` all end by ``T`` (False proves
    that no schedule has makespan ``<= T``). ``d``, ``head``: tasks x machines (``inf`` where
    a task cannot run); ``tail``, ``cores``: per task; ``slots``: per machine; ``copies``:
    per machine column, how many identical machines it stands for (default 1 each)."""
    tol = 1e-9 * max(1.0, abs(T))
    dg, hg, qg, cg = d[members], head[members], tail[members], cores[members]
    fit = hg + dg + qg[:, None] <= T + tol
    if not np.all(fit.any(axis=1)):
        return False
    places = 0
    need = len(members)
    for m in range(d.shape[1]):
        rows = np.flatnonzero(fit[:, m])
        if not len(rows):
            continue
        window = T - float(hg[rows, m].min()) - float(qg[rows].min())
        lanes = int(slots[m] // int(cg[rows].min()))
        if lanes <= 0:
            continue
        times = np.sort(dg[rows, m])
        chain = int(np.searchsorted(np.cumsum(times), window + tol, side="right"))
        places += min(len(rows), lanes * chain) * (1 if copies is None else int(copies[m]))
        if places >= need:
            return True
    return places >= need


LP_SHAVE = 1e-6
"""Relative: the packing LP's bound is lowered by this (HiGHS's infeasibility tolerance)."""
LP_MAX_PAIRS = 2400
"""Task-machine pairs of a class above which the packing LP is not tried."""
LP_BISECTION_STEPS = 24


def _dff(x: np.ndarray, j: int) -> np.ndarray:
    """Fekete and Schepers' dual feasible function u_j on relative sizes ``x`` in [0, 1]."""
    scaled = (j + 1) * x
    whole = np.abs(scaled - np.round(scaled)) <= 1e-12
    return np.where(whole, x, np.floor(scaled) / j)


def packing_lp_refutes(
    T: float,
    members: np.ndarray,
    d: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    cores: np.ndarray,
    slots: np.ndarray,
) -> bool:
    """Whether the packing LP of the module docstring is infeasible at ``T`` (so that, up to
    HiGHS's tolerance, no schedule ends by ``T``)."""
    tol = 1e-9 * max(1.0, abs(T))
    dg, hg, qg, cg = d[members], head[members], tail[members], cores[members]
    fit = hg + dg + qg[:, None] <= T + tol
    if not np.all(fit.any(axis=1)):
        return True
    ti, mi = np.nonzero(fit)
    ncol = len(ti)
    n = len(members)
    rows = [ti]
    cols = [np.arange(ncol)]
    vals = [np.ones(ncol)]
    upper = [np.ones(n)]
    lower = [np.ones(n)]
    r = n
    for m in np.unique(mi):
        sel = np.flatnonzero(mi == m)
        rs = ti[sel]
        window = T - float(hg[rs, m].min()) - float(qg[rs].min())
        lanes = int(slots[m] // int(cg[rs].min()))
        if window <= 0 or lanes <= 0:
            continue  # zero-length tasks only (window >= d for every fitting task)
        times = np.sort(dg[rs, m])
        chain = int(np.searchsorted(np.cumsum(times), window + tol, side="right"))
        x = np.minimum(dg[rs, m] / window, 1.0)
        measures = [np.ones(len(sel)), x, _dff(x, 1), _dff(x, 2), _dff(x, 3)]
        caps = [float(lanes * chain)] + [float(lanes)] * 4
        for weight, cap in zip(measures, caps, strict=True):
            rows.append(np.full(len(sel), r))
            cols.append(sel)
            vals.append(weight)
            lower.append(np.array([-np.inf]))
            upper.append(np.array([cap]))
            r += 1
    row = np.concatenate(rows)
    col = np.concatenate(cols)
    val = np.concatenate(vals)
    order = np.lexsort((row, col))
    row, col, val = row[order], col[order], val[order]
    start = np.searchsorted(col, np.arange(ncol + 1))
    model = HighsModel(threads=1)
    model.load(
        np.zeros(ncol),
        np.zeros(ncol),
        np.ones(ncol),
        np.concatenate(lower),
        np.concatenate(upper),
        start,
        row,
        val,
    )
    run = model.run(1.0)
    return run.status == RunStatus.INFEASIBLE


def counting_bound(
    instance: DagInstance, head: np.ndarray, tail: np.ndarray, start: float = 0.0
) -> float:
    """The largest ``T`` the counting test of the module docstring refutes, over the task
    classes (:func:`task_classes`); ``start`` when none is above it.

    ``head[t, m]``: a lower bound on the start of ``t`` on ``m``; ``tail[t]``: on the time
    from its end to the makespan. Classes the test cannot refute just above ``start`` are
    skipped (no bisection).
    """
    d = instance.duration
    cores = np.array([t.cores for t in instance.tasks], dtype=np.int64)
    slots = np.array([m.slots for m in instance.machines], dtype=np.int64)
    best = start
    for members in task_classes(instance):
        best = largest_refuted(best, members, d, head, tail, cores, slots)
    return _packing_lp_bound(instance, head, tail, best, d, cores, slots)


def largest_refuted(
    start: float,
    members: np.ndarray,
    d: np.ndarray,
    head: np.ndarray,
    tail: np.ndarray,
    cores: np.ndarray,
    slots: np.ndarray,
    copies: np.ndarray | None = None,
) -> float:
    """The largest ``T`` at or above ``start`` that :func:`fits_by` refutes for ``members``
    (bisected), or ``start`` when it cannot refute just above ``start``."""
    probe = start * (1 + 1e-9) + 1e-12
    if fits_by(probe, members, d, head, tail, cores, slots, copies):
        return start
    lo = probe
    hi = max(probe, 1e-9) * 2.0
    # Every task of the set one after another on its slowest machine after the largest head
    # and before the largest tail always fits: the bracket's top.
    finite_d = np.where(np.isfinite(d[members]), d[members], 0.0)
    cap = float(
        np.nanmax(np.where(np.isfinite(head[members]), head[members], 0.0))
        + finite_d.max(axis=1).sum()
        + tail[members].max()
    )
    while not fits_by(hi, members, d, head, tail, cores, slots, copies):
        lo = hi
        hi *= 2.0
        if hi > 4.0 * cap + 1.0:
            break
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if fits_by(mid, members, d, head, tail, cores, slots, copies):
            hi = mid
        else:
            lo = mid
    return max(start, lo) if math.isfinite(lo) else start


SUBSET_MAX_TASKS = 2500
"""Above this many tasks the ancestor/descendant pass (:func:`subset_heads_and_tails`) is
skipped: it keeps a tasks x tasks matrix of chain lengths."""


def chain_matrix(instance: DagInstance) -> np.ndarray:
    """``L[a, b]``: the longest chain from the end of ``a`` to the start of ``b`` (the tasks
    strictly between on their fastest machines, free transfers), ``-inf`` when ``a`` is not
    an ancestor of ``b``."""
    n = len(instance.tasks)
    shortest = np.min(instance.duration, axis=1)
    chain = np.full((n, n), -np.inf)
    for b in instance.topological_order:
        for p, _ in instance.parents[b]:
            np.maximum(chain[:, b], chain[:, p] + shortest[p], out=chain[:, b])
            chain[p, b] = max(chain[p, b], 0.0)
    return chain


def subset_heads_and_tails(
    instance: DagInstance, head: np.ndarray, tail: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Heads and tails raised by the counting test on each task's ancestors and descendants.

    Every ancestor ``a`` of ``j`` ends at least ``L[a, j]`` (:func:`chain_matrix`) before
    ``j`` starts, so the ancestors "fit by" ``S_j`` with tails ``L[:, j]``: when the test
    refutes ``T`` (for all of them or for one task class among them), ``j`` starts after
    ``T`` on every machine. Mirrored, the descendants of ``j`` fit in the last ``C - E_j``
    seconds with heads ``tail[d]`` (time reversed) and tails ``L[j, d]``, so ``tail[j]``
    is at least what the test refutes. The pass runs in topological order, each head also
    raised to the earliest end of every parent (and each tail, in reverse order, to the
    least time each child and its tail take), so a raised head feeds its descendants.
    This is the head-body-tail argument with a parallel-machine bound on the head: the
    ancestors of a join competing for the machines before it (1000genome's ``frequency``
    tasks behind 10 ``individuals`` each). ``head`` (tasks x machines) and ``tail`` are
    copied, not changed. Above :data:`SUBSET_MAX_TASKS` tasks, or without edges, they are
    returned as they are.
    """
    n = len(instance.tasks)
    if not instance.edges or n > SUBSET_MAX_TASKS:
        return head, tail
    d_all = instance.duration
    slots_all = np.array([m.slots for m in instance.machines], dtype=np.int64)
    # Identical machines (running times, heads, slots) count once, times their number: the
    # pass raises a task's heads on every machine alike, so they stay identical (STG: all).
    key = np.vstack([d_all, head, slots_all[None, :]]).T
    _, first, kind, copies = np.unique(
        key, axis=0, return_index=True, return_inverse=True, return_counts=True
    )
    d = d_all[:, first]
    head = head[:, first].copy()
    slots = slots_all[first]
    tail = tail.copy()
    cores = np.array([t.cores for t in instance.tasks], dtype=np.int64)
    named = task_classes(instance)[:-1]  # the last is all tasks: tested as the whole set
    classes = len(named)
    label = np.full(n, -1, dtype=np.int64)
    for k, members in enumerate(named):
        label[members] = k
    chain = chain_matrix(instance)
    shortest = np.min(d, axis=1)

    def raised(start: float, members: np.ndarray, h: np.ndarray, q: np.ndarray) -> float:
        best = largest_refuted(start, members, d, h, q, cores, slots, copies)
        if not classes:
            return best
        sub = label[members]
        counts = np.bincount(sub[sub >= 0], minlength=classes)
        for k in np.flatnonzero(counts > 1):
            best = largest_refuted(best, members[sub == k], d, h, q, cores, slots, copies)
        return best

    for j in instance.topological_order:
        parents = [p for p, _ in instance.parents[j]]
        if not parents:
            continue
        ready = max(float(np.min(head[p] + d[p])) for p in parents)
        anc = np.flatnonzero(np.isfinite(chain[:, j]))
        if len(anc) > 1:
            in_tail = np.zeros(n)
            in_tail[anc] = chain[anc, j]
            ready = raised(max(ready, float(np.min(head[j]))), anc, head, in_tail)
        np.maximum(head[j], ready, out=head[j])
    for j in reversed(instance.topological_order):
        children = [c for c, _ in instance.children[j]]
        if not children:
            continue
        after = max(float(shortest[c] + tail[c]) for c in children)
        desc = np.flatnonzero(np.isfinite(chain[j]))
        if len(desc) > 1:
            out_tail = np.zeros(n)
            out_tail[desc] = chain[j, desc]
            reversed_head = np.broadcast_to(tail[:, None], d.shape)
            after = raised(max(after, float(tail[j])), desc, reversed_head, out_tail)
        tail[j] = max(tail[j], after)
    return head[:, kind.ravel()], tail


def _packing_lp_bound(
    instance: DagInstance,
    head: np.ndarray,
    tail: np.ndarray,
    best: float,
    d: np.ndarray,
    cores: np.ndarray,
    slots: np.ndarray,
) -> float:
    """``best`` raised by the packing LP, class by class (classes of at most
    :data:`LP_MAX_PAIRS` task-machine pairs): bisection between a refuted and a feasible
    trial makespan, the refuted end shaved by :data:`LP_SHAVE`."""
    for members in task_classes(instance):
        if len(members) * d.shape[1] > LP_MAX_PAIRS:
            continue
        probe = best * (1 + 1e-9) + 1e-12
        if not packing_lp_refutes(probe, members, d, head, tail, cores, slots):
            continue
        lo, hi = probe, probe * 1.01 + 1e-9
        for _ in range(60):
            if not packing_lp_refutes(hi, members, d, head, tail, cores, slots):
                break
            lo, hi = hi, hi * 1.5 + 1e-9
        for _ in range(LP_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            if packing_lp_refutes(mid, members, d, head, tail, cores, slots):
                lo = mid
            else:
                hi = mid
        best = max(best, lo * (1 - LP_SHAVE))
    return best
