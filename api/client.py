"""A Python client of the placement gRPC service (``placement serve``).

    from placement.api.client import Client
    with Client("127.0.0.1:50051") as client:
        result = client.solve(instance, time_limit_s=5)            # placement.solver.Result
        response = client.solve_response(instance, time_limit_s=5) # placement.v1.SolveResponse
        for item in client.solve_iter(instance, time_limit_s=5):    # Incumbent..., then Result
            ...
        for event in client.solve_stream(instance, time_limit_s=5): # incumbents, then result
            ...
        job = client.submit_job(instance, time_limit_s=600)
        job = client.wait_job(job.job_id)

``instance`` is a typed instance of any family, a ``placement.v1.Instance`` message, or its
JSON form as a dict. :meth:`Client.solve` returns the library's
:class:`~placement.solver.Result` with its enums (``SolutionStatus``, ``StopReason``) and a
typed solution; the other calls return the service's messages. Errors are :class:`grpc.RpcError` with the service's status codes;
:func:`bad_fields` lists the field paths of an INVALID_ARGUMENT. :func:`to_result` turns a
response into the engine's :class:`~placement.solver.Result` (with a typed solution).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

from placement.api.server import messages, tls
from placement.solver import SolveOptions
from placement.solver.family import Family, family_of, start_envelope
from placement.solver.result import Incumbent, Result
from placement.solver.schema.v1 import placement_pb2, service_pb2, service_pb2_grpc

__all__ = ["Client", "bad_fields", "instance_message", "result_of", "to_result", "typed_instance"]


def instance_message(instance: Any) -> Any:
    """A ``placement.v1.Instance`` from a typed instance, a message or a JSON dict."""
    if isinstance(instance, placement_pb2.Instance):
        return instance
    msg = placement_pb2.Instance()
    if isinstance(instance, dict):
        json_format.ParseDict(instance, msg)
        return msg
    family = family_of(instance)
    msg.name = getattr(instance, "name", "") or ""
    msg.description = getattr(instance, "description", "") or ""
    json_format.ParseDict(family.instance_to_dict(instance), getattr(msg, family.name))
    return msg


def _parameters(options: SolveOptions | None, **overrides: Any) -> Any:
    params = service_pb2.SolveParameters()
    if options is not None:
        params.time_limit_s = float(options.time_limit_s)
        params.backend = options.backend.value
        params.milp_solver = options.milp_solver.value
        params.threads = options.threads
        params.seed = options.seed
        params.relative_gap = options.relative_gap
        params.deterministic = options.deterministic
    for key, value in overrides.items():
        if value is not None:
            setattr(params, key, value)
    return params


def bad_fields(error: grpc.RpcError) -> list[str]:
    """The field paths named by an INVALID_ARGUMENT's google.rpc.BadRequest details."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    paths: list[str] = []
    if status is None:
        return paths
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            paths.extend(v.field for v in bad.field_violations)
    return paths


def to_result(response: Any, family: Family, instance: Any) -> Result:
    """The engine's :class:`Result` of a ``SolveResponse`` for a typed instance."""
    solution = None
    unplaced: list[dict[str, Any]] = []
    if response.HasField("solution"):
        section = getattr(response.solution, family.name)
        solution = family.solution_from_message(instance, section)
        data = json_format.MessageToDict(section, preserving_proto_field_name=True)
        unplaced = list(data.get("unplaced", []))
    return Result(
        family=response.family,
        status=messages.status_of(response.status),
        stop_reason=messages.stop_of(response.stop_reason),
        solution=solution,
        objective=response.objective if response.HasField("objective") else None,
        objective_terms=messages.terms_of(response)[0],
        objective_senses=messages.terms_of(response)[1],
        sense=response.sense,
        bound=response.bound if response.HasField("bound") else None,
        gap=response.gap if response.HasField("gap") else None,
        backend=response.backend or None,
        phase_times_s=dict(response.phase_times_s),
        history=[incumbent_of(h) for h in response.history],
        message=response.message,
        unplaced=unplaced,
        warm_start=(
            messages.warm_start_of(response.warm_start) if response.HasField("warm_start") else None
        ),
        instance=instance,
        family_object=family,
    )


def typed_instance(instance: Any) -> tuple[Family, Any]:
    """The family and typed instance of what :meth:`Client.solve` accepts."""
    if isinstance(instance, placement_pb2.Instance | dict):
        return messages.parse_instance(instance_message(instance))
    return family_of(instance), instance


def result_of(response: Any, instance: Any) -> Result:
    """The engine's :class:`Result` of a ``SolveResponse`` to a request for ``instance`` (a
    typed instance, a message or a JSON dict)."""
    family, typed = typed_instance(instance)
    return to_result(response, family, typed)


