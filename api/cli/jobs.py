"""``placement jobs submit|get|watch|cancel|list``: the asynchronous jobs of a placement server.

Each subcommand talks to ``--server`` with the TLS and token options of ``solve --server``;
``--json`` prints pure JSON on stdout (``watch``: one JSON object per line). A call the user
can fix (unknown job id, bad instance, refused credentials) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import datetime
import json
from typing import Any

from google.protobuf import json_format

from placement.api.cli.exits import EXIT_FAILED, EXIT_OK, err
from placement.api.cli.solve import solve_settings
from placement.api.cli.summary import fmt_gap, fmt_num
from placement.api.files import check_writable, read_instance, read_start, write_json
from placement.api.interrupt import stop_requests
from placement.solver import SolveOptions

FINISHED_OK = "succeeded"

STATES = ("queued", "running", "succeeded", "failed", "cancelled")
"""What ``jobs list --state`` accepts (``placement.v1.JobState`` without its prefix)."""


def cmd_jobs(args: argparse.Namespace) -> int:
    """``placement jobs SUBCOMMAND``."""
    # grpc and the client only for commands that talk to a server: start-up time of the rest.
    import grpc

    from placement.api.cli.remote import call_failed, connect

    start = None
    if args.jobs_command == "submit":
        loaded = read_instance(args.instance)  # a bad file is reported before any call
        start = read_start(args.start, loaded) if args.start else None
    if getattr(args, "out", None):
        check_writable(args.out)
    with connect(args) as client:
        try:
            if args.jobs_command == "submit":
                return _submit(args, client, loaded, start)
            if args.jobs_command == "get":
                return _get(args, client)
            if args.jobs_command == "cancel":
                return _show(args, client.cancel_job(args.job_id))
            if args.jobs_command == "watch":
                return _watch(args, client)
            return _list(args, client)
        except grpc.RpcError as exc:
            raise call_failed(args.server, exc) from None


def _submit(args: argparse.Namespace, client: Any, loaded: Any, start: Any) -> int:
    job = client.submit_job(
        loaded.instance,
        SolveOptions(**solve_settings(args)),
        start=start,
        start_job_id=args.start_job or "",
    )
    if args.json:
        _print_json(job_dict(job))
    else:
        print(f"{job.job_id}")
        err(
            f"job {job.job_id} queued: {loaded.display_name} ({loaded.family_name}) on {args.server}"
        )
    return EXIT_OK


def _get(args: argparse.Namespace, client: Any) -> int:
    job = client.get_job(args.job_id)
    if args.out:
        if not job.HasField("result") or not job.result.HasField("solution"):
            err(f"error: job {job.job_id} has no solution to write to {args.out} (yet)")
            return EXIT_FAILED
        write_json(args.out, _message_dict(job.result.solution))
    return _show(args, job)


def _show(args: argparse.Namespace, job: Any) -> int:
    if args.json:
        _print_json(job_dict(job))
    else:
        print(format_job(job))
        if getattr(args, "out", None):
            print(f"{'solution':<12}{args.out}")
    return EXIT_OK


def _watch(args: argparse.Namespace, client: Any) -> int:
    """Follow a job; Ctrl-C, SIGTERM or SIGHUP stop following (the job runs on) with
    128 + the signal's number."""
    with stop_requests(raise_at_once=True):
        return _follow(args, client)


def _follow(args: argparse.Namespace, client: Any) -> int:
    last = None
    for event in client.watch_job(args.job_id):
        if event.HasField("job"):
            last = event.job
            if args.json:
                print(json.dumps({"job": job_dict(last)}), flush=True)
            else:
                print(f"{_state(last.state):<10}{last.job_id}", flush=True)
        elif args.json:
            print(json.dumps({"incumbent": incumbent_dict(event.incumbent)}), flush=True)
        else:
            inc = event.incumbent
            parts = [f"{inc.elapsed_s:8.2f}s", f"objective {fmt_num(inc.objective)}"]
            if inc.HasField("bound"):
                parts.append(f"bound {fmt_num(inc.bound)}")
            if inc.HasField("gap"):
                parts.append(f"gap {fmt_gap(inc.gap)}")
            parts.append(inc.source)
            print("  " + "  ".join(parts), flush=True)
    if last is not None and not args.json:
        print(format_job(last))
    return EXIT_OK if last is not None and _state(last.state) == FINISHED_OK else EXIT_FAILED


