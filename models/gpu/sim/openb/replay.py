"""Online replay of the FGD paper's protocol on the Alibaba openb trace.

Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation
Gradient Descent", USENIX ATC 2023, evaluate schedulers by placing pods one at a time, never
removing any, and reporting the GPU allocation ratio against the *arrived* GPU demand. The
definitions here follow the public simulator of the paper (hkust-adsl/kubernetes-scheduler-
simulator), read for this purpose; no code of it is copied:

* **Workload** (:func:`workload`, ``protocol="simulator"``), as ``Simulate`` in
  ``pkg/simulator/core.go`` and ``SortClusterPods`` / ``TunePodsByNodeTotalResource`` /
  ``tuneUpPods`` in ``pkg/simulator/utils.go`` do it, with ``shufflePod: true`` and tune ratio
  1.3 (``experiments/run_scripts/generate_run_scripts.py``): every pod of the trace, sorted by
  name and shuffled; *then*, appended after them, pods drawn uniformly with replacement from
  the trace until the next draw would take the arrived GPU demand above 1.3 x the cluster's
  GPUs. The stop test adds the draw's *per-GPU* milli-GPU (``podRes.MilliGpu``) while the
  running total adds its full demand, exactly as ``tuneUpPods`` does; the first draw that
  fails the test ends the sampling. (If the trace alone already exceeds the target, pods
  are removed uniformly at random until it does not, as ``tuneDownPods`` does.) The pod
  file carries no creation times (``pod_csv_to_yaml.py`` leaves them out), so the later
  stable sort by creation time keeps this order. ``protocol="resample"`` is the
  simpler reading of the paper's text -- every pod drawn with replacement, none kept
  -- offered for comparison only.
* **Arrived demand** counts every pod's GPU demand when it arrives, placed or not
  (``arrPodGpuMilli`` in ``SchedulePods``).
* **Allocation ratio** = milli-GPUs allocated / total milli-GPUs of the cluster.
* **The curve at x % arrived** (:meth:`Curve.at`): the mean allocation ratio, rounded to
  0.01 %, over the pods whose arrived ratio rounds to x, else over those within x +- 1, as
  ``experiments/analysis/merge_alloc_discrete_0920.py`` computes the published
  ``analysis_allo_discrete.csv``.
* **Filters** every policy shares (the simulator's filter plugins: the default
  ``NodeResourcesFit`` for CPU and memory requests, and ``Open-Gpu-Share``): a node takes a
  pod when its free CPU and memory cover the pod's requests and, for a GPU pod, its GPU type
  is one the pod accepts and it has ``num_gpu`` GPUs each with at least the per-GPU milli-GPU
  free (a whole GPU needs a fully free one). ``percentageOfNodesToScore`` is 100: every
  feasible node is scored.
* **Choice among equal scores**: stock Kubernetes (``selectHost``) draws uniformly among the
  nodes with the highest score, but the simulator vendors a patched
  ``pkg/scheduler/core/generic_scheduler.go`` that takes the smallest node name, and it names
  the nodes ``%04d-<name>`` with the ``%04d`` from a random permutation. Ties therefore go to
  the first node of a random order fixed for the run: :func:`replay` draws that order
  (``TraceState.rank``) from the seed (``tie_break="rank"``, the default);
  ``tie_break="uniform"`` is the stock behaviour. Go's ``math/rand`` stream cannot be
  reproduced, so single runs differ from the simulator's; only the distribution over
  seeds can agree.

The cluster state is numpy arrays over nodes x GPU slots (:class:`TraceState`); policies
(:mod:`placement.models.gpu.peers.fgd`) score all feasible nodes at once. Nothing here uses the MILP / CP-SAT code.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from placement.models.gpu.formats.openb import read_openb_nodes, read_openb_pods
from placement.models.gpu.instance import MILLI, GpuJob, GpuNode

TIE_BREAKS = ("rank", "uniform")
TUNE_RATIO = 1.3
"""Arrived GPU demand at which the workload stops, as a fraction of cluster GPU capacity."""
PROTOCOLS = ("simulator", "resample")
NONZERO_MILLI_CPU = 100
"""Kubernetes' ``GetNonzeroRequests`` default for a container without a CPU request; the
simulator's scores see this value, the CPU filter the real request."""


