"""The ``placement.v1.PlacementSolver`` servicer.

Requests are validated in the server process (every bad field named in a
``google.rpc.BadRequest``), solved in the worker pool, and answered with the best checked
solution. One JSON log line is written per call (logger ``placement.access``).
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from placement.api.server import jobs as jobstates
from placement.api.server import messages
from placement.api.server.config import ServerConfig
from placement.api.server.jobs import JobRow, JobRunner, JobStoreError
from placement.api.server.metrics import Metrics
from placement.api.server.pool import Outcome, SolvePool, Ticket
from placement.api.server.store import JobStore
from placement.solver import InputError
from placement.solver.errors import FieldError
from placement.solver.family import Family
from placement.solver.schema.v1 import placement_pb2, service_pb2, service_pb2_grpc

access_log = logging.getLogger("placement.access")
log = logging.getLogger(__name__)


class Abort(Exception):
    """End the call with a status (and optional google.rpc details)."""

    def __init__(self, code: grpc.StatusCode, message: str, details: list[Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or []


def invalid(errors: list[FieldError]) -> Abort:
    """INVALID_ARGUMENT with a BadRequest naming every bad field."""
    bad = error_details_pb2.BadRequest()
    for e in errors:
        bad.field_violations.add(field=e.path, description=str(e))
    first = str(errors[0]) + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
    return Abort(grpc.StatusCode.INVALID_ARGUMENT, first, [bad])


def _abort(context: grpc.ServicerContext, exc: Abort) -> None:
    status = status_pb2.Status(code=exc.code.value[0], message=exc.message)
    for detail in exc.details:
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    context.abort_with_status(rpc_status.to_status(status))


def count_lists(message: Any) -> dict[str, int]:
    """Entries per list name anywhere in ``message`` (e.g. ``{"jobs": 200, "nodes": 64}``)."""
    counts: dict[str, int] = {}
    stack = [message]
    while stack:
        msg = stack.pop()
        for fd, value in msg.ListFields():
            if fd.is_repeated:
                counts[fd.name] = counts.get(fd.name, 0) + len(value)
                if fd.message_type is not None and not fd.message_type.GetOptions().map_entry:
                    stack.extend(value)
            elif fd.message_type is not None:
                stack.append(value)
    return counts


def check_sizes(
    sizes: dict[str, int], limits: dict[str, int], only: tuple[str, ...] | None = None
) -> None:
    """Abort (INVALID_ARGUMENT) when a list is longer than its limit (``items`` for others)."""
    errors = []
    for name, n in sizes.items():
        if only is not None and name not in only:
            continue
        cap = limits.get(name, limits.get("items"))
        if cap is not None and n > cap:
            errors.append(FieldError(f"instance.{name}", n, f"at most {cap} (server limit)"))
    if errors:
        raise invalid(errors)


def validate_solve_request(
    req: Any, limits: dict[str, int], fields: dict[str, Any] | None = None
) -> messages.ParsedRequest:
    """The server's validation of a ``SolveRequest``: size limits first (cheap, before any
    typed object is built), then every field. Raises :class:`Abort` (INVALID_ARGUMENT naming
    every bad field). ``fields`` receives the sizes and family for the access log."""
    fields = {} if fields is None else fields
    if req.HasField("instance"):
        sizes = count_lists(req.instance)
        fields["size"] = sizes
        check_sizes(sizes, limits)
    try:
        parsed = messages.parse_request(req)
    except InputError as exc:
        raise invalid(exc.errors) from None
    fields["family"] = parsed.family.name
    extra = getattr(parsed.family, "size", None)
    if extra is not None:
        sizes = dict(extra(parsed.instance))
        fields["size"] = sizes
        check_sizes(sizes, limits, only=("gpus",))
    return parsed


WATCH_POLL_S = 0.2
"""How often WatchJob reads the store for a job run by another replica."""
MAX_MARGIN_SHARE = 0.3
"""The deadline margin takes at most this share of the time a call has left."""


@dataclass(frozen=True)
class Budget:
    """The time a call's solve gets."""

    limit: float
    """The solver's time limit, seconds."""
    deadline: float | None
    """The client's deadline, epoch seconds (None: no deadline)."""
    margin: float
    """Kept free before the deadline."""

    def wait_seconds(self) -> float | None:
        """How long to wait for the worker before answering with the best incumbent: until
        half the margin before the deadline (None: no deadline, wait for the worker)."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - self.margin / 2 - time.time())


def budget_for(
    config: ServerConfig, requested_s: float, remaining_s: float | None, request_bytes: int
) -> Budget:
    """The budget of a call: the solver's limit (the request's, or the default; at most the
    maximum) and, when the client set a deadline ``remaining_s`` from now, a margin before
    it that grows with the request's size (:meth:`ServerConfig.margin_for`, at most
    :data:`MAX_MARGIN_SHARE` of the time left); the limit leaves the margin free."""
    limit = min(requested_s or config.default_time_limit_s, config.max_time_limit_s)
    margin = config.margin_for(request_bytes)
    # Without a client deadline gRPC reports None or an effectively infinite time.
    if remaining_s is None or remaining_s > 10 * 365 * 24 * 3600:
        return Budget(limit, None, margin)
    margin = min(margin, MAX_MARGIN_SHARE * max(0.0, remaining_s))
    limit = max(0.01, min(limit, remaining_s - margin))
    return Budget(limit, time.time() + remaining_s, margin)


class Request:
    """One call's bookkeeping for the access log."""

    def __init__(self, rpc: str, context: grpc.ServicerContext, request_id: str = ""):
        self.rpc = rpc
        self.context = context
        self.id = request_id or uuid.uuid4().hex[:16]
        self.start = time.monotonic()
        self.fields: dict[str, Any] = {}

    def log(self, code: str, **extra: Any) -> None:
        record = {
            "event": "request",
            "rpc": self.rpc,
            "id": self.id,
            "code": code,
            **self.fields,
            **extra,
            "total_s": round(time.monotonic() - self.start, 6),
        }
        access_log.info(json.dumps(record, separators=(",", ":")))


