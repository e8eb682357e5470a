"""The typed DAG-scheduling instance and solution, their JSON form, and validation.

Units are in the names: seconds (``_s``), bytes, bytes per second, MiB. A task's running time
on a machine is its explicit time for the machine's type (an ETC row) when given, else
``work / speed``. Transfers cost ``latency_s + bytes / bandwidth`` between different machines
(see :meth:`DagInstance.transfer_s`); on the same machine they are free.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from placement.solver.errors import InputError, ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, finite, register_ranges
from placement.solver.schema.v1 import dag_pb2 as pb

DEFAULT_ZONE = "default"
OBJECTIVES = ("makespan", "cost", "weighted")
MAX_SLOTS = 1_000_000
MAX_SECONDS = 10**8
"""Any one time (a running time, a release, a deadline, a latency): about three years."""
MAX_SCALED_HORIZON = 2**50
"""The limit of :func:`horizon_bound_s` times the number of tasks (see :func:`max_horizon_s`).

What overflows is CP-SAT's integers: its times are seconds times a grid scale 10^k, each
kept below ``2^50 / tasks`` so that a sum of up to ``tasks`` of them stays below 2^50 (room
to spare in int64 and in CP-SAT's overflow check of linear expressions). An instance whose
schedules end within ``2^50 / tasks`` seconds is solved on a grid of 1 s or finer; the
encoding coarsens the grid when its own horizon (a greedy's makespan, or a serial schedule
on the slowest machines for the cost terms) is longer, so only this bound on the length of
a good schedule is refused. Floats are not the limit: the checker's tolerance is 1e-6
relative, nine orders of magnitude above a double's precision at any horizon, and n
additions lose at most n * 2^-53 relative."""
MAX_BYTES = 10**15
MAX_MIB = 10**9
MAX_WORK = 10**9
MAX_PRICE = 10**4
MAX_WEIGHT = 1000

RANGES = register_ranges(
    {
        "DagMachine.speed": FieldRange(0.001, 10**6, unit="work per second"),
        "DagMachine.slots": FieldRange(1, MAX_SLOTS, integer=True, unit="cores"),
        "DagMachine.memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "DagMachine.cost_per_hour": FieldRange(0, MAX_PRICE, unit="per hour"),
        "DagLink.bandwidth_bytes_per_s": FieldRange(1, MAX_BYTES, unit="bytes per second"),
        "DagLink.latency_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "TypeTime.seconds": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "DagTask.work": FieldRange(0, MAX_WORK),
        "DagTask.memory_mib": FieldRange(0, MAX_MIB, integer=True, unit="MiB"),
        "DagTask.cores": FieldRange(1, MAX_SLOTS, integer=True),
        "DagTask.release_s": FieldRange(0, MAX_SECONDS, unit="seconds"),
        "DagTask.deadline_s": FieldRange(0, MAX_SECONDS, unit="seconds, 0 = none"),
        "DagTask.data_bytes": FieldRange(0, MAX_BYTES, unit="bytes"),
        "DagEdge.data_bytes": FieldRange(0, MAX_BYTES, unit="bytes"),
        "DagInstance.makespan_limit_s": FieldRange(0, MAX_SECONDS, unit="seconds, 0 = none"),
        "DagInstance.makespan_weight": FieldRange(0, MAX_WEIGHT),
        "DagInstance.cost_weight": FieldRange(0, MAX_WEIGHT),
    }
)
"""The documented range of every numeric field (docs/library.md lists them), and beyond
them :data:`MAX_SCALED_HORIZON` for the length of a schedule times the tasks."""


@dataclass(frozen=True)
class DagMachine:
    """A machine that runs up to ``slots`` cores' worth of tasks at once."""

    name: str
    type: str = "default"
    speed: float = 1.0
    slots: int = 1
    memory_mib: int = 0
    """0 = unlimited."""
    cost_per_hour: float = 0.0
    zone: str = DEFAULT_ZONE


@dataclass(frozen=True)
class DagLink:
    """The network between two zones (symmetric), or inside one zone."""

    from_zone: str
    to_zone: str
    bandwidth_bytes_per_s: float
    latency_s: float = 0.0


@dataclass(frozen=True)
class DagTask:
    """A task: runs once on one machine, without preemption."""

    name: str
    work: float = 0.0
    time_by_type_s: dict[str, float] = field(default_factory=dict)
    memory_mib: int = 0
    cores: int = 1
    release_s: float = 0.0
    deadline_s: float = 0.0
    """0 = none."""
    data_zone: str = ""
    data_machine: str = ""
    data_bytes: float = 0.0
    data_pinned: bool = False


@dataclass(frozen=True)
class DagEdge:
    """``child`` starts after ``parent`` ends and ``data_bytes`` reach the child's machine."""

    parent: str
    child: str
    data_bytes: float = 0.0


@dataclass(eq=False)
class DagInstance:
    """A workflow DAG (or a bag of independent tasks) and heterogeneous machines in zones."""

    family_name = "dag"

    machines: list[DagMachine]
    tasks: list[DagTask]
    edges: list[DagEdge] = field(default_factory=list)
    links: list[DagLink] = field(default_factory=list)
    objective: str = "makespan"
    makespan_limit_s: float = 0.0
    makespan_weight: float = 0.0
    cost_weight: float = 0.0
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)
    """Set by the parser; ``solve`` validates instances built in code once."""

    # --- indices ---------------------------------------------------------------------------
    @cached_property
    def task_index(self) -> dict[str, int]:
        """Task name -> index."""
        return {t.name: i for i, t in enumerate(self.tasks)}

    @cached_property
    def machine_index(self) -> dict[str, int]:
        """Machine name -> index."""
        return {m.name: i for i, m in enumerate(self.machines)}

    @cached_property
    def zones(self) -> list[str]:
        """Zone names in order of first appearance among the machines."""
        return list(dict.fromkeys(m.zone for m in self.machines))

    @cached_property
    def machine_zone(self) -> np.ndarray:
        """``machine_zone[m]``: the zone index of machine ``m``."""
        index = {z: i for i, z in enumerate(self.zones)}
        return np.array([index[m.zone] for m in self.machines], dtype=np.int64)

    @cached_property
    def network(self) -> tuple[np.ndarray, np.ndarray]:
        """``(latency_s[z1, z2], seconds_per_byte[z1, z2])``; zeros where transfers are free."""
        n = len(self.zones)
        index = {z: i for i, z in enumerate(self.zones)}
        latency = np.zeros((n, n))
        per_byte = np.zeros((n, n))
        for link in self.links:
            a, b = index.get(link.from_zone), index.get(link.to_zone)
            if a is None or b is None:
                continue  # a link to a zone without machines carries nothing
            for x, y in ((a, b), (b, a)):
                latency[x, y] = link.latency_s
                per_byte[x, y] = 1.0 / link.bandwidth_bytes_per_s
        return latency, per_byte

    # --- derived data ----------------------------------------------------------------------
    @cached_property
    def duration(self) -> np.ndarray:
        """``duration[t, m]``: running time in seconds of task ``t`` on machine ``m``;
        ``inf`` where the task cannot run there (type, cores, memory or a pinned dataset)."""
        n, k = len(self.tasks), len(self.machines)
        out = np.full((n, k), np.inf)
        for t, task in enumerate(self.tasks):
            for m, mach in enumerate(self.machines):
                if task.cores > mach.slots:
                    continue
                if mach.memory_mib and task.memory_mib > mach.memory_mib:
                    continue
                if task.data_pinned:
                    if task.data_machine and task.data_machine != mach.name:
                        continue
                    if task.data_zone and task.data_zone != mach.zone:
                        continue
                if task.time_by_type_s:
                    if mach.type in task.time_by_type_s:
                        out[t, m] = task.time_by_type_s[mach.type]
                else:
                    out[t, m] = task.work / mach.speed
        return out

    @cached_property
    def earliest_start(self) -> np.ndarray:
        """``earliest_start[t, m]``: release time plus the time to bring the task's dataset
        to machine ``m`` (seconds)."""
        n, k = len(self.tasks), len(self.machines)
        out = np.zeros((n, k))
        latency, per_byte = self.network
        zone_index = {z: i for i, z in enumerate(self.zones)}
        for t, task in enumerate(self.tasks):
            out[t, :] = task.release_s
            if not (task.data_zone or task.data_machine):
                continue
            if task.data_machine:
                home = self.machine_index[task.data_machine]
                src = int(self.machine_zone[home])
            else:
                home = -1
                src = zone_index.get(task.data_zone, -1)
            for m in range(k):
                if m == home:
                    continue
                dst = int(self.machine_zone[m])
                if home < 0 and src == dst:
                    continue
                if src < 0:
                    continue  # dataset zone has no machines and no links: validated away
                out[t, m] += latency[src, dst] + task.data_bytes * per_byte[src, dst]
        return out

    @cached_property
    def edge_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(parent, child, data_bytes)`` of every edge, as index arrays."""
        parent = np.array([self.task_index[e.parent] for e in self.edges], dtype=np.int64)
        child = np.array([self.task_index[e.child] for e in self.edges], dtype=np.int64)
        data = np.array([e.data_bytes for e in self.edges], dtype=float)
        return parent, child, data

    @cached_property
    def parents(self) -> list[list[tuple[int, float]]]:
        """``parents[t]``: ``(parent index, data_bytes)`` of each incoming edge."""
        out: list[list[tuple[int, float]]] = [[] for _ in self.tasks]
        for e in self.edges:
            out[self.task_index[e.child]].append((self.task_index[e.parent], e.data_bytes))
        return out

    @cached_property
    def children(self) -> list[list[tuple[int, float]]]:
        """``children[t]``: ``(child index, data_bytes)`` of each outgoing edge."""
        out: list[list[tuple[int, float]]] = [[] for _ in self.tasks]
        for e in self.edges:
            out[self.task_index[e.parent]].append((self.task_index[e.child], e.data_bytes))
        return out

    @cached_property
    def topological_order(self) -> list[int]:
        """Task indices in a topological order (Kahn, smallest index first)."""
        indegree = [len(p) for p in self.parents]
        ready = [t for t, d in enumerate(indegree) if d == 0]
        heapq.heapify(ready)
        order: list[int] = []
        while ready:
            t = heapq.heappop(ready)
            order.append(t)
            for c, _ in self.children[t]:
                indegree[c] -= 1
                if indegree[c] == 0:
                    heapq.heappush(ready, c)
        return order

    @property
    def independent(self) -> bool:
        """True when there are no edges (the grid-scheduling special case)."""
        return not self.edges

    @cached_property
    def cost_rate(self) -> np.ndarray:
        """``cost_rate[t, m]``: cost per second of task ``t`` on machine ``m``."""
        cores = np.array([t.cores for t in self.tasks], dtype=float)
        per_core = np.array([m.cost_per_hour / 3600.0 / m.slots for m in self.machines])
        return cores[:, None] * per_core[None, :]

    def transfer_s(self, data_bytes: float, m_from: int, m_to: int) -> float:
        """Seconds to send ``data_bytes`` from machine ``m_from`` to machine ``m_to``."""
        if m_from == m_to:
            return 0.0
        latency, per_byte = self.network
        a, b = self.machine_zone[m_from], self.machine_zone[m_to]
        return float(latency[a, b] + data_bytes * per_byte[a, b])


# -------------------------------------------------------------------------------------------
# Solution


@dataclass
class DagSolution:
    """``machine[t]`` and ``start_s[t]`` for every task (-1 / nan: not scheduled)."""

    machine: np.ndarray
    start_s: np.ndarray

    @classmethod
    def empty(cls, n_tasks: int) -> DagSolution:
        """A solution with no task scheduled."""
        return cls(np.full(n_tasks, -1, dtype=np.int64), np.full(n_tasks, np.nan))


def end_times(instance: DagInstance, solution: DagSolution) -> np.ndarray:
    """End of every task (start + running time on its machine)."""
    idx = np.arange(len(instance.tasks))
    m = np.clip(solution.machine, 0, max(len(instance.machines) - 1, 0))
    return solution.start_s + instance.duration[idx, m]


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 JSON form


def _positive_or_default(msg: Any, name: str, default: Any) -> Any:
    return getattr(msg, name) if msg.HasField(name) else default


def instance_from_message(msg: Any, name: str = "", description: str = "") -> DagInstance:
    """Build and validate a :class:`DagInstance` from a ``placement.v1.DagInstance`` message.

    Raises :class:`InputError` listing every bad field with its path (``dag.tasks[3].work``).
    """
    v = ValidationCollector()
    P = "dag"
    check_ranges(msg, RANGES, P, v)
    machines: list[DagMachine] = []
    machine_names: set[str] = set()
    v.require(len(msg.machines) > 0, f"{P}.machines", [], "at least one machine")
    for i, mc in enumerate(msg.machines):
        path = f"{P}.machines[{i}]"
        v.unique_name(f"{path}.name", mc.name, machine_names, "machine")
        machine_names.add(mc.name)
        speed = _positive_or_default(mc, "speed", 1.0)
        slots = _positive_or_default(mc, "slots", 1)
        machines.append(
            DagMachine(
                name=mc.name,
                type=mc.type or "default",
                speed=float(speed) if finite(speed) and speed > 0 else 1.0,
                slots=int(slots) if slots >= 1 else 1,
                memory_mib=int(mc.memory_mib),
                cost_per_hour=float(mc.cost_per_hour),
                zone=mc.zone or DEFAULT_ZONE,
            )
        )
    zones = list(dict.fromkeys(m.zone for m in machines))
    types = {m.type for m in machines}

    links: list[DagLink] = []
    pairs: set[frozenset[str]] = set()
    for i, lk in enumerate(msg.links):
        path = f"{P}.links[{i}]"
        from_zone, to_zone = lk.from_zone or DEFAULT_ZONE, lk.to_zone or DEFAULT_ZONE
        key = frozenset((from_zone, to_zone))
        v.require(key not in pairs, f"{path}", [from_zone, to_zone], "one link per zone pair")
        pairs.add(key)
        ok_bw = RANGES["DagLink.bandwidth_bytes_per_s"].contains(lk.bandwidth_bytes_per_s)
        if ok_bw and RANGES["DagLink.latency_s"].contains(lk.latency_s):
            links.append(
                DagLink(from_zone, to_zone, float(lk.bandwidth_bytes_per_s), float(lk.latency_s))
            )
    for a in range(len(zones)):
        for b in range(a + 1, len(zones)):
            v.require(
                frozenset((zones[a], zones[b])) in pairs,
                f"{P}.links",
                f"{zones[a]} <-> {zones[b]}",
                "a link between every two zones that hold machines",
            )

    tasks: list[DagTask] = []
    task_names: set[str] = set()
    v.require(len(msg.tasks) > 0, f"{P}.tasks", [], "at least one task")
    for i, tk in enumerate(msg.tasks):
        path = f"{P}.tasks[{i}]"
        v.unique_name(f"{path}.name", tk.name, task_names, "task")
        task_names.add(tk.name)
        times: dict[str, float] = {}
        for j, entry in enumerate(tk.times):
            type_name, seconds = entry.type, entry.seconds
            tpath = f"{path}.times[{j}]"
            v.require(type_name not in times, f"{tpath}.type", type_name, "each type once")
            if not v.require(
                type_name in types,
                f"{tpath}.type",
                type_name,
                "a machine type of the instance: " + ", ".join(sorted(types)),
            ):
                continue
            if RANGES["TypeTime.seconds"].contains(seconds):
                times[type_name] = float(seconds)
        cores = _positive_or_default(tk, "cores", 1)
        if tk.deadline_s > 0 and finite(tk.release_s) and finite(tk.deadline_s):
            v.require(
                tk.deadline_s >= tk.release_s,
                f"{path}.deadline_s",
                tk.deadline_s,
                f"at least release_s = {tk.release_s}",
            )
        v.require(
            not (tk.data_zone and tk.data_machine),
            f"{path}.data_machine",
            tk.data_machine,
            "empty when data_zone is set (a dataset lives in one place)",
        )
        if tk.data_zone:
            v.require(
                tk.data_zone in zones,
                f"{path}.data_zone",
                tk.data_zone,
                "a zone that holds machines: " + ", ".join(zones),
            )
        if tk.data_machine:
            v.require(
                tk.data_machine in machine_names,
                f"{path}.data_machine",
                tk.data_machine,
                "the name of a machine of the instance",
            )
        v.require(
            not tk.data_pinned or bool(tk.data_zone or tk.data_machine),
            f"{path}.data_pinned",
            True,
            "false unless data_zone or data_machine names where the dataset is",
        )
        tasks.append(
            DagTask(
                name=tk.name,
                work=float(tk.work),
                time_by_type_s=times,
                memory_mib=int(tk.memory_mib),
                cores=int(cores) if cores >= 1 else 1,
                release_s=float(tk.release_s),
                deadline_s=float(tk.deadline_s),
                data_zone=tk.data_zone,
                data_machine=tk.data_machine,
                data_bytes=float(tk.data_bytes),
                data_pinned=bool(tk.data_pinned),
            )
        )

    edges: list[DagEdge] = []
    seen_edges: set[tuple[str, str]] = set()
    for i, ed in enumerate(msg.edges):
        path = f"{P}.edges[{i}]"
        ok = v.require(ed.parent in task_names, f"{path}.parent", ed.parent, "the name of a task")
        ok &= v.require(ed.child in task_names, f"{path}.child", ed.child, "the name of a task")
        ok &= v.require(
            ed.parent != ed.child, f"{path}.child", ed.child, "a task other than the parent"
        )
        ok &= v.require(
            (ed.parent, ed.child) not in seen_edges,
            f"{path}",
            [ed.parent, ed.child],
            "each edge once",
        )
        ok &= RANGES["DagEdge.data_bytes"].contains(ed.data_bytes)
        seen_edges.add((ed.parent, ed.child))
        if ok:
            edges.append(DagEdge(ed.parent, ed.child, float(ed.data_bytes)))

    objective = msg.objective or "makespan"
    v.require(
        objective in OBJECTIVES, f"{P}.objective", msg.objective, "one of " + ", ".join(OBJECTIVES)
    )
    if objective == "cost":
        v.require(
            msg.makespan_limit_s > 0,
            f"{P}.makespan_limit_s",
            msg.makespan_limit_s,
            "seconds > 0 (the cost objective minimises cost under a makespan limit)",
        )
    if objective == "weighted":
        v.require(
            msg.makespan_weight > 0 or msg.cost_weight > 0,
            f"{P}.makespan_weight",
            msg.makespan_weight,
            "a weight > 0 (makespan_weight or cost_weight)",
        )
    v.raise_if_any()

    instance = DagInstance(
        machines=machines,
        tasks=tasks,
        edges=edges,
        links=links,
        objective=objective,
        makespan_limit_s=float(msg.makespan_limit_s),
        makespan_weight=float(msg.makespan_weight),
        cost_weight=float(msg.cost_weight),
        name=name,
        description=description,
    )
    # Whole-instance rules: a cycle, and a task no machine can run.
    if len(instance.topological_order) != len(tasks):
        on_cycle = sorted(set(range(len(tasks))) - set(instance.topological_order), key=lambda t: t)
        raise InputError.single(
            f"{P}.edges",
            [tasks[t].name for t in on_cycle[:5]],
            "an acyclic graph (these tasks sit on or behind a cycle)",
        )
    runnable = np.isfinite(instance.duration).any(axis=1)
    for t in np.flatnonzero(~runnable)[:1]:
        raise InputError.single(
            f"{P}.tasks[{t}]",
            tasks[t].name,
            "a task at least one machine can run (type, cores <= slots, memory, pinned data)",
        )
    _check_total_time(instance)
    instance.validated = True
    return instance


def horizon_bound_s(instance: DagInstance) -> float:
    """Seconds by which a valid schedule ends (without deadlines): every task on its fastest
    machine, one after the other, after the latest release, every edge paying the slowest
    transfer. An optimal makespan is no longer, nor is an earliest-finish list schedule's
    (HEFT, Min-Min: each task ends no later than it would at the end of this serial one);
    where an encoding's horizon is longer it coarsens its grid (``bound.integer_scale``)."""
    d = instance.duration
    fastest = np.where(np.isfinite(d), d, np.inf).min(axis=1)
    fastest = np.where(np.isfinite(fastest), fastest, 0.0)
    est = instance.earliest_start
    total = float(est.max()) if est.size else 0.0
    total += float(fastest.sum())
    if instance.edges:
        latency, per_byte = instance.network
        worst_latency, worst_per_byte = float(np.max(latency)), float(np.max(per_byte))
        _, _, data = instance.edge_arrays
        total += worst_latency * len(data) + float(np.sum(data)) * worst_per_byte
    return total


