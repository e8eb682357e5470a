"""Assemble and run the gRPC server: workers first, then the server, health, reflection,
TLS and token auth, metrics and graceful shutdown."""

from __future__ import annotations

import faulthandler
import hmac
import logging
import os
import signal
import socket
import sys
import threading
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from placement.api.server import tls
from placement.api.server.config import ServerConfig
from placement.api.server.jobs import JobStoreError
from placement.api.server.metrics import Metrics
from placement.api.server.pool import SolvePool, Stopping
from placement.api.server.service import DrainReport, PlacementService
from placement.api.server.store import JobStore, new_replica_id
from placement.api.server.stores import open_store
from placement.solver.schema.v1 import service_pb2, service_pb2_grpc

log = logging.getLogger("placement.server")

SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["PlacementSolver"].full_name
HEALTH_PREFIX = "/grpc.health.v1.Health/"
STORE_CHECK_S = 1.0
"""How often health asks the job store whether it answers."""
EXTRA_RPC_THREADS = 32
"""gRPC handler threads beyond one per admitted solve (Check, jobs, watchers, health)."""


class TokenAuth(grpc.ServerInterceptor):
    """Bearer-token auth: ``authorization: Bearer <token>`` must hold an accepted token.

    The health service is exempt, so load balancers and Kubernetes probes need no secret.
    Tokens are compared in constant time and never logged.
    """

    def __init__(self, tokens: tuple[str, ...]):
        self._tokens = [t.encode() for t in tokens]

    def _accepted(self, metadata: Any) -> str | None:
        """None if accepted, else why not."""
        values = [v for k, v in metadata or () if k == "authorization"]
        if not values:
            return "missing credentials: send metadata 'authorization: Bearer <token>'"
        value = values[0]
        if isinstance(value, bytes):
            value = value.decode("latin-1")
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return "malformed authorization metadata: expected 'Bearer <token>'"
        given = token.strip().encode()
        if any(hmac.compare_digest(given, t) for t in self._tokens):
            return None
        return "invalid token"

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        if details.method.startswith(HEALTH_PREFIX):
            return continuation(details)
        problem = self._accepted(details.invocation_metadata)
        if problem is None:
            return continuation(details)
        return _denying(continuation(details), grpc.StatusCode.UNAUTHENTICATED, problem)


