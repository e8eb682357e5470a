"""What a device costs a job in a round, who may serve whom, and the per-round lower bounds.

The time of device ``d`` on job ``j`` (one FL round: download the model, train on the
round's samples, upload the update) in integer microseconds, rounded up:

    t[j, d] = ceil(1e6 * (model_bytes_j / down_d + flops_j * samples_j / speed_d
                          + model_bytes_j / up_d))

The checker and the encodings read these same integers, so a proof is a proof of the
checker's objective. Device ``d`` is eligible for job ``j`` in round ``r`` when it is online
in ``r`` and has the job's memory (the participation limit is a rule over the horizon).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from placement.models.fl.instance import FlInstance

US_PER_S = 1_000_000

T = TypeVar("T")


def cache(fn: Callable[[FlInstance], T]) -> Callable[[FlInstance], T]:
    """Compute once per instance, kept on the instance (which then frees it with itself)."""
    key = f"_fl_{fn.__name__}"

    def wrapper(instance: FlInstance) -> T:
        store: dict[str, Any] = instance.__dict__
        if key not in store:
            store[key] = fn(instance)
        return store[key]

    return wrapper


def device_time_us(instance: FlInstance, j: int, d: int) -> int:
    """The integer microseconds device ``d`` needs for one round of job ``j``."""
    job, dev = instance.jobs[j], instance.devices[d]
    seconds = (
        job.model_bytes / dev.down_bytes_per_s
        + job.flops_per_sample * job.samples_per_round / dev.flops_per_s
        + job.model_bytes / dev.up_bytes_per_s
    )
    return max(1, math.ceil(seconds * US_PER_S - 1e-6))


@cache
def _times(instance: FlInstance) -> np.ndarray:
    return np.array(
        [
            [device_time_us(instance, j, d) for d in range(len(instance.devices))]
            for j in range(len(instance.jobs))
        ],
        dtype=np.int64,
    ).reshape(len(instance.jobs), len(instance.devices))


def times(instance: FlInstance) -> np.ndarray:
    """``times(instance)[j, d]``: :func:`device_time_us` for every job and device."""
    return _times(instance)


@cache
def _memory_ok(instance: FlInstance) -> np.ndarray:
    mem = np.array([d.memory_bytes for d in instance.devices], dtype=np.int64)
    need = np.array([j.memory_bytes for j in instance.jobs], dtype=np.int64)
    return mem[None, :] >= need[:, None]


@cache
def _online(instance: FlInstance) -> np.ndarray:
    out = np.ones((instance.rounds, len(instance.devices)), dtype=bool)
    for d, dev in enumerate(instance.devices):
        for r in dev.unavailable_rounds:
            if 0 <= r < instance.rounds:
                out[r, d] = False
    return out


def online(instance: FlInstance) -> np.ndarray:
    """``online(instance)[r, d]``: device ``d`` is available in round ``r``."""
    return _online(instance)


def eligible(instance: FlInstance, r: int) -> np.ndarray:
    """``eligible(instance, r)[j, d]``: device ``d`` may serve job ``j`` in round ``r``
    (online, enough memory)."""
    return _memory_ok(instance) & _online(instance)[r][None, :]


def holders(instance: FlInstance, cls: int) -> np.ndarray:
    """A boolean mask of the devices holding data class ``cls``."""
    return _holders(instance).get(cls, np.zeros(len(instance.devices), dtype=bool))


@cache
def _holders(instance: FlInstance) -> dict[int, np.ndarray]:
    out: dict[int, np.ndarray] = {}
    for d, dev in enumerate(instance.devices):
        for c in dev.classes:
            out.setdefault(c, np.zeros(len(instance.devices), dtype=bool))[d] = True
    return out


def job_lower_bound(instance: FlInstance, j: int, mask: np.ndarray) -> int | None:
    """A lower bound on job ``j``'s round time when it may use the devices of ``mask``: the
    larger of its ``k``-th fastest device and, for every class it needs, the fastest device
    holding it; None when no choice exists (too few devices, a class no device holds)."""
    t = times(instance)[j]
    k = instance.jobs[j].devices_per_round
    allowed = t[mask]
    if len(allowed) < k:
        return None
    best = int(np.partition(allowed, k - 1)[k - 1])
    for c in instance.jobs[j].classes_needed:
        have = mask & holders(instance, c)
        if not have.any():
            return None
        best = max(best, int(t[have].min()))
    return best


def round_lower_bounds(instance: FlInstance, r: int) -> list[int | None]:
    """:func:`job_lower_bound` of every job in round ``r`` over its eligible devices (0 for a
    job that does not run in ``r``)."""
    ok = eligible(instance, r)
    return [
        job_lower_bound(instance, j, ok[j]) if instance.active(r, j) else 0
        for j in range(len(instance.jobs))
    ]


def participation_bound(instance: FlInstance, j: int) -> int:
    """A lower bound on job ``j``'s completion time (microseconds) from the participation
    limit: it needs ``k R`` device-rounds, a device gives it at most ``min(limit, rounds it is
    online among the job's)``; the least sum of round maxima over any ``R`` groups of ``k`` of
    those slots is the sum of every ``k``-th of the ``k R`` fastest slots (the other jobs,
    coverage and one-device-per-round ignored: a relaxation). 0 when the slots are too few."""
    job = instance.jobs[j]
    k, rounds = job.devices_per_round, instance.job_rounds(j)
    supply = online(instance)[:rounds].sum(axis=0)
    supply = np.minimum(supply, instance.participation_limit) * _memory_ok(instance)[j]
    order = np.argsort(times(instance)[j], kind="stable")
    slots = np.repeat(times(instance)[j][order], supply[order])[: k * rounds]
    if len(slots) < k * rounds:
        return 0
    return int(slots[k - 1 :: k].sum())


def quick_bound(instance: FlInstance) -> float:
    """A lower bound on the objective (valid for the whole horizon): per job, the larger of
    the sum over its rounds of :func:`job_lower_bound` (contention between jobs and the
    participation limit ignored) and :func:`participation_bound`; summed over the jobs. 0
    when some job cannot be served."""
    per_job = [0] * len(instance.jobs)
    for r in range(instance.rounds):
        for j, b in enumerate(round_lower_bounds(instance, r)):
            if b is None:
                return 0.0
            per_job[j] += b
    return float(sum(max(b, participation_bound(instance, j)) for j, b in enumerate(per_job)))
