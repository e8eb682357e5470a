"""A schedule for wide layers: the tasks of one class (a fan-out's middle layer, BLAST's
``blastall``) packed into chains, one chain per slot.

On a fan-out (one split, ``n`` parallel tasks, one or two merges) on machines of a few speeds,
the list heuristics place each parallel task at its earliest finish, which fills every slot
once and then stacks the last tasks on whatever ends first: on ``blast-50-s1`` (45
``blastall`` tasks, default machine set) HEFT ends at 2,184 s, and the exact phase (CP-SAT,
60 s, 2 threads, loaded machine) brought it to 2,047 s, with the bound at 1,969.5 s. The
layer is a bin-packing problem with heterogeneous bins: for a trial makespan ``T``, a chain
on machine ``m`` holds at most ``T - H_m - Q`` seconds of work (``H_m``, ``Q``: the least head
on ``m`` and the least tail of the class, as the bound computes them), and each task must
also fit its own head and tail. :func:`layer_schedule` bisects ``T`` with a decreasing-size
greedy packing (three bin rules), then places the other tasks at their earliest finish and
every task as early as it can, in the order of the packing's planned starts.

It is a heuristic (no claim): its schedule goes through the checker like HEFT's, and the
exact phase starts from the best of them.
"""

from __future__ import annotations

import numpy as np

from placement.models.dag.bound import heads_and_tails
from placement.models.dag.check import evaluate
from placement.models.dag.energetic import task_classes
from placement.models.dag.greedy import greedy_solutions, grid_applicable, heft, semi_active
from placement.models.dag.instance import DagInstance, DagSolution
from placement.solver.options import SolveOptions

MIN_TASKS = 8
"""Classes with fewer tasks are no layer worth packing."""
MIN_SHARE = 0.5
"""...nor classes holding less than this share of the tasks (a fan-out's layer is most of
the workflow; elsewhere the list heuristics are left alone, and so is their time)."""
MAX_PAIRS = 250_000
"""Task-chain pairs above which no packing is tried (its time: about 1 s at 800 x 48 on a
loaded machine, the generated seismology-800)."""
PACK_RULES = ("best", "fast", "end")
"""Bin choices of :func:`_pack`: least room left, fastest machine, earliest chain end."""
PACK_BISECTION_STEPS = 30
RESTARTS = 24
"""Extra packings with the "best" rule on orders shaken by up to :data:`SHAKE` (seeded)."""
SHAKE = 0.15
KEEP = 2
"""The best restarts (by their chains' ends) turned into schedules, beside each rule's."""
RESTART_WORK = 3000
"""Restarts: this many over the class's tasks, between 4 and :data:`RESTARTS`."""
RESTART_STEPS = 14
"""Bisection steps of a restart (its bracket starts at the best packing so far)."""


def _pack(
    order: np.ndarray,
    size: np.ndarray,
    fits: np.ndarray,
    cap: np.ndarray,
    rule: str,
) -> np.ndarray | None:
    """Each task of ``order`` into a bin (``size``: tasks x bins; ``fits``: the task may use
    the bin; ``cap``: per bin), by ``rule``; the bins, or None when one does not fit."""
    load = np.zeros(len(cap))
    where = np.full(size.shape[0], -1, dtype=np.int64)
    for t in order:
        after = load + size[t]
        ok = fits[t] & (after <= cap)
        if not ok.any():
            return None
        room = np.where(ok, cap - after, 0.0)
        if rule == "best":
            score = room
        elif rule == "fast":
            score = np.where(ok, size[t], 0.0) * 1e6 + room
        else:
            score = np.where(ok, after, 0.0)
        b = int(np.argmin(np.where(ok, score, np.inf)))
        where[t] = b
        load[b] = after[b]
    return where


DESCENT_STEPS = 2000
"""Moves and swaps of :func:`_descent` at most."""


def _descent(
    where: np.ndarray, size: np.ndarray, body: np.ndarray, offset: np.ndarray
) -> np.ndarray:
    """A packing improved by moves and swaps off a latest chain: a task of the chain whose
    end (``offset`` + its load) is largest moves to another chain, or swaps with a task of
    another, when every chain touched then ends below that end (and the tasks' heads, bodies
    and tails, ``body``, too); the step whose touched chains end lowest. ``where`` is
    copied."""
    where = where.copy()
    n, nb = size.shape
    rows = np.arange(n)
    load = np.bincount(where, weights=size[rows, where], minlength=nb)
    for _ in range(DESCENT_STEPS):
        end = offset + load
        top = int(np.argmax(end))
        ceiling = end[top] * (1 - 1e-12)
        mine = np.flatnonzero(where == top)
        best = (ceiling, None)
        for t in mine:
            relieved = end[top] - size[t, top]
            moved = end + size[t]
            ok = (moved < best[0]) & (body[t] < ceiling) & np.isfinite(size[t])
            ok[top] = False
            if ok.any():
                b = int(np.argmin(np.where(ok, moved, np.inf)))
                value = max(relieved, float(moved[b]))
                if value < best[0]:
                    best = (value, ("move", t, b))
            # swaps: t -> where[u], u -> top
            others = np.flatnonzero(where != top)
            if not len(others):
                continue
            bu = where[others]
            into_top = relieved + size[others, top]
            into_other = end[bu] - size[others, bu] + size[t, bu]
            worst = np.maximum(into_top, into_other)
            ok = (
                (worst < best[0])
                & (body[others, top] < ceiling)
                & (body[t, bu] < ceiling)
                & np.isfinite(worst)
            )
            if ok.any():
                k = int(np.argmin(np.where(ok, worst, np.inf)))
                best = (float(worst[k]), ("swap", t, int(others[k])))
        if best[1] is None:
            break
        kind, t, other = best[1]
        if kind == "move":
            load[top] -= size[t, top]
            load[other] += size[t, other]
            where[t] = other
        else:
            bu = int(where[other])
            load[top] += size[other, top] - size[t, top]
            load[bu] += size[t, bu] - size[other, bu]
            where[t], where[other] = bu, top
    return where