@dataclass(frozen=True)
class TraceCluster:
    """The static cluster: one row per node."""

    names: tuple[str, ...]
    types: tuple[str, ...]
    """The distinct GPU types; ``type_of`` indexes this."""
    type_of: np.ndarray
    gpu_count: np.ndarray
    cpu_milli: np.ndarray
    memory_mib: np.ndarray

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def slots(self) -> int:
        """GPU slots per node row (the largest GPU count; smaller nodes are padded)."""
        return int(self.gpu_count.max()) if self.n else 0

    @property
    def total_gpu_milli(self) -> int:
        return int(self.gpu_count.sum()) * MILLI

    @classmethod
    def from_nodes(cls, nodes: Sequence[GpuNode]) -> TraceCluster:
        types = tuple(sorted({n.gpu_type for n in nodes}))
        index = {t: i for i, t in enumerate(types)}
        return cls(
            names=tuple(n.name for n in nodes),
            types=types,
            type_of=np.array([index[n.gpu_type] for n in nodes], dtype=np.int64),
            gpu_count=np.array([n.gpu_count for n in nodes], dtype=np.int64),
            cpu_milli=np.array([n.cpu_milli for n in nodes], dtype=np.int64),
            memory_mib=np.array([n.memory_mib for n in nodes], dtype=np.int64),
        )


@dataclass(frozen=True)
class PodSet:
    """The pods of a trace as arrays, in the trace's name order (the simulator's order)."""

    names: tuple[str, ...]
    cpu_milli: np.ndarray
    """The CPU request the filter checks."""
    cpu_score: np.ndarray
    """The CPU request the scores see (``GetNonzeroRequests``: 0 becomes 100)."""
    memory_mib: np.ndarray
    num_gpu: np.ndarray
    """GPUs asked for: 1 for a fractional pod, 0 for a CPU-only pod."""
    milli: np.ndarray
    """milli-GPU asked of each of those GPUs (1000 for whole GPUs, 0 for CPU-only)."""
    spec: tuple[str, ...]
    """The accepted GPU types, ``|``-joined, "" for any (the simulator's ``GpuType``)."""
    type_ok: np.ndarray
    """``type_ok[p, t]``: pod ``p`` accepts the cluster's GPU type ``t``."""

    @property
    def n(self) -> int:
        return len(self.names)

    @property
    def demand(self) -> np.ndarray:
        """Total milli-GPU of each pod."""
        return self.num_gpu * self.milli

    @classmethod
    def from_jobs(cls, jobs: Sequence[GpuJob], cluster: TraceCluster) -> PodSet:
        order = sorted(range(len(jobs)), key=lambda i: jobs[i].name)
        jobs = [jobs[i] for i in order]
        if any(j.workers != 1 for j in jobs):
            raise ValueError("the openb replay takes one-worker jobs (pods) only")
        num_gpu = np.array([j.gpus if j.gpus else int(j.gpu_milli > 0) for j in jobs])
        milli = np.array([MILLI if j.gpus else j.gpu_milli for j in jobs])
        cpu = np.array([j.cpu_milli for j in jobs], dtype=np.int64)
        type_ok = np.ones((len(jobs), len(cluster.types)), dtype=bool)
        for p, j in enumerate(jobs):
            if j.gpu_types:
                type_ok[p] = [t in j.gpu_types for t in cluster.types]
        return cls(
            names=tuple(j.name for j in jobs),
            cpu_milli=cpu,
            cpu_score=np.where(cpu > 0, cpu, NONZERO_MILLI_CPU),
            memory_mib=np.array([j.memory_mib for j in jobs], dtype=np.int64),
            num_gpu=num_gpu.astype(np.int64),
            milli=milli.astype(np.int64),
            spec=tuple("|".join(j.gpu_types) for j in jobs),
            type_ok=type_ok,
        )


