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
BUDGET = "budget"
BUNDLE = "bundle"
MODES = (IMMEDIATE_DISPATCH, BACKFILL, BUDGET, BUNDLE)
"""The modes (the checker's rules): each job goes to one server on arrival, served FCFS
there (``immediate_dispatch``) or in any order the cores allow (``backfill``); or a parameter
sweep on priced servers under a deadline and a budget (``budget``, Nimrod/G); or jobs
dispatched alone or in whole-node bundles by a serial scheduler with a per-dispatch overhead
(``bundle``, Byun et al.)."""

OBJECTIVE = "total_weighted_flow_time"
"""The one objective tier of the dispatch modes: sum over jobs of ``weight * (end - arrival)``
(min)."""

COST, TIME, COST_TIME = "cost", "time", "cost_time"
BUDGET_OBJECTIVES = (COST, TIME, COST_TIME)
"""What budget mode minimises: the total cost (Nimrod/G's cost-optimisation), the makespan
(time-optimisation), or the cost then the makespan (cost-time optimisation)."""
BUDGET_TIERS = {COST: ("cost",), TIME: ("makespan",), COST_TIME: ("cost", "makespan")}
"""The checker's objective tiers of each budget objective (all minimised)."""

MAX_TIME = 10**9
"""Largest arrival, size, deadline or overhead (keeps the objective of 10^5 jobs in int64)."""
MAX_CORES = 10**6
MAX_WEIGHT = 10**3
MAX_SPEED = 10**6
MAX_PRICE = 10**6
"""Largest price in budget mode (keeps a sweep's costs and the models' coefficients in
int64)."""
MAX_BUDGET = 10**18

RANGES = register_ranges(
    {
        "DispatchServer.cores": FieldRange(1, MAX_CORES, integer=True, unit="cores"),
        "DispatchServer.speed": FieldRange(0, MAX_SPEED, unit="relative speed, 0 = 1"),
        "DispatchServer.price": FieldRange(0, 1e12, unit="per core and time unit"),
        "DispatchServer.dispatch_overhead": FieldRange(
            0, MAX_TIME, integer=True, unit="time units"
        ),
        "DispatchJob.arrival": FieldRange(0, MAX_TIME, integer=True, unit="time units"),
        "DispatchJob.size": FieldRange(1, MAX_TIME, integer=True, unit="time units at speed 1"),
        "DispatchJob.cores": FieldRange(0, MAX_CORES, integer=True, unit="cores, 0 = 1"),
        "DispatchJob.deadline": FieldRange(0, 2 * MAX_TIME, integer=True, unit="0 = none"),
        "DispatchJob.weight": FieldRange(0, MAX_WEIGHT, integer=True, unit="0 = 1"),
        "DispatchBudget.deadline": FieldRange(0, 2 * MAX_TIME, integer=True, unit="0 = none"),
        "DispatchBudget.budget": FieldRange(0, MAX_BUDGET, integer=True, unit="0 = none"),
        "DispatchBundle.scheduler_overhead": FieldRange(
            0, MAX_TIME, integer=True, unit="time units per dispatch"
        ),
        "DispatchBundle.short_size": FieldRange(0, MAX_TIME, integer=True, unit="0 = none"),
    }
)
"""The documented range of every numeric field; a job must also fit on some server."""


