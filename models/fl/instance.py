"""Typed instance and solution of the federated-learning device-assignment family, and their
``placement.v1`` messages.

An instance is a set of concurrent FL jobs (model size, compute per sample, samples per
round, devices per round, data classes needed, memory, rounds to converge), a fleet of client
devices (speed, up/down bandwidth, memory, data classes held, rounds offline), the horizon in
rounds and a participation-fairness limit. A solution gives, for every round and every job
still running in it, the devices it trains on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import FieldRange, check_ranges, register_ranges
from placement.solver.schema.v1 import fl_pb2 as pb

MAX_BYTES = 2**50
MAX_FLOPS = 1e18
MAX_RATE = 1e15
MAX_ROUNDS = 10_000
MAX_CLASS = 1_000_000
MAX_DEVICE_TIME_S = 1e6
"""Longest time of one device on one job in one round (about 11.6 days): the integer
microsecond sums of the checker and the encodings stay far inside int64."""

RANGES = register_ranges(
    {
        "FlJob.model_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "FlJob.flops_per_sample": FieldRange(0, MAX_FLOPS, unit="FLOPs"),
        "FlJob.samples_per_round": FieldRange(1, 2**40, integer=True, unit="samples"),
        "FlJob.devices_per_round": FieldRange(1, 1_000_000, integer=True, unit="devices"),
        "FlJob.classes_needed": FieldRange(0, MAX_CLASS, integer=True, unit="class id"),
        "FlJob.memory_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "FlJob.rounds": FieldRange(0, MAX_ROUNDS, integer=True, unit="rounds, 0 = all"),
        "FlDevice.flops_per_s": FieldRange(0, MAX_FLOPS, lo_open=True, unit="FLOP/s"),
        "FlDevice.down_bytes_per_s": FieldRange(0, MAX_RATE, lo_open=True, unit="bytes/s"),
        "FlDevice.up_bytes_per_s": FieldRange(0, MAX_RATE, lo_open=True, unit="bytes/s"),
        "FlDevice.memory_bytes": FieldRange(0, MAX_BYTES, integer=True, unit="bytes"),
        "FlDevice.classes": FieldRange(0, MAX_CLASS, integer=True, unit="class id"),
        "FlDevice.unavailable_rounds": FieldRange(0, MAX_ROUNDS - 1, integer=True, unit="round"),
        "FlInstance.rounds": FieldRange(1, MAX_ROUNDS, integer=True, unit="rounds"),
        "FlInstance.max_rounds_per_device": FieldRange(
            0, MAX_ROUNDS, integer=True, unit="rounds, 0 = no limit"
        ),
    }
)
"""The documented range of every numeric field."""


@dataclass(frozen=True)
class Job:
    """A federated-learning job."""

    name: str
    model_bytes: int
    flops_per_sample: float
    samples_per_round: int
    devices_per_round: int
    classes_needed: tuple[int, ...] = ()
    memory_bytes: int = 0
    rounds: int = 0
    """Rounds to converge (the convergence model); 0: every round of the horizon."""


@dataclass(frozen=True)
class Device:
    """A client device."""

    name: str
    flops_per_s: float
    down_bytes_per_s: float
    up_bytes_per_s: float
    memory_bytes: int = 0
    classes: tuple[int, ...] = ()
    unavailable_rounds: tuple[int, ...] = ()


@dataclass(eq=False)
class FlInstance:
    """Jobs, devices, the horizon in rounds and the participation limit."""

    family_name = "fl"

    jobs: list[Job]
    devices: list[Device]
    rounds: int = 1
    max_rounds_per_device: int = 0
    """Participation fairness: the most rounds a device may serve (0: no limit)."""
    name: str = ""
    description: str = ""
    validated: bool = field(default=False, repr=False)

    @cached_property
    def job_index(self) -> dict[str, int]:
        return {j.name: i for i, j in enumerate(self.jobs)}

    @cached_property
    def device_index(self) -> dict[str, int]:
        return {d.name: i for i, d in enumerate(self.devices)}

    def job_rounds(self, j: int) -> int:
        """Rounds job ``j`` runs (its convergence model)."""
        return self.jobs[j].rounds or self.rounds

    def active(self, r: int, j: int) -> bool:
        """Whether job ``j`` runs in round ``r`` (it has not converged yet)."""
        return r < self.job_rounds(j)

    @property
    def participation_limit(self) -> int:
        """The fairness limit in rounds (the horizon when there is none)."""
        return self.max_rounds_per_device or self.rounds

    @property
    def fairness_binds(self) -> bool:
        """True when the limit can cut a device's rounds (the rounds are then coupled)."""
        return self.participation_limit < self.rounds


