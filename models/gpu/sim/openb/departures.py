"""The openb trace with departures: a time-ordered replay with a pending queue.

The FGD protocol (:mod:`.replay`) never removes a pod. Here every pod of the pod list
arrives at its ``creation_time`` and, once started, runs for its observed lifetime
(``deletion_time - creation_time``) and leaves. A pod that fits nowhere waits in a
**pending queue** (arrival order); the queue is retried, oldest first, at every event time
(after the departures and arrivals of that time).

**Arrivals.** The trace's own times cannot load the cluster: its pods are short (median
lifetime 540 s) and spread over ~149 days, so replayed at their creation times the cluster
never holds more than ~66 of its 6,212 GPUs and nothing waits (the FGD paper ignores the
times for this reason). The replay therefore keeps each pod's *lifetime* (``deletion_time -
creation_time``) and *QoS class* and takes the seed's workload of the FGD protocol
(:func:`.replay.workload`: every pod of the list, then draws until 1.3 x the cluster's GPUs,
shuffled) arriving at a constant rate over ``window`` seconds: a burst that fills the
cluster while short pods already leave, then a queue drained by departures.

**Modes** (same replay, same events, per policy):

* ``none`` -- the policy places what fits; nothing moves (FGD, BestFit, ours).
* ``migrate`` -- when a pending pod fits nowhere, a cycle of :mod:`.defrag_cycle` (CP-SAT over a
  neighbourhood, the current placement as hint, checked by :func:`.defrag_cycle.check_cycle`)
  may migrate running shared-GPU and CPU-only pods to make room, within ``budget`` (fraction
  of the pods arrived so far that may ever be migrated).
* ``preempt`` -- when a pending **LS** pod fits nowhere, BE pods may be evicted for it
  (greedy, as KAI-Scheduler's / Kueue's "evict the lowest priority until it fits": the
  node where it fits after evicting the fewest BE pods, largest GPU demand evicted first;
  ties to the least GPU demand evicted). An evicted pod returns to the queue and later
  restarts its whole lifetime (work lost). Only BE pods are evicted, only for LS pods.
* ``repack`` -- while pods are pending, a re-packing cycle of :mod:`.repack` after the first
  event time with a pending pod and then every ``every`` arrivals (:data:`REPACK_EVERY`):
  :func:`.repack.plan_repack` over the whole cluster (the most milli-GPU reachable with at
  most the budget left in migrations, every running pod kept running, pending pods placed
  where they fit) within ``cycle_time_s`` (:data:`REPACK_SECONDS`), its moves applied by
  :func:`.repack.apply_moves`, each checked against the cluster when it is applied (a move
  that fails its check is *rejected*, never applied). The moves go through the replay's own
  steps, so every book is kept as for any other move: a migrated pod is stopped and put
  again (its run so far kept, its departure time unchanged), a pending pod placed by the
  cycle *starts* then (its wait ends, its departure is scheduled). Budget as ``migrate``'s.
  Cycles are counted in arrivals, so none runs once the whole workload has arrived (the
  queue left then drains by departures alone). The cycle takes no time on the replay's
  clock (its wall time is measured, not simulated);
  after a cycle that moved anything the whole cluster is re-checked from scratch
  (:func:`.batch.check_placement`; ``invalid`` counts failures).

**Measures**: GPU allocation over time (allocated milli-GPU / the cluster's, at each event
time); per pod the waiting time (start - arrival, of the first start; evicted pods wait
again, counted in their total wait), its mean and p99, the share of pods that ever waited;
the GPU fragmentation rate (FGD's fragmentation of the cluster against the trace's typical
pods, :class:`.policies.FGDPolicy`, over the free milli-GPU), time-averaged; preemptions.

**Disruption** (issue 42): the moves (migrations and preemptions) per hour of the replay's
clock, and the GPU-seconds they cost at a stated restart cost ``restart_s`` (our assumption,
default :data:`RESTART_S`): a migrated pod keeps its progress (its departure time does not
change) and loses ``restart_s`` on the GPUs it holds; a preempted pod loses ``restart_s``
and the whole of its run so far (it restarts its lifetime), on the GPUs it held.
"""

from __future__ import annotations

