"""Batch mode of the openb replay: every B arrivals, the pending pods are placed jointly.

Protocol (``docs/formulations/gpu.md``, "Online and batch modes on a trace"):

* Pods arrive one by one in the workload order of :func:`.replay.workload` (the same order,
  per seed, as the online replay). A **cycle** runs after every B-th arrival (and after the
  last one). It sees every *pending* pod: the B new arrivals and those left unplaced by
  earlier cycles. Nothing is ever removed, so free capacity only shrinks: a pod that fits no
  node on its own now never will, and is not handed to the model again (it stays pending and
  counts as unplaced).
* **Hint**: the online policy places the pending pods that fit alone, largest demand first
  (then arrival order), on a copy of the cluster. If it places all of them, no placement
  can place more demand, so the hint is optimal for the primary objective and is applied
  as is (counted as ``hint_optimal``; the solver is not called).
* Otherwise the **exact model** (:func:`solve_cycle`, CP-SAT) places them jointly over
  candidate nodes (per pod, the hint's node and the ``top_k`` feasible nodes its own fit
  leaves tightest): maximise placed milli-GPU, then minimise the GPUs a shared pod opens
  (fully free before, partly used after), with the hint as a solution hint and a per-cycle
  time limit. The better of hint and model (placed demand, then opened GPUs) is kept.
* Every placement the cycle would apply -- hint or model -- first passes
  :func:`check_placement`, an independent check against the free capacity (each pod at
  most once, node exists, GPU type accepted, CPU and memory, the pod's GPU count of distinct
  existing GPUs, each with the pod's per-GPU milli-GPU free after the other pods of the
  cycle). A placement that fails is counted in ``invalid`` and not applied.

Measurement (comparable with the online protocol, where a pod is decided on arrival):
``arrived[i]`` is the GPU demand of arrivals 0..i, as online. ``used[i]`` ("settled") is the
demand of the pods among arrivals 0..i that are placed once the cycle that received
arrival i has run -- a subset of a placement the cluster really holds, so a feasible
allocation of the arrived pods, decided with at most B - 1 later arrivals in view.
``used_live[i]`` is what the cluster holds when arrival i comes in (only the cycles before
it have run): the lag a batching orchestrator adds. Both are reported; at cycle ends they
agree.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.sim.openb.replay import (
    TUNE_RATIO,
    Curve,
    PodSet,
    Policy,
    TraceCluster,
    TraceState,
    start_replay,
)
from placement.solver.backends.base import RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions

Placement = list[tuple[int, int, tuple[int, ...]]]
"""``[(item, node, gpus), ...]``: ``item`` indexes the cycle's list of pods (a pod of the
trace may arrive twice, so items, not pod indices, identify what is placed)."""


def check_placement(
    state: TraceState, pods: PodSet, items: list[int], placement: Placement
) -> list[str]:
    """Everything wrong with applying ``placement`` of the pods ``items`` to ``state`` at
    once ([] if valid).

    Independent of :meth:`TraceState.place` and of the model: recomputes the load of every
    touched node and GPU from scratch.
    """
    errors: list[str] = []
    cluster = state.cluster
    seen: set[int] = set()
    cpu: dict[int, int] = {}
    mem: dict[int, int] = {}
    gpu: dict[tuple[int, int], int] = {}
    for item, node, gpus in placement:
        if not 0 <= item < len(items):
            errors.append(f"item {item} is not one of the {len(items)} pods of the cycle")
            continue
        p = items[item]
        name = pods.names[p]
        if item in seen:
            errors.append(f"pod {name} (item {item}) placed twice")
            continue
        seen.add(item)
        if not 0 <= node < cluster.n:
            errors.append(f"pod {name}: node {node} does not exist")
            continue
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        if k and not pods.type_ok[p, cluster.type_of[node]]:
            errors.append(f"pod {name}: GPU type {cluster.types[cluster.type_of[node]]} refused")
        if len(gpus) != k or len(set(gpus)) != k:
            errors.append(f"pod {name}: needs {k} distinct GPUs, got {list(gpus)}")
        for g in gpus:
            if not 0 <= g < int(cluster.gpu_count[node]):
                errors.append(f"pod {name}: node {node} has no GPU {g}")
                continue
            gpu[node, g] = gpu.get((node, g), 0) + m
        cpu[node] = cpu.get(node, 0) + int(pods.cpu_milli[p])
        mem[node] = mem.get(node, 0) + int(pods.memory_mib[p])
    for node, used in cpu.items():
        if used > state.cpu_left[node]:
            errors.append(f"node {node}: CPU {used} > {state.cpu_left[node]} free")
    for node, used in mem.items():
        if used > state.mem_left[node]:
            errors.append(f"node {node}: memory {used} > {state.mem_left[node]} free")
    for (node, g), used in gpu.items():
        if used > state.gpu_left[node, g]:
            errors.append(f"node {node} GPU {g}: {used} milli > {state.gpu_left[node, g]} free")
    return errors


def _opened(state: TraceState, pods: PodSet, items: list[int], placement: Placement) -> int:
    """GPUs fully free in ``state`` that shared pods of ``placement`` take a part of."""
    touched = {
        (node, g)
        for item, node, gpus in placement
        for g in gpus
        if pods.milli[items[item]] < MILLI and state.gpu_left[node, g] == MILLI
    }
    return len(touched)


def _demand(pods: PodSet, items: list[int], placement: Placement) -> int:
    return int(sum(int(pods.demand[items[item]]) for item, _, _ in placement))


def hint_placement(
    state: TraceState,
    pods: PodSet,
    policy: Policy,
    items: list[int],
    rng: np.random.Generator,
) -> Placement:
    """The online policy on a copy of ``state``, pods in ``items`` order (oldest first).

    (Largest demand first was tried on seed 1 of the default trace and lost 68 more pods by
    100 % arrived than arrival order at B = 64, so the hint keeps the arrival order.)"""
    state = state.copy()
    policy = copy.deepcopy(policy)
    out: Placement = []
    for item in range(len(items)):
        p = items[item]
        nodes = state.feasible(pods, p)
        if len(nodes):
            node, gpus = policy.choose(state, pods, p, nodes, rng)
            state.place(pods, p, node, gpus)
            policy.placed(state, pods, p, node)
            out.append((item, int(node), tuple(int(g) for g in gpus)))
    return out


@dataclass
class CycleResult:
    placement: Placement
    status: str
    """``optimal`` / ``feasible`` (CP-SAT's status) or ``hint_kept`` (no solution in time:
    the hint is returned)."""
    solve_seconds: float = 0.0
    variables: int = 0


def solve_cycle(
    state: TraceState,
    pods: PodSet,
    items: list[int],
    hint: Placement,
    time_limit: float,
    top_k: int = 16,
    workers: int = 1,
    seed: int = 0,
) -> CycleResult:
    """The joint placement of ``items`` (pods that each fit alone) by CP-SAT (module doc)."""
    from ortools.sat.python import cp_model  # deferred: 0.85 s to import, paid by cycles only

    hint_of = {item: (node, gpus) for item, node, gpus in hint}
    model = cp_model.CpModel()
    # choice[item, node] = (x: placed there, {gpu: y}: the GPUs it takes there)
    node_terms_cpu: dict[int, list] = {}
    node_terms_mem: dict[int, list] = {}
    gpu_terms: dict[tuple[int, int], list] = {}
    placed_vars: dict[int, list] = {}
    shared_vars: dict[tuple[int, int], list] = {}  # (node, g) fully free -> shared vars
    choice: dict[tuple[int, int], tuple] = {}
    nvars = 0
    for item, p in enumerate(items):
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        nodes = state.feasible(pods, p)
        if not len(nodes):
            continue
        left_total = state.gpu_left[nodes].sum(axis=1)
        tight = np.argsort(left_total - k * m, kind="stable")[:top_k]
        cand = {int(n) for n in nodes[tight]}
        if item in hint_of:
            cand.add(hint_of[item][0])
        placed_vars[item] = []
        for n in sorted(cand):
            x = model.NewBoolVar(f"x{item}_{n}")
            nvars += 1
            placed_vars[item].append(x)
            node_terms_cpu.setdefault(n, []).append((int(pods.cpu_milli[p]), x))
            node_terms_mem.setdefault(n, []).append((int(pods.memory_mib[p]), x))
            gvars = {}
            if k:
                ok = np.flatnonzero(state.exists[n] & (state.gpu_left[n] >= m))
                for g in ok:
                    y = model.NewBoolVar(f"y{item}_{n}_{g}")
                    nvars += 1
                    gvars[int(g)] = y
                    gpu_terms.setdefault((n, int(g)), []).append((m, y))
                    if m < MILLI and state.gpu_left[n, g] == MILLI:
                        shared_vars.setdefault((n, int(g)), []).append(y)
                model.Add(sum(gvars.values()) == k * x)
            choice[item, n] = (x, gvars)
            hint_here = item in hint_of and hint_of[item][0] == n
            model.AddHint(x, hint_here)
            for g, y in gvars.items():
                model.AddHint(y, hint_here and g in hint_of[item][1])
        model.AddAtMostOne(placed_vars[item])
    for n, terms in node_terms_cpu.items():
        model.Add(sum(c * x for c, x in terms) <= int(state.cpu_left[n]))
    for n, terms in node_terms_mem.items():
        model.Add(sum(c * x for c, x in terms) <= int(state.mem_left[n]))
    for (n, g), terms in gpu_terms.items():
        if sum(c for c, _ in terms) > state.gpu_left[n, g]:
            model.Add(sum(c * y for c, y in terms) <= int(state.gpu_left[n, g]))
    opened = []
    for (n, g), ys in shared_vars.items():
        o = model.NewBoolVar(f"o{n}_{g}")
        for y in ys:
            model.AddImplication(y, o)
        opened.append(o)
        hinted = any(
            item in hint_of and hint_of[item][0] == n and g in hint_of[item][1]
            for item in range(len(items))
        )
        model.AddHint(o, hinted)
    weight = len(opened) + 1
    placed_demand = sum(
        int(pods.demand[items[item]]) * x
        for (item, _n), (x, _g) in choice.items()
        if pods.demand[items[item]] > 0
    )
    model.Maximize(weight * placed_demand - sum(opened))
    options = SolveOptions(time_limit_s=time_limit, threads=workers, seed=seed)
    t0 = time.perf_counter()
    run = CpSat.run(model, options, CancellationToken(), time_limit, single_strategy=True)
    seconds = time.perf_counter() - t0
    if not run.has_solution:
        return CycleResult(hint, "hint_kept", seconds, nvars)
    solver = run.solver  # type: ignore[attr-defined]
    out: Placement = []
    for (item, n), (x, gvars) in choice.items():
        if solver.Value(x):
            out.append((item, n, tuple(g for g, y in gvars.items() if solver.Value(y))))
    name = "optimal" if run.status == RunStatus.OPTIMAL else "feasible"
    return CycleResult(out, name, seconds, nvars)


@dataclass
class BatchCurve(Curve):
    """A batch replay: a :class:`.replay.Curve` whose ``used`` is the settled allocation,
    with the live allocation and the cycles' statistics."""

    batch: int = 0
    used_live: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cycle_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """Wall time of each cycle (hint + model + solve + check + apply)."""
    solve_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    """CP-SAT's time of each cycle that called it."""
    statuses: dict[str, int] = field(default_factory=dict)
    invalid: int = 0
    max_pending: int = 0

    def at_live(self, percent: int) -> float:
        live = Curve(
            self.policy,
            self.seed,
            self.total_gpu_milli,
            self.order,
            self.node,
            self.gpus,
            self.arrived,
            self.used_live,
        )
        return live.at(percent)


