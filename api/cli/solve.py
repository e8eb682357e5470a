"""``placement solve`` (here or on a server) and ``placement check``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from placement.api.cli.exits import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    err,
    exit_for_signal,
)
from placement.api.cli.summary import UNPLACED_SHOWN, ProgressPrinter, fmt_num, format_summary
from placement.api.files import (
    LoadedInstance,
    check_writable,
    read_instance,
    read_solution,
    read_start,
    solution_document,
    write_json,
)
from placement.api.interrupt import run_cancellable
from placement.solver import (
    Backend,
    CancellationToken,
    InputError,
    MilpSolver,
    Result,
    SolutionStatus,
    SolveOptions,
    solve,
)

_SOLVED = (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE, SolutionStatus.INFEASIBLE)


def solve_settings(args: argparse.Namespace) -> dict[str, Any]:
    """SolveOptions keyword arguments from parsed options (plain values, picklable)."""
    return {
        "time_limit_s": args.time_limit,
        "backend": args.backend,
        "milp_solver": args.milp_solver,
        "threads": args.threads,
        "seed": args.seed,
        "relative_gap": args.gap,
        "deterministic": args.deterministic,
    }


def ignored_options(args: argparse.Namespace) -> list[str]:
    """What the user asked for that this run will not use, one line each (an option that only
    means something beside another one)."""
    out = []
    backend = getattr(args, "backend", Backend.AUTO.value)
    if getattr(args, "milp_solver", MilpSolver.HIGHS.value) != MilpSolver.HIGHS.value and (
        backend != Backend.MILP.value
    ):
        out.append(f"--milp-solver {args.milp_solver} is used only with --backend milp")
    if getattr(args, "gap", 0.0) and backend == Backend.GREEDY.value:
        out.append("--gap is ignored with --backend greedy (nothing is proved to stop on)")
    if not getattr(args, "server", None):
        given = [f for f in ("token_file", "ca", "cert", "key") if getattr(args, f, None)]
        for name in given:
            out.append(f"--{name.replace('_', '-')} is used only with --server")
    return out


def warn_ignored(args: argparse.Namespace) -> None:
    """Say, unless quiet, which options this run ignores (see :func:`ignored_options`)."""
    if not getattr(args, "quiet", False):
        for line in ignored_options(args):
            err(f"warning: {line}")


def cmd_solve(args: argparse.Namespace) -> int:
    """``placement solve``."""
    warn_ignored(args)
    loaded = read_instance(args.instance)
    start = read_start(args.start, loaded) if args.start else None
    if args.out:
        check_writable(args.out, inputs=(args.instance, args.start))
    if args.server:
        return _finish_solve(args, loaded, *_solve_remote(args, loaded, start))
    show_progress = not (args.quiet or args.json)
    token = CancellationToken()
    options = SolveOptions(
        **solve_settings(args),
        on_incumbent=ProgressPrinter() if show_progress else None,
        cancel=token,
    )
    if show_progress:
        err(
            f"solving {loaded.path} ({loaded.family_name}, backend {options.backend.value}, "
            f"time limit {fmt_num(float(options.time_limit_s))} s)"
        )

    def notice() -> None:
        if not args.quiet:
            err("interrupted: stopping, keeping the best solution so far (Ctrl-C again to abort)")

    result, interrupted = run_cancellable(
        lambda: solve(loaded.instance, options, start, f"solution {args.start}"),
        token,
        on_interrupt=notice,
    )
    return _finish_solve(args, loaded, result, interrupted)


def _solve_remote(
    args: argparse.Namespace, loaded: LoadedInstance, start: Any
) -> tuple[Result, int]:
    """Solve on ``--server`` through the streaming call, printing incumbents as they come;
    Ctrl-C or SIGTERM keeps the best streamed incumbent, as a local solve keeps its best
    solution."""
    # grpc and the client only with --server: start-up time of a local solve.
    from placement.api.cli.remote import solve_remote

    show_progress = not (args.quiet or args.json)
    banner = f"solving {loaded.path} on {args.server} (time limit {fmt_num(args.time_limit)} s)"

    def notice() -> None:
        if not args.quiet:
            err("interrupted: stopping, keeping the best solution so far (Ctrl-C again to abort)")

    printer = ProgressPrinter() if show_progress else None
    options = SolveOptions(**solve_settings(args))
    return solve_remote(
        args, loaded, options, printer, notice, banner if show_progress else None, start
    )


def _finish_solve(
    args: argparse.Namespace, loaded: LoadedInstance, result: Result, interrupted: int
) -> int:
    """Write and print the result; ``interrupted`` is the signal that stopped the solve (0:
    none), which sets the exit code once the solution is written."""
    document = None
    senses: tuple[str, ...] = ()
    if result.has_solution:
        document = solution_document(loaded, result.solution, result.unplaced)
        senses = result.objective_senses
    write_error: InputError | None = None
    if args.out:
        if document is not None:
            try:
                write_json(args.out, document)
            except InputError as exc:
                # Still show the result: the solve may have taken a long time.
                write_error = exc
        elif not args.quiet:
            err(f"no solution to write to {args.out}")

    if args.json:
        print(json.dumps(result.to_dict(document), indent=2))
    else:
        section = document[loaded.family_name] if document else None
        limit = None if args.all_unplaced else UNPLACED_SHOWN
        print(format_summary(loaded, result, section, senses, limit))
        if args.out and document is not None and write_error is None:
            print(f"{'solution':<12}{args.out}")
    sys.stdout.flush()
    if write_error is not None:
        err(f"error: {write_error}")
        return EXIT_USAGE
    if interrupted:
        return exit_for_signal(interrupted)
    return EXIT_OK if result.status in _SOLVED else EXIT_FAILED


# --- check ------------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    """``placement check``."""
    loaded = read_instance(args.instance)
    solution, instance_name = read_solution(args.solution, loaded)
    if instance_name and loaded.name and instance_name != loaded.name:
        err(
            f"warning: {args.solution} is for instance {instance_name!r}, "
            f"{loaded.path} is {loaded.name!r}"
        )
    report = loaded.family.check(loaded.instance, solution)
    if args.json:
        out = {
            "instance": loaded.path,
            "solution": args.solution,
            "family": loaded.family_name,
            "feasible": report.feasible,
            "violations": list(report.violations),
            "objective_terms": dict(report.terms),
            "senses": dict(zip(report.terms, report.senses, strict=True)),
        }
        print(json.dumps(out, indent=2))
    else:
        lines = [f"{'instance':<12}{loaded.display_name} ({loaded.family_name}) from {loaded.path}"]
        lines.append(f"{'solution':<12}{args.solution}")
        if report.feasible:
            lines.append(f"{'feasible':<12}yes")
        else:
            n = len(report.violations)
            lines.append(f"{'feasible':<12}no: {n} violation{'s' if n != 1 else ''}")
        width = max((len(k) for k in report.terms), default=0)
        for i, (name, value) in enumerate(report.terms.items()):
            label = "objective" if i == 0 else ""
            lines.append(f"{label:<12}{name:<{width}}  {fmt_num(value):>12}  {report.senses[i]}")
        if not report.feasible:
            lines.append("violations")
            lines.extend(f"  - {v}" for v in report.violations)
        print("\n".join(lines))
    return EXIT_OK if report.feasible else EXIT_FAILED