@dataclass(frozen=True)
class DispatchServer:
    """A server: cores, relative speed, price per core and time unit, per-job dispatch
    overhead."""

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
    """Servers, jobs and the mode; in ``budget`` mode also the sweep's deadline and budget
    (0: none) and what is minimised (``budget_objective``); in ``bundle`` mode the
    scheduler's overhead per dispatch and the largest short job's size."""

    family_name = "dispatch"

    servers: list[DispatchServer]
    jobs: list[DispatchJob]
    mode: str = IMMEDIATE_DISPATCH
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)
    deadline: int = 0
    budget: int = 0
    budget_objective: str = COST
    scheduler_overhead: int = 0
    short_size: int = 0

    @cached_property
    def service(self) -> list[list[int]]:
        """``service[j][s]``: job j's service time on server s (one row per size, shared:
        a sweep of 10^4 jobs has a few sizes)."""
        rows: dict[int, list[int]] = {}
        for j in self.jobs:
            if j.size not in rows:
                rows[j.size] = [s.service_time(j.size) for s in self.servers]
        return [rows[j.size] for j in self.jobs]

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

    def cost(self, job: int, server: int) -> int:
        """What ``job`` costs on ``server``: price * cores * service time (an integer in
        ``budget`` mode, where prices are integers)."""
        price = self.servers[server].price
        return round(price * self.jobs[job].cores * self.service[job][server])

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.name: i for i, j in enumerate(self.jobs)}

    @cached_property
    def server_index(self) -> dict[str, int]:
        return {s.name: i for i, s in enumerate(self.servers)}


@dataclass(frozen=True)
class DispatchSolution:
    """The server and start time of every job (``server_of[j]``, ``start[j]``); in
    ``bundle`` mode the bundle each job runs in (``bundle[j]``, "" = its own dispatch; an
    empty tuple: none)."""

    server_of: tuple[int, ...] = ()
    start: tuple[int, ...] = ()
    bundle: tuple[str, ...] = ()


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

_MODES = {0: IMMEDIATE_DISPATCH, 1: IMMEDIATE_DISPATCH, 2: BACKFILL, 3: BUDGET, 4: BUNDLE}
_MODE_VALUES = {IMMEDIATE_DISPATCH: 1, BACKFILL: 2, BUDGET: 3, BUNDLE: 4}
_OBJECTIVES = {0: COST, 1: COST, 2: TIME, 3: COST_TIME}
_OBJECTIVE_VALUES = {COST: 1, TIME: 2, COST_TIME: 3}