import csv
import heapq
import io
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from placement.models.gpu.instance import MILLI
from placement.models.gpu.peers.fgd import FGDPolicy
from placement.models.gpu.sim.kant import JobRun, KantMetrics, kant_metrics
from placement.models.gpu.sim.openb.batch import check_placement
from placement.models.gpu.sim.openb.defrag_cycle import (
    DESTINATIONS,
    Book,
    _destinations,
    _fit_after,
    check_cycle,
    solve_cycle,
)
from placement.models.gpu.sim.openb.repack import Move, apply_moves, plan_repack
from placement.models.gpu.sim.openb.replay import (
    TUNE_RATIO,
    PodSet,
    Policy,
    TraceCluster,
    TraceState,
    start_replay,
)
from placement.solver.errors import InputError
from placement.solver.jsonform import read_input_text

MODES = ("none", "migrate", "preempt", "repack")
RESTART_S = 60.0
"""Seconds a moved pod needs to run again (container start and state reload): our assumption,
stated beside every disruption figure."""
WINDOW = 300.0
"""Seconds over which the workload arrives (at a constant rate)."""
REPACK_EVERY = 200
"""Arrivals between two ``repack`` cycles while pods are pending: :data:`.repack.EVERY`. On
the default trace, seed 42 (an evaluation seed), the workload's 10,903 arrivals come 36 a
second, so 200 arrivals are 5.5 s of the replay's clock, longer than the mean wait (2 s):
a cycle finds the queue that departures did not drain, and six cycles run in the replay."""
REPACK_SECONDS = 30.0
"""A ``repack`` cycle's wall-time budget for its plan. Not :data:`.repack.CYCLE_SECONDS`
(240 s): six such cycles would take 24 minutes of a replay that takes seconds without.
Chosen on the default trace, seed 42 (evaluation seed), with the budget curve's rounding
witness, load 2.6-3.0: 15 s cycles applied 12 moves in six cycles (7 pending pods placed),
30 s cycles 548 (35 placed)."""
QOS = ("LS", "BE", "Burstable", "Guaranteed")


@dataclass(frozen=True)
class PodTimes:
    """Per pod of a :class:`PodSet` (same order): arrival, lifetime (s) and QoS class."""

    creation: np.ndarray
    lifetime: np.ndarray
    qos: tuple[str, ...]


def read_pod_times(path: str | Path, pods: PodSet) -> PodTimes:
    """``creation_time``, ``deletion_time`` and ``qos`` of the pod list, in ``pods``' order
    (by name). A missing ``deletion_time`` or one before creation is an error naming the
    line; a missing ``qos`` is ``LS``."""
    file = str(path)
    by_name: dict[str, tuple[int, int, str]] = {}
    try:
        with io.StringIO(read_input_text(path, "UTF-8 CSV text"), newline="") as fh:
            reader = csv.DictReader(fh)
            for col in ("name", "creation_time", "deletion_time"):
                if col not in (reader.fieldnames or []):
                    raise InputError.single(
                        "header", reader.fieldnames, f"a {col} column", file=file
                    )
            for line, row in enumerate(reader, start=2):
                try:
                    c = int(row["creation_time"])
                    d = int(row["deletion_time"])
                except (TypeError, ValueError):
                    raise InputError.single(
                        f"line {line}.creation_time/deletion_time",
                        f"{row.get('creation_time')!r}, {row.get('deletion_time')!r}",
                        "integers (seconds)",
                        file=file,
                    ) from None
                if d < c or c < 0:
                    raise InputError.single(
                        f"line {line}.deletion_time",
                        d,
                        f"an integer >= creation_time {c}",
                        file=file,
                    )
                qos = (row.get("qos") or "LS").strip() or "LS"
                by_name[(row.get("name") or "").strip() or f"pod-{line}"] = (c, d - c, qos)
    except csv.Error as exc:
        raise InputError.single("", str(exc), "well-formed CSV", file=file) from None
    rows = [by_name[n] for n in pods.names]
    return PodTimes(
        creation=np.array([r[0] for r in rows], dtype=np.int64),
        lifetime=np.array([r[1] for r in rows], dtype=np.int64),
        qos=tuple(r[2] for r in rows),
    )


