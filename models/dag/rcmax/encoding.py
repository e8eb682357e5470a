"""The R||Cmax search as an exact encoding of the dag family, and the ``auto`` routing.

:func:`auto_backend` is the dag family's choice under ``--backend auto``: the search
(``"rcmax"``) where it applies (the search and HiGHS beat CP-SAT there), CP-SAT everywhere
else (the family object calls it). :class:`RcmaxEncoding` runs the search.
"""

from __future__ import annotations

from typing import Literal

from placement.models.dag.cpsat import proof_by_bound
from placement.models.dag.instance import DagInstance
from placement.models.dag.rcmax.search import applicable, solve_assignment
from placement.solver.family import ExactContext, ExactOutcome


def auto_backend(instance: DagInstance) -> Literal["rcmax", "cpsat"]:
    """The exact backend ``auto`` runs for ``instance``: the R||Cmax search where it
    applies (:func:`~.search.applicable`), else CP-SAT."""
    return "rcmax" if applicable(instance) else "cpsat"


class RcmaxEncoding:
    """The R||Cmax search as an exact encoding: the incumbent's proof by the cheap bound when
    it meets it, else :func:`~.search.solve_assignment`."""

    def solve(self, instance: DagInstance, ctx: ExactContext) -> ExactOutcome:
        """Prove the incumbent by the bound, or search; see the class docstring."""
        early = proof_by_bound(instance, ctx.incumbent())
        if early is not None:
            return early
        return solve_assignment(instance, ctx)
