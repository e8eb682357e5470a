"""Typed instance and solution of the dispatch family, and their ``placement.v1`` messages.

Times are integers in one unit of the instance's choosing. A job's service time on a server
is ``ceil(size / speed) + dispatch_overhead``, with the speed taken as the exact rational
value of its double, so starts, completions and the objective are exact integers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, register_ranges
from placement.solver.schema.v1 import dispatch_pb2 as pb

IMMEDIATE_DISPATCH = "immediate_dispatch"
BACKFILL = "backfill"
MODES = (IMMEDIATE_DISPATCH, BACKFILL)
"""The modes (the checker's rules): each job goes to one server on arrival, served FCFS
there (``immediate_dispatch``) or in any order the cores allow (``backfill``)."""

OBJECTIVE = "total_weighted_flow_time"
"""The one objective tier: sum over jobs of ``weight * (end - arrival)`` (min)."""

MAX_TIME = 10**9
"""Largest arrival, size, deadline or overhead (keeps the objective of 10^5 jobs in int64)."""
MAX_CORES = 10**6
MAX_WEIGHT = 10**3
MAX_SPEED = 10**6

RANGES = register_ranges(
    {
        "DispatchServer.cores": FieldRange(1, MAX_CORES, integer=True, unit="cores"),
        "DispatchServer.speed": FieldRange(0, MAX_SPEED, unit="relative speed, 0 = 1"),
        "DispatchServer.price": FieldRange(0, 1e12, unit="per time unit"),
        "DispatchServer.dispatch_overhead": FieldRange(
            0, MAX_TIME, integer=True, unit="time units"
        ),
        "DispatchJob.arrival": FieldRange(0, MAX_TIME, integer=True, unit="time units"),
        "DispatchJob.size": FieldRange(1, MAX_TIME, integer=True, unit="time units at speed 1"),
        "DispatchJob.cores": FieldRange(0, MAX_CORES, integer=True, unit="cores, 0 = 1"),
        "DispatchJob.deadline": FieldRange(0, 2 * MAX_TIME, integer=True, unit="0 = none"),
        "DispatchJob.weight": FieldRange(0, MAX_WEIGHT, integer=True, unit="0 = 1"),
    }
)
"""The documented range of every numeric field; a job must also fit on some server."""


@dataclass(frozen=True)
class DispatchServer:
    """A server: cores, relative speed, price per time unit, per-job dispatch overhead."""

    name: str
    cores: int = 1
    speed: float = 1.0
    price: float = 0.0
    dispatch_overhead: int = 0

    def service_time(self, size: int) -> int:
        """``ceil(size / speed) + dispatch_overhead`` in exact arithmetic."""
        return math.ceil(Fraction(size) / Fraction(self.speed)) + self.dispatch_overhead


@dataclass(frozen=True)
class DispatchJob:
    """A job: arrival time, run time at speed 1, cores needed, deadline (0: none), weight."""

    name: str
    arrival: int
    size: int
    cores: int = 1
    deadline: int = 0
    weight: int = 1


@dataclass(eq=False)
class DispatchInstance:
    """Servers, jobs and the mode."""

    family_name = "dispatch"

    servers: list[DispatchServer]
    jobs: list[DispatchJob]
    mode: str = IMMEDIATE_DISPATCH
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)

    @cached_property
    def service(self) -> list[list[int]]:
        """``service[j][s]``: job j's service time on server s."""
        return [[s.service_time(j.size) for s in self.servers] for j in self.jobs]

    @cached_property
    def order(self) -> list[int]:
        """The jobs in FCFS order: by arrival, ties by position in the instance."""
        return sorted(range(len(self.jobs)), key=lambda j: (self.jobs[j].arrival, j))

    def fits(self, job: int, server: int) -> bool:
        """Whether the job's cores fit on the server."""
        return self.jobs[job].cores <= self.servers[server].cores

    @cached_property
    def eligible(self) -> list[list[int]]:
        """``eligible[j]``: the servers job j fits on."""
        return [
            [s for s in range(len(self.servers)) if self.fits(j, s)] for j in range(len(self.jobs))
        ]

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.name: i for i, j in enumerate(self.jobs)}

    @cached_property
    def server_index(self) -> dict[str, int]:
        return {s.name: i for i, s in enumerate(self.servers)}


@dataclass(frozen=True)
class DispatchSolution:
    """The server and start time of every job (``server_of[j]``, ``start[j]``)."""

    server_of: tuple[int, ...] = ()
    start: tuple[int, ...] = ()


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

_MODES = {0: IMMEDIATE_DISPATCH, 1: IMMEDIATE_DISPATCH, 2: BACKFILL}
_MODE_VALUES = {IMMEDIATE_DISPATCH: 1, BACKFILL: 2}