def max_horizon_s(tasks: int) -> float:
    """The longest :func:`horizon_bound_s` an instance of ``tasks`` tasks may have:
    ``MAX_SCALED_HORIZON / tasks`` (about 2.7e11 s at 4,096 tasks)."""
    return MAX_SCALED_HORIZON / max(tasks, 1)


def _check_total_time(instance: DagInstance) -> None:
    """Refuse an instance whose schedules overflow the encodings' integers at a grid of 1 s
    (:data:`MAX_SCALED_HORIZON`), or whose times add up to no finite number."""
    horizon = horizon_bound_s(instance)
    limit = max_horizon_s(len(instance.tasks))
    if not finite(horizon) or horizon > limit:
        d = instance.duration
        fastest = np.where(np.isfinite(d), d, np.inf).min(axis=1)
        t = int(np.argmax(np.where(np.isfinite(fastest), fastest, 0.0)))
        raise InputError.single(
            "dag.tasks",
            f"a schedule of {horizon:.3g} s (each task on its fastest machine, one after the "
            f"other, every transfer the slowest; task {instance.tasks[t].name!r}: "
            f"{fastest[t]:.3g} s)",
            f"at most 2^50 / {len(instance.tasks)} tasks = {limit:.3g} s (CP-SAT's scaled times)",
        )


