"""The ``placement`` command line: solve, check, batch, generate, import, plot, bench and serve.

Every command reads and writes the proto3 JSON form of the placement/v1 schema. A user error
(missing file, malformed JSON, a bad value, a bad option) is one line on stderr naming the
file and the JSON path of the bad field, and exit code 2; never a traceback. See
``docs/cli.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import textwrap
import threading
import traceback
from collections.abc import Sequence
from typing import Any, NoReturn

from placement.api import extensions
from placement.api.argtypes import (
    limit_setting,
    non_negative_int,
    port,
    positive_int,
    positive_seconds,
    relative_gap,
)
from placement.api.files import (
    LoadedInstance,
    check_writable,
    instance_document,
    placed_count,
    read_instance,
    read_solution,
    solution_document,
    write_json,
    write_text,
)
from placement.api.interrupt import run_cancellable
from placement.solver import (
    Backend,
    CancellationToken,
    Incumbent,
    InputError,
    MilpSolver,
    Result,
    SolutionStatus,
    SolveOptions,
    get_family,
    solve,
)

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

EXIT_CODES = """\
exit codes:
  0    success: solve found a checked solution or proved infeasibility; check found the
       solution feasible; batch solved every file; generate wrote the file
  1    solve found no solution; check found violations; batch had a failing file
  2    user error: missing file, malformed JSON, bad value, bad option (one line on stderr:
       "placement: error: FILE: json.path: got VALUE, expected WHAT")
  3    internal error (set PLACEMENT_DEBUG=1 to see the traceback)
  130  interrupted by Ctrl-C (solve still prints and writes the best solution it found)
"""

DEBUG_ENV = "PLACEMENT_DEBUG"
"""Set to a non-empty value to print the traceback of an internal error."""

UNPLACED_SHOWN = 20
"""Unplaced jobs listed in the solve summary unless --all-unplaced."""

_SOLVED = (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE, SolutionStatus.INFEASIBLE)


# --- small helpers --------------------------------------------------------------------------


class ExitWith(Exception):
    """Leave with an exit code (the message was already printed)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def _err(line: str) -> None:
    """One line on stderr, prefixed like every message of the tool."""
    print(f"placement: {line}", file=sys.stderr, flush=True)