def _denying(handler: Any, code: grpc.StatusCode, message: str) -> Any:
    """A method handler of the same kind as ``handler`` that ends every call with ``code``."""
    if handler is None:
        return None

    def deny(request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(code, message)

    if handler.request_streaming and handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(deny)
    if handler.request_streaming:
        return grpc.stream_unary_rpc_method_handler(deny)
    if handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(deny)
    return grpc.unary_unary_rpc_method_handler(deny)


class Draining(grpc.ServerInterceptor):
    """During shutdown (``flag`` set) every new call but health gets UNAVAILABLE at once, so
    a client retries elsewhere while the calls in progress finish."""

    def __init__(self, flag: threading.Event):
        self._flag = flag

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        if not self._flag.is_set() or details.method.startswith(HEALTH_PREFIX):
            return continuation(details)
        return _denying(
            continuation(details),
            grpc.StatusCode.UNAVAILABLE,
            "the server is shutting down; retry (another replica)",
        )


def _rebuild(handler: Any, wrap: Any) -> Any:
    """The same RPC method handler with its behaviour wrapped by ``wrap``."""
    kinds = (
        ("unary_unary", grpc.unary_unary_rpc_method_handler),
        ("unary_stream", grpc.unary_stream_rpc_method_handler),
        ("stream_unary", grpc.stream_unary_rpc_method_handler),
        ("stream_stream", grpc.stream_stream_rpc_method_handler),
    )
    for attr, make in kinds:
        behaviour = getattr(handler, attr)
        if behaviour is not None:
            return make(
                wrap(behaviour),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


class ClientAllowList(grpc.ServerInterceptor):
    """Mutual TLS authorization: the client certificate (already verified against the CA
    during the handshake) must name an allowed client in its common name or a DNS subject
    alternative name; otherwise PERMISSION_DENIED (the caller is authenticated, not
    authorized). The health service is exempt."""

    def __init__(self, names: tuple[str, ...]):
        self._names = set(names)

    def _problem(self, context: grpc.ServicerContext) -> str | None:
        auth = context.auth_context()
        names = {
            v.decode("utf-8", "replace")
            for key in ("x509_common_name", "x509_subject_alternative_name")
            for v in auth.get(key, ())
        }
        if names & self._names:
            return None
        shown = ", ".join(sorted(names)) or "none"
        return f"client certificate ({shown}) is not among the allowed clients"

    def intercept_service(self, continuation: Any, details: Any) -> Any:
        handler = continuation(details)
        if handler is None or details.method.startswith(HEALTH_PREFIX):
            return handler

        def wrap(behaviour: Any) -> Any:
            def guarded(request: Any, context: grpc.ServicerContext) -> Any:
                problem = self._problem(context)
                if problem is not None:
                    context.abort(grpc.StatusCode.PERMISSION_DENIED, problem)
                return behaviour(request, context)

            return guarded

        return _rebuild(handler, wrap)


def read_tokens(path: str) -> tuple[str, ...]:
    """Tokens from a file, one per line (blank lines and ``#`` comments ignored); raises
    InputError naming the file when it holds none or cannot be read."""
    return tls.read_token_lines("token_file", path)


@dataclass
class Running:
    """A started server and its parts."""

    server: grpc.Server
    port: int
    service: PlacementService
    pool: SolvePool
    store: JobStore
    health: health.HealthServicer
    metrics: Metrics
    store_monitor: StoreMonitor | None = None

    def stop(self, grace: float = 5.0, hurry: threading.Event | None = None) -> DrainReport:
        """Drain, then stop: health goes NOT_SERVING and new calls get UNAVAILABLE; the solves
        of calls in progress get ``grace`` s to finish, then are stopped and answered with
        their best checked solution; then the workers stop. Returns what happened to the calls
        stopped at the end of the grace period.

        Jobs running here go back to the queue: another replica (or the next server) runs
        them again. ``hurry`` set (a second signal) ends the grace period at once.
        """
        if self.store_monitor is not None:
            self.store_monitor.stop()
        self.health.enter_graceful_shutdown()
        stopped = self.service.drain(grace, hurry=hurry)
        # Time for the last answers to leave; what is still open (job watchers) is cancelled.
        done = self.server.stop(1.0)
        self.service.stop()
        self.pool.close()
        self.service.runner.release_all()
        done.wait(2.0)
        self.store.close()
        return stopped


class StoreMonitor:
    """Health follows the job store: NOT_SERVING while the database does not answer (a load
    balancer sends new work elsewhere; running solves go on and their outcomes are written
    when it is back), SERVING again once it does."""

    def __init__(self, store: JobStore, servicer: health.HealthServicer, every_s: float):
        self._store = store
        self._health = servicer
        self._every_s = every_s
        self._stop = threading.Event()
        self.ok = True
        self._thread = threading.Thread(target=self._loop, name="store-health", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._every_s):
            try:
                self._store.ping()
                ok = True
            except JobStoreError as exc:
                ok = False
                if self.ok:
                    log.error("job store unreachable, health NOT_SERVING: %s", exc)
            if ok != self.ok and not self._stop.is_set():
                if ok:
                    log.warning("job store reachable again, health SERVING")
                status = (
                    health_pb2.HealthCheckResponse.SERVING
                    if ok
                    else health_pb2.HealthCheckResponse.NOT_SERVING
                )
                for name in ("", SERVICE_NAME):
                    self._health.set(name, status)
            self.ok = ok

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def check_port_free(host: str, port: int) -> None:
    """Raise OSError when ``host:port`` cannot be bound (in use, or not a local address):
    found before any worker starts, so a typo costs no warm-up."""
    if port == 0:
        return
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        # As the server will (it sets SO_REUSEADDR): a port in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)


def start(config: ServerConfig, should_stop: Any = lambda: False) -> Running:
    """Start the workers (warm), the job store and the gRPC server; returns once serving.

    ``should_stop`` is polled during the warm-up: once true (a signal), :class:`Stopping`
    is raised. Whatever interrupts the start stops what was started, every worker reaped,
    before it propagates."""
    problems = config.validate()
    if problems:
        raise ValueError("; ".join(problems))
    # What the user can get wrong first (address, database), before any worker starts.
    check_port_free(config.bind_host, config.port)
    store = open_store(config.db_path)
    pool: SolvePool | None = None
    holder: list[grpc.Server] = []
    try:
        pool = SolvePool(
            config.workers, config.max_queue, grace=config.grace_s, margin=config.deadline_margin_s
        )
        pool.warm(should_stop=should_stop)
        if should_stop():
            raise Stopping("stopped before serving")
        return _start_serving(config, store, pool, holder.append)
    except BaseException:
        for server in holder:
            server.stop(0)
        if pool is not None:
            pool.close()
        store.close()
        raise


def _start_serving(config: ServerConfig, store: JobStore, pool: SolvePool, keep: Any) -> Running:
    """The second half of :func:`start`: the gRPC server around a warm pool (``keep`` gets
    the server as soon as it exists, for :func:`start` to stop it if what follows fails)."""
    metrics = Metrics()
    replica = new_replica_id(socket.gethostname(), os.getpid())
    service = PlacementService(config, pool, store, metrics, replica)
    threads = config.workers + config.max_queue + EXTRA_RPC_THREADS
    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        ("grpc.so_reuseport", 0),
    ]
    interceptors: list[grpc.ServerInterceptor] = [Draining(service.draining)]
    if config.tokens:
        interceptors.append(TokenAuth(config.tokens))  # who are you? (UNAUTHENTICATED)
    if config.allowed_clients:
        interceptors.append(ClientAllowList(config.allowed_clients))  # PERMISSION_DENIED
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="rpc"),
        options=options,
        interceptors=interceptors,
        maximum_concurrent_rpcs=threads,
    )
    keep(server)
    service_pb2_grpc.add_PlacementSolverServicer_to_server(service, server)
    health_servicer = health.HealthServicer(experimental_non_blocking=True)
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    address = f"{config.bind_host}:{config.port}"
    pair = tls.read_key_pair("tls_cert", config.tls_cert, "tls_key", config.tls_key)
    if pair is not None:
        cert, key = pair
        ca = tls.read_ca("client_ca", config.client_ca) if config.client_ca else None
        creds = grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca, require_client_auth=ca is not None
        )
        port = server.add_secure_port(address, creds)
    else:
        port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    server.start()
    service.start()
    for name in ("", SERVICE_NAME):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    if config.metrics_port is not None:
        metrics.serve(config.metrics_port, "127.0.0.1" if not config.tls else "0.0.0.0")
    monitor = StoreMonitor(store, health_servicer, STORE_CHECK_S)
    return Running(server, port, service, pool, store, health_servicer, metrics, monitor)


