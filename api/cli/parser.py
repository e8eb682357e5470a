"""The ``placement`` argument parser: every command, its options and its help."""

from __future__ import annotations

import argparse
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from placement.api.argtypes import (
    add_parameter,
    limit_setting,
    name_list,
    non_negative_int,
    port,
    positive_int,
    positive_seconds,
    relative_gap,
    seed,
    seed_range,
    server_address,
    thread_count,
    time_limit,
)
from placement.api.cli.batch import cmd_batch
from placement.api.cli.bench import cmd_bench
from placement.api.cli.exits import EXIT_CODES, EXIT_USAGE
from placement.api.cli.files import (
    PLOT_SUFFIXES,
    cmd_export,
    cmd_generate,
    cmd_import,
    cmd_plot,
    exporters,
    generators,
    importers,
    plotters,
)
from placement.api.cli.jobs import STATES as JOB_STATES
from placement.api.cli.jobs import cmd_jobs
from placement.api.cli.serve import cmd_serve
from placement.api.cli.solve import cmd_check, cmd_solve
from placement.api.cli.summary import UNPLACED_SHOWN
from placement.solver import Backend, MilpSolver
from placement.solver.hooks import Exporter, Generator, Importer


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
        type=time_limit,
        default=10.0,
        metavar="S",
        help="wall-clock budget in seconds for the whole solve (default: 10)",
    )
    group.add_argument(
        "--threads",
        type=thread_count,
        default=0,
        metavar="N",
        help="worker threads of the exact backend; 0 = all cores (default: 0; batch: the "
        "cores shared among the worker processes)",
    )
    group.add_argument("--seed", type=seed, default=0, metavar="N", help="random seed (default: 0)")
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