def layer_schedule(
    instance: DagInstance, base: DagSolution | None = None, *, always: bool = False
) -> DagSolution | None:
    """A schedule built around a packing of the largest task class (a fan-out's middle layer)
    into chains, one per slot: the least trial makespan ``T`` (bisected between the path bound
    and HEFT's makespan) for which a decreasing-size greedy packs every task of the class
    into the chains of capacity ``T - H_m - Q`` (the heads and tails of
    :func:`.bound.heads_and_tails`), by each rule of :data:`PACK_RULES` and by seeded
    restarts on shaken orders, each improved by :func:`_descent`. The other tasks go to
    their earliest finish; every task as early as it can (in the order of the packing's
    planned starts).

    Returns the schedule of least real makespan, or None: when no class has
    :data:`MIN_TASKS` tasks and half the tasks, above :data:`MAX_PAIRS`, or when none beats
    ``base`` (HEFT's schedule by default) unless ``always``. A heuristic, checked like any
    other."""
    classes = task_classes(instance)[:-1]
    if not classes or not instance.edges:
        return None
    members = max(classes, key=len)
    if len(members) < max(MIN_TASKS, MIN_SHARE * len(instance.tasks)):
        return None
    if base is None:
        base = heft(instance)
    base_value = evaluate(instance, base)[0]
    head, tail = heads_and_tails(instance)
    d = instance.duration
    cores = np.array([t.cores for t in instance.tasks], dtype=np.int64)
    min_cores = int(cores[members].min())
    bin_machine = np.array(
        [m for m, mach in enumerate(instance.machines) for _ in range(mach.slots // min_cores)],
        dtype=np.int64,
    )
    if not len(bin_machine) or len(members) * len(bin_machine) > MAX_PAIRS:
        return None
    dm = d[members][:, bin_machine]
    hm = head[members][:, bin_machine]
    qm = tail[members]
    finite = np.isfinite(dm)
    h_min = np.min(np.where(finite, hm, np.inf), axis=0)
    q_min = float(qm.min())
    body = hm + dm + qm[:, None]
    order = np.argsort(-np.min(dm, axis=1), kind="stable")
    best: tuple[float, DagSolution] = (np.inf if always else base_value, base)
    sizes = np.where(finite, dm, np.inf)
    offset = h_min + q_min
    lo0 = float(np.max(np.min(body, axis=1)))
    rng = np.random.default_rng(0)
    packings: list[tuple[float, np.ndarray, bool]] = []  # (chains' end, bins, a rule's)
    restarts = int(np.clip(RESTART_WORK // len(members), 4, RESTARTS))
    for attempt in range(len(PACK_RULES) + restarts):
        if attempt < len(PACK_RULES):
            rule, key = PACK_RULES[attempt], order
        else:
            # Restarts: the "best" rule on a perturbed order, bisected below the best so far.
            shaken = np.min(dm, axis=1) * rng.uniform(1 - SHAKE, 1 + SHAKE, len(members))
            rule, key = "best", np.argsort(-shaken, kind="stable")
        lo = lo0
        # Each rule from HEFT's makespan; a restart below the best packing so far.
        hi = (
            base_value
            if attempt < len(PACK_RULES)
            else min([base_value] + [v for v, _, _ in packings])
        )
        found = None
        steps = PACK_BISECTION_STEPS if attempt < len(PACK_RULES) else RESTART_STEPS
        for _ in range(steps):
            mid = 0.5 * (lo + hi)
            cap = np.where(np.isfinite(h_min), mid - h_min - q_min, -np.inf)
            where = _pack(key, dm, finite & (body <= mid), cap, rule)
            if where is None:
                lo = mid
            else:
                hi, found = mid, where
            if hi - lo <= 1e-6 * hi:
                break
        if found is None:
            continue
        found = _descent(found, sizes, body, offset)
        load = np.bincount(found, weights=dm[np.arange(len(found)), found], minlength=len(offset))
        packings.append((float(np.max(offset + load)), found, attempt < len(PACK_RULES)))
    # Every rule's packing, and the best restarts (by their chains' ends).
    chosen = [p for p in packings if p[2]]
    chosen += sorted((p for p in packings if not p[2]), key=lambda p: p[0])[:KEEP]
    for _, found, _ in chosen:
        machine = np.full(len(instance.tasks), -1, dtype=np.int64)
        planned = base.start_s.astype(float).copy()
        machine[members] = bin_machine[found]
        chain_end = h_min.copy()
        for i in order:
            b = int(found[i])
            planned[members[i]] = chain_end[b]
            chain_end[b] += dm[i, b]
        solution = semi_active(instance, machine, planned)
        value = evaluate(instance, solution)[0]
        if value < best[0]:
            best = (value, solution)
    return best[1] if best[1] is not base else None


def family_greedies(instance: DagInstance, options: SolveOptions) -> list[tuple[str, DagSolution]]:
    """The family's heuristics for the portfolio: :func:`~placement.models.dag.greedy.
    greedy_solutions` (HEFT first, the fallback), then, for a workflow with edges, the layer
    packing of :func:`layer_schedule` when it applies and beats HEFT."""
    out = greedy_solutions(instance, options)
    if not grid_applicable(instance) and not instance.independent:
        packed = layer_schedule(instance, out[0][1])
        if packed is not None:
            out.append(("layer", packed))
    return out
