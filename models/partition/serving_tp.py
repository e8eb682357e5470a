"""Serving plans with replicas and tensor-parallel stages on multi-GPU nodes (LLM_SERVING).

The instances are :func:`.hf.build_llm`'s serving ones: a chain ``embed, block00 ..
block{L-1}, head``, devices (GPUs) grouped into nodes by ``Device.node``. A **plan** is a set
of pipelines over disjoint GPUs; a pipeline a sequence of stages whose layer ranges tile the
chain in order; a **stage** a group of ``t`` GPUs of one node (one type) running its range
tensor-parallel, Megatron-LM style (Shoeybi et al. 2019, "Megatron-LM", section 3: the
attention heads and the MLP columns split ``t`` ways, two all-reduces of the activations per
block in the forward pass; Narayanan et al. SC'21, section 3.3, for the communication
volume). A pipeline of ``p`` stages keeps ``p`` micro-batches of ``B`` sequences in flight
(one per stage); a decode step of a micro-batch on a stage of type ``g`` and degree ``t`` over
layers ``R`` takes

* compute: ``sum_{l in R} time_g(l) / t`` (the roofline of :mod:`.formats.hf`: FLOPs and bytes read,
  weights and KV cache, both split ``t`` ways);
* tensor-parallel communication (``t > 1``): per all-reduce ``alpha + 2 (t - 1) / t x B x
  activation_bytes / bw_g`` (a ring all-reduce's volume; ``alpha`` a fixed latency, ``bw_g``
  the node's intra-node bandwidth), two per block, one for the embedding (vocabulary-parallel
  lookup) and one for the head (the logits' reduction, counted at the hidden size);
* pipeline transfers: ``B x activation_bytes`` received from the previous stage and sent to
  the next, at the inter-node bandwidth (also between two stages on one node: the model
  charges the NIC path);

and each GPU of the stage holds ``sum_{l in R} (weights_l / t + KV_l x B x p / t +
activation_l x B x p)`` bytes (KV cache per token x context, split with the heads), within
its memory. The pipeline serves ``B / max stage time`` tokens/s; the plan the sum.

:func:`check_tp_plan` / :func:`tp_plan_throughput` evaluate a plan layer by layer (the one
evaluator). :func:`best_tp_plan` is exact over the stage shapes it enumerates (types x the
allowed degrees): nodes of a type are interchangeable and degrees form a divisibility chain
dividing the node's GPU count, so a multiset of stage degrees packs into the type's nodes iff
their sum is at most its GPUs (Coffman, Garey and Johnson 1987, divisible item sizes: first
fit decreasing packs them); so a pipeline is a multiset of shapes, and its best stage time
comes from a bisection on the time ``tau`` (blocks per stage within ``tau`` and the memory are
closed forms: blocks are identical), to a relative 1e-12. A DP over the GPUs left per type
(:func:`.serving_plans.pack_pipelines`) then picks the best set of pipelines.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from placement.models.partition.cost_model import layer_time_ns
from placement.models.partition.instance import Mode, PartitionInstance
from placement.models.partition.serving_plans import pack_pipelines

NS = 1e-9


@dataclass(frozen=True)
class TpModel:
    """Tensor-parallel settings: the degrees allowed (a divisibility chain), each type's
    intra-node bandwidth (bytes/s; a type absent: degree 1 only) and the all-reduce latency."""

    degrees: tuple[int, ...] = (1, 2, 4)
    intra_node_bytes_per_s: dict[str, float] = field(default_factory=dict)
    allreduce_latency_s: float = 0.0


@dataclass(frozen=True)
class TpStage:
    """GPUs (device indices, one node), first layer, layer count."""

    devices: tuple[int, ...]
    first_layer: int
    layer_count: int


@dataclass(frozen=True)
class TpPlan:
    """Disjoint pipelines of tensor-parallel stages."""

    pipelines: tuple[tuple[TpStage, ...], ...]


def _allreduces(instance: PartitionInstance, layer: int) -> int:
    """Two all-reduces for a transformer block (a layer with KV cache), one otherwise."""
    return 2 if instance.layers[layer].kv_cache_bytes_per_token > 0 else 1


def stage_time_s(
    instance: PartitionInstance, model: TpModel, stage: TpStage, stages_in_pipeline: int
) -> float:
    """One micro-batch's decode step on ``stage`` (module docstring), seconds."""
    t = len(stage.devices)
    dev = stage.devices[0]
    gpu = instance.devices[dev].type
    batch = instance.workload.batch_size
    last = stage.first_layer + stage.layer_count
    layers = range(stage.first_layer, last)
    out = sum(layer_time_ns(instance, lay, dev) for lay in layers) * NS / t
    if t > 1:
        bw = model.intra_node_bytes_per_s[gpu]
        for lay in layers:
            volume = 2 * (t - 1) / t * batch * instance.layers[lay].activation_bytes
            out += _allreduces(instance, lay) * (model.allreduce_latency_s + volume / bw)
    inter = instance.links.inter_node_bandwidth_bytes_per_s
    if stage.first_layer > 0:
        out += batch * instance.layers[stage.first_layer - 1].activation_bytes / inter
    if last < len(instance.layers):
        out += batch * instance.layers[last - 1].activation_bytes / inter
    return out