def incumbent_of(msg: Any) -> Incumbent:
    """The engine's :class:`Incumbent` of an ``Incumbent`` message."""
    return Incumbent(
        time_s=msg.elapsed_s,
        objective=msg.objective,
        source=msg.source,
        bound=msg.bound if msg.HasField("bound") else None,
        gap=msg.gap if msg.HasField("gap") else None,
    )


class Client:
    """A connection to a placement server.

    Parameters
    ----------
    target:
        ``host:port``.
    token:
        Bearer token sent with every call as ``authorization`` metadata (use TLS outside
        localhost: in plaintext the token travels in clear).
    ca:
        PEM file of the CA that signed the server certificate: use TLS.
    cert, key:
        PEM files of the client certificate and key (mutual TLS).
    server_name:
        Override the name checked against the server certificate.
    max_message_bytes:
        Largest message sent or received (default 64 MiB, like the server).
    option_names:
        What errors call ``ca``, ``cert`` and ``key`` (the CLI passes ``--ca``, ...).

    Raises
    ------
    InputError
        A TLS file is missing, unreadable or malformed, ``cert`` and ``key`` do not match
        (or only one is given), or ``ca`` holds no CA certificate.
    """

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        ca: str | Path | None = None,
        cert: str | Path | None = None,
        key: str | Path | None = None,
        server_name: str | None = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        option_names: dict[str, str] | None = None,
    ):
        options: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes),
        ]
        if server_name:
            options.append(("grpc.ssl_target_name_override", server_name))
        self._metadata: tuple[tuple[str, str], ...] = ()
        if token:
            self._metadata = (("authorization", f"Bearer {token}"),)
        # Checked here: gRPC core aborts the process on a certificate without its key.
        names = option_names or {"ca": "ca", "cert": "cert", "key": "key"}
        pair = tls.read_key_pair(names["cert"], cert, names["key"], key)
        if ca is not None or pair is not None:
            creds = grpc.ssl_channel_credentials(
                root_certificates=tls.read_ca(names["ca"], ca) if ca is not None else None,
                private_key=pair[1] if pair else None,
                certificate_chain=pair[0] if pair else None,
            )
            self.channel = grpc.secure_channel(target, creds, options=options)
        else:
            self.channel = grpc.insecure_channel(target, options=options)
        self.stub = service_pb2_grpc.PlacementSolverStub(self.channel)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _request(
        self,
        instance: Any,
        options: SolveOptions | None,
        request_id: str,
        start: Any = None,
        start_job_id: str = "",
        **params: Any,
    ) -> Any:
        req = service_pb2.SolveRequest(
            instance=instance_message(instance),
            parameters=_parameters(options, **params),
            request_id=request_id,
            start_job_id=start_job_id,
        )
        if start is not None:
            req.start_solution.CopyFrom(start_envelope(start))
        return req

    # --- synchronous ----------------------------------------------------------------------
    def solve(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        time_limit_s: float | None = None,
        timeout: float | None = None,
        request_id: str = "",
        start: Any = None,
        start_job_id: str = "",
    ) -> Result:
        """Solve on the server; returns the library's :class:`~placement.solver.Result`
        (its status enums, a typed solution), as :func:`placement.solver.solve` would.
        ``timeout`` is the call's deadline (s). :meth:`solve_response` returns the
        ``SolveResponse`` message itself.

        A warm start: ``start`` (a :class:`Result`, a ``placement.v1.Solution`` or its JSON
        dict) or ``start_job_id`` (a finished job of the server); ``Result.warm_start`` then
        says what of it was kept."""
        response = self.solve_response(
            instance,
            options,
            time_limit_s=time_limit_s,
            timeout=timeout,
            request_id=request_id,
            start=start,
            start_job_id=start_job_id,
        )
        return result_of(response, instance)

    def solve_response(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        time_limit_s: float | None = None,
        timeout: float | None = None,
        request_id: str = "",
        start: Any = None,
        start_job_id: str = "",
    ) -> Any:
        """Solve; returns the ``placement.v1.SolveResponse`` message."""
        req = self._request(
            instance, options, request_id, start, start_job_id, time_limit_s=time_limit_s
        )
        return self.stub.Solve(req, timeout=timeout, metadata=self._metadata)

    def solve_stream(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        time_limit_s: float | None = None,
        timeout: float | None = None,
        request_id: str = "",
        start: Any = None,
        start_job_id: str = "",
    ) -> Any:
        """Solve, streaming ``SolveEvent``s: each improving incumbent, then the result.

        The returned iterator is also the call: ``.cancel()`` stops the solve.
        """
        req = self._request(
            instance, options, request_id, start, start_job_id, time_limit_s=time_limit_s
        )
        return self.stub.SolveStream(req, timeout=timeout, metadata=self._metadata)

    def solve_iter(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        time_limit_s: float | None = None,
        timeout: float | None = None,
        request_id: str = "",
        start: Any = None,
        start_job_id: str = "",
    ) -> Iterator[Incumbent | Result]:
        """Solve, yielding the library's objects: an :class:`Incumbent` (with its typed
        ``solution``) for each improving incumbent, then the :class:`Result`."""
        family, typed = typed_instance(instance)
        stream = self.solve_stream(
            instance,
            options,
            time_limit_s=time_limit_s,
            timeout=timeout,
            request_id=request_id,
            start=start,
            start_job_id=start_job_id,
        )
        try:
            for event in stream:
                if event.HasField("result"):
                    yield to_result(event.result, family, typed)
                    return
                inc = incumbent_of(event.incumbent)
                if event.incumbent.HasField("solution"):
                    section = getattr(event.incumbent.solution, family.name)
                    inc = replace(inc, solution=family.solution_from_message(typed, section))
                yield inc
        finally:
            stream.cancel()  # a caller that stops iterating stops the solve

    def check(self, instance: Any, solution: Any, *, timeout: float | None = None) -> Any:
        """Check a solution (``placement.v1.Solution`` or its JSON dict); ``CheckResponse``."""
        if isinstance(solution, dict):
            solution = json_format.ParseDict(solution, placement_pb2.Solution())
        req = service_pb2.CheckRequest(instance=instance_message(instance), solution=solution)
        return self.stub.Check(req, timeout=timeout, metadata=self._metadata)

    # --- jobs -----------------------------------------------------------------------------
    def submit_job(
        self,
        instance: Any,
        options: SolveOptions | None = None,
        *,
        time_limit_s: float | None = None,
        timeout: float | None = 30,
        start: Any = None,
        start_job_id: str = "",
    ) -> Any:
        """Queue an asynchronous solve; returns the ``Job`` (with its id). ``start`` and
        ``start_job_id``: a warm start, as for :meth:`solve`."""
        req = service_pb2.SubmitJobRequest(
            request=self._request(
                instance, options, "", start, start_job_id, time_limit_s=time_limit_s
            )
        )
        return self.stub.SubmitJob(req, timeout=timeout, metadata=self._metadata)

    def get_job(self, job_id: str, *, timeout: float | None = 30) -> Any:
        return self.stub.GetJob(
            service_pb2.GetJobRequest(job_id=job_id), timeout=timeout, metadata=self._metadata
        )

    def cancel_job(self, job_id: str, *, timeout: float | None = 30) -> Any:
        return self.stub.CancelJob(
            service_pb2.CancelJobRequest(job_id=job_id), timeout=timeout, metadata=self._metadata
        )

    def watch_job(self, job_id: str, *, timeout: float | None = None) -> Any:
        """Stream ``JobEvent``s until the job finishes."""
        return self.stub.WatchJob(
            service_pb2.WatchJobRequest(job_id=job_id), timeout=timeout, metadata=self._metadata
        )

    def list_jobs(
        self, state: int = 0, page_size: int = 50, page_token: str = "", *, timeout: float = 30
    ) -> Any:
        req = service_pb2.ListJobsRequest(state=state, page_size=page_size, page_token=page_token)
        return self.stub.ListJobs(req, timeout=timeout, metadata=self._metadata)

    def iter_jobs(self, state: int = 0) -> Iterator[Any]:
        """Every job (newest first), following the pages."""
        token = ""
        while True:
            page = self.list_jobs(state, 200, token)
            yield from page.jobs
            if not page.next_page_token:
                return
            token = page.next_page_token

    def wait_job(self, job_id: str, timeout: float | None = None, poll_s: float = 0.2) -> Any:
        """Poll until the job is finished; returns the ``Job`` (TimeoutError after
        ``timeout`` s)."""
        end = None if timeout is None else time.monotonic() + timeout
        finished = (
            service_pb2.JOB_STATE_SUCCEEDED,
            service_pb2.JOB_STATE_FAILED,
            service_pb2.JOB_STATE_CANCELLED,
        )
        while True:
            job = self.get_job(job_id)
            if job.state in finished:
                return job
            if end is not None and time.monotonic() > end:
                raise TimeoutError(f"job {job_id} still {service_pb2.JobState.Name(job.state)}")
            time.sleep(poll_s)

    def health(self, service: str = "", *, timeout: float = 5) -> str:
        """The health status name of ``service`` (``SERVING``, ...)."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        resp = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
