"""Independent checker of FL device assignments.

It imports no encoding and no heuristic: it recomputes every figure from the assignment with
:func:`.timing.device_time_us`.

Rules: one entry per round of the horizon and per job; a job that has converged (round
``r >= rounds_j``) gets no device; a running job gets exactly ``devices_per_round`` distinct
devices of the instance, each online in the round and with the job's memory, and together
holding every data class it needs; a device serves at most one job per round and at most
``max_rounds_per_device`` rounds over the horizon.

Objective (minimised): ``total_round_time_us``, the sum over rounds and running jobs of the
job's round time (its slowest device). Under the convergence model (job ``j`` completes after
its ``rounds_j`` rounds, run back to back) this is the sum of the jobs' completion times, so
it is the number of jobs times their average completion time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.timing import US_PER_S, device_time_us
from placement.solver.family import CheckReport
from placement.solver.schema.v1 import fl_pb2 as pb

TIERS = ("total_round_time_us",)
SENSES = ("min",)


def _infeasible(violations: list[str]) -> CheckReport:
    return CheckReport(False, violations, {t: float("inf") for t in TIERS}, SENSES)


def check(instance: FlInstance, solution: FlSolution) -> CheckReport:
    """Check ``solution`` against ``instance``; list every violation; compute the objective."""
    if not isinstance(solution, FlSolution):
        return _infeasible([f"not an FlSolution: {type(solution).__name__}"])
    n_dev, n_job = len(instance.devices), len(instance.jobs)
    if len(solution.assign) != instance.rounds or any(len(row) != n_job for row in solution.assign):
        return _infeasible(
            [f"the assignment must hold {instance.rounds} round(s) of {n_job} job(s) each"]
        )
    violations: list[str] = []
    served = [0] * n_dev
    total = 0
    for r, row in enumerate(solution.assign):
        used: dict[int, int] = {}
        for j, devs in enumerate(row):
            job = instance.jobs[j]
            if not instance.active(r, j):
                if devs:
                    violations.append(
                        f"round {r}: job {job.name!r} has converged ({instance.job_rounds(j)} "
                        "rounds) but gets devices"
                    )
                continue
            if len(devs) != job.devices_per_round:
                violations.append(
                    f"round {r}: job {job.name!r} gets {len(devs)} device(s), needs "
                    f"{job.devices_per_round}"
                )
            if any(not (isinstance(d, int) and 0 <= d < n_dev) for d in devs):
                violations.append(f"round {r}: job {job.name!r} names a device the fleet lacks")
                continue
            if len(set(devs)) != len(devs):
                violations.append(f"round {r}: job {job.name!r} lists a device twice")
            covered: set[int] = set()
            slowest = 0
            for d in set(devs):
                dev = instance.devices[d]
                if d in used:
                    violations.append(
                        f"round {r}: device {dev.name!r} serves jobs "
                        f"{instance.jobs[used[d]].name!r} and {job.name!r}"
                    )
                used[d] = j
                served[d] += 1
                if r in dev.unavailable_rounds:
                    violations.append(f"round {r}: device {dev.name!r} is offline")
                if dev.memory_bytes < job.memory_bytes:
                    violations.append(
                        f"round {r}: device {dev.name!r} has {dev.memory_bytes} bytes of memory, "
                        f"job {job.name!r} needs {job.memory_bytes}"
                    )
                covered.update(dev.classes)
                slowest = max(slowest, device_time_us(instance, j, d))
            missing = [c for c in job.classes_needed if c not in covered]
            if missing:
                violations.append(
                    f"round {r}: coverage: job {job.name!r} misses data class(es) "
                    f"{', '.join(map(str, missing))}"
                )
            total += slowest
    if instance.max_rounds_per_device:
        for d, n in enumerate(served):
            if n > instance.max_rounds_per_device:
                violations.append(
                    f"fairness: device {instance.devices[d].name!r} serves {n} rounds, at most "
                    f"{instance.max_rounds_per_device}"
                )
    if violations:
        return _infeasible(violations)
    return CheckReport(True, [], {"total_round_time_us": float(total)}, SENSES)


def round_times_us(instance: FlInstance, solution: FlSolution) -> list[list[int]]:
    """``[r][j]``: job ``j``'s round time in round ``r`` (0 where it does not run)."""
    return [
        [
            max(
                (device_time_us(instance, j, d) for d in devs if 0 <= d < len(instance.devices)),
                default=0,
            )
            for j, devs in enumerate(row)
        ]
        for row in solution.assign
    ]


def completion_times_s(instance: FlInstance, solution: FlSolution) -> list[float]:
    """Every job's completion time under the convergence model (the sum of its round times),
    seconds."""
    per = round_times_us(instance, solution)
    return [sum(per[r][j] for r in range(len(per))) / US_PER_S for j in range(len(instance.jobs))]


def participation(instance: FlInstance, solution: FlSolution) -> np.ndarray:
    """Rounds served by every device."""
    out = np.zeros(len(instance.devices), dtype=np.int64)
    for row in solution.assign:
        for devs in row:
            for d in devs:
                if 0 <= d < len(out):
                    out[d] += 1
    return out


def jain_index(counts: np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` of the participation counts (1: all
    equal; 1/n: one device does everything; 1.0 when nobody serves)."""
    x = counts.astype(float)
    sq = float((x * x).sum())
    return 1.0 if sq == 0 else float(x.sum() ** 2 / (len(x) * sq))


def solution_to_message(instance: FlInstance, solution: FlSolution) -> Any:
    """The ``placement.v1.FlSolution`` message, with the checker's round and completion
    times."""
    msg = pb.FlSolution()
    per = round_times_us(instance, solution)
    n_dev = len(instance.devices)
    for r, row in enumerate(solution.assign):
        for j, devs in enumerate(row):
            if not devs or j >= len(instance.jobs):
                continue
            msg.assignments.add(
                round=r,
                job=instance.jobs[j].name,
                devices=[instance.devices[d].name if 0 <= d < n_dev else str(d) for d in devs],
                round_time_s=per[r][j] / US_PER_S,
            )
    for j, job in enumerate(instance.jobs):
        msg.jobs.add(
            job=job.name,
            completion_time_s=sum(per[r][j] for r in range(len(per))) / US_PER_S,
            rounds=sum(1 for row in solution.assign if j < len(row) and row[j]),
        )
    msg.participation_jain = jain_index(participation(instance, solution))
    return msg
