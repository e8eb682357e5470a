"""What a solve returns: plain data, two status enums, the checked objective and the bound."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any


class SolutionStatus(StrEnum):
    """What solution exists."""

    OPTIMAL = "optimal"
    """A checked solution that an exact backend proved optimal (every objective tier)."""
    FEASIBLE = "feasible"
    """A checked solution; optimality not proved."""
    INFEASIBLE = "infeasible"
    """Proved that no feasible solution exists."""
    NO_SOLUTION = "no_solution"
    """No checked solution was found, and infeasibility was not proved."""


class StopReason(StrEnum):
    """Why the solve stopped."""

    PROVEN = "proven"
    """The exact backend finished its proof (optimality or infeasibility)."""
    TIME_LIMIT = "time_limit"
    """The time budget ran out."""
    GAP_REACHED = "gap_reached"
    """The relative gap target was reached before a full proof."""
    CANCELLED = "cancelled"
    """The caller cancelled the solve."""
    ERROR = "error"
    """A backend failed; the best checked solution found before the failure is returned."""
    SEARCH_EXHAUSTED = "search_exhausted"
    """The exact backend finished the (restricted) search it ran before the deadline without
    a proof for the whole instance; see the result's message."""
    HEURISTIC_ONLY = "heuristic_only"
    """Only the greedy heuristics ran (backend ``greedy``); nothing was proved."""


@dataclass(frozen=True)
class Incumbent:
    """One improving, checked solution in the order it was found."""

    time_s: float
    """Seconds since the solve started."""
    objective: float
    """The checker's primary objective."""
    source: str
    """Which algorithm produced it, e.g. ``greedy:best_fit`` or ``cpsat``."""
    bound: float | None = None
    """The best proven bound on the primary objective at that moment, if any."""
    gap: float | None = None
    """Relative gap between ``objective`` and ``bound`` at that moment."""
    solution: Any | None = field(default=None, compare=False, repr=False)
    """The solution itself: set on what ``on_incumbent`` receives (so a caller can keep the
    best one, e.g. a service that must answer at a deadline), None in ``Result.history``."""

    def summary(self) -> dict[str, Any]:
        """The JSON-ready fields, without the solution."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "solution"}


@dataclass(frozen=True)
class DroppedPiece:
    """A piece of a start solution that the solve could not keep, and why."""

    name: str
    """The piece's name in the start (a job, task, layer or request), or ``""`` for the whole."""
    reason: str
    """Why it was dropped, e.g. ``job 'x' no longer in the instance``, ``node 'n3' gone``."""


@dataclass(frozen=True)
class WarmStart:
    """What a solve made of the start solution it was given (:attr:`Result.warm_start`).

    The family keeps every piece of the start (a placed job, a scheduled task, an assigned
    layer, a routed path) that the instance solved still admits, by name, and completes or
    leaves out the rest (:meth:`placement.solver.family.Family.adapt_start`).
    """

    source: str
    """Where the start came from: ``solution`` or ``job <id>``."""
    pieces: int
    """Pieces in the start."""
    kept: int
    """Pieces kept in the adapted start."""
    dropped: tuple[DroppedPiece, ...] = ()
    """Each piece not kept, with the reason."""
    feasible: bool = False
    """The adapted start passed the family's checker as a whole (it was then the first
    incumbent: returned unless something better was found, and the exact backends' hint)."""
    objective: float | None = None
    """The checker's primary objective of the adapted start (None when it is infeasible)."""
    improved: bool | None = None
    """The returned solution is strictly better than the feasible adapted start; None when
    the start was not feasible."""
    message: str = ""
    """Why the adapted start was not feasible (the checker's first violation), or notes."""

    def summary(self) -> str:
        """One line: ``kept 37 of 40 (3 dropped: job 'x' no longer in the instance, ...)``."""
        line = f"kept {self.kept} of {self.pieces}"
        notes = []
        if self.dropped:
            reasons = "; ".join(d.reason for d in self.dropped[:3])
            more = f"; {len(self.dropped) - 3} more" if len(self.dropped) > 3 else ""
            notes.append(f"{len(self.dropped)} dropped: {reasons}{more}")
        if self.feasible:
            if self.message:
                notes.append(self.message)
            notes.append(
                "feasible; the answer improves on it"
                if self.improved
                else "feasible; nothing better found"
            )
        else:
            notes.append(f"infeasible as a whole: {self.message}" if self.message else "infeasible")
        return f"{line} ({', '.join(notes)}) from {self.source}"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready fields."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["dropped"] = [{"name": d.name, "reason": d.reason} for d in self.dropped]
        return data