def _version() -> str:
    try:
        return version("placement-solver")
    except PackageNotFoundError:
        return "unknown"


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``placement`` argument parser.

    ``generate``, ``import`` and ``plot`` are built from the families' declared hooks, which
    imports every family's generators and loaders; with ``command`` given, only that
    command's hooks are loaded (``placement solve`` need not import them). None: all.
    """

    def hooks(name: str) -> bool:
        return command is None or command == name

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
        "--start",
        metavar="SOLUTION.json",
        help="warm start: a solution file (or a --json result) of this or a similar instance;\n"
        "what the instance still admits of it, by name, is the first incumbent",
    )
    p.add_argument(
        "--all-unplaced",
        action="store_true",
        help=f"list every unplaced job in the summary (default: the first {UNPLACED_SHOWN})",
    )
    _server_options(p)
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
    for gen in generators().values() if hooks("generate") else ():
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
            "SIGTERM, SIGHUP or Ctrl-C: new calls get UNAVAILABLE; calls in progress get\n"
            "--shutdown-grace seconds to finish, then their best solution; jobs are kept;\n"
            "every worker is reaped (also when stopped during the start-up). --workers is\n"
            "at most min(8 x cores, available memory / 200 MiB).\n"
            "See docs/api.md."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("--host", help="address to bind (default: 127.0.0.1, or 0.0.0.0 with TLS)")
    p.add_argument("--port", type=port, default=50051, help="port (default: 50051; 0 = any)")
    p.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        metavar="N",
        help="solve worker processes (default: number of cores; at most min(8 x cores, "
        "available memory / 200 MiB))",
    )
    p.add_argument(
        "--queue",
        type=non_negative_int,
        default=64,
        metavar="N",
        help="solves that may wait for a worker before RESOURCE_EXHAUSTED (default: 64, "
        "at most 10000)",
    )
    p.add_argument("--tls-cert", metavar="CERT.pem", help="server certificate (PEM): TLS")
    p.add_argument("--tls-key", metavar="KEY.pem", help="server private key (PEM)")
    p.add_argument(
        "--client-ca", metavar="CA.pem", help="require client certificates signed by this CA"
    )
    p.add_argument(
        "--token-file",
        metavar="FILE",
        help="accepted bearer tokens, one per line; calls without one get UNAUTHENTICATED",
    )
    p.add_argument(
        "--allow-client",
        action="append",
        default=[],
        metavar="NAME",
        help="with --client-ca: only client certificates with this common name or DNS name "
        "(repeatable); others get PERMISSION_DENIED",
    )
    p.add_argument(
        "--db",
        metavar="PATH|URL",
        help="job store: an SQLite file (default: $XDG_STATE_HOME/placement/jobs.sqlite3; "
        "':memory:' keeps nothing), or postgresql://USER[:PASSWORD]@HOST:PORT/DB, a queue "
        "that several replicas share (docs/scale-out.md)",
    )
    p.add_argument(
        "--lease-seconds",
        type=positive_seconds,
        default=10.0,
        metavar="S",
        help="how long this replica's claim on a job lasts unrenewed (renewed every 0.25 s); "
        "a dead replica's jobs run elsewhere this much later (default: 10, at least 1)",
    )
    p.add_argument("--metrics-port", type=port, metavar="P", help="serve Prometheus /metrics")
    p.add_argument(
        "--default-time-limit",
        type=time_limit,
        default=10.0,
        metavar="S",
        help="solver time limit when a request gives none and has no deadline (default: 10)",
    )
    p.add_argument(
        "--max-time-limit",
        type=time_limit,
        default=3600.0,
        metavar="S",
        help="the most a request may ask for (default: 3600)",
    )
    p.add_argument(
        "--grace",
        type=positive_seconds,
        default=1.0,
        metavar="S",
        help="overrun allowed before the watchdog kills a solve (default: 1)",
    )
    p.add_argument(
        "--shutdown-grace",
        type=positive_seconds,
        default=5.0,
        metavar="S",
        help="at SIGTERM or Ctrl-C, how long solves of calls in progress may run on; then "
        "each call is answered with its best solution (default: 5)",
    )
    p.add_argument(
        "--retention",
        type=positive_seconds,
        default=7 * 24 * 3600.0,
        metavar="S",
        help="seconds finished jobs are kept (default: 604800, a week)",
    )
    p.add_argument(
        "--max-message-mib",
        type=positive_int,
        default=64,
        metavar="N",
        help="largest request or response in MiB (default: 64; at most 2047 and the memory "
        "available)",
    )
    p.add_argument(
        "--limit",
        type=limit_setting,
        action="append",
        default=[],
        metavar="NAME=N",
        help="per-instance size limit, repeatable: jobs, nodes, tasks, gpus, items (every "
        "other list), or the name of any list of the schema (defaults: jobs=100000 "
        "nodes=100000 tasks=100000 gpus=1000000 items=1000000)",
    )
    p.set_defaults(handler=cmd_serve)

    # jobs
    p = commands.add_parser(
        "jobs",
        help="asynchronous jobs on a server: submit, get, watch, cancel, list",
        description=(
            "The asynchronous jobs of a placement server (placement serve): submit an\n"
            "instance, read a job's state and result, follow its incumbents, cancel it,\n"
            "list jobs. Each subcommand takes --server and the TLS/token options of\n"
            "'solve --server'; --json prints pure JSON (watch: one object per line).\n"
            "An unknown job id, a bad instance or refused credentials: one line, exit 2."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    jobs = p.add_subparsers(
        title="subcommands",
        dest="jobs_command",
        metavar="SUBCOMMAND",
        required=True,
        parser_class=_Parser,
    )
    job_commands = {
        "submit": "queue an instance file as a job; prints the job id",
        "get": "a job's state, times and result (--out writes its solution file)",
        "watch": "follow a job: its state changes and incumbents until it finishes "
        "(exit 0 if it succeeded, 1 otherwise)",
        "cancel": "cancel a queued or running job (a running one keeps its best incumbent)",
        "list": "jobs, newest first",
    }
    for name, help_line in job_commands.items():
        j = jobs.add_parser(
            name,
            parents=[solve_options] if name == "submit" else [],
            help=help_line,
            description=help_line[0].upper() + help_line[1:] + ".",
            epilog=EXIT_CODES,
            formatter_class=fmt,
        )
        if name == "submit":
            j.add_argument("instance", metavar="INSTANCE", help="instance file (JSON)")
            start = j.add_mutually_exclusive_group()
            start.add_argument(
                "--start",
                metavar="SOLUTION.json",
                help="warm start from a solution file (or a --json result)",
            )
            start.add_argument(
                "--start-job",
                metavar="JOB_ID",
                help="warm start from the solution of a finished job on the server",
            )
        elif name != "list":
            j.add_argument("job_id", metavar="JOB_ID", help="the id submit printed")
        if name == "get":
            j.add_argument("--out", metavar="SOLUTION.json", help="write the job's solution file")
        if name == "list":
            j.add_argument("--state", choices=JOB_STATES, help="only jobs in this state")
            j.add_argument(
                "--limit",
                type=positive_int,
                default=50,
                metavar="N",
                help="at most N jobs (default: 50)",
            )
        j.add_argument("--json", action="store_true", help="print JSON instead of text")
        _server_options(j, required=True)
        j.set_defaults(handler=cmd_jobs, quiet=False)

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
        type=time_limit,
        metavar="S",
        help="time limit per solve in seconds (default: the suite's)",
    )
    p.add_argument(
        "--quick", action="store_true", help="tiny sizes, for CI: every code path, no figures"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="folder for the results (default: docs/benchmarks; with --quick: build/bench-quick)",
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
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a suite's own setting, e.g. --param sets=20 (placement bench --list shows them; "
        "the defaults are the full protocol)",
    )
    p.add_argument(
        "--trace",
        action="append",
        metavar="FILE",
        help="a pod list to replay instead of the suite's own, or variant:NAME (a variant of "
        "the FGD paper built from the default trace; variant:paper for all of them) "
        "(repeatable; suites that take traces: gpu-openb)",
    )
    p.add_argument(
        "--seeds",
        type=seed_range,
        metavar="A-B",
        help="the seeds A to B, or one seed A (suites that take seeds: gpu-openb)",
    )
    p.add_argument(
        "--modes",
        type=name_list,
        metavar="LIST",
        help="comma list of the modes to run, e.g. online,batch:64,defrag:0.05,bound "
        "(suites that take modes: gpu-openb; placement bench --list shows them)",
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
    for imp in importers().values() if hooks("import") else ():
        _instance_writer(formats, imp.format, f"{imp.help} ({imp.family})", imp, cmd_import)

    # export
    p = commands.add_parser(
        "export",
        help="write a solution as the objects of an orchestrator (e.g. Kubernetes Bindings)",
        description=(
            "Write a solution file, after the family's checker has accepted it, in another\n"
            "system's own format (for example a Kubernetes v1 List of Bindings and pod\n"
            "status patches). A solution the checker rejects: one line, exit 2."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    formats = p.add_subparsers(
        title="formats", dest="format", metavar="FORMAT", required=True, parser_class=_Parser
    )
    for exp in exporters().values() if hooks("export") else ():
        _solution_exporter(formats, exp)

    # slurm
    p = commands.add_parser(
        "slurm",
        help="place a live Slurm cluster's held jobs (placement slurm schedule)",
        description="Work with a live Slurm cluster through its own commands.",
        formatter_class=fmt,
    )
    slurm_commands = p.add_subparsers(
        title="subcommands", dest="slurm_command", metavar="SUBCOMMAND", required=True,
        parser_class=_Parser,
    )  # fmt: skip
    p = slurm_commands.add_parser(
        "schedule",
        help="place held pending jobs: ReqNodeList, then release",
        description=textwrap.dedent(
            """\
            Place a live Slurm cluster's held jobs with the GPU family's solver.

            Each cycle reads the cluster through Slurm's commands (scontrol -d show
            node -o: nodes, CPUs, memory, GRES, state and what running jobs use;
            scontrol show topology: the switch tree; scontrol show partition -o;
            scontrol show job -o: running, released and pending jobs), builds the
            GPU instance, solves it with the portfolio (or on --server), checks the
            solution with the family's checker, and applies it to the jobs it
            manages: the pending jobs held (Priority=0; sbatch -H, scontrol hold) in
            the partitions of --partition (default: all).

            A placed job gets ReqNodeList=NODES and Comment="placement: placed on
            NODES", then scontrol release. A job it cannot place stays held with the
            reason in its Comment: "placement: no_room: ...", "placement:
            infeasible_alone: ..." (it fits no empty cluster either), "placement:
            crowded_out: ...", or "placement: unsupported: ..." for what it does not
            support yet. A Slurm command that fails leaves the job held and says why
            in its Comment; the next cycle tries again. A released job no longer
            held is not managed again; until it starts, its nodes' share counts as
            used, so a second cycle never places twice.

            Honoured: -N k --gres=gpu[:TYPE]:g (k nodes of g GPUs each, a gang),
            --switches=1[@WAIT] (all nodes under one leaf switch; preferred only
            once WAIT has passed since submission), --exclusive (whole nodes), -c,
            --mem, --mem-per-cpu. Refused per job, with the reason in its Comment:
            array and heterogeneous jobs, dependencies, --constraint, --licenses,
            reservations, --exclude, a user's --nodelist, --contiguous, node-count
            ranges, several partitions, a partition not spanning every node,
            --gpus, --gpus-per-task, --cpus-per-gpu, --mem-per-gpu, other GRES,
            --switches above 1, --exclusive=user or =mcs.

            --once exits 1 when reading the cluster or the solve failed (the jobs
            stay held, saying so); the loop logs a failed cycle and goes on.

            Every Slurm command uses the environment's SLURM_CONF, as Slurm's own
            tools do. One log line per job, naming its id, on standard output.
            Run as root or SlurmUser (scontrol update and release need it).

            Examples:
              sbatch -H -N 2 --gres=gpu:4 --switches=1@10:00 train.sh
              placement slurm schedule --dry-run        # the plan; changes nothing
              placement slurm schedule --once           # one cycle
              placement slurm schedule --interval 30 --partition gpu
              squeue -t PD -o "%i %j %k"                # the kept jobs' reasons"""
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    cycle_group = p.add_mutually_exclusive_group()
    cycle_group.add_argument("--once", action="store_true", help="run one cycle and exit")
    cycle_group.add_argument(
        "--interval",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="without --once: a cycle every SECONDS (default: 60)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="one cycle that prints the plan and changes nothing",
    )
    p.add_argument(
        "--partition",
        type=name_list,
        metavar="P[,P...]",
        help="manage only the held jobs of these partitions (default: all)",
    )
    p.add_argument(
        "--time-limit",
        type=time_limit,
        default=10.0,
        metavar="S",
        help="the solve's wall-clock budget per cycle in seconds (default: 10)",
    )
    _server_options(p)
    p.set_defaults(handler=_slurm_schedule)

    # plot
    p = commands.add_parser(
        "plot",
        help="draw a solution (e.g. a Gantt chart of a schedule)",
        description=(
            "Draw a solution file of its instance as an image; the format follows the\n"
            f"suffix of --out ({', '.join(PLOT_SUFFIXES)}). Families that draw: "
            f"{', '.join(plotters() if hooks('plot') else ()) or 'none yet'}."
        ),
        epilog=EXIT_CODES,
        formatter_class=fmt,
    )
    p.add_argument("instance", metavar="INSTANCE", help="instance file (JSON)")
    p.add_argument("solution", metavar="SOLUTION", help="solution file (JSON)")
    p.add_argument("--out", metavar="FILE.png", required=True, help="image file to write")
    p.set_defaults(handler=cmd_plot)
    return parser


