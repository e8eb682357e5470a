"""The solve engine, which knows no problem family.

Exports :func:`solve`, :class:`SolveOptions`, :class:`Result`, the status enums
:class:`SolutionStatus` and :class:`StopReason`, :class:`CancellationToken`, and the family
registry (:func:`get_family`, :func:`family_names`).
"""

from placement.solver.cancel import CancellationToken
from placement.solver.errors import FieldError, InputError
from placement.solver.family import (
    CheckReport,
    ExactOutcome,
    family_names,
    get_family,
    register_family,
)
from placement.solver.options import Backend, MilpSolver, SolveOptions
from placement.solver.portfolio import solve
from placement.solver.result import Incumbent, Result, SolutionStatus, StopReason

__all__ = [
    "Backend",
    "CancellationToken",
    "CheckReport",
    "ExactOutcome",
    "FieldError",
    "Incumbent",
    "InputError",
    "MilpSolver",
    "Result",
    "SolutionStatus",
    "SolveOptions",
    "StopReason",
    "family_names",
    "get_family",
    "register_family",
    "solve",
]