@dataclass(frozen=True)
class Result:
    """The outcome of :func:`placement.solver.solve`.

    ``objective`` and ``objective_terms`` are what the family's independent checker computed
    for ``solution``; ``bound`` and ``gap`` refer to the primary objective and are present
    wherever an exact backend ran and proved one.
    """

    family: str
    status: SolutionStatus
    stop_reason: StopReason
    solution: Any | None
    objective: float | None
    objective_terms: dict[str, float]
    sense: str
    bound: float | None
    gap: float | None
    backend: str | None
    phase_times_s: dict[str, float]
    history: list[Incumbent]
    message: str = ""
    unplaced: list[dict[str, Any]] = field(default_factory=list)
    backend_errors: dict[str, str] = field(default_factory=dict)
    objective_senses: tuple[str, ...] = ()
    """``max`` or ``min`` for each entry of ``objective_terms``, in the same order."""
    rejected_candidates: int = 0
    """Candidate solutions a heuristic or backend reported that the checker rejected (they
    were dropped; ``message`` says so). Nonzero means a bug in an encoding or heuristic."""
    warm_start: WarmStart | None = None
    """What was kept of the start solution, when the solve was given one."""
    instance: Any | None = field(default=None, compare=False, repr=False)
    """The typed instance solved (every solve sets it; results read back from messages may
    lack it): with :attr:`family_object`, it lets :meth:`to_dict` include the solution's JSON
    form and :attr:`named` read the solution by name."""
    family_object: Any | None = field(default=None, compare=False, repr=False)
    """The family object (:class:`placement.solver.family.Family`) of :attr:`family`, passed
    in by whoever builds the result (the portfolio, the client): what reads the solution by
    name and writes its JSON form. A result is plain data and looks up no registry."""

    def __repr__(self) -> str:
        def num(x: float | None) -> str:
            return "None" if x is None else f"{x:.6g}"

        gap = "None" if self.gap is None else f"{100 * self.gap:.2f}%"
        total = self.phase_times_s.get("total")
        time = "None" if total is None else f"{total:.2f}s"
        return (
            f"Result(family={self.family!r}, status={self.status.value}, "
            f"stop_reason={self.stop_reason.value}, objective={num(self.objective)}, "
            f"bound={num(self.bound)}, gap={gap}, backend={self.backend!r}, time={time})"
        )

    @property
    def named(self) -> Any | None:
        """The solution keyed by names rather than indices (gpu: ``placements[job].workers[k]
        .node``; dag: ``runs[task]``; partition: ``device_of[layer]``; entanglement:
        ``routes[request]``), or None without a solution, :attr:`instance` or
        :attr:`family_object`."""
        if self.solution is None or self.instance is None or self.family_object is None:
            return None
        return self.family_object.named_solution(self.instance, self.solution)

    @property
    def has_solution(self) -> bool:
        """True when a checked solution is present."""
        return self.solution is not None

    def to_dict(self, solution_dict: dict[str, Any] | None = None) -> dict[str, Any]:
        """A JSON-ready dict with the solution's JSON form: ``solution_dict`` when given, else
        computed when the result carries its :attr:`instance` and :attr:`family_object` (None
        otherwise)."""
        # Field by field: asdict would deep-copy the (possibly large) typed solution only to
        # replace it with its JSON form.
        hidden = ("instance", "family_object")
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in hidden}
        data["status"] = self.status.value
        data["stop_reason"] = self.stop_reason.value
        family, instance = self.family_object, self.instance
        if solution_dict is None and self.solution is not None and None not in (family, instance):
            solution_dict = family.solution_to_dict(instance, self.solution, self.unplaced)
        data["solution"] = solution_dict
        data["history"] = [h.summary() for h in self.history]
        data["objective_terms"] = dict(self.objective_terms)
        data["phase_times_s"] = dict(self.phase_times_s)
        data["unplaced"] = [dict(u) for u in self.unplaced]
        data["backend_errors"] = dict(self.backend_errors)
        data["objective_senses"] = list(self.objective_senses)
        data["warm_start"] = self.warm_start.to_dict() if self.warm_start else None
        return data


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """|bound - objective| / max(|objective|, |bound|), in [0, 1]; None when either is unknown.

    0 when the two agree to within 1e-9 (relative), 1 when one of them is 0 and the other not.
    """
    if objective is None or bound is None:
        return None
    diff = abs(bound - objective)
    scale = max(abs(objective), abs(bound))
    if diff <= 1e-9 * max(1.0, scale):
        return 0.0
    return min(1.0, diff / scale)
