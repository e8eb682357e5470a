"""``placement slurm schedule``: place a live Slurm cluster's held jobs (see
:mod:`placement.models.gpu.formats.slurm_live` for what is read, managed and applied)."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from typing import Any

from placement.api.cli.exits import EXIT_FAILED, EXIT_OK, ExitWith, err, exit_for_signal
from placement.api.interrupt import stop_requests
from placement.models.gpu.formats.slurm_live import (
    ClusterView,
    SlurmCommandError,
    apply,
    describe,
    plan,
    read_cluster,
)
from placement.solver import InputError, SolveOptions, get_family, solve

COMMAND_TIMEOUT_S = 60.0


def run_slurm(argv: list[str]) -> str:
    """One Slurm command with the environment's ``SLURM_CONF``; its stdout, or
    :class:`SlurmCommandError` with its first stderr line."""
    try:
        r = subprocess.run(
            argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SlurmCommandError(f"{argv[0]}: {exc}") from None
    if r.returncode:
        lines = (r.stderr or r.stdout).strip().splitlines()
        said = lines[-1] if lines else f"exit {r.returncode}"
        raise SlurmCommandError(f"{' '.join(argv[:3])}: {said}")
    return r.stdout


def _log(line: str) -> None:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    print(f"{stamp} {line}", flush=True)


def _solve(args: argparse.Namespace, view: ClusterView) -> tuple[Any, list[dict[str, Any]], str]:
    """Solve the view's instance here or on ``--server``: the solution (passed by the GPU
    family's checker, else None), the reasons of the unplaced jobs, and why there is none."""
    family = get_family("gpu")
    options = SolveOptions(time_limit_s=args.time_limit)
    if args.server:
        # grpc and the client only with --server: start-up time of a local run.
        import grpc

        from placement.api.cli.remote import connect

        try:
            with connect(args) as client:
                result = client.solve(view.instance, options)
        except grpc.RpcError as exc:
            return None, [], f"server {args.server}: {exc.code().name}: {exc.details()}"
    else:
        result = solve(view.instance, options)
    if not result.has_solution:
        return None, [], f"the solver found none ({result.message or result.status.value})"
    report = family.check(view.instance, result.solution)
    if not report.feasible:
        return None, [], f"the solution failed the checker: {'; '.join(report.violations[:2])}"
    unplaced = list(result.unplaced) or family.explain_unplaced(view.instance, result.solution)
    return result.solution, unplaced, ""


def cycle(args: argparse.Namespace) -> bool:
    """One cycle: read, solve, check, apply (or print the plan); False when reading the
    cluster or the solve failed (the jobs then stay held, saying so)."""
    try:
        view = read_cluster(run_slurm, tuple(args.partition or ()))
    except (SlurmCommandError, InputError) as exc:
        _log(f"reading the cluster failed, nothing changed: {exc}")
        return False
    for note in view.notes:
        _log(note)
    if not view.managed and not view.refused:
        _log("no held jobs to place")
        return True
    _log(
        f"{len(view.managed)} held job(s) to place, {len(view.refused)} refused; "
        f"{len(view.instance.nodes)} nodes"
    )
    solution, unplaced, why = _solve(args, view) if view.managed else (None, [], "")
    if why:
        _log(f"no placement this cycle: {why}")
    decisions = plan(view, solution, unplaced, why or "nothing solved")
    if args.dry_run:
        for line in describe(decisions):
            _log(f"dry run: {line}")
        _log("dry run: nothing changed")
        return not why
    log = apply(run_slurm, decisions, view)
    for line in log:
        _log(line)
    released = sum(1 for line in log if line.endswith(", released"))
    _log(f"cycle done: {released} released, {len(decisions) - released} kept held")
    return not why


def cmd_slurm_schedule(args: argparse.Namespace) -> int:
    """``placement slurm schedule``. In the loop, Ctrl-C, SIGTERM or SIGHUP stops it between
    cycles (a cycle under way finishes: no job is left with its nodes set but not
    released); a second signal stops it at once. Exit 128 + the signal's number."""
    if args.once or args.dry_run:
        return EXIT_OK if cycle(args) else EXIT_FAILED
    err(f"slurm schedule: a cycle every {args.interval:g} s (Ctrl-C or SIGTERM stops)")
    with stop_requests() as stop:
        while not stop.signum:
            start = time.monotonic()
            try:
                cycle(args)
            except ExitWith:
                _log("the cycle failed (see above); next one in the interval")
            except Exception as exc:  # noqa: BLE001 - one failed cycle must not stop the loop
                _log(f"the cycle failed: {type(exc).__name__}: {exc}; next one in the interval")
            sys.stdout.flush()
            stop.event.wait(max(0.0, args.interval - (time.monotonic() - start)))
    _log(f"stopped by {signal.Signals(stop.signum).name} between cycles")
    return exit_for_signal(stop.signum)


__all__ = ["cmd_slurm_schedule", "cycle", "run_slurm"]
