"""Backend wrappers: one small class per engine, declaring what it can do.

Each wrapper maps its engine's statuses to :class:`~placement.solver.backends.base.RunStatus`
and :class:`~placement.solver.result.StopReason`; no raw backend status leaves this package.
"""

from __future__ import annotations

import importlib.util

from placement.solver.backends.base import BackendRun, RunStatus
from placement.solver.backends.cpsat import CpSat
from placement.solver.backends.highs import HighsModel, HighsRun
from placement.solver.backends.milp import MILP_SOLVERS, CbcMilp, HighsMilp

BACKENDS = {"cpsat": CpSat, "highs": HighsMilp, "cbc": CbcMilp}
"""Every backend wrapper by name, in order of preference."""


def available(name: str) -> bool:
    """Whether backend ``name``'s modules are installed (checked without importing them)."""
    cls = BACKENDS[name]
    return all(importlib.util.find_spec(m) is not None for m in cls.REQUIRED_MODULES)


__all__ = [
    "BACKENDS",
    "MILP_SOLVERS",
    "BackendRun",
    "CbcMilp",
    "CpSat",
    "HighsMilp",
    "HighsModel",
    "HighsRun",
    "RunStatus",
    "available",
]