@dataclass(frozen=True)
class FlSolution:
    """``assign[r][j]``: the device indices of job ``j`` in round ``r`` (empty when the job
    does not run in that round)."""

    assign: tuple[tuple[tuple[int, ...], ...], ...] = ()


# -------------------------------------------------------------------------------------------
# From and to the placement/v1 message

P = "fl"


def instance_from_message(msg: Any, name: str = "", description: str = "") -> FlInstance:
    """Build and validate an :class:`FlInstance` from an ``FlInstance`` message.

    Raises :class:`~placement.solver.errors.InputError` listing every bad field with its path.
    """
    v = ValidationCollector()
    check_ranges(msg, RANGES, P, v)
    v.require(len(msg.jobs) > 0, f"{P}.jobs", [], "at least one job")
    v.require(len(msg.devices) > 0, f"{P}.devices", [], "at least one device")
    horizon = int(msg.rounds) if RANGES["FlInstance.rounds"].contains(msg.rounds) else 1
    jobs: list[Job] = []
    seen: set[str] = set()
    for i, j in enumerate(msg.jobs):
        path = f"{P}.jobs[{i}]"
        v.unique_name(f"{path}.name", j.name, seen, "job")
        seen.add(j.name)
        rounds = int(j.rounds) if RANGES["FlJob.rounds"].contains(j.rounds) else 0
        v.require(
            rounds <= horizon, f"{path}.rounds", rounds, f"at most the horizon ({horizon} rounds)"
        )
        k = j.devices_per_round
        k = int(k) if RANGES["FlJob.devices_per_round"].contains(k) else 1
        v.require(
            k <= len(msg.devices),
            f"{path}.devices_per_round",
            k,
            f"at most the number of devices ({len(msg.devices)})",
        )
        jobs.append(
            Job(
                j.name,
                int(j.model_bytes),
                float(j.flops_per_sample),
                max(1, int(j.samples_per_round)),
                k,
                tuple(sorted({int(c) for c in j.classes_needed})),
                int(j.memory_bytes),
                min(rounds, horizon),
            )
        )
    devices: list[Device] = []
    seen = set()
    for k, d in enumerate(msg.devices):
        path = f"{P}.devices[{k}]"
        v.unique_name(f"{path}.name", d.name, seen, "device")
        seen.add(d.name)
        for n, r in enumerate(d.unavailable_rounds):
            v.require(
                r < horizon,
                f"{path}.unavailable_rounds[{n}]",
                int(r),
                f"a round of the horizon (0 to {horizon - 1})",
            )
        devices.append(
            Device(
                d.name,
                float(d.flops_per_s) or 1.0,
                float(d.down_bytes_per_s) or 1.0,
                float(d.up_bytes_per_s) or 1.0,
                int(d.memory_bytes),
                tuple(sorted({int(c) for c in d.classes})),
                tuple(sorted({int(r) for r in d.unavailable_rounds})),
            )
        )
    if not v.errors:
        for i, job in enumerate(jobs):
            slowest = max(
                job.model_bytes / d.down_bytes_per_s
                + job.flops_per_sample * job.samples_per_round / d.flops_per_s
                + job.model_bytes / d.up_bytes_per_s
                for d in devices
            )
            if slowest > MAX_DEVICE_TIME_S:
                v.add(
                    f"{P}.jobs[{i}]",
                    f"a round of {slowest:.3g} s on the slowest device",
                    f"a job whose round takes at most {MAX_DEVICE_TIME_S:g} s on every device "
                    "(model size, compute and samples too large together for the devices)",
                )
                break
    v.raise_if_any()
    limit = msg.max_rounds_per_device
    limit = int(limit) if RANGES["FlInstance.max_rounds_per_device"].contains(limit) else 0
    return FlInstance(jobs, devices, horizon, limit, name, description, validated=True)