def stage_memory_bytes(
    instance: PartitionInstance, stage: TpStage, stages_in_pipeline: int
) -> float:
    """Bytes on each GPU of ``stage`` (module docstring)."""
    t = len(stage.devices)
    w = instance.workload
    seqs = w.batch_size * stages_in_pipeline
    total = 0.0
    for lay in range(stage.first_layer, stage.first_layer + stage.layer_count):
        layer = instance.layers[lay]
        kv = layer.kv_cache_bytes_per_token * w.context_length * seqs
        total += layer.extra_memory_bytes + (layer.param_bytes + kv) / t
        total += layer.activation_bytes * seqs
    return total


def check_tp_plan(instance: PartitionInstance, model: TpModel, plan: TpPlan) -> list[str]:
    """Every way ``plan`` breaks the model, one line each (empty: feasible)."""
    errors: list[str] = []
    n_dev = len(instance.devices)
    n_layers = len(instance.layers)
    used: dict[int, int] = {}
    for p, stages in enumerate(plan.pipelines):
        if not stages:
            errors.append(f"pipeline {p}: no stages")
            continue
        at = 0
        for stage in stages:
            devs = stage.devices
            if not devs or any(not 0 <= d < n_dev for d in devs) or len(set(devs)) < len(devs):
                errors.append(f"pipeline {p}: stage devices {devs} are not distinct devices")
                continue
            nodes = {instance.devices[d].node for d in devs}
            types = {instance.devices[d].type for d in devs}
            if len(nodes) > 1 or len(types) > 1:
                errors.append(f"pipeline {p}: stage devices {devs} span nodes or GPU types")
            t = len(devs)
            gpu = instance.devices[devs[0]].type
            node = instance.devices[devs[0]].node
            on_node = sum(1 for dev in instance.devices if node and dev.node == node) or 1
            if (
                t not in model.degrees
                or on_node % t
                or (t > 1 and gpu not in model.intra_node_bytes_per_s)
            ):
                errors.append(
                    f"pipeline {p}: tensor-parallel degree {t} not allowed on {gpu} (allowed: "
                    f"{model.degrees} dividing the node's {on_node} GPUs, with an intra-node "
                    "bandwidth)"
                )
            for d in devs:
                if d in used:
                    errors.append(
                        f"pipeline {p}: {instance.devices[d].name} already serves pipeline "
                        f"{used[d]}"
                    )
                used[d] = p
            if stage.first_layer != at or stage.layer_count < 1:
                errors.append(
                    f"pipeline {p}: stage at layer {stage.first_layer} x {stage.layer_count}, "
                    f"expected to start at {at} with at least one layer"
                )
            at = stage.first_layer + stage.layer_count
            need = stage_memory_bytes(instance, stage, len(stages))
            cap = min(instance.devices[d].memory_bytes for d in devs)
            if need > cap:
                errors.append(
                    f"pipeline {p}: stage on {instance.devices[devs[0]].name} (x{t}) needs "
                    f"{need / 2**30:.2f} GiB per GPU, has {cap / 2**30:.2f}"
                )
        if at != n_layers:
            errors.append(f"pipeline {p}: ends at layer {at}, expected {n_layers}")
    return errors