def instance_to_message(instance: DagInstance) -> Any:
    """The ``placement.v1.DagInstance`` message of an instance."""
    msg = pb.DagInstance()
    for m in instance.machines:
        msg.machines.add(
            name=m.name,
            type=m.type,
            speed=m.speed,
            slots=m.slots,
            memory_mib=m.memory_mib,
            cost_per_hour=m.cost_per_hour,
            zone=m.zone,
        )
    for lk in instance.links:
        msg.links.add(
            from_zone=lk.from_zone,
            to_zone=lk.to_zone,
            bandwidth_bytes_per_s=lk.bandwidth_bytes_per_s,
            latency_s=lk.latency_s,
        )
    for t in instance.tasks:
        msg.tasks.add(
            name=t.name,
            work=t.work,
            times=[{"type": k, "seconds": s} for k, s in t.time_by_type_s.items()],
            memory_mib=t.memory_mib,
            cores=t.cores,
            release_s=t.release_s,
            deadline_s=t.deadline_s,
            data_zone=t.data_zone,
            data_machine=t.data_machine,
            data_bytes=t.data_bytes,
            data_pinned=t.data_pinned,
        )
    for e in instance.edges:
        msg.edges.add(parent=e.parent, child=e.child, data_bytes=e.data_bytes)
    msg.objective = instance.objective
    msg.makespan_limit_s = instance.makespan_limit_s
    msg.makespan_weight = instance.makespan_weight
    msg.cost_weight = instance.cost_weight
    return msg


