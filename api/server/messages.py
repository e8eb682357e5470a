"""Between the engine's Python objects and the placement.v1 service messages.

Used on both sides of the worker boundary and by the client: a request becomes a typed
instance and :class:`SolveOptions` (with every bad field named), a :class:`Result` becomes a
``SolveResponse``, an :class:`Incumbent` an ``Incumbent`` message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format

from placement.solver import InputError, SolveOptions
from placement.solver.errors import FieldError
from placement.solver.family import Family, family_names, get_family
from placement.solver.jsonform import family_key
from placement.solver.result import (
    DroppedPiece,
    Incumbent,
    Result,
    SolutionStatus,
    StopReason,
    WarmStart,
)
from placement.solver.schema.v1 import placement_pb2, service_pb2

__all__ = [
    "ParsedRequest",
    "check_response",
    "incumbent_message",
    "parse_instance",
    "parse_request",
    "result_message",
    "solution_message",
    "warm_start_message",
    "warm_start_of",
]


def status_value(status: SolutionStatus) -> int:
    """The ``placement.v1.SolutionStatus`` number of a status."""
    return service_pb2.SolutionStatus.Value(f"SOLUTION_STATUS_{status.name}")


def stop_value(stop: StopReason) -> int:
    """The ``placement.v1.StopReason`` number of a stop reason."""
    return service_pb2.StopReason.Value(f"STOP_REASON_{stop.name}")


def status_of(value: int) -> SolutionStatus:
    """The :class:`SolutionStatus` of a ``placement.v1.SolutionStatus`` number."""
    return SolutionStatus[service_pb2.SolutionStatus.Name(value).removeprefix("SOLUTION_STATUS_")]


def stop_of(value: int) -> StopReason:
    """The :class:`StopReason` of a ``placement.v1.StopReason`` number."""
    return StopReason[service_pb2.StopReason.Name(value).removeprefix("STOP_REASON_")]


@dataclass(frozen=True)
class ParsedRequest:
    """A validated solve request."""

    family: Family
    instance: Any
    options: SolveOptions
    """Options without a time limit decision (the server sets it) or callbacks."""
    requested_time_limit_s: float
    """0 = none requested."""
    name: str
    start: Any | None = None
    """The warm start's ``placement.v1.Solution`` (checked to be of the family), or None."""
    start_source: str = "solution"
    """``solution``, or ``job <id>`` when the server took it from a job."""


def parse_instance(msg: Any, path: str = "instance") -> tuple[Family, Any]:
    """The family and validated typed instance of a ``placement.v1.Instance`` message.

    Raises :class:`InputError` with paths rooted at ``path`` (e.g. ``instance.gpu.jobs[3]``).
    """
    try:
        key = family_key(msg, path)
    except InputError as exc:
        raise _rooted(exc, path) from None
    try:
        family = get_family(key)
    except KeyError:
        raise InputError.single(
            f"{path}.{key}", key, "a registered family: " + ", ".join(family_names())
        ) from None
    try:
        instance = family.instance_from_message(
            getattr(msg, key), name=msg.name, description=msg.description
        )
    except InputError as exc:
        raise _rooted(exc, path) from None
    return family, instance


def _rooted(exc: InputError, root: str) -> InputError:
    errors = []
    for e in exc.errors:
        path = e.path if e.path.startswith(root) else f"{root}.{e.path}" if e.path else root
        errors.append(FieldError(path, e.value, e.expected))
    return InputError(errors)


def parse_request(req: Any) -> ParsedRequest:
    """Validate a ``SolveRequest``: the instance and the parameters, every bad field named."""
    errors: list[FieldError] = []
    family = instance = None
    if not req.HasField("instance"):
        errors.append(FieldError("instance", None, "an Instance with one family section"))
    else:
        try:
            family, instance = parse_instance(req.instance)
        except InputError as exc:
            errors.extend(exc.errors)
    p = req.parameters
    settings: dict[str, Any] = {}
    checks = [
        ("backend", p.backend or "auto", ("auto", "cpsat", "milp", "greedy")),
        ("milp_solver", p.milp_solver or "highs", ("highs", "cbc")),
    ]
    for name, value, allowed in checks:
        if value not in allowed:
            errors.append(FieldError(f"parameters.{name}", value, " or ".join(allowed)))
        else:
            settings[name] = value
    if not (p.time_limit_s >= 0 and p.time_limit_s < float("inf")):
        errors.append(
            FieldError("parameters.time_limit_s", p.time_limit_s, "seconds >= 0 (0 = default)")
        )
    if p.threads < 0:
        errors.append(FieldError("parameters.threads", p.threads, "an integer >= 0"))
    if not (0 <= p.relative_gap < 1):
        errors.append(FieldError("parameters.relative_gap", p.relative_gap, "a number in [0, 1)"))
    start = None
    if req.HasField("start_solution"):
        start = req.start_solution
        key = start.WhichOneof("family")
        if key is None:
            errors.append(FieldError("start_solution", None, "a Solution with one family section"))
        elif family is not None and key != family.name:
            errors.append(
                FieldError(
                    f"start_solution.{key}",
                    key,
                    f"a {family.name!r} section, the instance's family",
                )
            )
    if errors:
        raise InputError(errors)
    options = SolveOptions(
        backend=settings["backend"],
        milp_solver=settings["milp_solver"],
        threads=int(p.threads),
        seed=int(p.seed),
        relative_gap=float(p.relative_gap),
        deterministic=bool(p.deterministic),
    )
    source = f"job {req.start_job_id}" if req.start_job_id else "solution"
    return ParsedRequest(
        family, instance, options, float(p.time_limit_s), req.instance.name or "", start, source
    )