def load_trace(node_csv: str | Path, pod_csv: str | Path) -> tuple[TraceCluster, PodSet]:
    """The cluster and pods of the openb CSV files (through the project's own loader)."""
    cluster = TraceCluster.from_nodes(read_openb_nodes(node_csv))
    return cluster, PodSet.from_jobs(read_openb_pods(pod_csv), cluster)


def workload(
    pods: PodSet,
    capacity_milli: int,
    rng: np.random.Generator,
    ratio: float = TUNE_RATIO,
    protocol: str = "simulator",
) -> np.ndarray:
    """Indices into ``pods`` in arrival order (see the module docstring for the protocol)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, not {protocol!r}")
    target = ratio * capacity_milli
    demand = pods.demand
    if protocol == "resample":
        order: list[int] = []
        total = 0
        while True:
            i = int(rng.integers(pods.n))
            if total + demand[i] > target:
                break
            total += int(demand[i])
            order.append(i)
        return np.array(order, dtype=np.int64)
    order = [int(i) for i in rng.permutation(pods.n)]
    total = int(demand.sum())
    if total > target:  # tuneDownPods
        while total > target and order:
            i = order.pop(int(rng.integers(len(order))))
            total -= int(demand[i])
        return np.array(order, dtype=np.int64)
    while True:  # tuneUpPods: the stop test adds the per-GPU milli, as the simulator does
        i = int(rng.integers(pods.n))
        if total + pods.milli[i] > target:
            break
        total += int(demand[i])
        order.append(i)
    return np.array(order, dtype=np.int64)


class TraceState:
    """What is free: ``gpu_left[node, slot]`` (padding slots hold 0), CPU and memory left,
    and per node the count of resident GPU pods by kind (for GpuClustering)."""

    AFFINITY_KINDS = 9
    """Kind 0: shared GPU; kind k (1..8): k whole GPUs; larger gangs share kind 8 + ...
    (the openb trace has none beyond 8)."""

    def __init__(self, cluster: TraceCluster) -> None:
        self.cluster = cluster
        slots = cluster.slots
        self.exists = np.arange(slots)[None, :] < cluster.gpu_count[:, None]
        self.gpu_left = np.where(self.exists, MILLI, 0).astype(np.int64)
        self.cpu_left = cluster.cpu_milli.copy()
        self.mem_left = cluster.memory_mib.copy()
        self.affinity = np.zeros((cluster.n, self.AFFINITY_KINDS + 1), dtype=np.int64)
        self.used_milli = 0
        self.rank: np.ndarray | None = None
        """Tie-break order of the nodes (lowest first), None for a uniform draw."""

    def copy(self) -> TraceState:
        """An independent copy (the static cluster is shared)."""
        new = TraceState.__new__(TraceState)
        new.cluster = self.cluster
        new.exists = self.exists
        new.gpu_left = self.gpu_left.copy()
        new.cpu_left = self.cpu_left.copy()
        new.mem_left = self.mem_left.copy()
        new.affinity = self.affinity.copy()
        new.used_milli = self.used_milli
        new.rank = self.rank
        return new

    @staticmethod
    def affinity_kind(num_gpu: int, milli: int) -> int:
        """-1 for CPU-only, 0 for a shared GPU, else the GPU count (capped)."""
        if num_gpu == 0:
            return -1
        if milli < MILLI:
            return 0
        return min(num_gpu, TraceState.AFFINITY_KINDS)

    def feasible(self, pods: PodSet, p: int) -> np.ndarray:
        """Indices of the nodes that pass the simulator's filters for pod ``p``."""
        ok = (self.cpu_left >= pods.cpu_milli[p]) & (self.mem_left >= pods.memory_mib[p])
        k = pods.num_gpu[p]
        if k > 0:
            ok &= pods.type_ok[p][self.cluster.type_of]
            ok &= (self.gpu_left >= pods.milli[p]).sum(axis=1) >= k
        return np.flatnonzero(ok)

    def fits(self, pods: PodSet, p: int, node: int, gpus: Sequence[int]) -> bool:
        """Whether pod ``p`` fits ``node`` on exactly the GPUs ``gpus`` now (CPU, memory and
        each GPU's milli-GPU; the GPUs' count and type are the caller's)."""
        m = int(pods.milli[p])
        return bool(
            self.cpu_left[node] >= pods.cpu_milli[p]
            and self.mem_left[node] >= pods.memory_mib[p]
            and all(self.exists[node, g] and self.gpu_left[node, g] >= m for g in gpus)
        )

    def place(self, pods: PodSet, p: int, node: int, gpus: Sequence[int]) -> None:
        """Put pod ``p`` on ``node`` and GPUs ``gpus``; raises if anything would overflow."""
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        if len(gpus) != k or len(set(gpus)) != k:
            raise AssertionError(f"pod {pods.names[p]} needs {k} distinct GPUs, got {gpus}")
        if self.cpu_left[node] < pods.cpu_milli[p] or self.mem_left[node] < pods.memory_mib[p]:
            raise AssertionError(f"pod {pods.names[p]} overflows CPU/memory of node {node}")
        for g in gpus:
            if not self.exists[node, g] or self.gpu_left[node, g] < m:
                raise AssertionError(f"pod {pods.names[p]} overflows GPU {g} of node {node}")
        self.cpu_left[node] -= pods.cpu_milli[p]
        self.mem_left[node] -= pods.memory_mib[p]
        for g in gpus:
            self.gpu_left[node, g] -= m
        self.used_milli += k * m
        kind = self.affinity_kind(k, m)
        if kind >= 0:
            self.affinity[node, kind] += 1

    def remove(self, pods: PodSet, p: int, node: int, gpus: Sequence[int]) -> None:
        """Take pod ``p`` off ``node`` and ``gpus`` (a departure, a migration's source, a
        preemption); raises if it was not there to take (a GPU or a node would exceed its
        capacity)."""
        k, m = int(pods.num_gpu[p]), int(pods.milli[p])
        if len(gpus) != k:
            raise AssertionError(f"pod {pods.names[p]} holds {k} GPUs, not {list(gpus)}")
        for g in gpus:
            if not self.exists[node, g] or self.gpu_left[node, g] + m > MILLI:
                raise AssertionError(f"pod {pods.names[p]} is not on GPU {g} of node {node}")
        cpu = self.cpu_left[node] + pods.cpu_milli[p]
        mem = self.mem_left[node] + pods.memory_mib[p]
        if cpu > self.cluster.cpu_milli[node] or mem > self.cluster.memory_mib[node]:
            raise AssertionError(f"pod {pods.names[p]} is not on node {node}")
        self.cpu_left[node] = cpu
        self.mem_left[node] = mem
        for g in gpus:
            self.gpu_left[node, g] += m
        self.used_milli -= k * m
        kind = self.affinity_kind(k, m)
        if kind >= 0:
            self.affinity[node, kind] -= 1