def instance_from_message(msg: Any, name: str = "", description: str = "") -> DispatchInstance:
    """Build and validate a :class:`DispatchInstance` from a ``DispatchInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    P = "dispatch"
    check_ranges(msg, RANGES, P, v)
    mode = _MODES.get(int(msg.mode))
    if mode is None:
        v.add(f"{P}.mode", int(msg.mode), "IMMEDIATE_DISPATCH or DISPATCH_BACKFILL")
        mode = IMMEDIATE_DISPATCH
    v.require(len(msg.servers) > 0, f"{P}.servers", [], "at least one server")
    servers: list[DispatchServer] = []
    names: set[str] = set()
    for k, s in enumerate(msg.servers):
        path = f"{P}.servers[{k}]"
        v.unique_name(f"{path}.name", s.name, names, "server")
        names.add(s.name)
        speed = s.speed if RANGES["DispatchServer.speed"].contains(s.speed) and s.speed else 1.0
        cores = s.cores if RANGES["DispatchServer.cores"].contains(s.cores) else 1
        price = s.price if RANGES["DispatchServer.price"].contains(s.price) else 0.0
        overhead = s.dispatch_overhead
        if not RANGES["DispatchServer.dispatch_overhead"].contains(overhead):
            overhead = 0
        servers.append(
            DispatchServer(s.name, int(cores), float(speed), float(price), int(overhead))
        )
    max_cores = max((s.cores for s in servers), default=0)
    jobs: list[DispatchJob] = []
    job_names: set[str] = set()
    for i, j in enumerate(msg.jobs):
        path = f"{P}.jobs[{i}]"
        v.unique_name(f"{path}.name", j.name, job_names, "job")
        job_names.add(j.name)
        ok = {f: RANGES[f"DispatchJob.{f}"].contains(getattr(j, f)) for f in RANGES_JOB}
        cores = (j.cores or 1) if ok["cores"] else 1
        if ok["cores"] and servers:
            v.require(
                cores <= max_cores,
                f"{path}.cores",
                j.cores,
                f"at most {max_cores} (the most cores of any server)",
            )
        arrival = j.arrival if ok["arrival"] else 0
        if ok["deadline"] and j.deadline:
            v.require(
                j.deadline > arrival, f"{path}.deadline", j.deadline, "after the arrival (or 0)"
            )
        jobs.append(
            DispatchJob(
                j.name,
                int(arrival),
                int(j.size if ok["size"] else 1),
                int(cores),
                int(j.deadline if ok["deadline"] else 0),
                int((j.weight or 1) if ok["weight"] else 1),
            )
        )
    v.raise_if_any()
    return DispatchInstance(servers, jobs, mode, name, description, validated=True)


RANGES_JOB = ("arrival", "size", "cores", "deadline", "weight")


def instance_to_message(instance: DispatchInstance) -> Any:
    """The ``placement.v1.DispatchInstance`` message of an instance."""
    msg = pb.DispatchInstance()
    for s in instance.servers:
        msg.servers.add(
            name=s.name,
            cores=s.cores,
            speed=s.speed,
            price=s.price,
            dispatch_overhead=s.dispatch_overhead,
        )
    for j in instance.jobs:
        msg.jobs.add(
            name=j.name,
            arrival=j.arrival,
            size=j.size,
            cores=j.cores,
            deadline=j.deadline,
            weight=j.weight,
        )
    msg.mode = _MODE_VALUES[instance.mode]
    return msg


def solution_from_message(instance: DispatchInstance, msg: Any) -> DispatchSolution:
    """A :class:`DispatchSolution` from a ``DispatchSolution`` message.

    Names must exist in the instance (InputError otherwise); a job left out is the checker's
    business (kept with server -1).
    """
    v = ValidationCollector()
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    seen: set[int] = set()
    for i, r in enumerate(msg.runs):
        path = f"dispatch.runs[{i}]"
        job = instance.job_index.get(r.job)
        server = instance.server_index.get(r.server)
        ok = v.require(job is not None, f"{path}.job", r.job, "the name of a job")
        ok = v.require(server is not None, f"{path}.server", r.server, "a server's name") and ok
        if ok and job is not None and server is not None:
            v.require(job not in seen, f"{path}.job", r.job, "each job given once")
            seen.add(job)
            server_of[job] = server
            start[job] = int(r.start)
    v.raise_if_any()
    return DispatchSolution(tuple(server_of), tuple(start))


@dataclass(frozen=True)
class NamedDispatchSolution:
    """A :class:`DispatchSolution` by name: ``server_of["j7"] == "s2"``, ``start["j7"]``."""

    server_of: dict[str, str]
    start: dict[str, int]


def named_solution(instance: DispatchInstance, solution: DispatchSolution) -> NamedDispatchSolution:
    """The server and start of every job, keyed by name."""
    server_of: dict[str, str] = {}
    start: dict[str, int] = {}
    for job, server, t in zip(instance.jobs, solution.server_of, solution.start, strict=False):
        if 0 <= server < len(instance.servers):
            server_of[job.name] = instance.servers[server].name
            start[job.name] = t
    return NamedDispatchSolution(server_of, start)