def tp_plan_throughput(
    instance: PartitionInstance, model: TpModel, plan: TpPlan
) -> tuple[float, list[str]]:
    """(tokens/s, errors): the sum over pipelines of ``B / slowest stage``; 0 with errors."""
    errors = check_tp_plan(instance, model, plan)
    if errors:
        return 0.0, errors
    batch = instance.workload.batch_size
    total = 0.0
    for stages in plan.pipelines:
        slowest = max(stage_time_s(instance, model, s, len(stages)) for s in stages)
        total += batch / slowest
    return total, []


# --- the exact plan over stage shapes ---------------------------------------------------------


@dataclass
class _Shapes:
    """Per stage shape (type, degree): the affine time and memory of its roles."""

    shape: list[tuple[str, int]]
    per_block: np.ndarray
    """Seconds per block (compute / t plus two all-reduces)."""
    fixed: np.ndarray
    """Seconds by role (shape x 4: middle, first, last, single): embed/head and transfers."""
    block_mem: np.ndarray
    """Bytes per GPU per block as a function of stages p (shape x pmax+1)."""
    fixed_mem: np.ndarray
    """Bytes per GPU of embed/head by role (shape x 4 x pmax+1)."""
    capacity: np.ndarray
    """Bytes per GPU of each shape's type."""


def _uniform_blocks(instance: PartitionInstance) -> int:
    """L (the blocks), after checking the chain is embed, L identical blocks, head."""
    layers = instance.layers
    if instance.workload.mode is not Mode.SERVING or len(layers) < 3:
        raise ValueError("tensor-parallel plans need an LLM_SERVING chain: embed, blocks, head")
    blocks = layers[1:-1]
    ref = blocks[0]
    for lay in blocks:
        if (lay.param_bytes, lay.kv_cache_bytes_per_token, lay.activation_bytes) != (
            ref.param_bytes,
            ref.kv_cache_bytes_per_token,
            ref.activation_bytes,
        ) or lay.times != ref.times:
            raise ValueError(f"tensor-parallel plans need identical blocks; {lay.name} differs")
    return len(blocks)


def _node_groups(
    instance: PartitionInstance, types: tuple[str, ...] | None
) -> dict[str, list[list[int]]]:
    """Per GPU type: its nodes, each a list of device indices."""
    nodes: dict[str, list[int]] = {}
    for d, dev in enumerate(instance.devices):
        if types is None or dev.type in types:
            nodes.setdefault(dev.node or dev.name, []).append(d)
    out: dict[str, list[list[int]]] = {}
    for devs in nodes.values():
        kinds = {instance.devices[d].type for d in devs}
        if len(kinds) > 1:
            raise ValueError(f"node {instance.devices[devs[0]].node}: GPUs of several types")
        out.setdefault(kinds.pop(), []).append(devs)
    return out


def _degrees(model: TpModel, gpu: str, per_node: list[int]) -> list[int]:
    """The degrees a stage of ``gpu`` may take: allowed, dividing every node's GPU count, a
    divisibility chain (so packing is by the sum)."""
    if len(set(per_node)) > 1:
        raise ValueError(f"{gpu}: nodes of one type need equal GPU counts, got {per_node}")
    allowed = sorted(t for t in model.degrees if per_node[0] % t == 0)
    if gpu not in model.intra_node_bytes_per_s:
        allowed = [t for t in allowed if t == 1]
    for a, b in itertools.pairwise(allowed):
        if b % a:
            raise ValueError(f"tensor-parallel degrees {allowed} are not a divisibility chain")
    return allowed


BISECTION_TOLERANCE = 1e-12
"""Relative width at which the bisection on a pipeline's stage time stops."""


def best_tp_plan(
    instance: PartitionInstance,
    model: TpModel,
    types: tuple[str, ...] | None = None,
    single_pipeline: bool = False,
) -> TpPlan:
    """The best plan (module docstring) over the GPUs of ``types`` (None: all); with
    ``single_pipeline``, the best one pipeline."""
    return best_tp_plan_and_bound(instance, model, types, single_pipeline)[0]


