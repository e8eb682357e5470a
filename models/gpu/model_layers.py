"""The layers the later tiers add to the GPU model, just before the tier that optimises them.

The communication tier's span indicators (:func:`build_span`), the exact linearisation of
the fragmentation measure of :func:`placement.models.gpu.check.node_fragmentation_milli`
(:func:`build_fragmentation`) and the opt-in topology fit (:func:`build_topology_fit`),
each on a :class:`~placement.models.gpu.model_rows.GpuRows` (docs/formulations/gpu.md).
"""

from __future__ import annotations

import numpy as np

from placement.models.gpu.eligibility import FreeCapacity
from placement.models.gpu.instance import MILLI, GpuInstance
from placement.models.gpu.model_rows import GpuRows
from placement.models.gpu.model_spans import possible_spans, span_cost


def build_span(model: GpuRows, j: int) -> None:
    """The comm cost of job ``j``: cost(widest span) x - sum of gains x c[j, L]."""
    job, lm, x = model.instance.jobs[j], model.lm, model.x[j]
    spans = possible_spans(model.instance, job)
    model.comm.add(x, span_cost(model.instance, job, spans[-1]))
    prev: int | None = None
    for sl in model.spans[j]:
        nxt = spans[spans.index(sl.level) + 1]
        gain = span_cost(model.instance, job, nxt) - span_cost(model.instance, job, sl.level)
        if sl.mode == "always":
            model.comm.add(x, -gain)
            sl.c = x
            if prev is not None:
                lm.row([(prev, 1), (x, -1)], None, 0)
                prev = None  # every wider level holds the job too
        elif sl.mode == "var":
            if sl.c < 0:
                model.add_span_var(j, sl)
            model.comm.add(sl.c, -gain)
            if prev is not None:
                # Inside one group of a level => inside one group of the next level.
                lm.row([(prev, 1), (sl.c, -1)], None, 0)
            prev = sl.c


def build_fragmentation(
    model: GpuRows, whole_on: dict[int, list[int]], frac_gpus: dict[tuple[int, int], list[int]]
) -> None:
    """Tier 3: the weighted unusable free milli-GPU of every node, linearised exactly."""
    inst, cl, lm = model.instance, model.cluster, model.lm
    var_gpus_of: dict[int, list[int]] = {}
    for n, g in sorted(frac_gpus):
        var_gpus_of.setdefault(n, []).append(g)
    for n, g in sorted(frac_gpus):
        free0 = int(cl.free0[cl.gpu_offset[n] + g])
        fv = model.fv[(n, g)] = lm.var(0, free0, "fv")
        lm.row([(fv, 1)] + model.used_milli(n, g), free0, free0)
    for n, node in enumerate(inst.nodes):
        start = cl.gpu_offset[n]
        var_gpus = var_gpus_of.get(n, [])
        var_set = set(var_gpus)
        count_doms = [d for d in model.doms[n] if (n, d) in model.count_domains]
        count_set = {g for d in count_doms for g in model.ff[n][d]}
        const_free = [
            int(cl.free0[start + g])
            for g in range(node.gpu_count)
            if g not in var_set and g not in count_set
        ]
        if not var_gpus and not count_doms:
            model.frag.constant += _const_node_frag(model, const_free)
            continue
        const_full = sum(1 for f in const_free if f == MILLI)
        const_partial = sum(f for f in const_free if 0 < f < MILLI)
        capacity = sum(len(model.ff[n][d]) for d in count_doms)
        use = [t for d in count_doms for t in model.whole_use(n, d, whole_on.get(n, []))]
        es = []
        for g in var_gpus:
            if int(cl.free0[start + g]) == MILLI:
                fv = model.fv[(n, g)]
                e = model.e[(n, g)] = lm.var(0, 1, "e")
                lm.row([(fv, 1), (e, -MILLI)], 0, None)  # e = 1 => fully free
                lm.row([(fv, 1), (e, -1)], None, MILLI - 1)  # fully free => e = 1
                es.append(e)
        # partial = const_partial + sum(fv) - 1000 sum(e);  F = free whole GPUs
        partial: list[tuple[int, int]] = [(model.fv[(n, g)], 1) for g in var_gpus]
        partial += [(e, -MILLI) for e in es]
        f_const = const_full + capacity
        f_terms: list[tuple[int, int]] = [(e, 1) for e in es] + [(v, -c) for v, c in use]
        f_lo, f_hi = const_full, const_full + capacity + len(es)
        for k, weight in model.whole_classes:
            model.frag.constant += weight * const_partial
            for v, c in partial:
                model.frag.add(v, weight * c)
            if k <= 1 or f_lo >= k:
                continue  # F < k never holds with F >= k, and F < 1 means F = 0
            if not f_terms or f_hi < k:
                # F < k always (or F constant): 1000 * F counts directly.
                if f_hi < k or f_const < k:
                    model.frag.constant += weight * MILLI * f_const
                    for v, c in f_terms:
                        model.frag.add(v, weight * MILLI * c)
                continue
            if n not in model.F:
                F = model.F[n] = lm.var(f_lo, f_hi, "F")
                lm.row([(F, 1)] + [(v, -c) for v, c in f_terms], f_const, f_const)
            F = model.F[n]
            h, q = lm.var(0, 1, "h"), lm.var(0, k - 1, "q")
            model.hq[(n, k)] = (h, q)
            lm.row([(F, 1), (h, k)], k, None)  # h = 0 => F >= k
            lm.row([(F, 1), (h, f_hi - k + 1)], None, f_hi)  # h = 1 => F <= k - 1
            lm.row([(q, 1), (h, -(k - 1))], None, 0)  # q <= (k-1) h
            lm.row([(q, 1), (F, -1)], None, 0)  # q <= F
            lm.row([(q, 1), (F, -1), (h, -f_hi)], -f_hi, None)  # q >= F - F_max (1 - h)
            model.frag.add(q, weight * MILLI)
        for fm, weight in model.frac_classes:
            model.frag.constant += weight * sum(f for f in const_free if f < fm)
            for g in var_gpus:
                fv = model.fv[(n, g)]
                free0 = int(cl.free0[start + g])
                if free0 < fm:
                    model.frag.add(fv, weight)  # always below the class's demand
                    continue
                t, r = lm.var(0, 1, "t"), lm.var(0, fm - 1, "r")
                model.t[(n, g, fm)] = (t, r)
                lm.row([(fv, 1), (t, fm)], fm, None)  # t = 0 => fv >= fm
                lm.row([(fv, 1), (t, free0 - fm + 1)], None, free0)  # t = 1 => fv < fm
                lm.row([(r, 1), (t, -(fm - 1))], None, 0)  # r <= (fm-1) t
                lm.row([(r, 1), (fv, -1)], None, 0)  # r <= fv
                lm.row([(r, 1), (fv, -1), (t, -free0)], -free0, None)  # r >= fv - free0 (1-t)
                model.frag.add(r, weight)