def fmt_num(value: float | int | None) -> str:
    """A number for people: integers without ``.0``, others with up to 6 decimals."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value.is_integer():
            return str(int(value))
        if abs(value) < 1e-4:
            return f"{value:.3g}"
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return str(value)


def fmt_gap(gap: float | None) -> str:
    """A relative gap as a percentage."""
    return "-" if gap is None else f"{gap * 100:.2f}%"


# --- argument parsing -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line and exit code 2, like every user error."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"placement: error: {message} (see '{self.prog} --help')\n")
        sys.exit(EXIT_USAGE)


def _solve_options_parser() -> argparse.ArgumentParser:
    """The options shared by ``solve`` and ``batch`` (a parent parser)."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("solve options")
    group.add_argument(
        "--backend",
        choices=[b.value for b in Backend],
        default=Backend.AUTO.value,
        help="engine allowed to produce the solution: auto (greedy, then the family's exact "
        "backend: CP-SAT, or the MILP where the family prefers it), cpsat, milp, or greedy "
        "(heuristics only, nothing proved) (default: auto)",
    )
    group.add_argument(
        "--milp-solver",
        choices=[m.value for m in MilpSolver],
        default=MilpSolver.HIGHS.value,
        help="MILP solver when --backend milp (default: highs)",
    )
    group.add_argument(
        "--time-limit",
        type=positive_seconds,
        default=10.0,
        metavar="S",
        help="wall-clock budget in seconds for the whole solve (default: 10)",
    )
    group.add_argument(
        "--threads",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="worker threads of the exact backend; 0 = all cores (default: 0; batch: the "
        "cores shared among the worker processes)",
    )
    group.add_argument("--seed", type=int, default=0, metavar="N", help="random seed (default: 0)")
    group.add_argument(
        "--gap",
        type=relative_gap,
        default=0.0,
        metavar="G",
        help="stop once the relative gap on the primary objective is at most G, in [0, 1) "
        "(default: 0, i.e. prove optimality)",
    )
    group.add_argument(
        "--deterministic",
        action="store_true",
        help="reproducible search: one search worker, fixed seed, canonical input order",
    )
    return parent


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


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("placement-solver")
    except PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The full ``placement`` argument parser."""
    fmt = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="placement",
        description=(
            "Placement solver: exact and heuristic placement of jobs onto clusters.\n\n"
            "Instance and solution files are the JSON form of placement.v1.Instance and\n"
            'placement.v1.Solution; the family section key (e.g. "gpu") names the problem.'
        ),
        epilog=EXIT_CODES + "\nSee 'placement COMMAND --help' and docs/cli.md.",
        formatter_class=fmt,
    )
    parser.add_argument("--version", action="version", version=f"placement {_version()}")
    commands = parser.add_subparsers(
        title="commands", dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    solve_options = _solve_options_parser()

    # solve
    p = commands.add_parser(
        "solve",
        parents=[solve_options],
        help="solve one instance file",
        description=(
            "Solve one instance file and print a summary: status, stop reason, every\n"
            "objective tier, bound, gap, time per phase, the backend that produced the\n"
            "solution, and why each unplaced job is unplaced. Improving solutions are\n"
            "reported on stderr as they are found. Ctrl-C stops the solve and still prints\n"
            "(and writes) the best solution found; a second Ctrl-C aborts."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("instance", metavar="INSTANCE", help="instance file (JSON)")
    p.add_argument(
        "--out", metavar="SOLUTION.json", help="write the solution file (placement.v1.Solution)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the full result as JSON instead of the summary (no progress on stderr)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--all-unplaced",
        action="store_true",
        help=f"list every unplaced job in the summary (default: the first {UNPLACED_SHOWN})",
    )
    remote = p.add_argument_group("solving on a server (placement serve)")
    remote.add_argument(
        "--server", metavar="HOST:PORT", help="solve on this placement server instead of here"
    )
    remote.add_argument(
        "--token-file", metavar="FILE", help="bearer token for the server (first line of FILE)"
    )
    remote.add_argument("--ca", metavar="CA.pem", help="CA of the server certificate: use TLS")
    remote.add_argument("--cert", metavar="CERT.pem", help="client certificate (mutual TLS)")
    remote.add_argument("--key", metavar="KEY.pem", help="client key (mutual TLS)")
    p.set_defaults(handler=cmd_solve)

    # check
    p = commands.add_parser(
        "check",
        help="check a solution file against its instance",
        description=(
            "Check a solution file with the family's independent checker: list every\n"
            "violation and print the objective tiers. Exit 0 if feasible, 1 if not."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("instance", metavar="INSTANCE", help="instance file (JSON)")
    p.add_argument("solution", metavar="SOLUTION", help="solution file (JSON)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(handler=cmd_check)

    # batch
    p = commands.add_parser(
        "batch",
        parents=[solve_options],
        help="solve many instance files in parallel, one CSV row each",
        description=(
            "Solve many instance files in parallel worker processes and write one CSV row\n"
            "per file (columns: file, family, instance, status, stop_reason, objective,\n"
            "bound, gap, backend, time_s, placed, unplaced, objective_terms, solution_file,\n"
            "message, error). A file that cannot be read or solved gets a row with\n"
            "status 'error' and the reason; it never stops the others. Exit 0 if every\n"
            "file was solved, 1 otherwise. Ctrl-C stops the running solves (their best\n"
            "solutions are kept), skips the rest and still writes the CSV."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("instances", nargs="+", metavar="INSTANCE", help="instance files (JSON)")
    p.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=None,
        metavar="N",
        help="worker processes (default: number of cores, at most one per file)",
    )
    p.add_argument(
        "--out", metavar="results.csv", help="write the CSV here (default: standard output)"
    )
    p.add_argument(
        "--solutions",
        metavar="DIR",
        help="also write each solution to DIR/<instance stem>.solution.json",
    )
    p.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar or failure lines on stderr"
    )
    _ray_argument(p)
    p.set_defaults(handler=cmd_batch)

    # generate
    p = commands.add_parser(
        "generate",
        help="write a seeded synthetic instance file",
        description="Write a seeded synthetic instance of a family; same options, same file.",
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    families = p.add_subparsers(
        title="families", dest="family", metavar="FAMILY", required=True, parser_class=_Parser
    )
    extensions.load()
    for gen in extensions.GENERATORS.values():
        _instance_writer(families, gen.family, gen.help, gen, cmd_generate)

    # serve
    p = commands.add_parser(
        "serve",
        help="run the gRPC service (placement.v1.PlacementSolver)",
        description=(
            "Run the gRPC service: Solve, SolveStream, Check and asynchronous jobs, with\n"
            "health and reflection. Solves run in warm worker processes started before the\n"
            "server; a watchdog kills a solve that overruns its deadline by more than the\n"
            "grace period. Plaintext binds to 127.0.0.1 unless --host says otherwise; with\n"
            "--tls-cert/--tls-key it binds to 0.0.0.0. One JSON log line per call on stderr.\n"
            "SIGTERM or Ctrl-C: stop taking calls, finish those in progress, keep jobs.\n"
            "See docs/api.md."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("--host", help="address to bind (default: 127.0.0.1, or 0.0.0.0 with TLS)")
    p.add_argument("--port", type=port, default=50051, help="port (default: 50051; 0 = any)")
    p.add_argument(
        "--workers", type=positive_int, default=None, metavar="N",
        help="solve worker processes (default: number of cores)",
    )
    p.add_argument(
        "--queue", type=non_negative_int, default=64, metavar="N",
        help="solves that may wait for a worker before RESOURCE_EXHAUSTED (default: 64)",
    )
    p.add_argument("--tls-cert", metavar="CERT.pem", help="server certificate (PEM): TLS")
    p.add_argument("--tls-key", metavar="KEY.pem", help="server private key (PEM)")
    p.add_argument(
        "--client-ca", metavar="CA.pem", help="require client certificates signed by this CA"
    )
    p.add_argument(
        "--token-file", metavar="FILE",
        help="accepted bearer tokens, one per line; calls without one get UNAUTHENTICATED",
    )
    p.add_argument(
        "--allow-client", action="append", default=[], metavar="NAME",
        help="with --client-ca: only client certificates with this common name or DNS name "
        "(repeatable); others get PERMISSION_DENIED",
    )
    p.add_argument(
        "--db", metavar="PATH",
        help="SQLite job store (default: $XDG_STATE_HOME/placement/jobs.sqlite3; "
        "':memory:' keeps nothing)",
    )
    p.add_argument("--metrics-port", type=port, metavar="P", help="serve Prometheus /metrics")
    p.add_argument(
        "--default-time-limit", type=positive_seconds, default=10.0, metavar="S",
        help="solver time limit when a request gives none and has no deadline (default: 10)",
    )
    p.add_argument(
        "--max-time-limit", type=positive_seconds, default=3600.0, metavar="S",
        help="the most a request may ask for (default: 3600)",
    )
    p.add_argument(
        "--grace", type=positive_seconds, default=1.0, metavar="S",
        help="overrun allowed before the watchdog kills a solve (default: 1)",
    )
    p.add_argument(
        "--retention", type=positive_seconds, default=7 * 24 * 3600.0, metavar="S",
        help="seconds finished jobs are kept (default: 604800, a week)",
    )
    p.add_argument(
        "--max-message-mib", type=positive_int, default=64, metavar="N",
        help="largest request or response in MiB (default: 64)",
    )
    p.add_argument(
        "--limit", type=limit_setting, action="append", default=[], metavar="NAME=N",
        help="per-instance size limit, repeatable: jobs, nodes, tasks, gpus, items (any "
        "other list) (defaults: jobs=100000 nodes=100000 tasks=100000 gpus=1000000 "
        "items=1000000)",
    )
    p.set_defaults(handler=cmd_serve)

    # bench
    p = commands.add_parser(
        "bench",
        help="run a benchmark suite (placement bench --list)",
        description=(
            "Run a registered benchmark suite: its cases in parallel worker processes (or on\n"
            "Ray), each solution re-checked by the family's independent checker. Writes\n"
            "OUT/SUITE.csv as cases finish (an interrupted run keeps them), then OUT/SUITE.md\n"
            "(the command that reproduces it, the machine, the count of invalid solutions,\n"
            "the tables) and the suite's plots. 'all' runs every suite; a suite whose public\n"
            "data is missing is then skipped with a message. Exit 0 if every case ran and\n"
            "no solution was invalid, 1 otherwise."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("suites", nargs="*", metavar="SUITE", help="suite names, or 'all'")
    p.add_argument("--list", action="store_true", help="list the suites and exit")
    p.add_argument(
        "--time-limit",
        type=positive_seconds,
        metavar="S",
        help="time limit per solve in seconds (default: the suite's)",
    )
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, for CI: every code path, no figures"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="folder for the results (default: docs/benchmarks; with --quick: "
        "build/bench-quick)",
    )
    p.add_argument(
        "--jobs", "-j", type=positive_int, default=1, metavar="N", help="cases at once (default: 1)"
    )
    p.add_argument(
        "--data",
        metavar="DIR",
        help="root of the public benchmark data (default: $PLACEMENT_BENCH_DATA, else "
        "../shared/benchmarks)",
    )
    p.add_argument(
        "--quiet", "-q", action="store_true", help="no progress bar; only the summary lines"
    )
    _ray_argument(p)
    p.set_defaults(handler=cmd_bench)

    # import
    p = commands.add_parser(
        "import",
        help="convert a public benchmark file into an instance file",
        description=(
            "Read a benchmark in its public format (a trace, a task graph, a network, ...)\n"
            "and write the instance file (placement.v1.Instance JSON)."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    formats = p.add_subparsers(
        title="formats", dest="format", metavar="FORMAT", required=True, parser_class=_Parser
    )
    for imp in extensions.IMPORTERS.values():
        _instance_writer(formats, imp.format, f"{imp.help} ({imp.family})", imp, cmd_import)

    # plot
    p = commands.add_parser(
        "plot",
        help="draw a solution (e.g. a Gantt chart of a schedule)",
        description=(
            "Draw a solution file of its instance as an image; the format follows the\n"
            f"suffix of --out (.png, .svg, .pdf). Families that draw: "
            f"{', '.join(extensions.PLOTTERS) or 'none yet'}."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("instance", metavar="INSTANCE", help="instance file (JSON)")
    p.add_argument("solution", metavar="SOLUTION", help="solution file (JSON)")
    p.add_argument("--out", metavar="FILE.png", required=True, help="image file to write")
    p.set_defaults(handler=cmd_plot)
    return parser


def _ray_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the solves as Ray tasks: 'auto' (a local Ray instance, or the cluster of "
        "$RAY_ADDRESS) or the cluster's HOST:PORT; needs the ray extra "
        "(pip install 'placement-solver[ray]')",
    )


def _instance_writer(
    subparsers: Any,
    name: str,
    help_line: str,
    hook: extensions.Generator | extensions.Importer,
    handler: Any,
) -> None:
    """One ``generate`` or ``import`` subcommand: the hook's own arguments, plus ``--out``."""
    g = subparsers.add_parser(
        name,
        help=help_line,
        # The raw formatter keeps the exit-code table; wrap the paragraph by hand.
        description=textwrap.fill(hook.description, 79),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    hook.add_arguments(g)
    g.add_argument(
        "--out", metavar="FILE", default="-", help="instance file to write (default: stdout)"
    )
    g.set_defaults(handler=handler)


# --- solve ------------------------------------------------------------------------------------


class ProgressPrinter:
    """Prints each improving incumbent on stderr (called from solver threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, inc: Incumbent) -> None:
        parts = [f"{inc.time_s:8.2f}s", f"objective {fmt_num(inc.objective)}"]
        if inc.bound is not None:
            parts.append(f"bound {fmt_num(inc.bound)}")
        if inc.gap is not None:
            parts.append(f"gap {fmt_gap(inc.gap)}")
        parts.append(inc.source)
        with self._lock:
            print("  " + "  ".join(parts), file=sys.stderr, flush=True)


def format_summary(
    loaded: LoadedInstance,
    result: Result,
    section: dict[str, Any] | None,
    senses: Sequence[str] = (),
    max_unplaced: int | None = None,
) -> str:
    """The human summary of a solve; at most ``max_unplaced`` unplaced jobs (None: all)."""
    lines: list[str] = []

    def row(label: str, text: str) -> None:
        lines.append(f"{label:<12}{text}")

    row("instance", f"{loaded.display_name} ({loaded.family_name}) from {loaded.path}")
    row("status", result.status.value)
    row("stop reason", result.stop_reason.value)
    if result.objective_terms:
        width = max(len(k) for k in result.objective_terms)
        for i, (name, value) in enumerate(result.objective_terms.items()):
            sense = senses[i] if i < len(senses) else ""
            label = "objective" if i == 0 else ""
            row(label, f"{name:<{width}}  {fmt_num(value):>12}  {sense}".rstrip())
    else:
        row("objective", "-")
    row("bound", fmt_num(result.bound))
    row("gap", fmt_gap(result.gap))
    row("backend", result.backend or "-")
    phases = {k: v for k, v in result.phase_times_s.items() if k != "total"}
    detail = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
    row(
        "time",
        f"{result.phase_times_s.get('total', 0.0):.2f} s" + (f" ({detail})" if detail else ""),
    )
    if result.has_solution:
        placed = placed_count(section)
        if placed is not None:
            row("placed", f"{placed} of {placed + len(result.unplaced)}")
        if result.unplaced:
            kinds: dict[str, int] = {}
            for item in result.unplaced:
                kinds[item.get("kind", "?")] = kinds.get(item.get("kind", "?"), 0) + 1
            by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            row("unplaced", f"{len(result.unplaced)} ({by_kind})")
            shown = result.unplaced if max_unplaced is None else result.unplaced[:max_unplaced]
            for item in shown:
                what = item.get("job") or item.get("name") or "?"
                row("", f"{what} ({item.get('kind', '?')}): {item.get('message', '')}")
            if len(shown) < len(result.unplaced):
                row(
                    "",
                    f"... {len(result.unplaced) - len(shown)} more (--all-unplaced lists them; "
                    "the solution file and --json have every reason)",
                )
    if result.message:
        row("note", result.message)
    for backend, error in result.backend_errors.items():
        if error not in result.message:
            row("note", f"{backend} failed: {error}")
    return "\n".join(lines)


def cmd_solve(args: argparse.Namespace) -> int:
    """``placement solve``."""
    loaded = read_instance(args.instance)
    if args.out:
        check_writable(args.out)
    if args.server:
        return _finish_solve(args, loaded, *_solve_remote(args, loaded))
    show_progress = not (args.quiet or args.json)
    token = CancellationToken()
    options = SolveOptions(
        **solve_settings(args),
        on_incumbent=ProgressPrinter() if show_progress else None,
        cancel=token,
    )
    if show_progress:
        _err(
            f"solving {loaded.path} ({loaded.family_name}, backend {options.backend.value}, "
            f"time limit {fmt_num(float(options.time_limit_s))} s)"
        )

    def notice() -> None:
        if not args.quiet:
            _err("interrupted: stopping, keeping the best solution so far (Ctrl-C again to abort)")

    result, interrupted = run_cancellable(
        lambda: solve(loaded.instance, options), token, on_interrupt=notice
    )
    return _finish_solve(args, loaded, result, interrupted)


def _solve_remote(args: argparse.Namespace, loaded: LoadedInstance) -> tuple[Result, bool]:
    """Solve on ``--server`` through the streaming call, printing incumbents as they come."""
    import grpc

    from placement.api.client import Client, bad_fields, incumbent_of, to_result

    token = None
    if args.token_file:
        try:
            with open(args.token_file) as fh:
                token = fh.readline().strip()
        except OSError as exc:
            raise InputError.single(
                "--token-file", args.token_file, f"a readable file ({exc.strerror})"
            ) from None
    show_progress = not (args.quiet or args.json)
    printer = ProgressPrinter() if show_progress else None
    options = SolveOptions(**solve_settings(args))
    if show_progress:
        _err(f"solving {loaded.path} on {args.server} (time limit {fmt_num(args.time_limit)} s)")
    with Client(args.server, token=token, ca=args.ca, cert=args.cert, key=args.key) as client:
        stream = client.solve_stream(loaded.instance, options)
        response = None
        try:
            for event in stream:
                if event.HasField("incumbent") and printer is not None:
                    printer(incumbent_of(event.incumbent))
                elif event.HasField("result"):
                    response = event.result
        except KeyboardInterrupt:
            stream.cancel()
            raise
        except grpc.RpcError as exc:
            fields = bad_fields(exc)
            detail = f" (fields: {', '.join(fields)})" if fields else ""
            code = exc.code()
            if code == grpc.StatusCode.INVALID_ARGUMENT:
                raise InputError.single("", args.server, f"{exc.details()}{detail}") from None
            _err(f"error: server {args.server}: {code.name}: {exc.details()}{detail}")
            raise ExitWith(EXIT_FAILED) from None
    if response is None:
        raise RuntimeError("the server ended the stream without a result")
    return to_result(response, loaded.family, loaded.instance), False


def _finish_solve(
    args: argparse.Namespace, loaded: LoadedInstance, result: Result, interrupted: bool
) -> int:
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
            _err(f"no solution to write to {args.out}")

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
        _err(f"error: {write_error}")
        return EXIT_USAGE
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.status in _SOLVED else EXIT_FAILED


# --- check ------------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    """``placement check``."""
    loaded = read_instance(args.instance)
    solution, instance_name = read_solution(args.solution, loaded)
    if instance_name and loaded.name and instance_name != loaded.name:
        _err(
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


# --- batch ------------------------------------------------------------------------------------


def cmd_batch(args: argparse.Namespace) -> int:
    """``placement batch``."""
    import csv
    import io

    from placement.api.batch import COLUMNS, run_batch

    if args.out:
        check_writable(args.out)
    if args.solutions and not os.path.isdir(args.solutions):
        raise InputError.single("", args.solutions, "an existing folder", file=args.solutions)
    cores = os.cpu_count() or 1
    jobs = min(args.jobs or cores, len(args.instances))
    settings = solve_settings(args)
    if settings["threads"] == 0:
        # Share the cores among the workers instead of every worker taking all of them.
        settings["threads"] = max(1, cores // jobs)
    outcome = run_batch(
        args.instances,
        settings,
        jobs=jobs,
        solution_dir=args.solutions,
        progress=not args.quiet,
        ray=args.ray,
    )
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(outcome.rows)
    if args.out:
        write_text(args.out, buffer.getvalue())
    else:
        sys.stdout.write(buffer.getvalue())
        sys.stdout.flush()
    if not args.quiet:
        skipped = sum(1 for r in outcome.rows if r["status"] == "skipped")
        solved = len(outcome.rows) - outcome.failed
        counts = f"{solved} of {len(outcome.rows)} solved, {outcome.failed - skipped} failed"
        if skipped:
            counts += f", {skipped} skipped (interrupted)"
        where = f"; results in {args.out}" if args.out else ""
        _err(f"batch: {counts}{where}")
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if outcome.failed else EXIT_OK


# --- bench ------------------------------------------------------------------------------------


def cmd_bench(args: argparse.Namespace) -> int:
    """``placement bench``."""
    from pathlib import Path

    from placement.api.bench import BenchConfig, command_line, data_root, run_suite, suites

    registered = suites()
    if args.list or not args.suites:
        width = max(len(n) for n in registered)
        for name, suite in registered.items():
            needs = f" [data: {suite.data}]" if suite.data else ""
            print(f"{name:<{width}}  {suite.help}{needs}")
        return EXIT_OK
    names = list(registered) if args.suites == ["all"] else args.suites
    for name in names:
        if name not in registered:
            raise InputError.single(
                "SUITE", name, "a registered suite ('placement bench --list') or 'all'"
            )
    if args.ray:
        from placement.api.parallel import connect_ray

        connect_ray(args.ray, args.jobs)  # fail early and clearly, before any case runs
    out = Path(args.out or ("build/bench-quick" if args.quick else "docs/benchmarks"))
    root = data_root(args.data)
    skip_missing = args.suites == ["all"]
    code = EXIT_OK
    for name in names:
        suite = registered[name]
        if skip_missing and suite.data and not (root / suite.data).is_dir():
            _err(f"bench {name}: skipped: its public data is not at {root / suite.data}")
            continue
        argv = ["bench", name]
        if args.time_limit is not None:
            argv += ["--time-limit", f"{args.time_limit:g}"]
        if args.quick:
            argv.append("--quick")
        if args.jobs != 1:
            argv += ["--jobs", str(args.jobs)]
        if args.ray:
            argv += ["--ray", args.ray]
        limit = args.time_limit
        if limit is None:
            limit = suite.quick_time_limit_s if args.quick else suite.time_limit_s
        config = BenchConfig(
            suite=name,
            time_limit_s=limit,
            quick=args.quick,
            out=out,
            data=root,
            jobs=args.jobs,
            ray=args.ray,
            command=command_line(argv),
        )
        outcome = run_suite(suite, config, progress=not args.quiet)
        state = "interrupted" if outcome.interrupted else "done"
        _err(
            f"bench {name}: {state}: {outcome.finished} of {outcome.cases} cases, "
            f"{len(outcome.failed)} failed, {outcome.invalid} invalid solutions; "
            f"{outcome.md_path} and {outcome.csv_path}"
        )
        _err(f"bench {name}: reproduce with: {config.command}")
        if outcome.interrupted:
            return EXIT_INTERRUPTED
        if outcome.failed or outcome.invalid:
            code = EXIT_FAILED
    return code


# --- generate ---------------------------------------------------------------------------------


def cmd_generate(args: argparse.Namespace) -> int:
    """``placement generate FAMILY``."""
    generator = extensions.GENERATORS[args.family]
    if args.out != "-":
        check_writable(args.out)
    return _write_instance(generator.family, generator.build(args), args.out)


def _write_instance(family_name: str, instance: Any, out: str) -> int:
    document = instance_document(get_family(family_name), instance)
    if out == "-":
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        write_json(out, document)
        _err(f"wrote {out}")
    return EXIT_OK


# --- serve ----------------------------------------------------------------------------------


def cmd_serve(args: argparse.Namespace) -> int:
    """``placement serve``."""
    from placement.api.server.app import read_tokens, serve
    from placement.api.server.config import DEFAULT_LIMITS, ServerConfig, default_db_path

    tokens: tuple[str, ...] = ()
    if args.token_file:
        try:
            tokens = read_tokens(args.token_file)
        except (OSError, ValueError) as exc:
            raise InputError.single(
                "--token-file", args.token_file, f"a token file ({exc})"
            ) from None
    limits = dict(DEFAULT_LIMITS)
    limits.update(dict(args.limit))
    config = ServerConfig(
        host=args.host,
        port=args.port,
        workers=args.workers or max(1, os.cpu_count() or 1),
        max_queue=args.queue,
        default_time_limit_s=args.default_time_limit,
        max_time_limit_s=args.max_time_limit,
        grace_s=args.grace,
        max_message_bytes=args.max_message_mib * 1024 * 1024,
        limits=limits,
        db_path=args.db or str(default_db_path()),
        retention_s=args.retention,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        client_ca=args.client_ca,
        allowed_clients=tuple(args.allow_client),
        tokens=tokens,
        metrics_port=args.metrics_port,
    )
    problems = config.validate()
    if problems:
        raise InputError.single("", "; ".join(problems), "valid server settings")
    _configure_server_logging()
    from placement.api.server.jobs import JobStoreError

    try:
        return serve(config)
    except JobStoreError as exc:
        raise InputError.single("--db", config.db_path, f"a usable job database ({exc})") from None
    except OSError as exc:
        raise InputError.single(
            "--port", f"{config.bind_host}:{config.port}", f"an address to listen on ({exc})"
        ) from None


def _configure_server_logging() -> None:
    """Access log: JSON lines on stderr; other messages as ``placement: level: ...``."""
    access = logging.getLogger("placement.access")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    access.handlers[:] = [handler]
    access.setLevel(logging.INFO)
    access.propagate = False


# --- import -----------------------------------------------------------------------------------


def cmd_import(args: argparse.Namespace) -> int:
    """``placement import FORMAT``."""
    importer = extensions.IMPORTERS[args.format]
    if args.out != "-":
        check_writable(args.out)
    return _write_instance(importer.family, importer.build(args), args.out)


# --- plot -------------------------------------------------------------------------------------


def cmd_plot(args: argparse.Namespace) -> int:
    """``placement plot INSTANCE SOLUTION --out FILE``."""
    loaded = read_instance(args.instance)
    plotter = extensions.PLOTTERS.get(loaded.family_name)
    if plotter is None:
        raise InputError.single(
            "family",
            loaded.family_name,
            f"a family that can be drawn: {', '.join(extensions.PLOTTERS) or 'none yet'}",
            file=args.instance,
        )
    solution, _ = read_solution(args.solution, loaded)
    check_writable(args.out)
    plotter.draw(loaded.instance, solution, args.out)
    _err(f"wrote {args.out}")
    return EXIT_OK


# --- entry point ------------------------------------------------------------------------------


class _LineFormatter(logging.Formatter):
    """Log records as ``placement: warning: ...`` lines, like the tool's other messages."""

    def format(self, record: logging.LogRecord) -> str:
        return f"placement: {record.levelname.lower()}: {record.getMessage()}"


def _configure_logging(quiet: bool) -> None:
    """Library warnings (e.g. a failed backend) as one line each; none when quiet.

    What they say is also in the result's ``message``, so --quiet and --json lose nothing.
    """
    logger = logging.getLogger("placement")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LineFormatter())
    logger.handlers[:] = [handler]
    logger.propagate = False
    if os.environ.get(DEBUG_ENV):
        logger.setLevel(logging.DEBUG)
    else:
        logger.setLevel(logging.ERROR if quiet else logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code.

    Parameters
    ----------
    argv:
        Arguments without the program name; ``sys.argv[1:]`` when None.
    """
    try:
        args = build_parser().parse_args(argv)
        _configure_logging(getattr(args, "quiet", False) or getattr(args, "json", False))
        return int(args.handler(args))
    except InputError as exc:
        _err(f"error: {exc}")
        return EXIT_USAGE
    except ExitWith as exc:
        return exc.code
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): silence the flush at exit, as the docs advise.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, exit 3
        _err(f"internal error: {type(exc).__name__}: {exc}")
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        else:
            _err(f"(set {DEBUG_ENV}=1 to see the traceback; please report it)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