def _slurm_schedule(args: argparse.Namespace) -> int:
    # the gpu family's Slurm reader only for this command: start-up time of the others
    from placement.api.cli.slurm import cmd_slurm_schedule

    return cmd_slurm_schedule(args)


def _server_options(p: argparse.ArgumentParser, required: bool = False) -> None:
    """``--server`` and its TLS and token options (``solve`` and every ``jobs`` subcommand)."""
    title = "the server (placement serve)" if required else "solving on a server (placement serve)"
    remote = p.add_argument_group(title)
    remote.add_argument(
        "--server",
        type=server_address,
        metavar="HOST:PORT",
        required=required,
        help="the placement server"
        if required
        else "solve on this placement server instead of here",
    )
    remote.add_argument(
        "--token-file", metavar="FILE", help="bearer token for the server (first line of FILE)"
    )
    remote.add_argument("--ca", metavar="CA.pem", help="CA of the server certificate: use TLS")
    remote.add_argument("--cert", metavar="CERT.pem", help="client certificate (mutual TLS)")
    remote.add_argument("--key", metavar="KEY.pem", help="client key (mutual TLS)")


def _ray_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the solves as Ray tasks: 'auto' (a local Ray instance, or the cluster of "
        "$RAY_ADDRESS) or the cluster's HOST:PORT; needs the ray extra "
        "(pip install -e '.[ray]' in the checkout)",
    )


def _solution_exporter(subparsers: Any, hook: Exporter) -> None:
    """One ``export`` subcommand: SOLUTION, ``--instance``, the hook's arguments, ``--out``."""
    g = subparsers.add_parser(
        hook.format,
        help=f"{hook.help} ({hook.family})",
        description=textwrap.fill(hook.description, 79),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument("solution", metavar="SOLUTION", help="solution file (JSON)")
    g.add_argument(
        "--instance", metavar="INSTANCE", required=True, help="the solution's instance file"
    )
    for parameter in hook.parameters:
        add_parameter(g, parameter)
    g.add_argument("--out", metavar="FILE", default="-", help="file to write (default: stdout)")
    g.set_defaults(handler=cmd_export, hook=hook)


def _instance_writer(
    subparsers: Any,
    name: str,
    help_line: str,
    hook: Generator | Importer,
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
    for parameter in hook.parameters:
        add_parameter(g, parameter)
    g.add_argument(
        "--out", metavar="FILE", default="-", help="instance file to write (default: stdout)"
    )
    g.set_defaults(handler=handler, hook=hook)