def solution_from_message(instance: DagInstance, msg: Any) -> DagSolution:
    """A :class:`DagSolution` from a ``placement.v1.DagSolution`` message.

    Names must exist in the instance (InputError otherwise); feasibility (missing tasks,
    overlaps, precedence) is left for the checker to judge.
    """
    v = ValidationCollector()
    solution = DagSolution.empty(len(instance.tasks))
    seen: set[int] = set()
    for i, run in enumerate(msg.runs):
        path = f"dag.runs[{i}]"
        t = instance.task_index.get(run.task)
        m = instance.machine_index.get(run.machine)
        ok = v.require(t is not None, f"{path}.task", run.task, "the name of a task")
        ok &= v.require(m is not None, f"{path}.machine", run.machine, "the name of a machine")
        ok &= v.require(finite(run.start_s), f"{path}.start_s", run.start_s, "a finite time")
        if ok and t is not None:
            ok = v.require(t not in seen, f"{path}.task", run.task, "each task run once")
            seen.add(t)
        if ok and t is not None and m is not None:
            solution.machine[t] = m
            solution.start_s[t] = float(run.start_s)
            end = float(run.start_s) + float(instance.duration[t, m])
            # end_s is written for readers; one that is given (not 0) must say what start_s
            # and the running time say, else the file contradicts itself.
            v.require(
                run.end_s == 0
                or not finite(end)
                or abs(run.end_s - end) <= 1e-6 * max(1, abs(end)),
                f"{path}.end_s",
                run.end_s,
                f"start_s + the running time on {run.machine} = {end:.9g} (or no end_s)",
            )
    v.raise_if_any()
    return solution


def finish(instance: DagInstance, file: str = "") -> DagInstance:
    """Validate a loaded instance with the rules of instance files (errors name ``file``)."""
    try:
        out = instance_from_message(
            instance_to_message(instance), name=instance.name, description=instance.description
        )
    except InputError as exc:
        raise exc.with_file(file) if file else exc from None
    return out


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedTaskRun:
    """Where and when one task runs, by machine name."""

    task: str
    machine: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class NamedDagSolution:
    """A :class:`DagSolution` by name: ``runs["t3"].machine``, ``runs["t3"].start_s``."""

    runs: dict[str, NamedTaskRun]


def named_solution(instance: DagInstance, solution: DagSolution) -> NamedDagSolution:
    """The schedule keyed by task name (tasks in instance order)."""
    ends = end_times(instance, solution)
    runs = {}
    for t, task in enumerate(instance.tasks):
        m = int(solution.machine[t])
        if 0 <= m < len(instance.machines):
            runs[task.name] = NamedTaskRun(
                task.name, instance.machines[m].name, float(solution.start_s[t]), float(ends[t])
            )
    return NamedDagSolution(runs)