def instance_to_message(instance: FlInstance) -> Any:
    """The ``placement.v1.FlInstance`` message of an instance."""
    msg = pb.FlInstance(
        rounds=instance.rounds, max_rounds_per_device=instance.max_rounds_per_device
    )
    for j in instance.jobs:
        msg.jobs.add(
            name=j.name,
            model_bytes=j.model_bytes,
            flops_per_sample=j.flops_per_sample,
            samples_per_round=j.samples_per_round,
            devices_per_round=j.devices_per_round,
            classes_needed=list(j.classes_needed),
            memory_bytes=j.memory_bytes,
            rounds=j.rounds,
        )
    for d in instance.devices:
        msg.devices.add(
            name=d.name,
            flops_per_s=d.flops_per_s,
            down_bytes_per_s=d.down_bytes_per_s,
            up_bytes_per_s=d.up_bytes_per_s,
            memory_bytes=d.memory_bytes,
            classes=list(d.classes),
            unavailable_rounds=list(d.unavailable_rounds),
        )
    return msg


def solution_from_message(instance: FlInstance, msg: Any) -> FlSolution:
    """An :class:`FlSolution` from an ``FlSolution`` message.

    Names and rounds must exist in the instance (InputError otherwise); what the devices do
    is the checker's business.
    """
    v = ValidationCollector()
    assign = [[() for _ in instance.jobs] for _ in range(instance.rounds)]
    given: set[tuple[int, int]] = set()
    for i, a in enumerate(msg.assignments):
        path = f"{P}.assignments[{i}]"
        j = instance.job_index.get(a.job)
        ok = v.require(j is not None, f"{path}.job", a.job, "the name of a job")
        ok = (
            v.require(
                0 <= a.round < instance.rounds,
                f"{path}.round",
                int(a.round),
                f"a round of the horizon (0 to {instance.rounds - 1})",
            )
            and ok
        )
        devices = []
        for n, name in enumerate(a.devices):
            d = instance.device_index.get(name)
            if v.require(d is not None, f"{path}.devices[{n}]", name, "a device's name"):
                devices.append(int(d))  # type: ignore[arg-type]
        if ok and j is not None:
            key = (int(a.round), j)
            v.require(key not in given, f"{path}.job", a.job, "one assignment per round and job")
            given.add(key)
            assign[int(a.round)][j] = tuple(devices)
    v.raise_if_any()
    return FlSolution(tuple(tuple(row) for row in assign))


# -------------------------------------------------------------------------------------------
# The solution by name (Result.named)


@dataclass(frozen=True)
class NamedFlSolution:
    """An :class:`FlSolution` by name: ``devices[("job", round)]`` the job's devices."""

    devices: dict[tuple[str, int], tuple[str, ...]]


def named_solution(instance: FlInstance, solution: FlSolution) -> NamedFlSolution:
    """The devices of each (job, round) keyed by the job's name."""
    out: dict[tuple[str, int], tuple[str, ...]] = {}
    for r, row in enumerate(solution.assign):
        for j, devs in enumerate(row):
            if devs and j < len(instance.jobs):
                out[(instance.jobs[j].name, r)] = tuple(
                    instance.devices[d].name for d in devs if 0 <= d < len(instance.devices)
                )
    return NamedFlSolution(out)
