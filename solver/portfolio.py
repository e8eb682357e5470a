"""The portfolio: greedy fallback, independent check, exact backend, best checked incumbent.

``solve(instance, options)`` is the one entry point. It never returns a solution the family's
checker has not accepted, and it never forwards a backend's raw status: the result says what
solution exists (:class:`SolutionStatus`) and why the solve stopped (:class:`StopReason`).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import traceback
from typing import Any

from placement.solver.cancel import CancellationToken, deadline_token
from placement.solver.errors import InputError
from placement.solver.family import CheckReport, ExactOutcome, Family, family_of
from placement.solver.jsonform import family_key
from placement.solver.options import Backend, SolveOptions
from placement.solver.result import (
    DroppedPiece,
    Incumbent,
    Result,
    SolutionStatus,
    StopReason,
    WarmStart,
    relative_gap,
)
from placement.solver.schema.v1 import placement_pb2

log = logging.getLogger(__name__)


class _Run:
    """The mutable state of one solve: the best checked incumbent and its history."""

    def __init__(self, family: Family, instance: Any, options: SolveOptions, backend: str):
        self.family = family
        self.instance = instance
        self.sense = family.objective_sense(instance)
        self.options = options
        self.backend = backend
        # The caller's token, and the one every phase of this solve watches: it also fires
        # when the relative gap target is reached (see ``_check_gap``), which is not a
        # cancellation by the caller.
        self.caller_cancel = options.cancel or CancellationToken()
        self.cancel = CancellationToken()
        self.unlink = self.caller_cancel.add_callback(self.cancel.cancel)
        self.gap_reached = False
        self.start = time.monotonic()
        self.deadline = self.start + float(options.time_limit_s)
        self.lock = threading.Lock()
        self.best: Any | None = None
        self.best_report: CheckReport | None = None
        self.best_source: str | None = None
        self.history: list[Incumbent] = []
        self.bound: float | None = None
        self.rejected: list[tuple[str, list[str]]] = []

    # --- ExactContext -------------------------------------------------------------------
    def time_left(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def incumbent(self) -> Any | None:
        with self.lock:
            return self.best

    def proven_bound(self) -> float | None:
        with self.lock:
            return self.bound

    def report(self, solution: Any, source: str, bound: float | None = None) -> bool:
        report = self.family.check(self.instance, solution)
        if not report.feasible:
            # An encoding produced a solution the checker rejects: never returned, but logged
            # so the bug is visible.
            log.warning("%s produced an infeasible solution: %s", source, report.violations[:3])
            with self.lock:
                self.rejected.append((source, report.violations[:10]))
            if bound is not None:
                self.update_bound(bound)
            return False
        with self.lock:
            if bound is not None:
                self._tighten(bound)
            if not report.better_than(self.best_report):
                kept = False
            else:
                kept = True
                self.best, self.best_report, self.best_source = solution, report, source
                incumbent = Incumbent(
                    time_s=time.monotonic() - self.start,
                    objective=report.objective,
                    source=source,
                    bound=self.bound,
                    gap=relative_gap(report.objective, self.bound),
                )
                self.history.append(incumbent)
        self._check_gap()
        if not kept:
            return False
        if self.options.on_incumbent is not None:
            try:
                self.options.on_incumbent(dataclasses.replace(incumbent, solution=solution))
            except Exception:  # noqa: BLE001 - a caller's callback must not break the solve
                log.exception("on_incumbent callback failed")
        return True

    def update_bound(self, bound: float) -> None:
        """Keep the tightest proven bound on the primary objective (and stop the solve when
        that reaches the gap target)."""
        with self.lock:
            self._tighten(bound)
        self._check_gap()

    def _tighten(self, bound: float) -> None:
        """``update_bound`` under the lock."""
        if self.bound is None:
            self.bound = bound
        elif self.sense == "max":
            self.bound = min(self.bound, bound)
        else:
            self.bound = max(self.bound, bound)

    def gap(self) -> float | None:
        """The relative gap of the best incumbent to the bound, now."""
        with self.lock:
            if self.best_report is None:
                return None
            return relative_gap(self.best_report.objective, self.bound)

    def _check_gap(self) -> None:
        """Stop every phase once the proven gap on the primary objective is at most the
        target (``relative_gap > 0``; with 0 the later objective tiers are still optimised
        after the primary one is proved)."""
        target = self.options.relative_gap
        if target <= 0 or self.gap_reached:
            return
        gap = self.gap()
        if gap is not None and gap <= target:
            self.gap_reached = True
            self.cancel.cancel()


def solve(
    instance: Any,
    options: SolveOptions | None = None,
    start: Any | None = None,
    start_source: str = "solution",
) -> Result:
    """Solve ``instance`` within ``options.time_limit_s`` and return the best checked solution.

    Parameters
    ----------
    instance:
        A typed instance of any registered family (for example
        :class:`placement.models.gpu.GpuInstance`).
    options:
        :class:`SolveOptions`; defaults apply when omitted.
    start:
        A warm start: a ``placement.v1.Solution`` (or the family's solution message), for
        example an earlier job's answer for a slightly different instance. The family keeps
        what the instance still admits, by name (:meth:`Family.adapt_start`); if that passes
        the checker it is the first incumbent, so it is returned unless something better is
        found and it hints the exact backends. ``Result.warm_start`` says what was kept.
    start_source:
        Where the start came from, as ``Result.warm_start.source`` shows it (``job <id>``).

    Raises
    ------
    InputError
        If the instance (for example one built in code) breaks the family's rules, or
        ``start`` is a solution of another family.

    Returns
    -------
    Result
        The best solution that passed the family's checker, its objective as the checker
        computes it, the proven bound and gap where an exact backend ran, the stop reason,
        time per phase, the incumbent history and a reason for each unplaced piece of work.

    Example
    -------
    >>> from placement.solver import solve, SolveOptions
    >>> result = solve(instance, SolveOptions(time_limit_s=5))  # doctest: +SKIP
    >>> result.status, result.objective, result.gap  # doctest: +SKIP
    """
    options = options or SolveOptions()
    family = family_of(instance)
    if not getattr(instance, "validated", True):
        # Built in code, not parsed: the same rules as for files (raises InputError).
        family.validate(instance)
    backend = options.backend.value
    if options.backend == Backend.AUTO:
        # The family's choice for this instance (e.g. a MILP that proves what CP-SAT's
        # integer rounding cannot).
        backend = family.auto_backend(instance)
    run = _Run(family, instance, options, backend)
    phases: dict[str, float] = {}
    errors: dict[str, str] = {}

    quick = family.quick_bound(instance)
    if quick is not None:
        run.update_bound(quick)

    warm: WarmStart | None = None
    start_report: CheckReport | None = None
    if start is not None:
        t0 = time.monotonic()
        warm, start_report = _warm_start(run, start, start_source)
        phases["start"] = time.monotonic() - t0

    # 1-2. Greedy fallback, each candidate checked.
    t0 = time.monotonic()
    if not run.cancel.cancelled:
        # The heuristics see a token that also fires at the deadline: one that honours it
        # (``options.cancel``) stops early with what it has, still a feasible solution. The
        # fallback gets at least GREEDY_FLOOR of the budget even when the steps before it
        # used the budget up.
        floor = GREEDY_FLOOR * float(options.time_limit_s)
        with deadline_token(run.cancel, max(run.time_left(), floor)) as token:
            try:
                greedy_options = dataclasses.replace(options, cancel=token)
                for name, solution in family.greedy(instance, greedy_options):
                    run.report(solution, f"greedy:{name}")
                    # The first heuristic is the fallback and always runs; the others only
                    # while there is time.
                    if run.cancel.cancelled or run.time_left() <= 0:
                        break
            except Exception as exc:  # noqa: BLE001 - a failing heuristic must not lose the request
                errors["greedy"] = f"{type(exc).__name__}: {exc}"
                log.debug("greedy failed\n%s", traceback.format_exc())
    phases["greedy"] = time.monotonic() - t0

    # 3. Exact backend, hinted with the incumbent, bounded by the deadline; skipped when
    # the bound already proves the incumbent (one objective tier, gap 0): the backend would
    # only prove it again (a CP-SAT or MILP start costs milliseconds a small request feels).
    outcome = _proved_by_bound(run) if options.backend != Backend.GREEDY else None
    if (
        outcome is None
        and options.backend != Backend.GREEDY
        and not run.cancel.cancelled
        and run.time_left() > 0
    ):
        t0 = time.monotonic()
        try:
            outcome = family.exact(backend).solve(instance, run)
            if outcome.bound is not None:
                run.update_bound(outcome.bound)
        except Exception as exc:  # noqa: BLE001 - fall back to the greedy solution
            errors[backend] = f"{type(exc).__name__}: {exc}"
            log.warning("%s backend failed: %s", backend, exc)
            log.debug("%s", traceback.format_exc())
        ran = outcome.ran if outcome is not None and outcome.ran else phase_name(backend, options)
        _record_exact(phases, ran, time.monotonic() - t0, outcome)

    try:
        result = _finish(run, outcome, phases, errors)
    finally:
        run.unlink()
    if warm is not None:
        improved = None
        if start_report is not None and run.best_report is not None:
            improved = run.best_report.better_than(start_report)
        result = dataclasses.replace(
            result, warm_start=dataclasses.replace(warm, improved=improved)
        )
    return result


def _start_section(family: Family, start: Any) -> Any:
    """The family's solution message of a start given as a ``Solution`` envelope or as the
    family's message itself; InputError when it belongs to another family."""
    envelope = placement_pb2.Solution.DESCRIPTOR
    descriptor = getattr(start, "DESCRIPTOR", None)
    if descriptor is None or descriptor.full_name != envelope.full_name:
        wanted = envelope.fields_by_name[family.name].message_type
        if descriptor is None or descriptor.full_name != wanted.full_name:
            shown = descriptor.name if descriptor is not None else type(start).__name__
            raise InputError.single(
                "start", shown, f"a placement.v1.Solution or {wanted.name} message"
            )
        return start
    key = family_key(start, "start")
    if key != family.name:
        raise InputError.single(
            f"start.{key}", key, f"a {family.name!r} section, the family of the instance"
        )
    return getattr(start, key)


def _warm_start(run: _Run, start: Any, source: str) -> tuple[WarmStart, CheckReport | None]:
    """Adapt ``start`` to the instance, check it, and make it the first incumbent when it
    passes. Returns the report (without ``improved``) and the start's check when feasible."""
    family, instance = run.family, run.instance
    adapted = family.adapt_start(instance, _start_section(family, start))
    dropped = tuple(DroppedPiece(name, reason) for name, reason in adapted.dropped)
    warm = WarmStart(source, adapted.pieces, adapted.kept, dropped, message=adapted.note)
    if adapted.solution is None:
        return dataclasses.replace(warm, message=warm.message or "nothing of it applies"), None
    report = family.check(instance, adapted.solution)
    if not report.feasible:
        return dataclasses.replace(warm, message=report.violations[0]), None
    run.report(adapted.solution, "start")
    return dataclasses.replace(warm, feasible=True, objective=report.objective), report


def _proved_by_bound(run: _Run) -> ExactOutcome | None:
    """The outcome that proves the incumbent optimal without a search: it has one objective
    tier and meets the proven bound. None otherwise."""
    with run.lock:
        report, solution = run.best_report, run.best
    if report is None or len(report.senses) != 1 or run.gap() != 0.0:
        return None
    return ExactOutcome(
        stop_reason=StopReason.PROVEN,
        bound=run.bound,
        proven_optimal=True,
        proven_solution=solution,
        message="the heuristic solution meets the quick bound: optimal without a search",
    )


GREEDY_FLOOR = 0.25
"""The least share of the time limit the heuristics get, even when reading the instance and
the quick bound used the budget up: a placement a little late rather than an empty one on
time."""
EXPLAIN_GRACE = 0.1
"""The share of the time limit the reasons for unplaced work may take past the deadline
before they are given without their costly details."""


def phase_name(backend: str, options: SolveOptions) -> str:
    """The name the exact phase is timed under: what ran (``cpsat``, ``highs``, ``cbc``, or
    the family's own search such as ``rcmax``), not the option that chose it (``milp``).
    An outcome naming what ran (``ExactOutcome.ran``: ``dp``, ``serving-tp``) overrides it."""
    if backend == Backend.MILP.value:
        return options.milp_solver.value
    return backend


def _record_exact(
    phases: dict[str, float], name: str, elapsed: float, outcome: ExactOutcome | None
) -> None:
    """The exact phase's time: split as the encoding says it went (its
    ``phase_times_s``, e.g. ``colgen`` then ``highs``), the rest under ``name``."""
    parts = dict(outcome.phase_times_s) if outcome is not None else {}
    for part, seconds in parts.items():
        phases[part] = phases.get(part, 0.0) + seconds
    rest = elapsed - sum(parts.values())
    if not parts or rest > 0.0005:
        phases[name] = phases.get(name, 0.0) + max(0.0, rest)


def _finish(
    run: _Run, outcome: ExactOutcome | None, phases: dict[str, float], errors: dict[str, str]
) -> Result:
    family, options = run.family, run.options
    t0 = time.monotonic()
    unplaced: list[dict[str, Any]] = []
    if run.best is not None:
        # Past the deadline (plus a tenth of the budget), the reasons lose their costly
        # details rather than the answer coming late.
        grace = run.deadline - time.monotonic() + EXPLAIN_GRACE * float(options.time_limit_s)
        with deadline_token(run.caller_cancel, grace) as stop:
            unplaced = family.explain_unplaced(run.instance, run.best, stop)
    phases["explain"] = time.monotonic() - t0
    phases["total"] = time.monotonic() - run.start

    report = run.best_report
    objective = report.objective if report else None
    terms = dict(report.terms) if report else {}
    gap = relative_gap(objective, run.bound)
    messages: list[str] = []

    if run.caller_cancel.cancelled:
        stop = StopReason.CANCELLED
    elif run.gap_reached:
        # The portfolio stopped the phases: the proven gap met the target.
        stop = StopReason.GAP_REACHED
        if outcome is not None and outcome.message:
            messages.append(outcome.message)
    elif outcome is not None:
        stop = outcome.stop_reason
        if outcome.message:
            messages.append(outcome.message)
    elif errors.get(run.backend) is not None:
        stop = StopReason.ERROR
    elif options.backend == Backend.GREEDY:
        stop = StopReason.HEURISTIC_ONLY
    else:
        stop = StopReason.TIME_LIMIT
    for name, error in errors.items():
        fallback = "returning the best checked solution" if report else "no checked solution"
        messages.append(f"{name} failed ({error}); {fallback}")
    if run.rejected:
        messages.append(
            f"{len(run.rejected)} candidate solution(s) failed the checker and were dropped"
        )

    if report is None:
        if outcome is not None and outcome.proven_infeasible:
            status, stop = SolutionStatus.INFEASIBLE, StopReason.PROVEN
        else:
            status = SolutionStatus.NO_SOLUTION
    else:
        proven = (
            outcome is not None
            and outcome.proven_optimal
            and outcome.proven_solution is not None
            and not run.caller_cancel.cancelled
        )
        if proven:
            proven_report = family.check(run.instance, outcome.proven_solution)
            # Optimal only if the proved solution is the one we return (or ties it) and the
            # checker agrees with the bound: the claim rests on the solver's proof.
            proven = proven_report.feasible and proven_report.score() >= report.score()
            if proven and run.bound is not None:
                proven = relative_gap(report.objective, run.bound) == 0.0
        if proven:
            status, stop, gap = SolutionStatus.OPTIMAL, StopReason.PROVEN, 0.0
        else:
            status = SolutionStatus.FEASIBLE
            if stop == StopReason.PROVEN:
                # The backend finished, but its proof does not cover the returned solution
                # (for example it searched a restricted model).
                target = options.relative_gap
                if target > 0 and gap is not None and gap <= target:
                    stop = StopReason.GAP_REACHED
                else:
                    stop = StopReason.SEARCH_EXHAUSTED
                    messages.append(
                        "the exact backend finished its search before the deadline, "
                        "without a proof for the whole instance"
                    )

    return Result(
        family=family.name,
        status=status,
        stop_reason=stop,
        solution=run.best,
        objective=objective,
        objective_terms=terms,
        sense=run.sense,
        bound=run.bound,
        gap=gap,
        backend=run.best_source,
        phase_times_s=phases,
        history=list(run.history),
        message="; ".join(messages),
        unplaced=unplaced,
        backend_errors=errors,
        rejected_candidates=len(run.rejected),
        objective_senses=tuple(report.senses) if report else (),
        instance=run.instance,
        family_object=family,
    )