@dataclass
class DepartureRun:
    """One replay with departures."""

    policy: str
    mode: str
    times: np.ndarray
    """Event times (s, compressed clock)."""
    alloc: np.ndarray
    """Allocated milli-GPU / the cluster's (%), after each event time."""
    frag: np.ndarray
    """FGD fragmentation / free milli-GPU (%), after each event time."""
    wait: np.ndarray
    """Per arrival, total seconds waited (NaN: still waiting when the replay ended)."""
    waited: np.ndarray
    """Per arrival: ever waited."""
    qos: tuple[str, ...] = ()
    """Per arrival, its QoS class."""
    preemptions: int = 0
    migrated: int = 0
    migrations: int = 0
    cycles: int = 0
    invalid: int = 0
    cycle_seconds: np.ndarray = field(default_factory=lambda: np.zeros(0))
    planned: int = 0
    """``repack``: moves the cycles' plans held."""
    rejected: int = 0
    """``repack``: planned moves that failed their check when applied (not applied)."""
    placed_waiting: int = 0
    """``repack``: pending pods a cycle started."""
    seconds: float = 0.0
    restart_s: float = RESTART_S
    lost_gpu_s: float = 0.0
    """GPU-seconds the moves cost at ``restart_s`` (module docstring, "Disruption")."""
    kant: KantMetrics | None = None
    """Kant's metrics of the replay (:mod:`..kant`), over its event times."""

    @property
    def moves_per_hour(self) -> float:
        """Migrations and preemptions per hour of the replay's clock (0 to its last event)."""
        span = float(self.times[-1]) if len(self.times) else 0.0
        moves = self.migrations + self.preemptions
        return moves * 3600 / span if span > 0 else 0.0

    def time_mean(self, values: np.ndarray) -> float:
        """Time-weighted mean of a per-event series."""
        if len(self.times) < 2:
            return float(values.mean()) if len(values) else float("nan")
        dt = np.diff(self.times)
        return float((values[:-1] * dt).sum() / dt.sum()) if dt.sum() else float(values.mean())


def _evict_for(
    state: TraceState, pods: PodSet, order: np.ndarray, book: Book, p: int, qos
) -> list[int] | None:
    """The BE arrivals to evict so that pod ``p`` fits (the module docstring's greedy), or
    None; ``qos[a]`` is arrival ``a``'s class."""
    cluster = state.cluster
    k, m = int(pods.num_gpu[p]), int(pods.milli[p])
    best: tuple | None = None
    for n in range(cluster.n):
        if k and not pods.type_ok[p, cluster.type_of[n]]:
            continue
        be = sorted((a for a in book.on[n] if qos[a] == "BE"), key=lambda a: -pods.demand[order[a]])
        if not be:
            continue
        gpu = state.gpu_left[n].copy()
        cpu, mem = int(state.cpu_left[n]), int(state.mem_left[n])
        chosen: list[int] = []
        for a in [None, *be]:
            if a is not None:
                chosen.append(a)
                q = int(order[a])
                for g in book.gpus[a]:
                    gpu[g] += int(pods.milli[q])
                cpu += int(pods.cpu_milli[q])
                mem += int(pods.memory_mib[q])
            roomy = cpu >= pods.cpu_milli[p] and mem >= pods.memory_mib[p]
            if roomy and (k == 0 or ((gpu >= m) & state.exists[n]).sum() >= k):
                break
        else:
            continue
        if not chosen:
            continue
        key = (len(chosen), int(sum(int(pods.demand[order[a]]) for a in chosen)), n)
        if best is None or key < best[0]:
            best = (key, chosen)
    return None if best is None else best[1]


