"""Reaching a placement server from the command line: ``--server``, ``--token-file``,
``--ca``, ``--cert``, ``--key`` (shared by ``solve --server`` and ``placement jobs``), and the
one-line messages of a failed call."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

# grpc and the client: this module is imported only by commands that talk to a server.
import grpc

from placement.api.cli.exits import EXIT_FAILED, EXIT_USAGE, ExitWith, err
from placement.api.client import Client, bad_fields, incumbent_of, to_result
from placement.api.files import LoadedInstance
from placement.api.interrupt import run_cancellable
from placement.api.server import tls
from placement.solver import CancellationToken, Result, SolutionStatus, SolveOptions, StopReason
from placement.solver.family import Family
from placement.solver.result import Incumbent, relative_gap

CLIENT_OPTION_NAMES = {"ca": "--ca", "cert": "--cert", "key": "--key"}


def connect(args: argparse.Namespace) -> Client:
    """A :class:`Client` of ``args.server``; every TLS and token file is checked first (an
    InputError naming the option and the file: exit 2, never a gRPC core abort)."""
    token = None
    if args.token_file:
        token = tls.read_token_lines("--token-file", args.token_file)[0]
    return Client(
        args.server,
        token=token,
        ca=args.ca,
        cert=args.cert,
        key=args.key,
        option_names=CLIENT_OPTION_NAMES,
    )


def call_failed(server: str, exc: grpc.RpcError) -> ExitWith:
    """Print the one line of a failed call; the exit to raise: 2 for what the user can fix
    (INVALID_ARGUMENT, NOT_FOUND, UNAUTHENTICATED, PERMISSION_DENIED), 1 otherwise."""
    fields = bad_fields(exc)
    detail = f" (fields: {', '.join(fields)})" if fields else ""
    code = exc.code()
    err(f"error: server {server}: {code.name}: {exc.details()}{detail}")
    user = (
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
    )
    return ExitWith(EXIT_USAGE if code in user else EXIT_FAILED)


__all__ = ["call_failed", "connect", "solve_remote"]


def solve_remote(
    args: argparse.Namespace,
    loaded: LoadedInstance,
    options: SolveOptions,
    on_incumbent: Callable[[Incumbent], None] | None,
    on_interrupt: Callable[[], None] | None,
    banner: str | None = None,
    start: Any = None,
) -> tuple[Result, int]:
    """Solve on ``args.server`` through the streaming call. Ctrl-C (and SIGTERM, SIGHUP:
    the second value is the signal, 0 for none) behaves as for a local
    solve: the first one stops the call and keeps the best incumbent streamed so far
    (re-checked here by the family's checker); a second one aborts. ``banner`` is printed
    once the TLS and token files have passed their checks. ``start``: a warm start's
    ``placement.v1.Solution``, or None."""
    family, instance = loaded.family, loaded.instance
    token = CancellationToken()
    best: list[Any] = []
    with connect(args) as client:
        if banner is not None:
            err(banner)
        stream = client.solve_stream(instance, options, start=start)
        token.add_callback(stream.cancel)

        def receive() -> Any:
            try:
                for event in stream:
                    if event.HasField("result"):
                        return event.result
                    inc = event.incumbent
                    if inc.HasField("solution"):
                        best[:] = [inc]
                    if on_incumbent is not None:
                        on_incumbent(incumbent_of(inc))
            except grpc.RpcError as exc:
                if token.cancelled and exc.code() == grpc.StatusCode.CANCELLED:
                    return None
                raise
            return None

        try:
            response, interrupted = run_cancellable(receive, token, on_interrupt=on_interrupt)
        except grpc.RpcError as exc:
            raise call_failed(args.server, exc) from None
    if response is not None:
        return to_result(response, family, instance), interrupted
    if not interrupted:
        raise RuntimeError("the server ended the stream without a result")
    return _interrupted_result(family, instance, best[0] if best else None), interrupted


def _interrupted_result(family: Family, instance: Any, inc: Any | None) -> Result:
    """The result of a stream stopped by Ctrl-C: its best incumbent, if it passes the checker."""
    empty = Result(
        family=family.name,
        status=SolutionStatus.NO_SOLUTION,
        stop_reason=StopReason.CANCELLED,
        solution=None,
        objective=None,
        objective_terms={},
        sense=family.objective_sense(instance),
        bound=None,
        gap=None,
        backend=None,
        phase_times_s={},
        history=[],
        message="interrupted before the server sent a solution",
    )
    if inc is None:
        return empty
    solution = family.solution_from_message(instance, getattr(inc.solution, family.name))
    report = family.check(instance, solution)
    if not report.feasible:
        return replace(
            empty,
            message="interrupted; the best incumbent the server sent failed the checker: "
            + "; ".join(report.violations[:3]),
        )
    # Streamed incumbents carry no reasons for unplaced work: explained here, as locally.
    unplaced = family.explain_unplaced(instance, solution)
    bound = inc.bound if inc.HasField("bound") else None
    return Result(
        family=family.name,
        status=SolutionStatus.FEASIBLE,
        stop_reason=StopReason.CANCELLED,
        solution=solution,
        objective=report.objective,
        objective_terms=dict(report.terms),
        objective_senses=tuple(report.senses),
        sense=family.objective_sense(instance),
        bound=bound,
        gap=relative_gap(report.objective, bound),
        backend=inc.source or None,
        phase_times_s={"total": inc.elapsed_s},
        history=[incumbent_of(inc)],
        message="interrupted: the best incumbent the server had streamed, re-checked here",
        unplaced=unplaced,
    )
