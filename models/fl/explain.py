"""Why no assignment exists: a job that no set of devices can serve in some round.

Per running job and round, alone (the other jobs ignored): fewer eligible devices than it
needs (how many are offline, how many lack its memory: short by how many), or a data class
it needs that no eligible device holds; over the horizon, more device-rounds wanted than the
participation limit lets the fleet give. A reason is certain (each of these makes the
instance infeasible); the jobs may still not fit together, which the exact encodings decide.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from placement.models.fl.instance import FlInstance
from placement.models.fl.timing import eligible, holders, online


def _job_reasons(instance: FlInstance, r: int, j: int, ok: np.ndarray) -> list[dict[str, Any]]:
    job = instance.jobs[j]
    out: list[dict[str, Any]] = []
    n_ok = int(ok.sum())
    if n_ok < job.devices_per_round:
        up = online(instance)[r]
        offline = int((~up).sum())
        low_memory = int(
            sum(
                1
                for d, dev in enumerate(instance.devices)
                if up[d] and dev.memory_bytes < job.memory_bytes
            )
        )
        short = job.devices_per_round - n_ok
        out.append(
            {
                "name": job.name,
                "kind": "too_few_devices",
                "round": r,
                "message": (
                    f"job {job.name!r} needs {job.devices_per_round} devices in round {r}; "
                    f"{n_ok} can serve it ({offline} offline, {low_memory} with less than its "
                    f"{job.memory_bytes} bytes of memory): short by {short}"
                ),
                "needed": job.devices_per_round,
                "available": n_ok,
                "short": short,
            }
        )
    for c in job.classes_needed:
        if not (ok & holders(instance, c)).any():
            anywhere = int(holders(instance, c).sum())
            out.append(
                {
                    "name": job.name,
                    "kind": "class_not_held",
                    "round": r,
                    "message": (
                        f"job {job.name!r} needs data class {c} in round {r}; no device that "
                        f"can serve it then holds it ({anywhere} device(s) hold it at all)"
                    ),
                    "class": c,
                    "short": 1,
                }
            )
    return out


def explain_infeasible(instance: FlInstance) -> list[dict[str, Any]]:
    """Every certain reason (``name``, ``kind``, ``message`` and the figures: ``round``,
    ``needed``, ``available``, ``short``); a job's reasons are given for the first round
    they occur in (with the count of rounds affected). Empty when every job can be served
    alone in every round and the participation limit leaves enough device-rounds."""
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for r in range(instance.rounds):
        ok = eligible(instance, r)
        for j in range(len(instance.jobs)):
            if not instance.active(r, j):
                continue
            for reason in _job_reasons(instance, r, j, ok[j]):
                key = (reason["name"], f"{reason['kind']}:{reason.get('class', '')}")
                if key in seen:
                    seen[key]["rounds_affected"] += 1
                    continue
                reason["rounds_affected"] = 1
                seen[key] = reason
                out.append(reason)
    if instance.max_rounds_per_device and not out:
        wanted = sum(
            job.devices_per_round * instance.job_rounds(j) for j, job in enumerate(instance.jobs)
        )
        up = online(instance).sum(axis=0)
        supply = int(np.minimum(up, instance.max_rounds_per_device).sum())
        if wanted > supply:
            out.append(
                {
                    "name": "*",
                    "kind": "participation_limit",
                    "message": (
                        f"the jobs want {wanted} device-rounds over {instance.rounds} rounds; "
                        f"with at most {instance.max_rounds_per_device} rounds per device the "
                        f"fleet gives {supply}: short by {wanted - supply}"
                    ),
                    "needed": wanted,
                    "available": supply,
                    "short": wanted - supply,
                }
            )
    return out