class Policy(Protocol):
    """A placement policy of :mod:`placement.models.gpu.peers.fgd`."""

    name: str

    def reset(self, state: TraceState, pods: PodSet) -> None:
        """Called once before a replay (precompute what depends on the pod list)."""

    def choose(
        self,
        state: TraceState,
        pods: PodSet,
        p: int,
        nodes: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[int, list[int]]:
        """The node (one of ``nodes``, all feasible, never empty) and its GPUs for pod ``p``."""
        ...

    def placed(self, state: TraceState, pods: PodSet, p: int, node: int) -> None:
        """Called after pod ``p`` went to ``node``, and after a pod left ``node`` (a
        departure, a migration, a preemption): keep caches of the node current."""


@dataclass
class Curve:
    """One replay: per arrived pod, the arrived and allocated milli-GPU after it."""

    policy: str
    seed: int
    total_gpu_milli: int
    order: np.ndarray
    """Pod indices in arrival order."""
    node: np.ndarray
    """The node each arrived pod went to, -1 if it found none."""
    gpus: list[tuple[int, ...]]
    arrived: np.ndarray
    used: np.ndarray
    latency_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per pod, the wall time of its decision (filter + scores + choice) in ns."""
    cpu_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Per pod, the CPU time of this thread during its decision in ns (wall time minus
    preemption by other processes, on a shared machine)."""

    @property
    def arrived_pct(self) -> np.ndarray:
        return self.arrived / self.total_gpu_milli * 100

    @property
    def alloc_pct(self) -> np.ndarray:
        return self.used / self.total_gpu_milli * 100

    def at(self, percent: int) -> float:
        """The allocation ratio (%) at ``percent`` % arrived demand, as the paper's analysis
        script discretises it (NaN where no pod arrived near that level)."""
        arr = np.round(self.arrived_pct)
        alloc = np.round(self.alloc_pct, 2)
        sel = arr == percent
        if not sel.any():
            sel = (arr >= percent - 1) & (arr <= percent + 1)
            if not sel.any():
                return float("nan")
        return round(float(alloc[sel].mean()), 2)

    def discrete(self, top: int = 130) -> np.ndarray:
        """:meth:`at` for 0..``top`` %."""
        return np.array([self.at(x) for x in range(top + 1)])

    @property
    def unplaced(self) -> int:
        return int((self.node < 0).sum())


def start_replay(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    ratio: float,
    protocol: str,
    order: np.ndarray | None,
    tie_break: str,
) -> tuple[np.ndarray, TraceState, np.random.Generator]:
    """(arrival order, empty cluster state, the policy's random stream) of a replay of
    ``seed``, with the policy reset: the workload depends on the seed only (the same for
    every policy, as in the simulator, which draws it before scheduling); the policy's random
    choices use a second stream spawned from the same seed (the tie-break order of the nodes,
    Random's draws). ``order`` overrides the workload (tests). Online and batch replays both
    start here, so one seed sees the same pods and node order in either."""
    if tie_break not in TIE_BREAKS:
        raise ValueError(f"tie_break must be one of {TIE_BREAKS}, not {tie_break!r}")
    workload_ss, policy_ss = np.random.SeedSequence(seed).spawn(2)
    if order is None:
        order = workload(
            pods, cluster.total_gpu_milli, np.random.default_rng(workload_ss), ratio, protocol
        )
    rng = np.random.default_rng(policy_ss)
    state = TraceState(cluster)
    if tie_break == "rank":
        state.rank = rng.permutation(cluster.n)
    policy.reset(state, pods)
    return order, state, rng


def replay(
    cluster: TraceCluster,
    pods: PodSet,
    policy: Policy,
    seed: int,
    ratio: float = TUNE_RATIO,
    protocol: str = "simulator",
    order: np.ndarray | None = None,
    tie_break: str = "rank",
) -> Curve:
    """Place the workload of ``seed`` one pod at a time with ``policy``; never remove a pod.
    The workload and the random stream are drawn by :func:`start_replay`."""
    order, state, rng = start_replay(cluster, pods, policy, seed, ratio, protocol, order, tie_break)
    n = len(order)
    node_of = np.full(n, -1, dtype=np.int64)
    gpus_of: list[tuple[int, ...]] = [()] * n
    arrived = np.zeros(n, dtype=np.int64)
    used = np.zeros(n, dtype=np.int64)
    latency = np.zeros(n, dtype=np.int64)
    cpu_time = np.zeros(n, dtype=np.int64)
    cpu_clock = time.thread_time_ns
    demand = pods.demand
    total = 0
    clock = time.perf_counter_ns
    for i, p in enumerate(order):
        p = int(p)
        total += int(demand[p])
        arrived[i] = total
        c0 = cpu_clock()
        t0 = clock()
        nodes = state.feasible(pods, p)
        if len(nodes):
            node, gpus = policy.choose(state, pods, p, nodes, rng)
            latency[i] = clock() - t0
            cpu_time[i] = cpu_clock() - c0
            state.place(pods, p, node, gpus)
            policy.placed(state, pods, p, node)
            node_of[i] = node
            gpus_of[i] = tuple(int(g) for g in gpus)
        else:
            latency[i] = clock() - t0
            cpu_time[i] = cpu_clock() - c0
        used[i] = state.used_milli
    return Curve(
        policy=policy.name,
        seed=seed,
        total_gpu_milli=cluster.total_gpu_milli,
        order=np.asarray(order),
        node=node_of,
        gpus=gpus_of,
        arrived=arrived,
        used=used,
        latency_ns=latency,
        cpu_ns=cpu_time,
    )