def replay_batch(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    batch: int,
    time_limit: float = 1.0,
    ratio: float = TUNE_RATIO,
    protocol: str = "simulator",
    order: np.ndarray | None = None,
    tie_break: str = "rank",
    top_k: int = 16,
    workers: int = 1,
    solve: bool = True,
    always: bool = False,
) -> BatchCurve:
    """Replay the workload of ``seed`` in cycles of ``batch`` arrivals (module docstring).

    The workload and the policy's random stream are drawn by :func:`.replay.start_replay`,
    as for :func:`.replay.replay`, so online and batch runs of one seed see the same pods and
    node order.
    ``solve=False`` applies the hint only (the ablation "batch, no model"); ``always=True``
    calls the model also when the hint places every pod (for the secondary objective).
    """
    if batch < 1:
        raise ValueError(f"batch must be a positive number of pods, not {batch!r}")
    order, state, rng = start_replay(cluster, pods, policy, seed, ratio, protocol, order, tie_break)
    order = np.asarray(order, dtype=np.int64)
    n = len(order)
    demand = pods.demand
    arrived = np.cumsum(demand[order]) if n else np.zeros(0, dtype=np.int64)
    node_of = np.full(n, -1, dtype=np.int64)
    gpus_of: list[tuple[int, ...]] = [()] * n
    placed_cycle = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    used_live = np.zeros(n, dtype=np.int64)
    pending: list[int] = []  # arrival indices, oldest first
    hopeless: set[int] = set()
    cycle_seconds, solve_seconds = [], []
    statuses: dict[str, int] = {}
    invalid = 0
    max_pending = 0
    for c, start in enumerate(range(0, n, batch)):
        stop = min(start + batch, n)
        used_live[start:stop] = state.used_milli
        t0 = time.perf_counter()
        pending.extend(range(start, stop))
        max_pending = max(max_pending, len(pending))
        live = []
        for i in pending:
            if i in hopeless:
                continue
            if len(state.feasible(pods, int(order[i]))):
                live.append(i)
            else:  # free capacity only shrinks: it never fits again
                hopeless.add(i)
        batch_pods = [int(order[i]) for i in live]
        result = _cycle(
            state,
            pods,
            policy,
            batch_pods,
            rng,
            time_limit if solve else None,
            top_k,
            workers,
            seed + c,
            always,
        )
        statuses[result.status] = statuses.get(result.status, 0) + 1
        if result.status not in ("hint_optimal", "no_pods", "hint_only"):
            solve_seconds.append(result.solve_seconds)
        invalid += result.invalid
        placed_now: set[int] = set()
        for item, node, gpus in result.placement:
            i, p = live[item], batch_pods[item]
            state.place(pods, p, node, list(gpus))
            policy.placed(state, pods, p, node)
            node_of[i], gpus_of[i], placed_cycle[i] = node, gpus, c
            placed_now.add(i)
        pending = [i for i in pending if i not in placed_now]
        cycle_seconds.append(time.perf_counter() - t0)
    # settled allocation: demand among arrivals <= i placed by the cycle that received i
    dem = demand[order]
    used = np.zeros(n, dtype=np.int64)
    for c, start in enumerate(range(0, n, batch)):
        stop = min(start + batch, n)
        base = int(dem[:start][placed_cycle[:start] <= c].sum())
        inside = np.where(placed_cycle[start:stop] == c, dem[start:stop], 0)
        used[start:stop] = base + np.cumsum(inside)
    return BatchCurve(
        policy=f"{policy.name} batch {batch}" if solve else f"{policy.name} hint-only {batch}",
        seed=seed,
        total_gpu_milli=cluster.total_gpu_milli,
        order=order,
        node=node_of,
        gpus=gpus_of,
        arrived=arrived,
        used=used,
        batch=batch,
        used_live=used_live,
        cycle_seconds=np.array(cycle_seconds),
        solve_seconds=np.array(solve_seconds),
        statuses=statuses,
        invalid=invalid,
        max_pending=max_pending,
    )