SHUTDOWN_HANG_S = 45.0
"""Seconds past the drain's grace after which a stop that still has not ended is a hang:
the server writes every thread's stack to stderr and exits 1 (the bounded steps of
:meth:`Running.stop` take under 40 s together)."""

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGHUP") if hasattr(signal, name)
)
"""What stops the server gently: at start-up, at once; while serving, after the drain."""


def serve(config: ServerConfig) -> int:
    """Run until SIGTERM, SIGINT or SIGHUP; returns the exit code (0 after a clean stop,
    at start-up too: every worker is stopped and reaped)."""
    stop = threading.Event()
    hurry = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        # Never raises: an exception at an arbitrary point (e.g. while a worker process is
        # being launched) would leave a half-started child behind.
        received.append(signum)
        if stop.is_set():
            # A second signal: drain no longer; the workers are still stopped and reaped.
            hurry.set()
        stop.set()

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    try:
        running = start(config, stop.is_set)
    except Stopping:
        print(
            f"placement: stopped by {_signal_name(received[0])} while starting; every "
            "worker stopped",
            file=sys.stderr,
            flush=True,
        )
        return 0
    mode = "mutual TLS" if config.client_ca else "TLS" if config.tls else "plaintext"
    auth = f", token auth ({len(config.tokens)} tokens)" if config.tokens else ""
    if config.allowed_clients:
        auth += f", {len(config.allowed_clients)} allowed client names"
    print(
        f"placement: serving on {config.bind_host}:{running.port} ({mode}{auth}, "
        f"{config.workers} workers, queue {config.max_queue}, jobs in {running.store.name}, replica {running.service.runner.replica}"
        + (
            f", {running.service.runner.recovered} interrupted jobs queued again"
            if running.service.runner.recovered
            else ""
        )
        + (f", metrics on :{config.metrics_port}" if config.metrics_port is not None else "")
        + ")",
        file=sys.stderr,
        flush=True,
    )
    while not stop.wait(0.5):
        pass
    print(
        f"placement: shutting down: calls in progress get {fmt_seconds(config.shutdown_grace_s)}"
        " s to finish (a second signal: stop them now)",
        file=sys.stderr,
        flush=True,
    )
    # Every step of the stop is bounded; should one still hang, the server must not: every
    # thread's stack goes to stderr (what hung) and the process ends with exit code 1.
    faulthandler.dump_traceback_later(config.shutdown_grace_s + SHUTDOWN_HANG_S, exit=True)
    report = running.stop(config.shutdown_grace_s, hurry)
    if report.stopped:
        print(f"placement: {report.line()}", file=sys.stderr, flush=True)
    return 0


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def fmt_seconds(value: float) -> str:
    return f"{value:g}"
