"""Driving a family's exact encoding directly: a real :class:`ExactContext` for tests and
for embedders, the exact backends this machine can run, and the JSON-form round trip.

The portfolio (:func:`placement.solver.solve`) hands every exact encoding a context: the
deadline, the cancellation token, the best checked incumbent, the tightest proven bound,
and ``report`` that runs the family's checker on every candidate. :class:`ExactContext` is
that same context (the portfolio's own bookkeeping) without the greedy phase around it, so an
encoding can be tested, or embedded, on its own::

    from placement.solver.testing import ExactContext

    ctx = ExactContext(instance, SolveOptions(backend="milp", time_limit_s=10))
    outcome = ctx.run()                      # the family's MILP encoding
    assert outcome.proven_optimal and not ctx.rejected
    ctx.best_report.objective                # the checker's objective of the best report

Nothing here imports above ``placement.solver`` (no family, no ``api``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from placement.solver import backends as _backends
from placement.solver import family as _registry
from placement.solver.family import (
    CheckReport,
    ExactEncoding,
    ExactOutcome,
    Family,
    family_of,
    instance_document,
    instance_from_document,
    register_family,
)
from placement.solver.options import Backend, SolveOptions
from placement.solver.portfolio import _Run

__all__ = [
    "ExactContext",
    "backend_id",
    "exact_backends",
    "instance_from_document",
    "instance_document",
    "registered",
    "round_trip",
]


class ExactContext(_Run):
    """The portfolio's side of an exact encoding, for driving the encoding directly.

    Parameters
    ----------
    instance:
        A typed instance of a registered family.
    options:
        The options the encoding reads (time limit, threads, seed, ``milp_solver``, ...);
        the deadline starts when the context is made. ``options.cancel`` is used as the
        cancellation token when given.
    backend:
        ``cpsat`` or ``milp``: what :meth:`run` asks the family for; by default
        ``options.backend`` (``auto`` and ``greedy`` mean ``cpsat``).
    bound:
        A proven bound on the primary objective known before the search (for example the
        family's quick bound), returned by :meth:`proven_bound` until a tighter one is
        reported. None by default: the encoding must prove by itself.
    family:
        The family object, when it is not the registered one of ``instance``.

    Besides the :class:`~placement.solver.family.ExactContext` protocol (``options``,
    ``cancel``, ``backend``, ``time_left``, ``incumbent``, ``proven_bound``, ``report``), it
    records what the encoding did: ``best`` / ``best_report`` / ``best_source`` (the best
    checked solution), ``history`` (every improving incumbent), ``reports`` (every
    ``(source, CheckReport)`` reported, feasible or not), ``rejected`` (source and
    violations of every infeasible one), ``bounds`` (every bound passed to ``report``) and
    ``outcome`` (what :meth:`run` returned).
    """

    def __init__(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        backend: str | None = None,
        bound: float | None = None,
        family: Family | None = None,
    ) -> None:
        options = options or SolveOptions()
        if backend is None:
            chosen = options.backend
            backend = "cpsat" if chosen in (Backend.AUTO, Backend.GREEDY) else chosen.value
        super().__init__(family or family_of(instance), instance, options, backend)
        if options.cancel is not None:
            # The caller's token itself, as documented (the portfolio gives its phases a
            # token of their own, linked to the caller's, so that a gap-target stop is not
            # mistaken for the caller's cancellation).
            self.unlink()
            self.cancel = options.cancel
        if bound is not None:
            self.update_bound(bound)
        self.reports: list[tuple[str, CheckReport]] = []
        self.bounds: list[float] = []
        self.outcome: ExactOutcome | None = None

    def report(self, solution: Any, source: str, bound: float | None = None) -> bool:
        """Check ``solution`` with the family's checker; keep it if feasible and improving.

        Returns whether it was kept (the portfolio's rule); every call is recorded."""
        if bound is not None:
            self.bounds.append(bound)
        self.reports.append((source, self.family.check(self.instance, solution)))
        return super().report(solution, source, bound)

    @property
    def sources(self) -> list[str]:
        """The source of every feasible report, in order."""
        return [source for source, report in self.reports if report.feasible]

    def run(self, encoding: ExactEncoding | None = None) -> ExactOutcome:
        """Run ``encoding`` (by default the family's encoding for :attr:`backend`) on the
        instance with this context; the outcome is also kept in :attr:`outcome`."""
        encoding = encoding or self.family.exact(self.backend)
        self.outcome = encoding.solve(self.instance, self)
        return self.outcome


def exact_backends() -> list[tuple[str, str]]:
    """Every exact ``(backend, milp_solver)`` pair whose modules are installed, from the
    backend registry in its order: each non-MILP backend (``cpsat``) with the default MILP
    solver, then ``("milp", name)`` for each MILP solver."""
    default_milp = SolveOptions().milp_solver.value
    out: list[tuple[str, str]] = []
    for name in _backends.BACKENDS:
        if not _backends.available(name):
            continue
        if name in _backends.MILP_SOLVERS:
            out.append((Backend.MILP.value, name))
        else:
            out.append((name, default_milp))
    return out


def backend_id(backend: str, milp_solver: str) -> str:
    """A short name for a ``(backend, milp_solver)`` pair: ``cpsat``, ``milp-highs``, ..."""
    return f"{backend}-{milp_solver}" if backend == Backend.MILP.value else backend


def round_trip(instance: Any) -> Any:
    """``instance`` written to its JSON form and read back: validated as files are (raises
    InputError naming the bad field)."""
    return instance_from_document(instance_document(instance))


@contextmanager
def registered(family: Family, module: str | None = None) -> Iterator[Family]:
    """Register ``family`` (see :func:`~placement.solver.family.register_family`) for the
    ``with`` block only: afterwards the registry is as before, so a test's own family does
    not show up in the family lists other tests derive from :func:`family_names`."""
    loaded = dict(_registry._loaded)
    modules = dict(_registry.FAMILY_MODULES)
    register_family(family, module)
    try:
        yield family
    finally:
        _registry._loaded.clear()
        _registry._loaded.update(loaded)
        _registry.FAMILY_MODULES.clear()
        _registry.FAMILY_MODULES.update(modules)