class PlacementService(service_pb2_grpc.PlacementSolverServicer):
    """The servicer: validation, admission, deadlines, jobs."""

    def __init__(
        self,
        config: ServerConfig,
        pool: SolvePool,
        store: JobStore,
        metrics: Metrics,
        replica: str = "local",
    ):
        self.config = config
        self.pool = pool
        self.store = store
        self.metrics = metrics
        self.runner = JobRunner(
            store,
            run=self._run_job,
            conclude=self._conclude_job,
            max_running=max(1, config.workers - 1) if config.workers > 1 else 1,
            retention_s=config.retention_s,
            replica=replica,
            lease_s=config.job_lease_s,
        )
        pool.on_restart = metrics.worker_restarted
        metrics.bind(pool, store)
        self.draining = threading.Event()
        """Set at shutdown: new calls get UNAVAILABLE (see :class:`~placement.api.server.app.
        Draining`), calls in progress run on."""
        self._calls: set[Ticket] = set()
        self._calls_lock = threading.Lock()

    def start(self) -> None:
        self.runner.start()
        self.runner.poke()

    def stop(self) -> None:
        self.runner.stop()

    def drain(
        self, grace_s: float, answer_s: float = 2.0, hurry: threading.Event | None = None
    ) -> DrainReport:
        """Shut down gently: refuse new calls, give the solves of calls in progress up to
        ``grace_s`` to finish, then stop the rest cooperatively so that each call is answered
        with its best checked solution (waiting up to ``answer_s`` for the answers). Returns
        what happened to the calls that had to be stopped. ``hurry`` set ends the grace
        period at once."""
        self.draining.set()
        end = time.monotonic() + grace_s
        hurry = hurry or threading.Event()
        while self._in_progress() and time.monotonic() < end and not hurry.is_set():
            time.sleep(0.05)
        late = self._in_progress()
        for ticket in late:
            ticket.cancel("shutdown")
        end = time.monotonic() + answer_s
        while self._in_progress() and time.monotonic() < end:
            time.sleep(0.05)
        report = DrainReport(stopped=len(late))
        for ticket in late:
            outcome = ticket.outcome
            if ticket.started is None:
                report.never_started += 1
            elif outcome is not None and (outcome.response is not None or outcome.best):
                report.with_solution += 1
            else:
                report.without_solution += 1
        return report

    def _in_progress(self) -> list[Ticket]:
        with self._calls_lock:
            return list(self._calls)

    # --- shared steps -------------------------------------------------------------------
    def _parse(self, req: Any, call: Request) -> messages.ParsedRequest:
        return validate_solve_request(req, self.config.limits, call.fields)

    def _resolve_start(self, req: Any, where: str = "") -> Any:
        """The ``SolveRequest`` with its ``start_job_id`` (a warm start) resolved to that
        job's solution in ``start_solution``; ``req`` itself without one. NOT_FOUND for an
        unknown job, FAILED_PRECONDITION for one not finished or without a solution,
        INVALID_ARGUMENT for both fields given or a job of another family. ``where``
        prefixes the field names (``request.`` inside a SubmitJobRequest)."""
        job_id = req.start_job_id
        if not job_id:
            return req
        name = f"{where}start_job_id"
        if req.HasField("start_solution"):
            raise invalid([FieldError(name, job_id, "start_job_id or start_solution, not both")])
        row = self.store.get(job_id)
        if row is None:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"{name}: no job {job_id!r}")
        state = service_pb2.JobState.Name(row.state).removeprefix("JOB_STATE_").lower()
        result = service_pb2.SolveResponse.FromString(row.result or b"")
        if row.state not in jobstates.FINISHED or not result.HasField("solution"):
            why = "has no solution" if row.state in jobstates.FINISHED else "has not finished"
            raise Abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"{name}: job {job_id!r} is {state} and {why}; a warm start needs a finished "
                "job with a solution",
            )
        wanted = req.instance.WhichOneof("family")
        if wanted and row.family != wanted:
            raise invalid(
                [FieldError(name, job_id, f"a job of the {wanted!r} family (it is {row.family!r})")]
            )
        resolved = service_pb2.SolveRequest()
        resolved.CopyFrom(req)
        resolved.start_solution.CopyFrom(result.solution)
        return resolved

    def _time_limit(
        self, parsed: messages.ParsedRequest, context: grpc.ServicerContext, request: Any
    ) -> Budget:
        """The solver's time limit and the client's deadline."""
        return budget_for(
            self.config,
            parsed.requested_time_limit_s,
            context.time_remaining(),
            request.ByteSize(),
        )

    def _submit(self, req: Any, call: Request, budget: Budget, on_event: Any = None) -> Ticket:
        ticket = self.pool.submit(
            call.id,
            req.SerializeToString(),
            budget.limit,
            budget.deadline,
            on_event,
            margin=budget.margin,
        )
        if ticket is None:
            raise Abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"server busy: {self.pool.in_flight} solves in flight "
                f"({self.config.workers} workers + queue of {self.config.max_queue}); "
                "retry later",
            )
        call.context.add_callback(lambda: ticket.cancel("client cancelled"))
        with self._calls_lock:
            self._calls.add(ticket)
        return ticket

    def _answered(self, ticket: Ticket) -> None:
        with self._calls_lock:
            self._calls.discard(ticket)

    def _response(
        self, parsed: messages.ParsedRequest, ticket: Ticket, outcome: Outcome, call: Request
    ) -> Any:
        """The SolveResponse of an outcome, or Abort."""

        def best_or_abort(note: str, code: grpc.StatusCode, none_found: str) -> Any:
            """The response of the best checked incumbent the server holds, with ``note``;
            Abort with ``code`` when there is none."""
            resp = best_response(
                parsed.family,
                parsed.instance,
                outcome.best,
                call.id,
                ticket.effective_limit or ticket.time_limit_s,
                note,
            )
            if resp is None:
                raise Abort(code, none_found)
            return resp

        if outcome.kind == "result":
            resp = service_pb2.SolveResponse.FromString(outcome.response)
        elif outcome.kind == "overrun":
            if outcome.error == "deadline":
                note = (
                    "the worker had not answered when the client's deadline came; this is the "
                    "best checked incumbent it had sent; reasons for unplaced work were not "
                    "computed"
                )
            else:
                note = (
                    "the solve overran its time limit and its worker was stopped by the "
                    "watchdog (replaced); this is the best checked incumbent it had found; "
                    "reasons for unplaced work were not computed"
                )
            resp = best_or_abort(
                note, grpc.StatusCode.DEADLINE_EXCEEDED, "no solution was found before the deadline"
            )
        elif outcome.kind == "cancelled" and outcome.error == "shutdown":
            note = (
                "the server was shutting down: the solve was stopped at the end of the "
                "grace period; this is the best checked solution it had found"
            )
            if outcome.response is not None:
                resp = service_pb2.SolveResponse.FromString(outcome.response)
                resp.message = f"{note}; {resp.message}" if resp.message else note
            elif ticket.started is None:
                # Queued behind the busy workers: it never ran, so it has nothing to give.
                raise Abort(
                    grpc.StatusCode.UNAVAILABLE,
                    "the server is shutting down and the solve never started (it was still "
                    "queued for a worker); retry (another replica)",
                )
            else:
                resp = best_or_abort(
                    note + "; reasons for unplaced work were not computed",
                    grpc.StatusCode.UNAVAILABLE,
                    "the server is shutting down and the solve had found no solution yet",
                )
        elif outcome.kind == "cancelled":
            raise Abort(grpc.StatusCode.CANCELLED, "the solve was cancelled")
        elif outcome.kind == "crashed":
            # As on overrun and shutdown: the best incumbent the worker had sent, re-checked.
            died = f"the solve worker died ({outcome.error}); it has been replaced"
            resp = best_or_abort(
                f"{died}; this is the best checked incumbent it had sent; reasons for "
                "unplaced work were not computed",
                grpc.StatusCode.INTERNAL,
                died,
            )
            resp.stop_reason = service_pb2.STOP_REASON_ERROR
        else:
            raise Abort(grpc.StatusCode.INTERNAL, f"the solve failed: {outcome.error}")
        resp.phase_times_s["queue"] = ticket.queue_seconds
        resp.phase_times_s["service"] = time.monotonic() - call.start
        return resp

    def _finish(self, call: Request, resp: Any | None, code: str) -> None:
        family = call.fields.get("family", "")
        if resp is not None:
            status = service_pb2.SolutionStatus.Name(resp.status).removeprefix("SOLUTION_STATUS_")
            self.metrics.solved(family, status.lower(), time.monotonic() - call.start)
            call.log(
                code,
                status=status.lower(),
                stop_reason=service_pb2.StopReason.Name(resp.stop_reason)
                .removeprefix("STOP_REASON_")
                .lower(),
                queue_s=round(resp.phase_times_s.get("queue", 0.0), 6),
                solve_s=round(resp.phase_times_s.get("total", 0.0), 6),
            )
        else:
            self.metrics.solved(family, code.lower(), time.monotonic() - call.start)
            call.log(code)

    def _guard(self, call: Request, body: Any) -> Any:
        """Run ``body()``; map Abort and unexpected errors to statuses; log the call."""
        try:
            return body()
        except Abort as exc:
            call.log(exc.code.name, message=exc.message)
            if call.rpc in ("Solve", "SolveStream"):
                self.metrics.solved(
                    call.fields.get("family", ""),
                    exc.code.name.lower(),
                    time.monotonic() - call.start,
                )
            _abort(call.context, exc)
        except JobStoreError as exc:
            call.log("UNAVAILABLE", message=str(exc))
            _abort(call.context, Abort(grpc.StatusCode.UNAVAILABLE, str(exc)))
        except Exception as exc:  # noqa: BLE001 - the server keeps serving
            log.exception("%s failed", call.rpc)
            call.log("INTERNAL", message=f"{type(exc).__name__}: {exc}")
            _abort(
                call.context,
                Abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}"),
            )

    # --- RPCs ---------------------------------------------------------------------------
    def Solve(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("Solve", context, request.request_id)

        def body() -> Any:
            req = self._resolve_start(request)
            parsed = self._parse(req, call)
            budget = self._time_limit(parsed, context, req)
            ticket = self._submit(req, call, budget)
            try:
                outcome = ticket.wait(budget.wait_seconds()) or _at_deadline(ticket)
                resp = self._response(parsed, ticket, outcome, call)
            finally:
                self._answered(ticket)
            self._finish(call, resp, "OK")
            return resp

        return self._guard(call, body)

    def SolveStream(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        call = Request("SolveStream", context, request.request_id)
        events: queue.Queue[Any] = queue.Queue()

        def on_event(kind: str, payload: Any) -> None:
            if kind == "incumbent":
                inc = service_pb2.Incumbent.FromString(payload[0])
                # With its solution: a client that stops the stream keeps the best one.
                inc.solution.ParseFromString(payload[1])
                events.put(inc)

        def start() -> tuple[messages.ParsedRequest, Ticket, Budget]:
            req = self._resolve_start(request)
            parsed = self._parse(req, call)
            budget = self._time_limit(parsed, context, req)
            return parsed, self._submit(req, call, budget, on_event), budget

        started = self._guard(call, start)
        if started is None:
            return
        parsed, ticket, budget = started
        try:
            outcome = None
            while outcome is None:
                left = budget.wait_seconds()
                outcome = ticket.wait(0.05 if left is None else min(0.05, left))
                for inc in _drain(events):
                    yield service_pb2.SolveEvent(incumbent=inc)
                if outcome is None and left is not None and left <= 0.05:
                    outcome = _at_deadline(ticket)  # waited until the answer-by time above
            for inc in _drain(events):
                yield service_pb2.SolveEvent(incumbent=inc)

            def finish() -> Any:
                resp = self._response(parsed, ticket, outcome, call)
                self._finish(call, resp, "OK")
                return resp

            resp = self._guard(call, finish)
        finally:
            # Also when the client went away mid-stream (the generator is closed).
            self._answered(ticket)
        if resp is not None:
            yield service_pb2.SolveEvent(result=resp)

    def Check(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("Check", context)

        def body() -> Any:
            if not request.HasField("instance"):
                raise invalid([FieldError("instance", None, "an Instance")])
            if not request.HasField("solution"):
                raise invalid([FieldError("solution", None, "a Solution")])
            check_sizes(count_lists(request.instance), self.config.limits)
            try:
                family, instance = messages.parse_instance(request.instance)
                resp = messages.check_response(family, instance, request.solution)
            except InputError as exc:
                raise invalid(exc.errors) from None
            call.fields["family"] = family.name
            call.log("OK", feasible=resp.feasible, violations=len(resp.violations))
            return resp

        return self._guard(call, body)

    def SubmitJob(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("SubmitJob", context, request.request.request_id)

        def body() -> Any:
            if not request.HasField("request"):
                raise invalid([FieldError("request", None, "a SolveRequest")])
            req = self._resolve_start(request.request, "request.")
            try:
                parsed = self._parse(req, call)
            except Abort as exc:
                # Paths inside SubmitJobRequest start at "request.".
                for detail in exc.details:
                    for v in detail.field_violations:
                        v.field = f"request.{v.field}"
                raise
            pending = self.store.count((jobstates.QUEUED,))
            if pending >= self.config.max_pending_jobs:
                raise Abort(
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"job queue full: {pending} jobs queued (limit "
                    f"{self.config.max_pending_jobs}); retry later",
                )
            limit = min(
                parsed.requested_time_limit_s or self.config.default_time_limit_s,
                self.config.max_time_limit_s,
            )
            job_id = self.store.add(req.SerializeToString(), limit, parsed.name, parsed.family.name)
            self.runner.poke()
            call.fields["job_id"] = job_id
            call.log("OK")
            return job_message(self.store.get(job_id))

        return self._guard(call, body)

    def _job(self, job_id: str) -> JobRow:
        row = self.store.get(job_id)
        if row is None:
            raise Abort(grpc.StatusCode.NOT_FOUND, f"job_id: no job {job_id!r}")
        pending = self.runner.unrecorded(job_id)
        if pending is not None:
            # Finished, but the store could not take the outcome yet (disk full): answer
            # from memory; the runner writes it once the store accepts writes again.
            state, result, error = pending
            row = replace(row, state=state, result=result, error=error, finished_at=time.time())
        return row

    def GetJob(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("GetJob", context)

        def body() -> Any:
            row = self._job(request.job_id)
            call.log("OK", job_id=row.id)
            return job_message(row)

        return self._guard(call, body)

    def CancelJob(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("CancelJob", context)

        def body() -> Any:
            self._job(request.job_id)
            row = self.runner.cancel(request.job_id)
            call.log("OK", job_id=request.job_id)
            return job_message(row)

        return self._guard(call, body)

    def ListJobs(self, request: Any, context: grpc.ServicerContext) -> Any:  # noqa: N802
        call = Request("ListJobs", context)

        def body() -> Any:
            size = request.page_size or 50
            if not 0 < size <= 1000:
                raise invalid([FieldError("page_size", request.page_size, "1..1000")])
            before = None
            if request.page_token:
                try:
                    before = int(request.page_token)
                except ValueError:
                    raise invalid(
                        [FieldError("page_token", request.page_token, "a token from ListJobs")]
                    ) from None
            rows = self.store.page(int(request.state), size + 1, before)
            resp = service_pb2.ListJobsResponse(
                jobs=[job_message(r, with_result=False) for r in rows[:size]]
            )
            if len(rows) > size:
                resp.next_page_token = str(rows[size - 1].seq)
            call.log("OK", jobs=len(resp.jobs))
            return resp

        return self._guard(call, body)

    def WatchJob(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:  # noqa: N802
        """The job's state changes and the incumbents of its solve, read from the store, so
        a watcher on any replica sees a job that another replica runs; events of a job run
        here wake the watcher at once, others are seen within :data:`WATCH_POLL_S`."""
        call = Request("WatchJob", context)
        changed = threading.Event()

        def start() -> JobRow:
            row = self._job(request.job_id)
            self.runner.listen(row.id, changed.set)
            return row

        row = self._guard(call, start)
        if row is None:
            return
        try:
            # Read again after listening, so no change between the two is missed.
            row = self._job(row.id)
            yield service_pb2.JobEvent(job=job_message(row))
            job_id, last_state, seen = row.id, row.state, 0
            while row.state not in jobstates.FINISHED and context.is_active():
                changed.wait(WATCH_POLL_S)
                changed.clear()

                def poll(after: int = seen) -> tuple[list[tuple[int, bytes]], JobRow]:
                    # Incumbents first: those stored before the job ended come before its end.
                    return self.store.incumbents(job_id, after), self._job(job_id)

                polled = self._guard_watch(call, poll)
                if polled is None:
                    continue  # the store is out of reach: keep watching
                incumbents, fresh = polled
                if fresh is None:
                    break  # purged meanwhile
                row = fresh
                for number, data in incumbents:
                    seen = number
                    yield service_pb2.JobEvent(incumbent=service_pb2.Incumbent.FromString(data))
                if row.state != last_state:
                    last_state = row.state
                    yield service_pb2.JobEvent(job=job_message(row))
            call.log("OK", job_id=row.id)
        finally:
            self.runner.unlisten(request.job_id, changed.set)

    def _guard_watch(self, call: Request, body: Any) -> Any:
        """``body()``, or None while the store is out of reach (a watch outlives an outage)."""
        try:
            return body()
        except JobStoreError as exc:
            log.warning("WatchJob %s: %s", call.id, exc)
            time.sleep(WATCH_POLL_S)
            return None
        except Abort:
            return [], None

    # --- jobs in the pool ---------------------------------------------------------------
    def _run_job(self, row: JobRow, on_event: Any) -> Ticket | None:
        return self.pool.submit(
            row.id, row.request, row.time_limit_s, None, on_event, limit=self.pool.workers
        )

    def _conclude_job(self, row: JobRow, outcome: Outcome) -> tuple[int, bytes | None, str]:
        if outcome.kind == "result":
            return jobstates.SUCCEEDED, outcome.response, ""
        resp = None
        if outcome.best is not None and outcome.response is None:
            req = service_pb2.SolveRequest.FromString(row.request)
            try:
                family, instance = messages.parse_instance(req.instance)
                note = {
                    "cancelled": "the job was cancelled; this is the best checked incumbent "
                    "found before",
                    "overrun": "the solve overran its time limit and was stopped by the "
                    "watchdog; this is the best checked incumbent found before",
                }.get(outcome.kind, f"the solve failed ({outcome.error}); best incumbent")
                resp = best_response(family, instance, outcome.best, row.id, row.time_limit_s, note)
            except InputError:
                resp = None
        data = resp.SerializeToString() if resp is not None else None
        if outcome.kind == "cancelled":
            if outcome.response is not None:
                # The solver stopped cooperatively and returned its best checked solution.
                return jobstates.CANCELLED, outcome.response, "cancelled"
            return jobstates.CANCELLED, data, "cancelled"
        if outcome.kind == "overrun" and resp is not None:
            return jobstates.SUCCEEDED, data, ""
        error = outcome.error or outcome.kind
        if outcome.kind == "overrun":
            error = "no solution was found before the time limit"
        return jobstates.FAILED, data, error


@dataclass
class DrainReport:
    """The calls a shutdown had to stop at the end of its grace period: answered with their
    best solution, never started (still queued: UNAVAILABLE, retry), or started without a
    solution yet (UNAVAILABLE)."""

    stopped: int = 0
    with_solution: int = 0
    never_started: int = 0
    without_solution: int = 0

    def line(self) -> str:
        """What the server logs about them."""
        parts = [f"{self.with_solution} answered with their best solution"]
        if self.never_started:
            parts.append(f"{self.never_started} never started (queued; told to retry)")
        if self.without_solution:
            parts.append(f"{self.without_solution} had no solution yet (told to retry)")
        return f"{self.stopped} calls stopped at the end of the grace period: " + ", ".join(parts)


def _at_deadline(ticket: Ticket) -> Outcome:
    """The outcome of a call whose worker has not answered by the client's deadline: the
    best incumbent so far (the worker finishes or is stopped on its own)."""
    return Outcome("overrun", best=ticket.best, error="deadline")


def _drain(q: queue.Queue[Any]) -> list[Any]:
    items = []
    while True:
        try:
            items.append(q.get_nowait())
        except queue.Empty:
            return items


def best_response(
    family: Family,
    instance: Any,
    best: tuple[bytes, bytes] | None,
    request_id: str,
    time_limit_s: float,
    note: str,
) -> Any | None:
    """A SolveResponse from the last incumbent a worker sent, re-checked here; None if there
    is none (or, which would be a bug, the checker rejects it)."""
    if best is None:
        return None
    inc = service_pb2.Incumbent.FromString(best[0])
    solution_msg = placement_pb2.Solution.FromString(best[1])
    solution = family.solution_from_message(instance, getattr(solution_msg, family.name))
    report = family.check(instance, solution)
    if not report.feasible:
        log.error("incumbent of %s failed the checker: %s", request_id, report.violations[:3])
        return None
    resp = service_pb2.SolveResponse(
        request_id=request_id,
        family=family.name,
        status=service_pb2.SOLUTION_STATUS_FEASIBLE,
        stop_reason=service_pb2.STOP_REASON_TIME_LIMIT,
        objective=report.objective,
        sense=family.objective_sense(instance),
        backend=inc.source,
        message=note,
        time_limit_s=time_limit_s,
    )
    resp.solution.CopyFrom(solution_msg)
    messages.add_terms(resp, report.terms, report.senses)
    if inc.HasField("bound"):
        resp.bound = inc.bound
    if inc.HasField("gap"):
        resp.gap = inc.gap
    resp.history.append(inc)
    return resp


def job_message(row: JobRow | None, with_result: bool = True) -> Any:
    """The ``placement.v1.Job`` of a stored row."""
    if row is None:
        return service_pb2.Job()
    msg = service_pb2.Job(
        job_id=row.id,
        state=row.state,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        attempts=row.attempts,
        error=row.error,
        instance_name=row.instance_name,
        family=row.family,
    )
    if with_result and row.result:
        msg.result.ParseFromString(row.result)
    return msg
