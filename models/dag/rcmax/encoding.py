"""The R||Cmax search as an exact encoding of the dag family, and the ``auto`` routing.

:func:`auto_backend` is the dag family's choice under ``--backend auto``: the search
(``"rcmax"``) where it applies (the search and HiGHS beat CP-SAT there), CP-SAT everywhere
else. :class:`RcmaxEncoding` runs the search. :class:`AutoEncoding` makes that choice inside
an encoding, from the options, until the family resolves ``exact("auto")`` itself.
"""

from __future__ import annotations

from typing import Any, Literal

from placement.models.dag.cpsat import proof_by_bound
from placement.models.dag.instance import DagInstance
from placement.models.dag.rcmax.search import applicable, solve_assignment
from placement.solver.family import ExactContext, ExactOutcome
from placement.solver.options import Backend


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


class AutoEncoding:
    """The dag family's ``auto`` exact phase: :class:`RcmaxEncoding` where
    :func:`auto_backend` chooses it, ``inner`` (CP-SAT) for everything else and whenever a
    backend was named explicitly."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def solve(self, instance: DagInstance, ctx: ExactContext) -> ExactOutcome:
        """Route the instance; see the class docstring."""
        if ctx.options.backend != Backend.AUTO or auto_backend(instance) != "rcmax":
            return self.inner.solve(instance, ctx)
        return RcmaxEncoding().solve(instance, ctx)