@dataclass
class _Cycle:
    placement: Placement
    status: str
    """``no_pods``, ``hint_optimal`` (the hint placed every pod that fits alone: no solve),
    ``hint_only`` (``solve=False``), ``hint_kept`` (the model found nothing better), or
    CP-SAT's ``optimal`` / ``feasible`` when its placement was applied."""
    solve_seconds: float = 0.0
    invalid: int = 0


def _cycle(
    state: TraceState,
    pods: PodSet,
    policy: Policy,
    batch_pods: list[int],
    rng: np.random.Generator,
    time_limit: float | None,
    top_k: int,
    workers: int,
    seed: int,
    always: bool = False,
) -> _Cycle:
    if not batch_pods:
        return _Cycle([], "no_pods")
    hint = hint_placement(state, pods, policy, batch_pods, rng)
    invalid = 0
    if check_placement(state, pods, batch_pods, hint):
        invalid += 1
        hint = []
    if len(hint) == len(batch_pods) and not always:
        return _Cycle(hint, "hint_optimal", invalid=invalid)
    if time_limit is None:
        return _Cycle(hint, "hint_only", invalid=invalid)
    result = solve_cycle(state, pods, batch_pods, hint, time_limit, top_k, workers, seed)
    best, status = hint, "hint_kept"
    if result.placement is not hint:
        if check_placement(state, pods, batch_pods, result.placement):
            invalid += 1
        else:

            def key(pl: Placement) -> tuple[int, int]:
                return _demand(pods, batch_pods, pl), -_opened(state, pods, batch_pods, pl)

            key_model, key_hint = key(result.placement), key(hint)
            if key_model >= key_hint:
                best, status = result.placement, result.status
    return _Cycle(best, status, result.solve_seconds, invalid)