def _const_node_frag(model: GpuRows, free: list[int]) -> int:
    """check.node_fragmentation_milli of a node whose free capacity cannot change."""
    full = sum(1 for f in free if f == MILLI)
    partial = sum(f for f in free if 0 < f < MILLI)
    total = 0
    for k, weight in model.whole_classes:
        total += weight * (partial + (MILLI * full if full < k else 0))
    for fm, weight in model.frac_classes:
        total += weight * sum(f for f in free if f < fm)
    return total


def fit_coefficients(inst: GpuInstance) -> tuple[list[int], int]:
    """Per node, the fully free GPUs (before the decision) of its groups at every level
    above the node, summed; and the cost ``S`` of one extra rack (the most GPUs in a rack
    times the sum over those levels of the most GPUs in a group: more than the first term
    of a rack's worth of GPUs anywhere). See docs/formulations/gpu.md, "Topology fit"."""
    full = FreeCapacity(inst)  # the instance's state, not a restricted model's residual
    ff = np.asarray(full.ff_count, dtype=np.int64)
    per_node = np.zeros(len(inst.nodes), dtype=np.int64)
    for ids in inst.group_ids:
        per_node += np.bincount(ids, weights=ff)[ids].astype(np.int64)
    gpus = np.asarray([node.gpu_count for node in inst.nodes], dtype=np.int64)
    most = [int(np.bincount(ids, weights=gpus).max()) for ids in inst.group_ids]
    return per_node.tolist(), most[0] * sum(most)


def _fit_of_fixed(model: GpuRows, j: int, per_node: list[int], spread: int) -> int:
    workers = model.fixed[j]
    racks = {int(model.instance.group_ids[0][w.node]) for w in workers}
    cost = spread * (len(racks) - 1)
    if model.instance.jobs[j].kind == "whole":
        cost += sum(len(w.gpus) * per_node[w.node] for w in workers)
    return cost


def build_topology_fit(model: GpuRows) -> None:
    """Tier 4 (opt-in): S x (racks used - 1) per placed job plus, per whole GPU, the
    fully free GPUs of its rack and block before the decision."""
    inst, lm = model.instance, model.lm
    per_node, spread = fit_coefficients(inst)
    racks = inst.group_ids[0]
    for j in model.fixed:
        model.fit.constant += _fit_of_fixed(model, j, per_node, spread)
    for j in model.plans:
        job = inst.jobs[j]
        if job.kind == "whole":
            for n in model.job_nodes[j]:
                model.fit.add(model.w[(j, n)], job.gpus * per_node[n])
        by_rack: dict[int, list[tuple[int, int]]] = {}
        for n in model.job_nodes[j]:
            by_rack.setdefault(int(racks[n]), []).extend((v, 1) for _, v in model.worker_vars(j, n))
        if len(by_rack) < 2 or job.workers < 2:
            continue
        # r = 1 when the job has a worker in the rack; at least one rack when placed.
        model.fit.add(model.x[j], -spread)
        for key, terms in sorted(by_rack.items()):
            r = model.rk[(j, key)] = lm.var(0, 1, "r")
            most = min(job.workers, sum(lm.ub[v] for v, _ in terms))
            lm.row(terms + [(r, -most)], None, 0)
            model.fit.add(r, spread)
        lm.row([(model.rk[(j, key)], 1) for key in by_rack] + [(model.x[j], -1)], 0, None)