def solution_message(family: Family, instance: Any, solution: Any, unplaced: Any = None) -> Any:
    """The ``placement.v1.Solution`` envelope of a typed solution."""
    msg = placement_pb2.Solution(instance_name=getattr(instance, "name", "") or "")
    section = family.solution_to_dict(instance, solution, unplaced)
    json_format.ParseDict(section, getattr(msg, family.name))
    return msg


def add_terms(msg: Any, terms: dict[str, float], senses: tuple[str, ...]) -> None:
    """Append the objective tiers, primary first, to ``msg.objective_terms``."""
    for i, (name, value) in enumerate(terms.items()):
        msg.objective_terms.add(name=name, value=value, sense=senses[i] if i < len(senses) else "")


def terms_of(msg: Any) -> tuple[dict[str, float], tuple[str, ...]]:
    """The objective tiers and their senses of a message with ``objective_terms``."""
    return {t.name: t.value for t in msg.objective_terms}, tuple(
        t.sense for t in msg.objective_terms
    )


def incumbent_message(inc: Incumbent) -> Any:
    """The ``placement.v1.Incumbent`` of an engine incumbent."""
    msg = service_pb2.Incumbent(elapsed_s=inc.time_s, objective=inc.objective, source=inc.source)
    if inc.bound is not None:
        msg.bound = inc.bound
    if inc.gap is not None:
        msg.gap = inc.gap
    return msg


def result_message(
    family: Family, instance: Any, result: Result, request_id: str, time_limit_s: float
) -> Any:
    """The ``placement.v1.SolveResponse`` of an engine result."""
    pb = service_pb2
    msg = pb.SolveResponse(
        request_id=request_id,
        family=result.family,
        status=status_value(result.status),
        stop_reason=stop_value(result.stop_reason),
        sense=result.sense,
        backend=result.backend or "",
        message=result.message,
        time_limit_s=time_limit_s,
    )
    if result.solution is not None:
        msg.solution.CopyFrom(solution_message(family, instance, result.solution, result.unplaced))
    if result.objective is not None:
        msg.objective = result.objective
    if result.bound is not None:
        msg.bound = result.bound
    if result.gap is not None:
        msg.gap = result.gap
    add_terms(msg, result.objective_terms, result.objective_senses)
    msg.phase_times_s.update(result.phase_times_s)
    msg.history.extend(incumbent_message(h) for h in result.history)
    if result.warm_start is not None:
        msg.warm_start.CopyFrom(warm_start_message(result.warm_start))
    return msg


def warm_start_message(warm: WarmStart) -> Any:
    """The ``placement.v1.WarmStart`` of an engine warm-start report."""
    msg = service_pb2.WarmStart(
        source=warm.source,
        pieces=warm.pieces,
        kept=warm.kept,
        feasible=warm.feasible,
        message=warm.message,
    )
    msg.dropped.extend(service_pb2.DroppedPiece(name=d.name, reason=d.reason) for d in warm.dropped)
    if warm.objective is not None:
        msg.objective = warm.objective
    if warm.improved is not None:
        msg.improved = warm.improved
    return msg


def warm_start_of(msg: Any) -> WarmStart:
    """The engine's :class:`WarmStart` of a ``placement.v1.WarmStart``."""
    return WarmStart(
        source=msg.source,
        pieces=msg.pieces,
        kept=msg.kept,
        dropped=tuple(DroppedPiece(d.name, d.reason) for d in msg.dropped),
        feasible=msg.feasible,
        objective=msg.objective if msg.HasField("objective") else None,
        improved=msg.improved if msg.HasField("improved") else None,
        message=msg.message,
    )


def check_response(family: Family, instance: Any, solution_msg: Any) -> Any:
    """Check a ``placement.v1.Solution`` against a typed instance: the ``CheckResponse``.

    Raises :class:`InputError` (paths rooted at ``solution``) when the solution is for another
    family or names what the instance does not have.
    """
    try:
        key = family_key(solution_msg, "solution")
    except InputError as exc:
        raise _rooted(exc, "solution") from None
    if key != family.name:
        raise InputError.single(f"solution.{key}", key, f"a {family.name!r} section")
    try:
        solution = family.solution_from_message(instance, getattr(solution_msg, key))
    except InputError as exc:
        raise _rooted(exc, "solution") from None
    report = family.check(instance, solution)
    msg = service_pb2.CheckResponse(
        feasible=report.feasible,
        violations=report.violations,
        sense=family.objective_sense(instance),
    )
    add_terms(msg, report.terms, report.senses)
    if report.terms:
        msg.objective = report.objective
    return msg