def instance_from_message(msg: Any, name: str = "", description: str = "") -> DispatchInstance:
    """Build and validate a :class:`DispatchInstance` from a ``DispatchInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    P = "dispatch"
    check_ranges(msg, RANGES, P, v)
    mode = _MODES.get(int(msg.mode))
    if mode is None:
        v.add(
            f"{P}.mode",
            int(msg.mode),
            "IMMEDIATE_DISPATCH, DISPATCH_BACKFILL, DISPATCH_BUDGET or DISPATCH_BUNDLE",
        )
        mode = IMMEDIATE_DISPATCH
    objective = _OBJECTIVES.get(int(msg.budget.objective))
    if objective is None:
        v.add(
            f"{P}.budget.objective",
            int(msg.budget.objective),
            "BUDGET_COST, BUDGET_TIME or BUDGET_COST_TIME",
        )
        objective = COST
    if msg.HasField("budget") and mode != BUDGET:
        v.add(f"{P}.budget", "set", "no budget section outside DISPATCH_BUDGET mode")
    if msg.HasField("bundle") and mode != BUNDLE:
        v.add(f"{P}.bundle", "set", "no bundle section outside DISPATCH_BUNDLE mode")
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
    ok = {f: RANGES[f"DispatchBudget.{f}"].contains(getattr(msg.budget, f)) for f in _BUDGET_FIELDS}
    deadline = int(msg.budget.deadline if ok["deadline"] else 0)
    budget = int(msg.budget.budget if ok["budget"] else 0)
    if mode == BUDGET:
        sweep_rules(servers, jobs, deadline, budget, v)
    bundle_ok = all(
        RANGES[f"DispatchBundle.{f}"].contains(getattr(msg.bundle, f))
        for f in ("scheduler_overhead", "short_size")
    )
    v.raise_if_any()
    return DispatchInstance(
        servers,
        jobs,
        mode,
        name,
        description,
        validated=True,
        deadline=deadline,
        budget=budget,
        budget_objective=objective,
        scheduler_overhead=int(msg.bundle.scheduler_overhead) if bundle_ok else 0,
        short_size=int(msg.bundle.short_size) if bundle_ok else 0,
    )


def sweep_rules(
    servers: list[DispatchServer],
    jobs: list[DispatchJob],
    deadline: int,
    budget: int,
    v: ValidationCollector,
) -> None:
    """What ``budget`` mode asks beyond the message's ranges: a sweep's jobs are ready at
    time 0 and need one core (Nimrod/G's sequential tasks); prices are integers, so every
    cost is an exact integer; the deadline is no earlier than some server can run every job
    (what no server can meet, by how much) and the budget no lower than the cheapest
    schedule (every job on its cheapest server, no deadline: by how much it falls short)."""
    P = "dispatch"
    prices_ok = True
    for k, s in enumerate(servers):
        prices_ok = (
            v.require(
                float(s.price).is_integer() and s.price <= MAX_PRICE,
                f"{P}.servers[{k}].price",
                s.price,
                f"an integer price of at most {MAX_PRICE} in budget mode",
            )
            and prices_ok
        )
    for i, j in enumerate(jobs):
        v.require(j.arrival == 0, f"{P}.jobs[{i}].arrival", j.arrival, "0 in budget mode")
        v.require(j.cores == 1, f"{P}.jobs[{i}].cores", j.cores, "1 in budget mode")
    if not servers or not jobs:
        return
    fastest: dict[int, tuple[int, int]] = {}  # size -> (shortest service, server)
    cheapest: dict[int, int] = {}  # size -> least cost
    for j in jobs:
        if j.size not in fastest:
            times = [s.service_time(j.size) for s in servers]
            k = min(range(len(servers)), key=lambda k: (times[k], k))
            fastest[j.size] = (times[k], k)
            cheapest[j.size] = min(round(s.price * t) for s, t in zip(servers, times, strict=True))
    if deadline:
        worst = max(range(len(jobs)), key=lambda i: fastest[jobs[i].size][0])
        need, k = fastest[jobs[worst].size]
        v.require(
            need <= deadline,
            f"{P}.budget.deadline",
            deadline,
            f"at least {need}: job {jobs[worst].name!r} (size {jobs[worst].size}) ends at "
            f"{need} at the earliest, on server {servers[k].name!r}; no server meets the "
            f"deadline, short by {need - deadline}",
        )
    if budget and prices_ok:
        least = sum(cheapest[j.size] for j in jobs)
        v.require(
            least <= budget,
            f"{P}.budget.budget",
            budget,
            f"at least {least}: the cheapest schedule (every job on its cheapest server) "
            f"costs {least}, {least - budget} more than the budget",
        )


RANGES_JOB = ("arrival", "size", "cores", "deadline", "weight")
_BUDGET_FIELDS = ("deadline", "budget")


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
    if instance.mode == BUDGET:
        msg.budget.deadline = instance.deadline
        msg.budget.budget = instance.budget
        msg.budget.objective = _OBJECTIVE_VALUES[instance.budget_objective]
    if instance.mode == BUNDLE:
        msg.bundle.scheduler_overhead = instance.scheduler_overhead
        msg.bundle.short_size = instance.short_size
    return msg


def solution_from_message(instance: DispatchInstance, msg: Any) -> DispatchSolution:
    """A :class:`DispatchSolution` from a ``DispatchSolution`` message.

    Names must exist in the instance (InputError otherwise); a job left out is the checker's
    business (kept with server -1).
    """
    v = ValidationCollector()
    server_of = [-1] * len(instance.jobs)
    start = [-1] * len(instance.jobs)
    bundle = [""] * len(instance.jobs)
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
            bundle[job] = r.bundle
    v.raise_if_any()
    return DispatchSolution(tuple(server_of), tuple(start), tuple(bundle) if any(bundle) else ())


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
