"""Tarnawski et al.'s problem on layer graphs: its units, and the exact DP over ideals.

The paper (Tarnawski, Phanishayee, Devanur, Mahajan, Nina Paravecino, "Efficient Algorithms
for Device Placement of DNN Graph Operators", NeurIPS 2020) splits a DAG of operators over
``k`` accelerators and ``l`` CPUs so that each device's forward operators are a contiguous
(convex) set, the sets being the differences of a chain of ideals ``0 = I_0 < I_1 < ... <
I_{k+l} = V`` of the forward graph, and the max-load (compute plus communication of the most
loaded device) is least. The reference is the authors' DP, ``throughput-dp/dp.cpp`` of
msr-fiddle/dnn-partitioning at commit b207b6ad27a1407d321f1e028cea96d7f2c90e3e
(``Graph::generateIdeals``, ``Graph::prepareCachedScores``, ``Graph::runDP``): colour classes
contracted, backward nodes following their forward twins, ``dp[cpus][fpgas][ideal] = min over
sub-ideals I' of max(dp[..one device fewer..][I'], load(ideal - I'))``. This module is our
own implementation of that recurrence (vectorised with numpy over the sub-ideals of an
ideal), for any device classes and both transfer accountings of the family.

* :func:`layer_graph` compiles an instance into **units**: colocation groups (and single
  layers), the forward graph between them with its strongly connected components merged
  (under the chain-of-ideals rule a cycle of units must share a device, as ``dp.cpp``'s
  ``fuseStronglyConnectedComponentsInForward`` does), per device class the units' times,
  memory and whether they may run there, and the transfers (per tensor or per edge).
* :func:`enumerate_ideals` lists the downsets of the unit DAG (capped), or, for ORDER
  contiguity, the prefixes of the layer order that cut no unit.
* :func:`solve_ideals` runs the DP and returns the optimum (exact integers, nanoseconds) and
  a split, which the checker scores at exactly that value.

Where the ideals are too many for every pair, the DP within a threshold is
:mod:`.ideals_threshold`; beyond that, the IP is :mod:`.layergraph_ip`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx
import numpy as np

from placement.models.partition.cost_model import edge_time_ns, layer_time_ns
from placement.models.partition.instance import (
    PartitionContiguity,
    PartitionInstance,
    PartitionSolution,
    PartitionTransferAccounting,
)
from placement.models.partition.tables import comm_is_uniform, device_classes

MAX_IDEALS = 1_000
"""Ideals above this are left to the IP (the DP's sub-ideal pairs grow as their square)."""
INF = np.iinfo(np.int64).max // 4


def needs_layer_graph(instance: PartitionInstance) -> bool:
    """True when the instance uses a rule the stage models (:mod:`.dp`, :mod:`.encoding`)
    do not express: convex contiguity, per-tensor transfers, backward layers, layers limited
    to some device types, or host devices."""
    w = instance.workload
    return (
        w.contiguity is PartitionContiguity.CONVEX
        or w.transfer_accounting is PartitionTransferAccounting.PER_TENSOR_VIA_HOST
        or any(lay.backward or lay.allowed_device_types for lay in instance.layers)
        or any(d.host for d in instance.devices)
    )


def layer_graph_applies(instance: PartitionInstance) -> str | None:
    """Why the layer-graph methods (this DP, the IP) cannot solve ``instance``; None if they
    can: a max-load objective without a stage limit, and one transfer time per edge whatever
    the devices."""
    w = instance.workload
    if not w.mode.bottleneck or w.max_stages is not None:
        return "the layer-graph methods solve the training max-load objective only"
    if not comm_is_uniform(instance):
        return "the layer-graph methods need one transfer time per edge (uniform links)"
    if w.contiguity is PartitionContiguity.ORDER:
        groups_with_forward = {lay.colocation_group for lay in instance.layers if not lay.backward}
        for lay in instance.layers:
            if lay.backward and lay.colocation_group not in groups_with_forward:
                return (
                    f"backward layer {lay.name!r} has no forward layer in its colocation group "
                    "(ORDER contiguity places backward layers with their forward twins)"
                )
    return None


@dataclass
class LayerGraph:
    """An instance compiled into units (see the module docstring); times in ns."""

    instance: PartitionInstance
    unit_of: list[int]
    """unit_of[layer]: its unit (units are numbered in a topological order)."""
    members: list[list[int]]
    """members[u]: the layers of unit u."""
    arcs: list[tuple[int, int]]
    """Forward arcs between units (p before q); empty under NONE contiguity."""
    classes: list[list[int]]
    """Device classes: the devices of each (interchangeable: same type, memory, host)."""
    time: np.ndarray
    """time[c, u]: unit u's compute on class c (ns)."""
    memory: np.ndarray
    """memory[u]: bytes unit u needs."""
    capacity: list[int]
    """capacity[c]: memory of a class-c device."""
    allowed: np.ndarray
    """allowed[c, u]: unit u may run on class c."""
    pays_comm: list[bool]
    """pays_comm[c]: class c's loads count transfers (hosts do not, per tensor)."""
    per_tensor: bool
    src: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per transfer item: its source unit."""
    dests: list[list[int]] = field(default_factory=list)
    """Per transfer item: its destination units (other than the source; per edge: one)."""
    tau: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per transfer item: its time (ns)."""

    @cached_property
    def dest_index(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The destinations of all transfer items flattened, where each item's start, and
        how many each has."""
        sizes = np.array([len(ds) for ds in self.dests], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        flat = np.array([u for ds in self.dests for u in ds], dtype=np.int64)
        return flat, starts, sizes

    @property
    def n_units(self) -> int:
        """Number of units."""
        return len(self.members)

    def device_of(self, unit_class_slot: list[tuple[int, int]]) -> PartitionSolution:
        """The solution putting unit u on the ``slot``-th device of class ``c``, from
        ``unit_class_slot[u] = (c, slot)``."""
        out = [-1] * len(self.unit_of)
        for u, (c, slot) in enumerate(unit_class_slot):
            for layer in self.members[u]:
                out[layer] = self.classes[c][slot]
        return PartitionSolution(tuple(out))


def layer_graph(instance: PartitionInstance) -> LayerGraph:
    """Compile ``instance`` (see :class:`LayerGraph`); :func:`layer_graph_applies` must hold."""
    layers = instance.layers
    n = len(layers)
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    group_first: dict[str, int] = {}
    for i, lay in enumerate(layers):
        if lay.colocation_group:
            j = group_first.setdefault(lay.colocation_group, i)
            parent[find(i)] = find(j)
    rule = instance.workload.contiguity
    graph = nx.DiGraph()
    graph.add_nodes_from({find(i) for i in range(n)})
    if rule is not PartitionContiguity.NONE:
        for e in instance.graph_edges:
            if not layers[e.src].backward and not layers[e.dst].backward:
                a, b = find(e.src), find(e.dst)
                if a != b:
                    graph.add_edge(a, b)
        # A cycle of units cannot be split by a chain of ideals: merge it.
        for comp in nx.strongly_connected_components(graph):
            if len(comp) > 1:
                first = min(comp)
                for a in comp:
                    parent[find(a)] = find(first)
    unit_root = sorted({find(i) for i in range(n)})
    # Units in a topological order of the contracted forward graph (ties by first layer).
    contracted = nx.DiGraph()
    contracted.add_nodes_from(unit_root)
    if rule is not PartitionContiguity.NONE:
        for e in instance.graph_edges:
            if not layers[e.src].backward and not layers[e.dst].backward:
                a, b = find(e.src), find(e.dst)
                if a != b:
                    contracted.add_edge(a, b)
    order = list(nx.lexicographical_topological_sort(contracted))
    index = {r: k for k, r in enumerate(order)}
    unit_of = [index[find(i)] for i in range(n)]
    members: list[list[int]] = [[] for _ in order]
    for i in range(n):
        members[unit_of[i]].append(i)
    arcs = sorted({(index[a], index[b]) for a, b in contracted.edges})

    dev_classes = device_classes(instance)
    # tables.device_classes groups by (type, memory, speed, node); split further by host.
    classes: list[list[int]] = []
    for cls in dev_classes:
        by_host: dict[bool, list[int]] = {}
        for d in cls.devices:
            by_host.setdefault(instance.devices[d].host, []).append(d)
        classes += [by_host[h] for h in sorted(by_host)]
    m = len(members)
    time = np.zeros((len(classes), m), dtype=np.int64)
    allowed = np.ones((len(classes), m), dtype=bool)
    memory = np.zeros(m, dtype=np.int64)
    for u, mem in enumerate(members):
        memory[u] = sum(instance.layer_memory_bytes(i) for i in mem)
        for c, devs in enumerate(classes):
            rep = devs[0]
            time[c, u] = sum(layer_time_ns(instance, i, rep) for i in mem)
            allowed[c, u] = all(layers[i].allowed_on(instance.devices[rep].type) for i in mem)
    per_tensor = (
        instance.workload.transfer_accounting is PartitionTransferAccounting.PER_TENSOR_VIA_HOST
    )
    pays = [not (per_tensor and instance.devices[devs[0]].host) for devs in classes]
    srcs: list[int] = []
    dests: list[list[int]] = []
    taus: list[int] = []
    if per_tensor:
        consumers: dict[int, set[int]] = {}
        for e in instance.graph_edges:
            consumers.setdefault(e.src, set()).add(unit_of[e.dst])
        for layer, where in sorted(consumers.items()):
            tau = instance.tensor_times_ns[layer]
            others = sorted(where - {unit_of[layer]})
            if tau and others:
                srcs.append(unit_of[layer])
                dests.append(others)
                taus.append(tau)
    else:
        d0 = classes[0][0]
        d1 = next((d for d in range(len(instance.devices)) if d != d0), d0)
        for e in instance.graph_edges:
            a, b = unit_of[e.src], unit_of[e.dst]
            tau = edge_time_ns(instance, e, d0, d1) if d1 != d0 else 0
            if a != b and tau:
                srcs.append(a)
                dests.append([b])
                taus.append(tau)
    return LayerGraph(
        instance=instance,
        unit_of=unit_of,
        members=members,
        arcs=arcs,
        classes=classes,
        time=time,
        memory=memory,
        capacity=[instance.devices[devs[0]].memory_bytes for devs in classes],
        allowed=allowed,
        pays_comm=pays,
        per_tensor=per_tensor,
        src=np.asarray(srcs, dtype=np.int64),
        dests=dests,
        tau=np.asarray(taus, dtype=np.int64),
    )


def enumerate_ideals(
    g: LayerGraph, limit: int = MAX_IDEALS, rule: PartitionContiguity | None = None
) -> np.ndarray | None:
    """The ideals as a boolean matrix (ideal x unit), the empty one first and the full one
    last; None when there are more than ``limit``. ``rule`` (default: the instance's): ORDER,
    the prefixes of the forward layer order that cut no unit; CONVEX, every downset of the
    unit DAG; NONE, not applicable (None)."""
    rule = rule or g.instance.workload.contiguity
    m = g.n_units
    if rule is PartitionContiguity.NONE:
        return None
    if rule is PartitionContiguity.ORDER:
        layers = g.instance.layers
        forward = [i for i in range(len(layers)) if not layers[i].backward]
        rows = [np.zeros(m, dtype=bool)]
        seen = np.zeros(m, dtype=bool)
        count = np.zeros(m, dtype=np.int64)
        total = np.zeros(m, dtype=np.int64)
        for i in forward:
            total[g.unit_of[i]] += 1
        for i in forward:
            u = g.unit_of[i]
            count[u] += 1
            seen[u] = True
            if not np.any(seen & (count < total)):
                rows.append(seen.copy())
        if len(rows) > limit + 1:
            return None
        return np.array(rows)
    return downsets(g, limit)


def downsets(g: LayerGraph, limit: int = MAX_IDEALS) -> np.ndarray | None:
    """Every downset of the unit DAG (an ideal: closed under predecessors) as a boolean matrix
    (ideal x unit), by size, the empty one first and the full one last; None when there are
    more than ``limit``. Level by level, vectorised: a unit may join an ideal when none of its
    predecessors is outside it (tens of thousands of ideals in a fraction of a second)."""
    m = g.n_units
    level = np.zeros((1, m), dtype=bool)
    if m == 0:
        return level
    arcs = sorted(g.arcs, key=lambda ab: (ab[1], ab[0]))
    src = np.array([a for a, _ in arcs], dtype=np.int64)
    dst = np.array([b for _, b in arcs], dtype=np.int64)
    with_pred, starts = np.unique(dst, return_index=True) if len(arcs) else (dst, dst)
    out = [level]
    total = 1
    while True:
        blocked = np.zeros(level.shape, dtype=bool)
        if len(arcs):
            blocked[:, with_pred] = np.logical_or.reduceat(~level[:, src], starts, axis=1)
        rows, cols = np.nonzero(~level & ~blocked)
        if not len(rows):
            break
        bigger = level[rows]
        bigger[np.arange(len(rows)), cols] = True
        packed = np.ascontiguousarray(np.packbits(bigger, axis=1))
        keys = packed.view(np.dtype((np.void, packed.shape[1]))).ravel()
        _, first = np.unique(keys, return_index=True)
        level = bigger[np.sort(first)]
        total += len(level)
        if total > limit:
            return None
        out.append(level)
    return np.concatenate(out)


def set_loads(
    g: LayerGraph, sets: np.ndarray, compute: np.ndarray, mem: np.ndarray, bad: np.ndarray
) -> np.ndarray:
    """Load (ns) of each set of units (rows of a boolean matrix) on each class: ``compute``
    (class x set, ns) plus the transfers the class pays; INF where the set needs more than
    the class's memory (``mem``, bytes per set) or holds a unit it may not run (``bad``, class
    x set). Returns an array (class x set)."""
    comm = np.zeros(len(sets), dtype=np.int64)
    if len(g.tau):
        flat, starts, n_dest = g.dest_index
        # Destinations of each item inside each set (a gather and a segmented sum: no BLAS,
        # whose threads fight on a loaded machine).
        inside = np.add.reduceat(sets[:, flat].astype(np.int32), starts, axis=1)
        src_in = sets[:, g.src]
        pays = (src_in & (inside < n_dest)) | (~src_in & (inside > 0))
        comm = pays.astype(np.int64) @ g.tau
    out = np.empty((len(g.classes), len(sets)), dtype=np.int64)
    for c in range(len(g.classes)):
        load = compute[c] + (comm if g.pays_comm[c] else 0)
        out[c] = np.where(bad[c] | (mem > g.capacity[c]), INF, load)
    return out


@dataclass
class IdealsResult:
    """The DP's optimum (ns; None: no split fits), its split and the work done."""

    objective_ns: int | None
    solution: PartitionSolution | None
    ideals: int
    pairs: int


def solve_ideals(g: LayerGraph, ideals: np.ndarray) -> IdealsResult:
    """The DP over ideals (module docstring): exact over the splits whose forward sets are
    differences of a chain of the given ideals, with at most ``len(classes[c])`` devices of
    each class."""
    n_id = len(ideals)
    counts = [len(c) for c in g.classes]
    # Sub-ideals of each ideal (itself included: a device left empty) and the loads.
    subs: list[np.ndarray] = []
    loads: list[np.ndarray] = []
    pairs = 0
    # Per ideal: compute per class, memory and forbidden units, so that a difference of
    # two ideals costs a subtraction (exact int64).
    ideal_i = ideals.astype(np.int64)
    time_of = g.time @ ideal_i.T
    mem_of = ideal_i @ g.memory
    bad_of = (~g.allowed).astype(np.int64) @ ideal_i.T
    for i in range(n_id):
        sub = np.flatnonzero(~(ideals & ~ideals[i]).any(axis=1))
        subs.append(sub)
        loads.append(
            set_loads(
                g,
                ideals[i] & ~ideals[sub],
                time_of[:, [i]] - time_of[:, sub],
                mem_of[i] - mem_of[sub],
                (bad_of[:, [i]] - bad_of[:, sub]) > 0,
            )
        )
        pairs += len(sub)
    # States: count vectors of devices used per class, in lexicographic order.
    states = [tuple(s) for s in np.ndindex(*[k + 1 for k in counts])]
    value: dict[tuple[int, ...], np.ndarray] = {}
    choice: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
    for s in states:
        if not any(s):
            v = np.full(n_id, INF, dtype=np.int64)
            v[0] = 0
            value[s] = v
            continue
        best = np.full(n_id, INF, dtype=np.int64)
        arg_c = np.full(n_id, -1, dtype=np.int64)
        arg_sub = np.full(n_id, -1, dtype=np.int64)
        for c in range(len(counts)):
            if s[c] == 0:
                continue
            prev = value[(*s[:c], s[c] - 1, *s[c + 1 :])]
            for i in range(n_id):
                cand = np.maximum(prev[subs[i]], loads[i][c])
                k = int(np.argmin(cand))
                if cand[k] < best[i]:
                    best[i], arg_c[i], arg_sub[i] = cand[k], c, subs[i][k]
        value[s] = best
        choice[s] = (arg_c, arg_sub)
    full = tuple(counts)
    opt = int(value[full][n_id - 1])
    if opt >= INF:
        return IdealsResult(None, None, n_id, pairs)
    # Backtrack: each step gives one device of a class the difference of two ideals.
    unit_slot: list[tuple[int, int]] = [(-1, -1)] * g.n_units
    used = [0] * len(counts)
    s, i = full, n_id - 1
    while i != 0:
        arg_c, arg_sub = choice[s]
        c, j = int(arg_c[i]), int(arg_sub[i])
        for u in np.flatnonzero(ideals[i] & ~ideals[j]):
            unit_slot[int(u)] = (c, used[c])
        used[c] += 1
        s = (*s[:c], s[c] - 1, *s[c + 1 :])
        i = j
    return IdealsResult(opt, g.device_of(unit_slot), n_id, pairs)