def best_tp_plan_and_bound(
    instance: PartitionInstance,
    model: TpModel,
    types: tuple[str, ...] | None = None,
    single_pipeline: bool = False,
    stop: Callable[[], bool] | None = None,
) -> tuple[TpPlan, float]:
    """:func:`best_tp_plan` and an upper bound on the tokens/s of every plan of the model.

    Each pipeline pattern's least stage time lies in ``(lo, hi]`` of its bisection, where
    ``lo`` failed the feasibility test (so no tiling fits within ``lo``) and ``hi - lo <=``
    :data:`BISECTION_TOLERANCE` ``x hi``; the packing DP is exact over the values ``B / hi``,
    so ``pack / (1 - tolerance)`` bounds every plan (with a factor 10 of float margin).
    ``stop`` (the deadline or a cancellation): when it says so, the bisection raises
    TimeoutError."""
    n_blocks = _uniform_blocks(instance)
    groups = _node_groups(instance, types)
    kinds = sorted(groups)
    shapes: list[tuple[str, int]] = []
    for g in kinds:
        shapes += [(g, t) for t in _degrees(model, g, [len(n) for n in groups[g]])]
    sizes = [sum(len(n) for n in groups[g]) for g in kinds]
    caps = [min(sum(len(n) for n in groups[g]) // t, n_blocks + 2) for g, t in shapes]
    # Multisets of shapes: per type, counts whose GPUs fit; their product.
    per_type: list[list[tuple[int, ...]]] = []
    for gi, g in enumerate(kinds):
        idx = [j for j, (h, _) in enumerate(shapes) if h == g]
        opts = [
            c
            for c in itertools.product(*(range(caps[j] + 1) for j in idx))
            if sum(k * shapes[j][1] for k, j in zip(c, idx, strict=True)) <= sizes[gi]
        ]
        per_type.append(opts)
    rows = [sum(parts, ()) for parts in itertools.product(*per_type)]
    counts = np.array([r for r in rows if any(r)], dtype=np.int64)
    if not len(counts):
        return TpPlan(()), 0.0
    p_max = int(counts.sum(axis=1).max())
    shp = _shape_tables(instance, model, shapes, p_max)
    tau = _best_times(counts, shp, n_blocks, stop)
    usage = np.zeros((len(counts), len(kinds)), dtype=np.int64)
    for j, (g, t) in enumerate(shapes):
        usage[:, kinds.index(g)] += counts[:, j] * t
    batch = instance.workload.batch_size
    value = np.where(np.isfinite(tau), batch / np.where(np.isfinite(tau), tau, 1.0), 0.0)
    best_of: dict[tuple[int, ...], int] = {}
    for r in np.flatnonzero(value > 0):
        key = tuple(int(u) for u in usage[r])
        if key not in best_of or value[r] > value[best_of[key]]:
            best_of[key] = int(r)
    if not best_of:
        return TpPlan(()), 0.0
    if single_pipeline:
        chosen_rows = [max(best_of.values(), key=lambda r: value[r])]
        packed = float(value[chosen_rows[0]])
    else:
        keys = list(best_of)
        packed, picks = pack_pipelines(tuple(sizes), [(k, float(value[best_of[k]])) for k in keys])
        chosen_rows = [best_of[keys[j]] for j in picks]
    layouts = [_decode(counts[r], float(tau[r]), shp, n_blocks) for r in chosen_rows]
    # GPUs: every stage of every pipeline, largest degree first, to the fullest node that
    # has room (first fit decreasing on divisible sizes: it packs whenever the sum fits).
    free = {g: [list(n) for n in groups[g]] for g in kinds}
    devices: dict[tuple[int, int], tuple[int, ...]] = {}
    order = sorted(
        ((q, i) for q, lay in enumerate(layouts) for i in range(len(lay))),
        key=lambda qi: -shp.shape[layouts[qi[0]][qi[1]][0]][1],
    )
    for q, i in order:
        gpu, t = shp.shape[layouts[q][i][0]]
        devices[(q, i)] = tuple(_take(free[gpu], t))
    pipelines = tuple(
        tuple(
            TpStage(devices[(q, i)], first, n_layers) for i, (_, first, n_layers) in enumerate(lay)
        )
        for q, lay in enumerate(layouts)
    )
    return TpPlan(pipelines), packed / (1 - 10 * BISECTION_TOLERANCE)


def _shape_tables(
    instance: PartitionInstance, model: TpModel, shapes: list[tuple[str, int]], p_max: int
) -> _Shapes:
    layers = instance.layers
    w = instance.workload
    batch = w.batch_size
    inter = instance.links.inter_node_bandwidth_bytes_per_s
    n = len(shapes)
    per_block = np.zeros(n)
    fixed = np.zeros((n, 4))
    block_mem = np.zeros((n, p_max + 1))
    fixed_mem = np.zeros((n, 4, p_max + 1))
    capacity = np.zeros(n)
    rep = {}
    for d, dev in enumerate(instance.devices):
        rep.setdefault(dev.type, d)
    ps = np.arange(p_max + 1)

    def comm(lay: int, t: int, gpu: str) -> float:
        if t == 1:
            return 0.0
        volume = 2 * (t - 1) / t * batch * layers[lay].activation_bytes
        return _allreduces(instance, lay) * (
            model.allreduce_latency_s + volume / model.intra_node_bytes_per_s[gpu]
        )

    def mem(lay: int, t: int) -> np.ndarray:
        layer = layers[lay]
        seqs = batch * ps
        kv = layer.kv_cache_bytes_per_token * w.context_length * seqs
        return (
            layer.extra_memory_bytes + (layer.param_bytes + kv) / t + layer.activation_bytes * seqs
        )

    last = len(layers) - 1
    recv = batch * layers[last - 1].activation_bytes / inter  # into the last stage
    send0 = batch * layers[0].activation_bytes / inter  # out of the first
    blk = batch * layers[1].activation_bytes / inter  # between blocks
    for j, (gpu, t) in enumerate(shapes):
        d = rep[gpu]
        time = [layer_time_ns(instance, lay, d) * NS / t for lay in (0, 1, last)]
        per_block[j] = time[1] + comm(1, t, gpu)
        embed = time[0] + comm(0, t, gpu)
        head = time[2] + comm(last, t, gpu)
        # Transfers: a middle stage receives from a block (or the embedding) and sends a
        # block's output; the activation bytes of embed and blocks are equal in build_llm,
        # but the first stage's send is its last block's output (embed's when it has none).
        fixed[j] = (2 * blk, embed + blk, head + recv, embed + head)
        if send0 != blk:
            raise ValueError("tensor-parallel plans need equal activations for embed and blocks")
        block_mem[j] = mem(1, t)
        fixed_mem[j, 0] = 0.0
        fixed_mem[j, 1] = mem(0, t)
        fixed_mem[j, 2] = mem(last, t)
        fixed_mem[j, 3] = mem(0, t) + mem(last, t)
        capacity[j] = instance.devices[d].memory_bytes
    return _Shapes(shapes, per_block, fixed, block_mem, fixed_mem, capacity)


def _blocks_within(shp: _Shapes, tau: np.ndarray, p: np.ndarray, role: int) -> np.ndarray:
    """Most blocks each shape's stage of ``role`` takes within ``tau`` (rows) in a pipeline
    of ``p`` stages; -1 where even none fits (rows x shapes)."""
    slack = tau[:, None] - shp.fixed[None, :, role]
    by_time = np.floor(slack / shp.per_block[None, :] * (1 + 1e-12))
    mem_left = shp.capacity[None, :] - shp.fixed_mem[:, role, :].T[p]
    by_mem = np.floor(mem_left / np.maximum(shp.block_mem.T[p], 1e-300))
    k = np.minimum(by_time, by_mem)
    k = np.where((slack < 0) | (mem_left < 0), -1, k)
    return np.minimum(k, 10**6).astype(np.int64)


def _feasible(counts: np.ndarray, shp: _Shapes, n_blocks: int, tau: np.ndarray) -> np.ndarray:
    """Whether each row's multiset of stages can hold the chain within ``tau`` (rows)."""
    p = counts.sum(axis=1)
    n = counts.shape[1]
    ok = np.zeros(len(counts), dtype=bool)
    single = p == 1
    if single.any():
        k = _blocks_within(shp, tau[single], p[single], 3)
        ok[single] = ((counts[single] > 0) & (k >= n_blocks)).any(axis=1)
    multi = ~single
    if not multi.any():
        return ok
    c, pm, tm = counts[multi], p[multi], tau[multi]
    mid = _blocks_within(shp, tm, pm, 0)
    first = _blocks_within(shp, tm, pm, 1)
    last = _blocks_within(shp, tm, pm, 2)
    bad = mid < 1
    mid_sum = (c * np.clip(mid, 0, None)).sum(axis=1)
    bad_count = (c * bad).sum(axis=1)
    best = np.zeros(len(c), dtype=bool)
    for a in range(n):
        for b in range(n):
            have = (c[:, a] >= 1) & (c[:, b] >= 1) if a != b else c[:, a] >= 2
            if not have.any():
                continue
            left_bad = bad_count - bad[:, a] - bad[:, b]
            total = (
                mid_sum
                - np.clip(mid[:, a], 0, None)
                - np.clip(mid[:, b], 0, None)
                + first[:, a]
                + last[:, b]
            )
            best |= (
                have
                & (first[:, a] >= 0)
                & (last[:, b] >= 0)
                & (left_bad == 0)
                & (total >= n_blocks)
            )
    # Middle stages hold a block each: more stages than blocks + 2 never tile the chain.
    ok[multi] = best & (pm - 2 <= n_blocks)
    return ok


def _best_times(
    counts: np.ndarray, shp: _Shapes, n_blocks: int, stop: Callable[[], bool] | None = None
) -> np.ndarray:
    """Per row, the least stage time within which its stages hold the chain (to a relative
    :data:`BISECTION_TOLERANCE`, bisection; inf: never)."""
    p = counts.sum(axis=1)
    hi = np.full(len(counts), float(shp.fixed.max() + shp.per_block.max() * (n_blocks + 2)))
    ok = _feasible(counts, shp, n_blocks, hi)
    lo = np.zeros(len(counts))
    for _ in range(200):  # ends at the tolerance (~40 halvings + log2 of hi / optimum)
        if stop is not None and stop():
            raise TimeoutError("serving_tp: the stage-time bisection was stopped")
        mid = (lo + hi) / 2
        good = _feasible(counts, shp, n_blocks, mid)
        hi = np.where(good, mid, hi)
        lo = np.where(good, lo, mid)
        if np.all((hi - lo) <= BISECTION_TOLERANCE * hi):
            break
    return np.where(ok & (p > 0), hi, np.inf)


def _decode(
    count: np.ndarray, tau: float, shp: _Shapes, n_blocks: int
) -> list[tuple[int, int, int]]:
    """One pipeline of the multiset ``count`` within ``tau``: (shape, first layer, layers)
    per stage, in order (roles and blocks; GPUs come after)."""
    p = int(count.sum())
    stages = [j for j, k in enumerate(count) for _ in range(int(k))]
    t_arr, p_arr = np.array([tau]), np.array([p])
    if p == 1:
        roles = [3]
    else:
        mid = _blocks_within(shp, t_arr, p_arr, 0)[0]
        first = _blocks_within(shp, t_arr, p_arr, 1)[0]
        last = _blocks_within(shp, t_arr, p_arr, 2)[0]
        pick = None
        for a, b in itertools.product(range(len(count)), repeat=2):
            have = count[a] >= 1 and count[b] >= 1 if a != b else count[a] >= 2
            if not have or first[a] < 0 or last[b] < 0:
                continue
            rest = list(stages)
            rest.remove(a)
            rest.remove(b)
            if any(mid[j] < 1 for j in rest):
                continue
            if first[a] + last[b] + sum(min(mid[j], n_blocks) for j in rest) >= n_blocks:
                pick = (a, b, rest)
                break
        if pick is None:
            raise RuntimeError("serving_tp: the chosen pipeline does not fit its time")
        a, b, rest = pick
        stages = [a, *rest, b]
        roles = [1] + [0] * len(rest) + [2]
    caps = [
        int(_blocks_within(shp, t_arr, p_arr, r)[0][j]) for j, r in zip(stages, roles, strict=True)
    ]
    # Blocks: fill in order, each stage its most; middle stages keep at least one.
    need_min = [1 if r == 0 else 0 for r in roles]
    blocks = list(need_min)
    left = n_blocks - sum(blocks)
    for i, cap in enumerate(caps):
        extra = min(cap - blocks[i], left)
        blocks[i] += extra
        left -= extra
    if left:
        raise RuntimeError("serving_tp: the chosen pipeline does not hold every block")
    out = []
    at = 0
    for i, (j, r) in enumerate(zip(stages, roles, strict=True)):
        count_layers = blocks[i] + (1 if r in (1, 3) else 0) + (1 if r in (2, 3) else 0)
        out.append((j, at, count_layers))
        at += count_layers
    return out


def _take(nodes: list[list[int]], t: int) -> list[int]:
    """``t`` free GPUs of one node: the fullest node that has them."""
    fits = [n for n in nodes if len(n) >= t]
    if not fits:
        raise RuntimeError("serving_tp: no node has the GPUs a stage needs")
    node = min(fits, key=len)
    taken = node[:t]
    del node[:t]
    return taken