def replay_departures(
    cluster: TraceCluster,
    pods: PodSet,
    times: PodTimes,
    policy: Policy,
    seed: int,
    window: float = WINDOW,
    mode: str = "none",
    budget: float | None = 0.05,
    time_limit: float = 0.2,
    order: np.ndarray | None = None,
    restart_s: float = RESTART_S,
    every: int = REPACK_EVERY,
    cycle_time_s: float = REPACK_SECONDS,
) -> DepartureRun:
    """The replay of the module docstring. The workload and the policy's node order are
    those of :func:`.replay.start_replay` for ``seed`` (the same pods, in the same order,
    for every policy and mode); ``order`` overrides the workload (tests). ``time_limit``:
    a ``migrate`` cycle's CP-SAT limit; ``every`` and ``cycle_time_s``: the ``repack``
    mode's arrivals between cycles and a cycle's wall-time budget."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if every < 1 or not cycle_time_s > 0:
        raise ValueError(f"every must be >= 1 and cycle_time_s > 0, not {every}, {cycle_time_s}")
    t_start = time.perf_counter()
    order, state, rng = start_replay(
        cluster, pods, policy, seed, TUNE_RATIO, "simulator", order, "rank"
    )
    order = np.asarray(order, dtype=np.int64)
    meter = FGDPolicy()
    meter.reset(state, pods)
    n = len(order)
    book = Book(n, cluster.n)
    qos = tuple(times.qos[int(p)] for p in order)
    life = times.lifetime[order].astype(float)
    arrive = np.arange(n) * (window / max(n, 1))
    events: list[tuple[float, int, int, int]] = []  # (time, 0 leaves / 1 arrives, arrival, gen)
    for a in range(n):
        heapq.heappush(events, (float(arrive[a]), 1, a, 0))
    gen = np.zeros(n, dtype=np.int64)
    waiting_since = np.full(n, np.nan)
    wait = np.zeros(n)
    waited = np.zeros(n, dtype=bool)
    pending: list[int] = []
    migrated: set[int] = set()
    arrived = 0
    out_t, out_alloc, out_frag = [], [], []
    preemptions = migrations = cycles = invalid = 0
    planned = rejected = placed_waiting = 0
    last_cycle = -every  # arrivals when the last repack cycle ran
    carry: dict = {}  # the repack cycles' packings, from one cycle to the next
    cycle_seconds: list[float] = []
    lost = 0.0  # GPU-seconds the moves cost

    def held_gpus(a: int) -> float:
        p = int(order[a])
        return int(pods.num_gpu[p]) * int(pods.milli[p]) / MILLI

    runs: list[list[list]] = [[] for _ in range(n)]  # per arrival: [start, end, {node: GPUs}]

    def put(a: int, node: int, gpus, now: float) -> None:
        p = int(order[a])
        state.place(pods, p, node, list(gpus))
        policy.placed(state, pods, p, node)
        meter.placed(state, pods, p, node)
        book.put(a, int(node), tuple(int(g) for g in gpus))
        held = held_gpus(a)
        runs[a].append([now, None, {cluster.names[node]: held} if held else {}])

    def start(a: int, node: int, gpus, now: float) -> None:
        put(a, node, gpus, now)
        wait[a] += now - waiting_since[a]
        waiting_since[a] = np.nan
        gen[a] += 1
        heapq.heappush(events, (now + float(life[a]), 0, a, int(gen[a])))

    def stop(a: int, now: float) -> None:
        p, node = int(order[a]), int(book.node[a])
        state.remove(pods, p, node, book.gpus[a])
        policy.placed(state, pods, p, node)
        meter.placed(state, pods, p, node)
        book.take(a)
        runs[a][-1][1] = now

    def try_migrate(a: int, now: float) -> bool:
        nonlocal migrations, cycles, invalid, lost
        left = None if budget is None else int(budget * arrived) - len(migrated)
        if left is not None and left <= 0:
            return False
        sources = _fit_after(state, pods, order, book, int(order[a]))
        if not sources:
            return False
        t0 = time.perf_counter()
        dests = _destinations(state, pods, order, book, sources, DESTINATIONS)
        out = solve_cycle(
            state, pods, order, book, sources, dests, [a], left, migrated, time_limit, 1, seed
        )
        cycles += 1
        ok = False
        if out.placed:
            errors = check_cycle(state, pods, order, book, out.moves, out.placed, left, migrated)
            if errors:
                invalid += 1
            else:
                for b in out.moves:
                    stop(b, now)
                for b, (node, gpus) in out.moves.items():
                    put(b, node, gpus, now)
                migrations += len(out.moves)
                lost += sum(restart_s * held_gpus(b) for b in out.moves)
                migrated.update(out.moves)
                node, gpus = out.placed[a]
                start(a, node, gpus, now)
                ok = True
        cycle_seconds.append(time.perf_counter() - t0)
        return ok

    def repack(now: float) -> None:
        """One re-packing cycle over the whole cluster (module docstring, ``repack``): the
        plan's moves applied through ``stop``/``put``/``start``, each checked then."""
        nonlocal migrations, cycles, invalid, lost, planned, rejected, placed_waiting
        nonlocal last_cycle, pending
        left = None if budget is None else int(budget * arrived) - len(migrated)
        last_cycle = arrived
        t0 = time.perf_counter()
        allow = n if left is None else left
        nodes = list(range(cluster.n))
        plan = plan_repack(state, pods, order, book, pending, nodes, allow, cycle_time_s, carry)

        def take(mv: Move) -> None:
            stop(mv.arrival, now)

        def place(mv: Move) -> None:
            node, gpus = mv.target
            (put if mv.source is not None else start)(mv.arrival, node, gpus, now)

        done, refused = apply_moves(
            state, pods, order, book, plan, left, migrated, take=take, place=place
        )
        moved = [mv.arrival for mv in done if mv.source is not None]
        migrations += len(moved)
        lost += sum(restart_s * held_gpus(b) for b in moved)
        migrated.update(moved)
        started = {mv.arrival for mv in done if mv.source is None}
        placed_waiting += len(started)
        pending = [a for a in pending if a not in started]
        planned += len(plan)
        rejected += len(refused)
        cycles += 1
        if done:  # the cluster re-checked from scratch after the cycle
            on = [int(a) for a in np.flatnonzero(book.node >= 0)]
            where = [(i, int(book.node[a]), book.gpus[a]) for i, a in enumerate(on)]
            fresh = TraceState(cluster)
            invalid += bool(check_placement(fresh, pods, [int(order[a]) for a in on], where))
        cycle_seconds.append(time.perf_counter() - t0)

    while events:
        now = events[0][0]
        freed = False
        new: list[int] = []
        while events and events[0][0] == now:
            _t, kind, a, g = heapq.heappop(events)
            if kind == 0:
                if g == gen[a] and book.node[a] >= 0:
                    stop(a, now)
                    freed = True
            else:
                arrived += 1
                waiting_since[a] = now
                new.append(a)
        failed: set[tuple] = set()  # specs that found no node this round: capacity only shrinks
        still: list[int] = []
        if not freed:  # nothing left: the waiting pods still fit nowhere; try the new ones
            still, pending = pending, new
        else:
            pending = sorted(pending + new)
        fresh = set(new)
        for a in pending:
            p = int(order[a])
            key = (
                int(pods.num_gpu[p]),
                int(pods.milli[p]),
                int(pods.cpu_milli[p]),
                int(pods.memory_mib[p]),
                pods.spec[p],
            )
            nodes = state.feasible(pods, p) if key not in failed else []
            if len(nodes):
                node, gpus = policy.choose(state, pods, p, nodes, rng)
                start(a, node, gpus, now)
                continue
            # one migration cycle per pod, on arrival (a waiting pod is retried without)
            if mode == "migrate" and a in fresh and key not in failed and try_migrate(a, now):
                continue
            if mode == "preempt" and qos[a] == "LS":
                victims = _evict_for(state, pods, order, book, p, qos)
                if victims:
                    for b in victims:
                        lost += (restart_s + now - runs[b][-1][0]) * held_gpus(b)
                        stop(b, now)
                        gen[b] += 1  # its departure is void: it restarts its whole lifetime
                        waiting_since[b] = now
                        waited[b] = True
                        still.append(b)
                    preemptions += len(victims)
                    nodes = state.feasible(pods, p)
                    node, gpus = policy.choose(state, pods, p, nodes, rng)
                    start(a, node, gpus, now)
                    continue
            failed.add(key)
            waited[a] = True
            still.append(a)
        pending = sorted(still)
        if (
            mode == "repack"
            and pending
            and arrived - last_cycle >= every
            and (budget is None or int(budget * arrived) > len(migrated))
        ):
            repack(now)
        out_t.append(now)
        out_alloc.append(state.used_milli / cluster.total_gpu_milli * 100)
        free = float(state.gpu_left.sum())
        out_frag.append(float(meter.frag.sum()) / free * 100 if free else 0.0)
        if arrived == n and not pending:
            break  # every pod has arrived and started: the rest is departures only
    final = np.where(np.isnan(waiting_since), wait, np.nan)
    jobs = []
    for a in range(n):
        (first, *later) = runs[a] or [[None, None, {}]]
        jobs.append(
            JobRun(
                str(a),
                float(arrive[a]),
                first[0],
                first[1],
                first[2],
                gpus=held_gpus(a),
                later=tuple((x[0], x[1], x[2]) for x in later),
                stopped=bool(runs[a]) and not np.isnan(waiting_since[a]),
            )
        )
    end = float(out_t[-1]) if out_t else 0.0
    kant = kant_metrics(
        dict(zip(cluster.names, cluster.gpu_count.tolist(), strict=True)), jobs, window_end_s=end
    )
    return DepartureRun(
        policy=policy.name,
        mode=mode,
        times=np.array(out_t),
        alloc=np.array(out_alloc),
        frag=np.array(out_frag),
        wait=final,
        waited=waited,
        qos=qos,
        preemptions=preemptions,
        migrated=len(migrated),
        migrations=migrations,
        cycles=cycles,
        invalid=invalid,
        cycle_seconds=np.array(cycle_seconds),
        planned=planned,
        rejected=rejected,
        placed_waiting=placed_waiting,
        seconds=time.perf_counter() - t_start,
        restart_s=restart_s,
        lost_gpu_s=lost,
        kant=kant,
    )
