"""The contract every problem family implements, and the registry of families.

A family lives in ``placement.models.<name>`` and exposes one :class:`Family` object. The
engine (:mod:`placement.solver.portfolio`) only talks to that object, so adding a family
touches its own folder, one line in :data:`FAMILY_MODULES`, the proto, docs and tests.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from placement.solver.cancel import CancellationToken
from placement.solver.options import SolveOptions
from placement.solver.result import StopReason

TOLERANCE = 1e-6
"""Two objective values closer than this (relative) are equal."""


@dataclass(frozen=True)
class CheckReport:
    """What a family's independent checker says of a solution.

    ``terms`` holds every objective tier in lexicographic order (primary first); ``senses``
    says for each whether larger (``max``) or smaller (``min``) is better.
    """

    feasible: bool
    violations: list[str]
    terms: dict[str, float]
    senses: tuple[str, ...]

    @property
    def objective(self) -> float:
        """The primary objective."""
        return next(iter(self.terms.values()))

    def score(self) -> tuple[float, ...]:
        """A tuple where larger is better in every position, rounded against float noise."""
        out = []
        for value, sense in zip(self.terms.values(), self.senses, strict=True):
            v = round(value, 6)
            out.append(v if sense == "max" else -v)
        return tuple(out)

    def better_than(self, other: CheckReport | None) -> bool:
        """True if this feasible solution is lexicographically better than ``other``."""
        if not self.feasible:
            return False
        if other is None or not other.feasible:
            return True
        return self.score() > other.score()


@dataclass
class ExactOutcome:
    """What an exact encoding reports when it returns.

    ``bound`` is a proven bound on the primary objective of the whole instance (not of a
    restricted model). ``proven_optimal`` means every objective tier was proved optimal for
    ``proven_solution``.
    """

    stop_reason: StopReason
    bound: float | None = None
    proven_optimal: bool = False
    proven_solution: Any | None = None
    proven_infeasible: bool = False
    message: str = ""
    tier_bounds: dict[str, float] = field(default_factory=dict)


class ExactContext(Protocol):
    """What the portfolio hands an exact encoding."""

    options: SolveOptions
    cancel: CancellationToken
    backend: str

    def time_left(self) -> float:
        """Seconds left before the deadline."""
        ...

    def incumbent(self) -> Any | None:
        """The best checked solution so far (use it as a hint / warm start)."""
        ...

    def proven_bound(self) -> float | None:
        """The tightest proven bound on the primary objective so far (for example the
        family's quick bound), or None. An incumbent that meets it is optimal in that tier."""
        ...

    def report(self, solution: Any, source: str, bound: float | None = None) -> bool:
        """Check ``solution``; keep it if it is feasible and improving. Returns whether kept."""
        ...


class ExactEncoding(Protocol):
    """An exact model of a family (CP-SAT or MILP)."""

    def solve(self, instance: Any, ctx: ExactContext) -> ExactOutcome:
        """Search until proved, the deadline, or cancellation; report incumbents on ``ctx``."""
        ...


class Family(Protocol):
    """A problem family: parsing, heuristics, exact encodings and an independent checker."""

    name: str
    sense: str
    """``max`` or ``min``: the direction of the primary objective."""

    def instance_from_message(self, msg: Any, name: str = "", description: str = "") -> Any:
        """The validated typed instance from the family's ``placement.v1`` message; raises
        InputError naming every bad field."""
        ...

    def validate(self, instance: Any) -> None:
        """Raise InputError if a typed instance (for example one built in code) is invalid."""
        ...

    def instance_to_dict(self, instance: Any) -> dict[str, Any]:
        """The JSON form of an instance (the family's section)."""
        ...

    def solution_from_message(self, instance: Any, msg: Any) -> Any:
        """The typed solution from the family's ``placement.v1`` message; raises InputError
        on names the instance does not have (feasibility is the checker's business)."""
        ...

    def solution_to_dict(
        self, instance: Any, solution: Any, unplaced: list[dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON form of a solution, with the reasons for unplaced work if given."""
        ...

    def greedy(self, instance: Any, options: SolveOptions) -> Iterable[tuple[str, Any]]:
        """Named heuristic solutions; the first is the fallback. A generator is best: each
        solution is checked and reported as soon as it is yielded, and the later ones are
        skipped when the time is up."""
        ...

    def check(self, instance: Any, solution: Any) -> CheckReport:
        """Independent feasibility check and objective evaluation."""
        ...

    # Optional: ``auto_backend`` ("cpsat" or "milp") is what ``--backend auto`` runs
    # (default "cpsat"); ``size(instance)`` gives counts for the service's size limits;
    # ``warm_up()`` runs a small solve in a fresh service worker.

    def exact(self, backend: str) -> ExactEncoding:
        """The exact encoding for ``cpsat`` or ``milp``."""
        ...

    def explain_unplaced(self, instance: Any, solution: Any) -> list[dict[str, Any]]:
        """A structured reason for every piece of work the solution does not serve."""
        ...

    def quick_bound(self, instance: Any) -> float | None:
        """A cheap proven bound on the primary objective, or None."""
        ...


FAMILY_MODULES: dict[str, str] = {
    "gpu": "placement.models.gpu",
    "dag": "placement.models.dag",
    "partition": "placement.models.partition",
    "entanglement": "placement.models.entanglement",
}
"""Family name -> module exposing ``FAMILY``. One line per family."""

_loaded: dict[str, Family] = {}


def get_family(name: str) -> Family:
    """The registered family called ``name``; raises KeyError with the known names."""
    if name not in _loaded:
        if name not in FAMILY_MODULES:
            raise KeyError(f"unknown family {name!r}; known: {', '.join(sorted(FAMILY_MODULES))}")
        _loaded[name] = importlib.import_module(FAMILY_MODULES[name]).FAMILY
    return _loaded[name]


def register_family(family: Family, module: str | None = None) -> None:
    """Register a family object (an embedding application's own family, or a test's).

    ``module`` is the import path that exposes it as ``FAMILY`` (needed only where worker
    processes must find it by name).
    """
    _loaded[family.name] = family
    if module is not None:
        FAMILY_MODULES[family.name] = module


def family_names() -> list[str]:
    """Names of every registered family."""
    return sorted(set(FAMILY_MODULES) | set(_loaded))


def family_of(instance: Any) -> Family:
    """The family whose instance type ``instance`` is (each instance names its family)."""
    return get_family(instance.FAMILY)


Clock = Callable[[], float]
monotonic: Clock = time.monotonic