def _list(args: argparse.Namespace, client: Any) -> int:
    from placement.solver.schema.v1 import service_pb2  # only here: start-up time of the CLI

    state = 0
    if args.state:
        state = service_pb2.JobState.Value(f"JOB_STATE_{args.state.upper()}")
    jobs = []
    for job in client.iter_jobs(state):
        jobs.append(job)
        if len(jobs) >= args.limit:
            break
    if args.json:
        _print_json([job_dict(j) for j in jobs])
        return EXIT_OK
    print(f"{'job':<34}{'state':<11}{'family':<14}{'created (UTC)':<21}instance")
    for j in jobs:
        print(
            f"{j.job_id:<34}{_state(j.state):<11}{j.family:<14}{_time(j.created_at):<21}"
            f"{j.instance_name}"
        )
    return EXIT_OK


# --- forms ----------------------------------------------------------------------------------


def _state(value: int) -> str:
    from placement.solver.schema.v1 import service_pb2  # only here: start-up time of the CLI

    return service_pb2.JobState.Name(value).removeprefix("JOB_STATE_").lower()


def _time(epoch_s: float) -> str:
    if not epoch_s:
        return "-"
    moment = datetime.datetime.fromtimestamp(epoch_s, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _message_dict(msg: Any) -> dict[str, Any]:
    return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def incumbent_dict(inc: Any) -> dict[str, Any]:
    """The JSON form of a ``placement.v1.Incumbent`` (without its solution)."""
    return {
        "elapsed_s": inc.elapsed_s,
        "objective": inc.objective,
        "bound": inc.bound if inc.HasField("bound") else None,
        "gap": inc.gap if inc.HasField("gap") else None,
        "source": inc.source,
    }


def job_dict(job: Any) -> dict[str, Any]:
    """The JSON form of a ``placement.v1.Job``: states and statuses as the library's names
    (``succeeded``, ``optimal``, ``proven``), times in epoch seconds (None: not yet)."""
    from placement.api.server import messages  # only here: start-up time

    data: dict[str, Any] = {
        "job_id": job.job_id,
        "state": _state(job.state),
        "family": job.family,
        "instance_name": job.instance_name,
        "attempts": job.attempts,
        "created_at": job.created_at or None,
        "started_at": job.started_at or None,
        "finished_at": job.finished_at or None,
        "error": job.error or None,
        "result": None,
    }
    if job.HasField("result"):
        r = job.result
        data["result"] = {
            "status": messages.status_of(r.status).value,
            "stop_reason": messages.stop_of(r.stop_reason).value,
            "objective": r.objective if r.HasField("objective") else None,
            "objective_terms": {t.name: t.value for t in r.objective_terms},
            "bound": r.bound if r.HasField("bound") else None,
            "gap": r.gap if r.HasField("gap") else None,
            "backend": r.backend or None,
            "message": r.message,
            "solution": _message_dict(r.solution) if r.HasField("solution") else None,
            "warm_start": (
                messages.warm_start_of(r.warm_start).to_dict() if r.HasField("warm_start") else None
            ),
        }
    return data


def format_job(job: Any) -> str:
    """The human form of a job: state, times, and the result's figures once there is one."""
    d = job_dict(job)
    lines = [f"{'job':<12}{d['job_id']}", f"{'state':<12}{d['state']}"]
    lines.append(f"{'instance':<12}{d['instance_name'] or '-'} ({d['family']})")
    lines.append(f"{'attempts':<12}{d['attempts']}")
    for key in ("created_at", "started_at", "finished_at"):
        if d[key]:
            lines.append(f"{key.removesuffix('_at'):<12}{_time(d[key])} UTC")
    if d["error"]:
        lines.append(f"{'error':<12}{d['error']}")
    r = d["result"]
    if r is not None:
        lines.append(f"{'status':<12}{r['status']} ({r['stop_reason'].replace('_', ' ')})")
        if r["objective"] is not None:
            lines.append(f"{'objective':<12}{fmt_num(r['objective'])}")
        if r["bound"] is not None:
            lines.append(f"{'bound':<12}{fmt_num(r['bound'])}  gap {fmt_gap(r['gap'])}")
        if r["warm_start"] is not None:
            from placement.api.server import messages  # only here: start-up time

            warm = messages.warm_start_of(job.result.warm_start)
            lines.append(f"{'start':<12}{warm.summary()}")
        if r["message"]:
            lines.append(f"{'note':<12}{r['message']}")
    return "\n".join(lines)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2))
