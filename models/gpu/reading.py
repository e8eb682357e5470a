"""Reading a GPU instance: the message's fields (:func:`instance.read_message`) and the one
rule only the checker can judge, that the running jobs' current placements fit the cluster
together. Files, service requests, typed instances (through the family's round trip) and
:func:`instance_from_dict` all read instances here."""

from __future__ import annotations

from typing import Any

from placement.models.gpu.check import check
from placement.models.gpu.instance import GpuInstance, read_message
from placement.solver.errors import ValidationCollector
from placement.solver.jsonform import instance_message


def instance_from_message(msg: Any, name: str = "", description: str = "") -> GpuInstance:
    """Build and validate a :class:`GpuInstance` from a ``placement.v1.GpuInstance`` message.

    Raises :class:`InputError` listing every bad field with its path.
    """
    instance = read_message(msg, name, description)
    check_running(instance)
    return instance


def instance_from_dict(data: dict[str, Any]) -> GpuInstance:
    """An instance from the JSON form of its ``gpu`` section (validated)."""
    return instance_from_message(instance_message({"gpu": data}).gpu)


def check_running(instance: GpuInstance) -> None:
    """The running jobs' current placements must fit the cluster together (InputError)."""
    if not instance.reopt:
        return
    report = check(instance, instance.current_solution())
    if report.feasible:
        return
    v = ValidationCollector()
    first = report.violations[0]
    path = "gpu.jobs"
    for j in instance.running_jobs:
        if f"job {instance.jobs[j].name!r}" in first:
            path = f"gpu.jobs[{j}].current"
            break
    v.add(path, first, "running jobs' placements that fit the cluster together")
    v.raise_if_any()
