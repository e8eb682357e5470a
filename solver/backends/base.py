"""What every backend wrapper returns: a mapped status, never the backend's raw one."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from placement.solver.result import StopReason


class RunStatus(StrEnum):
    """What one backend run produced."""

    OPTIMAL = "optimal"
    """A solution proved optimal for the model (within the requested gap: see ``stop_reason``)."""
    FEASIBLE = "feasible"
    """A solution without an optimality proof."""
    INFEASIBLE = "infeasible"
    """The model was proved infeasible."""
    NO_SOLUTION = "no_solution"
    """Stopped without a solution and without a proof."""
    ERROR = "error"
    """The backend failed (invalid model, crash, unreadable output)."""


@dataclass
class BackendRun:
    """The mapped outcome of one backend run on one model.

    ``values`` maps a variable (or its name) to its value in the best solution.
    """

    status: RunStatus
    stop_reason: StopReason
    objective: float | None = None
    bound: float | None = None
    values: dict[Any, float] = field(default_factory=dict)
    wall_s: float = 0.0
    message: str = ""

    @property
    def has_solution(self) -> bool:
        """True when the run produced a solution."""
        return self.status in (RunStatus.OPTIMAL, RunStatus.FEASIBLE)
