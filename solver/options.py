"""Solve options: plain, frozen data with sane defaults."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from placement.solver.cancel import CancellationToken
from placement.solver.errors import InputError
from placement.solver.result import Incumbent


class Backend(StrEnum):
    """Which engine may produce the solution."""

    AUTO = "auto"
    """The greedy fallback, then the family's preferred exact backend (CP-SAT)."""
    CPSAT = "cpsat"
    """The greedy fallback, then the CP-SAT encoding."""
    MILP = "milp"
    """The greedy fallback, then the MILP encoding (solver chosen by ``milp_solver``)."""
    GREEDY = "greedy"
    """Only the greedy heuristics; no bound is proved."""


class MilpSolver(StrEnum):
    """The MILP solver behind PuLP."""

    HIGHS = "highs"
    """HiGHS through highspy (default): bound, incumbent callbacks and interruption."""
    CBC = "cbc"
    """COIN-OR CBC, PuLP's bundled binary."""


DETERMINISTIC_WALL_GUARD = (4.0, 5.0)
"""In deterministic mode a search stops by its work budget (CP-SAT's deterministic time); the
wall clock stops it only at ``factor * budget + extra`` seconds (a guard against a runaway
search)."""


def deterministic_wall_limit(budget_s: float) -> float:
    """Wall seconds after which a deterministic-mode search of ``budget_s`` is stopped anyway.

    Every wall-clock guard around a deterministic search (CP-SAT's own limit, the GPU
    encoding's tier deadline, the R||Cmax search's guard) must use this one value: a tighter
    guard lets the wall clock, not the work budget, end the search on a loaded machine, and
    the result then depends on the load.
    """
    factor, extra = DETERMINISTIC_WALL_GUARD
    return factor * float(budget_s) + extra


MAX_TIME_LIMIT_S = 1e7
"""The longest time limit a solve takes (about 115 days): the timers behind deadlines overflow
near 9.2e9 s, and the deterministic guard is four times the budget."""

MAX_THREADS = 1024
"""The most worker threads a solve asks for (the gRPC field and the solvers take 32-bit
counts; a machine with more cores is given 0, all cores)."""

SEED_RANGE = (-(2**31), 2**31 - 1)
"""The seeds every backend takes: CP-SAT's ``random_seed`` is a 32-bit integer."""


def _integer(value: object) -> bool:
    """An int, not a bool (``True`` is an int to Python, never a count or a seed to us)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: object) -> bool:
    """An int or a float, not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True)
class SolveOptions:
    """How to solve. Every field has a default; construct with keywords.

    Attributes
    ----------
    time_limit_s:
        Wall-clock budget for the whole solve (greedy, check and exact phases).
    backend:
        ``auto | cpsat | milp | greedy``.
    milp_solver:
        ``highs | cbc`` when the MILP backend runs.
    threads:
        Worker threads of the exact backend; 0 means all cores.
    seed:
        Random seed passed to every randomised component.
    relative_gap:
        Stop the solve, whatever phase is running, as soon as the proven relative gap on the
        primary objective (the best incumbent against the best bound so far) is at most
        this; the stop reason is then ``gap_reached``. 0 (the default): search until every
        objective tier is proved or the time is up.
    deterministic:
        Reproducible search: fixed seed, one search worker, and CP-SAT stopped by
        deterministic time instead of wall time, with every time-dependent decision of an
        encoding taken on that budget. The same instance and options then give the same
        result; the price is that wall time may exceed ``time_limit_s`` (the wall-clock guard
        is :func:`deterministic_wall_limit`: four times the budget plus 5 s). MILP solvers get
        the fixed seed but stop on wall time.
    on_incumbent:
        Called with each improving, checked incumbent (:class:`~placement.solver.result.Incumbent`).
    cancel:
        Token that stops the solve when cancelled; the best checked solution so far is returned.
    """

    time_limit_s: float = 10.0
    backend: Backend = Backend.AUTO
    milp_solver: MilpSolver = MilpSolver.HIGHS
    threads: int = 0
    seed: int = 0
    relative_gap: float = 0.0
    deterministic: bool = False
    on_incumbent: Callable[[Incumbent], Any] | None = field(default=None, compare=False)
    cancel: CancellationToken | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "backend", Backend(self.backend))
        except ValueError:
            raise InputError.single(
                "backend", self.backend, "one of " + ", ".join(b.value for b in Backend)
            ) from None
        try:
            object.__setattr__(self, "milp_solver", MilpSolver(self.milp_solver))
        except ValueError:
            raise InputError.single(
                "milp_solver", self.milp_solver, "one of " + ", ".join(m.value for m in MilpSolver)
            ) from None
        if not (_number(self.time_limit_s) and 0 < self.time_limit_s <= MAX_TIME_LIMIT_S):
            raise InputError.single(
                "time_limit_s",
                self.time_limit_s,
                f"a number of seconds > 0 and <= {MAX_TIME_LIMIT_S:g}",
            )
        if not (_integer(self.threads) and 0 <= self.threads <= MAX_THREADS):
            raise InputError.single(
                "threads", self.threads, f"an integer from 0 (all cores) to {MAX_THREADS}"
            )
        if not (_number(self.relative_gap) and 0 <= self.relative_gap < 1):
            raise InputError.single("relative_gap", self.relative_gap, "a number in [0, 1)")
        if not (_integer(self.seed) and SEED_RANGE[0] <= self.seed <= SEED_RANGE[1]):
            raise InputError.single(
                "seed", self.seed, f"an integer from {SEED_RANGE[0]} to {SEED_RANGE[1]}"
            )

    @property
    def effective_threads(self) -> int:
        """Threads the exact backend uses: 1 in deterministic mode, else ``threads`` or all cores."""
        if self.deterministic:
            return 1
        return self.threads or (os.cpu_count() or 1)
